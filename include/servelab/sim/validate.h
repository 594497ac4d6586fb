// servelab/sim: validation of the twin against the corpus — leave-one-study-out (fit on every other
// study, predict the one left out) and, printed apart and labelled, in-sample (fit on everything).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "servelab/sim/corpus.h"
#include "servelab/sim/fit.h"
#include "servelab/sim/sim.h"

namespace servelab::sim {

/// One corpus point and what the twin made of it.
struct ValidationRow {
  const CorpusPoint* point = nullptr;
  std::optional<std::string> refusal;            ///< the twin cannot predict it, and why
  std::optional<std::string> predicted_failure;  ///< the twin predicts a start-up refusal / OOM / error
  std::optional<HeadlineMetrics> predicted;      ///< held-out prediction (fit without the point's study)
  std::optional<HeadlineMetrics> in_sample;      ///< prediction with the fit on everything
  std::string calibration_class;                 ///< class of the fitted parameters used
  std::string calibration_level;                 ///< "class", "engine" or "prior" in the held-out fit
  /// Relative errors of the held-out prediction in % (signed: predicted/measured - 1), when comparable.
  std::optional<double> err_total_tok_s, err_ttft, err_tpot;
  bool failure_reproduced = false;               ///< measured failure and predicted failure
  std::string note;                              ///< why a measured failure is not reproduced, etc.
  /// Kernel paths the twin has no figure for (ResolvedLaunch::unmodelled): predicted and scored, never fitted.
  std::vector<std::string> unmodelled;
};

/// Accuracy over a set of rows. MAPE in %.
struct ValidationSummary {
  int points = 0;             ///< rows considered
  int predicted = 0;          ///< rows with a prediction
  int predicted_failures = 0; ///< rows the twin predicts to fail
  int refused = 0;            ///< rows the twin refuses (with reason)
  int failures_measured = 0, failures_reproduced = 0, failures_unexplained = 0;
  int compared_tok_s = 0, compared_ttft = 0, compared_tpot = 0;
  double mape_total_tok_s = 0, mape_ttft = 0, mape_tpot = 0;
  int groups = 0, groups_same_winner = 0;  ///< (study, workload) groups with >= 2 measured configs
  double mean_spearman = 0;                ///< over groups with >= 3 configs
  int spearman_groups = 0;                 ///< groups with >= 3 configs (also the base of the two below)
  /// Groups of >= 3 configs whose measured best is among the twin's 3 best predictions (twin-guided search
  /// measures its top 3: this is how often that finds the best).
  int groups_best_in_top3 = 0;
  /// Mean regret over groups of >= 3 configs, %: the share of the measured best objective lost by taking
  /// the twin's pick (throughput: 1 - measured(pick) / measured(best); TPOT: 1 - TPOT(best) / TPOT(pick)).
  double mean_regret = 0;
};

/// A group's objective, from its runs (never from a study's name): lowest mean TPOT when the runs are
/// latency runs — the client caps concurrency at kLatencyConcurrency or below, or it offers a finite request
/// rate that every configuration served (completed request rate within kServedShare of the offered: the
/// throughput then only restates the arrival rate) — else highest total token throughput.
/// `runs` are the group's points (same study and workload).
bool latency_objective(const std::vector<const CorpusPoint*>& runs);
/// Client concurrency at or below which a run measures latency (a few users, not a saturated server).
inline constexpr int kLatencyConcurrency = 16;
/// Completed / offered request rate above which a run "kept up" with its arrivals.
inline constexpr double kServedShare = 0.9;

/// The validation of one study (held out).
struct StudyValidation {
  std::string study;
  ValidationSummary held_out;
  ValidationSummary in_sample;
  std::vector<std::string> group_lines;    ///< per workload: measured best, predicted best, rho
};

/// The whole report.
struct CorpusValidation {
  std::vector<ValidationRow> rows;
  std::vector<StudyValidation> studies;
  ValidationSummary held_out;              ///< all studies, leave-one-study-out
  ValidationSummary in_sample;             ///< all studies, fit on everything (labelled as such)
  /// Held out, over the rows without an unmodelled kernel path (ValidationRow::unmodelled); printed beside
  /// `held_out`, never instead of it.
  ValidationSummary held_out_modelled;
  FitResult full_fit;                      ///< the in-sample fit (what `sim calibrate` writes)
  BandTable bands;                         ///< residual bands per class from the held-out errors
  double seconds = 0;                      ///< wall time of the validation
};

/// Runs leave-one-study-out over `corpus` (and the in-sample fit). `threads` simulations in parallel
/// (0 = hardware concurrency). Deterministic for a given corpus. Never throws for a point: a point the
/// twin cannot take is a refusal with its reason.
CorpusValidation validate_corpus(const Corpus& corpus, int threads = 0);

/// The text `servelab sim validate --corpus` prints: per study the table the issue asks for, then the
/// summary, then the in-sample figures (labelled), then the unexplained points with their reasons.
std::string format_corpus_validation(const CorpusValidation& v, bool per_point);

/// calibration.json text: the in-sample fit, the bands and the coverage of `v`. Throws
/// std::runtime_error listing the parameters that ended on a bound (a defect of the model, not written).
std::string calibration_json_of(const CorpusValidation& v);

}  // namespace servelab::sim
