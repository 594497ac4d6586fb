// servelab/report: the `vllm bench serve` console block and `--save-result` JSON, in vLLM 0.13's exact
// layout (shared/reference/seed-report-blocks.txt; spec shared/reference/vllm-bench-serve.md §5), followed
// by servelab's extra lines / keys.
#pragma once

#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"

namespace servelab::report {

/// `--ramp-up-strategy` with its start/end request rates (req/s, integers as in vLLM).
struct RampUp {
  std::string strategy;  ///< "linear" or "exponential"
  int start_rps = 0;
  int end_rps = 0;
};

/// A ramp-up crossing of an integer request rate (vLLM `rps_change_events`).
struct RpsChangeEvent {
  int rps = 0;
  std::string timestamp;  ///< ISO-8601 wall-clock time, as Python's datetime.isoformat()
};

/// Run description that heads the result JSON (vLLM `result_json` before the benchmark keys) and names the
/// result file. Filled by `bench serve` from its flags.
struct RunInfo {
  std::string date;                         ///< "YYYYmmdd-HHMMSS", local time at the end of the run
  std::string backend = "openai";           ///< --backend
  std::optional<std::string> label;         ///< --label (JSON null when absent)
  std::string model_id;                     ///< --model (or the discovered one)
  std::optional<std::string> tokenizer_id;  ///< --tokenizer (null without a tokenizer)
  int num_prompts = 0;                      ///< --num-prompts
  std::vector<std::pair<std::string, std::string>> metadata;      ///< --metadata KEY=VALUE, in flag order
  double request_rate = std::numeric_limits<double>::infinity();  ///< --request-rate, req/s (inf = all at 0)
  double burstiness = 1.0;                                        ///< --burstiness
  std::optional<int> max_concurrency;                             ///< --max-concurrency
  std::optional<RampUp> ramp_up;                                  ///< --ramp-up-strategy/-start-rps/-end-rps
  /// servelab: the send times come from the data, not from --request-rate (a --self-timed trace, or the
  /// later turns of --multi-turn sessions): the run asks for no burst concurrency.
  bool arrivals_from_data = false;
  std::vector<RpsChangeEvent> rps_change_events;
  bool interrupted = false;  ///< servelab: the run was stopped by Ctrl-C (report is partial)
};

/// Which parts of the report to produce.
struct ReportOptions {
  metrics::PercentileMetrics percentile_metrics;  ///< --percentile-metrics
  bool save_detailed = false;                     ///< --save-detailed: keep per-request arrays in the JSON
  bool servelab_extras = true;  ///< add the "servelab" key to the JSON (after all vLLM keys)
};

/// Parses `--metadata` items "KEY=VALUE" (split at the first '=', both sides stripped of whitespace, as
/// vLLM). Throws std::invalid_argument naming the item when it has no '='.
std::vector<std::pair<std::string, std::string>> parse_metadata(std::span<const std::string> items);

/// Current local time as "YYYYmmdd-HHMMSS" (vLLM's `datetime.now().strftime("%Y%m%d-%H%M%S")`).
std::string current_date_string();

/// vLLM's percentile label (benchmarks/serve.py p_word: str(int(p)) if int(p) == p else str(p)): "99"
/// for 99.0, "99.9" for 99.9 — the key of `p{word}_ms` fields and the `P{word}` report rows.
std::string percentile_word(double p);

/// A latency summary as JSON, in this order: mean_ms, median_ms, std_ms, p{word}_ms for each selected
/// percentile, count (servelab's extra sections of the result file: schedule lag, sessions, ...).
nlohmann::ordered_json summary_json(const metrics::LatencySummary& s);

/// The vLLM 0.13 console block, from the "==== Serving Benchmark Result ====" banner to the closing
/// 50 '=' line, '\n'-terminated lines. Rows are Python `"{:<40} {:<10}"` / `"{:<40} {:<10.2f}"` (trailing
/// spaces included); percentile labels `P99`, `P99.9`. `Failed requests:` always follows `Successful
/// requests:` (vLLM 0.13, PR #26478; the reference study's blocks leave it out). Conditional rows as vLLM:
/// maximum request concurrency (if set), configured rate (if finite), goodput (if SLOs given), E2EL (if
/// selected). Thread-safety: pure.
std::string format_console_block(const RunInfo& run, const metrics::BenchmarkMetrics& m,
                                 const metrics::PercentileMetrics& selected);

/// The concurrency a run asks for: with `--request-rate inf` and no ramp-up every one of `num_requests` is
/// due at t = 0, so min(--max-concurrency, num_requests) (num_requests without a limit); nullopt for a finite
/// rate, a ramp-up or arrivals from the data (the arrival times, not the client, then set the concurrency).
/// Thread-safety: pure.
std::optional<int> requested_concurrency(const RunInfo& run, int num_requests);

/// servelab's extra lines, printed after the block: failed requests by kind, exact peak
/// concurrency, token-based peak throughput, schedule lag, send lag (median, P99, max) with the peak
/// concurrency reached and the requested one (requested_concurrency), TTFCT, reasoning tokens,
/// usage-vs-tokenizer mismatch warning, a warning when the requested concurrency was not reached,
/// interrupted marker. Same row format, under a "servelab extras" banner.
/// Thread-safety: pure.
std::string format_console_extras(const RunInfo& run, const metrics::BenchmarkMetrics& m);

/// The `--save-result` object in vLLM 0.13 key order (§5.2): run keys, metadata, traffic keys, benchmark
/// keys, per-request arrays (only with save_detailed), peaks, then mean/median/std/p<p> keys of each
/// selected metric, then (servelab_extras) one "servelab" object. `outputs` are the records compute_metrics
/// saw (for ttfts, itls, generated_texts, errors); may be empty when !save_detailed. Thread-safety: pure.
nlohmann::ordered_json make_result_json(const RunInfo& run, const metrics::BenchmarkMetrics& m,
                                        std::span<const metrics::RequestOutput> outputs,
                                        const ReportOptions& opts);

/// vLLM's default result file name: `{label or backend}-{rate}qps[-concurrency{N}]-{model basename}-{date}
/// .json`, rate as Python float repr ("inf", "10.0"); with ramp-up
/// `{label}-ramp-up-{strategy}-{start}qps-{end}qps[-concurrency{N}]-{model basename}-{date}.json`.
std::string default_result_file_name(const RunInfo& run);

/// Where the result goes: `result_filename` if non-empty, else default_result_file_name(run); prefixed by
/// `result_dir` when non-empty.
std::filesystem::path result_path(const RunInfo& run, const std::filesystem::path& result_dir,
                                  const std::string& result_filename);

/// Writes python_json_dumps(result) to `path` (no trailing newline, as json.dump). append=false truncates;
/// append=true (`--append-result`) appends, inserting '\n' first when the file is not empty. Creates the
/// parent directory. Throws std::runtime_error naming the path on I/O failure.
/// Thread-safety: callers must not write the same path from two threads at once.
void write_result_file(const std::filesystem::path& path, const nlohmann::ordered_json& result, bool append);

}  // namespace servelab::report
