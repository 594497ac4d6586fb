#include "servelab/metrics/metrics.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include "servelab/metrics/stats.h"

namespace servelab::metrics {
namespace {

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Python float(): the whole (trimmed) text must be a number. nullopt otherwise.
std::optional<double> parse_double(std::string_view text) {
  const std::string s(trim(text));
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

// Summary of samples in seconds: numpy stats then * 1000, vLLM's `x or 0` for empty lists.
LatencySummary summarize_s(std::vector<double> values_s, const std::vector<double>& percentiles) {
  LatencySummary s;
  s.count = values_s.size();
  if (values_s.empty()) values_s.push_back(0.0);  // np.mean([] or 0) == np.mean(0) == 0.0
  s.mean_ms = numpy_mean(values_s) * 1000;
  s.std_ms = numpy_std(values_s) * 1000;
  std::sort(values_s.begin(), values_s.end());
  s.median_ms = numpy_median_sorted(values_s) * 1000;
  s.percentiles_ms.reserve(percentiles.size());
  for (double p : percentiles) s.percentiles_ms.push_back({p, numpy_percentile_sorted(values_s, p) * 1000});
  return s;
}

// Longest run the per-second peak buckets accept (30 days); longer means mixed clocks, not a benchmark.
constexpr double kMaxPeakSpanS = 30.0 * 24 * 3600;

std::size_t kind_index(FailureKind kind) {
  const auto i = static_cast<std::size_t>(kind);
  return i < kFailureKindCount ? i : 0;
}

}  // namespace

GoodputSlos parse_goodput(std::span<const std::string> items) {
  GoodputSlos slos;
  for (const std::string& item : items) {
    const auto colon = item.find(':');
    if (colon == std::string::npos || item.find(':', colon + 1) != std::string::npos) {
      throw std::invalid_argument("--goodput: '" + item + "' is not KEY:VALUE (e.g. ttft:100)");
    }
    const std::string key(trim(std::string_view(item).substr(0, colon)));
    const auto value = parse_double(std::string_view(item).substr(colon + 1));
    if (!value) throw std::invalid_argument("--goodput: '" + item + "': value is not a number (ms)");
    if (!(*value >= 0.0)) throw std::invalid_argument("--goodput: '" + item + "': value must be >= 0 ms");
    if (key == "ttft") {
      slos.ttft_ms = *value;
    } else if (key == "tpot") {
      slos.tpot_ms = *value;
    } else if (key == "e2el") {
      slos.e2el_ms = *value;
    } else {
      throw std::invalid_argument("--goodput: unknown metric '" + key + "' in '" + item +
                                  "' (valid: ttft, tpot, e2el)");
    }
  }
  return slos;
}

std::vector<double> parse_metric_percentiles(std::string_view csv) {
  std::vector<double> out;
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = csv.find(',', pos);
    const std::string_view part = csv.substr(pos, comma == std::string_view::npos ? csv.npos : comma - pos);
    const auto v = parse_double(part);
    if (!v) throw std::invalid_argument("--metric-percentiles: '" + std::string(part) + "' is not a number");
    if (!(*v >= 0.0 && *v <= 100.0)) {
      throw std::invalid_argument("--metric-percentiles: " + std::string(trim(part)) +
                                  " is outside [0, 100]");
    }
    out.push_back(*v);
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return out;
}

PercentileMetrics parse_percentile_metrics(std::string_view csv) {
  PercentileMetrics sel{false, false, false, false};
  std::size_t pos = 0;
  while (true) {
    const std::size_t comma = csv.find(',', pos);
    const std::string_view name =
        trim(csv.substr(pos, comma == std::string_view::npos ? csv.npos : comma - pos));
    if (name == "ttft") {
      sel.ttft = true;
    } else if (name == "tpot") {
      sel.tpot = true;
    } else if (name == "itl") {
      sel.itl = true;
    } else if (name == "e2el") {
      sel.e2el = true;
    } else {
      throw std::invalid_argument("--percentile-metrics: unknown metric '" + std::string(name) +
                                  "' (valid: ttft, tpot, itl, e2el)");
    }
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  return sel;
}

int actual_output_len(const RequestOutput& out) {
  if (!out.success) return 0;
  if (out.output_tokens != 0) return out.output_tokens;
  return out.tokenizer_output_tokens >= 0 ? out.tokenizer_output_tokens : 0;
}

int input_len(const RequestOutput& out, InputTokenSource source) {
  if (source == InputTokenSource::kDataset && out.dataset_prompt_len >= 0) return out.dataset_prompt_len;
  return out.prompt_len;
}

namespace {

// Sweep line over [wire, send + latency) of successful requests with a wire time; departures first.
int peak_on_wire(std::span<const RequestOutput> outputs) {
  std::vector<std::pair<double, int>> events;
  for (const RequestOutput& out : outputs) {
    if (out.wire_time_s < 0.0) continue;
    // A failed request (a timeout, a reset, a Ctrl-C's cancellation) was in flight until the client saw it
    // end: it counts (new-user trial: 12 sent at once, 11 timed out, "peak reached 1 of 12").
    const double end = out.success ? out.send_time_s + out.latency_s : out.end_time_s;
    if (!out.success && end < 0.0) continue;
    events.emplace_back(out.wire_time_s, +1);
    events.emplace_back(std::max(out.wire_time_s, end), -1);
  }
  std::sort(events.begin(), events.end());
  int active = 0, peak = 0;
  for (const auto& e : events) peak = std::max(peak, active += e.second);
  return peak;
}

}  // namespace

namespace {

// compute_metrics' preconditions: a finite duration > 0 s, percentiles in [0, 100], finite times of the
// successful requests. Throws std::invalid_argument naming the offending value (and request).
void check_inputs(std::span<const RequestOutput> outputs, double duration_s, const MetricsOptions& opts) {
  if (!(std::isfinite(duration_s) && duration_s > 0.0)) {
    throw std::invalid_argument("compute_metrics: benchmark duration must be finite and > 0 s, got " +
                                std::to_string(duration_s));
  }
  for (double p : opts.percentiles) {
    if (!(p >= 0.0 && p <= 100.0)) {
      throw std::invalid_argument("compute_metrics: percentile " + std::to_string(p) + " outside [0, 100]");
    }
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const RequestOutput& out = outputs[i];
    if (!out.success) continue;
    bool finite = std::isfinite(out.send_time_s) && std::isfinite(out.ttft_s) && std::isfinite(out.latency_s);
    for (double g : out.itl_s) finite = finite && std::isfinite(g);
    if (!finite) {
      throw std::invalid_argument("compute_metrics: request " + std::to_string(i) + " (id '" +
                                  out.request_id + "') has a non-finite send time, TTFT, ITL or latency");
    }
  }
}

// Per-request samples (s) the percentile summaries are computed from, in request order.
struct Samples {
  std::vector<double> ttfts, tpots, itls, e2els, ttfcts;  // successful requests (tpots: output_len > 1)
  std::vector<double> all_tpots;    // one per successful request, 0 when output_len <= 1 (vLLM's goodput)
  std::vector<double> queue_times;  // successful requests: send − dispatch (waiting for a client slot)
  std::vector<double> lags;         // dispatched requests: dispatch − intended send time
  std::vector<double> send_lags;    // requests with a wire time: wire − intended − client queue
};

// Reasoning tokens and the server's usage.completion_tokens against the client's own count.
void count_reasoning_and_usage(const RequestOutput& out, BenchmarkMetrics& m) {
  m.total_reasoning_tokens += out.reasoning_tokens;
  if (out.reasoning_tokens > 0) ++m.reasoning_requests;
  if (out.usage_completion_tokens >= 0 && out.tokenizer_output_tokens >= 0) {
    ++m.usage_compared;
    if (out.usage_completion_tokens != out.tokenizer_output_tokens) {
      ++m.usage_mismatches;
      m.usage_mismatch_tokens += std::abs(out.usage_completion_tokens - out.tokenizer_output_tokens);
    }
  }
}

// One pass over the requests: the counts, lengths and token totals into `m`, the latency samples returned.
// TPOT = (E2EL − TTFT) / (output_len − 1) (vLLM 0.13 benchmarks/serve.py).
Samples collect_samples(std::span<const RequestOutput> outputs, const MetricsOptions& opts,
                        BenchmarkMetrics& m) {
  Samples s;
  m.input_lens.reserve(outputs.size());
  m.output_lens.reserve(outputs.size());
  for (const RequestOutput& out : outputs) {
    m.input_lens.push_back(input_len(out, opts.input_tokens));
    if (!never_sent(out)) {
      s.lags.push_back(out.dispatch_time_s - out.intended_send_time_s);
    }
    if (out.wire_time_s >= 0.0) {
      s.send_lags.push_back(out.wire_time_s - out.intended_send_time_s -
                            (out.send_time_s - out.dispatch_time_s));
    }
    if (!out.success) {
      m.output_lens.push_back(0);
      if (never_sent(out)) {
        ++m.not_sent;  // never reached the server: not a failure of it
        continue;
      }
      ++m.failed;
      ++m.failures_by_kind[kind_index(out.failure)];
      continue;
    }
    const int output_len = actual_output_len(out);
    m.output_lens.push_back(output_len);
    m.total_input += input_len(out, opts.input_tokens);
    m.total_output += output_len;
    double tpot = 0.0;
    if (output_len > 1) {
      const double latency_minus_ttft = out.latency_s - out.ttft_s;
      tpot = latency_minus_ttft / (output_len - 1);
      s.tpots.push_back(tpot);
    }
    s.all_tpots.push_back(tpot);
    s.itls.insert(s.itls.end(), out.itl_s.begin(), out.itl_s.end());
    s.ttfts.push_back(out.ttft_s);
    s.e2els.push_back(out.latency_s);
    s.queue_times.push_back(out.send_time_s - out.dispatch_time_s);
    ++m.completed;
    if (out.ttfct_s >= 0.0) s.ttfcts.push_back(out.ttfct_s);
    count_reasoning_and_usage(out, m);
  }
  return s;
}

// Request, output and total token throughput (req/s, tok/s) over the benchmark duration.
void compute_throughput(double duration_s, BenchmarkMetrics& m) {
  m.request_throughput = m.completed / duration_s;
  m.output_throughput = static_cast<double>(m.total_output) / duration_s;
  m.total_token_throughput = static_cast<double>(m.total_input + m.total_output) / duration_s;
}

// Goodput (req/s): vLLM's slo_values in seconds (ms / 1000), a request good iff every `slo >= value`.
double compute_goodput(const Samples& s, const GoodputSlos& slo, double duration_s) {
  int good = 0;
  for (std::size_t i = 0; i < s.ttfts.size(); ++i) {
    bool ok = true;
    if (slo.ttft_ms) ok = ok && (*slo.ttft_ms / 1000 >= s.ttfts[i]);
    if (slo.tpot_ms) ok = ok && (*slo.tpot_ms / 1000 >= s.all_tpots[i]);
    if (slo.e2el_ms) ok = ok && (*slo.e2el_ms / 1000 >= s.e2els[i]);
    if (ok) ++good;
  }
  return good / duration_s;
}

// TTFT, TPOT, ITL, E2EL and TTFCT summaries (mean, median, std, percentiles; ms).
void summarize_latencies(Samples& s, const std::vector<double>& percentiles, BenchmarkMetrics& m) {
  m.ttft = summarize_s(std::move(s.ttfts), percentiles);
  m.tpot = summarize_s(std::move(s.tpots), percentiles);
  m.itl = summarize_s(std::move(s.itls), percentiles);
  m.e2el = summarize_s(s.e2els, percentiles);
  m.ttfct = summarize_s(std::move(s.ttfcts), percentiles);
}

// The client's own lateness: schedule lag (dispatch vs intended), client queue, send lag (bytes on the wire
// vs intended, minus the queue); maxima and the send lag's p99 in ms.
void summarize_schedule_lag(Samples& s, const std::vector<double>& percentiles, BenchmarkMetrics& m) {
  if (!s.lags.empty()) m.schedule_lag_max_ms = *std::max_element(s.lags.begin(), s.lags.end()) * 1000;
  m.schedule_lag = summarize_s(std::move(s.lags), percentiles);
  m.client_queue = summarize_s(std::move(s.queue_times), percentiles);
  if (!s.send_lags.empty()) {
    m.send_lag_max_ms = *std::max_element(s.send_lags.begin(), s.send_lags.end()) * 1000;
    m.send_lag_p99_ms = summarize_s(s.send_lags, {99.0}).percentiles_ms.front().value_ms;
  }
  m.send_lag = summarize_s(std::move(s.send_lags), percentiles);
}

// Exact peak of concurrent successful requests over [send, send + latency): a sweep line, departures first.
int peak_in_flight(std::span<const RequestOutput> outputs, std::size_t completed) {
  // Times in whole nanoseconds: a capped client sends the next request when one ends, and send + latency of
  // the one that ended can land an ulp after that send (the twin's `sim run` read 33 at --max-concurrency
  // 32).
  std::vector<std::pair<std::int64_t, int>> events;
  events.reserve(2 * completed);
  const auto ns = [](double s) { return static_cast<std::int64_t>(std::llround(s * 1e9)); };
  for (const RequestOutput& out : outputs) {
    if (!out.success) continue;
    events.emplace_back(ns(out.send_time_s), +1);
    events.emplace_back(ns(out.send_time_s + out.latency_s), -1);
  }
  std::sort(events.begin(), events.end());  // (time, delta): departures (-1) first at equal times
  int active = 0, peak = 0;
  for (const auto& [time, delta] : events) {
    active += delta;
    peak = std::max(peak, active);
  }
  return peak;
}

// Peaks per one-second bucket (vLLM 0.13: buckets relative to the first successful send): output chunks/s,
// output tokens/s (per-chunk token counts when known, else spread evenly) and concurrent requests; then the
// exact concurrency peak. Requires m.completed > 0; throws std::invalid_argument when the successful
// requests span more than kMaxPeakSpanS (send times on different clocks).
void compute_peaks(std::span<const RequestOutput> outputs, BenchmarkMetrics& m) {
  double min_start = std::numeric_limits<double>::infinity();
  double max_end = -std::numeric_limits<double>::infinity();
  for (const RequestOutput& out : outputs) {
    if (!out.success) continue;
    min_start = std::min(min_start, out.send_time_s);
    max_end = std::max(max_end, out.send_time_s + out.latency_s);
  }
  const double span_s = std::ceil(max_end - min_start);
  if (span_s > kMaxPeakSpanS) {
    throw std::invalid_argument("compute_metrics: successful requests span " + std::to_string(span_s) +
                                " s from first send to last completion; send times must share one clock "
                                "(seconds since the benchmark start)");
  }
  const auto buckets = static_cast<std::size_t>(std::max(0.0, span_s)) + 1;
  std::vector<double> chunks_per_s(buckets, 0.0), tokens_per_s(buckets, 0.0);
  std::vector<int> active_per_s(buckets, 0);
  const auto bucket_of = [&](double t) -> std::ptrdiff_t {
    const double rel = t - min_start;
    return std::isfinite(rel) ? static_cast<std::ptrdiff_t>(std::trunc(rel)) : -1;  // Python int()
  };
  for (std::size_t r = 0; r < outputs.size(); ++r) {
    const RequestOutput& out = outputs[r];
    if (!out.success) continue;
    const std::size_t chunks = out.itl_s.size() + 1;
    const bool exact_tokens = out.chunk_tokens.size() == chunks;
    // Without per-chunk counts the tokens are spread evenly over the chunks that carry text: a first chunk
    // before the first text (TTFCT later than TTFT: openai-chat's role-only chunk) carries none.
    const bool empty_first = !exact_tokens && chunks > 1 && out.ttfct_s > out.ttft_s;
    const double even_tokens =
        static_cast<double>(m.output_lens[r]) / static_cast<double>(chunks - (empty_first ? 1 : 0));
    double t = out.send_time_s + out.ttft_s;
    for (std::size_t k = 0; k < chunks; ++k) {
      if (k > 0) t += out.itl_s[k - 1];
      const std::ptrdiff_t b = bucket_of(t);
      if (b >= 0 && static_cast<std::size_t>(b) < buckets) {
        chunks_per_s[b] += 1;
        tokens_per_s[b] += exact_tokens ? out.chunk_tokens[k] : (empty_first && k == 0 ? 0.0 : even_tokens);
      }
    }
    const std::ptrdiff_t first = std::max<std::ptrdiff_t>(0, bucket_of(out.send_time_s));
    const std::ptrdiff_t last = std::min<std::ptrdiff_t>(static_cast<std::ptrdiff_t>(buckets) - 1,
                                                         bucket_of(out.send_time_s + out.latency_s));
    for (std::ptrdiff_t sec = first; sec <= last; ++sec) ++active_per_s[sec];
  }
  m.max_output_tokens_per_s = *std::max_element(chunks_per_s.begin(), chunks_per_s.end());
  m.max_output_tokens_per_s_by_tokens = *std::max_element(tokens_per_s.begin(), tokens_per_s.end());
  m.max_concurrent_requests = *std::max_element(active_per_s.begin(), active_per_s.end());
  m.max_concurrent_requests_exact = peak_in_flight(outputs, static_cast<std::size_t>(m.completed));
}

}  // namespace

BenchmarkMetrics compute_metrics(std::span<const RequestOutput> outputs, double duration_s,
                                 const MetricsOptions& opts) {
  check_inputs(outputs, duration_s, opts);
  BenchmarkMetrics m;
  m.duration_s = duration_s;
  Samples samples = collect_samples(outputs, opts, m);
  compute_throughput(duration_s, m);
  if (!opts.goodput.empty()) m.request_goodput = compute_goodput(samples, opts.goodput, duration_s);
  summarize_latencies(samples, opts.percentiles, m);
  summarize_schedule_lag(samples, opts.percentiles, m);
  m.peak_concurrency_reached = peak_on_wire(outputs);
  if (m.completed > 0) compute_peaks(outputs, m);
  return m;
}

}  // namespace servelab::metrics
