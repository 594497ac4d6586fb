// servelab/tune: the search space of a study, built once, and the small interface every search strategy
// works on. A strategy sees the engines, the knobs each engine can take (with their values), the grid,
// validation and rendering, and the search options; it hands configs to an Evaluator. A new strategy is
// one file (search_<name>.cc) plus its line in run_search's dispatch and its name in the study parser.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/search/search.h"

namespace servelab::tune {

/// One knob as a strategy sees it: value labels in study order, the baseline, each value's number (int and
/// float knobs; nullopt for the engine default and non-numeric values).
struct KnobAxis {
  std::string name;
  std::vector<std::string> values;
  std::string baseline;
  std::vector<std::optional<double>> numbers;  ///< parallel to `values`
  bool lower_saves_memory = false;             ///< Knob::lower_saves_memory
};

/// The value of `axis` one step below `current` by number: the largest numbered value smaller than
/// current's number, or (current has no number, e.g. "default") the smallest numbered value. nullopt when
/// nothing is lower.
std::optional<std::string> lower_value(const KnobAxis& axis, const std::string& current);

/// The study's knob space. Thread-safety: immutable after construction.
class SearchSpace {
 public:
  /// Builds the space of `study` (kept by reference: it must outlive the space).
  explicit SearchSpace(const Study& study);

  const std::vector<std::string>& engines() const { return engines_; }
  /// Knobs `engine` can take, in search order (study.search.knob_order). Throws std::out_of_range.
  const std::vector<KnobAxis>& axes(const std::string& engine) const;
  const std::vector<std::string>& objective_scenarios() const { return objective_scenarios_; }
  const SearchSpec& options() const { return study_.search; }
  const Study& study() const { return study_; }

  /// Every combination of each engine's axes (baselines included). Throws std::runtime_error naming
  /// search.max_trials when there are more points.
  std::vector<CandidateConfig> grid() const;
  /// Number of grid points (without building them; saturates at SIZE_MAX).
  size_t grid_size() const;
  /// Why `config` cannot be launched (check_config), or nullopt.
  std::optional<std::string> invalid(const CandidateConfig& config) const;
  /// Is `candidate` better than `incumbent` by more than the noise (significantly_better)?
  bool beats(const Evaluation& incumbent, const Evaluation& candidate) const;
  /// The config's value of knob `name` (its baseline when unset).
  std::string value_of(const CandidateConfig& config, const KnobAxis& axis) const;

 private:
  const Study& study_;
  std::vector<std::string> engines_;
  std::map<std::string, std::vector<KnobAxis>> axes_;
  std::vector<std::string> objective_scenarios_;
};

namespace detail {

/// Better of two evaluations on the objective: feasible first, then the higher mean.
bool ranks_above(const Evaluation& a, const Evaluation& b);
/// A twin prediction of `e` ran on a kernel path the twin has no figure for on some scenario
/// (kTwinUnmodelledMetric > 0 in its results); never true of a measured evaluation.
bool on_unmodelled_path(const Evaluation& e);
/// The decision text of an evaluation that failed or is infeasible ("rejected: ...", "failed (oom): ...", and
/// "no verdict (invalid): ..." for an inconclusive one).
std::string failure_decision(const Evaluation& e);
/// Evaluates each engine's baseline into out.engines and picks out.best_baseline: the best feasible one
/// not on_unmodelled_path when there is one, else the best.
void pick_baselines(const SearchSpace& space, Evaluator& target, SearchOutcome& out,
                    const std::string& phase);

// The strategies (one file each) and the steps after the search.
void search_greedy(const SearchSpace& space, Evaluator& target, SearchOutcome& out);  // search_greedy.cc
void search_grid(const SearchSpace& space, Evaluator& target, SearchOutcome& out);    // search_grid.cc
/// On the twin: greedy's best against the whole grid's (out.grid_check).
void check_against_grid(const SearchSpace& space, Evaluator& twin, SearchOutcome& out);  // search_grid.cc
void search_twin_guided(const SearchSpace& space, Evaluator& target, Evaluator& twin,
                        SearchOutcome& out);  // search_twin_guided.cc
/// Baseline vs best on every scenario, the ablation of each knob and the recommendation (recommend.cc).
void generalize_and_recommend(const Study& study, Evaluator& target, SearchOutcome& out);

}  // namespace detail
}  // namespace servelab::tune
