// servelab/sim: per-GPU memory plan of an engine launch -> KV token capacity per DP rank.
#pragma once

#include <string>

#include "engines/engine_config.h"
#include "sim/hardware.h"
#include "sim/model_config.h"

namespace servelab::sim {

/// How the model is laid out on the GPUs of one launch.
struct Parallelism {
  int gpus = 8;           ///< GPUs used
  int dp_ranks = 1;       ///< attention data-parallel ranks (each with its own scheduler and KV pool)
  int attn_tp = 8;        ///< tensor-parallel size of attention inside one DP rank
  int dense_tp = 8;       ///< TP size of the dense parts (shared expert, dense FFN, LM head)
  int moe_group = 8;      ///< GPUs the routed experts are spread over
  bool moe_ep = false;    ///< experts whole on a GPU (EP) rather than TP-sliced
};

/// Derives the layout from the parsed launch. Engine rules: vLLM -tp T -dp D: D ranks of attention TP T,
/// dense TP T, experts over T*D GPUs (EP with --enable-expert-parallel); SGLang --tp T --dp D
/// --enable-dp-attention: D ranks of attention TP T/D inside one TP group of T, dense TP T, experts over T
/// (EP with --ep-size > 1); TensorRT-LLM: one rank of TP T, EP with --ep_size.
Parallelism parallelism_of(const engines::EngineConfig& engine);

/// Per-GPU memory plan (bytes) and the resulting KV capacity.
struct MemoryPlan {
  Parallelism par;
  double gpu_bytes = 0;            ///< device memory (bytes)
  double weight_bytes = 0;         ///< weights resident on one GPU (incl. MTP layer when speculative)
  double activation_bytes = 0;     ///< peak activations / workspaces reserved (engine profile run)
  double reserved_bytes = 0;       ///< CUDA graphs, NCCL buffers, allocator slack
  double kv_budget_bytes = 0;      ///< bytes given to the KV pool on one GPU
  double kv_bytes_per_token = 0;   ///< per GPU: layers * (latent + indexer key) [+ MTP layer]
  double kv_latent_bytes = 0;      ///< per token per layer: 1152 (bf16) or 656 (FP8 FlashMLA layout)
  long long kv_tokens_per_rank = 0;///< KV token capacity of one DP rank (rounded down to whole blocks)
  int block_size = 64;             ///< KV block/page (tokens)
  int max_model_len = 0;           ///< effective context length (tokens)
  double memory_fraction = 0;      ///< the engine's fraction as resolved (of total or of free memory)
  bool fits = true;                ///< false: weights + minimum KV for max_model_len do not fit
  std::string failure;             ///< the engine-style OOM message when !fits
};

/// Computes the memory plan. Formulas: weights by sharding (perf-facts §1), KV layout (§2), engine
/// fractions (§4): vLLM gpu_memory_utilization of total minus weights, activation peak of the profile run
/// and non-torch memory; SGLang mem_fraction_static of total minus weights; TensorRT-LLM
/// kv_cache_free_gpu_memory_fraction of the memory free after weights and activations.
/// Never throws for a well-formed launch; a launch that cannot fit comes back with fits = false.
MemoryPlan plan_memory(const engines::EngineConfig& engine, const Hardware& gpu, const ModelConfig& model);

/// KV bytes per token per layer for the main MLA cache: 2*(kv_lora+rope) for bf16; for FP8 the FlashMLA
/// "FP8 with scale" layout kv_lora (e4m3) + kv_lora/128*4 (fp32 scales) + rope*2 (bf16) = 656 B.
double kv_latent_bytes_per_layer(const ModelConfig& model, bool fp8);

/// Indexer key bytes per token per layer: index_head_dim (FP8) + ceil(dim/128)*4 scale = 132 B.
double kv_indexer_bytes_per_layer(const ModelConfig& model);

/// SGLang's automatic mem_fraction_static (server_args.py, perf-facts §4).
double sglang_auto_mem_fraction(const engines::EngineConfig& engine, const Hardware& gpu);

/// True when the launch stores the latent KV as FP8 (vLLM "fp8"/"fp8_ds_mla"/"fp8_e4m3"; SGLang
/// "fp8_e4m3"; SGLang "auto" is bf16 on SM90 and FP8 on SM100; TensorRT-LLM defaults to FP8 for DSA).
bool kv_cache_fp8(const engines::EngineConfig& engine, const Hardware& gpu);

}  // namespace servelab::sim
