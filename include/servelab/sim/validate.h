// servelab/sim: validation of the twin against the corpus — leave-one-study-out (fit on every other
// study, predict the one left out), on request leave-one-GPU-type-out and leave-one-engine-release-out
// (the same folds over another grouping), and, printed apart and labelled, in-sample (fit on everything).
#pragma once

#include <filesystem>
#include <functional>
#include <map>
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
  bool failure_reproduced = false;  ///< measured failure and predicted failure
  std::string note;                 ///< why a measured failure is not reproduced, etc.
  /// Kernel paths the twin has no figure for (ResolvedLaunch::unmodelled): predicted and scored, never
  /// fitted.
  std::vector<std::string> unmodelled;
  /// Index of the point's sweep (score_sweeps), -1 when it is in none that has a shape error.
  int sweep = -1;
  /// Shape errors of the held-out prediction in % (signed), for a point of a sweep above the sweep's
  /// lowest load: 100 x ((pred(c) / pred(c_min)) / (meas(c) / meas(c_min)) - 1) of mean TTFT / mean TPOT
  /// (score_sweeps has the definition).
  std::optional<double> shape_err_ttft, shape_err_tpot;
};

/// Accuracy over a set of rows. MAPE in %.
struct ValidationSummary {
  int points = 0;              ///< rows considered
  int predicted = 0;           ///< rows with a prediction
  int predicted_failures = 0;  ///< rows the twin predicts to fail
  int refused = 0;             ///< rows the twin refuses (with reason)
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
  /// Sweep shape error (score_sweeps): sweeps with at least one scored point above their lowest load, the
  /// points scored per metric, and the MAPE of the points' shape errors in % (mean |shape error|).
  int sweeps = 0;
  int compared_shape_ttft = 0, compared_shape_tpot = 0;
  double mape_shape_ttft = 0, mape_shape_tpot = 0;
  /// Predicted rows by the level their held-out calibration came from (ValidationRow::calibration_level:
  /// "class", "family", "engine", "prior"): a fold without training data for a class predicts it from a
  /// coarser level.
  std::map<std::string, int> levels;
};

/// Summary of `rows` from their held-out predictions (`held_out`) or their in-sample ones. The (study,
/// workload) group figures need `group_lines` only to print them (may be null). Shape errors are read from
/// the rows (score_sweeps), held out only.
ValidationSummary summarize_validation(const std::vector<const ValidationRow*>& rows, bool held_out,
                                       std::vector<std::string>* group_lines = nullptr);

/// Finds the sweeps among `rows` and sets each row's `sweep` and shape errors from its held-out
/// prediction (`predicted`). A sweep: points of one study with the same launch configuration (engine and
/// release, GPU and GPU count, argv, environment, option files, the launch line) and the same workload shape
/// (client tool, dataset, input/output lengths, range ratio, arrival process) that differ only in their
/// load: the client concurrency cap when there is one (the request rate then part of the shape), else the
/// request rate (the prompt count may differ: clients scale it with the load). A launch whose flags follow
/// the concurrency (`--max-num-seqs` = the cap) is a different launch at each load, so no sweep. A sweep
/// needs >= 2 distinct loads among its scored points (status ok or partial, not suspect, a held-out
/// prediction, the metric measured and predicted > 0), taken per metric. The baseline
/// c_min is the sweep's lowest load (several points there: the mean of their measured and of their
/// predicted values); each scored point at a higher load c gets
///   shape error = 100 x ((pred(c) / pred(c_min)) / (meas(c) / meas(c_min)) - 1)  (%, signed)
/// for mean TTFT and for mean TPOT (the shape error AISimulate publishes: how well the twin follows a
/// sweep's curve whatever its absolute level). Rows of no sweep keep sweep -1 and no shape error.
void score_sweeps(std::vector<ValidationRow>& rows);

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
  /// Points of the study on a kernel path the twin has no figure for (ValidationRow::unmodelled), and the
  /// held-out summary without them (filled only when there are some; printed beside `held_out`).
  int unmodelled_points = 0;
  ValidationSummary held_out_modelled;
  std::vector<std::string> group_lines;  ///< per workload: measured best, predicted best, rho
};

/// The unit a validation fold holds out: the fit of a fold never sees a point of the fold.
enum class ValidationSplit {
  kStudy,    ///< one study (CorpusPoint::study)
  kGpu,      ///< one GPU type (CorpusPoint::gpu, as the study names it: "H100", "A100")
  kRelease,  ///< one engine release (CorpusPoint::engine + " " + engine_version: "vllm 0.11.0")
};
/// "study", "gpu", "release".
const char* validation_split_name(ValidationSplit s);
/// The fold a point belongs to under `split` ("qwen3-32b__h100", "H100", "vllm 0.11.0").
std::string validation_fold_of(const CorpusPoint& p, ValidationSplit split);

