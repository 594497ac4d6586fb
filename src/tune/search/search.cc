// run_search: builds the search space once, runs the study's strategy on it (one file each:
// search_greedy.cc, search_grid.cc, search_twin_guided.cc), checks greedy against the grid on the twin, then
// generalizes and recommends (recommend.cc).
#include "servelab/tune/search/search.h"

#include "tune/search/search_space.h"

namespace servelab::tune {

int planned_trials(const Study& study) {
  int n = 0;
  if (study.search.strategy == Strategy::kGreedy) {
    n = static_cast<int>(study.engines.size());
    for (const auto& e : study.engines)
      for (const auto& k : knobs_for_engine(study, e.name))
        n += static_cast<int>(study.knob(k).values.size()) - 1;
  } else if (study.search.strategy == Strategy::kGrid || study.target == Target::kTwin) {
    n = static_cast<int>(grid_points_within_limit(study));  // counted, not built
    if (study.search.strategy == Strategy::kTwinGuided) n += study.search.top_k + 1;
  } else {
    n = study.search.top_k + static_cast<int>(study.engines.size());  // the target's share of twin-guided
  }
  n += 2 + (study.search.ablation ? 3 : 0);
  return n * (study.target == Target::kTwin ? 1 : study.repeats);
}

SearchOutcome run_search(const Study& study, Evaluator& target, Evaluator* twin) {
  const SearchSpace space(study);
  SearchOutcome out;
  out.strategy = study.search.strategy;
  if (target.planned() == 0) target.set_planned(planned_trials(study));
  switch (study.search.strategy) {
    case Strategy::kGreedy:
      detail::search_greedy(space, target, out);
      // On the twin a grid costs minutes, not GPU-hours: say when greedy's answer is not the grid's.
      if (target.predicts()) detail::check_against_grid(space, target, out);
      if (out.grid_check && out.grid_check->disagrees) {  // recommend the better of the two (issue 30 §2)
        out.grid_check->greedy_best = out.best;
        out.best = out.grid_check->grid_best;
      }
      break;
    case Strategy::kGrid:
      detail::search_grid(space, target, out);
      break;
    case Strategy::kTwinGuided:
      if (!twin) throw std::runtime_error("twin-guided search needs the twin runner");
      detail::search_twin_guided(space, target, *twin, out);
      break;
  }
  detail::generalize_and_recommend(study, target, out);
  out.complete = target.missing() == 0 && (!twin || twin->missing() == 0);
  return out;
}

}  // namespace servelab::tune
