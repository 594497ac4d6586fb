// servelab/tune: what a study's trials cost on its target, counted from the store's trial records.
#pragma once

#include <string>
#include <vector>

#include "servelab/tune/store/store.h"
#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// What a study's trials cost on its target, counted from its trial records (tally_trials): one count for
/// the dry-run's plan, the console's last line and the report, so that they agree (issue 30 §5).
struct TrialTally {
  bool on_gpus = false;  ///< the target launches engines (not the twin target)
  int trials = 0;        ///< trials of the target (pruned ones included; the twin's guiding predictions not)
  int pruned = 0;        ///< rejected before launch by check_config: no engine time
  std::string first_pruned_reason;  ///< the first pruned trial's config and reason ("" when none was)
  /// Engine starts on GPUs: the target's trials less pruned ones and those run on an engine kept up
  /// (TrialOutcome::engine_reused). 0 on the twin target.
  int launches = 0;
  int reused = 0;   ///< trials run on an engine kept up between SLO probes
  int refused = 0;  ///< launches that ended refused, rejected by the engine, out of memory or crashed
  int invalid = 0;  ///< trials whose timing cannot be trusted (TrialStatus::kInvalid)
  std::string first_invalid_reason;
  /// Trials that ended in a runner error (TrialStatus::kError: no result at all; in a plan, trials the twin
  /// could not predict, so their benchmark time is missing from benchmark_s), and the first one's reason.
  int errors = 0;
  std::string first_error_reason;
  double benchmark_s = 0.0;  ///< "Benchmark duration (s)" summed over every scenario run, s
  double wall_s = 0.0;       ///< wall time of the trials run (start-ups included), s
  /// GPU-hours the run held: wall_s × gpu_count / 3600 (0 off GPUs).
  double measured_gpu_hours(int gpu_count) const { return on_gpus ? wall_s * gpu_count / 3600.0 : 0.0; }
  /// GPU-hours of a plan: (launches × startup_s + benchmark_s) × gpu_count / 3600.
  double planned_gpu_hours(double startup_s, int gpu_count) const {
    return (launches * startup_s + benchmark_s) * gpu_count / 3600.0;
  }
  /// "N engine launches (T trials, R on an engine kept up ..., P pruned before launch), X GPU-hours (trial
  /// wall time × G GPUs)", or on the twin "T trials predicted on the twin; no engine launched".
  std::string text(int gpu_count) const;
  /// "N of T trials were invalid ..." with the first reason and what follows (not ranked, no verdict rests on
  /// them); "" when none was. The console, report.md and report.html say it in these words.
  std::string invalid_notice() const;
};

/// Counts the trials of `study`'s target among `records` (the records of other tags, the twin's guiding
/// predictions, are left out).
TrialTally tally_trials(const Study& study, const std::vector<TrialRecord>& records);

}  // namespace servelab::tune
