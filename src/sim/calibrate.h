// servelab/sim: fitting the twin's efficiency factors to released measurements (`servelab sim calibrate`).
#pragma once

#include <filesystem>
#include <map>
#include <string>

#include "sim/hardware.h"
#include "sim/step_time.h"

namespace servelab::sim {

/// Result of a fit: the calibration per engine and the objective before / after.
struct FitResult {
  std::map<std::string, Calibration> calibration;  ///< "vllm", "sglang", "trtllm"
  std::map<std::string, double> objective_before, objective_after;
  std::map<std::string, int> runs;                 ///< released ShareGPT successes used per engine
  int evaluations = 0;
};

/// Fits, per engine, the free factors (gemm_efficiency, attention_efficiency, cpu_step_ms,
/// cpu_per_request_us, launch_overhead_ms, eager_per_request_us, moe_tp_efficiency_ratio, and
/// gemm_no_deepgemm_ratio where a DeepGEMM-off run is released) to the engine's released ShareGPT
/// successes in `measurements_json` — entries whose metrics are withheld are never read. Objective:
/// sum over runs of 4 ln^2(total tok/s ratio) + ln^2(mean TTFT ratio) + ln^2(mean TPOT ratio), plus a
/// ridge 0.02 ln^2(value / starting value) per factor. Method: coordinate pattern search in log space
/// within physical bounds, starting from the embedded calibration. Deterministic.
/// Throws std::runtime_error for an unreadable measurements file.
FitResult fit_calibration(const std::filesystem::path& measurements_json, const Cluster& cluster,
                          int sweeps = 12);

/// The calibration.json text for `calibration` (all fields, 4 significant digits, with a comment
/// naming the command that wrote it).
std::string calibration_to_json(const std::map<std::string, Calibration>& calibration);

}  // namespace servelab::sim
