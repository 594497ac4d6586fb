// servelab/tune: the search strategies, greedy (the reference study's method), grid and twin-guided, over
// an Evaluator (evaluator.h), and what a search found (SearchOutcome).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/load/load_result.h"
#include "servelab/tune/search/evaluator.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// One candidate tried along a greedy path.
struct Step {
  std::string knob, value;
  Evaluation eval;
  double gain_pct = 0.0;  ///< vs the incumbent at the time
  std::string decision;   ///< "kept", "no gain", "not significant", "failed: ...", "rejected: ..."
  bool kept = false;
  /// A retry (non-empty): `knob=value` failed alone (out of memory or refused at start-up) and was tried
  /// once more with these other knobs changed (knob → value): the best-so-far's values, and one value lower
  /// on each knob marked lower_saves_memory.
  std::map<std::string, std::string> retried_with;
  std::string retry_why;  ///< what failed alone and why these values were chosen
};

/// One engine's search: its baseline, every step tried, and where it ended.
struct EnginePath {
  std::string engine;
  Evaluation baseline;
  std::vector<Step> steps;
  Evaluation best;
};

/// Baseline vs best on one scenario (objective metric).
struct GeneralizationRow {
  std::string scenario;
  Estimate baseline, best;
  std::string baseline_failure, best_failure;  ///< non-empty when that side failed
  double change_pct = 0.0;
};

/// The recommendation rule applied to one knob of the best config: it is kept only if removing it
/// costs a significant amount on the objective AND it does not lose on any scenario.
struct KnobVerdict {
  std::string knob, value;
  double objective_gain_pct = 0.0;  ///< best vs best-without-this-knob, objective scenarios
  bool significant = false;
  std::map<std::string, double> scenario_change_pct;  ///< per scenario, best vs without
  bool holds_everywhere = false;
  bool recommended = false;    ///< kept in the recommended command (by the study's rule)
  bool loses_nowhere = false;  ///< kept in the command that loses on no scenario
  /// The config without the knob gave no verdict (Evaluation::inconclusive: its run was invalid,
  /// interrupted or saturated): the knob stays in every command, as measured, and `why` says so.
  bool undecided = false;
  /// The config without the knob did significantly better on the objective than the best config (the
  /// search kept a knob that costs): dropped from every command, and `why` says so.
  bool better_without = false;
  std::string why;
};

/// A second command shown beside the recommended one when they differ: "best for the objective" (when the
/// rule is no_regression) or "best that loses nowhere" (otherwise).
struct AlternativeCommand {
  std::string title;
  CandidateConfig config;
  Rendered command;
  Evaluation eval;  ///< on every scenario
};

/// What twin-guided search spent and saved against a grid on the target.
struct TwinGuidedSummary {
  int grid_points = 0;         ///< every combination of the space
  int launchable = 0;          ///< those that pass check_config: what a grid would launch on the target
  int predicted_failures = 0;  ///< launchable configs the twin predicts to fail (not measured)
  int measured = 0;            ///< distinct configs launched on the target by the search (with baselines)
  int launches_saved = 0;      ///< (launchable − measured) × repeats
  std::string stop;            ///< why the search stopped measuring
};

/// On the twin, greedy's answer checked against the full grid (cheap there).
struct GridCheck {
  int points = 0;  ///< grid size
  /// > 0 when the grid is above search.max_trials: the number of configs one or two knob changes away from
  /// each engine's best that were predicted instead (the neighbourhood greedy's one-knob steps can miss).
  int neighbourhood = 0;
  bool run = false;
  std::string not_run;  ///< why nothing was run (grid and neighbourhood above search.max_trials)
  Evaluation grid_best;
  /// Every configuration the check predicted, best first (grid_best first): the next candidates when the
  /// best breaks a bound on another scenario (SearchOutcome::passed_over).
  std::vector<Evaluation> ranked;
  double gap_pct = 0.0;  ///< grid best over greedy best, percent
  /// The grid's best beats greedy's by more than the noise (min_gain_pct). Then the search's best (and so the
  /// recommendation) is the grid's, and `greedy_best` keeps greedy's answer for the report.
  bool disagrees = false;
  Evaluation greedy_best;
};

/// How the twin's ranking held on the target (twin-guided).
struct RankingCheck {
  std::vector<std::string> keys;  ///< top-k configs by predicted objective
  std::vector<double> predicted, measured;
  double spearman = 0.0, kendall = 0.0;
};

/// Configurations tried on a measured target after a best that fails on another scenario
/// (SearchOutcome::passed_over; the twin tries every one). Chosen, not fitted: each costs GPU time.
inline constexpr int kMaxPassedOver = 5;

/// Everything a report needs.
struct SearchOutcome {
  Strategy strategy = Strategy::kGreedy;
  std::vector<EnginePath> engines;  ///< greedy: one per engine; grid: baselines only
  std::vector<Evaluation> ranked;   ///< grid/twin-guided: every evaluated point, best first
  Evaluation best_baseline;         ///< best engine baseline (a twin one on an unmodelled path last)
  Evaluation best;                  ///< best config found (on the objective's scenarios)
  /// Ranked above `best` on the objective's scenarios but broke a [[constraints]] bound or failed on another
  /// scenario, in the order tried: each one's evaluation on every scenario (`reason` says where). When none
  /// of those tried (kMaxPassedOver) holds everywhere, `best` is the objective's and the first has its key.
  std::vector<Evaluation> passed_over;
  std::vector<GeneralizationRow> generalization;
  std::vector<KnobVerdict> verdicts;
  CandidateConfig recommended;
  Rendered recommended_command;
  Evaluation recommended_eval;  ///< objective scenarios
  RecommendationRule rule = RecommendationRule::kTradeOff;
  std::optional<AlternativeCommand> alternative;
  /// The best of the ablation's configs that did significantly better on the objective than `best` (a knob
  /// the search kept costs; KnobVerdict::better_without), when there is one: reported beside `best`.
  std::optional<Evaluation> better_by_ablation;
  std::optional<RankingCheck> ranking;
  std::optional<TwinGuidedSummary> twin_guided;
  std::optional<GridCheck> grid_check;
  bool complete = true;  ///< false when some trial was not run (partial report)
  LoadOutcome load;      ///< load curves, SLO search, Pareto front, objectives (tune/load.h)
};

/// Runs the study's strategy. `twin` is used by twin-guided to rank (may be the same evaluator as
/// `target`). Throws Interrupted when stopped.
SearchOutcome run_search(const Study& study, Evaluator& target, Evaluator* twin);

/// Planned number of trials for the progress display (an estimate for greedy).
int planned_trials(const Study& study);

}  // namespace servelab::tune
