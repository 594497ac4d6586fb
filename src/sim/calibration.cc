#include "servelab/sim/calibration.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "servelab/engines/engine_module.h"
#include "sim_generated/calibration_json.h"

namespace servelab::sim {

const char* const kCalibrationFieldNames[kCalibrationFields] = {
    "kernel_scale",   "cpu_step_ms",           "cpu_request_us",  "api_request_ms",
    "first_token_ms", "api_stream_request_us", "eager_launch_us", "harmony_api_share"};

// kernel_scale: public kernel figures are peaks of tuned kernels; an engine's real kernels sit within
// 0.4x-1.4x of them. cpu_step_ms: an engine step costs 0.2-40 ms of CPU (Python scheduling, input
// preparation, sampling). cpu_request_us: 1-2000 us per running request per step (TensorRT-LLM's PyTorch
// backend in eager mode prepares attention metadata per request in Python). api_request_ms: 0.05-60 ms
// of serial API-server work per request. first_token_ms: 0-150 ms. api_stream_request_us: 1-1000 us of
// Python per streamed chunk. eager_launch_us: 3-300 us per eagerly issued kernel (a bare CUDA launch is
// ~3-5 us; a Python forward with Triton / JIT launchers costs far more per kernel). harmony_api_share:
// 0.02-1 of the Jinja path's work (1: no saving).
const FieldBounds kCalibrationBounds[kCalibrationFields] = {{0.4, 1.4},   {0.2, 40.0},  {1.0, 2000.0},
                                                            {0.05, 60.0}, {0.5, 150.0}, {1.0, 1000.0},
                                                            {3.0, 300.0}, {0.02, 1.0}};

// A generation's sustained kernel speed against its datasheet figures: 0.5x-2x (H100 SXM's 989 BF16
// TFLOPS are at its 1,980 MHz boost; under the 700 W limit GEMMs run at ~1.4-1.75 GHz [recalled]).
const FieldBounds kGenerationFactorBounds = {0.5, 2.0};

std::vector<double> calibration_vector(const Calibration& c) {
  return {c.kernel_scale,   c.cpu_step_ms,           c.cpu_request_us,  c.api_request_ms,
          c.first_token_ms, c.api_stream_request_us, c.eager_launch_us, c.harmony_api_share};
}

Calibration calibration_from_vector(const std::vector<double>& v) {
  Calibration c;
  double* f[] = {&c.kernel_scale,   &c.cpu_step_ms,           &c.cpu_request_us,  &c.api_request_ms,
                 &c.first_token_ms, &c.api_stream_request_us, &c.eager_launch_us, &c.harmony_api_share};
  for (std::size_t i = 0; i < std::size(f) && i < v.size(); ++i) *f[i] = v[i];
  return c;
}

// Priors (fixed; a fit starts from them and is shrunk towards them, never from a previous fit), field by
// field:
// - kernel_scale 1: the public kernel figures of physics.cc as they are.
// - CPU per step: the engine module's cpu_prior (1.5-2.5 ms), and 20 us per running request [recalled:
//   Python engine loops of vLLM V1 / SGLang / TRT-LLM PyTorch take ~1-3 ms per step at a few hundred
//   requests; gpu-kernel-facts.md §2.7 found no per-step CPU figure].
// - API server per request: the engine module's cpu_prior (10 ms vLLM, 5 ms SGLang / TRT-LLM) [recalled:
//   one vLLM API-server process handles on the order of 100 chat requests/s, the reason for
//   --api-server-count (PR #17546)].
// - first token 10 ms [no source found: HTTP, hand-off and the first SSE chunk].
// - streamed reasoning-parser reply 30 us per decoding request per step [recalled estimate: per output a
//   detokenised delta, the parser's extract_reasoning_streaming, a pydantic ChatCompletionStreamResponse,
//   its JSON and one SSE write in vLLM's serving_chat.py, tens of us of Python].
// - 12 us per eagerly launched kernel [recalled: PyTorch eager per-op dispatch 10-20 us;
//   gpu-kernel-facts.md §2.7].
// - openai_harmony rendering 0.2 of the Jinja path's API work [estimate: one Rust call replaces the
//   template render and the tokenizer; HTTP, validation and the hand-off remain].
Calibration calibration_prior(const std::string& engine) {
  const engines::EngineModule* m = engines::find_engine_module(engine);
  if (!m) throw std::invalid_argument("calibration prior: no engine module is named '" + engine + "'");
  return {1.0, m->cpu_prior.cpu_step_ms, 20.0, m->cpu_prior.api_request_ms, 10.0, 30.0, 12.0, 0.2};
}

Calibration CalibrationTable::lookup(const CalibrationKey& key, CalibrationLevel* level) const {
  if (auto it = classes.find(key.name()); it != classes.end()) {
    if (level) *level = CalibrationLevel::kClass;
    return it->second.cal;
  }
  const auto with_generation = [&](Calibration c) {
    if (auto g = generations.find(key.generation); g != generations.end())
      c.kernel_scale = std::clamp(c.kernel_scale * g->second.kernel_scale_factor, kCalibrationBounds[0].lo,
                                  kCalibrationBounds[0].hi);
    return c;
  };
  if (auto it = families.find(key.version_family); it != families.end()) {
    if (level) *level = CalibrationLevel::kFamily;
    return with_generation(it->second.cal);
  }
  if (auto it = engines.find(key.engine); it != engines.end()) {
    if (level) *level = CalibrationLevel::kEngine;
    return with_generation(it->second.cal);
  }
  if (level) *level = CalibrationLevel::kPrior;
  return calibration_prior(key.engine);
}

namespace {

CalibrationTable::Entry parse_entry(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error("calibration.json: " + where + " is not an object");
  CalibrationTable::Entry e;
  std::vector<double> v = calibration_vector(Calibration{});
  for (int i = 0; i < kCalibrationFields; ++i) {
    const char* k = kCalibrationFieldNames[i];
    // The fields of the paths only some launches take may be absent (files written before they were
    // fitted): their prior, the same for every engine (Calibration's defaults).
    if (!j.contains(k) && i >= kCalibrationOptionalFieldsFirst) continue;
    if (!j.contains(k)) throw std::runtime_error("calibration.json: " + where + " lacks \"" + k + "\"");
    if (!j[k].is_number())
      throw std::runtime_error("calibration.json: " + where + "." + k + " is not a number");
    v[i] = j[k].get<double>();
    if (!(v[i] >= kCalibrationBounds[i].lo && v[i] <= kCalibrationBounds[i].hi))
      throw std::runtime_error(fmt::format("calibration.json: {}.{} = {} is outside its bounds [{}, {}]",
                                           where, k, v[i], kCalibrationBounds[i].lo,
                                           kCalibrationBounds[i].hi));
  }
  e.cal = calibration_from_vector(v);
  e.studies = j.value("studies", 0);
  e.points = j.value("points", 0);
  return e;
}

nlohmann::json entry_json(const CalibrationTable::Entry& e) {
  nlohmann::json j = nlohmann::json::object();
  const auto v = calibration_vector(e.cal);
  for (int i = 0; i < kCalibrationFields; ++i) {
    const double x = v[i];
    const double digits = x == 0 ? 0 : std::floor(std::log10(std::fabs(x)));
    const double scale = std::pow(10.0, 3 - digits);
    j[kCalibrationFieldNames[i]] = std::round(x * scale) / scale;
  }
  j["studies"] = e.studies;
  j["points"] = e.points;
  return j;
}

}  // namespace

CalibrationTable calibration_table_from_json(const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("calibration.json: invalid JSON: ") + e.what());
  }
  CalibrationTable t;
  if (j.contains("classes")) {
    if (!j["classes"].is_object()) throw std::runtime_error("calibration.json: \"classes\" is not an object");
    for (const auto& [k, v] : j["classes"].items()) t.classes[k] = parse_entry(v, "classes." + k);
  }
  if (j.contains("families")) {
    if (!j["families"].is_object())
      throw std::runtime_error("calibration.json: \"families\" is not an object");
    for (const auto& [k, v] : j["families"].items()) t.families[k] = parse_entry(v, "families." + k);
  }
  if (j.contains("engines")) {
    if (!j["engines"].is_object()) throw std::runtime_error("calibration.json: \"engines\" is not an object");
    for (const auto& [k, v] : j["engines"].items()) t.engines[k] = parse_entry(v, "engines." + k);
  }
  if (j.contains("generations")) {
    if (!j["generations"].is_object())
      throw std::runtime_error("calibration.json: \"generations\" is not an object");
    for (const auto& [k, v] : j["generations"].items()) {
      const std::string where = "generations." + k;
      if (!v.is_object() || !v.contains("kernel_scale_factor") || !v["kernel_scale_factor"].is_number())
        throw std::runtime_error("calibration.json: " + where + " lacks a numeric \"kernel_scale_factor\"");
      const double f = v["kernel_scale_factor"].get<double>();
      if (!(f >= kGenerationFactorBounds.lo && f <= kGenerationFactorBounds.hi))
        throw std::runtime_error(
            fmt::format("calibration.json: {}.kernel_scale_factor = {} is outside its bounds [{}, {}]", where,
                        f, kGenerationFactorBounds.lo, kGenerationFactorBounds.hi));
      t.generations[k] = {f, v.value("points", 0)};
    }
  }
  return t;
}

