// The load analysis after the search (Pareto front, objectives, cost) and the search's hook for a load
// objective as the primary one (see load.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "servelab/tune/load/load.h"
#include "servelab/tune/search/evaluations.h"

namespace servelab::tune {

std::vector<bool> pareto_front_max(const std::vector<std::pair<double, double>>& pts) {
  std::vector<bool> on(pts.size(), true);
  for (size_t i = 0; i < pts.size(); ++i)
    for (size_t j = 0; j < pts.size() && on[i]; ++j)
      if (j != i && pts[j].first >= pts[i].first && pts[j].second >= pts[i].second &&
          (pts[j].first > pts[i].first || pts[j].second > pts[i].second))
        on[i] = false;
  return on;
}

double usd_per_million_tokens(double usd_per_gpu_hour, int gpus, double tok_s) {
  if (!(tok_s > 0)) return 0;
  return usd_per_gpu_hour * gpus / 3600.0 / tok_s * 1e6;
}

namespace {

/// Highest output tok/s per GPU over the curve's concurrency points reaching `floor` tok/s per user.
const LoadPointResult* best_at_user_floor(const LoadCurve& c, double floor) {
  const LoadPointResult* best = nullptr;
  for (const auto& p : c.points)
    if (p.status == TrialStatus::kOk && p.load.kind == LoadKind::kConcurrency &&
        p.output_tok_s_per_user >= floor && (!best || p.output_tok_s_per_gpu > best->output_tok_s_per_gpu))
      best = &p;
  return best;
}

/// The curve point with the highest output tok/s (nullptr when none succeeded).
const LoadPointResult* max_throughput_point(const LoadCurve& c) {
  const LoadPointResult* best = nullptr;
  auto out = [](const LoadPointResult& p) {
    auto it = p.metrics.find("Output token throughput (tok/s)");
    return it == p.metrics.end() ? 0.0 : it->second;
  };
  for (const auto& p : c.points)
    if (p.status == TrialStatus::kOk && (!best || out(p) > out(*best))) best = &p;
  return best;
}

double metric_or_zero(const std::map<std::string, double>& m, const char* k) {
  auto it = m.find(k);
  return it == m.end() ? 0.0 : it->second;
}

/// The slo_goodput objective of a configuration, from its SLO row alone.
ObjectiveValue goodput_value(const SloResult& r) {
  ObjectiveValue v;
  v.config_key = r.config_key, v.engine = r.engine, v.label = r.label;
  v.feasible = r.goodput_found;
  if (v.feasible) {
    v.value = r.request_goodput_req_s;
    v.at = LoadPoint{r.variable, r.goodput_at}.text();
  } else {
    v.why = r.note.empty() ? "no load meets the SLOs" : r.note;
  }
  return v;
}

ObjectiveValue objective_value_of(const Study& study, const ObjectiveSpec& o, const LoadCurve& curve,
                                  const SloResult* slo, const Evaluation& as_written) {
  ObjectiveValue v;
  v.config_key = curve.config_key, v.engine = curve.engine, v.label = curve.label;
  using K = ObjectiveSpec::Kind;
  switch (o.kind) {
    case K::kThroughput: {
      const auto it = as_written.first.find(curve.scenario);
      v.feasible = it != as_written.first.end() && it->second.metrics.count("Total Token throughput (tok/s)");
      if (v.feasible) v.value = it->second.metrics.at("Total Token throughput (tok/s)");
      v.at = "scenario as written";
      if (!v.feasible) v.why = "no result for " + curve.scenario;
      break;
    }
    case K::kSloGoodput:
      if (slo) {
        v = goodput_value(*slo);
        v.engine = curve.engine, v.label = curve.label;
      } else {
        v.why = "no SLO search";
      }
      break;
    case K::kTokensPerGpu:
      if (const LoadPointResult* p = best_at_user_floor(curve, o.min_tokens_per_s_per_user)) {
        v.feasible = true;
        v.value = p->output_tok_s_per_gpu;
        v.at = p->load.text();
      } else {
        v.why = fmt::format("no concurrency point reaches {:g} tok/s per user", o.min_tokens_per_s_per_user);
      }
      break;
    case K::kMinLatency: {
      const LoadPointResult* at = nullptr;
      for (const auto& p : curve.points)
        if (p.load.kind == LoadKind::kConcurrency && p.load.value <= o.max_concurrency &&
            (!at || p.load.value > at->load.value))
          at = &p;
      if (at && at->status == TrialStatus::kOk && at->metrics.count(o.metric)) {
        v.feasible = true;
        v.value = at->metrics.at(o.metric);
        v.at = at->load.text();
      } else {
        v.why = at ? (at->status != TrialStatus::kOk ? "failed at " + at->load.text() + ": " + at->reason
                                                     : "no " + o.metric + " in the results")
                   : fmt::format("no swept concurrency ≤ {}", o.max_concurrency);
      }
      break;
    }
    case K::kCost: {
      const LoadPointResult* p = max_throughput_point(curve);
      const auto it = as_written.first.find(curve.scenario);
      double out = p ? metric_or_zero(p->metrics, "Output token throughput (tok/s)") : 0;
      v.at = p ? p->load.text() : "";
      if (it != as_written.first.end()) {
        const double w = metric_or_zero(it->second.metrics, "Output token throughput (tok/s)");
        if (w > out) out = w, v.at = "scenario as written";
      }
      v.feasible = out > 0 && study.cost;
      if (v.feasible)
        v.value = usd_per_million_tokens(study.cost->usd_per_gpu_hour, study.hardware.gpu_count, out);
      else
        v.why = "no output throughput";
      break;
    }
  }
  return v;
}

std::string objective_title(const ObjectiveSpec& o, std::string* unit) {
  using K = ObjectiveSpec::Kind;
  switch (o.kind) {
    case K::kThroughput:
      *unit = "tok/s";
      return "max total token throughput";
    case K::kSloGoodput:
      *unit = "req/s";
      return "max request goodput under the SLOs";
    case K::kTokensPerGpu:
      *unit = "output tok/s/GPU";
      return fmt::format("max output tok/s per GPU at ≥ {:g} tok/s per user", o.min_tokens_per_s_per_user);
    case K::kMinLatency:
      *unit = "ms";
      return fmt::format("min {} at concurrency ≤ {}", o.metric, o.max_concurrency);
    case K::kCost:
      *unit = "$/1M output tokens";
      return "min cost per 1M output tokens";
  }
  return "";
}

/// The configurations the analysis covers: baselines, best, recommended, then the ranking's top; feasible
/// ones only, at most `limit`.
std::vector<const Evaluation*> analysed(const SearchOutcome& o, size_t limit) {
  std::vector<const Evaluation*> cand = {&o.best, &o.recommended_eval};
  for (const auto& p : o.engines) cand.push_back(&p.baseline);
  for (const auto& p : o.engines) cand.push_back(&p.best);
  for (const auto& e : o.ranked) cand.push_back(&e);
  std::vector<const Evaluation*> out;
  std::set<std::string> seen;
  for (const Evaluation* e : cand)
    if (e->status == TrialStatus::kOk && !e->key.empty() && out.size() < limit && seen.insert(e->key).second)
      out.push_back(e);
  return out;
}

/// The SLO rows: one per analysed configuration (its search as the ranking ran it, else run now), then one
/// per other configuration whose goodput the ranking used (Evaluation::slo), so every goodput the summary
/// ranks has its runs in the report.
std::vector<SloResult> slo_rows(const Study& study, Evaluator& target, const SearchOutcome& outcome,
                                const std::vector<const Evaluation*>& configs) {
  std::vector<SloResult> rows;
  std::set<std::string> have;
  for (const Evaluation* e : configs) {
    rows.push_back(e->slo ? *e->slo : slo_search(study, target, e->config));
    have.insert(e->key);
  }
  for (const Evaluation* e : distinct_evaluations(outcome, EvaluationOrder::kChosenFirst))
    if (e->slo && have.insert(e->key).second) rows.push_back(*e->slo);
  return rows;
}

/// The SLO row of `config_key` (nullptr: none).
const SloResult* slo_of(const std::vector<SloResult>& rows, const std::string& config_key) {
  for (const auto& r : rows)
    if (r.config_key == config_key) return &r;
  return nullptr;
}

/// One objective over the analysed configurations (LoadOutcome::curves order) and, for slo_goodput, over the
/// further SLO rows.
ObjectiveResult objective_result(const Study& study, const ObjectiveSpec& o, const LoadOutcome& L,
                                 const std::vector<Evaluation>& as_written) {
  ObjectiveResult res;
  res.spec = o;
  res.title = objective_title(o, &res.unit);
  for (size_t i = 0; i < L.curves.size(); ++i)
    res.values.push_back(
        objective_value_of(study, o, L.curves[i], slo_of(L.slo, L.curves[i].config_key), as_written[i]));
  if (o.kind == ObjectiveSpec::Kind::kSloGoodput)
    for (size_t i = L.curves.size(); i < L.slo.size(); ++i) res.values.push_back(goodput_value(L.slo[i]));
  for (size_t i = 0; i < res.values.size(); ++i) {
    const auto& v = res.values[i];
    if (v.feasible && (res.best < 0 || (o.maximised() ? v.value > res.values[res.best].value
                                                      : v.value < res.values[res.best].value)))
      res.best = static_cast<int>(i);
  }
  return res;
}
}  // namespace

void apply_primary_objective(const Study& study, Evaluator& evaluator, Evaluation& ev,
                             const std::vector<std::string>& ids) {
  if (!load_objective_is_primary(study) || !ev.feasible) return;
  for (const auto& id : ids)
    if (split_load_scenario_id(id)) return;  // a load point itself
  const ObjectiveSpec& o = study.objectives.front();
  if (o.kind == ObjectiveSpec::Kind::kSloGoodput) {
    const SloResult& r = *(ev.slo = slo_search(study, evaluator, ev.config));
    if (r.goodput_found) {  // the repeats' 95% CI when there are repeats
      ev.objective = r.goodput_repeats_req_s.size() > 1 ? estimate(r.goodput_repeats_req_s)
                                                        : Estimate{1, r.request_goodput_req_s, 0, 0};
      return;
    }
    ev.feasible = false;
    ev.reason = "SLO search: " + (r.note.empty() ? std::string("no load meets the SLOs") : r.note);
    // A run without a verdict (invalid timing, interrupted, runner error) is no verdict on the config. A
    // saturated or too-short run is one: the configuration does not sustain that load within the SLOs.
    for (const auto& p : r.probes)
      if (!trial_status_judges_config(p.status)) ev.inconclusive = true;
    return;
  }
  const LoadCurve c = measure_curve(study, evaluator, ev.config, load_analysis_scenario(study));
  if (const LoadPointResult* p = best_at_user_floor(c, o.min_tokens_per_s_per_user)) {
    ev.objective = Estimate{1, p->output_tok_s_per_gpu, 0, 0};
    return;
  }
  ev.feasible = false;
  ev.reason = fmt::format("no concurrency point reaches {:g} tok/s per user", o.min_tokens_per_s_per_user);
}

bool has_load_analysis(const Study& study) {
  return !study.load.empty() || !study.slo.targets.empty() || !study.objectives.empty() ||
         std::any_of(study.scenarios.begin(), study.scenarios.end(),
                     [](const Scenario& sc) { return sc.load && !sc.load->empty(); });
}

void analyze_load(const Study& study, Evaluator& target, SearchOutcome& outcome) {
  LoadOutcome& L = outcome.load;
  L = LoadOutcome{};
  if (!has_load_analysis(study)) return;
  L.enabled = true;
  L.scenario = load_analysis_scenario(study);
  L.gpus = study.hardware.gpu_count;
  if (study.cost) L.usd_per_gpu_hour = study.cost->usd_per_gpu_hour;
  const auto configs = analysed(outcome, 8);
  std::vector<Evaluation> as_written;
  for (const Evaluation* e : configs) {
    L.curves.push_back(measure_curve(study, target, e->config, L.scenario));
    as_written.push_back(target.evaluate(e->config, {L.scenario}, "load"));
  }
  if (!study.slo.targets.empty()) L.slo = slo_rows(study, target, outcome, configs);
  // Pareto front over every successful concurrency point.
  std::vector<std::pair<double, double>> xy;
  for (const auto& c : L.curves)
    for (const auto& p : c.points)
      if (p.status == TrialStatus::kOk && p.load.kind == LoadKind::kConcurrency) {
        L.pareto.push_back(
            {c.config_key, c.engine, c.label, p.load, p.output_tok_s_per_user, p.output_tok_s_per_gpu});
        xy.emplace_back(p.output_tok_s_per_user, p.output_tok_s_per_gpu);
      }
  const auto front = pareto_front_max(xy);
  for (size_t i = 0; i < front.size(); ++i) L.pareto[i].on_front = front[i];
  for (const auto& o : study.objectives) L.objectives.push_back(objective_result(study, o, L, as_written));
  // The recommended point, on the recommended configuration: the load the tokens_per_gpu objective picked
  // when it picked that configuration, else its best front point (new-user trial: a secondary
  // tokens_per_gpu objective's pick of another configuration was marked "recommended").
  ParetoPoint* mark = nullptr;
  for (const auto& res : L.objectives)
    if (res.spec.kind == ObjectiveSpec::Kind::kTokensPerGpu && res.best >= 0 && !mark &&
        res.values[res.best].config_key == outcome.recommended_eval.key)
      for (auto& p : L.pareto)
        if (p.config_key == res.values[res.best].config_key && p.load.text() == res.values[res.best].at)
          mark = &p;
  // (else its best point off the front: the report says it is not on it.)
  auto better = [](const ParetoPoint& p, const ParetoPoint* m) {
    return !m || (p.on_front != m->on_front ? p.on_front : p.output_tok_s_per_gpu > m->output_tok_s_per_gpu);
  };
  if (!mark)
    for (auto& p : L.pareto)
      if (p.config_key == outcome.recommended_eval.key && better(p, mark)) mark = &p;
  if (mark) mark->recommended = true;
  // Cost at each config's highest-throughput point.
  if (study.cost)
    for (size_t i = 0; i < L.curves.size(); ++i) {
      CostRow row;
      row.config_key = L.curves[i].config_key, row.engine = L.curves[i].engine, row.label = L.curves[i].label;
      const LoadPointResult* p = max_throughput_point(L.curves[i]);
      std::map<std::string, double> m = p ? p->metrics : std::map<std::string, double>{};
      row.at = p ? p->load.text() : "";
      if (auto it = as_written[i].first.find(L.scenario);
          it != as_written[i].first.end() &&
          metric_or_zero(it->second.metrics, "Output token throughput (tok/s)") >
              metric_or_zero(m, "Output token throughput (tok/s)")) {
        m = it->second.metrics;
        row.at = "scenario as written";
      }
      row.output_tok_s = metric_or_zero(m, "Output token throughput (tok/s)");
      row.total_tok_s = metric_or_zero(m, "Total Token throughput (tok/s)");
      row.usd_per_1m_output_tokens =
          usd_per_million_tokens(study.cost->usd_per_gpu_hour, L.gpus, row.output_tok_s);
      row.usd_per_1m_total_tokens =
          usd_per_million_tokens(study.cost->usd_per_gpu_hour, L.gpus, row.total_tok_s);
      L.cost.push_back(row);
    }
}

}  // namespace servelab::tune
