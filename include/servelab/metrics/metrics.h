// servelab/metrics: the aggregate numbers of a `servelab bench serve` run, computed exactly as vLLM 0.13's
// `vllm/benchmarks/serve.py: calculate_metrics` (spec: shared/reference/vllm-bench-serve.md §4), plus
// clearly separated servelab extras (schedule lag, TTFCT, reasoning tokens, failures by kind, ...).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "servelab/metrics/request_output.h"

namespace servelab::metrics {

/// Number of FailureKind values (kNone included); indexes `BenchmarkMetrics::failures_by_kind`.
inline constexpr std::size_t kFailureKindCount = static_cast<std::size_t>(FailureKind::kCancelled) + 1;

/// Goodput service-level objectives (vLLM `--goodput ttft:MS tpot:MS e2el:MS`), milliseconds. A request is
/// "good" iff every given SLO holds with `slo_ms / 1000 >= value_s` (inclusive; vLLM compares seconds).
struct GoodputSlos {
  std::optional<double> ttft_ms;
  std::optional<double> tpot_ms;  ///< compared with TPOT taken as 0 when output tokens <= 1 (as vLLM)
  std::optional<double> e2el_ms;
  bool empty() const { return !ttft_ms && !tpot_ms && !e2el_ms; }
};

/// Parses vLLM `--goodput` items ("ttft:100", "e2el:2000.5"). Throws std::invalid_argument naming the
/// item for a missing ':', an unknown key (valid: ttft, tpot, e2el), a non-number or a negative value.
GoodputSlos parse_goodput(std::span<const std::string> items);

/// Parses vLLM `--metric-percentiles` ("99", "50,90,99.9"). Throws std::invalid_argument naming the value
/// when an entry is not a number or is outside [0, 100].
std::vector<double> parse_metric_percentiles(std::string_view csv);

/// Which latency metrics get console sections and JSON keys (vLLM `--percentile-metrics`, default
/// "ttft,tpot,itl"). All four are always computed.
struct PercentileMetrics {
  bool ttft = true;
  bool tpot = true;
  bool itl = true;
  bool e2el = false;
};

/// Parses `--percentile-metrics` ("ttft,tpot,itl,e2el"). Throws std::invalid_argument naming an unknown
/// metric (vLLM 0.13 silently ignored them; servelab refuses rather than print nothing).
PercentileMetrics parse_percentile_metrics(std::string_view csv);

/// Which per-request prompt length feeds `total_input` and `input_lens`.
enum class InputTokenSource : std::uint8_t {
  kDataset,      ///< client-side dataset count (`dataset_prompt_len`, else `prompt_len`) — vLLM 0.13
  kServerUsage,  ///< `prompt_len` (server usage.prompt_tokens when reported) — newer vLLM
};

/// Inputs of compute_metrics besides the per-request records.
struct MetricsOptions {
  std::vector<double> percentiles{99.0};  ///< `--metric-percentiles`, each in [0, 100]
  GoodputSlos goodput;                    ///< `--goodput`; empty → request_goodput is nullopt
  InputTokenSource input_tokens = InputTokenSource::kDataset;
};

/// One requested percentile of a latency metric.
struct PercentileValue {
  double p = 0.0;         ///< the percentile asked for, e.g. 99 or 99.9
  double value_ms = 0.0;  ///< np.percentile(values_s, p) * 1000
};

/// mean / median / population std / percentiles of one latency metric, milliseconds, computed in seconds
/// with numpy's algorithms then multiplied by 1000 (vLLM order of operations). All 0 for an empty list
/// (vLLM's `np.mean(x or 0)`).
struct LatencySummary {
  double mean_ms = 0.0;
  double median_ms = 0.0;
  double std_ms = 0.0;
  std::vector<PercentileValue> percentiles_ms;  ///< in MetricsOptions::percentiles order
  std::size_t count = 0;                        ///< number of samples (servelab extra)
};

/// The result of compute_metrics. Fields before "servelab extras" are vLLM 0.13's BenchmarkMetrics.
struct BenchmarkMetrics {
  // ---- vLLM 0.13 ----
  int completed = 0;  ///< successful requests
  /// Requests sent that failed (a request a Ctrl-C stopped before it was sent is not_sent, not failed).
  int failed = 0;
  std::int64_t total_input = 0;           ///< input tokens over successful requests
  std::int64_t total_output = 0;          ///< output tokens over successful requests
  double request_throughput = 0.0;        ///< completed / duration, req/s
  std::optional<double> request_goodput;  ///< good requests / duration, req/s; nullopt without SLOs
  double output_throughput = 0.0;         ///< total_output / duration, tok/s
  double total_token_throughput = 0.0;    ///< (total_input + total_output) / duration, tok/s
  LatencySummary ttft;                    ///< time to first token (first chunk with `choices`)
  LatencySummary tpot;                    ///< (latency - ttft) / (output_tokens - 1), requests with > 1 token
  LatencySummary itl;                     ///< all per-chunk gaps of all successful requests, pooled
  LatencySummary e2el;                    ///< end-to-end latency
  /// Max over 1-s buckets (bucket = int(t - t0), t0 = first successful send) of chunk arrival counts,
  /// tok/s. vLLM 0.13 method: counts chunks, not tokens (vLLM issue #37666).
  double max_output_tokens_per_s = 0.0;
  /// Max over 1-s buckets of requests active in that second, end second inclusive (vLLM 0.13 method;
  /// overcounts at second boundaries, vLLM issue #56653).
  int max_concurrent_requests = 0;
  double duration_s = 0.0;       ///< benchmark duration used for the rates, s
  std::vector<int> input_lens;   ///< per request (input order), tokens; as `--save-detailed` input_lens
  std::vector<int> output_lens;  ///< per request, tokens; 0 for failures (vLLM actual_output_lens)

