// Search strategies: greedy, grid, twin-guided; then generalization, ablation and the recommendation.
#include "tune/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace servelab::tune {

namespace {

std::vector<std::string> all_scenarios(const Study& study) {
  std::vector<std::string> out;
  for (const auto& s : study.scenarios) out.push_back(s.id);
  return out;
}

/// Better of two evaluations on the objective (feasible first, then mean).
bool ranks_above(const Evaluation& a, const Evaluation& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.objective.mean > b.objective.mean;
}

void track_best(Evaluator& ev, const Evaluation& e, const Evaluation*& best) {
  if (!e.feasible) return;
  if (!best || e.objective.mean > best->objective.mean) best = &e;
  ev.note_best(best->config.engine + " " + best->label, best->objective.mean);
}

std::string failure_decision(const Evaluation& e) {
  if (e.status == TrialStatus::kRejected) return "rejected: " + e.reason;
  if (e.status != TrialStatus::kOk) return std::string("failed (") + trial_status_name(e.status) + "): " + e.reason;
  return "infeasible: " + e.reason;
}

void greedy(const Study& study, Evaluator& target, SearchOutcome& out) {
  const auto& obj = study.objective.scenarios;
  const Evaluation* best_seen = nullptr;
  std::vector<Config> baselines;
  for (const auto& e : study.engines) baselines.push_back(Config{e.name, {}});
  target.prefetch(baselines, obj, "baseline");  // independent trials: in parallel where the target can
  for (const auto& e : study.engines) {
    EnginePath p;
    p.engine = e.name;
    p.baseline = target.evaluate(Config{e.name, {}}, obj, "baseline");
    p.best = p.baseline;
    out.engines.push_back(std::move(p));
  }
  for (const auto& p : out.engines) track_best(target, p.baseline, best_seen);
  for (auto& p : out.engines) {
    Evaluation incumbent = p.baseline;
    for (const auto& kname : knobs_for_engine(study, p.engine)) {
      const Knob& k = study.knob(kname);
      auto cur_it = incumbent.config.knobs.find(kname);
      const std::string cur = cur_it == incumbent.config.knobs.end() ? k.baseline : cur_it->second;
      const size_t first = p.steps.size();
      int winner = -1;
      std::vector<Config> candidates;
      for (const auto& v : k.values) {
        if (v.label == cur) continue;
        candidates.push_back(incumbent.config);
        candidates.back().knobs[kname] = v.label;
      }
      target.prefetch(candidates, obj, "greedy");
      for (const auto& v : k.values) {
        if (v.label == cur) continue;
        Config cfg = incumbent.config;
        cfg.knobs[kname] = v.label;
        Step s;
        s.knob = kname;
        s.value = v.label;
        s.eval = target.evaluate(cfg, obj, "greedy");
        if (s.eval.feasible && incumbent.feasible)
          s.gain_pct = change_pct(incumbent.objective.mean, s.eval.objective.mean);
        if (!s.eval.feasible) s.decision = failure_decision(s.eval);
        else if (significantly_better(study, incumbent, s.eval)) s.decision = "better";
        else if (s.gain_pct > 0) s.decision = "not significant";
        else s.decision = "no gain";
        p.steps.push_back(std::move(s));
        const Evaluation& last = p.steps.back().eval;
        if (p.steps.back().decision == "better" &&
            (winner < 0 || last.objective.mean > p.steps[winner].eval.objective.mean))
          winner = static_cast<int>(p.steps.size() - 1);
      }
      for (size_t i = first; i < p.steps.size(); ++i)
        if (p.steps[i].decision == "better" && static_cast<int>(i) != winner)
          p.steps[i].decision = "better, but " + kname + "=" + p.steps[winner].value + " gained more";
      if (winner >= 0) {
        p.steps[winner].decision = "kept";
        p.steps[winner].kept = true;
        incumbent = p.steps[winner].eval;
        const Evaluation* b = best_seen;
        if (!b || incumbent.objective.mean > b->objective.mean) target.note_best(p.engine + " " + incumbent.label,
                                                                                  incumbent.objective.mean);
      }
    }
    p.best = incumbent;
  }
  out.best_baseline = out.engines.front().baseline;
  out.best = out.engines.front().best;
  for (const auto& p : out.engines) {
    if (ranks_above(p.baseline, out.best_baseline)) out.best_baseline = p.baseline;
    if (ranks_above(p.best, out.best)) out.best = p.best;
  }
}

std::vector<Config> grid_configs(const Study& study) {
  auto configs = enumerate_grid(study);
  if (static_cast<int>(configs.size()) > study.search.max_trials)
    throw std::runtime_error(fmt::format(
        "the grid has {} points, more than search.max_trials = {}: narrow the knob space or raise max_trials",
        configs.size(), study.search.max_trials));
  return configs;
}

void pick_baselines(const Study& study, Evaluator& target, SearchOutcome& out, const std::string& phase) {
  for (const auto& e : study.engines) {
    EnginePath p;
    p.engine = e.name;
    p.baseline = target.evaluate(Config{e.name, {}}, study.objective.scenarios, phase);
    p.best = p.baseline;
    out.engines.push_back(std::move(p));
  }
  out.best_baseline = out.engines.front().baseline;
  for (const auto& p : out.engines)
    if (ranks_above(p.baseline, out.best_baseline)) out.best_baseline = p.baseline;
}

void grid(const Study& study, Evaluator& target, SearchOutcome& out) {
  const Evaluation* best_seen = nullptr;
  std::vector<Evaluation> evals;
  auto configs = grid_configs(study);
  evals.reserve(configs.size());
  target.prefetch(configs, study.objective.scenarios, "grid");
  for (const auto& c : configs) {
    evals.push_back(target.evaluate(c, study.objective.scenarios, "grid"));
    track_best(target, evals.back(), best_seen);
  }
  std::stable_sort(evals.begin(), evals.end(), ranks_above);
  pick_baselines(study, target, out, "grid");
  for (auto& p : out.engines)
    for (const auto& e : evals)
      if (e.config.engine == p.engine && ranks_above(e, p.best)) p.best = e;
  out.best = evals.front();
  out.ranked = std::move(evals);
}

void twin_guided(const Study& study, Evaluator& target, Evaluator& twin, SearchOutcome& out) {
  std::vector<Evaluation> predicted;
  const Evaluation* best_seen = nullptr;  // points into `predicted`: reserve so it never reallocates
  const auto configs = grid_configs(study);
  predicted.reserve(configs.size());
  for (const auto& c : configs) {
    predicted.push_back(twin.evaluate(c, study.objective.scenarios, "rank"));
    track_best(twin, predicted.back(), best_seen);
  }
  std::stable_sort(predicted.begin(), predicted.end(), ranks_above);
  RankingCheck rc;
  std::vector<Evaluation> measured;
  std::vector<Config> top;
  for (const auto& p : predicted)
    if (p.feasible && static_cast<int>(top.size()) < study.search.top_k) top.push_back(p.config);
  target.prefetch(top, study.objective.scenarios, "measure");
  for (const auto& p : predicted) {
    if (!p.feasible || static_cast<int>(measured.size()) >= study.search.top_k) continue;
    measured.push_back(target.evaluate(p.config, study.objective.scenarios, "measure"));
    rc.keys.push_back(p.key);
    rc.predicted.push_back(p.objective.mean);
    rc.measured.push_back(measured.back().feasible ? measured.back().objective.mean : 0.0);
  }
  rc.spearman = spearman(rc.predicted, rc.measured);
  rc.kendall = kendall_tau(rc.predicted, rc.measured);
  out.ranking = rc;
  pick_baselines(study, target, out, "baseline");
  if (measured.empty()) throw std::runtime_error("the twin found no feasible config to measure");
  std::stable_sort(measured.begin(), measured.end(), ranks_above);
  out.best = measured.front();
  for (auto& p : out.engines)
    for (const auto& e : measured)
      if (e.config.engine == p.engine && ranks_above(e, p.best)) p.best = e;
  out.ranked = std::move(measured);
}

/// Baseline vs best on every scenario; per kept knob, best vs best-without-it; the recommendation.
void finish(const Study& study, Evaluator& target, SearchOutcome& out) {
  const auto ids = all_scenarios(study);
  target.prefetch({out.best_baseline.config, out.best.config}, ids, "generalize");
  Evaluation base = target.evaluate(out.best_baseline.config, ids, "generalize");
  Evaluation best = target.evaluate(out.best.config, ids, "generalize");
  for (const auto& id : ids) {
    GeneralizationRow row;
    row.scenario = id;
    if (auto it = base.per_scenario.find(id); it != base.per_scenario.end()) row.baseline = it->second;
    if (auto it = best.per_scenario.find(id); it != best.per_scenario.end()) row.best = it->second;
    if (auto it = base.scenario_failure.find(id); it != base.scenario_failure.end()) row.baseline_failure = it->second;
    if (auto it = best.scenario_failure.find(id); it != best.scenario_failure.end()) row.best_failure = it->second;
    if (row.baseline.n && row.best.n) row.change_pct = change_pct(row.baseline.mean, row.best.mean);
    out.generalization.push_back(row);
  }
  out.recommended = out.best.config;
  if (study.search.ablation && best.objective.n > 0) {
    std::vector<Config> withouts;
    for (const auto& k : study.knobs) {
      if (!out.best.config.knobs.count(k.name)) continue;
      withouts.push_back(out.best.config);
      withouts.back().knobs.erase(k.name);
    }
    target.prefetch(withouts, ids, "ablation");
    for (const auto& k : study.knobs) {
      auto it = out.best.config.knobs.find(k.name);
      if (it == out.best.config.knobs.end()) continue;
      KnobVerdict v;
      v.knob = k.name;
      v.value = it->second;
      Config without = out.best.config;
      without.knobs.erase(k.name);
      Evaluation w = target.evaluate(without, ids, "ablation");
      if (!w.feasible) {
        v.significant = v.holds_everywhere = v.recommended = true;
        v.why = "needed: without it the config " + failure_decision(w);
        out.verdicts.push_back(v);
        continue;
      }
      v.objective_gain_pct = change_pct(w.objective.mean, best.objective.mean);
      v.significant = significantly_better(study, w, best);
      v.holds_everywhere = true;
      std::string losing;
      for (const auto& id : ids) {
        auto a = w.per_scenario.find(id), b = best.per_scenario.find(id);
        if (a == w.per_scenario.end() || b == best.per_scenario.end()) {
          v.holds_everywhere = false;
          losing += (losing.empty() ? "" : ", ") + id + " (failed)";
          continue;
        }
        const double ch = change_pct(a->second.mean, b->second.mean);
        v.scenario_change_pct[id] = ch;
        bool loses;
        if (a->second.n >= 2 && b->second.n >= 2)
          loses = b->second.mean < a->second.mean && welch_significant(a->second, b->second);
        else
          loses = ch < -study.search.min_gain_pct;
        if (loses) {
          v.holds_everywhere = false;
          losing += fmt::format("{}{} ({:+.2f}%)", losing.empty() ? "" : ", ", id, ch);
        }
      }
      v.recommended = v.significant && v.holds_everywhere;
      if (v.recommended) v.why = fmt::format("{:+.2f}% on the objective, no loss on any scenario", v.objective_gain_pct);
      else if (!v.significant)
        v.why = fmt::format("{:+.2f}% on the objective is within the noise", v.objective_gain_pct);
      else v.why = "loses on " + losing;
      if (!v.recommended) out.recommended.knobs.erase(k.name);
      out.verdicts.push_back(v);
    }
  }
  out.recommended_command = render(study, out.recommended);
  out.recommended_eval = config_key(study, out.recommended) == best.key
                             ? best
                             : target.evaluate(out.recommended, ids, "recommend");
}

}  // namespace

