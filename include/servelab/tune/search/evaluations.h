// servelab/tune: one walk over the evaluations a search outcome holds (the ranking, each engine's path, the
// chosen configurations), for the report's finalists, the twin's verdict and the load analysis.
#pragma once

#include <functional>
#include <vector>

#include "servelab/tune/search/search.h"

namespace servelab::tune {

/// The order in which distinct_evaluations visits a SearchOutcome's evaluations. Each reader keeps the
/// order it has always had: it decides which of a configuration's evaluations is kept and the order of ties.
enum class EvaluationOrder {
  /// The ranking, the grid check's best (when the grid ran), then per engine its best, its baseline and its
  /// steps (the report's finalists: not the grid check's whole ranking, whose top is often one configuration
  /// with knobs the prediction does not depend on).
  kRankingFirst,
  /// kRankingFirst, then every configuration the grid check predicted (GridCheck::ranked): the candidates
  /// after a best that breaks a bound on another scenario (recommend.cc).
  kRankingFirstThenGrid,
  /// The ranking, per engine its best, its baseline and its steps, then the grid check's best (not its
  /// whole ranking: hundreds of predictions would make "Measure these" unreadable), the recommended
  /// command's evaluation and the alternative command's (the twin's verdict).
  kRankingFirstThenChosen,
  /// The best and the recommended evaluations, then per engine its baseline, its steps and its best, then
  /// the ranking (the load analysis).
  kChosenFirst,
};

/// The evaluations of `outcome` visited in `order`, each configuration (Evaluation::key) at most once: the
/// first evaluation of it that `keep` accepts (all when `keep` is empty). Evaluations without a key (an
/// outcome's unset best, say) are skipped. The pointers point into `outcome`.
std::vector<const Evaluation*> distinct_evaluations(const SearchOutcome& outcome, EvaluationOrder order,
                                                    const std::function<bool(const Evaluation&)>& keep = {});

/// SearchOutcome::passed_over starts with the best itself: no configuration tried holds on every scenario
/// (the reports say there is no answer, summary.json's verdict is "none", tune exits 1).
bool none_passed_over_holds(const SearchOutcome& outcome);

/// Sorts `evaluations` by objective mean, highest first, keeping the order of equal means (stable).
void sort_best_first(std::vector<const Evaluation*>& evaluations);

}  // namespace servelab::tune
