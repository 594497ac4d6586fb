// servelab/sim: the per-GPU memory plan of a resolved launch — weights by sharding rule and pipeline
// stage, the engine's memory policy, and what is left for the KV cache (and recurrent states).
#pragma once

#include <string>
#include <vector>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"

namespace servelab::sim {

/// Per-GPU memory plan (bytes) of the heaviest GPU of a launch and the KV capacity it leaves.
///
/// A request whose context holds c tokens occupies
///   ceil(c / block) * block * kv_bytes_per_token                       (full-attention layers)
/// + ceil(min(c, window_tokens) / block) * block * kv_window_bytes_per_token (sliding layers, when the
///                                                                        engine keeps only the window)
/// + state_bytes_per_request                                              (linear-attention layers)
/// of `kv_budget_bytes` on every GPU of its DP rank.
struct MemoryPlan {
  engines::ParallelLayout layout;
  double gpu_bytes = 0;            ///< device memory
  double weight_bytes = 0;         ///< weights on the heaviest GPU (its pipeline stage), incl. draft,
                                   ///< less what --cpu-offload-gb keeps in host memory
  double cpu_offloaded_bytes = 0;  ///< weights per GPU kept in host memory (MemoryPolicy::cpu_offload_bytes)
  double draft_weight_bytes = 0;   ///< of which MTP / EAGLE draft weights
  double activation_bytes = 0;     ///< peak activations the engine reserves (profile run), bytes
  double reserved_bytes = 0;       ///< runtime memory outside the pool (engine policy)
  double kv_budget_bytes = 0;      ///< given to the KV cache and recurrent states
  double kv_bytes_per_token = 0;   ///< full-context layers of the heaviest stage, per token
  double kv_window_bytes_per_token = 0;  ///< window-bounded layers, per token (0 when none / not bounded)
  /// The part of kv_bytes_per_token that is SGLang's split sliding-window pools (SWAKVPool: each window
  /// layer's bytes x swa_full_tokens_ratio per full-layer token), 0 otherwise.
  double kv_swa_pool_bytes_per_token = 0;
  int window_tokens = 0;               ///< the sliding window (tokens)
  double state_bytes_per_request = 0;  ///< linear-attention state per request
  long long kv_tokens_per_rank = 0;    ///< full-attention KV tokens the budget holds (no states, no windows)
  /// Requests a separate recurrent-state pool holds (SGLang MambaPool, MemoryPolicy::state_pool_ratio);
  /// 0 = states are charged to the KV pool per request (request_kv_bytes).
  long long state_slots = 0;
  int max_running_from_states = 0;  ///< the cap the state pool puts on running requests (0 = none)
  double request_table_bytes = 0;   ///< SGLang's req_to_token table charged to the budget (bytes)
  int block_size = 16;
  int max_model_len = 0;
  double memory_fraction = 0;
  bool fits = true;                ///< false: the engine fails to start or dies at its first step
  std::string failure;             ///< the engine-style OOM message when !fits
  std::vector<std::string> notes;  ///< what the plan had to decide (a context lowered to fit, a
                                   ///< margin within the plan's uncertainty)
};

/// The memory plan's own uncertainty (activation peaks and non-torch memory are estimates): a start-up
/// check the plan fails by less than this is not predicted to fail. 1.5 GiB [servelab estimate].
inline constexpr double kMemoryPlanToleranceBytes = 1.5 * 1024.0 * 1024.0 * 1024.0;

/// Bytes one request with `tokens` of context occupies in the KV pool of one GPU (see MemoryPlan); its
/// recurrent state is included unless a separate state pool holds it (MemoryPlan::state_slots > 0).
double request_kv_bytes(const MemoryPlan& plan, long long tokens);

/// Computes the plan. Weights: each linear sharded by its split rule (model::shard_params) over the
/// layout's attention TP / dense TP / expert TP x EP, layers split evenly over pipeline stages (the
/// first stage holds the embedding, the last the LM head and MTP layers). KV: model::kv_bytes_per_token
/// per layer at attention TP. Activations: BF16 transients of the profile run at the policy's
/// profile_tokens (x DP ranks when the MoE gathers them) plus the sampler's FP32 logits for
/// profile_sequences rows [derived; bounded by the reference study's vLLM -dp 8 OOM at 163840 and fit at
/// 81920]. Budget: MemoryPolicy. Never throws for a resolved launch.
MemoryPlan plan_memory(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster);

}  // namespace servelab::sim
