#include "simserve/metrics_text.h"

#include <fmt/format.h>

#include <cmath>
#include <functional>

namespace servelab::simserve {
namespace {

// Python repr of a float, as prometheus_client's floatToGoString writes sample values ("8.0", "0.25").
std::string py_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

struct Family {
  const char* name;
  const char* type;
  const char* help;
  std::function<double(const EngineMetrics&)> value;
};

}  // namespace

std::string escape_label_value(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out.push_back(c);
  }
  return out;
}

std::string render_vllm_metrics(const std::vector<EngineMetrics>& engines, const std::string& model_name,
                                bool spec_decode) {
  // HELP texts as vLLM 0.13's loggers.py registers them.
  const std::vector<Family> families = {
      {"vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
       [](const EngineMetrics& e) { return double(e.num_requests_running); }},
      {"vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
       [](const EngineMetrics& e) { return double(e.num_requests_waiting); }},
      {"vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
       [](const EngineMetrics& e) { return e.kv_cache_usage; }},
      {"vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
       [](const EngineMetrics& e) { return double(e.num_preemptions); }},
      {"vllm:prefix_cache_queries_total", "counter",
       "Prefix cache queries, in terms of number of queried tokens.",
       [](const EngineMetrics& e) { return double(e.prefix_cache_queries); }},
      {"vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
       [](const EngineMetrics& e) { return double(e.prefix_cache_hits); }},
  };
  const std::vector<Family> spec = {
      {"vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.",
       [](const EngineMetrics& e) { return double(e.spec_decode_num_drafts); }},
      {"vllm:spec_decode_num_draft_tokens_total", "counter", "Number of draft tokens.",
       [](const EngineMetrics& e) { return double(e.spec_decode_num_draft_tokens); }},
      {"vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.",
       [](const EngineMetrics& e) { return double(e.spec_decode_num_accepted_tokens); }},
  };
  const std::string model = escape_label_value(model_name);
  std::string out;
  auto write = [&](const Family& f) {
    fmt::format_to(std::back_inserter(out), "# HELP {} {}\n# TYPE {} {}\n", f.name, f.help, f.name, f.type);
    for (std::size_t i = 0; i < engines.size(); ++i)
      fmt::format_to(std::back_inserter(out), "{}{{engine=\"{}\",model_name=\"{}\"}} {}\n", f.name, i, model,
                     py_float(f.value(engines[i])));
  };
  for (const auto& f : families) write(f);
  if (spec_decode)
    for (const auto& f : spec) write(f);
  return out;
}

}  // namespace servelab::simserve
