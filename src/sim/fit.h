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

#include <optional>
#include <string>
#include <vector>

#include "engines/launch.h"
#include "hardware/hardware.h"
#include "sim/calibration.h"
#include "sim/corpus.h"
#include "sim/sim.h"
#include "sim/trace.h"

namespace servelab::sim {

/// A corpus point made ready to predict: its parsed and resolved launch, cluster, model and workload.
struct PreparedPoint {
  const CorpusPoint* point = nullptr;
  std::optional<std::string> refusal;           ///< the twin cannot take it (unsupported GPU, engine, model)
  std::optional<std::string> predicted_failure; ///< resolve_launch / memory plan failure
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

/// Whether a prepared point can train the fit: a success with a measured throughput, not suspect.
bool trainable(const PreparedPoint& p);

/// Predicts a prepared point with `table`; the trace is written to `trace` when given.
PredictResult predict_point(const PreparedPoint& p, const CalibrationTable& table, Trace* trace = nullptr);

/// A finished fit.
struct FitResult {
  CalibrationTable table;
  std::vector<std::string> on_bound;  ///< "vllm-0.11/hopper.kernel_scale = 0.4 (lower bound)"
  double objective_prior = 0;         ///< objective at the priors
  double objective = 0;               ///< objective at the fit
  int points = 0;
  int replays = 0;                    ///< trace re-timings performed
};

/// Fitting options.
struct FitOptions {
  int rounds = 2;          ///< simulate / optimise rounds
  int sweeps = 3;          ///< alternations of class search and engine pooling per round
  int threads = 0;         ///< parallel simulations (0 = hardware concurrency)
  /// Traces at the priors, when the caller already has them (same order as `points`); saves round 1's
  /// simulations across leave-one-out folds.
  const std::vector<Trace>* prior_traces = nullptr;
};

/// Fits the parameters to `points` (each trainable). Thread-safety: pure apart from its own threads.
FitResult fit_calibration(const std::vector<const PreparedPoint*>& points, const FitOptions& options);

}  // namespace servelab::sim
