// servelab/bench: `servelab bench merge SHARD.json...` — joins the detailed results of the shards of one
// schedule (`bench serve --shard I/N --start-at EPOCH_S --save-result --save-detailed`) into the report one
// client would have printed: the per-request records go back to their dataset indices, every shard's times
// move onto the common clock (its measured offset applied), and the same metrics code as `bench serve`
// (metrics::compute_metrics, report::format_console_block/extras, report::make_result_json) runs on the
// union.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/bench/clock_offset.h"
#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"
#include "servelab/report/report.h"

namespace servelab::bench {

/// Thrown when the shards cannot be merged; the message names the file and the problem.
struct MergeError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// One shard result as read from its file.
struct ShardInput {
  std::string name;       ///< the file (for messages)
  nlohmann::json result;  ///< the whole --save-result object
};

/// Reads a shard result file (one JSON object). Throws MergeError naming the file when it cannot be read or
/// parsed, or holds no "servelab"."shard" object with per-request records.
ShardInput read_shard_file(const std::filesystem::path& path);

/// One shard's clock as merge applied it.
struct AppliedClock {
  int shard = 0;      ///< shard index
  std::string name;   ///< its file
  ClockOffset clock;  ///< as the shard recorded it
  /// The offset applied, ms: the shard's own, or for shards sharing one host clock (same clock_id), the
  /// group's best-measured one (least uncertainty), so that one clock gets one offset.
  double applied_offset_ms = 0.0;
  double applied_uncertainty_ms = 0.0;
};

/// What bench merge produced.
struct MergeResult {
  report::RunInfo run;
  metrics::BenchmarkMetrics metrics;
  metrics::PercentileMetrics selected;
  std::vector<metrics::RequestOutput> outputs;  ///< dataset order, times on the common clock
  std::vector<AppliedClock> clocks;             ///< shard order
  double server_time_scale = 1.0;               ///< engine s per wall s of the server the shards measured
  bool engine_twin = false;                     ///< that server was servelab's engine twin
  /// Largest difference between two applied offsets, ms (the skew corrected).
  double skew_ms = 0.0;
  /// Largest uncertainty left on the relative clock of two shards (sum of two groups' uncertainties), ms.
  double skew_uncertainty_ms = 0.0;
  /// Rows of the vLLM console block whose printed value changes when one clock group moves by its
  /// uncertainty (empty: the clocks are known well enough for the printed precision).
  std::vector<std::string> clock_sensitive_rows;
  std::string console_report;          ///< the block, servelab's extra lines, then the merge lines
  nlohmann::ordered_json result_json;  ///< the --save-result object of the merged run
};

/// Merges `shards`: checks that they belong together (same count, fingerprint, seed, data set, num_prompts,
/// start time, time scale and report flags; every index 0..N-1 exactly once; each shard's request indices the
/// partition), puts every request at its index with dispatch/send/wire times moved by -offset (intended send
/// times are the common schedule), takes the duration as the latest shard end on the common clock, and
/// computes the metrics and report. `save_detailed`: keep per-request arrays in result_json. Throws
/// MergeError naming the file and the problem.
MergeResult merge_shards(const std::vector<ShardInput>& shards, bool save_detailed);

}  // namespace servelab::bench
