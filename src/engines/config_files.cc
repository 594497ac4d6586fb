// Engine option files: vLLM/SGLang `--config FILE.yaml` (YAML keys are CLI options) and TensorRT-LLM
// `--extra_llm_api_options FILE.yaml` (LLM API arguments that override the CLI).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engines/cli_parser.h"
#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/yaml_subset.h"
#include "servelab/common/text.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {
namespace {

using nlohmann::json;

std::string scalar_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<long long>());
  if (v.is_number_float()) return detail::format_number(v.get<double>());
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  return v.dump();
}

// vLLM FlexibleArgumentParser._pull_args_from_config / SGLang's config merger: each key becomes
// `--key`; true booleans become the bare flag, false ones `--no-key` (vLLM) or nothing (SGLang
// store_true); lists become `--key v1 v2`; mappings JSON text. [unverified: SGLang key spelling]
std::pair<std::vector<std::string>, std::vector<std::string>> yaml_to_args(const json& doc,
                                                                           const EngineConfigFile& spelling) {
  std::vector<std::string> front, lists;
  for (const auto& [key, value] : doc.items()) {
    std::string flag = "--" + key;
    if (spelling.keys_dashed) std::replace(flag.begin(), flag.end(), '_', '-');
    if (value.is_null()) continue;
    if (value.is_boolean()) {
      if (value.get<bool>())
        front.push_back(flag);
      else if (spelling.false_as_no_flag)
        front.push_back("--no-" + flag.substr(2));
    } else if (value.is_array()) {
      lists.push_back(flag);
      for (const auto& item : value) lists.push_back(scalar_text(item));
    } else if (value.is_object()) {
      front.push_back(flag + "=" + value.dump());
    } else {
      front.push_back(flag + "=" + scalar_text(value));
    }
  }
  return {front, lists};
}

// Records unmodelled keys as dotted paths with the value's JSON text.
void flatten(const json& v, const std::string& prefix, std::vector<EngineOption>& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, sub] : v.items()) flatten(sub, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out.push_back({prefix, {v.dump()}});
  }
}

// TensorRT-LLM validates the YAML's values with pydantic in lax mode [recalled: pydantic v2 conversion
// table]: an int field takes an integer, a float with no fractional part (50.0) or a string holding an
// integer ("8"); a bool field takes true/false, 0/1 or the strings "true/false", "yes/no", "on/off", "y/n",
// "t/f", "1/0" in any case. Anything else stops the engine at start-up with a validation error.
int as_int(const json& v, const std::string& key) {
  if (v.is_number_integer()) return v.get<int>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 2e9) return static_cast<int>(d);
  }
  if (v.is_string()) {
    const std::string t = common::trim(v.get<std::string>());
    int out = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (!t.empty() && ec == std::errc() && end == t.data() + t.size()) return out;
  }
  throw std::invalid_argument("extra_llm_api_options: " + key + " must be an integer, got " + v.dump());
}

double as_double(const json& v, const std::string& key) {
  if (!v.is_number())
    throw std::invalid_argument("extra_llm_api_options: " + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

bool as_bool(const json& v, const std::string& key) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<long long>() == 0 || v.get<long long>() == 1))
    return v.get<long long>() == 1;
  if (v.is_string()) {
    const std::string t = common::ascii_lower(common::trim(v.get<std::string>()));
    for (const char* y : {"true", "yes", "on", "y", "t", "1"})
      if (t == y) return true;
    for (const char* n : {"false", "no", "off", "n", "f", "0"})
      if (t == n) return false;
  }
  throw std::invalid_argument("extra_llm_api_options: " + key + " must be true/false, got " + v.dump());
}

