// Grid search: every valid combination, ranked; and, on the twin, greedy's answer checked against it.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "tune/search/search_space.h"

namespace servelab::tune::detail {

namespace {

/// Every grid point evaluated in `phase`, best first.
std::vector<Evaluation> evaluate_grid(const SearchSpace& space, Evaluator& ev, const std::string& phase) {
  std::vector<Evaluation> evals;
  const auto configs = space.grid();
  evals.reserve(configs.size());
  ev.prefetch(configs, space.objective_scenarios(), phase);  // independent: in parallel where the target can
  for (const auto& c : configs) {
    evals.push_back(ev.evaluate(c, space.objective_scenarios(), phase));
  }
  std::stable_sort(evals.begin(), evals.end(), ranks_above);
  return evals;
}

}  // namespace

void search_grid(const SearchSpace& space, Evaluator& target, SearchOutcome& out) {
  std::vector<Evaluation> evals = evaluate_grid(space, target, "grid");
  pick_baselines(space, target, out, "grid");
  for (auto& p : out.engines)
    for (const auto& e : evals)
      if (e.config.engine == p.engine && ranks_above(e, p.best)) p.best = e;
  out.best = evals.front();
  out.ranked = std::move(evals);
}

namespace {

/// Every config of `center`'s engine one or two knob changes away from it: where greedy, changing one knob
/// at a time, can miss a pair of values that only wins together.
std::vector<CandidateConfig> two_changes_away(const SearchSpace& space, const CandidateConfig& center) {
  const auto& axes = space.axes(center.engine);
  std::vector<CandidateConfig> out;
  for (size_t i = 0; i < axes.size(); ++i)
    for (const auto& vi : axes[i].values) {
      if (vi == space.value_of(center, axes[i])) continue;
      CandidateConfig one = center;
      one.knobs[axes[i].name] = vi;
      out.push_back(one);
      for (size_t j = i + 1; j < axes.size(); ++j)
        for (const auto& vj : axes[j].values) {
          if (vj == space.value_of(center, axes[j])) continue;
          CandidateConfig two = one;
          two.knobs[axes[j].name] = vj;
          out.push_back(std::move(two));
        }
    }
  return out;
}

}  // namespace

void check_against_grid(const SearchSpace& space, Evaluator& twin, SearchOutcome& out) {
  GridCheck g;
  const size_t n = space.grid_size();
  const size_t cap = static_cast<size_t>(space.options().max_trials);
  g.points = n > static_cast<size_t>(std::numeric_limits<int>::max()) ? std::numeric_limits<int>::max()
                                                                      : static_cast<int>(n);
  std::vector<CandidateConfig> configs;
  if (n <= cap) {
    configs = space.grid();
  } else {
    for (const auto& p : out.engines)
      for (auto& c : two_changes_away(space, p.best.config)) configs.push_back(std::move(c));
    if (configs.size() > cap) {
      g.not_run = fmt::format(
          "the grid has {} points and the configurations two knob changes from each engine's "
          "best {}, both more than search.max_trials = {}",
          n, configs.size(), cap);
      out.grid_check = g;
      return;
    }
    g.neighbourhood = static_cast<int>(configs.size());
  }
  std::vector<Evaluation> evals;
  evals.reserve(configs.size() + 1);
  evals.push_back(out.best);
  for (const auto& c : configs) {
    if (space.invalid(c)) continue;  // pruned before launch: nothing to predict, nothing to record
    evals.push_back(twin.evaluate(c, space.objective_scenarios(), "grid-check"));
  }
  std::stable_sort(evals.begin(), evals.end(), ranks_above);
  g.run = true;
  g.grid_best = evals.front();
  if (g.grid_best.feasible && out.best.feasible)
    g.gap_pct = change_pct(out.best.objective.mean, g.grid_best.objective.mean);
  g.disagrees = g.grid_best.key != out.best.key && space.beats(out.best, g.grid_best);
  g.ranked = std::move(evals);
  out.grid_check = std::move(g);
}

}  // namespace servelab::tune::detail
