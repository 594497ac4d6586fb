// servelab/sim (private): the scheduler / memory knobs of a launch with every engine default applied.
// engines::resolve_defaults() fills most of these in the EngineConfig; the twin re-derives any that are
// still unset so it never depends on a half-resolved config. Sources per value: perf-facts §4.
#pragma once

#include "engines/engine_config.h"
#include "sim/hardware.h"
#include "sim/memory_plan.h"
#include "sim/model_config.h"

namespace servelab::sim::detail {

struct EngineKnobs {
  engines::EngineKind kind = engines::EngineKind::kVllm;
  int max_model_len = 0;          ///< tokens
  int block_size = 64;            ///< tokens (DSA: 64 on every engine)
  int max_num_seqs = 0;           ///< running-request cap per DP rank
  int token_budget = 0;           ///< tokens per step (vLLM max_num_batched_tokens; SGLang chunk per rank;
                                  ///< TRT max_num_tokens)
  int max_prefill_tokens = 0;     ///< SGLang: prompt tokens admitted per prefill batch
  bool chunked_prefill = true;
  int cuda_graph_max_bs = 0;      ///< largest CUDA-graph batch (tokens for vLLM, requests otherwise); 0 = none
  bool overlap_scheduler = false; ///< CPU scheduling overlapped with the GPU step (SGLang, TRT-LLM)
  double conservativeness = 1.0;  ///< SGLang schedule_conservativeness (x0.3 under DP-attention)
  int spec_tokens = 0;            ///< draft tokens verified per step (MTP), 0 = off
  bool kv_fp8 = false;
  double memory_fraction = 0.9;
  bool deep_gemm = true;
  std::string prefill_backend;    ///< "flashmla_sparse", "fa3", "flashmla_kv", "trtllm"
  std::string decode_backend;     ///< "flashmla_sparse", "fa3", "flashmla_kv", "trtllm"
};

EngineKnobs resolve_knobs(const engines::EngineConfig& engine, const Hardware& gpu, const ModelConfig& model);

}  // namespace servelab::sim::detail