int planned_trials(const Study& study) {
  int n = 0;
  if (study.search.strategy == Strategy::kGreedy) {
    n = static_cast<int>(study.engines.size());
    for (const auto& e : study.engines)
      for (const auto& k : knobs_for_engine(study, e.name)) n += static_cast<int>(study.knob(k).values.size()) - 1;
  } else {
    n = static_cast<int>(enumerate_grid(study).size());
    if (study.search.strategy == Strategy::kTwinGuided) n += study.search.top_k + 1;
  }
  n += 2 + (study.search.ablation ? 3 : 0);
  return n * study.repeats;
}

SearchOutcome run_search(const Study& study, Evaluator& target, Evaluator* twin) {
  SearchOutcome out;
  out.strategy = study.search.strategy;
  target.set_planned(planned_trials(study));
  switch (study.search.strategy) {
    case Strategy::kGreedy: greedy(study, target, out); break;
    case Strategy::kGrid: grid(study, target, out); break;
    case Strategy::kTwinGuided:
      if (!twin) throw std::runtime_error("twin-guided search needs the twin runner");
      twin_guided(study, target, *twin, out);
      break;
  }
  finish(study, target, out);
  out.complete = target.missing() == 0 && (!twin || twin->missing() == 0);
  return out;
}

}  // namespace servelab::tune
