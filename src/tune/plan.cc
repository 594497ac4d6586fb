// What a study costs on its target, counted one way for the dry-run, the console and the report
// (issue 30 §5): engine starts on GPUs only, never the twin's predictions (its ranking of the grid, its
// bracket of each SLO search) nor an SLO probe run on an engine kept up.
#include <fmt/format.h>

#include <memory>
#include <optional>

#include "servelab/tune/load/load.h"
#include "servelab/tune/targets/slurm.h"
#include "servelab/tune/tune.h"

namespace servelab::tune {

namespace {

/// `predict` standing in for `target`'s runner: on the local target an engine asked to stay up
/// (TrialRequest::keep_engine) is reused by the next trial of the same config, as the local runner does,
/// so the plan counts the launches the run makes. Slurm launches every trial (a job each), and refuses a
/// trial whose allocation it cannot make before submitting it (slurm_allocation), as the Slurm runner does.
TrialRunner playing_target(TrialRunner predict, const Study& study) {
  auto kept = std::make_shared<std::string>();  // config key of the engine kept up ("" = none)
  const Target target = study.target;
  return [predict = std::move(predict), target, kept, &study](const TrialRequest& req) {
    if (req.release_engine) {
      kept->clear();
      return TrialOutcome{};
    }
    if (target == Target::kSlurm) try {
        slurm_allocation(study, req);
      } catch (const std::invalid_argument& e) {
        TrialOutcome out;
        out.status = TrialStatus::kRejected;
        out.reason = e.what();
        return out;
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
  Evaluator target(study, on_twin ? predict : playing_target(predict, study), runner_kind(study.target),
                   nullptr, {}, nullptr, nullptr, {});
  const bool guided = study.search.strategy == Strategy::kTwinGuided;
  std::optional<Evaluator> twin;
  if (!on_twin && (guided || !study.slo.targets.empty()))
    twin.emplace(study, predict, RunnerKind::kTwin, nullptr, std::vector<TrialRecord>{}, nullptr, nullptr,
                 std::filesystem::path{});
  if (twin && !study.slo.targets.empty()) target.set_load_guide(&*twin);
  SearchOutcome outcome = run_search(study, target, guided ? (on_twin ? &target : &*twin) : nullptr);
  analyze_load(study, target, outcome);  // the load sweep and SLO search runs count too
  return tally_trials(study, target.records());
}

}  // namespace

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
