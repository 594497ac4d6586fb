// servelab/bench: the server side of a benchmark — the engine's Prometheus `/metrics` scraped before the
// timed run, every `--server-metrics-interval-s` during it and after it, reduced to engine-neutral
// quantities (KV-cache usage, running/waiting requests, preemptions, prefix-cache hits/queries, spec-decode
// drafts/acceptance) and summarised over the run.
//
// bench names no engine: what it reads is given, per engine, by the engine modules
// (metrics/server_metric_names.h, EngineModule::server_metrics; the CLI and tune pass the table's in
// RunOptions::server_metric_names). A Prometheus answer is read with every engine's names, in table order:
// per quantity the first name present wins; series of one name (e.g. one per DP engine) are summed, and
// KV-cache usage and acceptance length take the max. The engine is the first whose prefix a name carries.
// An engine that serves iteration-stats JSON instead (a list of per-iteration objects since the previous
// GET) is read by `reduce_iteration_stats` with the keys its module gives
// (metrics::ServerMetricNames::iteration_stats): the first engine, in table order, whose keys the answer
// carries.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/bench/prometheus.h"
#include "servelab/metrics/server_metric_names.h"

namespace servelab::bench {

/// One scrape reduced to the quantities bench reports. Absent fields: the server does not expose them.
struct ServerSample {
  enum class Phase { kBefore, kDuring, kAfter };
  Phase phase = Phase::kDuring;
  double t_s = 0.0;  ///< since the timed run started, benchmark time (engine time against a time-scaled twin)
  std::optional<double> kv_cache_usage;  ///< fraction of KV-cache blocks in use, [0, 1]
  std::optional<double> num_requests_running;
  std::optional<double> num_requests_waiting;
  std::optional<double> preemptions_total;           ///< counter since server start
  std::optional<double> prefix_cache_queries_total;  ///< tokens looked up in the prefix cache (counter)
  std::optional<double> prefix_cache_hits_total;     ///< tokens found there (counter)
  std::optional<double> prefix_cache_hit_rate;       ///< a hit-rate gauge [0, 1] (SGLang), not a counter
  std::optional<double> spec_decode_num_drafts_total;
  std::optional<double> spec_decode_draft_tokens_total;
  std::optional<double> spec_decode_accepted_tokens_total;
  std::optional<double> spec_decode_acceptance_length;  ///< a gauge (SGLang): tokens per verify step
};

/// Reduces a Prometheus exposition with the engines' `names` (file comment). `engine` receives the engine
/// name (ServerMetricNames::engine) of the first of `names` whose prefix a metric name carries, or "" (none);
/// `prefix_cache_unit` that engine's unit of the prefix-cache counts ("" for none). Never throws.
ServerSample reduce_exposition(const prometheus::Exposition& exposition,
                               const std::vector<metrics::ServerMetricNames>& names,
                               std::string* engine = nullptr, std::string* prefix_cache_unit = nullptr);

/// Reduces an iteration-stats `/metrics` answer (a JSON array of one object per iteration since the
/// previous GET, newest last) read with one engine's `keys`: running/waiting requests and KV-cache usage
/// (used / total blocks) from the newest entry, prefix-cache hits and queries (hits + misses) from its
/// cumulative counts, and the per-iteration spec-decode counts (drafts, draft and accepted tokens) added to
/// `totals`, whose running sums the sample carries. nullopt, `totals` untouched, when `body` is not a JSON
/// array whose every entry carries one of keys.entry_keys. Never throws.
std::optional<ServerSample> reduce_iteration_stats(std::string_view body,
                                                   const metrics::IterationStatsKeys& keys,
                                                   ServerSample& totals);

/// Max and mean of a gauge over the samples taken during the run.
struct GaugeStats {
  double max = 0.0;
  double mean = 0.0;
  std::size_t samples = 0;
};

/// The server-side view of one run.
struct ServerMetrics {
  std::string url;     ///< the scraped URL (credentials redacted)
  std::string engine;  ///< the engine the names came from (ServerMetricNames::engine), "" when none
  std::string prefix_cache_unit = "tokens";  ///< that engine's unit of the prefix-cache counts
  double interval_s = 1.0;                   ///< scrape period, wall seconds
  bool available = false;                    ///< the scrape before the run worked
  std::string note;  ///< one line: why nothing was scraped, or what went wrong on the way
  std::size_t scrapes_failed = 0;
  std::size_t skipped_lines = 0;      ///< malformed exposition lines over all scrapes (skipped)
  std::vector<ServerSample> samples;  ///< before (first), during, after (last)

