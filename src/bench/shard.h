// servelab/bench: load from several hosts. `bench serve --shard I/N --start-at EPOCH_S` sends shard I of the
// schedule one client would have sent (same seed, same dataset sampling, same arrival times), starting the
// schedule's t = 0 at the wall-clock instant EPOCH_S on every host; `bench merge` (bench/merge.h) joins the
// shards' detailed results into the report one client would have printed. See docs/bench.md, "Load from
// several hosts".
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/bench/clock_offset.h"
#include "servelab/bench/config.h"
#include "servelab/client/client.h"
#include "servelab/metrics/request_output.h"

namespace servelab::bench {

/// Shard `index` of `count`, 0-based (0 <= index < count), as Slurm numbers its tasks (SLURM_PROCID of
/// SLURM_NTASKS): `--shard $SLURM_PROCID/$SLURM_NTASKS`.
struct ShardSpec {
  int index = 0;
  int count = 1;
};

/// Parses `--shard I/N` (decimal integers, 0 <= I < N, 1 <= N <= 4096). Throws ConfigError naming the flag
/// and the value (e.g. "--shard 2/2: the index is 0-based and must be < 2").
ShardSpec parse_shard_spec(const std::string& text);

/// The request indices (dataset order) shard `spec` sends out of `num_requests`: every i with
/// i mod count == index, ascending. The shards partition [0, num_requests) exactly.
std::vector<std::size_t> shard_indices(std::size_t num_requests, const ShardSpec& spec);

/// Shard `spec`'s part of `--max-concurrency total`: floor(total / count), plus 1 for the first
/// total mod count shards, so that the parts sum to `total`. Throws ConfigError when total < count (a shard
/// would get no slot).
int shard_max_concurrency(int total, const ShardSpec& spec);

/// Latest accepted --start-at, seconds after now (24 h).
inline constexpr double kMaxStartAheadS = 24 * 3600.0;

/// Checks `--start-at start_wall_s` (Unix seconds) against the wall clock now: refuses a time that has
/// passed or lies more than kMaxStartAheadS ahead. Throws ConfigError naming the time, now and the bound.
void check_start_at(double start_wall_s, double now_wall_s);

/// The steady-clock instant at which this host's wall clock reads `start_wall_s` (Unix seconds).
std::chrono::steady_clock::time_point steady_at_wall(double start_wall_s);

/// The request-id prefix every shard derives when --request-id-prefix is not given (so that request ids
/// agree across hosts): "bench-" + 8 hex digits of FNV-1a(seed, start time) + "-".
std::string shard_request_id_prefix(std::int64_t seed, double start_wall_s);

/// FNV-1a 64 of what a schedule sends (every request's prompt or prompt tokens or messages, prompt length,
/// max tokens, and its intended send time bit for bit), as 16 hex digits: shards of one schedule agree on it,
/// shards built from a different seed, data set or rate do not.
std::string workload_fingerprint(std::span<const client::PlannedRequest> requests,
                                 std::span<const double> schedule_s);

/// A request's record, every field of metrics::RequestOutput (times in s, full double precision), for the
/// shard result; request_from_json reads it back exactly. request_from_json throws std::runtime_error naming
/// the missing or mistyped key.
nlohmann::ordered_json request_to_json(const metrics::RequestOutput& out);
metrics::RequestOutput request_from_json(const nlohmann::json& j);

/// What a shard run adds to its result JSON ("servelab" → "shard"): everything `bench merge` checks and uses.
struct ShardRecord {
  ShardSpec spec;
  double start_at_s = 0.0;           ///< --start-at, Unix s (this host's wall clock)
  std::string fingerprint;           ///< workload_fingerprint of the full schedule
  std::size_t num_requests = 0;      ///< requests of the full schedule
  std::vector<std::size_t> indices;  ///< this shard's request indices (shard_indices)
  ClockOffset clock;                 ///< measured before the run
  double duration_s = 0.0;           ///< t = 0 (start_at) to this shard's last completion, engine s
  double server_time_scale = 1.0;    ///< engine s per wall s (1 unless the server is a time-scaled twin)
  bool engine_twin = false;          ///< the server is servelab's engine twin (times are engine time)
  int shard_max_concurrency = 0;     ///< this shard's --max-concurrency part (0: none)
};

/// A shard's part of a schedule: its requests and intended send times (seconds from --start-at), with the
/// record's spec, start time, fingerprint of the full schedule and indices filled.
struct ShardPlan {
  ShardRecord record;
  std::vector<client::PlannedRequest> requests;
  std::vector<double> schedule_s;
};

/// Builds shard `spec` of (`requests`, `schedule_s`) (equal sizes; throws std::invalid_argument otherwise).
ShardPlan make_shard_plan(const ShardSpec& spec, double start_at_s,
                          std::span<const client::PlannedRequest> requests,
                          std::span<const double> schedule_s);

/// Sleeps until `lead_s` seconds before this host's wall clock reads `start_wall_s` (returns at once when
/// that has passed), or until `stop` is requested. Returns false when stopped.
bool sleep_until_before(double start_wall_s, double lead_s, std::stop_token stop);

/// The "shard" object: the record, the run's flags that define the schedule and the report (seed, dataset,
/// num_prompts, rate, burstiness, --max-concurrency, ramp-up, percentiles, goodput, backend, model,
/// tokenizer, label, metadata), and one request_to_json per request of the shard in `indices` order.
nlohmann::ordered_json shard_json(const ShardRecord& record, const RunOptions& config,
                                  const ResolvedConfig& resolved, const std::string& model_id,
                                  const std::string& tokenizer_id,
                                  std::span<const metrics::RequestOutput> outputs);

}  // namespace servelab::bench
