// servelab/bench: vLLM 0.13's `rps_change_events` of a ramp-up run (serve.py `benchmark()`), the record of
// when the ramp crossed each integer request rate.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "servelab/client/client.h"
#include "servelab/report/report.h"

namespace servelab::bench {

/// vLLM 0.13 `benchmark()`: with a ramp-up, first {"rps": start, "timestamp": start of the run}; then, for
/// each dispatched request i in order, when int(λ_i) (client::arrival_rate, truncated as Python int())
/// exceeds the last recorded rps, one event per integer rps in (last, int(λ_i)], all stamped with request i's
/// dispatch time. Empty without a ramp-up. `arrival` gives the strategy, start/end rps and the number of
/// requests (in the user's rates, not a twin's scaled ones); `start_wall_s` is the wall-clock time of the
/// run's start and `dispatch_wall_s[i]` that of request i's dispatch (Unix seconds); only the first
/// dispatch_wall_s.size() requests were dispatched (an interrupted run sends a prefix of them).
std::vector<report::RpsChangeEvent> rps_change_events(const client::ArrivalOptions& arrival,
                                                      double start_wall_s,
                                                      std::span<const double> dispatch_wall_s);

/// Python `datetime.fromtimestamp(unix_s).isoformat()`: local time "YYYY-MM-DDTHH:MM:SS.ffffff", rounded to
/// the microsecond, the fraction left out when it is 0 (as Python does).
std::string iso_local_timestamp(double unix_s);

}  // namespace servelab::bench
