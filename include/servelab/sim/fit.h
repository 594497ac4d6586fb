// servelab/sim: fitting the twin's few parameters (calibration.h) to measured points.
//
// Objective: per point w_tput ln^2(pred/meas total tok/s) + ln^2(TTFT ratio) + ln^2(TPOT ratio) (each
// term Huber'd at ln 2 so that a point the model cannot explain does not drag a class), points weighted
// 1/sqrt(points of their study); plus shrinkage: a class's parameters towards its engine's pooled value
// (lambda 1) and an engine's towards its fixed prior (lambda 0.5), in log space. Method: rounds of
// (simulate every point at the current parameters, recording its trace) then (coordinate pattern search
// per class on the traces, re-timed with replay(), alternating with the engines' closed-form pooled
// values). Every fit starts from the priors, never from an earlier fit. Deterministic.
#pragma once

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/sim/calibration.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/sim.h"
#include "servelab/sim/trace.h"

namespace servelab::sim {

/// A corpus point made ready to predict: its parsed and resolved launch, cluster, model and workload.
struct PreparedPoint {
  const CorpusPoint* point = nullptr;
  std::optional<std::string> refusal;            ///< the twin cannot take it (unsupported GPU, engine, model)
  std::optional<std::string> predicted_failure;  ///< resolve_launch / memory plan failure
  std::optional<engines::ResolvedLaunch> launch;
  hardware::ClusterSpec cluster;
  std::vector<WorkloadRequest> workload;
  WorkloadOptions options;
  CalibrationKey key;
  bool time_dependent = false;  ///< arrivals depend on time (finite rate): traces are approximate
  /// Fit weights: which measured metrics count.
  std::optional<double> meas_tok_s, meas_ttft_ms, meas_tpot_ms;
};

/// Prepares every point of `corpus` (never throws for a point: problems become refusal / failure).
std::vector<PreparedPoint> prepare_corpus(const Corpus& corpus);

/// Whether a prepared point can train the fit: a success with a measured throughput, not suspect, and
/// no kernel path the twin has no figure for (ResolvedLaunch::unmodelled).
bool trainable(const PreparedPoint& p);

/// Predicts a prepared point with `table` (outputs without per-token timings: WorkloadOptions::
/// per_token_timings); the trace is written to `trace` when given.
PredictResult predict_point(const PreparedPoint& p, const CalibrationTable& table, Trace* trace = nullptr);

/// The fit of one class (CalibrationKey::name()).
struct ClassFit {
  CalibrationKey key;
  Calibration cal;
  int points = 0;
  int studies = 0;
  double objective_prior = 0;  ///< the class's objective at its engine's prior
  double objective = 0;        ///< at the fit
  int replays = 0;             ///< trace re-timings performed
};

/// The fields fitted per class (kernel_scale, cpu_step_ms, cpu_request_us) and per engine (the others:
/// api_request_ms, first_token_ms, api_stream_request_us, eager_launch_us, harmony_api_share; the API server
/// and the Python forward are the engine's whatever its release or GPU, and a latency-only study cannot
/// tell its serial work from its fixed latency, a throughput study can).
inline constexpr int kClassFields = 3;

/// Fits one class's per-class fields to its points, re-timing their traces (one per point, same order)
/// with replay(); the engine-level fields are `engine_fields`' and stay fixed. Shrinkage towards the
/// engine's prior only, so classes are fitted independently. Pattern search in log space within
/// kCalibrationBounds.
ClassFit fit_class(const CalibrationKey& key, const std::vector<const PreparedPoint*>& points,
                   const std::vector<const Trace*>& traces, const Calibration& engine_fields);

/// First-round class fits shared by the folds of a validation. In the first round a class is fitted at its
/// engine's prior fields, so its fit depends on its points and traces alone (fit_class is deterministic): a
/// class none of whose points a fold holds out gets the same fit in every such fold, computed once.
/// Thread-safety: get() may be called from several threads.
class ClassFitMemo {
 public:
  /// The fit of class `key` on exactly `points` / `traces` (same order): `fit()`'s result, computed on the
  /// first call with these arguments.
  ClassFit get(const std::string& key, const std::vector<const PreparedPoint*>& points,
               const std::vector<const Trace*>& traces, const std::function<ClassFit()>& fit);

 private:
  std::mutex mu_;
  std::map<std::tuple<std::string, std::vector<const void*>>, ClassFit> fits_;
};

/// Fits every class of one engine and the engine's own fields: alternating, twice, the classes (given
/// the engine's fields) and the engine's fields over all its points (given the classes). `points` and
/// `traces` are parallel; every point belongs to `engine`. `memo` (optional) serves first-round class fits
/// computed before on the same points.
std::vector<ClassFit> fit_engine(const std::string& engine, const std::vector<const PreparedPoint*>& points,
                                 const std::vector<const Trace*>& traces, int threads,
                                 ClassFitMemo* memo = nullptr);

/// A table from class fits: the classes fitted on at least 3 points, and per version family and engine the
/// pooled value used for the other classes (log-space mean of its classes weighted by points, with the prior
/// counted as 2 points; kernel_scale from the two-way release x generation model, calibration.h).
CalibrationTable assemble_table(const std::vector<ClassFit>& fits);

/// The fits of a table's classes that ended on a bound ("vllm-0.11/hopper.kernel_scale = 0.4 (lower
/// bound)"): a defect of the model, never written to calibration.json.
std::vector<std::string> fits_on_bound(const std::vector<ClassFit>& fits);

/// A finished fit.
struct FitResult {
  CalibrationTable table;
  std::vector<ClassFit> classes;
  /// The first round's class fits: per engine, on prior_traces, so each depends on that engine's points
  /// alone (a leave-one-out fold takes them for the engines its points do not use).
  std::vector<ClassFit> prior_classes;
  std::vector<std::string> on_bound;
  double objective_prior = 0;  ///< objective at the priors
  double objective = 0;        ///< objective at the fit
  int points = 0;
  /// Traces of every point simulated at the first round's parameters (same order as the points): the
  /// second round fitted on them. Empty after one round.
  std::vector<Trace> traces;
  /// Traces of every point simulated at the priors (same order as the points): the first round fitted on
  /// them. They depend on no measurement, so leave-one-out folds refit on them without re-simulating and
  /// a fold's fit sees nothing of its held-out points (validate.h).
  std::vector<Trace> prior_traces;
};

/// Fitting options.
struct FitOptions {
  int threads = 0;  ///< parallel simulations (0 = hardware concurrency)
  /// Traces at the priors, when the caller already has them (same order as `points`).
  const std::vector<Trace>* prior_traces = nullptr;
  /// 2: the fit `sim calibrate` writes; 1: the first round only (FitResult::classes = prior_classes, no
  /// second simulation of every point: what leave-one-out folds fit, at half the cost).
  int rounds = 2;
};

/// Fits every class of `points` (each trainable) in FitOptions::rounds rounds (two by default): on traces
/// at the priors, then on traces re-simulated at the first round's parameters. Deterministic; every fit
/// starts from the priors.
FitResult fit_calibration(const std::vector<const PreparedPoint*>& points, const FitOptions& options);

/// Runs f(i) for i in [0, n) on `threads` threads (0 = hardware concurrency).
void parallel_for(int n, int threads, const std::function<void(int)>& f);

}  // namespace servelab::sim
