// servelab/bench: `servelab bench serve` — a drop-in `vllm bench serve` (vLLM 0.13 semantics). Ties the
// dataset, the load client, the metrics and the report together in vLLM's startup order, as a library
// function so that `tune` can run a benchmark in-process.
// Spec: shared/reference/vllm-bench-serve.md §1 (flags, startup order), §3.2 (pre-run steps).
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/bench/config.h"
#include "servelab/bench/server_metrics.h"
#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"
#include "servelab/report/report.h"

namespace servelab::bench {

/// Where `run` writes. The console messages and the report go to `out` (vLLM prints them on stdout);
/// the progress bar goes to `progress` (stderr in vLLM/tqdm), and only when `progress` is a terminal and
/// the config does not say --disable-tqdm (or `force_progress` is set, for tests).
struct RunIo {
  std::FILE* out = stdout;
  std::FILE* progress = stderr;
  bool force_progress = false;
  bool quiet = false;  ///< print nothing at all (tune's in-process runs)
};

/// How late a time-scaled engine twin's tokens left relative to its own schedule, engine ms.
struct ScheduleLag {
  std::uint64_t tokens = 0;  ///< tokens emitted during the timed run
  double mean_ms = 0.0;
  double max_ms = 0.0;
};

/// Everything a finished (or interrupted) run produced.
struct BenchResult {
  report::RunInfo run;                          ///< the run description heading the JSON (date, model, rate)
  metrics::BenchmarkMetrics metrics;            ///< vLLM 0.13 metrics + servelab extras
  std::vector<metrics::RequestOutput> outputs;  ///< one per request, dataset order
  nlohmann::ordered_json result_json;           ///< the --save-result object (also built when not saved)
  std::string console_report;                   ///< the vLLM block followed by servelab's extra lines
  std::optional<std::filesystem::path> result_path;  ///< where the JSON was written, if it was
  std::string model_name;                            ///< value of the requests' "model" field
  std::string model_id;                              ///< --model or the discovered `root`
  std::string tokenizer_id;                          ///< --tokenizer or the model id
  bool interrupted = false;                          ///< stopped before every request finished
  double duration_s = 0.0;                           ///< vLLM benchmark_duration, s (engine time, see below)
  /// Engine seconds per wall second of the server (servelab's engine twin advertises it; 1 for real engines).
  /// Every time, rate and throughput above is engine time: wall × server_time_scale.
  double server_time_scale = 1.0;
  bool engine_twin = false;  ///< the server is servelab's engine twin (sim serve)
  /// Twin only: tokens' lag behind its schedule during the timed run (engine ms), when the server reports it.
  std::optional<ScheduleLag> schedule_lag;
  /// The server's /metrics over the run (absent with --no-server-metrics or when stopped before the run).
  std::optional<ServerMetrics> server_metrics;
  /// Non-empty when the numbers cannot be trusted: the twin fell behind its schedule (host too slow for the
  /// time scale). Such a run is reported, marked INVALID, and tune does not rank it.
  std::string invalid_reason;
};

/// Thrown when the run cannot start or cannot go on (bad flag value, no model on the server, tokenizer not
/// found, failed ready check, interrupted before the timed run). The message names the problem.
struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs one benchmark, vLLM 0.13's `main_async` order: print the arguments, validate, URLs/headers, model
/// discovery (GET {base_url}/v1/models when --model is absent), tokenizer, dataset, ignore_eos forcing
/// (random dataset), goodput, sampling parameters (temperature 0.0 injected when not given, as 0.13),
/// ready check (request 0, every 5 s up to --ready-check-timeout-sec), warm-ups, the timed run on the
/// arrival schedule (the server's /metrics scraped before, during and after it on a thread of its own,
/// unless --no-server-metrics), metrics, console report, JSON result (--save-result / --append-result).
/// `stop`: a stop request (Ctrl-C) stops issuing, cancels in-flight requests and still computes, prints
/// and saves the report, marked interrupted. A stop before the timed run throws BenchError.
/// Per-request failures never throw: they are counted by kind in the report.
/// Throws ConfigError (invalid flags) or BenchError (see above).
/// Thread-safety: independent calls may run concurrently (no global state besides `io`'s streams).
BenchResult run(const RunOptions& config, std::stop_token stop = {}, const RunIo& io = {});

/// vLLM's model discovery: GET `{base_url}/v1/models` and return (id, root) of the first entry: the
/// request model name and the model/tokenizer id (`root` falls back to `id` when the server has none).
/// Throws BenchError naming the URL and the problem (HTTP status, malformed JSON, empty list). `body`, when
/// given, receives the response (bench reads a twin's time scale from it instead of asking again).
std::pair<std::string, std::string> discover_first_model(
    const std::string& base_url, const std::vector<std::pair<std::string, std::string>>& headers,
    bool insecure, std::string* body = nullptr);

/// The sampling part of every request body, vLLM 0.13's order: top_p, top_k, min_p, temperature,
/// frequency_penalty, presence_penalty, repetition_penalty (only the flags given), then
/// "temperature": 0.0 when not given (0.13 default: greedy), then --extra-body merged on top (its keys
/// win; Python `{**sampling, **extra}`).
nlohmann::ordered_json sampling_body(const RunOptions& config);

}  // namespace servelab::bench
