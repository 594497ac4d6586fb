#include <nlohmann/json.hpp>

#include <stdexcept>

#include "sim/step_time.h"
#include "sim_generated/calibration_json.h"

namespace servelab::sim {

const std::string& calibration_json() {
  static const std::string text(detail::kCalibrationJson);
  return text;
}

Calibration calibration_for(const std::string& engine) {
  static const nlohmann::json j = nlohmann::json::parse(calibration_json());
  if (!j.contains(engine)) throw std::runtime_error("calibration.json has no entry for engine \"" + engine + "\"");
  const auto& e = j.at(engine);
  Calibration c;
  auto set = [&](const char* key, double& field) {
    if (e.contains(key)) field = e.at(key).get<double>();
  };
  set("gemm_efficiency", c.gemm_efficiency);
  set("gemm_no_deepgemm_ratio", c.gemm_no_deepgemm_ratio);
  set("attention_efficiency", c.attention_efficiency);
  set("memory_efficiency", c.memory_efficiency);
  set("comm_efficiency", c.comm_efficiency);
  set("collective_latency_us", c.collective_latency_us);
  set("cpu_step_ms", c.cpu_step_ms);
  set("cpu_per_request_us", c.cpu_per_request_us);
  set("launch_overhead_ms", c.launch_overhead_ms);
  set("eager_per_request_us", c.eager_per_request_us);
  set("mtp_acceptance", c.mtp_acceptance);
  return c;
}

}  // namespace servelab::sim
