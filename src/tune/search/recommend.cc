// After the search: baseline vs best on every scenario (generalization), the ablation of each knob of the
// best config, and the recommendation by the study's rule ([recommendation] in docs/study.md).
#include <fmt/format.h>

#include <algorithm>

#include "servelab/tune/search/evaluations.h"
#include "tune/search/search_space.h"

namespace servelab::tune::detail {

namespace {

std::vector<std::string> all_scenarios(const Study& study) {
  std::vector<std::string> out;
  for (const auto& s : study.scenarios) out.push_back(s.id);
  return out;
}

std::vector<GeneralizationRow> generalization(const std::vector<std::string>& ids, const Evaluation& base,
                                              const Evaluation& best) {
  std::vector<GeneralizationRow> rows;
  for (const auto& id : ids) {
    GeneralizationRow row;
    row.scenario = id;
    if (auto it = base.per_scenario.find(id); it != base.per_scenario.end()) row.baseline = it->second;
    if (auto it = best.per_scenario.find(id); it != best.per_scenario.end()) row.best = it->second;
    if (auto it = base.scenario_failure.find(id); it != base.scenario_failure.end())
      row.baseline_failure = it->second;
    if (auto it = best.scenario_failure.find(id); it != best.scenario_failure.end())
      row.best_failure = it->second;
    if (row.baseline.n && row.best.n) row.change_pct = change_pct(row.baseline.mean, row.best.mean);
    rows.push_back(row);
  }
  return rows;
}

/// Does the best config (`with`) lose on scenario `id` against the config without the knob (`without`)?
/// Welch's test with ≥ 2 runs on both sides, else a loss beyond min_gain_pct.
bool loses_on(const Study& study, const Estimate& without, const Estimate& with) {
  if (without.n >= 2 && with.n >= 2) return with.mean < without.mean && welch_significant(without, with);
  return change_pct(without.mean, with.mean) < -study.search.min_gain_pct;
}

/// The kept/dropped decision of one knob under the study's rule, with its reason.
void apply_rule(const Study& study, KnobVerdict& v, const std::string& losing) {
  const double threshold = study.recommendation.threshold_pct;
  v.loses_nowhere = v.significant && v.holds_everywhere;
  switch (study.recommendation.rule) {
    case RecommendationRule::kNoRegression:
      v.recommended = v.loses_nowhere;
      break;
    case RecommendationRule::kObjective:
      v.recommended = v.significant;
      break;
    case RecommendationRule::kTradeOff:
      v.recommended = v.significant && (v.holds_everywhere || v.objective_gain_pct >= threshold);
      break;
  }
  if (v.better_without)
    v.why = fmt::format(
        "{:+.2f}% on the objective: the config does better without it (the search kept a knob that costs)",
        v.objective_gain_pct);
  else if (!v.significant)
    v.why = fmt::format("{:+.2f}% on the objective is within the noise", v.objective_gain_pct);
  else if (v.holds_everywhere)
    v.why = fmt::format("{:+.2f}% on the objective, no loss on any scenario", v.objective_gain_pct);
  else if (v.recommended)
    v.why = fmt::format(
        "{:+.2f}% on the objective outweighs the loss on {} (trade-off: kept here, dropped from the "
        "command that loses nowhere)",
        v.objective_gain_pct, losing);
  else if (study.recommendation.rule == RecommendationRule::kTradeOff)
    v.why = fmt::format("loses on {}; {:+.2f}% on the objective is below the {:g}% threshold", losing,
                        v.objective_gain_pct, threshold);
  else
    v.why = "loses on " + losing;
}

/// The ablation of knob `k` of the best config; `w` gets the evaluation of the config without it.
KnobVerdict ablate(const Study& study, Evaluator& target, const std::vector<std::string>& ids,
                   const Evaluation& best, const Knob& k, const std::string& value,
                   Evaluation& without_eval) {
  KnobVerdict v;
  v.knob = k.name;
  v.value = value;
  CandidateConfig without = best.config;
  without.knobs.erase(k.name);
  without_eval = target.evaluate(without, ids, "ablation");
  const Evaluation& w = without_eval;
  if (w.inconclusive) {  // an invalid, interrupted or saturated run is no "fails without it" (issue 30 §4)
    v.undecided = v.recommended = v.loses_nowhere = true;
    v.why = "undecided: " + failure_decision(w) + " (the run, not the config, failed); kept as measured";
    return v;
  }
  if (!w.feasible) {
    v.significant = v.holds_everywhere = v.recommended = v.loses_nowhere = true;
    v.why = "needed: without it the config " + failure_decision(w);
    return v;
  }
  v.objective_gain_pct = change_pct(w.objective.mean, best.objective.mean);
  v.significant = significantly_better(study, w, best);
  v.better_without = significantly_better(study, best, w);
  v.holds_everywhere = true;
  std::string losing, unmeasured;
  for (const auto& id : ids) {
    auto a = w.per_scenario.find(id), b = best.per_scenario.find(id);
    if (b == best.per_scenario.end()) {  // the best config has no valid run there: nothing to compare
      unmeasured += (unmeasured.empty() ? "" : ", ") + id;
      continue;
    }
    if (a == w.per_scenario.end()) {
      v.holds_everywhere = false;
      losing += (losing.empty() ? "" : ", ") + id + " (failed)";
      continue;
    }
    const double ch = change_pct(a->second.mean, b->second.mean);
    v.scenario_change_pct[id] = ch;
    if (loses_on(study, a->second, b->second)) {
      v.holds_everywhere = false;
      losing += fmt::format("{}{} ({:+.2f}%)", losing.empty() ? "" : ", ", id, ch);
    }
  }
  apply_rule(study, v, losing);
  if (!unmeasured.empty()) v.why += "; not compared on " + unmeasured + " (no valid run of the best config)";
  return v;
}

Evaluation evaluate_config(const Study& study, Evaluator& target, const std::vector<std::string>& ids,
                           const Evaluation& best, const CandidateConfig& config, const std::string& phase) {
  return config_key(study, config) == best.key ? best : target.evaluate(config, ids, phase);
}

/// A command built by dropping knobs one at a time can fail when knobs were needed together (two knobs
/// that each save enough memory alone): while it fails and the best config runs, put back the knobs dropped
/// as within the noise (`verdicts`; study order) until it runs — never one dropped for losing somewhere.
/// `restored` gets the knobs put back and `failure` how the command failed without them ("oom", ...). Returns
/// the command's evaluation.
Evaluation restore_until_feasible(const Study& study, Evaluator& target, const std::vector<std::string>& ids,
                                  const Evaluation& best, const std::vector<KnobVerdict>& verdicts,
                                  CandidateConfig& config, std::vector<std::string>& restored,
                                  std::string& failure) {
  Evaluation e = evaluate_config(study, target, ids, best, config, "recommend");
  if (!e.feasible) failure = e.status == TrialStatus::kOk ? "infeasible" : trial_status_name(e.status);
  for (const auto& v : verdicts) {
    // An invalid or interrupted run of the command is no reason to put knobs back.
    if (e.feasible || e.inconclusive || !best.feasible) break;
    auto it = best.config.knobs.find(v.knob);
    if (v.significant || it == best.config.knobs.end() || config.knobs.count(v.knob)) continue;
    config.knobs[v.knob] = it->second;
    restored.push_back(v.knob);
    e = evaluate_config(study, target, ids, best, config, "recommend");
  }
  return e;
}

/// The best on the objective's scenarios must also meet the [[constraints]] and run on every other scenario:
/// while it does not, the next feasible configuration by objective takes its place: on a measured target at
/// most kMaxPassedOver of them (each costs its runs on the other scenarios: GPU time), on the twin all. Those
/// passed over go to out.passed_over; when none of them holds everywhere, out.best stays the objective's
/// best.
void confirm_on_every_scenario(const Study& study, Evaluator& target, const std::vector<std::string>& ids,
                               SearchOutcome& out) {
  if (!out.best.feasible || ids.size() <= study.objective.scenarios.size()) return;
  Evaluation everywhere = target.evaluate(out.best.config, ids, "generalize");
  if (everywhere.feasible || everywhere.inconclusive) return;  // an invalid run judges no configuration
  std::vector<const Evaluation*> next = distinct_evaluations(
      out, EvaluationOrder::kRankingFirstThenGrid,
      [&](const Evaluation& e) { return e.feasible && e.objective.n > 0 && e.key != out.best.key; });
  sort_best_first(next);
  const Evaluation objective_best = out.best;
  out.passed_over.push_back(std::move(everywhere));
  // Predictions cost milliseconds: on the twin every candidate may be tried (the next ones are often the
  // same launch with a knob the prediction does not depend on). Measured runs cost GPU time: kMaxPassedOver.
  const size_t limit = target.predicts() ? next.size() : static_cast<size_t>(kMaxPassedOver);
  for (const Evaluation* e : next) {
    if (out.passed_over.size() > limit) break;
    Evaluation all = target.evaluate(e->config, ids, "generalize");
    if (all.feasible || all.inconclusive) {
      out.best = *e;  // its evaluation on the objective's scenarios, like every other `best`
      return;
    }
    out.passed_over.push_back(std::move(all));
  }
  out.best = objective_best;
}

}  // namespace

void generalize_and_recommend(const Study& study, Evaluator& target, SearchOutcome& out) {
  const auto ids = all_scenarios(study);
  confirm_on_every_scenario(study, target, ids, out);
  target.prefetch({out.best_baseline.config, out.best.config}, ids, "generalize");
  const Evaluation base = target.evaluate(out.best_baseline.config, ids, "generalize");
  const Evaluation best = target.evaluate(out.best.config, ids, "generalize");
  out.generalization = generalization(ids, base, best);
  out.rule = study.recommendation.rule;
  out.recommended = out.best.config;
  CandidateConfig safe = out.best.config, for_objective = out.best.config;
  if (study.search.ablation && best.objective.n > 0) {
    std::vector<CandidateConfig> withouts;  // every ablation at once where the target runs trials in parallel
    for (const auto& k : study.knobs)
      if (out.best.config.knobs.count(k.name)) {
        withouts.push_back(out.best.config);
        withouts.back().knobs.erase(k.name);
      }
    target.prefetch(withouts, ids, "ablation");
    for (const auto& k : study.knobs) {
      auto it = out.best.config.knobs.find(k.name);
      if (it == out.best.config.knobs.end()) continue;
      Evaluation w;
      KnobVerdict v = ablate(study, target, ids, best, k, it->second, w);
      if (v.better_without &&
          (!out.better_by_ablation || w.objective.mean > out.better_by_ablation->objective.mean))
        out.better_by_ablation = w;
      if (!v.recommended) out.recommended.knobs.erase(k.name);
      if (!v.loses_nowhere) safe.knobs.erase(k.name);
      if (!v.significant && !v.undecided) for_objective.knobs.erase(k.name);
      out.verdicts.push_back(v);
    }
  }
  std::vector<std::string> restored;
  std::string failure;
  out.recommended_eval =
      restore_until_feasible(study, target, ids, best, out.verdicts, out.recommended, restored, failure);
  for (auto& v : out.verdicts)
    if (std::find(restored.begin(), restored.end(), v.knob) != restored.end()) {
      v.recommended = true;
      v.why += "; put back: without it and the other dropped knobs the command fails (" + failure + ")";
    }
  out.recommended_command = render(study, out.recommended);
  // The other side of the trade-off, when it is a different command.
  const bool strict = study.recommendation.rule == RecommendationRule::kNoRegression;
  CandidateConfig other = strict ? for_objective : safe;
  if (config_key(study, other) != config_key(study, out.recommended)) {
    AlternativeCommand alt;
    std::vector<std::string> other_restored;
    std::string other_failure;
    alt.eval =
        restore_until_feasible(study, target, ids, best, out.verdicts, other, other_restored, other_failure);
    alt.title = strict ? "best for the objective" : "best that loses on no scenario";
    if (!other_restored.empty())
      alt.title += fmt::format(" (with {} put back: without, it fails: {})", fmt::join(other_restored, ", "),
                               other_failure);
    alt.config = other;
    alt.command = render(study, other);
    if (config_key(study, other) != config_key(study, out.recommended)) out.alternative = std::move(alt);
  }
}

}  // namespace servelab::tune::detail
