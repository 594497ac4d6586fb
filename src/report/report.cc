#include "servelab/report/report.h"

#include <algorithm>
#include <cmath>
#include <ctime>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "servelab/common/python_json.h"

namespace servelab::report {

using common::python_float_repr;

namespace {

using metrics::BenchmarkMetrics;
using metrics::LatencySummary;
using nlohmann::ordered_json;

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// vLLM: "{:<40} {:<10}".format(label, value) — int values.
void row(std::string& out, std::string_view label, long long value) {
  fmt::format_to(std::back_inserter(out), "{:<40} {:<10}\n", label, value);
}
// vLLM: "{:<40} {:<10.2f}".format(label, value).
void row_f(std::string& out, std::string_view label, double value) {
  fmt::format_to(std::back_inserter(out), "{:<40} {:<10.2f}\n", label, value);
}
// vLLM: "{s:{c}^{n}}".format(s=title, n=50, c=fill) — extra padding char goes right, as Python.
void banner(std::string& out, std::string_view title, char fill) {
  const std::size_t width = 50;
  const std::size_t pad = title.size() < width ? width - title.size() : 0;
  out.append(pad / 2, fill);
  out.append(title);
  out.append(pad - pad / 2, fill);
  out.push_back('\n');
}

struct MetricSection {
  const char* key;     // "ttft"
  const char* name;    // "TTFT"
  const char* header;  // "Time to First Token"
  const LatencySummary* summary;
  bool selected;
};

std::vector<MetricSection> sections(const BenchmarkMetrics& m, const metrics::PercentileMetrics& sel) {
  return {
      {"ttft", "TTFT", "Time to First Token", &m.ttft, sel.ttft},
      {"tpot", "TPOT", "Time per Output Token (excl. 1st token)", &m.tpot, sel.tpot},
      {"itl", "ITL", "Inter-token Latency", &m.itl, sel.itl},
      {"e2el", "E2EL", "End-to-end Latency", &m.e2el, sel.e2el},
  };
}

void summary_rows(std::string& out, std::string_view name, const LatencySummary& s) {
  row_f(out, fmt::format("Mean {} (ms):", name), s.mean_ms);
  row_f(out, fmt::format("Median {} (ms):", name), s.median_ms);
  for (const auto& pv : s.percentiles_ms) {
    row_f(out, fmt::format("P{} {} (ms):", percentile_word(pv.p), name), pv.value_ms);
  }
}

}  // namespace

std::string percentile_word(double p) {
  if (std::trunc(p) == p) return std::to_string(static_cast<long long>(p));
  return python_float_repr(p);
}

ordered_json summary_json(const LatencySummary& s) {
  ordered_json j;
  j["mean_ms"] = s.mean_ms;
  j["median_ms"] = s.median_ms;
  j["std_ms"] = s.std_ms;
  for (const auto& pv : s.percentiles_ms) j[fmt::format("p{}_ms", percentile_word(pv.p))] = pv.value_ms;
  j["count"] = s.count;
  return j;
}

std::vector<std::pair<std::string, std::string>> parse_metadata(std::span<const std::string> items) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& item : items) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      throw std::invalid_argument("--metadata: '" + item + "' is not KEY=VALUE");
    }
    out.emplace_back(std::string(trim(std::string_view(item).substr(0, eq))),
                     std::string(trim(std::string_view(item).substr(eq + 1))));
  }
  return out;
}

std::string current_date_string() {
  const std::time_t now = std::time(nullptr);
  std::tm local{};
  localtime_r(&now, &local);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", &local);
  return std::string(buf, n);
}

