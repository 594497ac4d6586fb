// Greedy search (the reference study's method): per engine, one knob at a time in search order, keeping the
// value that beats the incumbent by the most (by more than the noise). A value that failed alone (out of
// memory, refused at start-up) is retried once at the end with the best-so-far's other knobs and one value
// lower on each knob that saves memory when lowered: knobs interact, and a layout that does not fit at the
// default chunked-prefill size may fit, and win, at a smaller one.
#include <fmt/format.h>

#include "tune/search/search_space.h"

namespace servelab::tune::detail {

namespace {

/// The decision of a candidate against the incumbent ("better" is resolved to "kept" by the caller).
std::string decide(const SearchSpace& space, const Evaluation& incumbent, Step& s) {
  if (s.eval.feasible && incumbent.feasible)
    s.gain_pct = change_pct(incumbent.objective.mean, s.eval.objective.mean);
  if (!s.eval.feasible) return failure_decision(s.eval);
  if (space.beats(incumbent, s.eval)) return "better";
  return s.gain_pct > 0 ? "not significant" : "no gain";
}

/// Tries every other value of `axis` on top of `incumbent`; keeps the best significant winner.
void try_knob(const SearchSpace& space, Evaluator& target, const KnobAxis& axis, EnginePath& p,
              Evaluation& incumbent) {
  const std::string cur = space.value_of(incumbent.config, axis);
  const size_t first = p.steps.size();
  int winner = -1;
  std::vector<CandidateConfig> candidates;  // independent trials: in parallel where the target can (Slurm)
  for (const auto& v : axis.values) {
    if (v == cur) continue;
    candidates.push_back(incumbent.config);
    candidates.back().knobs[axis.name] = v;
  }
  target.prefetch(candidates, space.objective_scenarios(), "greedy");
  for (const auto& v : axis.values) {
    if (v == cur) continue;
    CandidateConfig cfg = incumbent.config;
    cfg.knobs[axis.name] = v;
    Step s;
    s.knob = axis.name;
    s.value = v;
    s.eval = target.evaluate(cfg, space.objective_scenarios(), "greedy");
    s.decision = decide(space, incumbent, s);
    p.steps.push_back(std::move(s));
    const Evaluation& last = p.steps.back().eval;
    if (p.steps.back().decision == "better" &&
        (winner < 0 || last.objective.mean > p.steps[winner].eval.objective.mean))
      winner = static_cast<int>(p.steps.size() - 1);
  }
  for (size_t i = first; i < p.steps.size(); ++i)
    if (p.steps[i].decision == "better" && static_cast<int>(i) != winner)
      p.steps[i].decision = "better, but " + axis.name + "=" + p.steps[winner].value + " gained more";
  if (winner < 0) return;
  p.steps[winner].decision = "kept";
  p.steps[winner].kept = true;
  incumbent = p.steps[winner].eval;
}

bool fails_for_memory_or_refusal(const Step& s) {
  return s.retried_with.empty() &&
         (s.eval.status == TrialStatus::kOutOfMemory || s.eval.status == TrialStatus::kStartupRefused);
}

/// The retry of `failed` on top of `incumbent`: its knob=value, the incumbent's other knobs, and one value
/// lower on each lower_saves_memory knob. nullopt when it would be the failed config again.
std::optional<Step> retry_step(const SearchSpace& space, const std::vector<KnobAxis>& axes,
                               const Step& failed, const Evaluation& incumbent) {
  CandidateConfig cfg = incumbent.config;
  cfg.knobs[failed.knob] = failed.value;
  std::vector<std::string> lowered;
  for (const auto& a : axes) {
    if (a.name == failed.knob || !a.lower_saves_memory) continue;
    if (auto lo = lower_value(a, space.value_of(cfg, a))) {
      cfg.knobs[a.name] = *lo;
      lowered.push_back(a.name + "=" + *lo);
    }
  }
  Step r;
  r.knob = failed.knob;
  r.value = failed.value;
  for (const auto& a : axes)
    if (a.name != failed.knob && space.value_of(cfg, a) != space.value_of(failed.eval.config, a))
      r.retried_with[a.name] = space.value_of(cfg, a);
  if (r.retried_with.empty()) return std::nullopt;
  r.eval.config = cfg;
  r.retry_why = fmt::format("{}={} failed alone ({}); retried once with the best-so-far's other knobs",
                            failed.knob, failed.value, trial_status_name(failed.eval.status));
  if (!lowered.empty())
    r.retry_why +=
        fmt::format(" and one value lower on the knobs that save memory ({})", fmt::join(lowered, ", "));
  return r;
}

void retry_failures(const SearchSpace& space, Evaluator& target, EnginePath& p, Evaluation& incumbent) {
  const auto& axes = space.axes(p.engine);
  const size_t tried = p.steps.size();
  for (size_t i = 0; i < tried; ++i) {
    if (!fails_for_memory_or_refusal(p.steps[i])) continue;
    std::optional<Step> r = retry_step(space, axes, p.steps[i], incumbent);
    if (!r) continue;
    r->eval = target.evaluate(r->eval.config, space.objective_scenarios(), "greedy-retry");
    r->decision = decide(space, incumbent, *r);
    if (r->decision == "better") {
      r->decision = "kept";
      r->kept = true;
      incumbent = r->eval;
    }
    p.steps.push_back(std::move(*r));
  }
}

}  // namespace

void search_greedy(const SearchSpace& space, Evaluator& target, SearchOutcome& out) {
  pick_baselines(space, target, out, "baseline");
  for (auto& p : out.engines) {
    Evaluation incumbent = p.baseline;
    for (const auto& axis : space.axes(p.engine)) try_knob(space, target, axis, p, incumbent);
    retry_failures(space, target, p, incumbent);
    p.best = incumbent;
  }
  out.best = out.engines.front().best;
  for (const auto& p : out.engines)
    if (ranks_above(p.best, out.best)) out.best = p.best;
}

}  // namespace servelab::tune::detail
