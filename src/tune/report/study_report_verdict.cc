// The report's verdict sections (study_report.h): "Summary" (the recommended or provisional command, "Measure
// these", the finalists), "Best configuration" and "Recommended launch command".
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <sstream>

#include "servelab/tune/search/evaluations.h"
#include "tune/report/study_report.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {

/// How many configurations of a tie the report names (the rest are counted; the ranking lists them).
constexpr size_t kMeasureListed = 8;
/// Configurations named per kernel path without a figure in the rule's paragraph, then "and N more".
constexpr size_t kUnmodelledNamesListed = 5;

/// "engine label" of each configuration in `v.measure` from index `from` (at most kMeasureListed, then "and N
/// more").
static std::string measure_names(const TwinVerdict& v, size_t from = 0) {
  std::string out;
  for (size_t i = from; i < v.measure.size() && i < from + kMeasureListed; ++i)
    out +=
        (i > from ? ", " : "") + md_escape(v.measure[i].eval->config.engine + " " + v.measure[i].eval->label);
  if (v.measure.size() > from + kMeasureListed)
    out += fmt::format(" and {} more", v.measure.size() - from - kMeasureListed);
  return out;
}

/// A twin study whose top pick is not clear of the band (tune/twin_verdict.h): "Measure these", the set with
/// predictions, bands and why, and what makes a band unknown or wide.
static void measure_text(std::ostringstream& md, const TwinVerdict& v, const std::string& metric) {
  md << "**Measure these**: " << measure_names(v)
     << " — their predicted advantages are inside the twin's error band"
     << (v.any_unknown ? " or unknown (no band)" : "")
     << (v.any_bound_doubt ? ", or the band reaches across a `[[constraints]]` bound (the why column)" : "")
     << ". The twin cannot tell them apart: measure them "
     << "(`--target local` or `slurm`, or twin-guided search) before choosing.\n\n"
     << "| # | engine | config | " << metric << " | band | why |\n|---|---|---|---|---|---|\n";
  for (size_t i = 0; i < v.measure.size() && i < kMeasureListed; ++i) {
    const TwinTie& t = v.measure[i];
    const std::string band =
        t.band.text() + (t.band.pct && t.band.unmodelled_count > 0 ? " (unmodelled path)" : "");
    md << "| " << i + 1 << " | " << t.eval->config.engine << " | " << md_escape(t.eval->label) << " | "
       << est_text(t.eval->objective, true) << " | " << band << " | " << md_escape(t.why) << " |\n";
  }
  if (v.measure.size() > kMeasureListed)
    md << fmt::format("\n… and {} more inside the band (every prediction: the sections below).\n",
                      v.measure.size() - kMeasureListed);
  if (const std::string unseen = v.unseen_text(); !unseen.empty()) md << "\n" << md_escape(unseen) << "\n";
  if (const std::string safest = v.safest_text(); !safest.empty()) md << "\n" << md_escape(safest) << "\n";
  md << "\nRule: the twin's top pick is a winner only when its low end, prediction × (1 − band), clears "
        "every other prediction's high end, prediction × (1 + band).";
  if (v.any_unknown)
    md << " A prediction without an error band (the twin gave none and `search.twin_band_pct` is not set) "
          "counts as unknown, never as certain.";
  if (v.any_unmodelled) {
    md << fmt::format(
        " A prediction on a kernel path the twin has no figure for gets a band of at least ±{:.0f}% "
        "(its prediction is the physics at the class's parameters; the corpus runs of such paths were "
        "4–20× off):",
        kUnmodelledBandPct);
    // Grouped by path, a few names each (the reference study listed 63 TensorRT-LLM configurations, each
    // followed by the same path, in one paragraph).
    std::map<std::string, std::vector<std::string>> by_path;  // path(s) -> configurations
    std::vector<std::string> order;
    for (const auto& t : v.measure) {
      if (t.band.unmodelled_count == 0) continue;
      const std::string path = t.band.unmodelled.empty()
                                   ? fmt::format("{} path(s)", t.band.unmodelled_count)
                                   : fmt::format("{}", fmt::join(t.band.unmodelled, "; "));
      if (!by_path.count(path)) order.push_back(path);
      by_path[path].push_back(t.eval->config.engine + " " + t.eval->label);
    }
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto& names = by_path[order[i]];
      std::vector<std::string> shown(names.begin(),
                                     names.begin() + std::min(names.size(), kUnmodelledNamesListed));
      md << " " << md_escape(order[i]) << ": " << md_escape(fmt::format("{}", fmt::join(shown, ", ")))
         << (names.size() > shown.size() ? fmt::format(" and {} more", names.size() - shown.size()) : "")
         << (i + 1 < order.size() ? ";" : ".");
    }
  }
  md << "\n\n";
}

