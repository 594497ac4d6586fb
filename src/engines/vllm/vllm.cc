// vLLM 0.13 `vllm serve`: flag table (vllm/engine/arg_utils.py EngineArgs.add_cli_args,
// vllm/entrypoints/openai/cli_args.py make_arg_parser), FlexibleArgumentParser pre-processing
// (vllm/utils/argparse_utils.py), environment, and rendering back to flags.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "engines/cli_parser.h"
#include "engines/engines_detail.h"
#include "engines/version.h"
#include "engines/vllm/vllm_defaults.h"
#include "engines/vllm/vllm_detail.h"
#include "servelab/engines/engines.h"

namespace servelab::engines::detail {
namespace {

using V = std::vector<std::string>;
using K = ValueKind;

// Restricts the last spec to releases [since, until).
void gate(std::vector<FlagSpec>& s, const char* since, const char* until, const char* source) {
  s.back().versions = VersionRange{since, until};
  s.back().versions_source = source;
}

std::vector<int> int_list(const nlohmann::json& a) {
  std::vector<int> out;
  for (const auto& x : a)
    if (x.is_number_integer()) out.push_back(x.get<int>());
  std::sort(out.begin(), out.end());
  return out;
}

void apply_speculative(LaunchConfig& c, const V& v) {
  auto j = nlohmann::json::parse(v[0]);
  if (j.is_null()) {
    c.speculative.reset();
    return;
  }
  SpeculativeConfig s;
  s.json = v[0];
  if (j.is_object()) {
    if (j.contains("method") && j["method"].is_string()) s.method = j["method"].get<std::string>();
    if (j.contains("num_speculative_tokens") && j["num_speculative_tokens"].is_number_integer())
      s.num_speculative_tokens = j["num_speculative_tokens"].get<int>();
    if (j.contains("model") && j["model"].is_string()) s.draft_model = j["model"].get<std::string>();
  }
  c.speculative = s;
}

void apply_compilation(LaunchConfig& c, const V& v) {
  auto j = nlohmann::json::parse(v[0]);
  c.cuda_graph_max_bs.reset();
  c.cuda_graph_sizes.clear();
  c.cudagraph_mode.clear();
  if (j.is_object()) {
    if (j.contains("max_cudagraph_capture_size") && j["max_cudagraph_capture_size"].is_number_integer()) {
      c.cuda_graph_max_bs = j["max_cudagraph_capture_size"].get<int>();
    } else if (j.contains("cudagraph_capture_sizes") && j["cudagraph_capture_sizes"].is_array() &&
               !j["cudagraph_capture_sizes"].empty()) {
      c.cuda_graph_sizes = int_list(j["cudagraph_capture_sizes"]);
      if (!c.cuda_graph_sizes.empty()) c.cuda_graph_max_bs = c.cuda_graph_sizes.back();
    }
    // vllm/config/compilation.py CUDAGraphMode names; 0.10's boolean full_cuda_graph meant FULL graphs
    // for the batches attention supports [unverified: FULL vs FULL_AND_PIECEWISE in 0.10.2].
    if (j.contains("cudagraph_mode") && j["cudagraph_mode"].is_string())
      c.cudagraph_mode = j["cudagraph_mode"].get<std::string>();
    else if (j.contains("full_cuda_graph") && j["full_cuda_graph"].is_boolean() &&
             j["full_cuda_graph"].get<bool>())
      c.cudagraph_mode = "FULL";
  }
  // Kept verbatim too (it holds more than the capture size), replacing an earlier occurrence.
  auto& u = c.unmodelled_options;
  u.erase(std::remove_if(u.begin(), u.end(),
                         [](const EngineOption& o) { return o.flag == "--compilation-config"; }),
          u.end());
  u.push_back({"--compilation-config", {v[0]}});
}

// The vLLM 0.13 `vllm serve` options. Modelled ones carry an ApplyFn. Declaration order follows
// make_arg_parser (frontend first, then EngineArgs groups) because argparse's ambiguity messages list
// matches in that order.
const std::vector<FlagSpec>& vllm_specs() {
  static const std::vector<FlagSpec> specs = [] {
    std::vector<FlagSpec> s;
    // Frontend (vllm/entrypoints/openai/cli_args.py FrontendArgs).
    s.push_back(F({"--host"}, K::kString, [](LaunchConfig& c, const V& v) { c.host = v[0]; }));
    s.push_back(F({"--port"}, K::kInt, [](LaunchConfig& c, const V& v) { c.port = to_int(v[0]); }));
    s.push_back(F({"--uds"}, K::kString));
    s.push_back(F({"--uvicorn-log-level"}, K::kString, nullptr,
                  {"critical", "debug", "error", "info", "trace", "warning"}));
    s.push_back(F({"--disable-uvicorn-access-log"}, K::kBoolOptional));
    s.push_back(F({"--allow-credentials"}, K::kBoolOptional));
    s.push_back(F({"--allowed-origins"}, K::kJson));
    s.push_back(F({"--allowed-methods"}, K::kJson));
    s.push_back(F({"--allowed-headers"}, K::kJson));
    s.push_back(F({"--api-key"}, K::kStringList));
    s.push_back(F({"--lora-modules"}, K::kStringList));
    s.push_back(
        F({"--chat-template"}, K::kString, [](LaunchConfig& c, const V& v) { c.chat_template = v[0]; }));
    s.push_back(F({"--chat-template-content-format"}, K::kString, nullptr, {"auto", "openai", "string"}));
    s.push_back(F({"--trust-request-chat-template"}, K::kBoolOptional));
    s.push_back(F({"--response-role"}, K::kString));
    s.push_back(F({"--ssl-keyfile"}, K::kString));
    s.push_back(F({"--ssl-certfile"}, K::kString));
    s.push_back(F({"--ssl-ca-certs"}, K::kString));
    s.push_back(F({"--enable-ssl-refresh"}, K::kBoolOptional));
    s.push_back(F({"--ssl-cert-reqs"}, K::kInt));
    s.push_back(F({"--root-path"}, K::kString));
    s.push_back(F({"--middleware"}, K::kStringList));
    s.push_back(F({"--return-tokens-as-token-ids"}, K::kBoolOptional));
    s.push_back(F({"--disable-frontend-multiprocessing"}, K::kBoolOptional));
    s.push_back(F({"--enable-request-id-headers"}, K::kBoolOptional));
    s.push_back(F({"--enable-auto-tool-choice"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.enable_auto_tool_choice = to_bool(v[0]); }));
    s.push_back(F({"--exclude-tools-when-tool-choice-none"}, K::kBoolOptional));
    s.push_back(F({"--tool-call-parser"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.tool_call_parser = v[0]; }));
    s.push_back(F({"--tool-parser-plugin"}, K::kString));
    s.push_back(F({"--tool-server"}, K::kString));
    s.push_back(F({"--log-config-file"}, K::kString));
    s.push_back(F({"--max-log-len"}, K::kInt));
    s.push_back(F({"--disable-fastapi-docs"}, K::kBoolOptional));
    s.push_back(F({"--enable-prompt-tokens-details"}, K::kBoolOptional));
    s.push_back(F({"--enable-server-load-tracking"}, K::kBoolOptional));
    s.push_back(F({"--enable-force-include-usage"}, K::kBoolOptional));
    s.push_back(F({"--enable-tokenizer-info-endpoint"}, K::kBoolOptional));
    s.push_back(F({"--enable-log-outputs"}, K::kBoolOptional));
    s.push_back(F({"--h11-max-incomplete-event-size"}, K::kInt));
    s.push_back(F({"--h11-max-header-count"}, K::kInt));
    s.push_back(F({"--log-error-stack"}, K::kBoolOptional));
    s.push_back(F({"--headless"}, K::kStoreTrue));
    s.push_back(F({"--api-server-count", "-asc"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.api_server_count = to_int(v[0]); }));
    s.push_back(F({"--config"}, K::kString, [](LaunchConfig& c, const V& v) { c.config_file = v[0]; }));
    s.push_back(F({"--disable-log-stats"}, K::kStoreTrue));
    s.push_back(F({"--enable-log-requests"}, K::kBoolOptional));
    s.push_back(F({"--disable-log-requests"}, K::kBoolOptional));
    // ModelConfig.
    s.push_back(F({"--model"}, K::kString, [](LaunchConfig& c, const V& v) { c.model = v[0]; }));
    s.push_back(F({"--runner"}, K::kString, nullptr, {"auto", "draft", "generate", "pooling"}));
    s.push_back(F({"--convert"}, K::kString, nullptr, {"auto", "classify", "embed", "none", "reward"}));
    s.push_back(F({"--tokenizer"}, K::kString));
    // [unverified: 0.13 tokenizer modes are a registry; no choices validation]
    s.push_back(
        F({"--tokenizer-mode"}, K::kString, [](LaunchConfig& c, const V& v) { c.tokenizer_mode = v[0]; }));
    s.push_back(F({"--trust-remote-code"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.trust_remote_code = to_bool(v[0]); }));
    s.push_back(
        F({"--dtype"}, K::kString, nullptr, {"auto", "bfloat16", "float", "float16", "float32", "half"}));
    s.push_back(F({"--seed"}, K::kInt));
    s.push_back(F({"--hf-config-path"}, K::kString));
    s.push_back(F({"--allowed-local-media-path"}, K::kString));
    s.push_back(F({"--allowed-media-domains"}, K::kStringList));
    s.push_back(F({"--revision"}, K::kString));
    s.push_back(F({"--code-revision"}, K::kString));
    s.push_back(F({"--tokenizer-revision"}, K::kString));
    s.push_back(F({"--max-model-len"}, K::kHumanInt,
                  [](LaunchConfig& c, const V& v) { c.max_model_len = to_int(v[0]); }));
    s.push_back(
        F({"--quantization", "-q"}, K::kString, [](LaunchConfig& c, const V& v) { c.quantization = v[0]; }));
    s.push_back(F({"--enforce-eager"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.enforce_eager = to_bool(v[0]); }));
    s.push_back(
        F({"--max-logprobs"}, K::kInt, [](LaunchConfig& c, const V& v) { c.max_logprobs = to_int(v[0]); }));
    s.push_back(F({"--logprobs-mode"}, K::kString, nullptr,
                  {"processed_logits", "processed_logprobs", "raw_logits", "raw_logprobs"}));
    s.push_back(F({"--disable-sliding-window"}, K::kBoolOptional));
    s.push_back(F({"--disable-cascade-attn"}, K::kBoolOptional));
    s.push_back(F({"--skip-tokenizer-init"}, K::kBoolOptional));
    s.push_back(F({"--enable-prompt-embeds"}, K::kBoolOptional));
    s.push_back(F({"--served-model-name"}, K::kStringList,
                  [](LaunchConfig& c, const V& v) { c.served_model_names = v; }));
    s.push_back(F({"--config-format"}, K::kString, nullptr, {"auto", "hf", "mistral"}));
    s.push_back(F({"--hf-token"}, K::kString));
    s.push_back(F({"--hf-overrides"}, K::kJson));
    s.push_back(F({"--pooler-config"}, K::kJson));
    s.push_back(F({"--logits-processor-pattern"}, K::kString));
    s.push_back(F({"--generation-config"}, K::kString));
    s.push_back(F({"--override-generation-config"}, K::kJson));
    s.push_back(F({"--enable-sleep-mode"}, K::kBoolOptional));
    s.push_back(F({"--model-impl"}, K::kString, nullptr, {"auto", "terratorch", "transformers", "vllm"}));
    s.push_back(F({"--override-attention-dtype"}, K::kString));
    s.push_back(F({"--logits-processors"}, K::kStringList));
    s.push_back(F({"--io-processor-plugin"}, K::kString));
    // LoadConfig.
    s.push_back(F({"--load-format"}, K::kString));
    s.push_back(F({"--download-dir"}, K::kString));
    s.push_back(F({"--safetensors-load-strategy"}, K::kString));
    s.push_back(F({"--model-loader-extra-config"}, K::kJson));
    s.push_back(F({"--ignore-patterns"}, K::kStringList));
    s.push_back(F({"--use-tqdm-on-load"}, K::kBoolOptional));
    s.push_back(F({"--pt-load-map-location"}, K::kString));
    // StructuredOutputsConfig / reasoning.
    s.push_back(F({"--reasoning-parser"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.reasoning_parser = v[0]; }));
    s.push_back(F({"--reasoning-parser-plugin"}, K::kString));
    s.push_back(F({"--structured-outputs-config"}, K::kJson));
    // ParallelConfig.
    s.push_back(F({"--distributed-executor-backend"}, K::kString, nullptr,
                  {"external_launcher", "mp", "ray", "uni"}));
    s.push_back(F({"--pipeline-parallel-size", "-pp"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.pp = to_int(v[0]); }));
    s.push_back(F({"--tensor-parallel-size", "-tp"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.tp = to_int(v[0]); }));
    s.push_back(F({"--decode-context-parallel-size", "-dcp"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.dcp = to_int(v[0]); }));
    gate(s, "0.11.0", "", "decode context parallel for MLA (PR #23734, Sept 2025) [recalled]");
    s.push_back(F({"--dcp-kv-cache-interleave-size"}, K::kInt));
    s.push_back(F({"--data-parallel-size", "-dp"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.dp = to_int(v[0]); }));
    s.push_back(F({"--data-parallel-rank", "-dpn"}, K::kInt));
    s.push_back(F({"--data-parallel-start-rank", "-dpr"}, K::kInt));
    s.push_back(F({"--data-parallel-size-local", "-dpl"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.dp_size_local = to_int(v[0]); }));
    s.push_back(F({"--data-parallel-address", "-dpa"}, K::kString));
    s.push_back(F({"--data-parallel-rpc-port", "-dpp"}, K::kInt));
    s.push_back(F({"--data-parallel-backend", "-dpb"}, K::kString));
    s.push_back(F({"--data-parallel-hybrid-lb", "-dph"}, K::kBoolOptional));
    s.push_back(F({"--data-parallel-external-lb", "-dpe"}, K::kBoolOptional));
    s.push_back(F({"--enable-expert-parallel"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.enable_expert_parallel = to_bool(v[0]); }));
    s.push_back(F({"--all2all-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.moe_a2a_backend = v[0]; },
                  {"allgather_reducescatter", "deepep_high_throughput", "deepep_low_latency",
                   "flashinfer_all2allv", "naive", "pplx"}));
    gate(s, "0.11.1", "",
         "ParallelConfig.all2all_backend replaced VLLM_ALL2ALL_BACKEND (Oct 2025) [recalled]");
    s.push_back(F({"--enable-dbo"}, K::kBoolOptional));
    gate(s, "0.11.0", "", "dual-batch overlap (Sept 2025) [recalled]");
    s.push_back(F({"--dbo-decode-token-threshold"}, K::kInt));
    gate(s, "0.11.0", "", "dual-batch overlap (Sept 2025) [recalled]");
    s.push_back(F({"--dbo-prefill-token-threshold"}, K::kInt));
    gate(s, "0.11.0", "", "dual-batch overlap (Sept 2025) [recalled]");
    s.push_back(F({"--disable-nccl-for-dp-synchronization"}, K::kBoolOptional));
    s.push_back(F({"--enable-eplb"}, K::kBoolOptional));
    s.push_back(F({"--eplb-config"}, K::kJson));
    s.push_back(F({"--expert-placement-strategy"}, K::kString, nullptr, {"linear", "round_robin"}));
    s.push_back(F({"--max-parallel-loading-workers"}, K::kInt));
    s.push_back(F({"--ray-workers-use-nsight"}, K::kBoolOptional));
    s.push_back(F({"--disable-custom-all-reduce"}, K::kBoolOptional));
    s.push_back(F({"--worker-cls"}, K::kString));
    s.push_back(F({"--worker-extension-cls"}, K::kString));
    // CacheConfig.
    s.push_back(F({"--block-size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.block_size = to_int(v[0]); },
                  {"1", "8", "16", "32", "64", "128", "256"}));
    s.push_back(F({"--gpu-memory-utilization"}, K::kFloat,
                  [](LaunchConfig& c, const V& v) { c.gpu_memory_fraction = to_double(v[0]); }));
    s.push_back(F({"--kv-cache-memory-bytes"}, K::kHumanInt));
    s.push_back(F({"--swap-space"}, K::kFloat));
    s.push_back(F({"--kv-cache-dtype"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.kv_cache_dtype = v[0]; },
                  {"auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc"}));
    s.push_back(F({"--num-gpu-blocks-override"}, K::kInt));
    s.push_back(F({"--enable-prefix-caching"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.enable_prefix_caching = to_bool(v[0]); }));
    s.push_back(F({"--prefix-caching-hash-algo"}, K::kString, nullptr,
                  {"sha256", "sha256_cbor", "xxhash", "xxhash_cbor"}));
    s.push_back(F({"--cpu-offload-gb"}, K::kFloat));
    s.push_back(F({"--calculate-kv-scales"}, K::kBoolOptional));
    s.push_back(F({"--kv-sharing-fast-prefill"}, K::kBoolOptional));
    // vllm/config/cache.py MambaDType = Literal["auto", "float32", "float16"] [recalled; float16 for the
    // Nemotron-H state]: argparse refuses other values with "invalid choice".
    s.push_back(F({"--mamba-cache-dtype"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.mamba_cache_dtype = v[0]; },
                  {"auto", "float32", "float16"}));
    s.push_back(F({"--mamba-ssm-cache-dtype"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.mamba_ssm_cache_dtype = v[0]; },
                  {"auto", "float32", "float16"}));
    s.push_back(F({"--mamba-block-size"}, K::kInt));
    s.push_back(F({"--kv-offloading-size"}, K::kFloat));
    s.push_back(F({"--kv-offloading-backend"}, K::kString));
    // MultiModalConfig.
    s.push_back(F({"--limit-mm-per-prompt"}, K::kJson));
    s.push_back(F({"--media-io-kwargs"}, K::kJson));
    s.push_back(F({"--mm-processor-kwargs"}, K::kJson));
    s.push_back(F({"--mm-processor-cache-gb"}, K::kFloat));
    s.push_back(F({"--mm-processor-cache-type"}, K::kString, nullptr, {"lru", "shm"}));
    s.push_back(F({"--mm-shm-cache-max-object-size-mb"}, K::kInt));
    s.push_back(F({"--mm-encoder-tp-mode"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.mm_encoder_tp_mode = v[0]; }, {"data", "weights"}));
    s.push_back(F({"--mm-encoder-attn-backend"}, K::kString));
    s.push_back(F({"--interleave-mm-strings"}, K::kBoolOptional));
    s.push_back(F({"--skip-mm-profiling"}, K::kBoolOptional));
    s.push_back(F({"--video-pruning-rate"}, K::kFloat));
    // LoRAConfig.
    s.push_back(F({"--enable-lora"}, K::kBoolOptional));
    s.push_back(F({"--max-loras"}, K::kInt));
    s.push_back(F({"--max-lora-rank"}, K::kInt));
    s.push_back(F({"--lora-dtype"}, K::kString));
    s.push_back(F({"--max-cpu-loras"}, K::kInt));
    s.push_back(F({"--fully-sharded-loras"}, K::kBoolOptional));
    s.push_back(F({"--default-mm-loras"}, K::kJson));
    // ObservabilityConfig.
    s.push_back(F({"--show-hidden-metrics-for-version"}, K::kString));
    s.push_back(F({"--otlp-traces-endpoint"}, K::kString));
    s.push_back(F({"--collect-detailed-traces"}, K::kStringList));
    // SchedulerConfig.
    s.push_back(F({"--max-num-batched-tokens"}, K::kHumanInt,
                  [](LaunchConfig& c, const V& v) { c.max_num_batched_tokens = to_int(v[0]); }));
    s.push_back(
        F({"--max-num-seqs"}, K::kInt, [](LaunchConfig& c, const V& v) { c.max_num_seqs = to_int(v[0]); }));
    s.push_back(F({"--max-num-partial-prefills"}, K::kInt));
    s.push_back(F({"--max-long-partial-prefills"}, K::kInt));
    s.push_back(F({"--long-prefill-token-threshold"}, K::kInt));
    s.push_back(F({"--scheduling-policy"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.schedule_policy = v[0]; }, {"fcfs", "priority"}));
    s.push_back(F({"--enable-chunked-prefill"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.enable_chunked_prefill = to_bool(v[0]); }));
    s.push_back(F({"--disable-chunked-mm-input"}, K::kBoolOptional));
    s.push_back(F({"--scheduler-cls"}, K::kString));
    s.push_back(F({"--disable-hybrid-kv-cache-manager"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.disable_hybrid_kv_cache_manager = to_bool(v[0]); }));
    s.push_back(F({"--async-scheduling"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.async_scheduling = to_bool(v[0]); }));
    gate(s, kVllmDefaults.async_scheduling_flag_since.value, "",
         kVllmDefaults.async_scheduling_flag_since.source);
    // SchedulerConfig.cuda_graph_sizes: one value N -> [1, 2, 4] + range(8, N + 1, 8); several -> the list.
    s.push_back(F({"--cuda-graph-sizes"}, K::kIntList, [](LaunchConfig& c, const V& v) {
      std::vector<int> sizes;
      for (const auto& x : v) sizes.push_back(to_int(x));
      std::sort(sizes.begin(), sizes.end());
      c.cuda_graph_sizes = sizes.size() > 1 ? sizes : std::vector<int>{};
      c.cuda_graph_max_bs = sizes.back();
    }));
    s.push_back(F({"--stream-interval"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.stream_interval = to_int(v[0]); }));
    s.push_back(F({"--performance-mode"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.performance_mode = v[0]; },
                  {"balanced", "interactivity", "throughput"}));
    gate(s, kVllmDefaults.performance_mode_since.value, "", kVllmDefaults.performance_mode_since.source);
    s.push_back(F({"--language-model-only"}, K::kBoolOptional,
                  [](LaunchConfig& c, const V& v) { c.language_model_only = to_bool(v[0]); }));
    gate(s, "0.17.0", "", "vLLM PR #34120 (Feb 2026; release recalled)");
    // VllmConfig JSON groups.
    s.push_back(F({"--speculative-config"}, K::kJson, apply_speculative));
    s.push_back(F({"--kv-transfer-config"}, K::kJson));
    s.push_back(F({"--kv-events-config"}, K::kJson));
    s.push_back(F({"--ec-transfer-config"}, K::kJson));
    s.push_back(F({"--compilation-config", "-O"}, K::kJson, apply_compilation));
    // Top-level CompilationConfig shortcuts [recalled: added with max_cudagraph_capture_size, 0.11.1].
    s.push_back(F({"--cudagraph-capture-sizes"}, K::kIntList, [](LaunchConfig& c, const V& v) {
      c.cuda_graph_sizes.clear();
      for (const auto& x : v) c.cuda_graph_sizes.push_back(to_int(x));
      std::sort(c.cuda_graph_sizes.begin(), c.cuda_graph_sizes.end());
      c.cuda_graph_max_bs = c.cuda_graph_sizes.back();
    }));
    gate(s, kVllmDefaults.capture_size_formula_since.value, "",
         kVllmDefaults.capture_size_formula_since.source);
    s.push_back(F({"--max-cudagraph-capture-size"}, K::kInt, [](LaunchConfig& c, const V& v) {
      c.cuda_graph_max_bs = to_int(v[0]);
      c.cuda_graph_sizes.clear();
    }));
    gate(s, kVllmDefaults.capture_size_formula_since.value, "",
         kVllmDefaults.capture_size_formula_since.source);
    // [unverified for 0.13: --attention-backend (AttentionConfig) superseding VLLM_ATTENTION_BACKEND]
    s.push_back(F({"--attention-backend"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.attention_backend = v[0]; }));
    gate(s, "0.13.0", "", "AttentionConfig --attention-backend [unverified: first release]");
    // Kernel-choice options of the 2026 releases, accepted and recorded as not modelled (the twin keeps the
    // release's default kernels): the AttentionConfig JSON group, the MoE and linear-layer backends and
    // FlashInfer's autotuner [unverified: first release taken as AttentionConfig's, 0.13.0; InferenceX
    // launches pass them to releases after it].
    s.push_back(F({"--attention-config"}, K::kJson));
    gate(s, "0.13.0", "", "AttentionConfig JSON group [unverified: first release]");
    s.push_back(F({"--moe-backend"}, K::kString));
    gate(s, "0.13.0", "", "MoE kernel backend option [unverified: first release]");
    s.push_back(F({"--linear-backend"}, K::kString));
    gate(s, "0.13.0", "", "linear-layer kernel backend option [unverified: first release]");
    s.push_back(F({"--enable-flashinfer-autotune"}, K::kBoolOptional));
    gate(s, "0.13.0", "", "FlashInfer autotuner switch [unverified: first release]");
    s.push_back(F({"--additional-config"}, K::kJson));
    return s;
  }();
  return specs;
}

bool is_json_option(const std::string& name) {
  for (const auto& spec : vllm_specs())
    if (spec.kind == K::kJson)
      for (const auto& n : spec.names)
        if (n == name) return true;
  return false;
}

// FlexibleArgumentParser.parse_args pre-processing: `--snake_case` keys -> `--kebab-case` (part before
// the first '.' and '='), `-O3` / `-O=3` -> `-O.mode=3` [unverified: key name], and the dotted JSON form
// `--speculative-config.num_speculative_tokens 1` merged into one JSON value per option.
std::vector<std::string> preprocess(const std::vector<std::string>& in) {
  std::vector<std::string> out;
  std::map<std::string, nlohmann::json> dotted;   // option -> merged object
  std::map<std::string, std::size_t> dotted_pos;  // option -> position of its placeholder in `out`
  for (std::size_t i = 0; i < in.size(); ++i) {
    std::string a = in[i];
    if (a.rfind("--", 0) == 0 && a.size() > 2) {
      std::size_t end = a.find_first_of(".=");
      if (end == std::string::npos) end = a.size();
      std::replace(a.begin() + 2, a.begin() + static_cast<std::ptrdiff_t>(end), '_', '-');
    } else if (a.rfind("-O", 0) == 0 && a.size() > 2 && a[2] != '.') {
      a = "-O.mode=" + (a[2] == '=' ? a.substr(3) : a.substr(2));
    }
    std::size_t dot = a.find('.');
    if (dot != std::string::npos && a[0] == '-') {
      std::string option = a.substr(0, dot);
      if (option == "-O") option = "--compilation-config";
      if (is_json_option(option)) {
        std::string rest = a.substr(dot + 1);
        std::string key_path = rest, value;
        if (auto eq = rest.find('='); eq != std::string::npos) {
          key_path = rest.substr(0, eq);
          value = rest.substr(eq + 1);
        } else if (i + 1 < in.size()) {
          value = in[++i];
        }
        nlohmann::json v =
            nlohmann::json::accept(value) ? nlohmann::json::parse(value) : nlohmann::json(value);
        nlohmann::json* node = &dotted[option];
        std::size_t start = 0;
        while (true) {
          std::size_t d = key_path.find('.', start);
          std::string key = key_path.substr(start, d == std::string::npos ? std::string::npos : d - start);
          if (!node->is_object()) *node = nlohmann::json::object();
          if (d == std::string::npos) {
            (*node)[key] = v;
            break;
          }
          node = &(*node)[key];
          start = d + 1;
        }
        if (!dotted_pos.count(option)) {
          dotted_pos[option] = out.size();
          out.push_back(option);
          out.push_back("");  // filled below
        }
        continue;
      }
    }
    out.push_back(a);
  }
  for (const auto& [option, pos] : dotted_pos) out[pos + 1] = dotted[option].dump();
  return out;
}

}  // namespace

void parse_vllm(const std::vector<std::string>& args_in, const std::map<std::string, std::string>& env,
                LaunchConfig& c) {
  const auto& d = kVllmDefaults;
  const bool api_server = c.program.find("api_server") != std::string::npos;
  // `vllm serve --model X`: 0.8-0.9 refused it (ValueError); later versions warn and treat X as the
  // positional model. [unverified for 0.13: accepted, model = X]
  if (c.engine_version.empty()) c.engine_version = d.version.value;
  const EngineVersion version = EngineVersion::parse(c.engine_version);
  c.host = d.host.value;
  c.port = d.port.value;
  c.model = d.default_model.value;
  c.gpu_memory_fraction = d.gpu_memory_utilization.value;
  c.enable_chunked_prefill = d.enable_chunked_prefill.value;
  c.enable_prefix_caching = d.enable_prefix_caching.value;
  c.schedule_policy = d.scheduling_policy.value;
  c.kv_cache_dtype = d.kv_cache_dtype.value;
  c.tokenizer_mode = "auto";

  // `vllm serve` is a subparser of the `vllm` parser: leftovers are reported by the top-level "vllm".
  ArgparseSettings settings{api_server ? "api_server.py" : "vllm serve",
                            EngineKind::kVllm,
                            api_server ? 0u : 1u,
                            true,
                            nullptr,
                            api_server ? "" : "vllm"};
  const std::vector<FlagSpec> specs = specs_in(vllm_specs(), version);
  ParsedArgs parsed = parse_argparse(specs, preprocess(args_in), settings);
  apply_parsed(c, parsed);
  if (!parsed.positionals.empty()) c.model = parsed.positionals[0];
  if (c.served_model_names.empty()) c.served_model_names = {c.model};
  c.ep = c.enable_expert_parallel ? c.tp * c.dp : 1;

  // Environment (vllm/envs.py). VLLM_USE_DEEP_GEMM: bool(int(os.getenv(..., "1"))).
  if (auto it = env.find("VLLM_USE_DEEP_GEMM"); it != env.end()) {
    auto n = python_int(it->second);
    if (!n)
      throw EngineArgError(EngineKind::kVllm,
                           "ValueError: invalid literal for int() with base 10: " + python_repr(it->second));
    c.deep_gemm = *n != 0;
  }
  // Before --all2all-backend (vllm_specs gate) the all-to-all was chosen by VLLM_ALL2ALL_BACKEND.
  if (auto it = env.find("VLLM_ALL2ALL_BACKEND"); it != env.end() && !c.is_explicit("--all2all-backend"))
    c.moe_a2a_backend = it->second;
  if (auto it = env.find("VLLM_ATTENTION_BACKEND");
      it != env.end() && !c.is_explicit("--attention-backend")) {
    c.attention_backend = it->second;
    // vllm/attention/selector.py strips the legacy "_VLLM_V1" suffix (FLASHMLA_VLLM_V1 -> FLASHMLA).
    const std::string suffix = "_VLLM_V1";
    if (c.attention_backend.size() > suffix.size() &&
        c.attention_backend.compare(c.attention_backend.size() - suffix.size(), suffix.size(), suffix) == 0)
      c.attention_backend.resize(c.attention_backend.size() - suffix.size());
  }
}

namespace {

// A --compilation-config given on the command line, with the config's capture size and cudagraph_mode.
nlohmann::json recorded_compilation(const LaunchConfig& c, const EngineOption& o) {
  nlohmann::json j = !o.values.empty() && nlohmann::json::accept(o.values[0])
                         ? nlohmann::json::parse(o.values[0])
                         : nlohmann::json::object();
  if (!j.is_object()) return j;
  if (c.cuda_graph_max_bs) {
    bool sizes_agree = false;
    if (j.contains("cudagraph_capture_sizes") && j["cudagraph_capture_sizes"].is_array()) {
      int mx = 0;
      for (const auto& x : j["cudagraph_capture_sizes"])
        if (x.is_number_integer()) mx = std::max(mx, x.get<int>());
      sizes_agree = mx == *c.cuda_graph_max_bs;
    }
    if (!sizes_agree) {
      j.erase("cudagraph_capture_sizes");
      j["max_cudagraph_capture_size"] = *c.cuda_graph_max_bs;
    }
  }
  if (!c.cudagraph_mode.empty()) {
    j["cudagraph_mode"] = c.cudagraph_mode;
  } else {
    j.erase("cudagraph_mode");
    j.erase("full_cuda_graph");
  }
  return j;
}

// Capture sizes and cudagraph_mode without a recorded --compilation-config: --cuda-graph-sizes before
// the release of max_cudagraph_capture_size, a compilation config from it on.
void render_capture(const LaunchConfig& c, const LaunchConfig& b, std::vector<std::string>& a) {
  nlohmann::json j = nlohmann::json::object();
  const bool old = !version_at_least(c.engine_version, kVllmDefaults.capture_size_formula_since.value);
  if (!c.cuda_graph_sizes.empty() && c.cuda_graph_sizes != b.cuda_graph_sizes) {
    if (old) {
      a.push_back("--cuda-graph-sizes");
      for (int x : c.cuda_graph_sizes) a.push_back(std::to_string(x));
    } else {
      j["cudagraph_capture_sizes"] = c.cuda_graph_sizes;
    }
  } else if (c.cuda_graph_max_bs && c.cuda_graph_max_bs != b.cuda_graph_max_bs) {
    if (old) {
      a.push_back("--cuda-graph-sizes");
      a.push_back(std::to_string(*c.cuda_graph_max_bs));
    } else {
      j["max_cudagraph_capture_size"] = *c.cuda_graph_max_bs;
    }
  }
  if (!c.cudagraph_mode.empty() && c.cudagraph_mode != b.cudagraph_mode)
    j["cudagraph_mode"] = c.cudagraph_mode;
  if (!j.empty()) {
    a.push_back("--compilation-config");
    a.push_back(j.dump());
  }
}

}  // namespace

std::vector<std::string> render_vllm(const LaunchConfig& c, const LaunchConfig& b) {
  std::vector<std::string> a;
  auto add = [&](const std::string& flag, const std::string& value) {
    a.push_back(flag);
    a.push_back(value);
  };
  auto add_bool = [&](const std::string& flag, bool value, bool base) {
    if (value != base) a.push_back(value ? flag : "--no-" + flag.substr(2));
  };
  auto add_opt = [&](const std::string& flag, const std::optional<int>& v, const std::optional<int>& base) {
    if (v && v != base) add(flag, std::to_string(*v));
  };
  if (c.tp != b.tp) add("-tp", std::to_string(c.tp));
  if (c.pp != b.pp) add("-pp", std::to_string(c.pp));
  if (c.dp != b.dp) add("-dp", std::to_string(c.dp));
  add_opt("-dpl", c.dp_size_local, b.dp_size_local);
  if (c.dcp != b.dcp) add("-dcp", std::to_string(c.dcp));
  add_bool("--enable-expert-parallel", c.enable_expert_parallel, b.enable_expert_parallel);
  if (c.tokenizer_mode != b.tokenizer_mode) add("--tokenizer-mode", c.tokenizer_mode);
  if (c.reasoning_parser != b.reasoning_parser) add("--reasoning-parser", c.reasoning_parser);
  if (c.tool_call_parser != b.tool_call_parser) add("--tool-call-parser", c.tool_call_parser);
  add_bool("--enable-auto-tool-choice", c.enable_auto_tool_choice, b.enable_auto_tool_choice);
  if (c.chat_template != b.chat_template) add("--chat-template", c.chat_template);
  add_opt("--max-model-len", c.max_model_len, b.max_model_len);
  if (c.gpu_memory_fraction != b.gpu_memory_fraction)
    add("--gpu-memory-utilization", format_number(c.gpu_memory_fraction));
  if (c.kv_cache_dtype != b.kv_cache_dtype) add("--kv-cache-dtype", c.kv_cache_dtype);
  if (c.block_size != b.block_size && c.block_size > 0) add("--block-size", std::to_string(c.block_size));
  add_opt("--max-num-seqs", c.max_num_seqs, b.max_num_seqs);
  add_opt("--max-num-batched-tokens", c.max_num_batched_tokens, b.max_num_batched_tokens);
  add_bool("--enable-chunked-prefill", c.enable_chunked_prefill, b.enable_chunked_prefill);
  add_bool("--enable-prefix-caching", c.enable_prefix_caching, b.enable_prefix_caching);
  add_bool("--enforce-eager", c.enforce_eager, b.enforce_eager);
  if (c.schedule_policy != b.schedule_policy) add("--scheduling-policy", c.schedule_policy);
  if (c.quantization != b.quantization) add("--quantization", c.quantization);
  // Before 0.11.1 the all-to-all travels in VLLM_ALL2ALL_BACKEND (to_env).
  if (c.moe_a2a_backend != b.moe_a2a_backend && version_at_least(c.engine_version, "0.11.1"))
    add("--all2all-backend", c.moe_a2a_backend);
  if (c.async_scheduling != b.async_scheduling && c.async_scheduling)
    a.push_back(*c.async_scheduling ? "--async-scheduling" : "--no-async-scheduling");
  if (c.performance_mode != b.performance_mode) add("--performance-mode", c.performance_mode);
  add_bool("--language-model-only", c.language_model_only, b.language_model_only);
  if (c.mm_encoder_tp_mode != b.mm_encoder_tp_mode) add("--mm-encoder-tp-mode", c.mm_encoder_tp_mode);
  add_opt("--stream-interval", c.stream_interval, b.stream_interval);
  add_opt("--api-server-count", c.api_server_count, b.api_server_count);
  if (c.mamba_ssm_cache_dtype != b.mamba_ssm_cache_dtype)
    add("--mamba-ssm-cache-dtype", c.mamba_ssm_cache_dtype);
  if (c.mamba_cache_dtype != b.mamba_cache_dtype) add("--mamba-cache-dtype", c.mamba_cache_dtype);
  add_bool("--disable-hybrid-kv-cache-manager", c.disable_hybrid_kv_cache_manager,
           b.disable_hybrid_kv_cache_manager);
  if (c.speculative) {
    nlohmann::json j = nlohmann::json::accept(c.speculative->json)
                           ? nlohmann::json::parse(c.speculative->json)
                           : nlohmann::json::object();
    if (!j.is_object()) j = nlohmann::json::object();
    if (!c.speculative->method.empty()) j["method"] = c.speculative->method;
    if (c.speculative->num_speculative_tokens > 0)
      j["num_speculative_tokens"] = c.speculative->num_speculative_tokens;
    if (!c.speculative->draft_model.empty()) j["model"] = c.speculative->draft_model;
    add("--speculative-config", j.dump());
  }
  // The attention backend travels in VLLM_ATTENTION_BACKEND (to_env) unless the flag was used.
  if (c.is_explicit("--attention-backend") && c.attention_backend != b.attention_backend)
    add("--attention-backend", c.attention_backend);
  if (c.served_model_names != std::vector<std::string>{c.model}) {
    a.push_back("--served-model-name");
    for (const auto& n : c.served_model_names) a.push_back(n);
  }
  if (c.host != b.host) add("--host", c.host);
  if (c.port != b.port) add("--port", std::to_string(c.port));
  add_bool("--trust-remote-code", c.trust_remote_code, b.trust_remote_code);
  if (c.config_file != b.config_file) add("--config", c.config_file);
  bool compilation_done = false;
  for (const auto& o : c.unmodelled_options) {
    if (o.flag == "--compilation-config") {
      add("--compilation-config", recorded_compilation(c, o).dump());
      compilation_done = true;
      continue;
    }
    a.push_back(o.flag);
    for (const auto& v : o.values) a.push_back(v);
  }
  if (!compilation_done) render_capture(c, b, a);
  return a;
}

// VLLM_USE_DEEP_GEMM follows deep_gemm; before 0.11.1 (no --all2all-backend) the all-to-all travels in
// VLLM_ALL2ALL_BACKEND; VLLM_ATTENTION_BACKEND carries attention_backend unless --attention-backend did.
void render_env_vllm(const LaunchConfig& c, std::map<std::string, std::string>& env) {
  if (!c.deep_gemm)
    env["VLLM_USE_DEEP_GEMM"] = "0";
  else if (env.count("VLLM_USE_DEEP_GEMM"))
    env["VLLM_USE_DEEP_GEMM"] = "1";
  if (!c.moe_a2a_backend.empty() && !c.engine_version.empty() &&
      !version_at_least(c.engine_version, "0.11.1"))
    env["VLLM_ALL2ALL_BACKEND"] = c.moe_a2a_backend;
  if (!c.is_explicit("--attention-backend")) {
    if (c.attention_backend.empty())
      env.erase("VLLM_ATTENTION_BACKEND");
    else
      env["VLLM_ATTENTION_BACKEND"] = c.attention_backend;
  }
}

// --data-parallel-size-local K: the DP replicas K to a node.
std::optional<LaunchConfig::NodePlacement> stated_node_placement_vllm(const LaunchConfig& c) {
  if (!c.dp_size_local || *c.dp_size_local <= 0) return std::nullopt;
  return LaunchConfig::NodePlacement{(c.dp + *c.dp_size_local - 1) / *c.dp_size_local,
                                     *c.dp_size_local * c.tp * c.pp,
                                     "--data-parallel-size-local " + std::to_string(*c.dp_size_local)};
}

}  // namespace servelab::engines::detail