std::string calibration_table_to_json(const CalibrationTable& t, const std::string& comment) {
  nlohmann::ordered_json j;
  j["_comment"] = comment;
  nlohmann::ordered_json engines = nlohmann::ordered_json::object(),
                         classes = nlohmann::ordered_json::object(),
                         families = nlohmann::ordered_json::object();
  for (const auto& [k, e] : t.engines) engines[k] = entry_json(e);
  for (const auto& [k, e] : t.families) families[k] = entry_json(e);
  for (const auto& [k, e] : t.classes) classes[k] = entry_json(e);
  j["engines"] = engines;
  j["families"] = families;
  j["classes"] = classes;
  nlohmann::ordered_json gens = nlohmann::ordered_json::object();
  for (const auto& [k, g] : t.generations)
    gens[k] = {{"kernel_scale_factor", std::round(g.kernel_scale_factor * 1e4) / 1e4}, {"points", g.points}};
  j["generations"] = gens;
  return j.dump(1) + "\n";
}

const std::string& embedded_calibration_json() {
  static const std::string text(detail::kCalibrationJson);
  return text;
}

const CalibrationTable& embedded_calibration() {
  static const CalibrationTable t = calibration_table_from_json(embedded_calibration_json());
  return t;
}

}  // namespace servelab::sim
