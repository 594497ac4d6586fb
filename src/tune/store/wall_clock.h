// servelab/tune (private): the wall clock of the study's records.
#pragma once

#include <chrono>

namespace servelab::tune {

/// Seconds since the Unix epoch (std::chrono::system_clock: wall time, not monotonic), for the
/// timestamps of studies and trials in the store and the reports. Durations use steady_clock.
inline double wall_now_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace servelab::tune
