// SGLang 0.5.6.post2 defaults of `python3 -m sglang.launch_server`, one table. Source:
// python/sglang/srt/server_args.py (read from a ~Jan 2026 tree; see
// ../shared/reference/deepseek-v32-perf-facts.md §4 SGLang). verified = false marks values not confirmed
// for exactly 0.5.6.post2.
#pragma once

#include "engines/sourced.h"

namespace servelab::engines {

/// One GPU-memory tier of ServerArgs._handle_gpu_memory_settings (applies when the flag is unset).
struct SglangMemoryTier {
  double max_gpu_memory_gib;     ///< tier applies when GPU memory < this (GiB; the last tier is open-ended)
  int chunked_prefill_size;      ///< tokens
  int cuda_graph_max_bs_tp_lt4;  ///< sequences, tp < 4
  int cuda_graph_max_bs_tp_ge4;  ///< sequences, tp >= 4
  const char* example;
  bool verified;
};

/// SGLang 0.5.6.post2 defaults. Units: tokens, sequences, MB (SGLang's memory arithmetic is in MiB).
struct SglangDefaults {
  /// The version used when neither the study nor --engine-version names one.
  Sourced<const char*> version{"0.5.6.post2", "study engine version (seed-study.md)"};
  Sourced<const char*> host{"127.0.0.1", "server_args.py ServerArgs.host"};
  Sourced<int> port{30000, "server_args.py ServerArgs.port"};
  /// _handle_gpu_memory_settings tiers (gpu_mem in GiB as torch reports total memory).
  SglangMemoryTier tiers[6] = {
      {20, 2048, 8, 8, "T4, RTX 4080", false},
      {35, 2048, 24, 80, "A10, RTX 4090/5090", false},
      {60, 4096, 32, 160, "A100-40GB, L40", false},
      {90, 8192, 256, 512, "H100, A100-80GB", false},
      {160, 8192, 256, 512, "H20, H200 (perf-facts §4: 8192; 512 if tp >= 4 else 256)", true},
      {1e9, 16384, 512, 512, "B200, MI300", false},
  };
  // mem_fraction_static when unset: (gpu_mem - reserved) / gpu_mem, reserved in MiB =
  //   base + max(chunked_prefill_size, 2048) * per_chunk_token + cuda_graph_max_bs * per_graph_bs
  //   + tp * pp / 8 * per_tp_rank_eighth; DP-attention adds cuda_graph_max_bs * dp * 3 and, when
  //   cuda_graph_max_bs > 300, cuda_graph_max_bs * dp * 1.5; floored at 10 GiB on > 60 GiB GPUs; + 2 GiB
  //   for EAGLE/NEXTN (server_args.py _handle_gpu_memory_settings; perf-facts §4 reproduces 0.897/0.769).
  Sourced<double> reserved_base_mib{512, "server_args.py _handle_gpu_memory_settings"};
  Sourced<double> reserved_per_chunk_token_mib{1.5, "server_args.py: max(chunked_prefill_size, 2048) * 1.5"};
  Sourced<double> reserved_per_graph_bs_mib{2, "server_args.py: cuda_graph_max_bs * 2"};
  Sourced<double> reserved_per_tp_eighth_mib{1024, "server_args.py: tp_size * pp_size / 8 * 1024"};
  Sourced<double> reserved_dp_attention_per_graph_bs_dp_mib{
      3, "server_args.py: cuda_graph_max_bs * dp_size * 3"};
  Sourced<double> reserved_dp_attention_large_graph_mib{1.5,
                                                        "server_args.py: + cuda_graph_max_bs * dp_size * 1.5 "
                                                        "when cuda_graph_max_bs > 300"};
  Sourced<double> reserved_floor_mib{10240, "server_args.py: max(reserved, 10 GiB) when gpu_mem > 60 GiB"};
  Sourced<double> reserved_speculative_mib{2048, "server_args.py: + 2 GiB for EAGLE/NEXTN draft model"};
  Sourced<int> mem_fraction_decimals{3, "server_args.py: round(..., 3)", false};
  Sourced<int> chunked_prefill_min_for_reserve{2048, "server_args.py: max(chunked_prefill_size, 2048)"};
  Sourced<int> max_prefill_tokens{16384, "server_args.py ServerArgs.max_prefill_tokens"};
  Sourced<const char*> schedule_policy{"fcfs", "server_args.py ServerArgs.schedule_policy", false};
  Sourced<double> schedule_conservativeness{1.0, "server_args.py ServerArgs.schedule_conservativeness"};
  Sourced<double> dp_attention_conservativeness_factor{0.3,
                                                       "server_args.py _handle_data_parallelism: "
                                                       "schedule_conservativeness *= 0.3"};
  Sourced<int> page_size{1, "server_args.py ServerArgs.page_size"};
  Sourced<int> page_size_dsa{64, "server_args.py _handle_model_specific_adjustments: page_size=64 for DSA"};
  Sourced<const char*> attention_backend_dsa{"nsa", "server_args.py: DeepSeek DSA -> attention_backend nsa"};
  Sourced<const char*> nsa_prefill_backend_sm90_bf16{"flashmla_sparse",
                                                     "server_args.py _set_default_nsa_backends"};
  Sourced<const char*> nsa_decode_backend_sm90_bf16{"fa3", "server_args.py _set_default_nsa_backends"};
  Sourced<const char*> nsa_prefill_backend_fp8{"flashmla_auto", "server_args.py _set_default_nsa_backends",
                                               false};
  Sourced<const char*> nsa_decode_backend_fp8{"flashmla_kv", "server_args.py _set_default_nsa_backends"};
  Sourced<const char*> kv_cache_dtype_dsa_sm90{"bfloat16",
                                               "server_args.py _set_default_nsa_kv_cache_dtype (SM90: "
                                               "bf16; spelling of the value unverified)",
                                               false};
  Sourced<const char*> kv_cache_dtype_dsa_sm100{"fp8_e4m3",
                                                "server_args.py _set_default_nsa_kv_cache_dtype (SM100)"};
  Sourced<int> max_running_requests_speculative{48,
                                                "server_args.py: \"max_running_requests is reset to 48 for "
                                                "speculative decoding\" (global, divided by dp)"};
  /// EAGLE defaults chosen for DeepSeek when --speculative-num-steps etc. are unset
  /// (server_args.py auto_choose_speculative_params; the V3.2 docs suggest 3/1/4).
  Sourced<int> speculative_num_steps{3, "server_args.py auto_choose_speculative_params (DeepseekV3)", false};
  Sourced<int> speculative_eagle_topk{1, "server_args.py auto_choose_speculative_params (DeepseekV3)", false};
  Sourced<int> speculative_num_draft_tokens{4, "server_args.py auto_choose_speculative_params (DeepseekV3)",
                                            false};
  Sourced<bool> deep_gemm{true, "sglang/srt/environ.py SGLANG_ENABLE_JIT_DEEPGEMM default true"};
  Sourced<double> reserved_speculative_standalone_mib{6144,
                                                      "server_args.py: + 6 GiB for STANDALONE speculative "
                                                      "decoding (Jan 2026 file)",
                                                      false};
  /// Piecewise CUDA graphs (--enable-piecewise-cuda-graph) add 8 MiB per captured token size.
  Sourced<double> reserved_per_piecewise_size_mib{8, "server_args.py (Jan 2026 file)", false};
  /// auto_choose_speculative_params when --speculative-num-steps is unset: (steps, topk, draft tokens).
  Sourced<int> speculative_default_llama[3] = {{5,
                                                "server_args.py auto_choose_speculative_params "
                                                "(LlamaForCausalLM and the fallback for other models)",
                                                false},
                                               {4, "same", false},
                                               {8, "same", false}};
  /// CUDA-graph capture list without speculative decoding: [1, 2, 4, 8, 12] + 16..256 step 8 + 272..496
  /// step 16 + 512..max step 32 (engine-versions.md §2.1).
  Sourced<const char*> capture_list{
      "[1, 2, 4, 8, 12] + 16..256/8 + 272..496/16 + 512..max/32",
      "server_args.py / cuda_graph_runner.py get_batch_sizes_to_capture (Jan 2026 "
      "file; assumed for every 0.5.x)",
      false};
  Sourced<int> torch_compile_max_bs{32, "server_args.py ServerArgs.torch_compile_max_bs = 32"};
  Sourced<int> clip_max_new_tokens{4096,
                                   "sglang/srt/managers/schedule_policy.py CLIP_MAX_NEW_TOKENS "
                                   "(SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION default 4096)"};
  Sourced<const char*> deepep_mode{"auto", "server_args.py ServerArgs.deepep_mode = \"auto\""};
  Sourced<double> swa_full_tokens_ratio{0.8, "server_args.py ServerArgs.swa_full_tokens_ratio = 0.8", false};
  Sourced<const char*> mamba_ssm_dtype{"float32", "server_args.py ServerArgs.mamba_ssm_dtype = \"float32\"",
                                       false};
  // Hybrid linear-attention (GDN / Mamba) models: the MambaPool beside the KV pool. [recalled: SGLang
  // server_args.py --mamba-full-memory-ratio default 0.9, --max-mamba-cache-size; model_runner.py
  // handle_max_mamba_cache ("solve the equations: mamba_state_memory + full_kv_cache_memory ==
  // total_rest_memory, mamba_state_memory / full_kv_cache_memory == mamba_full_memory_ratio"; without the
  // radix cache max_mamba_cache_size = max_running_requests or 512) and init_memory_pool (max_num_reqs =
  // min(max_num_reqs, max_mamba_cache_size // MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3) with the
  // radix cache, whose MambaRadixCache keeps states of finished prefixes in the same pool); the corpus
  // agrees: SGLang 0.5.9 ran ~130 requests on Qwen3.5-9B / H100 and -35B-A3B / H200 (output tok/s x ITL)
  // with 512 / 246 in flight, TTFT 26 s / 6.5 s]
  Sourced<double> mamba_full_memory_ratio{
      0.9, "server_args.py ServerArgs.mamba_full_memory_ratio = 0.9 [recalled]", false};
  Sourced<int> mamba_cache_per_running_request{
      3, "model_runner.py MAMBA_CACHE_SIZE_MAX_RUNNING_REQUESTS_RATIO = 3 (radix cache on) [recalled]",
      false};
  Sourced<int> mamba_cache_size_no_radix{
      512,
      "model_runner.py handle_max_mamba_cache: max_mamba_cache_size = 512 without the radix cache and "
      "--max-running-requests [recalled]",
      false};
  Sourced<int> req_to_token_pool_min{2048,
                                     "model_runner.py: max_num_reqs = clamp(max_total_tokens / context_len * "
                                     "512, 2048, 4096)"};
};

inline constexpr SglangDefaults kSglangDefaults{};

}  // namespace servelab::engines
