#include "servelab/sim/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/sim_detail.h"

namespace servelab::sim {
namespace {

using engines::MemoryPolicy;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Transient BF16 bytes per token of one layer's forward at the sharding of `layout` (what a profile run
// at N tokens holds at its peak): the FFN's intermediate (gate+up output and the activation; for a
// fused MoE top_k rows of them plus the down output), the attention projections' outputs, and four
// hidden-size buffers (residual, normed input, gathered input, output). [derived]
double layer_transient_bytes(const model::Layer& layer, int hidden, const engines::ParallelLayout& p) {
  double ffn = 0;
  if (const auto* d = std::get_if<model::DenseFfn>(&layer.ffn)) {
    const double i = double(d->intermediate) / p.dense_tp;
    ffn = (2 * i + i) * 2;
  } else if (const auto* m = std::get_if<model::MoeFfn>(&layer.ffn)) {
    const double i = double(m->expert_intermediate) / p.moe_tp;
    ffn = m->top_k * (2 * i * 2 + i * 2 + hidden * 2.0);
  }
  double attn = 0;
  for (const auto& l : model::linears(layer, hidden))
    if (l.cls == model::LinearClass::kAttention)
      attn = std::max(attn, model::shard_params(l, p.attn_tp) / std::max<double>(1, l.in) * 2.0);
  return ffn + attn + 4.0 * hidden * 2;
}

// Bytes of one slot of a separate recurrent-state pool: the request's state and its speculative copies.
double state_slot_bytes(const engines::MemoryPolicy& pol, double state_bytes) {
  return state_bytes * std::max(1, pol.state_copies_per_slot);
}

// States of a separate recurrent-state pool (MemoryPolicy::state_pool_ratio): SGLang's
// handle_max_mamba_cache solves mamba + full KV = budget, mamba / full KV = r, so the pool holds
// floor(budget x r / (1 + r) / per-slot bytes) states; without the radix cache it holds state_slots.
long long state_pool_slots(const engines::MemoryPolicy& pol, double state_bytes, double budget) {
  if (state_bytes <= 0 || (pol.state_pool_ratio <= 0 && pol.state_slots <= 0)) return 0;
  if (pol.state_pool_ratio <= 0) return pol.state_slots;
  const double pool = std::max(0.0, budget) * pol.state_pool_ratio / (1.0 + pol.state_pool_ratio);
  return static_cast<long long>(std::floor(pool / state_slot_bytes(pol, state_bytes)));
}

// SGLang's ReqToTokenPool (model_runner.py init_memory_pool: ReqToTokenPool(size=max_num_reqs,
// max_context_len=context_len + 4), int32 entries, max_num_reqs = clamp(tokens / context_len x 512, 2048,
// 4096)): (slots + 1) x (context + 4) x 4 bytes per rank, charged to the KV budget. [unverified in the
// engine's code: where SGLang takes it from, and whether --max-running-requests shrinks it.] Corpus
// evidence (GLM-5.2, 1,048,576-token context, 8 GiB per rank; requests decoding at once = output tokens x
// ITL / duration): SGLang 0.5.14 on 8 x H200 decodes ~26 / 78 / 104 at once at its default DP-attention
// memory fraction / 0.80 / 0.85 and ~38 at TP8, where the pool without the table holds ~90 / 122 / 167 /
// 41 and with it ~22 / 62 / 119 / 33; with --max-running-requests 256 (32 per rank, not binding) it
// decodes ~93 at 0.85, fewer than without the flag, so the charge does not shrink with the flag.
double request_table_bytes(const engines::MemoryPolicy& pol, double pool_tokens, int context) {
  if (!pol.request_table || context <= 0) return 0;
  const long long slots =
      std::clamp<long long>(static_cast<long long>(pool_tokens / context * 512), 2048, 4096);
  return double(slots + 1) * (double(context) + 4) * 4.0;
}

}  // namespace

double request_kv_bytes(const MemoryPlan& p, long long tokens) {
  const long long bs = std::max(1, p.block_size);
  const long long blocks = (tokens + bs - 1) / bs;
  // A separate state pool (SGLang MambaPool) holds the recurrent state outside the KV pool.
  const double state = p.state_slots > 0 ? 0.0 : p.state_bytes_per_request;
  double bytes = double(blocks * bs) * p.kv_bytes_per_token + state;
  if (p.kv_window_bytes_per_token > 0) {
    const long long w = std::min<long long>(tokens, p.window_tokens > 0 ? p.window_tokens : tokens);
    bytes += double((w + bs - 1) / bs * bs) * p.kv_window_bytes_per_token;
  }
  return bytes;
}

MemoryPlan plan_memory(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster) {
  const model::ModelSpec& m = launch.model;
  const engines::ParallelLayout& lay = launch.layout;
  const MemoryPolicy& pol = launch.memory;
  MemoryPlan plan;
  plan.layout = lay;
  plan.gpu_bytes = cluster.gpu.memory_bytes;
  plan.block_size = std::max(1, launch.block_size);
  plan.max_model_len = launch.max_model_len;
  plan.memory_fraction = pol.fraction;

  const auto stages = detail::pipeline_stages(m, lay.pp);
  // Per stage: weights, KV per token (full and window-bounded), state per request.
  double worst_weights = 0, worst_draft = 0;
  double capacity_tokens = std::numeric_limits<double>::infinity();
  double budget_of_worst = 0;
  double transient = 0;
  for (int s = 0; s < lay.pp; ++s) {
    const auto& st = stages[s];
    detail::StageWeights w = detail::stage_weights(launch, st, s == 0, s == lay.pp - 1);
    // --cpu-offload-gb: that much of the stage's weights stays in host memory.
    const double offloaded = std::min(pol.cpu_offload_bytes, w.total);
    w.total -= offloaded;
    plan.cpu_offloaded_bytes = std::max(plan.cpu_offloaded_bytes, offloaded);
    if (pol.mm_encoder && s == 0) {
      // The vision encoder of a multimodal checkpoint, loaded beside the language model in BF16, split
      // over pol.mm_encoder_shards GPUs: its parameters from vision_config where model::vision_tower_params
      // knows the layout, else ~0.6 B (a Qwen3-VL-8B..235B tower counts 0.58-0.60 B) [estimate].
      const double params = m.vision_params > 0 ? m.vision_params : 0.6e9;
      w.total += params * 2.0 / std::max(1, pol.mm_encoder_shards);
    }
    double kv_full = 0, kv_win = 0, kv_swa = 0, state = 0;
    int window = 0;
    // vLLM's hybrid allocator gives each linear-attention layer one block of the shared pool, an
    // attention page of block_size tokens of one full-attention layer (launch.h state_page_padded).
    double page = 0;
    if (pol.state_page_padded)
      for (const auto& g : m.layers)
        if (!std::holds_alternative<model::LinearAttention>(g.layer.attention)) {
          page = plan.block_size * model::kv_bytes_per_token(g.layer.attention, lay.attn_tp, launch.kv_dtype);
          break;
        }
    for (const auto& g : m.layers) {
      const int n = detail::layers_in_stage(g, st);
      if (n == 0) continue;
      transient = std::max(transient, layer_transient_bytes(g.layer, m.hidden_size, lay));
      const double kv = model::kv_bytes_per_token(g.layer.attention, lay.attn_tp, launch.kv_dtype);
      const int win = model::kv_window_tokens(g.layer.attention);
      if (win > 0 && pol.kv_window_only && pol.swa_split_pool) {
        // SGLang SWAKVPool: every full-layer token is matched by ratio tokens in each window layer's
        // own pool, carved from the same budget (launch.h swa_split_pool).
        kv_full += n * kv * pol.swa_full_tokens_ratio;
        kv_swa += n * kv * pol.swa_full_tokens_ratio;
      } else if (win > 0 && pol.kv_window_only) {
        kv_win += n * kv;
        window = std::max(window, win);
      } else {
        kv_full += n * kv;
      }
      const double st_bytes =
          model::state_bytes_per_request(g.layer.attention, lay.attn_tp, launch.state_dtype);
      state += n * (st_bytes > 0 ? std::max(st_bytes, page) : 0.0);
    }
    if (s == lay.pp - 1) {
      // Draft KV: MTP layers (the model's own head) or one layer of an EAGLE draft model.
      kv_full += w.draft_kv_bytes_per_token;
    }
    // Activations of the profile run (vLLM, TRT-LLM); SGLang keeps them outside mem_fraction_static.
    double act = 0;
    if (pol.profile_activations) {
      const double tokens = double(pol.profile_tokens) * (lay.moe_gathered ? lay.dp_ranks : 1);
      // The forward and the sampler's dummy run (FP32 logits and probabilities of profile_sequences
      // rows over the rank's vocabulary slice) run one after the other: the peak is the larger.
      const double sampler = 2.0 * 4.0 * m.vocab_size / lay.dense_tp * std::min(pol.profile_sequences, 1024);
      act = std::max(tokens * transient, s == lay.pp - 1 ? sampler : 0.0);
    }
    double budget = 0;
    if (pol.basis == MemoryPolicy::Basis::kOfTotal)
      budget = pol.fraction * cluster.gpu.memory_bytes - w.total - act - pol.reserved_bytes;
    else
      budget = pol.fraction * (cluster.gpu.memory_bytes - w.total - act - pol.reserved_bytes);
    const long long slots = state_pool_slots(pol, state, budget);
    budget -= double(slots) * state_slot_bytes(pol, state);
    const double table =
        request_table_bytes(pol, std::max(0.0, budget) / std::max(kv_full, 1.0), launch.max_model_len);
    budget -= table;
    plan.request_table_bytes = std::max(plan.request_table_bytes, table);
    MemoryPlan probe = plan;
    probe.kv_bytes_per_token = kv_full;
    probe.kv_window_bytes_per_token = kv_win;
    probe.kv_swa_pool_bytes_per_token = kv_swa;
    probe.window_tokens = window;
    probe.state_bytes_per_request = state;
    // Capacity in full-context tokens of this stage's pool (states and windows excluded).
    const double per_token = kv_full > 0 ? kv_full : std::max(kv_win, 1.0);
    const double cap = std::max(0.0, budget) / per_token;
    if (w.total > worst_weights || s == 0) {
      worst_weights = std::max(worst_weights, w.total);
      worst_draft = w.draft;
      plan.activation_bytes = act;
    }
    if (cap < capacity_tokens) {
      capacity_tokens = cap;
      budget_of_worst = budget;
      plan.kv_bytes_per_token = kv_full;
      plan.kv_window_bytes_per_token = kv_win;
      plan.kv_swa_pool_bytes_per_token = kv_swa;
      plan.window_tokens = window;
      plan.state_bytes_per_request = state;
      plan.state_slots = slots;
    }
  }
  if (plan.state_slots > 0)
    plan.max_running_from_states = static_cast<int>(
        std::min<long long>(plan.state_slots / std::max(1, pol.state_slots_per_running), 1 << 30));
  plan.weight_bytes = worst_weights;
  plan.draft_weight_bytes = worst_draft;
  plan.reserved_bytes = pol.basis == MemoryPolicy::Basis::kOfTotal && !pol.profile_activations
                            ? (1.0 - pol.fraction) * cluster.gpu.memory_bytes
                            : pol.reserved_bytes;
  plan.kv_budget_bytes = budget_of_worst;
  if (pol.max_total_tokens) {
    const double cap_bytes = request_kv_bytes(plan, *pol.max_total_tokens);
    plan.kv_budget_bytes = std::min(plan.kv_budget_bytes, cap_bytes);
    capacity_tokens = std::min<double>(capacity_tokens, double(*pol.max_total_tokens));
  }
  const long long bs = plan.block_size;
  plan.kv_tokens_per_rank = static_cast<long long>(std::floor(std::max(0.0, capacity_tokens) / bs)) * bs;

  // Fit checks, in the order the engine meets them.
  const double usable = cluster.gpu.memory_bytes;
  if (plan.weight_bytes > usable) {
    plan.fits = false;
    plan.failure = fmt::format(
        "torch.OutOfMemoryError: CUDA out of memory while loading weights: {:.2f} GiB per GPU needed, the "
        "GPU "
        "has {:.2f} GiB",
        plan.weight_bytes / kGiB, usable / kGiB);
    return plan;
  }
  const bool fraction_of_total = !pol.profile_activations && pol.basis == MemoryPolicy::Basis::kOfTotal;
  if (plan.kv_budget_bytes <= 0 && fraction_of_total) {
    // SGLang model_runner.py profile_max_num_token: no KV token left inside mem_fraction_static.
    plan.fits = false;
    plan.failure = fmt::format(
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. (weights need {:.2f} "
        "GiB per GPU; --mem-fraction-static {:.3f} of {:.2f} GiB leaves no KV cache: spread the weights over "
        "more GPUs, or raise the fraction while a prefill step's activations still fit outside it)",
        plan.weight_bytes / kGiB, pol.fraction, usable / kGiB);
    return plan;
  }
  if (plan.kv_budget_bytes <= 0) {
    plan.fits = false;
    plan.failure = fmt::format(
        "CUDA out of memory: weights need {:.2f} GiB per GPU and activations {:.2f} GiB, leaving no memory "
        "for the "
        "KV cache ({:.2f} GiB x {:.3f} memory fraction)",
        plan.weight_bytes / kGiB, plan.activation_bytes / kGiB, usable / kGiB, pol.fraction);
    return plan;
  }
  double need = request_kv_bytes(plan, plan.max_model_len);
  if (pol.kv_pool_holds_one_request && plan.kv_budget_bytes < need && pol.auto_fit_max_model_len) {
    // The engine lowers the context to the longest request the pool holds.
    long long fit = plan.kv_bytes_per_token > 0
                        ? static_cast<long long>((plan.kv_budget_bytes - plan.state_bytes_per_request -
                                                  plan.kv_window_bytes_per_token * plan.window_tokens) /
                                                 plan.kv_bytes_per_token) /
                              bs * bs
                        : 0;
    if (fit >= bs) {
      plan.notes.push_back(
          fmt::format("max_model_len lowered from {} to {} to fit the KV pool (engine auto-fit)",
                      plan.max_model_len, fit));
      plan.max_model_len = static_cast<int>(std::min<long long>(fit, plan.max_model_len));
      need = request_kv_bytes(plan, plan.max_model_len);
    }
  }
  if (pol.kv_pool_holds_one_request && plan.kv_budget_bytes < need &&
      need - plan.kv_budget_bytes <= kMemoryPlanToleranceBytes) {
    // An engine that starts has passed its check (vLLM check_enough_kv_cache_memory): its pool holds one
    // request of max_model_len, so the twin's does too (else such a request, admitted by the API server,
    // would fail at runtime where the engine serves it).
    const long long one_request = (static_cast<long long>(plan.max_model_len) + bs - 1) / bs * bs;
    const long long pool = std::max(one_request, plan.kv_tokens_per_rank);
    plan.notes.push_back(
        fmt::format("one {}-token request needs {:.2f} GiB of KV, {:.2f} GiB more than the plan leaves: "
                    "within the plan's uncertainty ({:.1f} GiB), so the twin predicts the engine starts, and "
                    "its KV pool holds that request ({} tokens per rank, not the plan's {})",
                    plan.max_model_len, need / kGiB, (need - plan.kv_budget_bytes) / kGiB,
                    kMemoryPlanToleranceBytes / kGiB, pool, plan.kv_tokens_per_rank));
    plan.kv_budget_bytes = need;
    plan.kv_tokens_per_rank = pool;
  } else if (pol.kv_pool_holds_one_request && plan.kv_budget_bytes < need) {
    // vLLM kv_cache_utils.check_enough_kv_cache_memory.
    const long long est =
        plan.kv_bytes_per_token > 0
            ? static_cast<long long>(plan.kv_budget_bytes / plan.kv_bytes_per_token) / bs * bs
            : 0;
    plan.fits = false;
    plan.failure = fmt::format(
        "ValueError: To serve at least one request with the models's max seq len ({}), ({:.2f} GiB KV cache "
        "is "
        "needed, which is larger than the available KV cache memory ({:.2f} GiB). Based on the available "
        "memory, "
        "the estimated maximum model length is {}. Try increasing `gpu_memory_utilization` or decreasing "
        "`max_model_len` when initializing the engine.",
        plan.max_model_len, need / kGiB, plan.kv_budget_bytes / kGiB, est);
    return plan;
  }
  if (plan.kv_tokens_per_rank < bs) {
    plan.fits = false;
    plan.failure = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.";
    return plan;
  }
  if (fraction_of_total) {
    // SGLang: the activations of the largest step live outside mem_fraction_static, beside CUDA graphs
    // and the runtime. A prefill batch of chunked_prefill_size tokens per rank (gathered over the DP
    // ranks for the MoE) that does not fit dies at its first step.
    const auto& sch = launch.scheduler;
    const double tokens = double(std::max(sch.token_budget, 1)) * (lay.moe_gathered ? lay.dp_ranks : 1);
    const double act = tokens * transient;
    const double outside = (1.0 - pol.fraction) * usable - pol.reserved_bytes;
    plan.activation_bytes = act;
    if (act > outside) {
      plan.fits = false;
      plan.failure = fmt::format(
          "torch.OutOfMemoryError: CUDA out of memory during a {}-token prefill step: activations need "
          "{:.2f} GiB "
          "per GPU, {:.2f} GiB are left outside --mem-fraction-static {:.3f}",
          static_cast<long long>(tokens), act / kGiB, std::max(0.0, outside) / kGiB, pol.fraction);
    }
  }
  return plan;
}

}  // namespace servelab::sim
