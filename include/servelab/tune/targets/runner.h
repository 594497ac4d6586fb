// servelab/tune: the trial-runner interface. A trial launches one config (really, or on the engine twin)
// and runs a list of scenarios against it. The search code only sees this interface, so tests drive it
// with fake runners and the CLI plugs in the twin (sim) or real engines (bench).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// How a trial ended. A failure is a result: it is recorded with its reason and log tail.
enum class TrialStatus {
  kOk,              ///< every requested scenario produced metrics
  kRejected,        ///< pruned before launch (invalid combination, flag the engine lacks, twin memory plan)
  kStartupRefused,  ///< the engine exited during start-up with its own error message
  kOutOfMemory,     ///< out of GPU memory (at start-up or while serving)
  kNotReady,        ///< did not answer the readiness checks in time
  kCrashed,         ///< the engine died while a scenario ran
  kRequestsFailed,  ///< the engine stayed up but no request of a scenario succeeded
  kInvalid,         ///< measured, but the timing cannot be trusted (a time-scaled twin or the client fell
                    ///< behind on a loaded host): reported, never ranked
  kInterrupted,     ///< stopped by Ctrl-C (not recorded as finished; re-run on --resume)
  kError,           ///< any other failure (runner error, bad scenario arguments)
  // How a Slurm job ended when the scheduler ended it (target slurm; Slurm's job states, `man squeue`):
  kJobTimeLimit,    ///< TIMEOUT / DEADLINE: the job ran past [slurm] time_limit_min
  kJobNodeFail,     ///< NODE_FAIL / BOOT_FAIL: a node of the allocation failed
  kJobPreempted,    ///< PREEMPTED and not requeued
  kJobOutOfMemory,  ///< OUT_OF_MEMORY: the job's host-memory limit killed it (not GPU memory: that is
                    ///< kOutOfMemory)
  kJobCancelled,    ///< CANCELLED by someone other than this tune (scancel, an administrator)
};

/// Stable name ("ok", "rejected", "startup_refused", "oom", "not_ready", "crashed", "requests_failed",
/// "invalid", "interrupted", "error", "time_limit", "node_fail", "preempted", "job_oom", "cancelled").
const char* trial_status_name(TrialStatus status);
/// Inverse of trial_status_name; throws std::invalid_argument for an unknown name.
TrialStatus trial_status_from_name(const std::string& name);
/// Does a trial that ended with `status` say something about its configuration? False when the run, not the
/// configuration, failed: kInvalid (timing not trusted), kInterrupted, kError (runner error, not run, bad
/// arguments) and the scheduler's kJobNodeFail, kJobPreempted, kJobCancelled. A verdict (ablation, greedy
/// step) never rests on such a trial (issue 30 §4). True for kOk and every other failure.
bool trial_status_judges_config(TrialStatus status);

/// The measured (or predicted) outcome of one scenario.
struct ScenarioResult {
  std::string scenario_id;
  /// Summary metrics keyed by vLLM's console labels ("Total Token throughput (tok/s)", "Mean TTFT (ms)",
  /// "Successful requests", ...). Units as in the label.
  std::map<std::string, double> metrics;
  std::vector<double> ttft_ms;  ///< per-request TTFT samples, ms (may be empty)
  std::vector<double> tpot_ms;  ///< per-request TPOT samples, ms (may be empty)
  std::string result_block;     ///< the vLLM-style console block, as printed
  /// Non-empty when the run's timing cannot be trusted (bench::BenchResult::invalid_reason): the trial is
  /// then kInvalid and this result is not used.
  std::string invalid_reason;
};

/// Metric key holding the server's time scale (engine s per wall s) when it is not 1: the scenario's times
/// and throughputs are then engine time of a time-scaled engine twin (stand-ins), not wall time.
inline constexpr const char* kTimeScaleMetric = "servelab: server time scale";

/// Metric key: seconds from the first to the last intended send of the run's schedule (bench serve's
/// open-loop arrivals; what a request-rate run offered, as realised by its seed). The SLO search's saturation
/// test compares the achieved rate with it (SloProbe::saturated). Set by the local and twin targets.
inline constexpr const char* kArrivalSpanMetric = "servelab: arrival span (s)";
/// Metric key: mean E2EL (ms) of the first half of the run's successful requests by intended send time
/// (the saturation test's steady latency: a backlog that builds over the run inflates the mean). Set with
/// kArrivalSpanMetric.
inline constexpr const char* kEarlyE2elMetric = "servelab: early mean E2EL (ms)";
/// Metric key: successful requests still in flight at the last intended send (sent, not yet finished).
/// Set with kArrivalSpanMetric.
inline constexpr const char* kBacklogAtLastArrivalMetric = "servelab: in flight at the last arrival";
/// Metric key: median TTFT (s) of the last quarter of the run's successful requests by intended send time
/// minus that of the first quarter: a server falling behind its arrivals queues each later request longer
/// (by (λ/μ − 1) s per s of arrivals). Set with kArrivalSpanMetric (runs of at least 8 successes).
inline constexpr const char* kTtftDriftMetric = "servelab: TTFT drift over the run (s)";

/// Line prefix of the twin's notes appended to a predicted ScenarioResult::result_block (its warnings, the
/// kernel paths it has no figure for, the draft acceptance it assumed): "# engine twin: warning: ...".
inline constexpr const char* kTwinNotePrefix = "# engine twin: ";

