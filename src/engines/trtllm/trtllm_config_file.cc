// TensorRT-LLM's option file, `--extra_llm_api_options FILE.yaml`: LLM API arguments that override the
// CLI (applied to a launch, and rendered back from one).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <stdexcept>

#include "engines/engines_detail.h"
#include "engines/trtllm/trtllm_detail.h"
#include "engines/yaml_subset.h"
#include "servelab/common/text.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {
namespace {

using nlohmann::json;

// Records unmodelled keys as dotted paths with the value's JSON text.
void trtllm_flatten(const json& v, const std::string& prefix, std::vector<EngineOption>& out) {
  if (v.is_object() && !v.empty()) {
    for (const auto& [k, sub] : v.items()) trtllm_flatten(sub, prefix.empty() ? k : prefix + "." + k, out);
  } else {
    out.push_back({prefix, {v.dump()}});
  }
}

// TensorRT-LLM validates the YAML's values with pydantic in lax mode [recalled: pydantic v2 conversion
// table]: an int field takes an integer, a float with no fractional part (50.0) or a string holding an
// integer ("8"); a bool field takes true/false, 0/1 or the strings "true/false", "yes/no", "on/off", "y/n",
// "t/f", "1/0" in any case. Anything else stops the engine at start-up with a validation error.
int trtllm_int(const json& v, const std::string& key) {
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

double trtllm_double(const json& v, const std::string& key) {
  if (!v.is_number())
    throw std::invalid_argument("extra_llm_api_options: " + key + " must be a number, got " + v.dump());
  return v.get<double>();
}

bool trtllm_bool(const json& v, const std::string& key) {
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
      c.tp = trtllm_int(v, key);
    else if (key == "pipeline_parallel_size")
      c.pp = trtllm_int(v, key);
    else if (key == "moe_expert_parallel_size")
      c.ep = trtllm_int(v, key);
    else if (key == "enable_attention_dp")
      c.enable_dp_attention = trtllm_bool(v, key);
    else if (key == "max_batch_size")
      c.max_num_seqs = trtllm_int(v, key);
    else if (key == "max_num_tokens")
      c.max_num_batched_tokens = trtllm_int(v, key);
    else if (key == "max_seq_len")
      c.max_model_len = trtllm_int(v, key);
    else if (key == "enable_chunked_prefill")
      c.enable_chunked_prefill = trtllm_bool(v, key);
    else if (key == "trust_remote_code")
      c.trust_remote_code = trtllm_bool(v, key);
    else if (key == "disable_overlap_scheduler")
      c.disable_overlap_schedule = trtllm_bool(v, key);
    else if (key == "stream_interval")
      c.stream_interval = trtllm_int(v, key);
    else if (key == "kv_cache_config" && v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        std::string full = key + "." + k;
        if (k == "free_gpu_memory_fraction")
          c.gpu_memory_fraction = trtllm_double(x, full);
        else if (k == "dtype")
          c.kv_cache_dtype = detail::yaml_scalar_text(x);
        else if (k == "enable_block_reuse")
          c.enable_prefix_caching = trtllm_bool(x, full);
        else if (k == "tokens_per_block")
          c.block_size = trtllm_int(x, full);
        else
          trtllm_flatten(x, full, c.config_file_options);
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
          c.cuda_graph_max_bs = trtllm_int(x, full);
        else if (k == "enable_padding")
          c.cuda_graph_padding = trtllm_bool(x, full);
        else if (k == "batch_sizes" && x.is_array() && !x.empty()) {
          c.cuda_graph_sizes.clear();
          for (const auto& b : x) c.cuda_graph_sizes.push_back(trtllm_int(b, full));
          std::sort(c.cuda_graph_sizes.begin(), c.cuda_graph_sizes.end());
          c.cuda_graph_max_bs = c.cuda_graph_sizes.back();
        } else {
          trtllm_flatten(x, full, c.config_file_options);
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
        const int n = trtllm_int(x, full);
        if (n < 0)
          throw std::invalid_argument("extra_llm_api_options: " + full +
                                      " must be >= 0 (engine steps), got " + std::to_string(n));
        return n;
      };
      for (const auto& [k, x] : v.items()) {
        const std::string full = key + "." + k;
        if (k == "enable_balance")
          c.attention_dp_balance = trtllm_bool(x, full);
        else if (k == "timeout_iters")
          c.attention_dp_timeout_iters = steps(x, full);
        else if (k == "batching_wait_iters")
          c.attention_dp_batching_wait_iters = steps(x, full);
        else
          trtllm_flatten(x, full, c.config_file_options);
      }
    } else if (key == "moe_config" && v.is_object()) {
      for (const auto& [k, x] : v.items()) {
        if (k == "backend")
          c.moe_runner_backend = detail::yaml_scalar_text(x);
        else
          trtllm_flatten(x, key + "." + k, c.config_file_options);
      }
    } else if (key == "speculative_config" && v.is_object()) {
      SpeculativeConfig s;
      for (const auto& [k, x] : v.items()) {
        if (k == "decoding_type")
          s.method = detail::yaml_scalar_text(x);
        else if (k == "num_nextn_predict_layers" || k == "max_draft_len")
          s.num_speculative_tokens = trtllm_int(x, key + "." + k);
        else
          trtllm_flatten(x, key + "." + k, c.config_file_options);
      }
      s.json = v.dump();
      c.speculative = s;
    } else {
      trtllm_flatten(v, key, c.config_file_options);
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

}  // namespace detail

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
}  // namespace servelab::engines
