// The one walk over a search outcome's evaluations (tune/search/evaluations.h): each reader's order, one
// evaluation per configuration, the filter, and the best-first sort that keeps ties in walk order.
#include "servelab/tune/search/evaluations.h"

#include <gtest/gtest.h>

namespace servelab::tune {
namespace {

/// An evaluation of configuration `key` with objective mean `mean` (one run), feasible unless `mean` is 0.
Evaluation evaluation_of(const std::string& key, double mean, bool predicted = true) {
  Evaluation e;
  e.key = key;
  e.objective.mean = mean;
  e.objective.n = 1;
  e.feasible = mean > 0;
  e.predicted = predicted;
  return e;
}

/// Ranking r1, r2; engine A (baseline a0, steps a1 and r1, best a1); grid best g; best a1, recommended
/// c, alternative d; one engine path's best left without a key.
SearchOutcome outcome_with_every_source() {
  SearchOutcome o;
  o.ranked = {evaluation_of("r1", 50), evaluation_of("r2", 40)};
  EnginePath a;
  a.baseline = evaluation_of("a0", 10);
  a.steps.push_back(Step{"k", "1", evaluation_of("a1", 60)});
  a.steps.push_back(Step{"k", "2", evaluation_of("r1", 55)});
  a.best = evaluation_of("a1", 60);
  o.engines.push_back(a);
  o.engines.push_back(EnginePath{"b", evaluation_of("", 0), {}, evaluation_of("", 0)});
  o.grid_check = GridCheck{};
  o.grid_check->run = true;
  o.grid_check->grid_best = evaluation_of("g", 40);
  o.best = evaluation_of("a1", 60);
  o.recommended_eval = evaluation_of("c", 0);
  o.alternative = AlternativeCommand{};
  o.alternative->eval = evaluation_of("d", 70, false);
  return o;
}

std::vector<std::string> keys_of(const std::vector<const Evaluation*>& evaluations) {
  std::vector<std::string> out;
  for (const Evaluation* e : evaluations) out.push_back(e->key);
  return out;
}

TEST(DistinctEvaluations, EachReadersOrderOneEvaluationPerConfiguration) {
  const SearchOutcome o = outcome_with_every_source();
  using V = std::vector<std::string>;
  // The finalists show the grid check's best (a trial found it missing while summary.json named it best).
  EXPECT_EQ(keys_of(distinct_evaluations(o, EvaluationOrder::kRankingFirst)),
            (V{"r1", "r2", "g", "a1", "a0"}));
  EXPECT_EQ(keys_of(distinct_evaluations(o, EvaluationOrder::kRankingFirstThenChosen)),
            (V{"r1", "r2", "a1", "a0", "g", "c", "d"}));
  EXPECT_EQ(keys_of(distinct_evaluations(o, EvaluationOrder::kChosenFirst)),
            (V{"a1", "c", "a0", "r1", "r2"}));
  // The first evaluation of r1 in the walk is kept: the ranking's (50) first, the step's (55) first when the
  // engines come before the ranking.
  EXPECT_EQ(distinct_evaluations(o, EvaluationOrder::kRankingFirst)[0]->objective.mean, 50);
  EXPECT_EQ(distinct_evaluations(o, EvaluationOrder::kChosenFirst)[3]->objective.mean, 55);
  // The candidates after a best that breaks a bound elsewhere: kRankingFirst, then the grid check's whole
  // ranking (its configurations not seen already).
  SearchOutcome with_grid = o;
  with_grid.grid_check->ranked = {evaluation_of("g", 40), evaluation_of("h", 35), evaluation_of("r2", 40)};
  EXPECT_EQ(keys_of(distinct_evaluations(with_grid, EvaluationOrder::kRankingFirstThenGrid)),
            (V{"r1", "r2", "g", "a1", "a0", "h"}));
  // No grid run: its best is not visited.
  SearchOutcome no_grid = o;
  no_grid.grid_check->run = false;
  EXPECT_EQ(keys_of(distinct_evaluations(no_grid, EvaluationOrder::kRankingFirstThenChosen)),
            (V{"r1", "r2", "a1", "a0", "c", "d"}));
}

TEST(DistinctEvaluations, KeepsTheFirstAcceptedAndSortsBestFirstStably) {
  const SearchOutcome o = outcome_with_every_source();
  // The twin verdict's filter: predicted, feasible, not the top pick; then best first, ties in walk order.
  std::vector<const Evaluation*> v =
      distinct_evaluations(o, EvaluationOrder::kRankingFirstThenChosen, [&](const Evaluation& e) {
        return e.key != o.best.key && e.feasible && e.predicted && e.objective.n > 0;
      });
  sort_best_first(v);
  EXPECT_EQ(keys_of(v), (std::vector<std::string>{"r1", "r2", "g", "a0"}));
  // A configuration whose first evaluation is refused is kept at its first accepted one (r1: the step's 55).
  const auto above_50 = distinct_evaluations(o, EvaluationOrder::kRankingFirst,
                                             [](const Evaluation& e) { return e.objective.mean > 50; });
  ASSERT_EQ(keys_of(above_50), (std::vector<std::string>{"a1", "r1"}));
  EXPECT_EQ(above_50[1]->objective.mean, 55);
}

}  // namespace
}  // namespace servelab::tune
