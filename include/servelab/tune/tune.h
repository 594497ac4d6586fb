// servelab/tune: the public entry points behind `servelab tune STUDY.toml` and `servelab report DIR`.
//
//   Study study = load_study("studies/deepseek-v3.2-h200x8.toml", common::data_dir());
//   TuneOptions opt;  opt.out_dir = "out/" + study.name;
//   TuneResult r = run_study(study, opt);   // writes results.sqlite, report.md, report.html, trials.*
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "servelab/tune/search/search.h"
#include "servelab/tune/store/tally.h"
#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"
#include "servelab/tune/targets/targets.h"

namespace servelab::tune {

struct TuneOptions {
  std::filesystem::path out_dir;     ///< results.sqlite, report.*, logs/ go here (created)
  bool resume = false;               ///< keep finished trials of results.sqlite and skip them
  bool fresh = false;                ///< move an existing out_dir aside (out_dir.<date>) and start over
  std::ostream* progress = nullptr;  ///< progress lines (trial k of n, best so far, time left)
  const std::atomic<bool>* stop = nullptr;  ///< set by Ctrl-C: the trial in flight is abandoned
  TrialRunner runner;                       ///< overrides the target's runner (tests, custom targets)
  TrialRunner twin_runner;                  ///< overrides the twin used by twin-guided ranking
  /// Runs independent trials at once (Evaluator::prefetch); target slurm makes one (make_slurm_runner)
  /// unless `runner` is set. Also serves single trials when `runner` is empty.
  BatchTrialRunner batch_runner;
  bool write_report = true;
  /// Added to the recorded environment (pre-flight's findings: engine versions, GPU model, driver, CUDA).
  std::map<std::string, std::string> environment;
};

struct TuneResult {
  SearchOutcome outcome;
  std::filesystem::path dir;
  /// The target's trials in results.sqlite (earlier runs' on --resume): engine launches, GPU-hours, invalid
  /// trials (tally_trials; the report counts the same).
  TrialTally tally;
};

/// Sets the study's target (the file's, or `--target`'s) and, when the study names no strategy, the
/// default for that target (default_strategy; greedy where this build has no twin to guide the search or the
/// grid the twin would rank is above search.max_trials).
void set_target(Study& study, Target target);

/// Runs a study end to end: locks out_dir (one tune per directory), opens out_dir/results.sqlite, records
/// the study and environment, runs the search, writes the report files. A directory holding trials is used
/// only with `resume` (same study file) or moved aside with `fresh`. Throws TuneSetupError for a directory
/// in use or holding results, Interrupted when stopped (the database then holds every finished trial),
/// StudyError / std::runtime_error for unusable setups (e.g. the target's runner is not in this build).
TuneResult run_study(const Study& study, const TuneOptions& options);

/// Refuses early (before pre-flight) what run_study would refuse about out_dir: results there without
/// `resume`/`fresh`, or a different study file with `resume`. Throws TuneSetupError; changes nothing.
void check_out_dir(const Study& study, const TuneOptions& options);

/// Rebuilds the report of the study in `dir` (its results.sqlite) without running anything: the search is
/// replayed over the stored trials; missing trials make a partial report. Returns the outcome.
SearchOutcome report_study_dir(const std::filesystem::path& dir, std::ostream* log);

/// What a study will launch, as the twin plays it through on the study's target (`tune --dry-run`).
struct StudyPlan {
  TrialTally tally;  ///< the target's trials as played; `launches` counts engine starts only
  /// Twin-guided on a GPU target: the same space searched by grid, whose launches twin-guided saves; none
  /// otherwise, or when the grid is above search.max_trials (`grid_note` says why).
  std::optional<TrialTally> grid;
  std::string grid_note;
};

/// Plays the study's search with `predict` standing in for every trial (default: the engine twin), wired as
/// run_study wires it (the target's evaluator, with engine reuse across SLO probes on the local target, and
/// the twin's for twin-guided ranking and SLO brackets, whose predictions launch nothing); nothing launched,
/// nothing written. Throws std::runtime_error when the twin is not in this build.
StudyPlan plan_study(const Study& study, TrialRunner predict = {});

/// The trials the study's target will run as the twin plays the study through (plan_study without the grid
/// comparison), less those pruned before launch: the progress line's planned total. Throws as plan_study.
int predicted_trials(const Study& study, TrialRunner predict = {});

/// The servelab version and git commit this binary was built from ("servelab 0.1.0 (abc123def456)").
std::string servelab_version();

/// SHA-256 of the study file as read (hex).
std::string study_hash(const Study& study);

}  // namespace servelab::tune