/// The configurations passed over because they broke a [[constraints]] bound or failed on a scenario outside
/// the objective's (SearchOutcome::passed_over), or the warning that none of those tried holds everywhere.
void passed_over_text(std::ostringstream& md, const SearchOutcome& o) {
  if (o.passed_over.empty()) return;
  if (none_passed_over_holds(o))
    md << fmt::format(
        "**No configuration tried meets every bound on every scenario**: the best on the objective's "
        "scenarios (above) and the next {} all break a `[[constraints]]` bound or fail on another "
        "scenario:\n\n",
        o.passed_over.size() - 1);
  else
    md << "**Passed over**: ranked above this configuration on the objective's scenarios, but broke a "
          "`[[constraints]]` bound or failed on another scenario (a bound holds on every scenario):\n\n";
  for (size_t i = 0; i < o.passed_over.size() && i < kPassedOverListed; ++i) {
    const Evaluation& e = o.passed_over[i];
    md << "- " << md_escape(e.config.engine + " " + e.label) << ": " << md_escape(failure_decision_text(e))
       << "\n";
  }
  if (o.passed_over.size() > kPassedOverListed)
    md << "- and " << o.passed_over.size() - kPassedOverListed << " more\n";
  md << "\n";
}

/// "Best configuration" and "Generalization": the best config's command and result, baseline vs best on
/// every scenario.
void best_text(std::ostringstream& md, const Study& s, const SearchOutcome& o, const std::string& metric,
               const TwinVerdict& v) {
  const bool twin = s.target == Target::kTwin;
  md << "## Best configuration\n\n";
  if (v.kind == TwinVerdict::Kind::kTie)
    md << fmt::format(
        "**The twin's top pick, not a winner**: its advantage over {} other configuration(s) is inside "
        "the twin's error band or unknown{} (Summary: \"Measure these\").\n\n",
        v.measure.size() - 1,
        v.any_bound_doubt ? ", or the band reaches across a `[[constraints]]` bound" : "");
  md << o.best.config.engine << " " << o.best.label << ": **" << est_text(o.best.objective, o.best.predicted)
     << "** " << metric << "\n\n```\n"
     << o.best.shell << "\n```\n\n"
     << band_text(o.best);
  passed_over_text(md, o);
  if (const auto& b = o.better_by_ablation) {
    std::string costly;
    for (const auto& kv : o.verdicts)
      if (kv.better_without) costly += (costly.empty() ? "" : ", ") + md_escape(kv.knob);
    md << fmt::format(
        "**The ablation found better**: {} {}, **{}** {} ({:+.2f}%): the search kept {}, which cost{} on the "
        "objective (Ablation below); the recommended command drops {}.\n\n",
        b->config.engine, md_escape(b->label), est_text(b->objective, b->predicted), metric,
        100.0 * (b->objective.mean / o.best.objective.mean - 1.0), costly,
        costly.find(',') == std::string::npos ? "s" : "",
        costly.find(',') == std::string::npos ? "it" : "them");
  }

  md << "## Generalization: baseline vs best on every scenario\n\n"
     << fmt::format("Baseline: {} {}; best: {} {}. Metric: {}{}.\n\n", o.best_baseline.config.engine,
                    o.best_baseline.label, o.best.config.engine, o.best.label, s.objective.metric,
                    metric == s.objective.metric
                        ? ""
                        : fmt::format(" at each scenario as written (the search's objective, {}, is read on "
                                      "its own load runs, not here)",
                                      metric))
     << "| scenario | baseline | best | change |\n|---|---|---|---|\n";
  for (const auto& r : o.generalization) {
    md << "| " << r.scenario << " | "
       << (r.baseline_failure.empty() ? est_text(r.baseline, twin)
                                      : "failed: " + md_escape(r.baseline_failure))
       << " | " << (r.best_failure.empty() ? est_text(r.best, twin) : "failed: " + md_escape(r.best_failure))
       << " | " << (r.baseline.n && r.best.n ? pct(r.change_pct) : "—") << " |\n";
  }
}

