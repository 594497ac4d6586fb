// The SLO search (load.h): bracket and refine the highest load whose steady run meets every [slo] target,
// then refine around the load that served the most goodput. A run counts only when it is steady: not
// saturated (a request-rate run whose server fell behind the arrivals) and long enough for its load
// (SloSpec::min_prompts_per_in_flight); a run too short is rerun longer, and one that cannot be made long
// enough counts as over capacity.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "servelab/tune/load/load.h"
#include "tune/load/load_detail.h"

namespace servelab::tune {

double saturation_tolerance(int num_prompts) {
  return std::max(0.1, 3.0 / std::sqrt(static_cast<double>(std::max(1, num_prompts))));
}

namespace {

/// Request goodput of a run (req/s): "Request goodput (req/s)", else the request throughput (no per-request
/// SLO, e.g. only ITL targets), else 0.
double goodput_of(const std::map<std::string, double>& m) {
  if (auto it = m.find("Request goodput (req/s)"); it != m.end()) return it->second;
  if (auto it = m.find("Request throughput (req/s)"); it != m.end()) return it->second;
  return 0;
}

double metric_or(const std::map<std::string, double>& m, const char* key, double fallback) {
  const auto it = m.find(key);
  return it == m.end() ? fallback : it->second;
}

/// `n` rounded up to two significant digits (1234 → 1300): stable trial keys for longer runs.
int round_up_prompts(double n) {
  if (n <= 100) return static_cast<int>(std::ceil(n));
  const double unit = std::pow(10.0, std::floor(std::log10(n)) - 1);
  return static_cast<int>(std::ceil(n / unit - 1e-9) * unit);
}

/// How a run counts for the search.
enum class Verdict {
  kPass,       ///< steady, every target met
  kFail,       ///< a target missed, or the configuration failed at this load (OOM, crash, ...)
  kAbove,      ///< saturated or too short to be steady: the load is past what the server sustains
  kUndecided,  ///< no verdict (invalid timing, interrupted, runner error, a metric missing): search stops
};

/// State of one SLO search: the runs so far and the bracket.
struct SloRun {
  const Study& study;
  Evaluator& evaluator;
  const CandidateConfig& config;
  SloResult& r;
  int base_prompts = 1000;                                     ///< the scenario's --num-prompts
  std::map<double, std::map<std::string, double>> metrics_at;  ///< value → metrics of its counting run
  std::map<double, std::pair<Verdict, std::optional<double>>> verdict_at;  ///< value → verdict, margin
  bool aborted = false;
  /// The guide's (twin's) goodput load ÷ its highest passing load: where the goodput phase looks first.
  std::optional<double> goodput_prior;
  std::string eval_key;       ///< the configuration's evaluation key (trial keys and records)
  const char* phase = "slo";  ///< the phase its trials are recorded under

  const SloSpec& spec() const { return study.slo; }
  bool concurrency() const { return spec().variable == LoadKind::kConcurrency; }
  bool budget_left() const { return r.runs < spec().max_runs && !aborted; }
  double scale() const { return study.prompts_scale; }
  int max_prompts() const { return std::max(base_prompts, round_up_prompts(spec().max_prompts * scale())); }

  /// Prompts a run with `in_flight` requests in flight needs to be steady (scaled by --prompts-scale).
  double needed_prompts(double in_flight) const {
    return spec().min_prompts_per_in_flight * in_flight * scale();
  }

  /// Prompts to run at `x` with: the scenario's own, or more when the load needs more. A concurrency run
  /// keeps x in flight; a rate run x × the mean E2EL of the nearest run below x (else above) that has one.
  int planned_prompts(double x) const {
    double in_flight = 0;
    if (concurrency()) {
      in_flight = x;
    } else {
      const std::map<std::string, double>* near = nullptr;
      for (const auto& [v, m] : metrics_at)
        if (v <= x || !near) near = &m;
      if (near) in_flight = x * metric_or(*near, "Mean E2EL (ms)", 0) / 1000;
    }
    const double need = needed_prompts(in_flight);
    if (need <= base_prompts) return base_prompts;
    return std::min(round_up_prompts(need), max_prompts());
  }

