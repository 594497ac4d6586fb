// servelab/bench private: one meaning of time against a time-scaled engine twin (`servelab sim serve
// --time-scale K`, the engine stand-ins). Such a server runs K times faster than real time and says so
// (/v1/models `servelab.time_scale`); bench then sends at K times the requested rate, reports every time,
// rate and throughput in engine time (wall × K), labelled, and checks that the server kept its schedule
// (GET /servelab/schedule): a host too slow for the scale inflates every measured time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"

namespace servelab::bench::detail {

/// The server's clock as it advertises it. Real engines advertise nothing: time_scale 1, engine_twin false.
struct ServerClock {
  double time_scale = 1.0;   ///< engine seconds per wall second
  bool engine_twin = false;  ///< the server is servelab's engine twin
};

/// GET {base_url}/v1/models (5 s timeout) and read data[0].servelab.{engine_twin,time_scale}. Any failure
/// (no such path, not JSON, no servelab key) means a real engine: {1, false}. Never throws.
ServerClock probe_server_clock(const std::string& base_url,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               bool insecure);

/// The clock advertised in a /v1/models response body ({1, false} when it holds none). Never throws.
ServerClock server_clock_from_models(const std::string& body);

/// Tokens emitted and their lag behind the twin's schedule over a window, engine ms.
struct ScheduleWindow {
  std::uint64_t tokens = 0;
  double lag_sum_ms = 0.0;
  double lag_max_ms = 0.0;
  double lag_last_ms = 0.0;  ///< the latest token's lag: read right after the run, the error on its duration
  double admission_wait_max_ms = 0.0;  ///< bound on how long a request waited unread (busy event loop)
  double mean_ms() const { return tokens ? lag_sum_ms / static_cast<double>(tokens) : 0.0; }
};

/// GET {base_url}/servelab/schedule: the window since the previous read (the read starts a new one).
/// nullopt when the server does not answer it. Never throws.
std::optional<ScheduleWindow> read_schedule_window(
    const std::string& base_url, const std::vector<std::pair<std::string, std::string>>& headers,
    bool insecure);

/// How starved of CPU this process was during a run: a thread sleeping 1 ms at a time records how much
/// later than asked it woke (wall ms). On a loaded host every client timestamp is late by about that much,
/// and a time-scaled run multiplies it by the scale. Thread-safety: start/stop from one thread.
class StallMonitor {
 public:
  StallMonitor();
  ~StallMonitor();
  StallMonitor(const StallMonitor&) = delete;
  StallMonitor& operator=(const StallMonitor&) = delete;
  /// Stops the thread; returns the mean oversleep, wall ms.
  double stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

/// Converts wall-clock request timings (s) to engine time: every time and duration × time_scale.
void to_engine_time(std::span<metrics::RequestOutput> outputs, double time_scale);

/// Why a run against a time-scaled twin cannot be trusted, "" when it can. Rules (engine time):
///   1. the last token's lag ≤ 1% of the benchmark duration (it shifts the end of the run: every throughput);
///   2. the longest admission wait (a request unread while the server's one thread was busy) ≤ 10% of the
///      duration: it is an upper bound, tight for a burst sent at once, whose effect is usually much smaller
///      (64 x 1000-token prompts at scale 40: 3.2 s bound, 2.2% throughput change; at scale 10: 1.2 s,
///      0.25%);
///   3. the mean token lag ≤ 5% of the mean TTFT (the error on TTFT; a constant lag leaves TPOT and ITL
///      unchanged);
///   4. the client's mean oversleep `client_stall_ms` (StallMonitor, wall ms) × time_scale ≤ 5% of the mean
///      TTFT (the client itself was too starved to time the run).
/// They catch gross artefacts of a loaded host (the +12% win of issue 10); errors of a few percent can pass.
std::string schedule_invalid_reason(const ScheduleWindow& window, double duration_s,
                                    const metrics::BenchmarkMetrics& metrics, double time_scale,
                                    double client_stall_ms);

}  // namespace servelab::bench::detail