/// "Recommended launch command": the rule, the per-knob verdicts, the command (and the trade-off's other
/// side).
void recommendation_text(std::ostringstream& md, const Study& s, const SearchOutcome& o,
                         const std::string& metric, const TwinVerdict& tv) {
  md << "\n## Recommended launch command\n\n";
  const bool provisional = tv.kind == TwinVerdict::Kind::kTie;
  if (provisional)
    md << "**Provisional until measured**: the twin cannot tell its top pick ("
       << md_escape(o.best.config.engine + " " + o.best.label) << ") from " << measure_names(tv, 1)
       << " (Summary: \"Measure these\"); the command below is the twin's top pick after the rule, not a "
          "winner.\n\n";
  md << rule_text(s) << " (`[recommendation]` in the study file.)\n\n";
  // A prediction has no run-to-run noise: on the twin "significant" is the one-run threshold, which says
  // nothing of the twin's error band (a new-user trial read +2.49% "significant: yes" beside a ±14% band).
  if (!o.verdicts.empty() && o.best.predicted)
    md << fmt::format(
        "On the twin a knob's gain is \"significant\" when the predicted gain exceeds `search.min_gain_pct` "
        "({:g}%): predictions have no run-to-run noise, and a gain inside the twin's error band is a "
        "hypothesis to measure, not a finding.\n\n",
        s.search.min_gain_pct);
  if (!o.verdicts.empty()) {
    md << "| knob | objective gain | per scenario | significant | holds everywhere | kept | why |\n"
          "|---|---|---|---|---|---|---|\n";
    for (const auto& v : o.verdicts) {
      std::string per;
      for (const auto& [id, ch] : v.scenario_change_pct)
        per += fmt::format("{}{}: {}", per.empty() ? "" : "; ", id, pct(ch));
      // Undecided: no valid run without the knob, so no gain and no test to show.
      const auto test = [&](bool b) { return v.undecided ? "undecided" : b ? "yes" : "no"; };
      md << "| " << v.knob << "=" << v.value << " | " << (v.undecided ? "—" : pct(v.objective_gain_pct))
         << " | " << per << " | " << test(v.significant) << " | " << test(v.holds_everywhere) << " | "
         << (v.recommended ? "**yes**" : "no") << " | " << md_escape(v.why) << " |\n";
    }
    md << "\n";
  }
  if (o.alternative) {
    md << "The rule's command and the other side of the trade-off:\n\n";
    command_text(md,
                 "Recommended (" + std::string(recommendation_rule_name(o.rule)) + ")" +
                     (provisional ? ", provisional: the twin's top pick after the rule" : ""),
                 o.recommended_command, o.recommended_eval, metric);
    command_text(md, "Alternative: " + o.alternative->title, o.alternative->command, o.alternative->eval,
                 metric);
  } else {
    if (provisional) md << "The twin's top pick after the rule (provisional):\n\n";
    md << "```\n" << o.recommended_command.shell() << "\n```\n\n";
    if (o.recommended_eval.feasible)
      md << metric << " of the recommended command: **"
         << est_text(o.recommended_eval.objective, o.recommended_eval.predicted) << "**\n\n"
         << band_text(o.recommended_eval);
  }
}

/// The finalists: the best distinct configurations evaluated on the objective (the ranking's top, or every
/// engine's baseline, greedy steps and best), best first, at most `limit`.
static std::vector<const Evaluation*> finalists(const SearchOutcome& o, size_t limit) {
  std::vector<const Evaluation*> out = distinct_evaluations(
      o, EvaluationOrder::kRankingFirst, [](const Evaluation& e) { return e.feasible && e.objective.n > 0; });
  sort_best_first(out);
  if (out.size() > limit) out.resize(limit);
  return out;
}

