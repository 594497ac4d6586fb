// The trials of a study's target counted from its records (tally.h): engine launches on GPUs only, never the
// twin's predictions nor an SLO probe run on an engine kept up (issue 30 §5).
#include "servelab/tune/store/tally.h"

#include <fmt/format.h>

#include <algorithm>

#include "servelab/tune/targets/slurm.h"
#include "servelab/tune/targets/trial_key.h"

namespace servelab::tune {

namespace {

/// The target's trial ended in a failure of the engine itself (refused, out of memory, crashed).
bool engine_refused(TrialStatus s) {
  return s == TrialStatus::kStartupRefused || s == TrialStatus::kOutOfMemory || s == TrialStatus::kCrashed;
}

}  // namespace

int trial_gpus(const Study& study, const TrialRecord& record) {
  try {
    switch (study.target) {
      case Target::kTwin:
        return 0;
      case Target::kLocal:
        return study.hardware.gpu_count;
      case Target::kSlurm: {
        TrialRequest req;
        req.engine = record.engine;
        req.argv = record.argv;
        req.env = record.env;
        return slurm_allocation(study, req).gpus;
      }
    }
  } catch (const std::exception&) {  // a launch servelab cannot read: what the study books
  }
  return study.hardware.gpu_count;
}

std::string TrialTally::gpus_text() const {
  if (max_gpus == 0) return "";
  return min_gpus == max_gpus ? fmt::format("{} GPUs", max_gpus)
                              : fmt::format("{}-{} GPUs", min_gpus, max_gpus);
}

TrialTally tally_trials(const Study& study, const std::vector<TrialRecord>& records) {
  TrialTally t;
  t.on_gpus = study.target != Target::kTwin;
  const RunnerKind target = runner_kind(study.target);
  for (const auto& r : records) {
    const std::optional<TrialKey> key = TrialKey::parse(r.trial_key);
    if (!key || key->runner != target) continue;  // the twin's predictions for another target
    ++t.trials;
    // Evaluator::record_rejection's (a config check_config refused) or the target's own refusal before
    // launching (a Slurm allocation it cannot make): no engine time.
    if (key->rejected() || r.outcome.status == TrialStatus::kRejected) {
      if (t.pruned++ == 0)
        t.first_pruned_reason =
            (r.config_label.empty() ? r.config_key : r.config_label) + ": " + r.outcome.reason;
      continue;
    }
    if (r.outcome.status == TrialStatus::kInvalid) {
      if (t.invalid++ == 0) t.first_invalid_reason = r.outcome.reason;
    }
    if (r.outcome.status == TrialStatus::kError) {
      if (t.errors++ == 0) t.first_error_reason = r.outcome.reason;
    }
    double bench_s = 0.0;
    for (const auto& sc : r.outcome.scenarios)
      if (auto d = sc.metrics.find("Benchmark duration (s)"); d != sc.metrics.end()) bench_s += d->second;
    t.wall_s += r.outcome.wall_s;
    t.benchmark_s += bench_s;
    if (!t.on_gpus) continue;
    const int gpus = trial_gpus(study, r);
    t.gpu_s += r.outcome.wall_s * gpus;
    t.benchmark_gpu_s += bench_s * gpus;
    if (r.outcome.engine_reused) {
      ++t.reused;
      continue;
    }
    ++t.launches;
    t.launch_gpus += gpus;
    t.min_gpus = t.min_gpus == 0 ? gpus : std::min(t.min_gpus, gpus);
    t.max_gpus = std::max(t.max_gpus, gpus);
    if (engine_refused(r.outcome.status)) ++t.refused;
  }
  return t;
}

std::string TrialTally::text() const {
  if (!on_gpus) return fmt::format("{} trials predicted on the twin; no engine launched", trials);
  std::string s = fmt::format("{} engine launch{} ({} trial{}", launches, launches == 1 ? "" : "es", trials,
                              trials == 1 ? "" : "s");
  if (reused) s += fmt::format(", {} on an engine kept up between SLO probes", reused);
  if (pruned) s += fmt::format(", {} pruned before launch", pruned);
  if (launches == 0) return s + ")";
  return s + fmt::format("), {:.2f} GPU-hours (trial wall time × {}{})", measured_gpu_hours(), gpus_text(),
                         min_gpus == max_gpus ? "" : " each held");
}

std::string TrialTally::invalid_notice() const {
  if (invalid == 0) return "";
  return fmt::format(
      "{} of {} trials were invalid: their timing cannot be trusted (first: {}). They are not ranked "
      "and no verdict rests on them (a knob whose ablation run was invalid is \"undecided\").",
      invalid, trials, first_invalid_reason);
}

}  // namespace servelab::tune
