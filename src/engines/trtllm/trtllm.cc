// TensorRT-LLM 1.2.0rc5 `trtllm-serve [serve] MODEL`: click options (tensorrt_llm/commands/serve.py),
// environment, and rendering back to flags.
#include "engines/cli_parser.h"
#include "engines/engines_detail.h"
#include "engines/trtllm/trtllm_defaults.h"
#include "engines/trtllm/trtllm_detail.h"
#include "engines/version.h"
#include "servelab/engines/engines.h"

namespace servelab::engines::detail {
namespace {

using V = std::vector<std::string>;
using K = ValueKind;

// Options that trtllm-serve gained after 1.0 [recalled: absent from the 1.0.0 serve.py; first release
// with them not pinned, taken as 1.1.0].
constexpr const char* kAfter10 = "1.1.0";
void after_1_0(std::vector<FlagSpec>& s) {
  s.back().versions = VersionRange{kAfter10, ""};
  s.back().versions_source = "commands/serve.py options added after 1.0.0 [recalled]";
}

// Options of the `serve` command in declaration order. [unverified for 1.2.0rc5: --tool_parser,
// --chat_template, --custom_module_dirs; the reasoning/tool parser choices are not validated]
const std::vector<FlagSpec>& trtllm_specs() {
  static const std::vector<FlagSpec> specs = [] {
    std::vector<FlagSpec> s;
    s.push_back(F({"--tokenizer"}, K::kString));
    s.push_back(F({"--host"}, K::kString, [](LaunchConfig& c, const V& v) { c.host = v[0]; }));
    s.push_back(F({"--port"}, K::kInt, [](LaunchConfig& c, const V& v) { c.port = to_int(v[0]); }));
    s.push_back(F({"--backend"}, K::kString, [](LaunchConfig& c, const V& v) { c.trtllm_backend = v[0]; },
                  {"pytorch", "trt", "_autodeploy"}));
    s.push_back(F({"--custom_module_dirs"}, K::kString));
    after_1_0(s);
    s.push_back(F({"--log_level"}, K::kString, nullptr,
                  {"internal_error", "error", "warning", "info", "verbose", "debug", "trace"}));
    s.push_back(F({"--max_beam_width"}, K::kInt));
    s.push_back(
        F({"--max_batch_size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.max_num_seqs = to_int(v[0]); }));
    s.push_back(F({"--max_num_tokens"}, K::kInt,
                  [](LaunchConfig& c, const V& v) { c.max_num_batched_tokens = to_int(v[0]); }));
    s.push_back(
        F({"--max_seq_len"}, K::kInt, [](LaunchConfig& c, const V& v) { c.max_model_len = to_int(v[0]); }));
    s.push_back(F({"--tp_size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.tp = to_int(v[0]); }));
    s.push_back(F({"--pp_size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.pp = to_int(v[0]); }));
    s.push_back(F({"--ep_size"}, K::kInt, [](LaunchConfig& c, const V& v) { c.ep = to_int(v[0]); }));
    s.push_back(F({"--cluster_size"}, K::kInt));
    s.push_back(
        F({"--gpus_per_node"}, K::kInt, [](LaunchConfig& c, const V& v) { c.gpus_per_node = to_int(v[0]); }));
    s.push_back(F({"--kv_cache_free_gpu_memory_fraction"}, K::kFloat,
                  [](LaunchConfig& c, const V& v) { c.gpu_memory_fraction = to_double(v[0]); }));
    s.push_back(F({"--num_postprocess_workers"}, K::kInt));
    s.push_back(F({"--trust_remote_code"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.trust_remote_code = to_bool(v[0]); }));
    s.push_back(F({"--extra_llm_api_options"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.extra_llm_api_options = v[0]; }));
    // The newer spelling of the same YAML file [recalled: trtllm-serve --config; first release not pinned,
    // taken as the options added after 1.0].
    s.push_back(
        F({"--config"}, K::kString, [](LaunchConfig& c, const V& v) { c.extra_llm_api_options = v[0]; }));
    after_1_0(s);
    s.push_back(F({"--reasoning_parser"}, K::kString,
                  [](LaunchConfig& c, const V& v) { c.reasoning_parser = v[0]; }));
    s.push_back(
        F({"--tool_parser"}, K::kString, [](LaunchConfig& c, const V& v) { c.tool_call_parser = v[0]; }));
    after_1_0(s);
    s.push_back(F({"--metadata_server_config_file"}, K::kString));
    s.push_back(F({"--server_role"}, K::kString));
    s.push_back(F({"--fail_fast_on_attention_window_too_large"}, K::kStoreTrue));
    s.push_back(F({"--otlp_traces_endpoint"}, K::kString));
    after_1_0(s);
    s.push_back(F({"--disagg_cluster_uri"}, K::kString));
    after_1_0(s);
    s.push_back(F({"--enable_chunked_prefill"}, K::kStoreTrue,
                  [](LaunchConfig& c, const V& v) { c.enable_chunked_prefill = to_bool(v[0]); }));
    s.push_back(F({"--media_io_kwargs"}, K::kString));
    after_1_0(s);
    s.push_back(
        F({"--chat_template"}, K::kString, [](LaunchConfig& c, const V& v) { c.chat_template = v[0]; }));
    after_1_0(s);
    return s;
  }();
  return specs;
}

}  // namespace

void parse_trtllm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& c) {
  const auto& d = kTrtllmDefaults;
  if (c.engine_version.empty()) c.engine_version = d.version.value;
  const EngineVersion version = EngineVersion::parse(c.engine_version);
  c.host = d.host.value;
  c.port = d.port.value;
  c.trtllm_backend = d.backend.value;
  c.max_num_seqs = d.max_batch_size.value;
  c.max_num_batched_tokens = d.max_num_tokens.value;
  c.gpu_memory_fraction = d.kv_cache_free_gpu_memory_fraction.value;
  c.enable_chunked_prefill = d.enable_chunked_prefill.value;
  c.enable_prefix_caching = d.enable_block_reuse.value;
  c.ep = d.ep_size.value;
  c.kv_cache_dtype = "auto";
  const std::vector<FlagSpec> specs = specs_in(trtllm_specs(), version);
  ParsedArgs parsed = parse_click(specs, args, "MODEL", EngineKind::kTrtllm);
  apply_parsed(c, parsed);
  c.model = parsed.positionals.at(0);
  c.served_model_names = {c.model};
  // TRTLLM_DG_ENABLED: DeepGEMM for FP8 block-scaled GEMMs; "0" disables. [unverified: parsing rule]
  c.deep_gemm = d.deep_gemm.value;
  if (auto it = env.find("TRTLLM_DG_ENABLED"); it != env.end())
    c.deep_gemm = !(it->second == "0" || it->second == "false" || it->second == "False");
}

std::vector<std::string> render_trtllm(const LaunchConfig& c, const LaunchConfig& b) {
  std::vector<std::string> a;
  auto add = [&](const std::string& flag, const std::string& value) {
    a.push_back(flag);
    a.push_back(value);
  };
  auto add_opt = [&](const std::string& flag, const std::optional<int>& v, const std::optional<int>& base) {
    if (v && v != base) add(flag, std::to_string(*v));
  };
  if (c.tp != b.tp) add("--tp_size", std::to_string(c.tp));
  if (c.ep != b.ep || c.is_explicit("--ep_size")) add("--ep_size", std::to_string(c.ep));
  if (c.pp != b.pp || c.is_explicit("--pp_size")) add("--pp_size", std::to_string(c.pp));
  add_opt("--gpus_per_node", c.gpus_per_node, b.gpus_per_node);
  add_opt("--max_batch_size", c.max_num_seqs, b.max_num_seqs);
  add_opt("--max_num_tokens", c.max_num_batched_tokens, b.max_num_batched_tokens);
  add_opt("--max_seq_len", c.max_model_len, b.max_model_len);
  if (c.gpu_memory_fraction != b.gpu_memory_fraction)
    add("--kv_cache_free_gpu_memory_fraction", format_number(c.gpu_memory_fraction));
  if (c.enable_chunked_prefill && !b.enable_chunked_prefill) a.push_back("--enable_chunked_prefill");
  if (c.host != b.host) add("--host", c.host);
  if (c.port != b.port) add("--port", std::to_string(c.port));
  if (c.trtllm_backend != b.trtllm_backend) add("--backend", c.trtllm_backend);
  if (c.trust_remote_code && !b.trust_remote_code) a.push_back("--trust_remote_code");
  if (c.extra_llm_api_options != b.extra_llm_api_options)
    add("--extra_llm_api_options", c.extra_llm_api_options);
  if (c.reasoning_parser != b.reasoning_parser) add("--reasoning_parser", c.reasoning_parser);
  if (c.tool_call_parser != b.tool_call_parser) add("--tool_parser", c.tool_call_parser);
  if (c.chat_template != b.chat_template) add("--chat_template", c.chat_template);
  for (const auto& o : c.unmodelled_options) {
    a.push_back(o.flag);
    for (const auto& v : o.values) a.push_back(v);
  }
  return a;
}

// TRTLLM_DG_ENABLED follows deep_gemm.
void render_env_trtllm(const LaunchConfig& c, std::map<std::string, std::string>& env) {
  if (!c.deep_gemm)
    env["TRTLLM_DG_ENABLED"] = "0";
  else if (env.count("TRTLLM_DG_ENABLED"))
    env["TRTLLM_DG_ENABLED"] = "1";
}

// --gpus_per_node G: the world on nodes of G GPUs.
std::optional<LaunchConfig::NodePlacement> stated_node_placement_trtllm(const LaunchConfig& c) {
  if (!c.gpus_per_node || *c.gpus_per_node <= 0) return std::nullopt;
  return LaunchConfig::NodePlacement{(c.gpus_used() + *c.gpus_per_node - 1) / *c.gpus_per_node,
                                     *c.gpus_per_node, "--gpus_per_node " + std::to_string(*c.gpus_per_node)};
}

}  // namespace servelab::engines::detail