  /// One run at `x` with `n` prompts, appended to r.probes; its metrics (empty when it failed).
  std::map<std::string, double> run_once(double x, int n, const char* step) {
    SloProbe p;
    p.value = x;
    p.num_prompts = n;
    p.step = step;
    const LoadPoint lp{spec().variable, x, n == base_prompts ? 0 : n};
    const std::string id = load_scenario_id(r.scenario, lp);
    const Evaluation e = evaluator.evaluate(config, {id}, phase);
    r.predicted = r.predicted || e.predicted;
    p.status = e.status;
    p.scenario_id = id;
    if (!e.key.empty()) eval_key = e.key;
    std::map<std::string, double> m;
    if (e.status != TrialStatus::kOk) {
      p.failure = std::string(trial_status_name(e.status)) + ": " + e.reason;
    } else {
      m = mean_metrics(study, evaluator, e, id);
      for (const auto& t : spec().targets) {
        const auto it = m.find(t.label);
        if (it == m.end()) {
          p.failure = fmt::format(
              "the results have no '{}' (bench serve prints P99 by default; add "
              "--metric-percentiles to the scenario for other percentiles)",
              t.label);
          aborted = true;
          m.clear();
          break;
        }
        p.slo_values_ms[t.key] = it->second;
      }
    }
    if (p.failure.empty()) {
      // The run's own count when it reports one (a runner may not honour --num-prompts).
      const double ran = metric_or(m, "Successful requests", 0) + metric_or(m, "Failed requests", 0);
      if (ran >= 1) n = p.num_prompts = static_cast<int>(ran);
      p.goodput_req_s = goodput_of(m);
      const double achieved = metric_or(m, "Request throughput (req/s)", 0);
      const double e2el_s = metric_or(m, "Mean E2EL (ms)", 0) / 1000;
      p.in_flight = concurrency() ? std::min<double>(x, n) : achieved * e2el_s;
      if (!concurrency()) p.saturated = saturated(m, x, n);
      p.passed = margin_of(p) <= 0;
      p.short_run = p.passed && !p.saturated && n + 0.5 < needed_prompts(p.in_flight);
    }
    r.probes.push_back(std::move(p));
    r.runs = static_cast<int>(r.probes.size());
    return m;
  }

  /// SloProbe::saturated of a request-rate run at `x` req/s with `n` prompts and metrics `m`.
  bool saturated(const std::map<std::string, double>& m, double x, int n) const {
    const double span = metric_or(m, kArrivalSpanMetric, 0),
                 backlog = metric_or(m, kBacklogAtLastArrivalMetric, -1);
    const double early_s = metric_or(m, kEarlyE2elMetric, -1) / 1000;
    if (span > 0 && backlog >= 0 && early_s >= 0 && n > 1) {
      // The backlog left at the last arrival. Heavy overload queues the early requests too (their E2EL, hence
      // the reference, grows with the backlog): the TTFT drift between the first and last quarter of arrivals
      // (queueing grows by λ/μ − 1 s per s of arrivals; quarters' midpoints are span/2 apart) catches it.
      const double keeping_up = (n - 1) / span * early_s;  // in flight at a steady state (Little's law)
      const double tol = std::max(spec().tolerance_pct / 100, 3 * std::sqrt(std::max(1.0, keeping_up)) / n);
      const double drift = metric_or(m, kTtftDriftMetric, 0);
      return backlog - keeping_up > tol * n || drift > spec().tolerance_pct / 100 * span / 2;
    }
    const double achieved = metric_or(m, "Request throughput (req/s)", 0);
    const double e2el_s = metric_or(m, "Mean E2EL (ms)", 0) / 1000;
    return achieved < (1 - saturation_tolerance(n)) * n / (n / x + e2el_s);
  }

  double margin_of(const SloProbe& p) const {
    double worst = -std::numeric_limits<double>::infinity();
    for (const auto& t : spec().targets) worst = std::max(worst, p.slo_values_ms.at(t.key) / t.max_ms - 1);
    return worst;
  }

