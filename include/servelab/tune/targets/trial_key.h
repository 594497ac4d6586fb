// servelab/tune: who runs an evaluator's trials (RunnerKind) and the key that names one trial in the store
// (TrialKey).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// The runner behind an evaluator's trials: the twin (predictions), the study's launching targets, or the
/// capture of `tune --target k8s --render` (which lists the trials a search would run). It names the trials
/// in their keys (runner_tag) and says whether their numbers are predictions (runner_predicts).
enum class RunnerKind {
  kTwin,     ///< the engine twin: predictions, one run per point
  kLocal,    ///< engines launched on this host
  kSlurm,    ///< engines launched as Slurm jobs
  kK8sPlan,  ///< the Kubernetes render's capture: trials listed, not run here
};

/// The runner of a study's target (Target::kTwin → kTwin, kLocal → kLocal, kSlurm → kSlurm).
RunnerKind runner_kind(Target target);
/// The tag its trial keys start with: "twin", "local", "slurm", "k8s-plan" (stored: never change one).
const char* runner_tag(RunnerKind kind);
/// Inverse of runner_tag; nullopt for any other text.
std::optional<RunnerKind> runner_kind_from_tag(std::string_view tag);
/// Are the runner's numbers predictions (the twin), not measurements?
bool runner_predicts(RunnerKind kind);

/// What a trial did (TrialKey::what): it ran `scenario_ids` in one engine launch, in repeat `repeat`
/// (0-based). Written "s1+s2@c16|r0" (the ids joined by '+'; none: "|r0", a lookup of nothing to run).
struct TrialRun {
  std::vector<std::string> scenario_ids;
  int repeat = 0;
  bool operator==(const TrialRun&) const = default;
};
/// What a trial did: its configuration was refused by check_config before launch, once for every repeat.
/// Written "rejected".
struct TrialRejected {
  bool operator==(const TrialRejected&) const = default;
};
/// What a trial did: it asked the runner to stop the engine it keeps up (TrialRequest::release_engine; never
/// stored). Written "release".
struct TrialRelease {
  bool operator==(const TrialRelease&) const = default;
};

/// The key of one trial (TrialRecord::trial_key, TrialRequest::trial_key): the runner, the configuration
/// and what the trial did. Its text, "tag|config_key|what", is the store's unique key and names a trial's
/// log, Slurm job and Kubernetes manifest: to_string writes exactly what servelab always wrote, so studies
/// stored before this type resume.
struct TrialKey {
  using Run = TrialRun;
  using Rejected = TrialRejected;
  using Release = TrialRelease;

  RunnerKind runner = RunnerKind::kTwin;
  std::string config_key;  ///< config_key(study, config): "engine{knob=value,...}"
  std::variant<Run, Rejected, Release> what;

  /// "tag|config_key|s1+s2|rN", "tag|config_key|rejected" or "tag|config_key|release" (tag: runner_tag).
  std::string to_string() const;
  /// The key `text` holds, read from both ends (the tag up to the first '|'; the last field "rejected",
  /// "release" or "r<N>" after the scenario ids; the config key between), so that to_string gives `text`
  /// back. Nullopt when it is no such key: an unknown tag, a missing field, a repeat that is not a
  /// non-negative integer written without leading zeros.
  static std::optional<TrialKey> parse(std::string_view text);
  /// A key of `runner`'s trials of `config_key`?
  bool of(RunnerKind r, std::string_view config) const { return runner == r && config_key == config; }
  bool rejected() const { return std::holds_alternative<Rejected>(what); }
  bool operator==(const TrialKey&) const = default;
};

}  // namespace servelab::tune
