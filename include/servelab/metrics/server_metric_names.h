// servelab/metrics: how one engine's `/metrics` answer is read — the engine facts behind bench's
// server-metrics scrape (bench/server_metrics.h), as plain data. Each engine module supplies its own
// (engines/engine_module.h EngineModule::server_metrics) and the CLI hands the table's to bench, so bench
// names no engine. It lives here, a leaf both engines and bench may include (STYLE.md layering).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace servelab::metrics {

/// How an engine that answers `/metrics` with iteration-stats JSON (a JSON array of one object per engine
/// iteration since the previous GET, newest last) names its quantities. Each key is a path of object keys
/// joined by '.' ("kvCacheStats.usedNumBlocks"); "" = the engine does not report the quantity. Gauges and
/// the cumulative prefix-cache counts are read from the newest entry, the per-iteration spec-decode counts
/// are summed over the entries (bench/server_metrics.h reduce_iteration_stats).
struct IterationStatsKeys {
  /// An answer is this engine's when every entry of the array is an object carrying one of these keys.
  std::vector<std::string> entry_keys;
  std::string num_requests_running;         ///< a gauge
  std::string num_requests_waiting;         ///< a gauge
  std::string kv_cache_blocks_used;         ///< a gauge, KV-cache blocks in use (usage = used / total)
  std::string kv_cache_blocks_total;        ///< a gauge, KV-cache blocks in all
  std::string prefix_cache_hits;            ///< cumulative, in ServerMetricNames::prefix_cache_unit
  std::string prefix_cache_misses;          ///< cumulative, same unit (queries = hits + misses)
  std::string spec_decode_num_drafts;       ///< per iteration: requests that carried draft tokens
  std::string spec_decode_draft_tokens;     ///< per iteration: draft tokens proposed
  std::string spec_decode_accepted_tokens;  ///< per iteration: draft tokens accepted

  bool operator==(const IterationStatsKeys&) const = default;
};

/// One engine's `/metrics` names. Each list holds the Prometheus metric names of one quantity of
/// bench::ServerSample (the field of the same name), in order of preference: the first name present in a
/// scrape wins, its series (e.g. one per DP engine) summed, or their max for kv_cache_usage and
/// spec_decode_acceptance_length. An empty list: the engine does not expose the quantity.
struct ServerMetricNames {
  std::string engine;  ///< the name bench reports for the engine ("vllm"), ServerMetrics::engine
  /// A Prometheus metric name starting with it identifies the engine ("vllm:"); "" = none.
  std::string prefix;
  /// The unit of the prefix-cache hit and query counts: "tokens" or "blocks".
  std::string prefix_cache_unit;
  /// Set when the engine answers `/metrics` with iteration-stats JSON instead of Prometheus text: its keys
  /// there; nullopt = Prometheus text only.
  std::optional<IterationStatsKeys> iteration_stats;

  std::vector<std::string> kv_cache_usage;        ///< a gauge, fraction of KV-cache blocks in use [0, 1]
  std::vector<std::string> num_requests_running;  ///< a gauge
  std::vector<std::string> num_requests_waiting;  ///< a gauge
  std::vector<std::string> preemptions_total;     ///< a counter
  std::vector<std::string> prefix_cache_queries_total;         ///< a counter, in prefix_cache_unit
  std::vector<std::string> prefix_cache_hits_total;            ///< a counter, in prefix_cache_unit
  std::vector<std::string> prefix_cache_hit_rate;              ///< a gauge [0, 1]
  std::vector<std::string> spec_decode_num_drafts_total;       ///< a counter
  std::vector<std::string> spec_decode_draft_tokens_total;     ///< a counter
  std::vector<std::string> spec_decode_accepted_tokens_total;  ///< a counter
  std::vector<std::string> spec_decode_acceptance_length;      ///< a gauge, tokens per verify step

  bool operator==(const ServerMetricNames&) const = default;
};

}  // namespace servelab::metrics