  /// Runs at `x` (reusing an earlier run there), longer while a passing run is too short for its load;
  /// records and returns its verdict and SLO margin.
  std::pair<Verdict, std::optional<double>> probe(double x, const char* step) {
    if (auto it = verdict_at.find(x); it != verdict_at.end()) return it->second;
    int n = planned_prompts(x);
    std::map<std::string, double> m = run_once(x, n, step);
    for (int longer = 0; longer < 3; ++longer) {
      const SloProbe& p = r.probes.back();
      if (!p.short_run) break;  // short_run: it passed, was not saturated, and is too short
      // In flight measured on a short run falls short of the steady value (the queue was still filling): a
      // quarter more than it asks for, so one rerun is usually enough.
      const int next = std::min(round_up_prompts(1.25 * needed_prompts(p.in_flight)), max_prompts());
      if (next <= n || !budget_left()) break;  // cannot be made long enough: stays short
      r.probes.back().superseded = true;
      r.probes.back().short_run = false;
      n = next;
      m = run_once(x, n, "longer");
    }
    const SloProbe& p = r.probes.back();
    Verdict v = Verdict::kFail;
    std::optional<double> margin;
    if (!p.failure.empty()) {
      v = aborted || !trial_status_judges_config(p.status) ? Verdict::kUndecided : Verdict::kFail;
    } else {
      margin = margin_of(p);
      metrics_at[x] = m;
      v = p.saturated || p.short_run ? Verdict::kAbove : p.passed ? Verdict::kPass : Verdict::kFail;
    }
    if (v == Verdict::kUndecided) {
      aborted = true;
      r.note = fmt::format("the run at {} ended {}; the search stops without a verdict on this configuration",
                           LoadPoint{spec().variable, x}.text(), p.failure);
    }
    if (v == Verdict::kAbove) margin.reset();  // its SLO margin says nothing about the bracket's end
    return verdict_at[x] = {v, margin};
  }

  double lo = 0, hi = 0;  ///< highest passing, lowest failing value so far (0: none yet)
  std::optional<double> m_lo, m_hi;