std::string format_console_block(const RunInfo& run, const BenchmarkMetrics& m,
                                 const metrics::PercentileMetrics& selected) {
  std::string out;
  banner(out, " Serving Benchmark Result ", '=');
  row(out, "Successful requests:", m.completed);
  row(out, "Failed requests:", m.failed);  // vLLM 0.13 (PR #26478): always printed, right here
  if (run.max_concurrency) row(out, "Maximum request concurrency:", *run.max_concurrency);
  if (std::isfinite(run.request_rate)) row_f(out, "Request rate configured (RPS):", run.request_rate);
  row_f(out, "Benchmark duration (s):", m.duration_s);
  row(out, "Total input tokens:", m.total_input);
  row(out, "Total generated tokens:", m.total_output);
  row_f(out, "Request throughput (req/s):", m.request_throughput);
  if (m.request_goodput) row_f(out, "Request goodput (req/s):", *m.request_goodput);
  row_f(out, "Output token throughput (tok/s):", m.output_throughput);
  row_f(out, "Peak output token throughput (tok/s):", m.max_output_tokens_per_s);
  row_f(out, "Peak concurrent requests:", m.max_concurrent_requests);
  row_f(out, "Total Token throughput (tok/s):", m.total_token_throughput);
  for (const MetricSection& s : sections(m, selected)) {
    if (!s.selected) continue;
    banner(out, s.header, '-');
    summary_rows(out, s.name, *s.summary);
  }
  out.append(50, '=');
  out.push_back('\n');
  return out;
}

std::optional<int> requested_concurrency(const RunInfo& run, int num_requests) {
  if (std::isfinite(run.request_rate) || run.ramp_up || run.arrivals_from_data) return std::nullopt;
  return run.max_concurrency && *run.max_concurrency > 0 ? std::min(*run.max_concurrency, num_requests)
                                                         : num_requests;
}

std::string format_console_extras(const RunInfo& run, const BenchmarkMetrics& m) {
  std::string out;
  banner(out, " servelab extras ", '-');
  for (std::size_t k = 1; k < m.failures_by_kind.size(); ++k) {
    if (m.failures_by_kind[k] == 0) continue;
    row(out, fmt::format("  failed ({}):", metrics::failure_kind_name(static_cast<metrics::FailureKind>(k))),
        m.failures_by_kind[k]);
  }
  if (m.not_sent > 0) row(out, "Not sent (never reached the server):", m.not_sent);
  row(out, "Peak concurrent requests (exact):", m.max_concurrent_requests_exact);
  row_f(out, "Peak output tokens/s (by tokens):", m.max_output_tokens_per_s_by_tokens);
  summary_rows(out, "schedule lag", m.schedule_lag);
  row_f(out, "Max schedule lag (ms):", m.schedule_lag_max_ms);
  const auto requested = requested_concurrency(run, static_cast<int>(m.input_lens.size()));
  if (m.send_lag.count > 0) {
    row_f(out, "Median send lag (ms):", m.send_lag.median_ms);
    row_f(out, "P99 send lag (ms):", m.send_lag_p99_ms);
    row_f(out, "Max send lag (ms):", m.send_lag_max_ms);
    row(out, "Peak concurrency reached:", m.peak_concurrency_reached);
    if (requested) row(out, "Requested concurrency:", *requested);
  }
  if (run.max_concurrency) summary_rows(out, "client queue", m.client_queue);
  if (m.ttfct.count > 0) summary_rows(out, "TTFCT", m.ttfct);
  if (m.total_reasoning_tokens > 0) {
    row(out, "Reasoning tokens:", m.total_reasoning_tokens);
    row(out, "Requests with reasoning:", m.reasoning_requests);
  }
  if (m.usage_compared > 0) {
    row(out, "Usage/tokenizer count mismatches:", m.usage_mismatches);
  }
  if (run.interrupted)
    out.append(m.not_sent > 0
                   ? fmt::format("Run interrupted (Ctrl-C or SIGTERM): results cover the finished requests "
                                 "only; {} request(s) were never sent\n",
                                 m.not_sent)
                   : std::string("Run interrupted (Ctrl-C or SIGTERM): results cover the finished requests "
                                 "only\n"));
  out.append(50, '=');
  out.push_back('\n');
  // An interrupted run cancelled its requests in flight, and a run whose every request failed was answered
  // at once: how many were in flight at once says nothing of whether the client could keep the concurrency.
  if (!run.interrupted && m.completed > 0 && m.send_lag.count > 0 && requested &&
      m.peak_concurrency_reached < *requested) {
    out.append(
        fmt::format("WARNING: the requested concurrency was not reached: at most {} of {} requests were in "
                    "flight at once "
                    "(send lag P99 {:.2f} ms, max {:.2f} ms: {}).\n",
                    m.peak_concurrency_reached, *requested, m.send_lag_p99_ms, m.send_lag_max_ms,
                    m.send_lag_p99_ms > 100.0
                        ? "the client sent late; --preconnect opens the connections before the run"
                        : "the requests left on time; the server finished some before the last arrived"));
  }
  if (m.usage_mismatches > 0) {
    out.append(fmt::format(
        "WARNING: server usage.completion_tokens and the tokenizer's count differ for {} of {} requests "
        "({} tokens in total); reported output tokens use the server's usage.\n",
        m.usage_mismatches, m.usage_compared, m.usage_mismatch_tokens));
  }
  return out;
}

