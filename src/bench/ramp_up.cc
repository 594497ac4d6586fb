// servelab/bench: ramp-up rps_change_events (see ramp_up.h).
#include "bench/ramp_up.h"

#include <fmt/format.h>

#include <cmath>
#include <ctime>

namespace servelab::bench {

std::vector<report::RpsChangeEvent> rps_change_events(const client::ArrivalOptions& arrival,
                                                      double start_wall_s,
                                                      std::span<const double> dispatch_wall_s) {
  std::vector<report::RpsChangeEvent> events;
  if (arrival.ramp_up == client::RampUp::kNone) return events;
  int last = arrival.ramp_up_start_rps;
  events.push_back({last, iso_local_timestamp(start_wall_s)});
  for (std::size_t i = 0; i < dispatch_wall_s.size() && i < arrival.num_requests; ++i) {
    const int now = static_cast<int>(client::arrival_rate(arrival, i));  // Python int(): toward zero
    if (now <= last) continue;
    const std::string stamp = iso_local_timestamp(dispatch_wall_s[i]);
    for (int rps = last + 1; rps <= now; ++rps) events.push_back({rps, stamp});
    last = now;
  }
  return events;
}

std::string iso_local_timestamp(double unix_s) {
  const double whole = std::floor(unix_s);
  auto micros = static_cast<long long>(std::llround((unix_s - whole) * 1e6));
  auto seconds = static_cast<std::time_t>(whole);
  if (micros >= 1000000) {  // rounding carried into the next second
    micros -= 1000000;
    ++seconds;
  }
  std::tm local{};
  localtime_r(&seconds, &local);
  char buf[32];
  const std::size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &local);
  std::string out(buf, n);
  if (micros != 0) out += fmt::format(".{:06d}", micros);
  return out;
}

}  // namespace servelab::bench
