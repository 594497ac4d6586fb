// servelab/report: `servelab compare` — `bench serve --save-result` files (vLLM's JSON, servelab's or
// vLLM's own) side by side, each value with its change in % against the first run, and, when the runs hold
// per-request samples (--save-detailed), whether a latency change is bigger than the noise.
//
// Test: Mann-Whitney U (two-sided, 5%), on the per-request TTFT, TPOT and ITL samples of the two runs.
// Latency distributions are skewed and heavy-tailed (a few requests queue behind a long prefill), so a
// rank test that assumes no distribution is the right one; Welch's t-test on their means would be driven by
// the tail. Throughput is one number per run: a single run gives no estimate of its run-to-run noise
// (resampling its requests with the duration fixed only measures token-count noise, not the engine and
// scheduling variance that decides a comparison), so throughput changes are shown but not tested — repeat
// the runs (`servelab tune` with `repeats ≥ 2` tests them with Welch's t-test).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace servelab::report {

/// One run as read back from a result file.
struct SavedRun {
  std::string name;  ///< column header: the file name, with "#k" for the k-th run of a JSON Lines file
  /// Numeric keys of the result (duration, completed, request_throughput, mean_ttft_ms, p99_itl_ms, ...);
  /// nullopt for a JSON null (request_goodput without --goodput). vLLM's misspelt "request_goodput:" key
  /// (older benchmark_serving.py) is read as request_goodput.
  std::map<std::string, std::optional<double>> numbers;
  std::map<std::string, std::string> texts;  ///< model_id, backend, date, label (when strings)
  /// Every other top-level string or number (the --metadata keys, tokenizer_id, endpoint_type, ...; not
  /// servelab's own), as text: the table shows those whose values differ between the runs.
  std::map<std::string, std::string> other;
  bool detailed = false;  ///< per-request arrays present (--save-detailed)
  /// Per successful request (errors[i] == ""), ms: TTFT; TPOT = (latency − TTFT)/(output_len − 1) for
  /// output_len > 1, the latency being TTFT + Σ ITL (vLLM's latency ends at the last chunk, so this is
  /// vLLM's own TPOT) or `latencies` when the file has them; every ITL gap of those requests.
  std::vector<double> ttft_ms, tpot_ms, itl_ms;
  /// Why the run is not a plain measurement, one line each: a prediction of the engine twin (sim run's
  /// servelab_engine_twin_prediction), a run bench marked INVALID (servelab.invalid, with its reason), an
  /// interrupted run (servelab.interrupted).
  std::vector<std::string> caveats;
  /// bench serve was stopped before its schedule ended (servelab.interrupted: Ctrl-C, SIGTERM): its figures
  /// are of the early part of the schedule only, so its per-request samples are not tested against another
  /// run's (vLLM writes no file then; a script reading vLLM's keys alone cannot tell).
  bool interrupted = false;
};

/// One run from a parsed result object; `name` becomes SavedRun::name. Throws std::runtime_error naming
/// `name` and the key when the object has neither "completed" nor "request_throughput" (not a bench
/// result), a benchmark key is not a number, or the per-request arrays are malformed or of unequal length.
SavedRun parse_saved_run(const nlohmann::json& result, const std::string& name);

/// Every run in a result file: one JSON object, or JSON Lines (`--append-result`, vLLM's sweep outputs),
/// one run per non-empty line. Throws std::runtime_error naming the file (and line) when it is missing,
/// unreadable, empty, not JSON, or not a bench result.
std::vector<SavedRun> load_saved_runs(const std::filesystem::path& path);

/// Result of a two-sided Mann-Whitney U test.
struct MannWhitney {
  std::size_t n1 = 0, n2 = 0;
  double u1 = 0.0;       ///< U of the first sample: #{(a, b): a > b} + ½ #{a = b}
  double z = 0.0;        ///< normal approximation with tie and continuity correction
  double p_value = 1.0;  ///< two-sided
};

/// Mann-Whitney U of `a` against `b`: ranks with ties averaged, U1 = R1 − n1(n1+1)/2, σ² = n1·n2/12 ·
/// ((n+1) − Σ(t³ − t)/(n(n−1))), z = (U1 − n1·n2/2 ∓ ½)/σ, p = erfc(|z|/√2) (as scipy.stats.mannwhitneyu
/// with method="asymptotic", use_continuity=True). Empty input, or all values equal, gives p = 1.
/// Thread-safety: pure.
MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b);

/// Each side needs at least this many samples for the normal approximation to be trusted.
inline constexpr std::size_t kMinSamplesForTest = 20;

/// Significance level of the tests.
inline constexpr double kAlpha = 0.05;

/// The side-by-side text: one row per key any run has (run description, counts, throughputs, then
/// mean/median/percentiles of TTFT, TPOT, ITL, E2EL, under vLLM's console labels), the first run's value,
/// then each other run's value with "(+x.x%)"; then, per later run, the Mann-Whitney U verdict on TTFT, TPOT
/// and ITL against the first run (or why there is none). Needs ≥ 2 runs (throws std::invalid_argument).
std::string format_comparison(const std::vector<SavedRun>& runs);

}  // namespace servelab::report
