// servelab/tune: the load dimension of a study, as written in STUDY.toml: the load points each configuration
// is measured at (`[load]`, per scenario `load = {...}`), the SLO targets of the SLO search (`[slo]`), the
// GPU price (`[cost]`) and the objectives (`[[objectives]]`). Plain types; parsed by parse_study (study.h),
// used by tune/load.h. See docs/study.md, "Load, SLOs, objectives, cost".
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace servelab::tune {

/// Which bench serve flag a load point sets: `--max-concurrency N` (requests released at once, at most N in
/// flight; vLLM's concurrency sweep) or `--request-rate R` (Poisson arrivals at R req/s, no concurrency cap).
enum class LoadKind { kConcurrency, kRequestRate };

/// One load point. `value` is the concurrency (an integer ≥ 1) or the request rate in req/s (> 0).
struct LoadPoint {
  LoadKind kind = LoadKind::kConcurrency;
  double value = 1;
  /// `--num-prompts` of the run; 0: the scenario's own. The SLO search sets it when a run must be longer to
  /// reach steady state (SloSpec::min_prompts_per_in_flight).
  int num_prompts = 0;
  /// Short tag used in scenario ids and trial keys: "c16" (concurrency 16), "r2.5" (2.5 req/s), "r2.5n2400"
  /// (2.5 req/s, 2400 prompts).
  std::string tag() const;
  /// Human form: "concurrency 16", "2.5 req/s", "2.5 req/s, 2400 prompts".
  std::string text() const;
};

/// The load points of a sweep: every concurrency, then every request rate, in file order.
struct LoadSpec {
  std::vector<int> concurrency;      ///< `--max-concurrency` values
  std::vector<double> request_rate;  ///< `--request-rate` values, req/s
  bool empty() const { return concurrency.empty() && request_rate.empty(); }
  std::vector<LoadPoint> points() const;
};

/// One SLO target: `stat` of `metric` must stay ≤ `max_ms` (vLLM `sweep serve_sla` form `p99_ttft_ms <=
/// 2000`).
struct SloTarget {
  std::string key;     ///< as written: "p99_ttft_ms", "mean_tpot_ms"
  std::string stat;    ///< "mean" | "median" | "p<N>" (e.g. "p99")
  std::string metric;  ///< "ttft" | "tpot" | "itl" | "e2el"
  std::string label;   ///< the console label it reads: "P99 TTFT (ms)", "Mean TPOT (ms)"
  double max_ms = 0;   ///< upper bound, ms (inclusive, as vLLM's goodput comparison)
};

/// The SLO search: the highest load that meets every target, found by bracketing then interpolating.
struct SloSpec {
  std::vector<SloTarget> targets;              ///< in key order; empty: no SLO search
  LoadKind variable = LoadKind::kRequestRate;  ///< what the search varies (`search = "request_rate"`)
  std::string scenario;                        ///< scenario it runs on (default: first objective scenario)
  std::optional<double> start;                 ///< first value tried (default: the twin's answer, else 1)
  double min_value = 0.01;                     ///< below this (req/s or concurrency) nothing meets the SLOs
  double max_value = 65536;                    ///< vLLM serve_sla's upper end; above it the SLOs always hold
  double tolerance_pct = 5;                    ///< stop when max failing / max passing ≤ 1 + tolerance
  int max_runs = 16;                           ///< runs per configuration, bracket included
  /// A run reaches steady state when it has at least this many prompts per request in flight (Little's law:
  /// in flight = achieved request rate × mean E2EL; a concurrency run: its cap): its warm-up and its drain,
  /// about one in-flight generation each, are then at most 1/10 of the run each. 10 is InferenceMAX's rule
  /// (num_prompts = 10 × concurrency). Shorter runs are rerun longer, up to max_prompts.
  double min_prompts_per_in_flight = 10;
  /// The longest run the search makes (prompts); a run that needs more is not steady and counts as over
  /// capacity (the report marks it "short").
  int max_prompts = 20000;
};

/// GPU price for the cost objective.
struct CostSpec {
  double usd_per_gpu_hour = 0;  ///< $ per GPU-hour (> 0)
};

/// An objective a study reports (the first one the search optimises; see docs/study.md).
struct ObjectiveSpec {
  enum class Kind {
    kThroughput,    ///< max total token throughput (the [objective] metric at the scenario as written)
    kSloGoodput,    ///< max request goodput over the unsaturated loads meeting [slo] (SloResult)
    kTokensPerGpu,  ///< max output tok/s per GPU at ≥ min_tokens_per_s_per_user (Pareto front)
    kMinLatency,    ///< min `metric` at the highest swept concurrency ≤ max_concurrency
    kCost,          ///< min $ per 1M output tokens at the highest-throughput load point ([cost])
  };
  Kind kind = Kind::kThroughput;
  double min_tokens_per_s_per_user = 0;   ///< kTokensPerGpu: per-user floor, tok/s
  int max_concurrency = 1;                ///< kMinLatency: highest concurrency the latency is read at
  std::string metric = "Mean E2EL (ms)";  ///< kMinLatency: latency label (short names as in [objective])
  /// Stable name: "throughput", "slo_goodput", "tokens_per_gpu", "min_latency", "cost".
  std::string name() const;
  /// Is a higher value better?
  bool maximised() const { return kind != Kind::kMinLatency && kind != Kind::kCost; }
};

}  // namespace servelab::tune