  bool bracket(double x0, double factor);
  void refine();
  void refine_goodput();
  bool share_meeting_falls(double x) const;
};

/// From `x0`: ×`factor` (then ×2) while runs pass, ÷ while they fail, until [lo, hi] brackets the answer.
/// Returns false when the search is over (answer found at max_value, nothing passes, or out of runs).
bool SloRun::bracket(double x0, double factor) {
  const LoadKind var = spec().variable;
  auto [v0, m0] = probe(x0, "start");
  if (aborted) return false;
  if (v0 == Verdict::kPass) {
    lo = x0, m_lo = m0;
    for (;; factor = 2.0) {
      const double x = round_value(var, std::min(lo * factor, spec().max_value));
      if (x <= lo) {
        r.note = fmt::format("meets every SLO up to max_value = {:g}", spec().max_value);
        return false;
      }
      if (!budget_left()) return false;
      const auto [v, m] = probe(x, "bracket");
      if (aborted) return false;
      if (v != Verdict::kPass) return hi = x, m_hi = m, true;
      lo = x, m_lo = m;
    }
  }
  hi = x0, m_hi = m0;
  for (;; factor = 2.0) {
    const double x = round_value(var, std::max(hi / factor, spec().min_value));
    if (x >= hi) {
      const SloProbe& last = r.probes.back();
      r.note =
          fmt::format("no {} down to min_value = {:g} meets the SLOs{}",
                      var == LoadKind::kConcurrency ? "concurrency" : "request rate", spec().min_value,
                      last.saturated   ? fmt::format(" in steady state ({}: saturated, {:.3g} req/s served)",
                                                     LoadPoint{var, last.value}.text(), last.goodput_req_s)
                      : last.short_run ? " in steady state (its runs could not be made long enough)"
                                       : "");
      return false;
    }
    if (!budget_left()) return false;
    const auto [v, m] = probe(x, "bracket");
    if (aborted) return false;
    if (v == Verdict::kPass) return lo = x, m_lo = m, true;
    hi = x, m_hi = m;
  }
}

/// Inside (lo, hi): the root of the margin's chord, kept a tolerance off both ends, to the tolerance. A
/// convex margin would creep a tolerance step at a time from one end: when an end has been kept for two runs
/// in a row, the next run bisects the bracket (geometric mean) instead, as Brent's method falls back to
/// bisection. (Illinois's halving of the kept end's margin still crept on the shipped SLO study's vLLM
/// search: 8.78, 9.22, 9.70, 10.19 req/s against a failure at 10.7, and its 12 runs ran out 5.005% apart.)
void SloRun::refine() {
  const LoadKind var = spec().variable;
  const double tol = 1 + spec().tolerance_pct / 100;
  int lo_kept = 0, hi_kept = 0;  // runs in a row that moved the other end
  while (hi / lo > tol * (1 + 1e-9) && !(var == LoadKind::kConcurrency && hi - lo <= 1)) {
    if (!budget_left()) {
      if (!aborted)
        r.note =
            fmt::format("stopped at max_runs = {} with the answer in [{:g}, {:g})", spec().max_runs, lo, hi);
      return;
    }
    const double a = lo * tol, b = hi / tol;
    double x = std::sqrt(lo * hi);
    if (m_lo && m_hi && *m_hi > *m_lo && lo_kept < 2 && hi_kept < 2)
      x = lo + (hi - lo) * (-*m_lo) / (*m_hi - *m_lo);
    x = round_value(var, a < b ? std::clamp(x, a, b) : std::sqrt(lo * hi));
    if (var == LoadKind::kConcurrency) x = std::clamp(x, lo + 1, hi - 1);  // rounding must not reach an end
    if (x <= lo || x >= hi) return;
    const auto [v, m] = probe(x, "refine");
    if (aborted) return;
    if (v == Verdict::kPass)
      lo = x, m_lo = m, ++hi_kept, lo_kept = 0;
    else
      hi = x, m_hi = m, ++lo_kept, hi_kept = 0;
  }
}

/// The share of a steady passing run's requests that met every SLO one by one (request goodput ÷ achieved
/// request rate) fell by more than the tolerance from the nearest steady passing run below `x`: goodput =
/// rate × that share can then peak between them.
bool SloRun::share_meeting_falls(double x) const {
  const auto share = [&](double v) {
    const double rate = metric_or(metrics_at.at(v), "Request throughput (req/s)", 0);
    double g = 0;
    for (const auto& p : r.probes)
      if (p.value == v && p.passed && p.steady()) g = p.goodput_req_s;
    return rate > 0 ? g / rate : 0.0;
  };
  std::optional<double> below;
  for (const auto& p : r.probes)
    if (p.value < x && p.passed && p.steady() && metrics_at.count(p.value) && (!below || p.value > *below))
      below = p.value;
  return below && share(x) * (1 + spec().tolerance_pct / 100) < share(*below);
}

/// Below the highest passing load, goodput can peak lower (a mean-TPOT bound the run meets while fewer of
/// its requests meet it one by one). While the most goodput was served below `lo`, halve (geometrically) the
/// wider gap between that load and its nearest tried neighbours; while it was served at `lo` itself but the
/// share of requests meeting the SLOs fell on the way there (share_meeting_falls), halve the gap below it.
/// Until the gaps are within the tolerance (concurrency: adjacent integers) or the runs are spent.
void SloRun::refine_goodput() {
  const LoadKind var = spec().variable;
  const double tol = 1 + spec().tolerance_pct / 100;
  if (goodput_prior && *goodput_prior * tol < 1 && budget_left()) {  // the twin's curve as the prior
    const double x = round_value(var, std::max(spec().min_value, lo * *goodput_prior));
    if (!verdict_at.count(x)) probe(x, "goodput");
    if (aborted) return;
  }
  for (;;) {
    double best = 0, best_g = -1;
    for (const auto& p : r.probes)
      if (p.passed && p.steady() &&
          (p.goodput_req_s > best_g || (p.goodput_req_s == best_g && p.value < best)))
        best = p.value, best_g = p.goodput_req_s;
    if (best_g < 0) return;
    const bool at_top = best >= lo;                    // the most goodput at the highest passing load
    if (at_top && !share_meeting_falls(best)) return;  // goodput rises up to the highest passing load
    std::optional<double> below, above;
    for (const auto& [v, _] : verdict_at) {
      if (v < best) below = v;
      if (v > best && !above) above = v;
    }
    const double left = below.value_or(std::max(spec().min_value, best / 2));
    const auto wide = [&](double a, double b) {
      return var == LoadKind::kConcurrency ? b - a > 1 : b / a > tol * (1 + 1e-9);
    };
    const double right = above.value_or(best);  // lo > best was tried unless at the top
    const bool up = !at_top && wide(best, right), down = wide(left, best);
    if (!up && !down) return;
    const bool go_up = up && (!down || right / best >= best / left);
    double x = round_value(var, go_up ? std::sqrt(best * right) : std::sqrt(left * best));
    if (var == LoadKind::kConcurrency)
      x = go_up ? std::clamp(x, best + 1, right - 1)
                : std::clamp(x, std::max(1.0, left + (below ? 1 : 0)), best - 1);
    if (verdict_at.count(x) || x <= 0) return;  // nothing left to narrow at this resolution
    if (!budget_left()) {
      if (!aborted) {
        r.note = fmt::format("stopped at max_runs = {} while narrowing the goodput peak near {}",
                             spec().max_runs, LoadPoint{var, best}.text());
        // A run that served more but did not count (too short, or saturated) says where the peak may be
        // (new-user trial: 3.88 req/s reported at 7.619 beside a short run at 5.521 that served 5.15).
        const SloProbe* more = nullptr;
        for (const auto& p : r.probes)
          if (p.passed && !p.steady() && !p.superseded && p.failure.empty() && p.goodput_req_s > best_g &&
              (!more || p.goodput_req_s > more->goodput_req_s))
            more = &p;
        if (more)
          r.note += fmt::format(
              "; the run at {} served {:.3g} req/s of goodput but does not count ({}): the peak may lie "
              "there",
              LoadPoint{var, more->value}.text(), more->goodput_req_s,
              more->saturated ? "saturated" : "too short for its load");
      }
      return;
    }
    probe(x, "goodput");
    if (aborted) return;
  }
}

}  // namespace

namespace {

/// The SLO search proper (slo_search without the twin's goodput band); `phase` names its trials.
SloResult search_once(const Study& study, Evaluator& evaluator, const CandidateConfig& config,
                      const char* phase) {
  SloResult r;
  const CandidateConfig cfg = normalize(study, config);
  r.engine = cfg.engine;
  r.config_key = config_key(study, cfg);
  r.label = config_label(study, cfg);
  r.scenario = study.slo.scenario;
  r.variable = study.slo.variable;
  const SloSpec& spec = study.slo;
  if (spec.targets.empty()) return r;
  double x0 = spec.start.value_or(1.0);
  bool guided = false;
  std::optional<double> goodput_prior;
  if (!spec.start && !evaluator.predicts() && evaluator.load_guide()) {
    const SloResult g = search_once(study, *evaluator.load_guide(), cfg, "slo");
    r.twin_runs = g.runs;
    if (g.found) {
      r.twin_start = g.max_passing;
      x0 = g.max_passing;
      guided = true;
      if (g.goodput_found) goodput_prior = g.goodput_at / g.max_passing;
    }
  }
  x0 = round_value(spec.variable, std::clamp(x0, spec.min_value, spec.max_value));
  // The engine stays up between the probes of this search (--target local) and is stopped when it ends,
  // however it ends (Interrupted included).
  struct KeepEngine {
    Evaluator& ev;
    ~KeepEngine() {
      try {
        ev.set_keep_engine(false);
      } catch (...) {  // a destructor must not throw; the runner's own destructor still stops the engine
      }
    }
  } keep{evaluator};
  evaluator.set_keep_engine(true);
  SloRun run{study, evaluator, cfg, r};
  run.phase = phase;
  run.base_prompts = scenario_num_prompts(study.scenario(r.scenario));
  run.goodput_prior = goodput_prior;
  if (run.bracket(x0, guided ? 1.25 : 2.0)) run.refine();
  if (run.lo > 0 && !run.aborted) run.refine_goodput();
  if (run.lo == 0 || run.aborted) {  // nothing passed, or a run without a verdict: no answer, no goodput
    if (r.note.empty()) r.note = fmt::format("no bracket within max_runs = {}", spec.max_runs);
    return r;
  }
  r.found = true;
  r.max_passing = run.lo;
  if (run.hi > 0)
    r.min_failing = run.hi;
  else if (r.note.empty())
    r.note = fmt::format("max_runs = {} reached before any value failed: the answer is ≥ {:g}", spec.max_runs,
                         run.lo);
  choose_goodput_point(r, run.metrics_at);
  if (r.goodput_found)
    for (const auto& p : r.probes)
      if (p.value == r.goodput_at && p.steady() && p.passed) {
        for (const auto& m : repeat_metrics(study, evaluator, run.eval_key, p.scenario_id))
          r.goodput_repeats_req_s.push_back(goodput_of(m));
        break;
      }
  return r;
}

/// The twin's band (± %) on the metric an SLO target bounds: TTFT for ttft, TPOT for tpot and itl, the wider
/// of the two for e2el; nullopt when the prediction carries none.
std::optional<double> target_band_pct(const SloTarget& t, const std::map<std::string, double>& m) {
  const auto get = [&](const char* k) -> std::optional<double> {
    const auto it = m.find(k);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  if (t.metric == "ttft") return get(kBandTtftMetric);
  if (t.metric == "tpot" || t.metric == "itl") return get(kBandTpotMetric);
  const auto a = get(kBandTtftMetric), b = get(kBandTpotMetric);
  if (!a || !b) return std::nullopt;
  return std::max(*a, *b);
}

/// `study` with every SLO bound divided by (1 + sign × band of its metric): the bounds the twin's own
/// predictions must meet for the true latencies to meet the stated ones when the twin is off by its band
/// (sign +1: latencies under-predicted; −1: over-predicted, the factor floored at 0.1). Nullopt when a
/// target's metric has no band.
std::optional<Study> latency_shifted(const Study& study, const SloResult& r, double sign) {
  Study shifted = study;
  for (SloTarget& t : shifted.slo.targets) {
    const auto band = target_band_pct(t, r.metrics);
    if (!band) return std::nullopt;
    t.max_ms /= std::max(0.1, 1 + sign * *band / 100);
  }
  shifted.slo.start = std::clamp(r.goodput_at, shifted.slo.min_value, shifted.slo.max_value);
  return shifted;
}

/// Sets `r`'s goodput band from its two ends (req/s): goodput_low_req_s, goodput_high_req_s and
/// goodput_band_pct (the larger distance from the goodput, in % of it).
void set_goodput_band(SloResult& r, double low_req_s, double high_req_s) {
  r.goodput_low_req_s = low_req_s;
  r.goodput_high_req_s = high_req_s;
  const double g = r.request_goodput_req_s;
  r.goodput_band_pct = std::max(g - low_req_s, high_req_s - g) / g * 100;
}

/// The twin's band on a predicted goodput (issue 30 §2), propagated from its TTFT and TPOT bands: the SLO
/// search again with the bounds shifted by each metric's band both ways (latency_shifted), on the twin's
/// runner with each shifted study's own --goodput bounds (so each run counts its requests against the
/// shifted bounds too); these runs are not the study's trials (no store, no progress). Sets
/// goodput_low_req_s, goodput_high_req_s and goodput_band_pct (the larger distance from the goodput, in % of
/// it); slo_search then widens it (widen_to_throughput_band).
void propagate_goodput_band(const Study& study, const Evaluator& twin, const CandidateConfig& config,
                            SloResult& r) {
  const auto low = latency_shifted(study, r, +1), high = latency_shifted(study, r, -1);
  if (!low || !high || !(r.request_goodput_req_s > 0)) return;
  const auto search = [&](const Study& shifted) {
    Evaluator ev(shifted, twin.runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
    return search_once(shifted, ev, config, "slo-band");
  };
  const SloResult lo = search(*low), hi = search(*high);
  set_goodput_band(r, lo.goodput_found ? std::min(lo.request_goodput_req_s, r.request_goodput_req_s) : 0,
                   std::max(hi.goodput_found ? hi.request_goodput_req_s : 0, r.request_goodput_req_s));
}

/// Widens `r`'s goodput band to at least the throughput band (kBandTokSMetric) at the goodput's load point:
/// the shifted bounds move the latencies, never the capacity (new-user trial: a top pick far under its TPOT
/// bound whose p99 TTFT jumps past it at saturation read ±3% beside a ±25% throughput band), and requests
/// served per second scale with the throughput. Idempotent (min / max), so a band stored by an older build
/// (--resume, `servelab report`) is widened as a fresh one is.
void widen_to_throughput_band(SloResult& r) {
  const auto it = r.metrics.find(kBandTokSMetric);
  if (!r.goodput_band_pct || it == r.metrics.end() || !(it->second > 0)) return;
  const double g = r.request_goodput_req_s;
  set_goodput_band(r, std::min(r.goodput_low_req_s, g * std::max(0.0, 1 - it->second / 100)),
                   std::max(r.goodput_high_req_s, g * (1 + it->second / 100)));
}

}  // namespace

SloResult slo_search(const Study& study, Evaluator& evaluator, const CandidateConfig& config) {
  SloResult r = search_once(study, evaluator, config, "slo");
  if (!r.goodput_found || !evaluator.predicts()) return r;
  // The band's searches are not stored trials: `servelab report` (a replay, with no twin to run them on) and
  // a resumed run take the band the run stored, when it was computed around this goodput.
  const GoodputBandRecord* b = evaluator.goodput_band(r.config_key, r.scenario);
  if (b && b->goodput_req_s == r.request_goodput_req_s) {
    set_goodput_band(r, b->low_req_s, b->high_req_s);
    widen_to_throughput_band(r);
    return r;
  }
  if (evaluator.replays()) return r;
  propagate_goodput_band(study, evaluator, config, r);
  widen_to_throughput_band(r);
  if (r.goodput_band_pct)
    evaluator.record_goodput_band(GoodputBandRecord{r.config_key, r.scenario, r.request_goodput_req_s,
                                                    r.goodput_low_req_s, r.goodput_high_req_s});
  return r;
}

void choose_goodput_point(SloResult& r, const std::map<double, std::map<std::string, double>>& metrics_at) {
  r.goodput_found = false;
  r.goodput_at = r.request_goodput_req_s = r.token_goodput_tok_s = 0;
  r.metrics.clear();
  const SloProbe* best = nullptr;
  int unsteady = 0;
  for (const auto& p : r.probes) {
    if (!p.passed || !metrics_at.count(p.value) || p.superseded) continue;
    if (!p.steady()) {
      ++unsteady;
      continue;
    }
    if (!best || p.goodput_req_s > best->goodput_req_s) best = &p;  // ties: the first tried
  }
  if (!best) {
    if (unsteady > 0) {
      const std::string why =
          "every load meeting the SLOs was saturated or too short to be steady: no goodput to report";
      r.note = r.note.empty() ? why : r.note + "; " + why;
    }
    return;
  }
  r.goodput_found = true;
  r.goodput_at = best->value;
  r.metrics = metrics_at.at(best->value);
  r.request_goodput_req_s = best->goodput_req_s;
  const auto get = [&](const char* k) { return r.metrics.count(k) ? r.metrics.at(k) : 0.0; };
  const double completed = get("Successful requests");
  r.token_goodput_tok_s =
      completed > 0 ? r.request_goodput_req_s * get("Total generated tokens") / completed : 0;
}

}  // namespace servelab::tune
