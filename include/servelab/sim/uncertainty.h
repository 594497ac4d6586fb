// servelab/sim: the error band of a prediction, from the leave-one-study-out residuals of its class
// (engine, GPU generation, architecture class), and the warnings for a launch outside the corpus
// (a GPU or GPU generation never measured, more than one node, an architecture never measured, an
// engine version outside the validated ones).
#pragma once

#include <map>
#include <string>
#include <vector>

namespace servelab::engines {
struct ResolvedLaunch;
}
namespace servelab::hardware {
struct ClusterSpec;
}
namespace servelab::model {
struct ModelSpec;
}

namespace servelab::sim {

/// Typical relative error of a prediction of this class, in percent (the root-mean-square of the
/// leave-one-study-out relative errors of the class's validated points), and where it comes from.
struct ErrorBand {
  std::string class_name;      ///< "vllm/hopper/moe", or the coarser class the band fell back to
  double total_tok_s_pct = 0;  ///< +- percent on total (and output) token throughput
  double ttft_pct = 0;         ///< +- percent on mean TTFT
  double tpot_pct = 0;         ///< +- percent on mean TPOT
  int points = 0;              ///< validated points behind the band (0 = no data: the band is a default)
  int studies = 0;             ///< studies those points come from (each weighs the same in the band)
  std::vector<std::string> warnings;  ///< why the prediction is outside the corpus, if it is
};

/// Residual statistics per class, as `sim validate --corpus` measured them (stored in calibration.json
/// under "bands", with what the corpus covers under "coverage").
struct BandTable {
  struct Entry {
    /// RMS over the class's studies of each study's RMS % error (every study weighs the same); a latency
    /// field is -1 when the class has no measurement of it.
    double total_tok_s_pct = 0, ttft_pct = 0, tpot_pct = 0;
    int points = 0;   ///< held-out points with a tok/s error
    int studies = 0;  ///< studies those points come from (0 in a table written before studies were kept)
  };
  /// "engine/generation/arch", "engine/generation", "engine", "all" over the launches on modelled kernel
  /// paths; kUnmodelledBandClass over the launches on a path the twin has no figure for.
  std::map<std::string, Entry> classes;
  std::vector<std::string> gpus;      ///< GPU names measured
  std::vector<std::string> variants;  ///< architecture variants measured
  std::vector<std::string> versions;  ///< "engine version" measured
  int max_gpus = 0;                   ///< largest launch measured (GPUs)
  /// Engines with a measured run that decoded without CUDA graphs (engines::GraphMode::kNone). An eager
  /// launch of another engine is outside the corpus: its CPU cost per eagerly launched kernel
  /// (Calibration::eager_launch_us) was at most fitted on steps beyond the captured sizes, where the GPU's
  /// work hides it, never on a small eager decode step.
  std::vector<std::string> eager_decode_engines;
};

/// The band class of the launches on a kernel path the twin has no figure for
/// (engines::ResolvedLaunch::unmodelled), whatever their engine, GPU and architecture.
inline constexpr const char* kUnmodelledBandClass = "unmodelled";

/// The fewest held-out points a class needs to lend its band (else a coarser class's is taken).
inline constexpr int kMinBandClassPoints = 3;

/// The smallest band of a launch on an unmodelled kernel path, percent on every metric: a prediction the
/// twin cannot support is never tighter than this, whatever the few corpus runs of such paths measured.
inline constexpr double kUnmodelledBandMinPct = 100.0;

/// The architecture class of a model for bands: "hybrid" (linear attention), "dsa" (DeepSeek Sparse
/// Attention: DeepSeek-V3.2, GLM-5.x), "mla", "moe-swa" (sliding window MoE, gpt-oss), "moe", "dense".
std::string architecture_class(const model::ModelSpec& model);

/// The band of a launch from `table`: its own class, else engine/generation, else engine, else "all"
/// (widened by kExtrapolationWiden for each level it falls back), no narrower than the spread of the
/// measured engine/GPU/architecture classes where its class says little (never measured, fewer than
/// kMinBandClassPoints points, or one study), with a warning; plus the outside-the-corpus warnings, each
/// widening it by kExtrapolationWiden again. With no data at all the band is +-50% and says so. A launch on
/// a kernel path the twin has no figure for takes the kUnmodelledBandClass entry instead (at least
/// kUnmodelledBandMinPct on every metric), with a warning.
ErrorBand error_band(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                     const BandTable& table);

/// How much wider a band gets for each step away from what the validation measured: a coarser class than
/// the launch's own, and each extrapolation error_band warns of (a GPU, a GPU count or node count, an
/// architecture or an engine release outside the corpus). A stated choice, not a fitted figure: the corpus
/// has no point outside itself to measure it on.
inline constexpr double kExtrapolationWiden = 1.5;

/// The band table embedded in calibration.json.
const BandTable& embedded_bands();

/// How many times higher than the measured value a prediction with a band of `pct` percent may be: 1 + pct /
/// 100 (the error is (predicted − measured) / measured). The other way has no bound once the band reaches
/// 100%: an error of −95% is a prediction 20x too low.
inline double band_times_off(double pct) {
  return 1 + pct / 100;
}

/// "±12% tok/s, ±25% TTFT, ±18% TPOT (vllm/hopper/moe, 31 held-out points)" and the warnings, one line; a
/// band of 100% or more also says where the measured value may lie: "(measured: from 1/N of the prediction
/// to many times it)" (band_times_off).
std::string format_band(const ErrorBand& band);

}  // namespace servelab::sim