namespace {

// The run's parameters, as vLLM's benchmark_serving writes them (date, backend, model, workload, arrivals).
void add_run_fields(ordered_json& j, const RunInfo& run) {
  j["date"] = run.date;
  j["endpoint_type"] = run.backend;  // legacy key, = backend
  j["backend"] = run.backend;
  j["label"] = run.label ? ordered_json(*run.label) : ordered_json(nullptr);
  j["model_id"] = run.model_id;
  j["tokenizer_id"] = run.tokenizer_id ? ordered_json(*run.tokenizer_id) : ordered_json(nullptr);
  j["num_prompts"] = run.num_prompts;
  for (const auto& [key, value] : run.metadata) j[key] = value;
  j["request_rate"] = std::isfinite(run.request_rate) ? ordered_json(run.request_rate) : ordered_json("inf");
  j["burstiness"] = run.burstiness;
  j["max_concurrency"] = run.max_concurrency ? ordered_json(*run.max_concurrency) : ordered_json(nullptr);
  if (run.ramp_up) {
    j["ramp_up_strategy"] = run.ramp_up->strategy;
    j["ramp_up_start_rps"] = run.ramp_up->start_rps;
    j["ramp_up_end_rps"] = run.ramp_up->end_rps;
  }
}

// Totals and throughputs (s, tokens, requests/s, tokens/s).
void add_throughput_fields(ordered_json& j, const BenchmarkMetrics& m) {
  j["duration"] = m.duration_s;
  j["completed"] = m.completed;
  j["failed"] = m.failed;
  j["total_input_tokens"] = m.total_input;
  j["total_output_tokens"] = m.total_output;
  j["request_throughput"] = m.request_throughput;
  j["request_goodput"] = m.request_goodput ? ordered_json(*m.request_goodput) : ordered_json(nullptr);
  j["output_throughput"] = m.output_throughput;
  j["total_token_throughput"] = m.total_token_throughput;
}

// --save-detailed: the per-request lists of vLLM's result (lengths, TTFTs and ITLs in s, texts, errors).
void add_detailed_fields(ordered_json& j, const BenchmarkMetrics& m,
                         std::span<const metrics::RequestOutput> outputs) {
  j["input_lens"] = m.input_lens;
  j["output_lens"] = m.output_lens;
  ordered_json ttfts = ordered_json::array(), itls = ordered_json::array();
  ordered_json texts = ordered_json::array(), errors = ordered_json::array();
  for (const auto& out : outputs) {
    ttfts.push_back(out.ttft_s);
    itls.push_back(out.itl_s);
    texts.push_back(out.generated_text);
    errors.push_back(out.error);
  }
  j["ttfts"] = std::move(ttfts);
  j["itls"] = std::move(itls);
  j["generated_texts"] = std::move(texts);
  j["errors"] = std::move(errors);
}

// Peak output tokens/s and concurrency (vLLM's 1-s bins), and the ramp-up's rate changes.
void add_peak_fields(ordered_json& j, const RunInfo& run, const BenchmarkMetrics& m) {
  j["max_output_tokens_per_s"] = m.max_output_tokens_per_s;
  j["max_concurrent_requests"] = m.max_concurrent_requests;
  if (!run.rps_change_events.empty()) {
    ordered_json events = ordered_json::array();
    for (const auto& e : run.rps_change_events)
      events.push_back({{"rps", e.rps}, {"timestamp", e.timestamp}});
    j["rps_change_events"] = std::move(events);
  }
}

// mean/median/std and the chosen percentiles (ms) of each selected metric (ttft, tpot, itl, e2el).
void add_percentile_fields(ordered_json& j, const BenchmarkMetrics& m,
                           const metrics::PercentileMetrics& selected) {
  for (const MetricSection& s : sections(m, selected)) {
    if (!s.selected) continue;
    const std::string key = s.key;
    j["mean_" + key + "_ms"] = s.summary->mean_ms;
    j["median_" + key + "_ms"] = s.summary->median_ms;
    j["std_" + key + "_ms"] = s.summary->std_ms;
    for (const auto& pv : s.summary->percentiles_ms)
      j[fmt::format("p{}_{}_ms", percentile_word(pv.p), key)] = pv.value_ms;
  }
}

// --save-detailed in the servelab block: per-request send times (s), TTFCT (s), failure kinds, HTTP
// statuses and reasoning tokens.
void add_detailed_extras(ordered_json& x, std::span<const metrics::RequestOutput> outputs) {
  ordered_json intended = ordered_json::array(), dispatched = ordered_json::array();
  ordered_json sent = ordered_json::array();
  ordered_json ttfcts = ordered_json::array(), kinds_per_request = ordered_json::array();
  ordered_json statuses = ordered_json::array(), reasoning = ordered_json::array();
  for (const auto& out : outputs) {
    intended.push_back(out.intended_send_time_s);
    dispatched.push_back(out.dispatch_time_s);
    sent.push_back(out.send_time_s);
    ttfcts.push_back(out.ttfct_s);
    kinds_per_request.push_back(metrics::failure_kind_name(out.failure));
    statuses.push_back(out.http_status);
    reasoning.push_back(out.reasoning_tokens);
  }
  x["intended_send_times"] = std::move(intended);
  x["dispatch_times"] = std::move(dispatched);
  x["send_times"] = std::move(sent);
  x["ttfcts"] = std::move(ttfcts);
  x["failure_kinds"] = std::move(kinds_per_request);
  x["http_statuses"] = std::move(statuses);
  x["reasoning_tokens"] = std::move(reasoning);
}

// The "servelab" block: what vLLM's result does not have (exact peaks, schedule and send lag, client queue,
// concurrency reached, TTFCT, reasoning, failures by kind, usage checks).
ordered_json servelab_extras_json(const RunInfo& run, const BenchmarkMetrics& m,
                                  std::span<const metrics::RequestOutput> outputs, bool save_detailed) {
  ordered_json x = ordered_json::object();
  x["interrupted"] = run.interrupted;
  x["max_concurrent_requests_exact"] = m.max_concurrent_requests_exact;
  x["max_output_tokens_per_s_by_tokens"] = m.max_output_tokens_per_s_by_tokens;
  ordered_json lag = summary_json(m.schedule_lag);
  lag["max_ms"] = m.schedule_lag_max_ms;
  x["schedule_lag"] = std::move(lag);
  x["client_queue"] = summary_json(m.client_queue);
  ordered_json send_lag = summary_json(m.send_lag);
  send_lag["p99_ms"] = m.send_lag_p99_ms;  // always, whatever --metric-percentiles asks
  send_lag["max_ms"] = m.send_lag_max_ms;
  x["send_lag"] = std::move(send_lag);
  const auto requested = requested_concurrency(run, static_cast<int>(m.input_lens.size()));
  const bool measured = m.send_lag.count > 0;
  x["concurrency"] = {
      {"requested", requested ? ordered_json(*requested) : ordered_json(nullptr)},
      {"peak_reached", measured ? ordered_json(m.peak_concurrency_reached) : ordered_json(nullptr)},
      {"reached", measured && requested ? ordered_json(m.peak_concurrency_reached >= *requested)
                                        : ordered_json(nullptr)}};
  x["ttfct"] = summary_json(m.ttfct);
  x["total_reasoning_tokens"] = m.total_reasoning_tokens;
  x["reasoning_requests"] = m.reasoning_requests;
  ordered_json kinds = ordered_json::object();
  for (std::size_t k = 1; k < m.failures_by_kind.size(); ++k) {
    if (m.failures_by_kind[k] > 0) {
      kinds[metrics::failure_kind_name(static_cast<metrics::FailureKind>(k))] = m.failures_by_kind[k];
    }
  }
  x["failures_by_kind"] = std::move(kinds);
  x["not_sent"] = m.not_sent;  // requests a Ctrl-C kept from being sent: neither completed nor failed
  x["usage_compared"] = m.usage_compared;
  x["usage_mismatches"] = m.usage_mismatches;
  x["usage_mismatch_tokens"] = m.usage_mismatch_tokens;
  if (save_detailed) add_detailed_extras(x, outputs);
  return x;
}

}  // namespace