/// "Summary", first in the report: the recommended command with its objective value (and the trade-off's
/// other side), then the finalists; the sections after it are the detail. When the twin cannot tell its top
/// pick from others (`v` a tie, tune/twin_verdict.h): "No single winner", the command labelled provisional,
/// then "Measure these".
void summary_text(std::ostringstream& md, const Study& s, const SearchOutcome& o, const std::string& metric,
                  const TwinVerdict& v) {
  md << "## Summary\n\nObjective: maximise **" << metric << "**. ";
  if (!o.best.feasible) {
    const bool partial = !o.complete;
    if (ran_but_infeasible(o.best))  // configurations ran; none met every bound
      md << (partial
                 ? "**Partial study**: the search stopped before it finished, and no configuration tried so "
                   "far meets every `[[constraints]]` bound: there is no recommendation yet (`servelab tune "
                   "--resume` continues it). The best on the objective, "
                 : "No configuration tried meets every `[[constraints]]` bound: there is no recommendation. "
                   "The best on the objective, ")
         << md_escape(o.best.config.engine + " " + o.best.label) << " ("
         << est_text(o.best.objective, o.best.predicted) << " " << metric << "), is "
         << md_escape(failure_decision_text(o.best)) << " (the others: \"Best configuration\" below).\n\n";
    else if (partial)  // stopped (Ctrl-C) before any configuration succeeded
      md << "**Partial study**: the search stopped before any configuration succeeded, so there is no "
            "recommendation yet (`servelab tune --resume` continues it).\n\n";
    else
      md << "No configuration succeeded: there is no recommendation (see the failures below).\n\n";
    return;
  }
  // A study stopped before its search finished (Ctrl-C, a node lost): its best so far is no answer, and the
  // recommendation rule has not run on it (new-user trial: "Recommended: ... not run" beside a
  // "recommended" finalist).
  const bool partial = !o.complete;
  const bool tie = !partial && v.kind == TwinVerdict::Kind::kTie;
  if (partial)
    md << "**Partial study**: the search stopped before it finished, so there is no recommendation yet "
          "(`servelab tune --resume` finishes it). The best so far: "
       << md_escape(o.best.config.engine + " " + o.best.label) << ", **"
       << est_text(o.best.objective, o.best.predicted) << "** " << metric << ".\n\n";
  else if (tie)
    md << fmt::format(
              "**No single winner**: the twin cannot tell {} configurations apart (\"Measure these\" "
              "below). ",
              v.measure.size())
       << "Provisional launch command, the twin's top pick until they are measured (rule `"
       << recommendation_rule_name(o.rule) << "`):\n\n";
  else
    md << "Recommended launch command (rule `" << recommendation_rule_name(o.rule)
       << "`; why each knob is kept: \"Recommended launch command\" below):\n\n";
  if (!partial)
    command_text(md,
                 (tie ? "Provisional (the twin's top pick): " : "Recommended: ") +
                     o.recommended_eval.config.engine + " " + o.recommended_eval.label,
                 o.recommended_command, o.recommended_eval, metric);
  if (o.alternative && !partial)
    command_text(md, "Alternative: " + o.alternative->title, o.alternative->command, o.alternative->eval,
                 metric);
  if (tie) measure_text(md, v, metric);
  if (!partial && !v.top_bound_doubts.empty())
    md << "**A bound the twin cannot vouch for**: the top pick meets every `[[constraints]]` bound on the "
          "prediction, but the twin's error band reaches past "
       << (v.top_bound_doubts.size() == 1 ? "one" : "some") << ": "
       << md_escape(fmt::format("{}", fmt::join(v.top_bound_doubts, "; ")))
       << ". Measure it before relying on it.\n\n";
  if (!o.passed_over.empty())
    md << (none_passed_over_holds(o)
               ? "**No configuration tried meets every `[[constraints]]` bound on every scenario** (\"Best "
                 "configuration\" below).\n\n"
               : fmt::format("{} configuration(s) ranked higher on the objective's scenarios broke a "
                             "`[[constraints]]` bound or failed on another scenario: passed over (\"Best "
                             "configuration\" below).\n\n",
                             o.passed_over.size()));
  const auto top = finalists(o, 5);
  // Not every prediction: the grid check's whole ranking is in its section (and in "Measure these" when it
  // ties); a new-user trial read "best first" beside a "Measure these" table of higher predictions.
  md << "Finalists (best first among each engine's search path"
     << (o.grid_check
             ? ", the ranking and the grid check's best; the grid check's other predictions: its section"
             : " and the ranking")
     << "):\n\n| # | engine | config | " << metric << " | |\n|---|---|---|---|---|\n";
  for (size_t i = 0; i < top.size(); ++i) {
    const Evaluation& e = *top[i];
    const bool passed = std::any_of(o.passed_over.begin(), o.passed_over.end(),
                                    [&](const Evaluation& p) { return p.key == e.key; });
    const std::string mark = partial && e.key == o.best.key ? "best so far"
                             : partial                      ? (passed ? "passed over: fails elsewhere" : "")
                             : e.key == o.recommended_eval.key
                                 ? (tie ? "top pick (provisional)" : "recommended")
                             : e.key == o.best.key ? "best"
                             : passed              ? "passed over: fails elsewhere"
                                                   : "";
    md << "| " << i + 1 << " | " << e.config.engine << " | " << md_escape(e.label) << " | "
       << est_text(e.objective, e.predicted) << " | " << mark << " |\n";
  }
  md << "\nThe detail follows: the goal and setup, baselines, the search, the best configuration, the "
     << (s.objectives.empty() ? "" : "load analysis, the ") << "recommendation's rule, failures.\n\n";
}

}  // namespace servelab::tune
