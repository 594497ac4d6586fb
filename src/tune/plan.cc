// What a study costs on its target, counted one way for the dry-run, the console and the report
// (issue 30 §5): engine starts on GPUs only, never the twin's predictions (its ranking of the grid, its
// bracket of each SLO search) nor an SLO probe run on an engine kept up.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "servelab/tune/load/load.h"
#include "servelab/tune/tune.h"

namespace servelab::tune {

namespace {

/// Evaluator::record_rejection's trial key: a config check_config refused, never launched.
bool pruned_before_launch(const TrialRecord& r) {
  const std::string suffix = "|rejected";
  return r.trial_key.size() >= suffix.size() &&
         r.trial_key.compare(r.trial_key.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The target's trial ended in a failure of the engine itself (refused, out of memory, crashed).
bool engine_refused(TrialStatus s) {
  return s == TrialStatus::kRejected || s == TrialStatus::kStartupRefused || s == TrialStatus::kOutOfMemory ||
         s == TrialStatus::kCrashed;
}

/// `predict` standing in for `target`'s runner: on the local target an engine asked to stay up
/// (TrialRequest::keep_engine) is reused by the next trial of the same config, as the local runner does,
/// so the plan counts the launches the run makes. Slurm launches every trial (a job each).
TrialRunner playing_target(TrialRunner predict, Target target) {
  auto kept = std::make_shared<std::string>();  // config key of the engine kept up ("" = none)
  return [predict = std::move(predict), target, kept](const TrialRequest& req) {
    if (req.release_engine) {
      kept->clear();
      return TrialOutcome{};
    }
    const bool reused = target == Target::kLocal && req.keep_engine && *kept == req.config_key;
    TrialOutcome out = predict(req);
    out.engine_reused = reused;
    out.engine_kept = target == Target::kLocal && req.keep_engine && out.status == TrialStatus::kOk;
    *kept = out.engine_kept ? req.config_key : "";
    return out;
  };
}

/// The study played with `predict` for every trial, evaluators wired as run_study wires them: the target's
/// (tagged as the target, engine reuse played), and the twin's for twin-guided ranking and SLO brackets.
TrialTally play(const Study& study, const TrialRunner& predict) {
  const bool on_twin = study.target == Target::kTwin;
  Evaluator target(study, on_twin ? predict : playing_target(predict, study.target),
                   target_name(study.target), nullptr, {}, nullptr, nullptr, {});
  const bool guided = study.search.strategy == Strategy::kTwinGuided;
  std::optional<Evaluator> twin;
  if (!on_twin && (guided || !study.slo.targets.empty()))
    twin.emplace(study, predict, "twin", nullptr, std::vector<TrialRecord>{}, nullptr, nullptr,
                 std::filesystem::path{});
  if (twin && !study.slo.targets.empty()) target.set_load_guide(&*twin);
  SearchOutcome outcome = run_search(study, target, guided ? (on_twin ? &target : &*twin) : nullptr);
  analyze_load(study, target, outcome);  // the load sweep and SLO search runs count too
  return tally_trials(study, target.records());
}

}  // namespace

TrialTally tally_trials(const Study& study, const std::vector<TrialRecord>& records) {
  TrialTally t;
  t.on_gpus = study.target != Target::kTwin;
  const std::string tag = std::string(target_name(study.target)) + "|";
  for (const auto& r : records) {
    if (r.trial_key.rfind(tag, 0) != 0) continue;  // the twin's predictions for another target
    ++t.trials;
    if (pruned_before_launch(r)) {
      ++t.pruned;
      continue;
    }
    if (r.outcome.status == TrialStatus::kInvalid) {
      if (t.invalid++ == 0) t.first_invalid_reason = r.outcome.reason;
    }
    if (r.outcome.status == TrialStatus::kError) {
      if (t.errors++ == 0) t.first_error_reason = r.outcome.reason;
    }
    t.wall_s += r.outcome.wall_s;
    for (const auto& sc : r.outcome.scenarios)
      if (auto d = sc.metrics.find("Benchmark duration (s)"); d != sc.metrics.end())
        t.benchmark_s += d->second;
    if (!t.on_gpus) continue;
    if (r.outcome.engine_reused) {
      ++t.reused;
      continue;
    }
    ++t.launches;
    if (engine_refused(r.outcome.status)) ++t.refused;
  }
  return t;
}

std::string TrialTally::text(int gpu_count) const {
  if (!on_gpus) return fmt::format("{} trials predicted on the twin; no engine launched", trials);
  std::string s = fmt::format("{} engine launch{} ({} trial{}", launches, launches == 1 ? "" : "es", trials,
                              trials == 1 ? "" : "s");
  if (reused) s += fmt::format(", {} on an engine kept up between SLO probes", reused);
  if (pruned) s += fmt::format(", {} pruned before launch", pruned);
  return s + fmt::format("), {:.2f} GPU-hours (trial wall time × {} GPUs)", measured_gpu_hours(gpu_count),
                         gpu_count);
}

std::string TrialTally::invalid_notice() const {
  if (invalid == 0) return "";
  return fmt::format(
      "{} of {} trials were invalid: their timing cannot be trusted (first: {}). They are not ranked "
      "and no verdict rests on them (a knob whose ablation run was invalid is \"undecided\").",
      invalid, trials, first_invalid_reason);
}

int predicted_trials(const Study& study, TrialRunner predict) {
  if (!predict) predict = default_runner(study, Target::kTwin, nullptr);
  const TrialTally t = play(study, predict);
  return t.trials - t.pruned;  // a config refused before launch runs nothing and prints no progress line
}

StudyPlan plan_study(const Study& study, TrialRunner predict) {
  if (!predict) predict = default_runner(study, Target::kTwin, nullptr);
  StudyPlan plan;
  plan.tally = play(study, predict);
  if (study.search.strategy == Strategy::kTwinGuided && study.target != Target::kTwin) {
    Study grid = study;  // the saving: what a grid search of the same space launches on the target
    grid.search.strategy = Strategy::kGrid;
    try {
      plan.grid = play(grid, predict);
    } catch (const std::exception& e) {
      plan.grid_note = e.what();
    }
  }
  return plan;
}

}  // namespace servelab::tune