ordered_json make_result_json(const RunInfo& run, const BenchmarkMetrics& m,
                              std::span<const metrics::RequestOutput> outputs, const ReportOptions& opts) {
  ordered_json j = ordered_json::object();
  add_run_fields(j, run);
  add_throughput_fields(j, m);
  if (opts.save_detailed) add_detailed_fields(j, m, outputs);
  add_peak_fields(j, run, m);
  add_percentile_fields(j, m, opts.percentile_metrics);
  if (opts.servelab_extras) j["servelab"] = servelab_extras_json(run, m, outputs, opts.save_detailed);
  return j;
}

std::string default_result_file_name(const RunInfo& run) {
  const auto slash = run.model_id.rfind('/');
  const std::string base_model = slash == std::string::npos ? run.model_id : run.model_id.substr(slash + 1);
  const std::string concurrency =
      run.max_concurrency ? fmt::format("-concurrency{}", *run.max_concurrency) : std::string();
  const std::string label = run.label && !run.label->empty() ? *run.label : run.backend;
  if (run.ramp_up) {
    return fmt::format("{}-ramp-up-{}-{}qps-{}qps{}-{}-{}.json", label, run.ramp_up->strategy,
                       run.ramp_up->start_rps, run.ramp_up->end_rps, concurrency, base_model, run.date);
  }
  return fmt::format("{}-{}qps{}-{}-{}.json", label, python_float_repr(run.request_rate), concurrency,
                     base_model, run.date);
}

std::filesystem::path result_path(const RunInfo& run, const std::filesystem::path& result_dir,
                                  const std::string& result_filename) {
  const std::filesystem::path name =
      result_filename.empty() ? default_result_file_name(run) : result_filename;
  return result_dir.empty() ? name : result_dir / name;
}

void write_result_file(const std::filesystem::path& path, const ordered_json& result, bool append) {
  std::error_code ec;
  if (path.has_parent_path()) {
    std::filesystem::create_directories(path.parent_path(), ec);
    if (ec) {
      throw std::runtime_error("cannot create result directory " + path.parent_path().string() + ": " +
                               ec.message());
    }
  }
  bool needs_newline = false;
  if (append) {
    const auto size = std::filesystem::file_size(path, ec);
    needs_newline = !ec && size > 0;
  }
  std::ofstream f(path, append ? std::ios::binary | std::ios::app : std::ios::binary | std::ios::trunc);
  if (!f) throw std::runtime_error("cannot open result file " + path.string() + " for writing");
  if (needs_newline) f << '\n';
  f << common::python_json_dumps(result, common::InvalidUtf8::kReplace);  // a run is never lost to bytes
  f.flush();
  if (!f) throw std::runtime_error("error writing result file " + path.string());
}

}  // namespace servelab::report