LaunchConfig apply_trtllm_options(const LaunchConfig& in, const json& doc) {
  LaunchConfig c = in;
  if (!doc.is_object()) throw std::invalid_argument("extra_llm_api_options: the document must be a mapping");
  for (const auto& [key, v] : doc.items()) {
    if (key == "tensor_parallel_size")
      c.tp = as_int(v, key);
    else if (key == "pipeline_parallel_size")
      c.pp = as_int(v, key);
    else if (key == "moe_expert_parallel_size")
      c.ep = as_int(v, key);
    else if (key == "enable_attention_dp")
      c.enable_dp_attention = as_bool(v, key);
    else if (key == "max_batch_size")
      c.max_num_seqs = as_int(v, key);
    else if (key == "max_num_tokens")
      c.max_num_batched_tokens = as_int(v, key);
    else if (key == "max_seq_len")
      c.max_model_len = as_int(v, key);
    else if (key == "enable_chunked_prefill")
      c.enable_chunked_prefill = as_bool(v, key);
    else if (key == "trust_remote_code")
      c.trust_remote_code = as_bool(v, key);
    else if (key == "disable_overlap_scheduler")
      c.disable_overlap_schedule = as_bool(v, key);
    else if (key == "stream_interval")
      c.stream_interval = as_int(v, key);
    else if (key == "kv_cache_config" && v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        std::string full = key + "." + k;
        if (k == "free_gpu_memory_fraction")
          c.gpu_memory_fraction = as_double(x, full);
        else if (k == "dtype")
          c.kv_cache_dtype = scalar_text(x);
        else if (k == "enable_block_reuse")
          c.enable_prefix_caching = as_bool(x, full);
        else if (k == "tokens_per_block")
          c.block_size = as_int(x, full);
        else
          flatten(x, full, c.config_file_options);
      }
    } else if (key == "cuda_graph_config") {
      if (v.is_null()) {
        c.enforce_eager = true;  // cuda_graph_config: null disables CUDA graphs
        continue;
      }
      if (!v.is_object())
        throw std::invalid_argument("extra_llm_api_options: cuda_graph_config must be a mapping or null");
      for (const auto& [k, x] : v.items()) {
        std::string full = key + "." + k;
        if (k == "max_batch_size")
          c.cuda_graph_max_bs = as_int(x, full);
        else if (k == "enable_padding")
          c.cuda_graph_padding = as_bool(x, full);
        else if (k == "batch_sizes" && x.is_array() && !x.empty()) {
          c.cuda_graph_sizes.clear();
          for (const auto& b : x) c.cuda_graph_sizes.push_back(as_int(b, full));
          std::sort(c.cuda_graph_sizes.begin(), c.cuda_graph_sizes.end());
          c.cuda_graph_max_bs = c.cuda_graph_sizes.back();
        } else {
          flatten(x, full, c.config_file_options);
        }
      }
    } else if (key == "attention_dp_config") {
      if (!v.is_object())
        throw std::invalid_argument(
            "extra_llm_api_options: attention_dp_config must be a mapping (enable_balance, timeout_iters, "
            "batching_wait_iters), got " +
            v.dump());
      // Step counts: a negative one is no wait TensorRT-LLM could run (AttentionDpConfig).
      auto steps = [&](const json& x, const std::string& full) {
        const int n = as_int(x, full);
        if (n < 0)
          throw std::invalid_argument("extra_llm_api_options: " + full +
                                      " must be >= 0 (engine steps), got " + std::to_string(n));
        return n;
      };
      for (const auto& [k, x] : v.items()) {
        const std::string full = key + "." + k;
        if (k == "enable_balance")
          c.attention_dp_balance = as_bool(x, full);
        else if (k == "timeout_iters")
          c.attention_dp_timeout_iters = steps(x, full);
        else if (k == "batching_wait_iters")
          c.attention_dp_batching_wait_iters = steps(x, full);
        else
          flatten(x, full, c.config_file_options);
      }
    } else if (key == "moe_config" && v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        if (k == "backend")
          c.moe_runner_backend = scalar_text(x);
        else
          flatten(x, key + "." + k, c.config_file_options);
      }
    } else if (key == "speculative_config" && v.is_object()) {
      SpeculativeConfig s;
      for (const auto& [k, x] : v.items()) {
        if (k == "decoding_type")
          s.method = scalar_text(x);
        else if (k == "num_nextn_predict_layers" || k == "max_draft_len")
          s.num_speculative_tokens = as_int(x, key + "." + k);
        else
          flatten(x, key + "." + k, c.config_file_options);
      }
      s.json = v.dump();
      c.speculative = s;
    } else {
      flatten(v, key, c.config_file_options);
    }
  }
  // Attention DP: every TP rank is its own attention data-parallel rank.
  c.dp = c.enable_dp_attention ? c.tp : 1;
  return c;
}

}  // namespace

