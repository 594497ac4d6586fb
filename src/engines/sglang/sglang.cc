// SGLang 0.5.6.post2 `python3 -m sglang.launch_server`: flag table (python/sglang/srt/server_args.py
// ServerArgs.add_cli_args; plain argparse.ArgumentParser, allow_abbrev=True, store_true booleans),
// environment, and rendering back to flags.
#include <algorithm>

#include "engines/cli_parser.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "engines/sglang/sglang_defaults.h"
#include "engines/sglang/sglang_detail.h"
#include "engines/version.h"
#include "servelab/common/text.h"
#include "servelab/engines/engines.h"

namespace servelab::engines::detail {
namespace {

using V = std::vector<std::string>;
using K = ValueKind;

SpeculativeConfig& spec_of(LaunchConfig& c) {
  if (!c.speculative) c.speculative = SpeculativeConfig{};
  return *c.speculative;
}

// Declaration order follows ServerArgs.add_cli_args (argparse lists ambiguous matches in that order).
const std::vector<FlagSpec>& sglang_specs() {
  static const std::vector<FlagSpec> specs = [] {
    std::vector<FlagSpec> s;
    // Model and tokenizer.
    s.push_back(
        F({"--model-path", "--model"}, K::kString, [](LaunchConfig& c, const V& v) { c.model = v[0]; }));
    s.push_back(F({"--tokenizer-path"}, K::kString));
    s.push_back(F({"--tokenizer-mode"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.tokenizer_mode = v[0]; }, {"auto", "slow"}));
    s.push_back(F({"--tokenizer-worker-num"}, K::kInt));
    s.push_back(F({"--skip-tokenizer-init"}, K::kStoreTrue));
    s.push_back(F({"--load-format"}, K::kString));
    s.push_back(F({"--model-loader-extra-config"}, K::kString));
    s.push_back(F({"--trust-remote-code"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.trust_remote_code = to_bool(v[0]); }));
    s.push_back(F({"--context-length"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.max_model_len = to_int(v[0]); }));
    s.push_back(F({"--is-embedding"}, K::kStoreTrue));
    s.push_back(F({"--enable-multimodal"}, K::kStoreTrue));
    s.push_back(F({"--revision"}, K::kString));
    s.push_back(F({"--model-impl"}, K::kString));
    // HTTP server.
    s.push_back(F({"--host"}, K::kString, [](LaunchConfig& c, const V& v) { c.host = v[0]; }));
    s.push_back(F({"--port"}, K::kInt, [](LaunchConfig& c, const V& v) { c.port = to_int(v[0]); }));
    s.push_back(F({"--skip-server-warmup"}, K::kStoreTrue));
    s.push_back(F({"--warmups"}, K::kString));
    s.push_back(F({"--nccl-port"}, K::kInt));
    // Quantization and data type.
    s.push_back(
        F({"--dtype"}, K::kString, nullptr, {"auto", "half", "float16", "bfloat16", "float", "float32"}));
    s.push_back(
        F({"--quantization"}, K::kString, [](LaunchConfig& c, const V& v) { c.quantization = v[0]; }));
    s.push_back(F({"--quantization-param-path"}, K::kString));
    // [unverified for 0.5.6.post2: "bf16"/"bfloat16"/"fp4_e2m1" in the choices]
    s.push_back(F({"--kv-cache-dtype"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.kv_cache_dtype = v[0]; },
                  {"auto", "fp8_e5m2", "fp8_e4m3", "bf16", "bfloat16", "fp4_e2m1"}));
    s.push_back(F({"--enable-fp32-lm-head"}, K::kStoreTrue));
    // Memory and scheduling.
    s.push_back(F({"--mem-fraction-static"}, K::kFloat,
                  [](LaunchConfig& c, const V& v) { c.gpu_memory_fraction = to_double(v[0]); }));
    s.push_back(F({"--max-running-requests"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.max_num_seqs = to_int(v[0]); }));
    s.push_back(F({"--max-queued-requests"}, K::kInt));
    s.push_back(F({"--max-total-tokens"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.max_total_tokens = to_int(v[0]); }));
    s.push_back(F({"--chunked-prefill-size"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.chunked_prefill_size = to_int(v[0]); }));
    s.push_back(F({"--max-prefill-tokens"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.max_prefill_tokens = to_int(v[0]); }));
    s.push_back(F({"--schedule-policy"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.schedule_policy = v[0]; },
                  {"lpm", "random", "fcfs", "dfs-weight", "lof", "priority"}));
    s.push_back(F({"--enable-priority-scheduling"}, K::kStoreTrue));
    s.push_back(F({"--schedule-low-priority-values-first"}, K::kStoreTrue));
    s.push_back(F({"--priority-scheduling-preemption-threshold"}, K::kInt));
    s.push_back(F({"--schedule-conservativeness"}, K::kFloat,
                  [](LaunchConfig& c, const V& v) { c.schedule_conservativeness = to_double(v[0]); }));
    s.push_back(
        F({"--page-size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.block_size = to_int(v[0]); }));
    s.push_back(F({"--hybrid-kvcache-ratio"}, K::kFloat));
    s.push_back(F({"--swa-full-tokens-ratio"}, K::kFloat,
                  [](LaunchConfig& c, const V& v) { c.swa_full_tokens_ratio = to_double(v[0]); }));
    // [recalled: hybrid linear-attention state dtype, default float32]
    s.push_back(F({"--mamba-ssm-dtype"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.mamba_ssm_cache_dtype = v[0]; },
                  {"float32", "bfloat16"}));
    s.push_back(F({"--disable-hybrid-swa-memory"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.disable_hybrid_swa_memory = to_bool(v[0]); }));
    s.push_back(F({"--radix-eviction-policy"}, K::kString, nullptr, {"lru", "lfu"}));
    // Runtime. (`--tp` / `--dp` work through argparse's unique-prefix abbreviation, not as aliases;
    // `--pp` is ambiguous with --pp-max-micro-batch-size.)
    s.push_back(F({"--device"}, K::kString));
    s.push_back(F({"--tensor-parallel-size", "--tp-size"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.tp = to_int(v[0]); }));
    s.push_back(F({"--pipeline-parallel-size", "--pp-size"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.pp = to_int(v[0]); }));
    s.push_back(F({"--pp-max-micro-batch-size"}, K::kInt));
    s.push_back(F({"--stream-interval"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.stream_interval = to_int(v[0]); }));
    s.push_back(F({"--stream-output"}, K::kStoreTrue));
    s.push_back(F({"--random-seed"}, K::kInt));
    s.push_back(F({"--constrained-json-whitespace-pattern"}, K::kString));
    s.push_back(F({"--constrained-json-disable-any-whitespace"}, K::kStoreTrue));
    s.push_back(F({"--watchdog-timeout"}, K::kFloat));
    s.push_back(F({"--dist-timeout"}, K::kInt));
    s.push_back(F({"--download-dir"}, K::kString));
    s.push_back(F({"--base-gpu-id"}, K::kInt));
    s.push_back(F({"--gpu-id-step"}, K::kInt));
    s.push_back(F({"--sleep-on-idle"}, K::kStoreTrue));
    // Logging and metrics.
    s.push_back(F({"--log-level"}, K::kString));
    s.push_back(F({"--log-level-http"}, K::kString));
    s.push_back(F({"--log-requests"}, K::kStoreTrue));
    s.push_back(F({"--log-requests-level"}, K::kInt, nullptr, {"0", "1", "2", "3"}));
    s.push_back(F({"--crash-dump-folder"}, K::kString));
    s.push_back(F({"--show-time-cost"}, K::kStoreTrue));
    s.push_back(F({"--enable-metrics"}, K::kStoreTrue));
    s.push_back(F({"--enable-metrics-for-all-schedulers"}, K::kStoreTrue));
    s.push_back(F({"--bucket-time-to-first-token"}, K::kStringList));
    s.push_back(F({"--bucket-inter-token-latency"}, K::kStringList));
    s.push_back(F({"--bucket-e2e-request-latency"}, K::kStringList));
    s.push_back(F({"--collect-tokens-histogram"}, K::kStoreTrue));
    s.push_back(F({"--decode-log-interval"}, K::kInt));
    s.push_back(F({"--enable-request-time-stats-logging"}, K::kStoreTrue));
    s.push_back(F({"--kv-events-config"}, K::kString));
    s.push_back(F({"--enable-trace"}, K::kStoreTrue));
    s.push_back(F({"--otlp-traces-endpoint"}, K::kString));
    // API related.
    s.push_back(F({"--api-key"}, K::kString));
    s.push_back(F({"--served-model-name"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.served_model_names = {v[0]}; }));
    s.push_back(F({"--weight-version"}, K::kString));
    s.push_back(
        F({"--chat-template"}, K::kString, [](LaunchConfig& c, const V& v) { c.chat_template = v[0]; }));
    s.push_back(F({"--completion-template"}, K::kString));
    s.push_back(F({"--file-storage-path"}, K::kString));
    s.push_back(F({"--enable-cache-report"}, K::kStoreTrue));
    // [unverified: parser choices are registries; not validated]
    s.push_back(F({"--reasoning-parser"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.reasoning_parser = v[0]; }));
    s.push_back(F({"--tool-call-parser"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.tool_call_parser = v[0]; }));
    s.push_back(F({"--sampling-defaults"}, K::kString, nullptr, {"openai", "model"}));
    s.push_back(F({"--tool-server"}, K::kString));
    // Data parallelism.
    s.push_back(F({"--data-parallel-size", "--dp-size"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.dp = to_int(v[0]); }));
    s.push_back(F({"--load-balance-method"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.load_balance_method = v[0]; },
                  {"round_robin", "shortest_queue", "minimum_tokens"}));
    // Multi-node.
    s.push_back(F({"--dist-init-addr", "--nccl-init-addr"}, K::kString));
    s.push_back(F({"--nnodes"}, K::kInt, [](LaunchConfig& c, const V& v) { c.nnodes = to_int(v[0]); }));
    s.push_back(F({"--node-rank"}, K::kInt));
    // Model override.
    s.push_back(F({"--json-model-override-args"}, K::kString));
    s.push_back(F({"--preferred-sampling-params"}, K::kString));
    // LoRA.
    s.push_back(F({"--enable-lora"}, K::kStoreTrue));
    s.push_back(F({"--max-lora-rank"}, K::kInt));
    s.push_back(F({"--lora-target-modules"}, K::kStringList));
    s.push_back(F({"--lora-paths"}, K::kStringList));
    s.push_back(F({"--max-loras-per-batch"}, K::kInt));
    s.push_back(F({"--max-loaded-loras"}, K::kInt));
    s.push_back(F({"--lora-backend"}, K::kString));
    // Kernel backends.
    s.push_back(F({"--attention-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.attention_backend = v[0]; },
                  {"triton", "torch_native", "flex_attention", "nsa", "cutlass_mla", "fa3", "fa4",
                   "flashinfer", "flashmla", "trtllm_mla", "trtllm_mha", "dual_chunk_flash_attn", "aiter",
                   "wave", "intel_amx", "ascend"}));
    s.push_back(F({"--prefill-attention-backend"}, K::kString));
    s.push_back(F({"--decode-attention-backend"}, K::kString));
    s.push_back(F({"--sampling-backend"}, K::kString, nullptr, {"flashinfer", "pytorch"}));
    s.push_back(
        F({"--grammar-backend"}, K::kString, nullptr, {"xgrammar", "outlines", "llguidance", "none"}));
    s.push_back(F({"--mm-attention-backend"}, K::kString));
    // [unverified for 0.5.6.post2: flashmla_auto and trtllm in the NSA choices]
    s.push_back(F({"--nsa-prefill-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.nsa_prefill_backend = v[0]; },
                  {"flashmla_sparse", "flashmla_kv", "flashmla_auto", "fa3", "tilelang", "aiter", "trtllm"}));
    s.push_back(F({"--nsa-decode-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.nsa_decode_backend = v[0]; },
                  {"flashmla_sparse", "flashmla_kv", "flashmla_auto", "fa3", "tilelang", "aiter", "trtllm"}));
    // Speculative decoding.
    s.push_back(F({"--speculative-algorithm"}, K::kString,
                  [](LaunchConfig& c, const V& v) { spec_of(c).method = v[0]; },
                  {"EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"}));
    s.push_back(F({"--speculative-draft-model-path", "--speculative-draft-model"}, K::kString,
                  [](LaunchConfig& c, const V& v) { spec_of(c).draft_model = v[0]; }));
    s.push_back(F({"--speculative-draft-model-revision"}, K::kString));
    s.push_back(F({"--speculative-num-steps"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { spec_of(c).num_steps = to_int(v[0]); }));
    s.push_back(F({"--speculative-eagle-topk"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { spec_of(c).eagle_topk = to_int(v[0]); }));
    s.push_back(F({"--speculative-num-draft-tokens"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { spec_of(c).num_draft_tokens = to_int(v[0]); }));
    s.push_back(F({"--speculative-accept-threshold-single"}, K::kFloat));
    s.push_back(F({"--speculative-accept-threshold-acc"}, K::kFloat));
    s.push_back(F({"--speculative-token-map"}, K::kString));
    s.push_back(F({"--speculative-attention-mode"}, K::kString, nullptr, {"prefill", "decode"}));
    s.push_back(F({"--speculative-ngram-min-match-window-size"}, K::kInt));
    s.push_back(F({"--speculative-ngram-max-match-window-size"}, K::kInt));
    s.push_back(F({"--speculative-ngram-min-bfs-breadth"}, K::kInt));
    s.push_back(F({"--speculative-ngram-max-bfs-breadth"}, K::kInt));
    s.push_back(F({"--speculative-ngram-match-type"}, K::kString, nullptr, {"BFS", "PROB"}));
    s.push_back(F({"--speculative-ngram-branch-length"}, K::kInt));
    s.push_back(F({"--speculative-ngram-capacity"}, K::kInt));
    // Expert parallelism.
    s.push_back(F({"--expert-parallel-size", "--ep-size", "--ep"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.ep = to_int(v[0]); }));
    s.push_back(F({"--moe-a2a-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.moe_a2a_backend = v[0]; },
                  {"none", "deepep", "mooncake", "ascend_fuseep"}));
    s.push_back(F({"--moe-runner-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.moe_runner_backend = v[0]; },
                  {"auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm", "flashinfer_cutlass",
                   "flashinfer_mxfp4", "flashinfer_cutedsl", "cutlass"}));
    s.push_back(F({"--flashinfer-mxfp4-moe-precision"}, K::kString, nullptr, {"default", "bf16"}));
    s.push_back(F({"--enable-flashinfer-allreduce-fusion"}, K::kStoreTrue));
    s.push_back(F({"--deepep-mode"}, K::kString, [](LaunchConfig& c, const V& v) { c.deepep_mode = v[0]; },
                  {"normal", "low_latency", "auto"}));
    s.push_back(F({"--ep-num-redundant-experts"}, K::kInt));
    s.push_back(F({"--ep-dispatch-algorithm"}, K::kString));
    s.push_back(F({"--init-expert-location"}, K::kString));
    s.push_back(F({"--enable-eplb"}, K::kStoreTrue));
    s.push_back(F({"--eplb-algorithm"}, K::kString));
    s.push_back(F({"--eplb-rebalance-num-iterations"}, K::kInt));
    s.push_back(F({"--eplb-rebalance-layers-per-chunk"}, K::kInt));
    s.push_back(F({"--expert-distribution-recorder-mode"}, K::kString));
    s.push_back(F({"--expert-distribution-recorder-buffer-size"}, K::kInt));
    s.push_back(F({"--enable-expert-distribution-metrics"}, K::kStoreTrue));
    s.push_back(F({"--deepep-config"}, K::kString));
    s.push_back(F({"--moe-dense-tp-size"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.moe_dense_tp_size = to_int(v[0]); }));
    // Hierarchical cache.
    s.push_back(F({"--enable-hierarchical-cache"}, K::kStoreTrue));
    s.push_back(F({"--hicache-ratio"}, K::kFloat));
    s.push_back(F({"--hicache-size"}, K::kInt));
    s.push_back(F({"--hicache-write-policy"}, K::kString));
    s.push_back(F({"--hicache-io-backend"}, K::kString));
    s.push_back(F({"--hicache-mem-layout"}, K::kString));
    s.push_back(F({"--hicache-storage-backend"}, K::kString));
    s.push_back(F({"--hicache-storage-prefetch-policy"}, K::kString));
    // Offloading.
    s.push_back(F({"--cpu-offload-gb"}, K::kInt));
    s.push_back(F({"--offload-group-size"}, K::kInt));
    s.push_back(F({"--offload-num-in-group"}, K::kInt));
    s.push_back(F({"--offload-prefetch-step"}, K::kInt));
    s.push_back(F({"--offload-mode"}, K::kString));
    // Optimization / debug.
    s.push_back(F({"--disable-radix-cache"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_prefix_caching = !to_bool(v[0]); }));
    s.push_back(F({"--cuda-graph-max-bs"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.cuda_graph_max_bs = to_int(v[0]); }));
    s.push_back(F({"--cuda-graph-bs"}, K::kIntList, [](LaunchConfig& c, const V& v) {
      c.cuda_graph_sizes.clear();
      for (const auto& x : v) c.cuda_graph_sizes.push_back(to_int(x));
      std::sort(c.cuda_graph_sizes.begin(), c.cuda_graph_sizes.end());
    }));
    s.push_back(F({"--disable-cuda-graph"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enforce_eager = to_bool(v[0]); }));
    s.push_back(F({"--disable-cuda-graph-padding"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.cuda_graph_padding = !to_bool(v[0]); }));
    s.push_back(F({"--enable-profile-cuda-graph"}, K::kStoreTrue));
    s.push_back(F({"--enable-cudagraph-gc"}, K::kStoreTrue));
    s.push_back(F({"--enable-nccl-nvls"}, K::kStoreTrue));
    s.push_back(F({"--enable-symm-mem"}, K::kStoreTrue));
    s.push_back(F({"--disable-flashinfer-cutlass-moe-fp4-allgather"}, K::kStoreTrue));
    s.push_back(F({"--enable-tokenizer-batch-encode"}, K::kStoreTrue));
    s.push_back(F({"--disable-outlines-disk-cache"}, K::kStoreTrue));
    s.push_back(F({"--disable-custom-all-reduce"}, K::kStoreTrue));
    s.push_back(F({"--enable-mscclpp"}, K::kStoreTrue));
    s.push_back(F({"--enable-torch-symm-mem"}, K::kStoreTrue));
    s.push_back(F({"--disable-overlap-schedule"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.disable_overlap_schedule = to_bool(v[0]); }));
    s.push_back(F({"--enable-mixed-chunk"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_mixed_chunk = to_bool(v[0]); }));
    s.push_back(F({"--enable-dp-attention"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_dp_attention = to_bool(v[0]); }));
    s.push_back(F({"--enable-dp-lm-head"}, K::kStoreTrue));
    s.push_back(F({"--enable-two-batch-overlap"}, K::kStoreTrue));
    s.push_back(F({"--enable-single-batch-overlap"}, K::kStoreTrue));
    s.push_back(F({"--tbo-token-distribution-threshold"}, K::kFloat));
    s.push_back(F({"--enable-torch-compile"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_torch_compile = to_bool(v[0]); }));
    s.push_back(F({"--enable-piecewise-cuda-graph"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_piecewise_cuda_graph = to_bool(v[0]); }));
    // Releases where piecewise CUDA graphs are on by default turn them off with this [recalled]; the twin's
    // SGLang default is off already, so it confirms that.
    s.push_back(F({"--disable-piecewise-cuda-graph"}, K::kStoreTrue, [](LaunchConfig& c, const V& v) {
      if (to_bool(v[0])) c.enable_piecewise_cuda_graph = false;
    }));
    s.push_back(F({"--fp8-gemm-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.fp8_gemm_backend = v[0]; }));
    // Deprecated spellings (parse_sglang maps them as ServerArgs._handle_deprecated_args does [recalled]):
    // expert parallelism over the TP group, and FlashInfer's TRT-LLM MoE runner.
    s.push_back(F({"--enable-flashinfer-trtllm-moe"}, K::kStoreTrue));
    s.push_back(F({"--enable-ep-moe"}, K::kStoreTrue));
    s.push_back(F({"--torch-compile-max-bs"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.torch_compile_max_bs = to_int(v[0]); }));
    s.push_back(F({"--torchao-config"}, K::kString));
    s.push_back(F({"--enable-nan-detection"}, K::kStoreTrue));
    s.push_back(F({"--enable-p2p-check"}, K::kStoreTrue));
    s.push_back(F({"--triton-attention-reduce-in-fp32"}, K::kStoreTrue));
    s.push_back(F({"--triton-attention-num-kv-splits"}, K::kInt));
    s.push_back(F({"--num-continuous-decode-steps"}, K::kInt));
    s.push_back(F({"--delete-ckpt-after-loading"}, K::kStoreTrue));
    s.push_back(F({"--enable-memory-saver"}, K::kStoreTrue));
    s.push_back(F({"--allow-auto-truncate"}, K::kStoreTrue));
    s.push_back(F({"--enable-custom-logit-processor"}, K::kStoreTrue));
    s.push_back(F({"--flashinfer-mla-disable-ragged"}, K::kStoreTrue));
    s.push_back(F({"--disable-shared-experts-fusion"}, K::kStoreTrue));
    s.push_back(F({"--disable-chunked-prefix-cache"}, K::kStoreTrue));
    s.push_back(F({"--disable-fast-image-processor"}, K::kStoreTrue));
    s.push_back(F({"--keep-mm-feature-on-device"}, K::kStoreTrue));
    s.push_back(F({"--enable-return-hidden-states"}, K::kStoreTrue));
    s.push_back(F({"--scheduler-recv-interval"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.scheduler_recv_interval = to_int(v[0]); }));
    s.push_back(F({"--numa-node"}, K::kIntList));
    s.push_back(F({"--enable-deterministic-inference"}, K::kStoreTrue));
    // PD disaggregation.
    s.push_back(F({"--disaggregation-mode"}, K::kString, nullptr, {"null", "prefill", "decode"}));
    s.push_back(F({"--disaggregation-transfer-backend"}, K::kString));
    s.push_back(F({"--disaggregation-bootstrap-port"}, K::kInt));
    s.push_back(F({"--disaggregation-ib-device"}, K::kString));
    s.push_back(F({"--num-reserved-decode-tokens"}, K::kInt));
    s.push_back(F({"--custom-weight-loader"}, K::kStringList));
    s.push_back(F({"--weight-loader-disable-mmap"}, K::kStoreTrue));
    s.push_back(F({"--enable-pdmux"}, K::kStoreTrue));
    s.push_back(F({"--config"}, K::kString, [](LaunchConfig& c, const V& v) { c.config_file = v[0]; }));
    return s;
  }();
  return specs;
}

}  // namespace

bool sglang_env_true(const std::string& value, bool fallback) {
  // sglang/srt/environ.py EnvBool / utils.get_bool_env_var: "true"/"1" (case-insensitive) are true,
  // "false"/"0" false. [unverified: other spellings fall back to the default]
  const std::string v = common::ascii_lower(value);
  if (v == "true" || v == "1" || v == "yes" || v == "y") return true;
  if (v == "false" || v == "0" || v == "no" || v == "n") return false;
  return fallback;
}

namespace {

/// SGLang's deprecated MoE switches, as ServerArgs._handle_deprecated_args maps them (0.5.x, with a
/// deprecation warning) [recalled: sglang/srt/server_args.py]: --enable-ep-moe sets ep_size = tp_size,
/// --enable-flashinfer-trtllm-moe sets moe_runner_backend = flashinfer_trtllm. They leave `c`'s unmodelled
/// options and the launch renders as their current spelling.
void map_deprecated_moe_flags(LaunchConfig& c) {
  auto& opts = c.unmodelled_options;
  for (auto it = opts.begin(); it != opts.end();) {
    if (it->flag == "--enable-ep-moe") {
      c.ep = c.tp;
    } else if (it->flag == "--enable-flashinfer-trtllm-moe") {
      c.moe_runner_backend = "flashinfer_trtllm";
    } else {
      ++it;
      continue;
    }
    it = opts.erase(it);
  }
}

}  // namespace

void parse_sglang(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& c) {
  const auto& d = kSglangDefaults;
  if (c.engine_version.empty()) c.engine_version = d.version.value;
  const EngineVersion version = EngineVersion::parse(c.engine_version);
  c.host = d.host.value;
  c.port = d.port.value;
  c.gpu_memory_fraction = 0.0;  // auto: resolve_launch applies SGLang's formula
  c.enable_chunked_prefill = true;
  c.enable_prefix_caching = true;
  c.schedule_policy = d.schedule_policy.value;
  c.schedule_conservativeness = d.schedule_conservativeness.value;
  c.kv_cache_dtype = "auto";
  c.tokenizer_mode = "auto";
  // `python3 -m sglang.launch_server`: argparse prog = basename(sys.argv[0]) = "launch_server.py".
  // `sglang serve` hands its remaining argv to prepare_server_args, whose parser's prog is "sglang".
  // [unverified: the `sglang` CLI entry point in 0.5.6.post2]
  const std::string prog = c.program == "sglang serve" ? "sglang" : "launch_server.py";
  // Every flag of the table exists in every modelled 0.5.x release [unverified: the table is the
  // 0.5.6.post2 one; no release boundary is known for its flags].
  const std::vector<FlagSpec> specs = specs_in(sglang_specs(), version);
  ArgparseSettings settings{prog, EngineKind::kSglang, 0, true, &specs[0], ""};
  ParsedArgs parsed = parse_argparse(specs, args, settings);
  apply_parsed(c, parsed);
  map_deprecated_moe_flags(c);
  if (c.served_model_names.empty()) c.served_model_names = {c.model};
  if (c.chunked_prefill_size && *c.chunked_prefill_size <= 0) c.enable_chunked_prefill = false;
  // Speculative parameters without --speculative-algorithm are ignored by SGLang; keep them as
  // unmodelled options so nothing is lost.
  if (c.speculative && c.speculative->method.empty()) {
    const auto& s = *c.speculative;
    if (s.num_steps)
      c.unmodelled_options.push_back({"--speculative-num-steps", {std::to_string(s.num_steps)}});
    if (s.eagle_topk)
      c.unmodelled_options.push_back({"--speculative-eagle-topk", {std::to_string(s.eagle_topk)}});
    if (s.num_draft_tokens)
      c.unmodelled_options.push_back(
          {"--speculative-num-draft-tokens", {std::to_string(s.num_draft_tokens)}});
    if (!s.draft_model.empty())
      c.unmodelled_options.push_back({"--speculative-draft-model-path", {s.draft_model}});
    c.speculative.reset();
  }
  if (c.speculative && c.speculative->num_draft_tokens > 0)
    c.speculative->num_speculative_tokens = c.speculative->num_draft_tokens - 1;

  // Environment: SGLANG_ENABLE_JIT_DEEPGEMM (legacy SGL_ENABLE_JIT_DEEPGEMM), default true.
  c.deep_gemm = d.deep_gemm.value;
  if (auto it = env.find("SGL_ENABLE_JIT_DEEPGEMM"); it != env.end())
    c.deep_gemm = sglang_env_true(it->second, c.deep_gemm);
  if (auto it = env.find("SGLANG_ENABLE_JIT_DEEPGEMM"); it != env.end())
    c.deep_gemm = sglang_env_true(it->second, c.deep_gemm);
}

std::vector<std::string> render_sglang(const LaunchConfig& c, const LaunchConfig& b) {
  std::vector<std::string> a;
  auto add = [&](const std::string& flag, const std::string& value) {
    a.push_back(flag);
    a.push_back(value);
  };
  auto add_flag = [&](const std::string& flag, bool value, bool base) {
    if (value && !base) a.push_back(flag);
  };
  auto add_opt = [&](const std::string& flag, const std::optional<int>& v, const std::optional<int>& base) {
    if (v && v != base) add(flag, std::to_string(*v));
  };
  if (c.host != b.host) add("--host", c.host);
  if (c.port != b.port) add("--port", std::to_string(c.port));
  if (c.chat_template != b.chat_template) add("--chat-template", c.chat_template);
  if (c.tp != b.tp) add("--tp-size", std::to_string(c.tp));
  if (c.dp != b.dp) add("--dp-size", std::to_string(c.dp));
  if (c.pp != b.pp) add("--pp-size", std::to_string(c.pp));
  if (c.nnodes != b.nnodes) add("--nnodes", std::to_string(c.nnodes));
  add_flag("--enable-dp-attention", c.enable_dp_attention, b.enable_dp_attention);
  if (c.ep != b.ep) add("--ep-size", std::to_string(c.ep));
  if (c.reasoning_parser != b.reasoning_parser) add("--reasoning-parser", c.reasoning_parser);
  if (c.tool_call_parser != b.tool_call_parser) add("--tool-call-parser", c.tool_call_parser);
  if (c.tokenizer_mode != b.tokenizer_mode) add("--tokenizer-mode", c.tokenizer_mode);
  add_opt("--context-length", c.max_model_len, b.max_model_len);
  if (c.kv_cache_dtype != b.kv_cache_dtype) add("--kv-cache-dtype", c.kv_cache_dtype);
  if (c.attention_backend != b.attention_backend) add("--attention-backend", c.attention_backend);
  if (c.nsa_prefill_backend != b.nsa_prefill_backend) add("--nsa-prefill-backend", c.nsa_prefill_backend);
  if (c.nsa_decode_backend != b.nsa_decode_backend) add("--nsa-decode-backend", c.nsa_decode_backend);
  if (c.gpu_memory_fraction != b.gpu_memory_fraction)
    add("--mem-fraction-static", format_number(c.gpu_memory_fraction));
  add_opt("--max-running-requests", c.max_num_seqs, b.max_num_seqs);
  add_opt("--max-total-tokens", c.max_total_tokens, b.max_total_tokens);
  if (c.chunked_prefill_size != b.chunked_prefill_size && c.chunked_prefill_size)
    add("--chunked-prefill-size", std::to_string(*c.chunked_prefill_size));
  else if (!c.enable_chunked_prefill && b.enable_chunked_prefill)
    add("--chunked-prefill-size", "-1");
  add_opt("--max-prefill-tokens", c.max_prefill_tokens, b.max_prefill_tokens);
  if (c.schedule_policy != b.schedule_policy) add("--schedule-policy", c.schedule_policy);
  if (c.schedule_conservativeness && c.schedule_conservativeness != b.schedule_conservativeness)
    add("--schedule-conservativeness", format_number(*c.schedule_conservativeness));
  if (c.block_size != b.block_size && c.block_size > 0) add("--page-size", std::to_string(c.block_size));
  add_opt("--cuda-graph-max-bs", c.cuda_graph_max_bs, b.cuda_graph_max_bs);
  add_flag("--disable-cuda-graph", c.enforce_eager, b.enforce_eager);
  if (!c.cuda_graph_sizes.empty() && c.cuda_graph_sizes != b.cuda_graph_sizes) {
    a.push_back("--cuda-graph-bs");
    for (int x : c.cuda_graph_sizes) a.push_back(std::to_string(x));
  }
  if (c.cuda_graph_padding == false && b.cuda_graph_padding != false)
    a.push_back("--disable-cuda-graph-padding");
  add_flag("--enable-torch-compile", c.enable_torch_compile, b.enable_torch_compile);
  add_opt("--torch-compile-max-bs", c.torch_compile_max_bs, b.torch_compile_max_bs);
  add_flag("--disable-overlap-schedule", c.disable_overlap_schedule, b.disable_overlap_schedule);
  add_flag("--enable-mixed-chunk", c.enable_mixed_chunk, b.enable_mixed_chunk);
  add_opt("--stream-interval", c.stream_interval, b.stream_interval);
  if (c.deepep_mode != b.deepep_mode) add("--deepep-mode", c.deepep_mode);
  add_opt("--moe-dense-tp-size", c.moe_dense_tp_size, b.moe_dense_tp_size);
  if (c.load_balance_method != b.load_balance_method) add("--load-balance-method", c.load_balance_method);
  if (c.mamba_ssm_cache_dtype != b.mamba_ssm_cache_dtype) add("--mamba-ssm-dtype", c.mamba_ssm_cache_dtype);
  if (c.swa_full_tokens_ratio && c.swa_full_tokens_ratio != b.swa_full_tokens_ratio)
    add("--swa-full-tokens-ratio", format_number(*c.swa_full_tokens_ratio));
  add_flag("--disable-hybrid-swa-memory", c.disable_hybrid_swa_memory, b.disable_hybrid_swa_memory);
  add_flag("--enable-piecewise-cuda-graph", c.enable_piecewise_cuda_graph, b.enable_piecewise_cuda_graph);
  add_flag("--disable-radix-cache", !c.enable_prefix_caching, !b.enable_prefix_caching);
  add_flag("--trust-remote-code", c.trust_remote_code, b.trust_remote_code);
  if (c.quantization != b.quantization) add("--quantization", c.quantization);
  if (c.moe_a2a_backend != b.moe_a2a_backend) add("--moe-a2a-backend", c.moe_a2a_backend);
  if (c.moe_runner_backend != b.moe_runner_backend) add("--moe-runner-backend", c.moe_runner_backend);
  if (c.served_model_names != std::vector<std::string>{c.model})
    add("--served-model-name", c.served_model_names.front());
  if (c.config_file != b.config_file) add("--config", c.config_file);
  if (c.fp8_gemm_backend != b.fp8_gemm_backend) add("--fp8-gemm-backend", c.fp8_gemm_backend);
  if (c.speculative) {
    const auto& s = *c.speculative;
    add("--speculative-algorithm", s.method);
    if (!s.draft_model.empty()) add("--speculative-draft-model-path", s.draft_model);
    if (s.num_steps) add("--speculative-num-steps", std::to_string(s.num_steps));
    if (s.eagle_topk) add("--speculative-eagle-topk", std::to_string(s.eagle_topk));
    int draft = s.num_draft_tokens ? s.num_draft_tokens
                                   : (s.num_speculative_tokens ? s.num_speculative_tokens + 1 : 0);
    if (draft) add("--speculative-num-draft-tokens", std::to_string(draft));
  }
  for (const auto& o : c.unmodelled_options) {
    a.push_back(o.flag);
    for (const auto& v : o.values) a.push_back(v);
  }
  return a;
}

// SGLANG_ENABLE_JIT_DEEPGEMM follows deep_gemm (also when the launch set the older SGL_ spelling).
void render_env_sglang(const LaunchConfig& c, std::map<std::string, std::string>& env) {
  if (!c.deep_gemm)
    env["SGLANG_ENABLE_JIT_DEEPGEMM"] = "0";
  else if (env.count("SGLANG_ENABLE_JIT_DEEPGEMM") || env.count("SGL_ENABLE_JIT_DEEPGEMM"))
    env["SGLANG_ENABLE_JIT_DEEPGEMM"] = "1";
}

// --nnodes N: the world split evenly over N nodes.
std::optional<LaunchConfig::NodePlacement> stated_node_placement_sglang(const LaunchConfig& c) {
  if (c.nnodes <= 1) return std::nullopt;
  // SGLang splits tp * pp over --nnodes nodes (tp_size_per_node = tp_size // nnodes, server_args.py).
  return LaunchConfig::NodePlacement{c.nnodes, (c.gpus_used() + c.nnodes - 1) / c.nnodes,
                                     "--nnodes " + std::to_string(c.nnodes), /*split_evenly=*/true};
}

}  // namespace servelab::engines::detail