/// Metric keys of a twin prediction's error band: the leave-one-study-out relative error of its class
/// (sim::ErrorBand, ± percent on total tok/s, mean TTFT, mean TPOT), and how many warnings the twin gave
/// for the launch (outside the validation corpus, a kernel path it has no figure for; `sim run` prints
/// them). Set by the twin target only.
inline constexpr const char* kBandTokSMetric = "servelab: twin error band total tok/s (+-%)";
inline constexpr const char* kBandTtftMetric = "servelab: twin error band mean TTFT (+-%)";
inline constexpr const char* kBandTpotMetric = "servelab: twin error band mean TPOT (+-%)";
/// Not a trial metric: the key twin_band_key gives a goodput objective, whose band is propagated by the SLO
/// search (SloResult::goodput_band_pct), not read from a trial.
inline constexpr const char* kBandGoodputKey = "servelab: twin error band request goodput (+-%)";
inline constexpr const char* kTwinWarningsMetric = "servelab: twin warnings";
/// Metric key: how many kernel paths of the launch the twin has no speed figure for
/// (engines::ResolvedLaunch::unmodelled; 0 when none). Such a prediction is the physics at its class's
/// parameters and can be far off: the report widens its band (tune/twin_verdict.h). Set by the twin target.
inline constexpr const char* kTwinUnmodelledMetric = "servelab: twin unmodelled kernel paths";
/// Prefix of one metric key per unmodelled kernel path, value 1: the prefix, then the path's name (its
/// reason's text up to the first ": ", at most 160 bytes), e.g. "servelab: twin unmodelled kernel path:
/// DeepSeek Sparse Attention through TensorRT-LLM before Blackwell". So the name travels with the result
/// (store, trials.json, --resume) and the report can say which path. Set by the twin target.
inline constexpr const char* kTwinUnmodelledPathPrefix = "servelab: twin unmodelled kernel path: ";

/// What the search asks for: launch `argv`/`env` for `config_key` and run `scenarios` in order.
struct TrialRequest {
  std::string trial_key;  ///< unique per (config, scenarios, repeat)
  std::string engine;     ///< study engine name
  std::string config_key;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::vector<Scenario> scenarios;
  int repeat = 0;                  ///< 0-based repeat index
  std::filesystem::path log_path;  ///< where the engine's stdout+stderr go (local target)
  /// The config's knob values (knob → value label, non-baseline only), so that a runner on another host can
  /// render the launch again for that host (its own port: target slurm).
  std::map<std::string, std::string> knobs;
  /// Leave the engine running after this trial when it ends ok, for the next trial of the same engine,
  /// config, argv and env, which then reuses it if it is still alive and answers the ready checks (else it
  /// launches fresh). Set by the SLO search for its probes (tune/load.h: the server stays up between probes,
  /// as `vllm bench sweep serve_sla` does); honoured by the local runner, ignored by the twin and Slurm.
  bool keep_engine = false;
  /// Only stop the engine a runner kept up (TrialOutcome::engine_kept): no launch, no scenario. The
  /// evaluator sends it only to a runner that reported a kept engine.
  bool release_engine = false;
};

/// What a runner returns. On failure `scenarios` holds the scenarios that finished before it.
struct TrialOutcome {
  TrialStatus status = TrialStatus::kOk;
  std::string reason;    ///< one line: the engine's own message or what went wrong
  std::string log_tail;  ///< last lines of the engine log (local target)
  std::vector<ScenarioResult> scenarios;
  bool predicted = false;  ///< true when the numbers come from the twin
  double wall_s = 0.0;     ///< wall-clock duration of the trial, s
  /// The trial ran on an engine that an earlier trial launched and kept up (keep_engine): no launch.
  bool engine_reused = false;
  /// The engine is still running after this trial, kept for the next one (keep_engine); the runner stops it
  /// on the next trial that does not reuse it, on a release_engine request, or when it is destroyed.
  bool engine_kept = false;
};

/// Thrown by a runner when no further trial can succeed on this machine — the engine's executable is
/// missing, the port is held by a process tune did not start — so repeating the launch would only repeat
/// the failure: the study stops at once with this reason (every finished trial is kept; fix it and rerun
/// with --resume).
struct StudyAbort : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Runs one trial. Must not throw for engine failures (they are outcomes); throws StudyAbort when the
/// machine cannot run any trial, and may throw for programming errors. Thread-safety: called from one
/// thread at a time.
using TrialRunner = std::function<TrialOutcome(const TrialRequest&)>;

/// Called by a BatchTrialRunner as trial `index` of the batch ends, in the thread that called the batch
/// runner, so that the caller records it at once (a killed tune loses no finished trial).
using TrialDone = std::function<void(std::size_t index, TrialOutcome outcome)>;

/// Runs independent trials, as many at once as the runner allows (target slurm: [slurm] max_parallel
/// jobs), calling `done` once per request as each ends, in any order. On Ctrl-C (the runner's stop flag) it
/// stops what is in flight and reports each unfinished trial as kInterrupted. Throws StudyAbort like a
/// TrialRunner. The search hands it the trials that do not depend on each other (the grid, the twin's
/// top-k, greedy's candidates for one knob, the ablation's configs: Evaluator::prefetch).
/// Thread-safety: called from one thread at a time.
using BatchTrialRunner =
    std::function<void(const std::vector<TrialRequest>& requests, const TrialDone& done)>;

}  // namespace servelab::tune
