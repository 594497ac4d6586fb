// servelab/sim: the twin's few fitted numbers. Everything else is physics (datasheets, kernel
// efficiencies with sources) and engine rules (src/engines). Three parameters per class, keyed by
// (engine version family, GPU generation), fitted from fixed priors within physical bounds
// (src/sim/fit.h) and stored in src/sim/calibration.json:
//   kernel_scale    multiplies every kernel efficiency of the class (how well that engine version's
//                   kernels use that GPU generation relative to the public kernel figures)
//   cpu_step_ms     CPU time per engine step: scheduling, input preparation, sampling, output processing
//   cpu_request_us  CPU time per running request per step (bookkeeping, detokenisation, streaming)
//   api_request_ms  the API server's serial CPU time per request (HTTP, chat template, tokenisation,
//                   hand-off to the engine): requests reach the engine one after another, and tokens
//                   queued behind that work reach the client when it is done
//   first_token_ms  latency of a request's first token outside the engine step (hand-off, detokeniser
//                   set-up, first SSE chunk), added to TTFT; the rest of its stream is as late (the client
//                   sees every token that much after its step: the gaps between tokens stay the engine's)
//   api_stream_request_us  the API server's serial CPU time per decoding request per engine step for a
//                   streamed reply through a reasoning parser (ExecutionPolicy::api_stream_stage)
//   eager_launch_us CPU time to issue one kernel of a step that runs without CUDA graphs (the engine's
//                   Python forward per launched kernel)
//   harmony_api_share  the share of api_request_ms an API server spends per request when it renders chat
//                   requests with openai_harmony instead of the Jinja template
//                   (ExecutionPolicy::harmony_chat)
// The last five are the engine's, fitted per engine (fit.h kClassFields); the last three only move the
// points whose launches take those paths, the others keep their prior.
// A class without fitted data falls back to its version family's pooled value, then its engine's, then
// the prior; on a fallback its kernel_scale is multiplied by its GPU generation's factor (below).
//
// GPU-generation factor. The kernel figures of physics.cc are datasheet peaks times public efficiencies
// that were measured at boost clocks on tuned shapes; how far a generation's real kernels sit from them
// is a property of the GPU (sustained clocks under the power limit, the cuBLAS/FlashAttention builds the
// engines share), not of one engine. The fitted classes show it: every engine's Ampere class sits well
// above its Hopper class (in-sample kernel_scale ampere/hopper: vLLM 0.11 0.83/0.65, SGLang 0.5.3
// 1.13/0.67, TensorRT-LLM 1.2 1.10/0.45). So the pooled values are a two-way model in log space,
// ln kernel_scale(class) = a(family or engine) + g(generation), fitted by alternating weighted means
// over the classes (weights: points), each term shrunk towards 0 (the prior) with kPriorPseudoPoints;
// an engine release never measured on a generation borrows g from the engines that were.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/hardware/hardware.h"

namespace servelab::sim {

/// The fitted parameters of one class (units in the names).
struct Calibration {
  double kernel_scale = 1.0;
  double cpu_step_ms = 2.0;
  double cpu_request_us = 20.0;
  double api_request_ms = 5.0;
  double first_token_ms = 10.0;
  double api_stream_request_us = 30.0;
  double eager_launch_us = 12.0;
  double harmony_api_share = 0.2;
};

/// Number of fitted fields, their names (calibration.json keys), bounds and priors.
inline constexpr int kCalibrationFields = 8;
extern const char* const kCalibrationFieldNames[kCalibrationFields];
/// Physical bounds of each field (a fit that ends on one is a defect of the model, see fit.h).
struct FieldBounds {
  double lo, hi;
};
extern const FieldBounds kCalibrationBounds[kCalibrationFields];
/// Bounds of a GPU generation's kernel_scale factor (CalibrationTable::generations).
extern const FieldBounds kGenerationFactorBounds;
/// Fields from this index on (api_stream_request_us, eager_launch_us, harmony_api_share) may be absent from a
/// calibration.json entry: the prior, Calibration's default, is used.
inline constexpr int kCalibrationOptionalFieldsFirst = 5;
/// The fields in kCalibrationFieldNames order, and back (missing trailing values keep their defaults).
std::vector<double> calibration_vector(const Calibration& c);
Calibration calibration_from_vector(const std::vector<double>& v);

/// The prior of an engine ("vllm", "sglang", "trtllm": the engine module's cpu_prior, engine_module.h; the
/// source of each field is by its definition in calibration.cc). Throws std::invalid_argument for a name no
/// module has.
Calibration calibration_prior(const std::string& engine);

/// The class a launch's parameters are looked up by.
struct CalibrationKey {
  std::string engine;          ///< "vllm"
  std::string version_family;  ///< "vllm-0.11" (engines::ResolvedLaunch::version_family)
  std::string generation;      ///< hardware::generation_name: "hopper"
  std::string name() const { return version_family + "/" + generation; }
};

/// Where a looked-up calibration came from.
enum class CalibrationLevel { kClass, kFamily, kEngine, kPrior };

/// The fitted parameters by class and by engine, with how many studies / points each was fitted on.
struct CalibrationTable {
  struct Entry {
    Calibration cal;
    int studies = 0;
    int points = 0;
  };
  std::map<std::string, Entry> classes;   ///< CalibrationKey::name() -> entry
  std::map<std::string, Entry> families;  ///< version family (any GPU generation) -> pooled entry
  std::map<std::string, Entry> engines;   ///< engine -> pooled entry (kernel_scale generation-neutral)
  /// GPU generation (hardware::generation_name) -> kernel_scale factor applied on a family / engine
  /// fallback (dimensionless; 1 when absent), with the points it was estimated from.
  struct GenerationFactor {
    double kernel_scale_factor = 1.0;
    int points = 0;
  };
  std::map<std::string, GenerationFactor> generations;

  /// The most specific calibration for `key`: its class, else its version family's pooled value (the
  /// same engine release on other GPU generations), else its engine's, else the prior; a family or
  /// engine fallback has its kernel_scale multiplied by the generation's factor (clamped to the bounds).
  Calibration lookup(const CalibrationKey& key, CalibrationLevel* level = nullptr) const;
};

/// Parses calibration.json text. Throws std::runtime_error naming the key of anything malformed.
CalibrationTable calibration_table_from_json(const std::string& text);
/// calibration.json text for `table` (4 significant digits, a comment naming the command that wrote it).
std::string calibration_table_to_json(const CalibrationTable& table, const std::string& comment);

/// The embedded calibration.json (fitted on the whole released corpus) and its parsed table.
const std::string& embedded_calibration_json();
const CalibrationTable& embedded_calibration();

}  // namespace servelab::sim
