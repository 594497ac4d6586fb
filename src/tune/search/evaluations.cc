// The one walk over a search outcome's evaluations (evaluations.h).
#include "servelab/tune/search/evaluations.h"

#include <algorithm>
#include <set>

namespace servelab::tune {

namespace {

/// Every evaluation of `o` in `order`, duplicates included.
std::vector<const Evaluation*> walk_outcome(const SearchOutcome& o, EvaluationOrder order) {
  std::vector<const Evaluation*> all;
  if (order == EvaluationOrder::kChosenFirst) {
    all = {&o.best, &o.recommended_eval};
    for (const auto& p : o.engines) {
      all.push_back(&p.baseline);
      for (const auto& st : p.steps) all.push_back(&st.eval);
      all.push_back(&p.best);
    }
    for (const auto& e : o.ranked) all.push_back(&e);
    return all;
  }
  for (const auto& e : o.ranked) all.push_back(&e);
  const bool ranking_first =
      order == EvaluationOrder::kRankingFirst || order == EvaluationOrder::kRankingFirstThenGrid;
  if (o.grid_check && o.grid_check->run && ranking_first) all.push_back(&o.grid_check->grid_best);
  for (const auto& p : o.engines) {
    all.push_back(&p.best);
    all.push_back(&p.baseline);
    for (const auto& st : p.steps) all.push_back(&st.eval);
  }
  if (o.grid_check && order == EvaluationOrder::kRankingFirstThenGrid)
    for (const auto& e : o.grid_check->ranked) all.push_back(&e);
  if (order == EvaluationOrder::kRankingFirstThenChosen) {
    if (o.grid_check && o.grid_check->run) all.push_back(&o.grid_check->grid_best);
    all.push_back(&o.recommended_eval);
    if (o.alternative) all.push_back(&o.alternative->eval);
  }
  return all;
}

}  // namespace

std::vector<const Evaluation*> distinct_evaluations(const SearchOutcome& outcome, EvaluationOrder order,
                                                    const std::function<bool(const Evaluation&)>& keep) {
  std::vector<const Evaluation*> out;
  std::set<std::string> seen;
  for (const Evaluation* e : walk_outcome(outcome, order))
    if (!e->key.empty() && (!keep || keep(*e)) && seen.insert(e->key).second) out.push_back(e);
  return out;
}

void sort_best_first(std::vector<const Evaluation*>& evaluations) {
  std::stable_sort(evaluations.begin(), evaluations.end(), [](const Evaluation* a, const Evaluation* b) {
    return a->objective.mean > b->objective.mean;
  });
}

bool none_passed_over_holds(const SearchOutcome& outcome) {
  return !outcome.passed_over.empty() && outcome.passed_over.front().key == outcome.best.key;
}

}  // namespace servelab::tune
