// vLLM 0.13.0 defaults used by `vllm serve` (V1 engine), one table. Sources are vLLM files/arguments;
// facts cross-checked against ../shared/reference/deepseek-v32-perf-facts.md §4 (vLLM). Values read in
// source from the 0.11-0.13 line but not confirmed for exactly 0.13.0 are marked verified = false.
#pragma once

#include "engines/sourced.h"

namespace servelab::engines {

/// vLLM 0.13 `vllm serve` defaults. Units: tokens, sequences, fractions of total GPU memory.
struct VllmDefaults {
  /// The version used when neither the study nor --engine-version names one.
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

  // --- What changed across releases (engine-versions.md §1.2). Version bounds are release numbers.
  /// cudagraph_mode default: PIECEWISE before, FULL_AND_PIECEWISE from this release.
  Sourced<const char*> full_and_piecewise_since{"0.11.0",
                                                "PR #25444 (FULL_AND_PIECEWISE default, merged Sept 2025, "
                                                "just before 0.11.0)"};
  /// Before this release the capture list is SchedulerConfig.cuda_graph_sizes = [N] -> [1, 2, 4] +
  /// range(8, N + 1, 8), N = min(max_num_seqs * 2, 512) when unset (67 graphs at the default batch sizes;
  /// engine-versions.md gives [512], the same N there), filtered to <= max_num_batched_tokens; from it the
  /// max is min(max_num_seqs * (1 + k) * 2, 512) with sizes [1, 2, 4] + range(8, 256, 8) + range(256,
  /// max+1, 16).
  Sourced<const char*> capture_size_formula_since{
      "0.11.1",
      "vllm/config/vllm.py _set_cudagraph_sizes (max_cudagraph_capture_size replaces cuda_graph_sizes; "
      "seen in 0.13, release of the change recalled)",
      false};
  Sourced<int> fixed_capture_max{512, "vllm/config/scheduler.py SchedulerConfig.cuda_graph_sizes = [512]"};
  /// gpt-oss raises the maximum capture size to 992 (FA3 full-graph limit), sizes stepping by 16 above 256.
  Sourced<int> gpt_oss_capture_max{
      992,
      "vllm/model_executor/models/config.py GptOssForCausalLMConfig (\"from 67 to "
      "81\" graphs; InferenceX issue #117)"};
  Sourced<const char*> gpt_oss_capture_since{"0.11.0", "engine-versions.md §1.2 (0.11.0 column)"};
  Sourced<const char*> async_scheduling_flag_since{"0.10.0",
                                                   "PR #19970 (--async-scheduling, June 2025; first release "
                                                   "0.10.0)"};
  Sourced<const char*> async_scheduling_default_since{
      "0.14.0", "PR #27614 (async scheduling on by default; the release, ~0.14, is recalled)", false};
  Sourced<const char*> performance_mode_since{"0.17.0", "PR #34936 (--performance-mode, merged 2026-02-20)"};
  Sourced<int> throughput_mode_factor{2,
                                      "PR #34936: --performance-mode throughput doubles the max_num_seqs and "
                                      "max_num_batched_tokens defaults"};
  Sourced<int> interactivity_dense_capture_max{32,
                                               "PR #34936: --performance-mode interactivity captures every "
                                               "size 1..32"};
  Sourced<const char*> deep_gemm_default_since{"0.11.0",
                                               "vllm/envs.py VLLM_USE_DEEP_GEMM default \"1\" (was \"0\"; "
                                               "release of the switch recalled)",
                                               false};
  /// Memory outside torch's accounting that the KV sizing does not see (NCCL buffers ~392 MB at 8 GPUs,
  /// cuBLAS / DeepGEMM workspaces), bytes.
  /// Non-torch memory outside the KV pool: CUDA context share vLLM's profile sees, cuBLAS/DeepGEMM
  /// workspaces, and with several GPUs the NCCL and custom all-reduce buffers. [servelab estimate, bounded
  /// by the corpus: `vllm serve Qwen/Qwen3-32B` (BF16, 40,960 context) started on one H100 with vLLM 0.11,
  /// which leaves at most ~0.7 GiB beside weights and KV; the reference study's -dp 8 OOM at 163,840]
  Sourced<double> reserved_bytes_single_gpu{0.5 * 1024.0 * 1024.0 * 1024.0,
                                            "servelab estimate: one GPU, no collective buffers", false};
  Sourced<double> reserved_bytes{1.5 * 1024.0 * 1024.0 * 1024.0,
                                 "servelab estimate: + NCCL and custom all-reduce buffers with TP/DP/EP",
                                 false};
};

inline constexpr VllmDefaults kVllmDefaults{};

}  // namespace servelab::engines
