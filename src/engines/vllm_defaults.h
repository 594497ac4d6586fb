// vLLM 0.13.0 defaults used by `vllm serve` (V1 engine), one table. Sources are vLLM files/arguments;
// facts cross-checked against ../shared/reference/deepseek-v32-perf-facts.md §4 (vLLM). Values read in
// source from the 0.11-0.13 line but not confirmed for exactly 0.13.0 are marked verified = false.
#pragma once

#include "engines/sourced.h"

namespace servelab::engines {

/// vLLM 0.13 `vllm serve` defaults. Units: tokens, sequences, fractions of total GPU memory.
struct VllmDefaults {
  Sourced<const char*> version{"0.13.0", "study engine version (seed-study.md)"};
  Sourced<const char*> host{"0.0.0.0",
                            "vllm/entrypoints/openai/cli_args.py --host default None -> bind \"\" (all "
                            "interfaces)",
                            false};
  Sourced<int> port{8000, "vllm/entrypoints/openai/cli_args.py --port default 8000"};
  Sourced<const char*> default_model{"Qwen/Qwen3-0.6B", "vllm/engine/arg_utils.py EngineArgs.model default",
                                     false};
  Sourced<double> gpu_memory_utilization{0.9,
                                         "vllm/config/cache.py CacheConfig.gpu_memory_utilization = 0.9 "
                                         "(fraction of TOTAL GPU memory)"};
  /// GPU memory tier boundary of get_batch_defaults (bytes >= 70 GiB and not an A100 -> large tier).
  Sourced<double> large_gpu_min_gib{70.0, "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults"};
  Sourced<int> max_num_seqs_large_gpu{1024,
                                      "get_batch_defaults: default_max_num_seqs[OPENAI_API_SERVER] = 1024 "
                                      "(>= 70 GiB, non-A100, e.g. H100/H200)"};
  Sourced<int> max_num_seqs_small_gpu{256,
                                      "get_batch_defaults: default_max_num_seqs[OPENAI_API_SERVER] = 256"};
  Sourced<int> max_num_batched_tokens_large_gpu{8192,
                                                "get_batch_defaults: default_max_num_batched_tokens"
                                                "[OPENAI_API_SERVER] = 8192 (>= 70 GiB, non-A100)"};
  Sourced<int> max_num_batched_tokens_small_gpu{2048,
                                                "get_batch_defaults: default_max_num_batched_tokens"
                                                "[OPENAI_API_SERVER] = 2048"};
  Sourced<bool> enable_chunked_prefill{true, "vllm/config/scheduler.py (V1 always chunks prefills)"};
  Sourced<bool> enable_prefix_caching{true, "vllm/config/cache.py (V1 default on)"};
  Sourced<const char*> scheduling_policy{"fcfs", "vllm/config/scheduler.py SchedulerConfig.policy", false};
  Sourced<int> block_size{16, "vllm/config/cache.py CacheConfig.block_size (CUDA default 16)", false};
  Sourced<int> block_size_sparse_mla{64,
                                     "FlashMLASparseBackend supports block size 64 only (vLLM V3.2 blog)"};
  Sourced<const char*> kv_cache_dtype{"auto",
                                      "vllm/config/cache.py CacheConfig.cache_dtype = \"auto\" (model "
                                      "dtype: bf16 latent for V3.2)"};
  Sourced<const char*> kv_cache_dtype_fp8_sparse_mla{
      "fp8_ds_mla", "vllm/model_executor/models/config.py DeepseekV32ForCausalLM: fp8* -> fp8_ds_mla (656 B)",
      false};
  Sourced<const char*> attention_backend_sparse_mla{
      "FLASHMLA_SPARSE", "vllm/platforms/cuda.py: the only backend with is_sparse() for MLA on sm90/sm100"};
  /// CUDA graphs: max capture size = min(max_num_seqs * (1 + num_speculative_tokens) * 2, 512), capped at
  /// max_num_batched_tokens.
  Sourced<int> max_cudagraph_capture_size_cap{512, "vllm/config/vllm.py VllmConfig._set_cudagraph_sizes"};
  Sourced<int> max_cudagraph_capture_size_seq_factor{2,
                                                     "vllm/config/vllm.py _set_cudagraph_sizes: "
                                                     "max_num_seqs * (1 + k) * 2"};
  Sourced<int> tensor_parallel_size{1, "vllm/config/parallel.py ParallelConfig.tensor_parallel_size"};
};

inline constexpr VllmDefaults kVllmDefaults{};

}  // namespace servelab::engines