  // Over the run: gauges over the samples during it, counters as (last - first).
  std::optional<GaugeStats> kv_cache_usage, num_requests_running, num_requests_waiting;
  std::optional<double> preemptions;
  std::optional<double> prefix_cache_queries, prefix_cache_hits;
  std::optional<double> prefix_cache_hit_rate;  ///< hits / queries, else the mean of a hit-rate gauge
  std::optional<double> spec_decode_num_drafts, spec_decode_draft_tokens, spec_decode_accepted_tokens;
  std::optional<double> spec_decode_acceptance_rate;  ///< accepted / draft tokens, [0, 1]
  std::optional<double>
      spec_decode_acceptance_length;  ///< 1 + accepted / drafts (vLLM bench), else the gauge
};

/// Fills the run summary of `m` from `m.samples` (counter deltas from the first to the last sample that has
/// the counter; a counter that went backwards, e.g. a restarted server, gives no delta and a note).
void summarize_server_metrics(ServerMetrics& m);

/// The console lines (after servelab's extras). Empty when the scrape was turned off.
std::string format_server_metrics(const ServerMetrics& m);

/// The `servelab.server_metrics` object of the result JSON: summary, then the samples as columns
/// (`samples.t_s`, `samples.kv_cache_usage`, ...; null where a scrape lacked the value).
nlohmann::ordered_json server_metrics_json(const ServerMetrics& m);

namespace detail {

/// One GET of a metrics URL reduced to a sample; `error` non-empty (one line) when the answer is not usable.
struct ScrapeResult {
  std::optional<ServerSample> sample;
  std::string engine;             ///< ServerMetricNames::engine of the engine read, "" = none known
  std::string prefix_cache_unit;  ///< its unit of the prefix-cache counts ("" = none known)
  std::size_t skipped_lines = 0;
  std::string error;
};

/// GET `url` (5 s timeout) and reduce the answer with the engines' `names`: Prometheus text, or the
/// iteration-stats JSON of the first engine of `names` whose keys it carries (its counters accumulated into
/// `iteration_totals`; an empty array names the engine only when one engine alone serves such JSON). HTTP
/// errors, HTML/JSON of another kind and text without any sample come back as `error`. Never throws.
ScrapeResult scrape_metrics(const std::string& url,
                            const std::vector<std::pair<std::string, std::string>>& headers, bool insecure,
                            const std::vector<metrics::ServerMetricNames>& names,
                            ServerSample* iteration_totals);

/// Scrapes a server on its own thread (own connection per scrape, lowered CPU priority) so that the load
/// generator's timing is not disturbed. Construct with the scrape before the run; stop() takes the one
/// after it. Thread-safety: construct, stop() and result() from one thread.
class ServerMetricsScraper {
 public:
  /// Scrapes `base_url + "/metrics"` once now (the "before" sample), read with the engines' `names`. When
  /// that fails, the note says why and no thread is started. `time_scale` converts wall seconds to benchmark
  /// time in the samples' `t_s`.
  ServerMetricsScraper(const std::string& base_url, std::vector<std::pair<std::string, std::string>> headers,
                       bool insecure, double interval_s, double time_scale,
                       std::vector<metrics::ServerMetricNames> names);
  ~ServerMetricsScraper();
  ServerMetricsScraper(const ServerMetricsScraper&) = delete;
  ServerMetricsScraper& operator=(const ServerMetricsScraper&) = delete;

  /// Marks t = 0 of the timed run and starts the periodic scrape.
  void start_run();
  /// Stops the thread and takes the "after" sample; returns the summarised result.
  ServerMetrics stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace detail
}  // namespace servelab::bench
