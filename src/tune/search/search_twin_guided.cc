// Twin-guided search: rank every configuration on the twin, measure the top k on the target, then keep
// measuring while some untried configuration could still win: its prediction plus the twin's error band is
// at least the best measured value. Stops when the band says no untried configuration can win.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "servelab/tune/study/load_points.h"
#include "tune/search/search_space.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune::detail {

namespace {

/// The twin's band on a prediction of the objective: prediction_band, the report's rule (the objective's
/// band key: tok/s, or the goodput band its SLO search propagated; search.twin_band_pct when the twin gave
/// none; at least kUnmodelledBandPct on a kernel path the twin has no figure for).
TwinBand band_of(const SearchSpace& space, const Evaluation& predicted) {
  return prediction_band(predicted, twin_band_key(primary_objective_label(space.study())),
                         space.options().twin_band_pct);
}

struct Candidate {
  const Evaluation* predicted;
  TwinBand band;
  /// The prediction's high end under its band (the prediction itself without one).
  double bound() const { return band.pct ? band.high(predicted->objective.mean) : predicted->objective.mean; }
};

/// Measures `c` on the target into `measured` and the ranking check.
void measure(const SearchSpace& space, Evaluator& target, const Candidate& c,
             std::vector<Evaluation>& measured, RankingCheck& rc) {
  measured.push_back(target.evaluate(c.predicted->config, space.objective_scenarios(), "measure"));
  rc.keys.push_back(c.predicted->key);
  rc.predicted.push_back(c.predicted->objective.mean);
  rc.measured.push_back(measured.back().feasible ? measured.back().objective.mean : 0.0);
}

double best_measured(const std::vector<Evaluation>& measured) {
  double best = 0;
  for (const auto& m : measured)
    if (m.feasible) best = std::max(best, m.objective.mean);
  return best;
}

/// After the top k: measures the untried candidate with the highest bound while that bound reaches the best
/// measured value; returns why it stopped.
std::string measure_while_some_can_win(const SearchSpace& space, Evaluator& target,
                                       std::vector<Candidate> rest, std::vector<Evaluation>& measured,
                                       RankingCheck& rc) {
  const int cap = space.options().max_trials;
  while (!rest.empty()) {
    auto top = std::max_element(rest.begin(), rest.end(),
                                [](const Candidate& a, const Candidate& b) { return a.bound() < b.bound(); });
    if (!top->band.pct)
      return fmt::format(
          "no error band for {} (the twin gave none and search.twin_band_pct is not set): measured the "
          "twin's top {} only",
          top->predicted->label, space.options().top_k);
    const double best = best_measured(measured);
    if (best > 0 && top->bound() < best)
      return fmt::format(
          "no untried configuration can win: the highest prediction + band is {:.2f} ({} {}, "
          "{:.2f}, band {}), below the best measured {:.2f}",
          top->bound(), top->predicted->config.engine, top->predicted->label, top->predicted->objective.mean,
          top->band.text(), best);
    if (static_cast<int>(measured.size()) >= cap)
      return fmt::format("search.max_trials = {} measurements reached", cap);
    measure(space, target, *top, measured, rc);
    rest.erase(top);
  }
  return "every configuration the twin predicts to run was measured";
}

}  // namespace

void search_twin_guided(const SearchSpace& space, Evaluator& target, Evaluator& twin, SearchOutcome& out) {
  std::vector<Evaluation> predicted;
  const auto configs = space.grid();
  predicted.reserve(configs.size());
  for (const auto& c : configs) {
    predicted.push_back(twin.evaluate(c, space.objective_scenarios(), "rank"));
  }
  std::stable_sort(predicted.begin(), predicted.end(), ranks_above);
  TwinGuidedSummary sum;
  sum.grid_points = static_cast<int>(configs.size());
  std::vector<Candidate> first, rest;
  for (const auto& p : predicted) {
    if (space.invalid(p.config)) continue;
    ++sum.launchable;
    if (!p.feasible) {
      ++sum.predicted_failures;
      continue;
    }
    auto& into = static_cast<int>(first.size()) < space.options().top_k ? first : rest;
    into.push_back(Candidate{&p, band_of(space, p)});
  }
  RankingCheck rc;
  std::vector<Evaluation> measured;
  std::vector<CandidateConfig> top;  // the top k at once where the target runs trials in parallel (Slurm)
  for (const auto& c : first) top.push_back(c.predicted->config);
  target.prefetch(top, space.objective_scenarios(), "measure");
  for (const auto& c : first) measure(space, target, c, measured, rc);
  sum.stop = measure_while_some_can_win(space, target, std::move(rest), measured, rc);
  rc.spearman = spearman(rc.predicted, rc.measured);
  rc.kendall = kendall_tau(rc.predicted, rc.measured);
  out.ranking = rc;
  pick_baselines(space, target, out, "baseline");
  if (measured.empty()) throw std::runtime_error("the twin found no feasible config to measure");
  std::set<std::string> launched;
  for (const auto& m : measured) launched.insert(m.key);
  for (const auto& p : out.engines) launched.insert(p.baseline.key);
  sum.measured = static_cast<int>(launched.size());
  sum.launches_saved = std::max(0, sum.launchable - sum.measured) * target.repeats();
  out.twin_guided = sum;
  std::stable_sort(measured.begin(), measured.end(), ranks_above);
  out.best = measured.front();
  for (auto& p : out.engines)
    for (const auto& e : measured)
      if (e.config.engine == p.engine && ranks_above(e, p.best)) p.best = e;
  out.ranked = std::move(measured);
}

}  // namespace servelab::tune::detail