  // ---- servelab extras (not in vLLM) ----
  /// Exact peak concurrency: sweep line over [send, send+latency) of successful requests, departures
  /// before arrivals at equal times (newer vLLM's definition).
  int max_concurrent_requests_exact = 0;
  /// Max over 1-s buckets of output *tokens* (chunk_tokens when known, else tokens spread evenly over the
  /// chunks of the request that carry text: a first chunk before the first text, ttfct_s > ttft_s, gets
  /// none), tok/s.
  double max_output_tokens_per_s_by_tokens = 0.0;
  /// Schedule lag: dispatch_time_s - intended_send_time_s over every request except never-sent cancelled
  /// ones, ms. Large values mean the client, not the server, limited the run (requests left the schedule
  /// late). Producers must fill dispatch_time_s.
  LatencySummary schedule_lag;
  double schedule_lag_max_ms = 0.0;
  /// Client-side queueing under `--max-concurrency`: send_time_s - dispatch_time_s over successes, ms
  /// (newer vLLM's client_queue_time; excluded from TTFT/E2EL as in vLLM).
  LatencySummary client_queue;
  /// Send lag: when a request left (wire_time_s) minus when it should have (intended_send_time_s, moved
  /// by its --max-concurrency wait, send_time_s - dispatch_time_s), over every request with a wire time,
  /// ms: schedule lag + connect + write. The client's own lateness (wrk2's "coordinated omission" check);
  /// count 0 when no producer measured it (the offline twin).
  LatencySummary send_lag;
  double send_lag_p99_ms = 0.0;  ///< numpy-linear p99 of the send lag, whatever --metric-percentiles asks
  double send_lag_max_ms = 0.0;
  /// Peak concurrency reached at the server: sweep line over [wire_time_s, send_time_s + latency_s) of
  /// successful requests with a wire time, and [wire_time_s, end_time_s) of failed ones (departures first
  /// at equal times): requests that had left the client and not yet finished. Compare with the concurrency
  /// asked for (report::requested_concurrency).
  int peak_concurrency_reached = 0;
  LatencySummary ttfct;                     ///< time to first content/reasoning text, successes having one
  std::int64_t total_reasoning_tokens = 0;  ///< sum of reasoning_tokens over successes
  int reasoning_requests = 0;               ///< successes with reasoning_tokens > 0
  std::array<int, kFailureKindCount> failures_by_kind{};  ///< index = FailureKind; [kNone] stays 0
  /// Requests never sent: the run was interrupted (Ctrl-C) before their send time or while they waited for
  /// a --max-concurrency or session slot, or an earlier turn of their session failed (kCancelled with no
  /// dispatch). Neither completed nor failed: the server never saw them.
  int not_sent = 0;
  int usage_compared = 0;                  ///< successes having both usage and tokenizer output counts
  int usage_mismatches = 0;                ///< ... of which the two counts differ
  std::int64_t usage_mismatch_tokens = 0;  ///< sum of |usage - tokenizer| over mismatches
};

/// Output tokens vLLM counts for one request: 0 for a failure; else `output_tokens`, and when that is 0
/// the tokenizer count (`tokenizer_output_tokens`, if >= 0). Tokens.
int actual_output_len(const RequestOutput& out);

/// Prompt tokens counted for one request under `source` (see InputTokenSource). Tokens.
int input_len(const RequestOutput& out, InputTokenSource source);

/// Computes every metric of a run, as vLLM 0.13's calculate_metrics (+ extras).
/// `outputs`: one record per request, input order. `duration_s`: t = 0 (the run's start,
/// metrics/request_output.h) to the last completion (vLLM benchmark_duration), s, > 0. Throws
/// std::invalid_argument when duration_s is not finite and positive, a percentile is outside [0, 100], a
/// successful request has a non-finite time, or successful requests span more than 30 days (mixed clocks).
/// Cost: O(total chunks · log) time, one copy of all ITL samples in memory. Thread-safety: pure function.
BenchmarkMetrics compute_metrics(std::span<const RequestOutput> outputs, double duration_s,
                                 const MetricsOptions& opts);

}  // namespace servelab::metrics