/// One held-out fold of a split.
struct FoldValidation {
  std::string fold;  ///< validation_fold_of's label
  ValidationSummary held_out;
};

/// A split besides leave-one-study-out: every point predicted by the fit on the points of the other folds.
struct SplitValidation {
  ValidationSplit split = ValidationSplit::kGpu;
  std::vector<ValidationRow> rows;    ///< as CorpusValidation::rows; `predicted`, its errors, level and
                                      ///< shape errors from this split's folds (in_sample as there)
  std::vector<FoldValidation> folds;  ///< in first-appearance order of the corpus
  ValidationSummary held_out;         ///< all folds
  /// Each fold's fitted table (fold label -> table): fitted on the training points of the other folds only.
  std::map<std::string, CalibrationTable> tables;
};

/// The whole report.
struct CorpusValidation {
  std::vector<ValidationRow> rows;
  std::vector<StudyValidation> studies;
  ValidationSummary held_out;   ///< all studies, leave-one-study-out
  ValidationSummary in_sample;  ///< all studies, fit on everything (labelled as such); empty unless computed
  /// Whether the in-sample fit (two rounds, what `sim calibrate` writes) and its predictions ran; without
  /// them full_fit is the first round only and ValidationRow::in_sample is empty.
  bool in_sample_computed = true;
  /// Held out, over the rows without an unmodelled kernel path (ValidationRow::unmodelled); printed beside
  /// `held_out`, never instead of it.
  ValidationSummary held_out_modelled;
  FitResult full_fit;  ///< the in-sample fit (what `sim calibrate` writes; its first round only when
                       ///< in_sample_computed is false)
  BandTable bands;     ///< residual bands per class from the held-out errors
  /// The extra splits asked of validate_corpus (GPU type, engine release), in the order asked.
  std::vector<SplitValidation> splits;
  /// Each leave-one-study-out fold's fitted table (study -> table), for the studies with a launched point:
  /// fitted on the other studies' training points only.
  std::map<std::string, CalibrationTable> study_tables;
  double seconds = 0;  ///< wall time of the validation
};

/// Runs leave-one-study-out over `corpus` (and the in-sample fit), then each split of `extra_splits`
/// (kGpu, kRelease; kStudy there is ignored, it always runs) with the same machinery: per fold, the engines
/// its points use are refitted (fit_engine) on the other folds' training points, re-timing their traces at
/// the priors (FitResult::prior_traces, which depend on no measurement, so nothing a fold fits has seen its
/// held-out points; the engines the fold does not use keep their fits on their own prior traces,
/// FitResult::prior_classes), and the fold's points are predicted with that table. `threads` simulations in
/// parallel (0 = hardware concurrency). Deterministic for a given corpus. Never throws for a point: a point
/// the twin cannot take is a refusal with its reason. `progress` (optional) is called after each phase with
/// a line saying what was done, its seconds and the seconds since the start ("predicted in-sample: 2.1 s
/// (11.8 s elapsed)"). `in_sample` false skips what only the in-sample figures need (the fit's second
/// round, which simulates every training point again, and the in-sample predictions: about 40% of the
/// time); the held-out figures are the same either way (folds fit on the priors' traces), and a row's
/// predicted failure then comes from its held-out prediction.
CorpusValidation validate_corpus(const Corpus& corpus, int threads = 0,
                                 const std::vector<ValidationSplit>& extra_splits = {},
                                 const std::function<void(const std::string&)>& progress = {},
                                 bool in_sample = true);

/// The text `servelab sim validate --corpus` prints: per study the table the issue asks for, then the
/// summary, then each extra split's table (per fold and overall, labelled by split), then the in-sample
/// figures (labelled), then the unexplained points with their reasons. `corpus` is how the first line names
/// the corpus validated ("--corpus ../shared/reference (the default)"; "" = not named). A group's winner
/// counts as right when the twin's pick measured within 1% of the measured best; its line says so.
std::string format_corpus_validation(const CorpusValidation& v, bool per_point,
                                     const std::string& corpus = "");

/// calibration.json text: the in-sample fit, the bands and the coverage of `v`; its comment names the
/// corpora (`corpus`, as given on the command line: "--corpus A --corpus B"). Throws std::runtime_error
/// listing the parameters that ended on a bound (a defect of the model, not written).
std::string calibration_json_of(const CorpusValidation& v, const std::string& corpus);

}  // namespace servelab::sim
