// servelab/tune: what a study's load analysis found, in a plain shape for the Markdown and HTML reports:
// per configuration its load curve (every load point with its metrics), its SLO search (the highest load
// meeting [slo], the goodput there, every run it took), the Pareto front of output tok/s per GPU against
// output tok/s per user over every concurrency point, the objectives and the cost per 1M tokens.
// Filled by analyze_load (tune/load.h) into SearchOutcome::load.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/study/load_spec.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// One configuration measured (or predicted) at one load point.
struct LoadPointResult {
  LoadPoint load;
  std::string scenario_id;                ///< the load point's scenario id, e.g. "sharegpt-1000@c16"
  TrialStatus status = TrialStatus::kOk;  ///< kOk when metrics are present
  std::string reason;                     ///< failure reason when status != kOk
  bool predicted = false;                 ///< from the twin
  /// Mean over repeats of every metric, keyed by vLLM console label ("Output token throughput (tok/s)",
  /// "P99 TTFT (ms)", "Mean TPOT (ms)", "Median ITL (ms)", ...). Empty on failure.
  std::map<std::string, double> metrics;
  double output_tok_s_per_gpu = 0;  ///< output tok/s ÷ GPUs of the node (tok/s)
  /// Output tok/s ÷ concurrency (tok/s per user), as vLLM's `bench sweep plot_pareto`; 0 for request-rate
  /// points.
  double output_tok_s_per_user = 0;
};

/// A configuration's load curve on one scenario, points in sweep order ([load] order).
struct LoadCurve {
  std::string config_key, engine, label;  ///< config_key / engine / config_label of the configuration
  std::string scenario;                   ///< the scenario as written (without the load tag)
  std::vector<LoadPointResult> points;
};

/// One run of an SLO search.
struct SloProbe {
  double value = 0;                             ///< request rate (req/s) or concurrency tried
  int num_prompts = 0;                          ///< --num-prompts of the run
  std::string scenario_id;                      ///< the run's scenario id ("s@r2.5", "s@r2.5n2400")
  bool passed = false;                          ///< every SLO target met (and the run succeeded)
  std::string step;                             ///< "start", "bracket", "refine", "goodput" or "longer"
  std::map<std::string, double> slo_values_ms;  ///< SLO key ("p99_ttft_ms") → value measured, ms
  std::string failure;                          ///< the run failed: why (no SLO values then)
  TrialStatus status = TrialStatus::kOk;        ///< how the run ended (kOk also when it missed the SLOs)
  /// Request goodput served (req/s: "Request goodput (req/s)", else the request throughput when no
  /// per-request SLO applies); 0 for a failed run.
  double goodput_req_s = 0;
  /// Requests in flight on average (Little's law: achieved req/s × mean E2EL s; concurrency: the cap).
  double in_flight = 0;
  /// Request rate search only: the server fell behind the arrivals (see saturation_tolerance): past its
  /// capacity a server only queues, and the run's figures depend on its length, not on a rate it sustains.
  bool saturated = false;
  /// Fewer prompts than SloSpec::min_prompts_per_in_flight × in_flight: warm-up and drain weigh too much.
  bool short_run = false;
  /// A longer run at the same load replaced this one (it was short).
  bool superseded = false;
  /// The run is a steady operating point: it succeeded, was not saturated, and was long enough.
  bool steady() const { return failure.empty() && !saturated && !short_run && !superseded; }
};

/// A request-rate run is saturated when the server fell behind its arrivals. With the run's schedule
/// (kArrivalSpanMetric, kEarlyE2elMetric, kBacklogAtLastArrivalMetric, kTtftDriftMetric): when the requests
/// still in flight at the last arrival exceed what a server keeping up holds (Little's law: arrival rate ×
/// the early requests' mean E2EL) by more than max(tolerance, 3 √that ÷ N) of the run's N requests (an
/// overload λ > μ leaves about N (1 − μ/λ) behind), or when the median TTFT of the last quarter of arrivals
/// exceeds the first quarter's by more than tolerance × span ÷ 2 (queueing grows by λ/μ − 1 s per s of
/// arrivals; a heavy overload queues the early requests too and hides from the first test). The tolerance is
/// the search's ([slo] tolerance_pct). Without the schedule: when the achieved request rate is below
/// (1 − saturation_tolerance(N)) × N ÷ (N ÷ offered rate + mean E2EL). Issue 30's run that "met the SLOs" at
/// 133.6 req/s offered with 300 prompts served 17.0.
///
/// saturation_tolerance: max(0.1, 3 ÷ √N), three standard deviations of the span of N Poisson arrivals
/// (relative std 1/√N), at least 10%.
double saturation_tolerance(int num_prompts);

