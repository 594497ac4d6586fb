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
  /// The GPUs each launch held (trial_gpus), summed over the launches and weighted by each trial's wall time
  /// (gpu_s, GPU-seconds) and benchmark time (benchmark_gpu_s, GPU-seconds); the fewest and most one held.
  double launch_gpus = 0.0;
  double gpu_s = 0.0;
  double benchmark_gpu_s = 0.0;
  int min_gpus = 0;
  int max_gpus = 0;
  /// GPU-hours the run held: each trial's wall time × the GPUs it held / 3600 (0 off GPUs).
  double measured_gpu_hours() const { return on_gpus ? gpu_s / 3600.0 : 0.0; }
  /// GPU-hours of a plan: Σ over launches of (startup_s + its benchmark time) × its GPUs / 3600.
  double planned_gpu_hours(double startup_s) const {
    return (launch_gpus * startup_s + benchmark_gpu_s) / 3600.0;
  }
  /// "8 GPUs" when every launch held as many, else "4-8 GPUs" ("" without launches).
  std::string gpus_text() const;
  /// "N engine launches (T trials, R on an engine kept up ..., P pruned before launch), X GPU-hours (trial
  /// wall time × G GPUs)", or on the twin "T trials predicted on the twin; no engine launched".
  std::string text() const;
  /// "N of T trials were invalid ..." with the first reason and what follows (not ranked, no verdict rests on
  /// them); "" when none was. The console, report.md and report.html say it in these words.
  std::string invalid_notice() const;
};

/// The GPUs one launch of `record` holds on `study`'s target: a local study holds the node's [hardware]
/// gpu_count for its whole run; a Slurm trial its allocation (slurm_allocation: its launch's GPUs, or [slurm]
/// gpus_per_trial). The study's gpu_count when the allocation cannot be made; 0 on the twin.
int trial_gpus(const Study& study, const TrialRecord& record);

/// Counts the trials of `study`'s target among `records` (the records of other tags, the twin's guiding
/// predictions, are left out). A trial the target refused before launching anything (TrialStatus::kRejected:
/// check_config, or a Slurm allocation it cannot make) counts as pruned.
TrialTally tally_trials(const Study& study, const std::vector<TrialRecord>& records);

}  // namespace servelab::tune
