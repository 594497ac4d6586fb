// TensorRT-LLM 1.2.0rc5 defaults of `trtllm-serve` (PyTorch backend), one table. Sources:
// tensorrt_llm/commands/serve.py, tensorrt_llm/builder.py (BuildConfig), tensorrt_llm/llmapi/llm_args.py,
// read from a recent tree (../shared/reference/deepseek-v32-perf-facts.md §4 TensorRT-LLM).
#pragma once

#include "engines/sourced.h"

namespace servelab::engines {

/// TensorRT-LLM 1.2.0rc5 trtllm-serve defaults. Units: sequences, tokens, fraction of memory FREE after
/// weights and buffers.
struct TrtllmDefaults {
  /// The version used when neither the study nor --engine-version names one.
  Sourced<const char*> version{"1.2.0rc5", "study engine version (seed-study.md)"};
  Sourced<const char*> host{"localhost", "commands/serve.py --host default"};
  Sourced<int> port{8000, "commands/serve.py --port default"};
  Sourced<const char*> backend{"pytorch", "commands/serve.py --backend default"};
  Sourced<int> max_batch_size{2048,
                              "builder.py BuildConfig.max_batch_size (serve.py falls back to it); "
                              "some doc mirrors say 256",
                              false};
  Sourced<int> max_num_tokens{8192, "builder.py BuildConfig.max_num_tokens", false};
  Sourced<double> kv_cache_free_gpu_memory_fraction{0.9,
                                                    "commands/serve.py --kv_cache_free_gpu_memory_fraction"};
  Sourced<bool> enable_chunked_prefill{false,
                                       "commands/serve.py --enable_chunked_prefill is_flag default False"};
  Sourced<int> cuda_graph_max_batch_size{128, "llmapi/llm_args.py CudaGraphConfig.max_batch_size when unset"};
  Sourced<bool> enable_attention_dp{false, "llmapi/llm_args.py enable_attention_dp"};
  /// Attention-DP context balancing (AttentionDpConfig; pyexecutor/py_executor.py _balance_adp_requests).
  Sourced<bool> attention_dp_balance{false, "llmapi/llm_args.py AttentionDpConfig.enable_balance = False",
                                     false};
  Sourced<int> attention_dp_timeout_iters{50, "llmapi/llm_args.py AttentionDpConfig.timeout_iters = 50",
                                          false};
  Sourced<int> attention_dp_batching_wait_iters{
      10, "llmapi/llm_args.py AttentionDpConfig.batching_wait_iters = 10", false};
  Sourced<int> ep_size{1, "mapping: moe_ep_size = 1, moe_tp_size = tp_size when --ep_size is unset", false};
  Sourced<bool> deep_gemm{
      true,
      "TRTLLM_DG_ENABLED default on: DeepGEMM for FP8 block-scaled linears on Blackwell (on "
      "Hopper they run fp8_block_scaling_gemm, trtllm_launch.cc)",
      false};
  Sourced<bool> enable_block_reuse{true, "llmapi/llm_args.py KvCacheConfig.enable_block_reuse"};
  Sourced<bool> cuda_graph_padding{false, "llmapi/llm_args.py CudaGraphConfig.enable_padding = False"};
  Sourced<bool> overlap_scheduler{true, "llmapi/llm_args.py disable_overlap_scheduler = False"};
  Sourced<int> stream_interval{1, "llmapi/llm_args.py stream_interval = 1"};
  /// Runtime memory outside the KV pool and the weights (CUDA context, NCCL, CUDA graphs up to ~200 MB
  /// each), bytes.
  Sourced<double> reserved_bytes{3.5e9, "aiconfigurator other_mem 3.5 GB (servelab's choice)", false};
  /// Token blocks of the KV cache manager.
  Sourced<int> tokens_per_block{32, "llmapi/llm_args.py KvCacheConfig.tokens_per_block = 32", false};
};

inline constexpr TrtllmDefaults kTrtllmDefaults{};

}  // namespace servelab::engines
