#include <nlohmann/json.hpp>

#include <stdexcept>
#include <vector>

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
  std::vector<double> v = calibration_vector(Calibration{});
  for (int i = 0; i < kCalibrationFields; ++i) {
    const char* key = kCalibrationFieldNames[i];
    if (!e.contains(key)) continue;
    if (!e.at(key).is_number())
      throw std::runtime_error(std::string("calibration.json: ") + engine + "." + key + " is not a number");
    v[i] = e.at(key).get<double>();
  }
  return calibration_from_vector(v);
}

}  // namespace servelab::sim
