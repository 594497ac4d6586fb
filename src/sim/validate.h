// servelab/sim: `sim validate` — every released measurement of the reference study against the twin.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sim/hardware.h"
#include "sim/sim.h"

namespace servelab::sim {

/// The four headline numbers of a run (tok/s, ms).
struct HeadlineMetrics {
  double total_tok_s = 0;
  double output_tok_s = 0;
  double mean_ttft_ms = 0;
  double mean_tpot_ms = 0;
  double duration_s = 0;
  int completed = 0;
};

/// One measurement of seed-measurements.json and the twin's prediction for it.
struct ValidationRow {
  std::string engine, config, scenario, command;
  std::vector<std::string> env;
  bool withheld = false;                     ///< metrics withheld: prediction shown, no error computed
  std::optional<std::string> measured_failure;
  std::optional<std::string> predicted_failure;
  bool failure_same_reason = false;          ///< both failed and the reasons agree (see validate.cc)
  std::optional<HeadlineMetrics> measured, predicted;
  std::optional<TwinView> twin;
};

/// All rows plus the accuracy summary over released ShareGPT successes (MAPE in %).
struct ValidationReport {
  std::vector<ValidationRow> rows;
  double mape_total_tok_s = 0, mape_output_tok_s = 0, mape_ttft = 0, mape_tpot = 0;
  int compared = 0;                  ///< released successes compared
  int failures_released = 0, failures_reproduced = 0, failures_same_reason = 0;
  bool same_winner = false;          ///< best measured config (total tok/s) is the best predicted
  bool same_engine_order = false;    ///< engines ranked by their best config agree
  std::string measured_engine_order, predicted_engine_order;
  std::string measured_winner, predicted_winner;
};

/// Parses a study entry's launch command and env assignments ("NAME=value") with the engines module.
/// A command the engine refuses to parse comes back as Failure (the engine's message).
std::variant<engines::EngineConfig, Failure> parse_study_launch(const std::string& command,
                                                                const std::vector<std::string>& env);

/// Parses one study entry's launch (command + env) and predicts `scenario` with it. Failures (parse
/// errors, start-up refusals, OOM) come back as Failure. Thread-safety: pure.
PredictResult predict_study_entry(const std::string& command, const std::vector<std::string>& env,
                                  const std::string& scenario, const Cluster& cluster);

/// Headline metrics of a prediction, through the same metrics::compute_metrics bench uses.
HeadlineMetrics headline(const Prediction& p);

/// Runs every entry of `measurements_json` (seed-measurements.json layout). Throws std::runtime_error
/// naming the file for unreadable / malformed JSON.
ValidationReport validate(const std::filesystem::path& measurements_json, const Cluster& cluster);

/// The table `servelab sim validate` prints.
std::string format_validation(const ValidationReport& report);

}  // namespace servelab::sim