/// The SLO search of one configuration: the highest steady load meeting every [slo] target, and the goodput
/// of the configuration (issue 30): the maximum over the steady runs that met every target of the request
/// goodput served there, with the load it was reached at. The two loads differ when goodput peaks below the
/// highest passing load (e.g. a mean-TPOT bound met by the run while fewer of its requests meet it alone).
struct SloResult {
  std::string config_key, engine, label, scenario;
  LoadKind variable = LoadKind::kRequestRate;
  bool predicted = false;
  bool found = false;      ///< some steady run met every target
  double max_passing = 0;  ///< the highest value whose steady run met every target
  /// The lowest value above it that missed a target, was saturated or could not run long enough (none: met
  /// up to max_value).
  std::optional<double> min_failing;
  int runs = 0;                      ///< runs this search launched or reused (probes.size())
  std::vector<SloProbe> probes;      ///< in the order they ran
  std::optional<double> twin_start;  ///< --target local: the twin's answer the real search started from
  int twin_runs = 0;                 ///< runs the twin's search took (predicted, seconds of CPU)
  std::string note;                  ///< why the search stopped when it did not converge to the tolerance
  /// The configuration's goodput: the highest request goodput (req/s: requests meeting every per-request
  /// SLO per second, vLLM's --goodput over ttft/tpot/e2el targets) over the steady probes that passed, at
  /// `goodput_at`; token goodput (output tok/s of those requests, estimated as request goodput
  /// × mean output tokens per request) and every metric (console labels) at the same probe. All 0 / empty
  /// and goodput_found false when no probe qualifies (`note` says why).
  bool goodput_found = false;
  double goodput_at = 0;  ///< the load (req/s or concurrency) of the goodput maximum
  double request_goodput_req_s = 0;
  double token_goodput_tok_s = 0;
  std::map<std::string, double> metrics;
  /// Request goodput at `goodput_at` per repeat (req/s; [study] repeats > 1 gives a 95% CI: tune/stats.h).
  std::vector<double> goodput_repeats_req_s;
  /// On the twin: the goodput's band propagated from the prediction's TTFT and TPOT bands (slo_search):
  /// the goodput found when each SLO bound is divided by (1 ± its metric's band), i.e. when the true
  /// latencies are the twin's off by the band either way, each end widened to at least the prediction's
  /// throughput band at that load (the capacity the shifted bounds do not move); ± percent of
  /// request_goodput_req_s (the larger side). Nullopt when measured, or when the prediction carries no
  /// latency band.
  std::optional<double> goodput_band_pct;
  double goodput_low_req_s = 0, goodput_high_req_s = 0;  ///< the two ends (req/s) behind goodput_band_pct
};

/// A point of the throughput-per-GPU vs throughput-per-user plane (one config at one concurrency).
struct ParetoPoint {
  std::string config_key, engine, label;
  LoadPoint load;
  double output_tok_s_per_user = 0;  ///< x: output tok/s ÷ concurrency
  double output_tok_s_per_gpu = 0;   ///< y: output tok/s ÷ GPUs
  bool on_front = false;             ///< no other point is ≥ on both axes and > on one
  bool recommended = false;          ///< the point the tokens_per_gpu objective (else the best config) picks
};

/// One configuration's value of an objective.
struct ObjectiveValue {
  std::string config_key, engine, label;
  bool feasible = false;  ///< the objective is defined for it (e.g. some point reaches the per-user floor)
  double value = 0;       ///< in ObjectiveResult::unit
  std::string at;         ///< where it was read: "concurrency 64", "2.5 req/s", "scenario as written"
  std::string why;        ///< when infeasible
};

/// An objective over every analysed configuration.
struct ObjectiveResult {
  ObjectiveSpec spec;
  std::string title;  ///< "max request goodput under the SLOs"
  std::string unit;   ///< "req/s", "tok/s/GPU", "ms", "$/1M output tokens", "tok/s"
  /// One per analysed configuration (LoadOutcome::curves order); slo_goodput then one per further SLO row.
  std::vector<ObjectiveValue> values;
  int best = -1;  ///< index into values of the winner (-1: none feasible)
};

/// Cost of one configuration at its highest-throughput load point.
struct CostRow {
  std::string config_key, engine, label;
  std::string at;  ///< load point text, or "scenario as written"
  double output_tok_s = 0, total_tok_s = 0;
  double usd_per_1m_output_tokens = 0;  ///< usd_per_gpu_hour × GPUs / 3600 / output tok/s × 10⁶
  double usd_per_1m_total_tokens = 0;   ///< same with total (input + output) tok/s
};

/// Everything the load analysis found. `enabled` is false for a study without [load], [slo] and
/// [[objectives]] (then every vector is empty).
struct LoadOutcome {
  bool enabled = false;
  std::string scenario;           ///< the scenario the curves, the front and the SLO search use
  int gpus = 0;                   ///< GPUs per configuration (the node: hardware.gpu_count)
  std::vector<LoadCurve> curves;  ///< one per analysed configuration (baselines, best, recommended, top)
  /// When [slo] is set: one per analysed configuration (curves order), then one per other configuration
  /// the search valued on goodput (slo_goodput as the primary objective).
  std::vector<SloResult> slo;
  std::vector<ParetoPoint> pareto;          ///< every successful concurrency point of every curve
  std::vector<ObjectiveResult> objectives;  ///< [[objectives]] in file order
  std::vector<CostRow> cost;                ///< one per configuration when [cost] is set
  std::optional<double> usd_per_gpu_hour;
};

}  // namespace servelab::tune