namespace detail {

LaunchConfig apply_trtllm_config_yaml(const LaunchConfig& config, const std::string& yaml_text) {
  return apply_trtllm_options(config, parse_yaml_subset(yaml_text));
}

LaunchConfig apply_cli_config_yaml(const LaunchConfig& config, const std::string& yaml_text) {
  json doc = parse_yaml_subset(yaml_text);
  const EngineConfigFile& spelling = engine_module(config.kind).config_file;
  if (!doc.is_object())
    throw std::invalid_argument(std::string(spelling.flag) + ": the YAML document must be a mapping");
  // Config-file options first, so that the command line overrides them (list-valued options go last,
  // where they cannot swallow a positional model).
  auto [front, lists] = yaml_to_args(doc, spelling);
  // The program's words ("vllm serve": 2), or through `-m MODULE` for a Python launch.
  std::size_t program_words =
      config.program.empty()
          ? 1
          : 1 + static_cast<std::size_t>(std::count(config.program.begin(), config.program.end(), ' '));
  for (std::size_t i = 1; i < config.argv.size() && config.program.rfind("python", 0) == 0; ++i) {
    if (config.argv[i] == "-m") {
      program_words = i + 2;
      break;
    }
    if (config.argv[i].rfind("-m", 0) == 0) {
      program_words = i + 1;
      break;
    }
  }
  std::vector<std::string> argv(
      config.argv.begin(),
      config.argv.begin() + static_cast<std::ptrdiff_t>(std::min(program_words, config.argv.size())));
  argv.insert(argv.end(), front.begin(), front.end());
  argv.insert(argv.end(),
              config.argv.begin() + static_cast<std::ptrdiff_t>(std::min(program_words, config.argv.size())),
              config.argv.end());
  argv.insert(argv.end(), lists.begin(), lists.end());
  LaunchConfig out = parse_launch_command(argv, config.env, config.engine_version);
  out.argv = config.argv;
  return out;
}

}  // namespace detail

LaunchConfig apply_config_yaml(const LaunchConfig& config, const std::string& yaml_text) {
  return engine_module(config.kind).config_file.apply(config, yaml_text);
}

std::string render_extra_llm_api_options(const LaunchConfig& c) {
  json t = json::object();
  if (c.enable_dp_attention) t["enable_attention_dp"] = true;
  if (c.enforce_eager) {
    t["cuda_graph_config"] = nullptr;
  } else {
    if (!c.cuda_graph_sizes.empty())
      t["cuda_graph_config"]["batch_sizes"] = c.cuda_graph_sizes;
    else if (c.cuda_graph_max_bs)
      t["cuda_graph_config"]["max_batch_size"] = *c.cuda_graph_max_bs;
    if (c.cuda_graph_padding) t["cuda_graph_config"]["enable_padding"] = *c.cuda_graph_padding;
  }
  if (c.attention_dp_balance) t["attention_dp_config"]["enable_balance"] = *c.attention_dp_balance;
  if (c.attention_dp_timeout_iters) t["attention_dp_config"]["timeout_iters"] = *c.attention_dp_timeout_iters;
  if (c.attention_dp_batching_wait_iters)
    t["attention_dp_config"]["batching_wait_iters"] = *c.attention_dp_batching_wait_iters;
  if (c.disable_overlap_schedule) t["disable_overlap_scheduler"] = true;
  if (c.stream_interval) t["stream_interval"] = *c.stream_interval;
  if (c.kv_cache_dtype != "auto" && !c.kv_cache_dtype.empty())
    t["kv_cache_config"]["dtype"] = c.kv_cache_dtype;
  if (!c.enable_prefix_caching) t["kv_cache_config"]["enable_block_reuse"] = false;
  if (c.block_size > 0) t["kv_cache_config"]["tokens_per_block"] = c.block_size;
  if (!c.moe_runner_backend.empty()) t["moe_config"]["backend"] = c.moe_runner_backend;
  if (c.speculative) {
    t["speculative_config"]["decoding_type"] = c.speculative->method;
    if (c.speculative->num_speculative_tokens > 0)
      t["speculative_config"]["num_nextn_predict_layers"] = c.speculative->num_speculative_tokens;
  }
  for (const auto& o : c.config_file_options) {
    std::string pointer = "/" + o.flag;
    std::replace(pointer.begin(), pointer.end(), '.', '/');
    json value = !o.values.empty() && json::accept(o.values[0]) ? json::parse(o.values[0]) : json(nullptr);
    if (!t.contains(json::json_pointer(pointer))) t[json::json_pointer(pointer)] = value;
  }
  // Block YAML for mappings; JSON text (valid YAML flow scalars/lists) for leaves.
  std::string y;
  auto emit = [&](auto&& self, const json& obj, int indent) -> void {
    for (const auto& [k, v] : obj.items()) {
      y += std::string(static_cast<std::size_t>(indent), ' ') + k + ":";
      if (v.is_object() && !v.empty()) {
        y += "\n";
        self(self, v, indent + 2);
      } else {
        y += " " + v.dump() + "\n";
      }
    }
  };
  emit(emit, t, 0);
  return y;
}

LaunchConfig apply_config_files(const LaunchConfig& config) {
  const EngineConfigFile& file = engine_module(config.kind).config_file;
  const std::string& path = config.*file.path;
  if (path.empty()) return config;
  const char* flag = file.flag;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string(flag) + " " + path +
                             ": cannot read the file (the engine would not start without it)");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return apply_config_yaml(config, text.str());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(flag) + " " + path + ": " + e.what());
  }
}

}  // namespace servelab::engines
