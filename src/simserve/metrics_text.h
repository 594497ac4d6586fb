// servelab/simserve (private to the module; see simserve.h): the Prometheus text exposition (format 0.0.4) of
// `sim serve`'s GET /metrics, with the metric names, HELP texts, types and labels (`engine`, `model_name`) of
// vLLM 0.13's V1 engine (vllm/v1/metrics/loggers.py, written by prometheus_client: counters as `name_total`,
// values as Python floats), so that `servelab bench serve` and any vLLM dashboard read the twin as they read
// vLLM.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "servelab/simserve/simserve.h"

namespace servelab::simserve {

/// The Content-Type prometheus_client answers for format 0.0.4.
inline constexpr std::string_view kPrometheusContentType = "text/plain; version=0.0.4; charset=utf-8";

/// Renders one series per engine (label engine="<rank>") of vllm:num_requests_running,
/// vllm:num_requests_waiting, vllm:kv_cache_usage_perc, vllm:num_preemptions_total,
/// vllm:prefix_cache_queries_total, vllm:prefix_cache_hits_total and, when `spec_decode`,
/// vllm:spec_decode_num_drafts_total, vllm:spec_decode_num_draft_tokens_total,
/// vllm:spec_decode_num_accepted_tokens_total. `model_name` is escaped as a label value (\\, \", \n).
std::string render_vllm_metrics(const std::vector<EngineMetrics>& engines, const std::string& model_name,
                                bool spec_decode);

/// A label value escaped for the text format: `\` → `\\`, `"` → `\"`, newline → `\n`.
std::string escape_label_value(std::string_view value);

}  // namespace servelab::simserve
