// Load points as scenarios, load curves and the SLO search (see load.h).
#include "servelab/tune/load.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace servelab::tune {

std::string LoadPoint::tag() const {
  return kind == LoadKind::kConcurrency ? fmt::format("c{}", static_cast<long>(value))
                                        : fmt::format("r{:g}", value);
}

std::string LoadPoint::text() const {
  return kind == LoadKind::kConcurrency ? fmt::format("concurrency {}", static_cast<long>(value))
                                        : fmt::format("{:g} req/s", value);
}

std::vector<LoadPoint> LoadSpec::points() const {
  std::vector<LoadPoint> out;
  for (int c : concurrency) out.push_back({LoadKind::kConcurrency, double(c)});
  for (double r : request_rate) out.push_back({LoadKind::kRequestRate, r});
  return out;
}

std::string load_scenario_id(const std::string& scenario, const LoadPoint& load) {
  return scenario + "@" + load.tag();
}

std::optional<std::pair<std::string, LoadPoint>> split_load_scenario_id(const std::string& id) {
  const auto at = id.rfind('@');
  if (at == std::string::npos || at + 2 > id.size()) return std::nullopt;
  const char kind = id[at + 1];
  if (kind != 'c' && kind != 'r') return std::nullopt;
  const std::string num = id.substr(at + 2);
  double v = 0;
  try {
    size_t used = 0;
    v = std::stod(num, &used);
    if (used != num.size() || !(v > 0)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return std::pair{id.substr(0, at),
                   LoadPoint{kind == 'c' ? LoadKind::kConcurrency : LoadKind::kRequestRate, v}};
}

namespace {

/// `args` without `flag V` / `flag=V`.
std::vector<std::string> without_flag(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;
      continue;
    }
    if (args[i].rfind(flag + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(),
                     [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

/// Rounds a searched value to what a run can take: an integer concurrency, a rate to 4 significant digits
/// (stable trial keys on --resume).
double round_value(LoadKind kind, double x) {
  if (kind == LoadKind::kConcurrency) return std::max(1.0, std::round(x));
  return std::stod(fmt::format("{:.4g}", x));
}

/// Mean over repeats of every metric of scenario `id` of the evaluation's config: per repeat the latest
/// result the evaluator holds (as Evaluator::evaluate finds it, whichever trial produced it).
std::map<std::string, double> mean_metrics(const Study& study, const Evaluator& evaluator,
                                           const Evaluation& e, const std::string& id) {
  const std::string prefix = evaluator.tag() + "|" + e.key + "|";
  std::map<std::string, std::pair<double, int>> acc;
  const auto& records = evaluator.records();
  for (int rep = 0; rep < study.repeats; ++rep) {
    const ScenarioResult* found = nullptr;
    for (auto it = records.rbegin(); it != records.rend() && !found; ++it) {
      if (it->repeat != rep || it->trial_key.rfind(prefix, 0) != 0) continue;
      for (const auto& sc : it->outcome.scenarios)
        if (sc.scenario_id == id) found = &sc;
    }
    if (found)
      for (const auto& [k, v] : found->metrics) acc[k].first += v, acc[k].second += 1;
  }
  std::map<std::string, double> out;
  for (const auto& [k, s] : acc) out[k] = s.first / s.second;
  return out;
}

}  // namespace

Scenario load_scenario(const Study& study, const std::string& id) {
  const auto split = split_load_scenario_id(id);
  if (!split) return study.scenario(id);
  Scenario sc = study.scenario(split->first);
  const LoadPoint& lp = split->second;
  sc.id = id;
  sc.args = without_flag(without_flag(sc.args, "--max-concurrency"), "--request-rate");
  if (lp.kind == LoadKind::kConcurrency)
    sc.args.insert(sc.args.end(), {"--max-concurrency", fmt::format("{}", long(lp.value))});
  else
    sc.args.insert(sc.args.end(), {"--request-rate", fmt::format("{:g}", lp.value)});
  if (!has_flag(sc.args, "--goodput") && study.objective.slo_ms.empty()) {
    std::map<std::string, double> per_request;  // vLLM's --goodput keys; the strictest target per metric
    for (const auto& t : study.slo.targets) {
      if (t.metric == "itl") continue;  // vLLM's goodput has no per-request ITL
      auto [it, fresh] = per_request.emplace(t.metric, t.max_ms);
      if (!fresh) it->second = std::min(it->second, t.max_ms);
    }
    for (const auto& [k, v] : per_request)
      sc.args.insert(sc.args.end(), {"--goodput", fmt::format("{}:{:g}", k, v)});
  }
  return sc;
}

std::vector<LoadPoint> load_points(const Study& study, const Scenario& scenario) {
  return scenario.load ? scenario.load->points() : study.load.points();
}

std::string load_analysis_scenario(const Study& study) {
  return study.slo.targets.empty() ? study.objective.scenarios.front() : study.slo.scenario;
}

bool load_objective_is_primary(const Study& study) {
  if (study.objectives.empty()) return false;
  const auto k = study.objectives.front().kind;
  return k == ObjectiveSpec::Kind::kSloGoodput || k == ObjectiveSpec::Kind::kTokensPerGpu;
}

std::string primary_objective_label(const Study& study) {
  if (!load_objective_is_primary(study)) return study.objective.metric;
  const ObjectiveSpec& o = study.objectives.front();
  if (o.kind == ObjectiveSpec::Kind::kSloGoodput) return "Request goodput under the SLOs (req/s)";
  return fmt::format("Output tok/s per GPU at ≥ {:g} tok/s per user", o.min_tokens_per_s_per_user);
}

LoadCurve measure_curve(const Study& study, Evaluator& evaluator, const CandidateConfig& config,
                        const std::string& scenario) {
  LoadCurve curve;
  curve.engine = config.engine;
  curve.config_key = config_key(study, normalize(study, config));
  curve.label = config_label(study, normalize(study, config));
  curve.scenario = scenario;
  const std::vector<LoadPoint> points = load_points(study, study.scenario(scenario));
  if (points.empty()) return curve;
  std::vector<std::string> ids;
  for (const LoadPoint& lp : points) ids.push_back(load_scenario_id(scenario, lp));
  // One evaluation of every point: the points a cache lacks run as one trial (one engine launch).
  const Evaluation e = evaluator.evaluate(config, ids, "load");
  for (size_t i = 0; i < points.size(); ++i) {
    LoadPointResult p;
    p.load = points[i];
    p.scenario_id = ids[i];
    p.predicted = e.predicted;
    const LoadPoint& lp = p.load;
    if (auto f = e.scenario_failure.find(p.scenario_id); f != e.scenario_failure.end()) {
      p.status = e.status == TrialStatus::kOk ? TrialStatus::kError : e.status;
      p.reason = f->second;
    } else if (p.metrics = mean_metrics(study, evaluator, e, p.scenario_id); p.metrics.empty()) {
      p.status =
          e.status == TrialStatus::kOk ? TrialStatus::kError : e.status;  // e.g. rejected before launch
      p.reason = e.reason.empty() ? "no result" : e.reason;
    } else {
      const double out = p.metrics.count("Output token throughput (tok/s)")
                             ? p.metrics.at("Output token throughput (tok/s)")
                             : 0;
      p.output_tok_s_per_gpu = out / study.hardware.gpu_count;
      if (lp.kind == LoadKind::kConcurrency) p.output_tok_s_per_user = out / lp.value;
    }
    curve.points.push_back(std::move(p));
  }
  return curve;
}

namespace {

/// Request goodput of a run (req/s): "Request goodput (req/s)", else the request throughput (no per-request
/// SLO, e.g. only ITL targets), else 0.
double goodput_of(const std::map<std::string, double>& m) {
  if (auto it = m.find("Request goodput (req/s)"); it != m.end()) return it->second;
  if (auto it = m.find("Request throughput (req/s)"); it != m.end()) return it->second;
  return 0;
}

/// State of one SLO search: the probes so far and the bracket.
struct SloRun {
  const Study& study;
  Evaluator& evaluator;
  const CandidateConfig& config;
  SloResult& r;
  std::map<double, std::map<std::string, double>> metrics_at;  ///< value → metrics of passing runs
  bool aborted = false;

  /// Runs at `x`; returns its margin (max over targets of value/target − 1), or nullopt when the run failed.
  std::optional<double> probe(double x, const char* step) {
    for (const auto& p : r.probes)
      if (p.value == x) return p.failure.empty() ? std::optional<double>(margin_of(p)) : std::nullopt;
    SloProbe p;
    p.value = x;
    p.step = step;
    const std::string id = load_scenario_id(r.scenario, LoadPoint{r.variable, x});
    const Evaluation e = evaluator.evaluate(config, {id}, "slo");
    r.predicted = r.predicted || e.predicted;
    std::optional<double> margin;
    p.status = e.status;
    if (e.status != TrialStatus::kOk) {
      p.failure = std::string(trial_status_name(e.status)) + ": " + e.reason;
    } else {
      const auto m = mean_metrics(study, evaluator, e, id);
      for (const auto& t : study.slo.targets) {
        const auto it = m.find(t.label);
        if (it == m.end()) {
          p.failure = fmt::format(
              "the results have no '{}' (bench serve prints P99 by default; add "
              "--metric-percentiles to the scenario for other percentiles)",
              t.label);
          aborted = true;
          break;
        }
        p.slo_values_ms[t.key] = it->second;
      }
      if (p.failure.empty()) {
        margin = margin_of(p);
        metrics_at[x] = m;
        p.goodput_req_s = goodput_of(m);
        const auto achieved = m.find("Request throughput (req/s)");
        p.saturated = r.variable == LoadKind::kRequestRate && achieved != m.end() &&
                      achieved->second < kSaturatedAchievedFraction * x;
      }
    }
    p.passed = margin && *margin <= 0;
    r.probes.push_back(std::move(p));
    r.runs = static_cast<int>(r.probes.size());
    return margin;
  }

  double margin_of(const SloProbe& p) const {
    double worst = -std::numeric_limits<double>::infinity();
    for (const auto& t : study.slo.targets) worst = std::max(worst, p.slo_values_ms.at(t.key) / t.max_ms - 1);
    return worst;
  }
  bool budget_left() const { return r.runs < study.slo.max_runs && !aborted; }

  double lo = 0, hi = 0;  ///< highest passing, lowest failing value so far (0: none yet)
  std::optional<double> m_lo, m_hi;

  static bool passes(const std::optional<double>& m) { return m && *m <= 0; }

  /// From `x0`: ×`factor` (then ×2) while runs pass, ÷ while they fail, until [lo, hi] brackets the answer.
  /// Returns false when the search is over (answer found at max_value, nothing passes, or out of runs).
  bool bracket(double x0, double factor) {
    const SloSpec& spec = study.slo;
    const LoadKind var = spec.variable;
    const std::optional<double> m0 = probe(x0, "start");
    if (aborted) return false;
    if (passes(m0)) {
      lo = x0, m_lo = m0;
      for (;; factor = 2.0) {
        const double x = round_value(var, std::min(lo * factor, spec.max_value));
        if (x <= lo) {
          r.note = fmt::format("meets every SLO up to max_value = {:g}", spec.max_value);
          return false;
        }
        if (!budget_left()) return false;
        const auto m = probe(x, "bracket");
        if (!passes(m)) return hi = x, m_hi = m, true;
        lo = x, m_lo = m;
      }
    }
    hi = x0, m_hi = m0;
    for (;; factor = 2.0) {
      const double x = round_value(var, std::max(hi / factor, spec.min_value));
      if (x >= hi) {
        r.note = fmt::format("no {} down to min_value = {:g} meets the SLOs",
                             var == LoadKind::kConcurrency ? "concurrency" : "request rate", spec.min_value);
        return false;
      }
      if (!budget_left()) return false;
      const auto m = probe(x, "bracket");
      if (passes(m)) return lo = x, m_lo = m, true;
      hi = x, m_hi = m;
    }
  }

  /// Inside (lo, hi): the root of the margin's chord, kept a tolerance off both ends, to the tolerance.
  void refine() {
    const SloSpec& spec = study.slo;
    const LoadKind var = spec.variable;
    const double tol = 1 + spec.tolerance_pct / 100;
    while (hi / lo > tol * (1 + 1e-9) && !(var == LoadKind::kConcurrency && hi - lo <= 1)) {
      if (!budget_left()) {
        r.note = aborted ? r.probes.back().failure
                         : fmt::format("stopped at max_runs = {} with the answer in [{:g}, {:g})",
                                       spec.max_runs, lo, hi);
        return;
      }
      const double a = lo * tol, b = hi / tol;
      double x = std::sqrt(lo * hi);
      if (m_lo && m_hi && *m_hi > *m_lo) x = lo + (hi - lo) * (-*m_lo) / (*m_hi - *m_lo);
      x = round_value(var, a < b ? std::clamp(x, a, b) : std::sqrt(lo * hi));
      if (var == LoadKind::kConcurrency) x = std::clamp(x, lo + 1, hi - 1);  // rounding must not reach an end
      if (x <= lo || x >= hi) return;
      const auto m = probe(x, "refine");
      if (passes(m))
        lo = x, m_lo = m;
      else
        hi = x, m_hi = m;
    }
  }
};

}  // namespace

SloResult slo_search(const Study& study, Evaluator& evaluator, const CandidateConfig& config) {
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
  if (!spec.start && evaluator.tag() != "twin" && evaluator.load_guide()) {
    const SloResult g = slo_search(study, *evaluator.load_guide(), cfg);
    r.twin_runs = g.runs;
    if (g.found) {
      r.twin_start = g.max_passing;
      x0 = g.max_passing;
      guided = true;
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
  SloRun run{study, evaluator, cfg, r, {}, false};
  if (run.bracket(x0, guided ? 1.25 : 2.0)) run.refine();
  if (run.aborted) r.note = r.probes.back().failure;
  if (run.lo == 0) {
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
  return r;
}

void choose_goodput_point(SloResult& r, const std::map<double, std::map<std::string, double>>& metrics_at) {
  r.goodput_found = false;
  r.goodput_at = r.request_goodput_req_s = r.token_goodput_tok_s = 0;
  r.metrics.clear();
  const SloProbe* best = nullptr;
  int saturated = 0;
  for (const auto& p : r.probes) {
    if (!p.passed || !metrics_at.count(p.value)) continue;
    if (p.saturated) {
      ++saturated;
      continue;
    }
    if (!best || p.goodput_req_s > best->goodput_req_s) best = &p;  // ties: the first tried
  }
  if (!best) {
    if (saturated > 0) {
      const std::string why = fmt::format(
          "every load meeting the SLOs was saturated (achieved request rate < {:g} × offered): no goodput to "
          "report",
          kSaturatedAchievedFraction);
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
