// Arrival schedule of `vllm bench serve` (serve.py get_request) with numpy's legacy RandomState.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "servelab/schedule/rng.h"
#include "servelab/schedule/schedule.h"

namespace servelab::schedule {

double arrival_rate(const ArrivalOptions& o, std::size_t i) {
  if (o.ramp_up == RampUp::kNone) return o.request_rate;
  const double denom = static_cast<double>(o.num_requests > 1 ? o.num_requests - 1 : 1);
  const double progress = static_cast<double>(i) / denom;
  if (o.ramp_up == RampUp::kLinear) {
    const double increase = static_cast<double>(o.ramp_up_end_rps - o.ramp_up_start_rps) * progress;
    return o.ramp_up_start_rps + increase;
  }
  const double ratio = static_cast<double>(o.ramp_up_end_rps) / static_cast<double>(o.ramp_up_start_rps);
  return o.ramp_up_start_rps * std::pow(ratio, progress);
}

std::vector<double> arrival_schedule(const ArrivalOptions& o) {
  if (!(o.burstiness > 0.0)) {
    throw std::invalid_argument("arrival schedule: burstiness must be > 0, got " +
                                std::to_string(o.burstiness));
  }
  if (o.ramp_up == RampUp::kNone) {
    if (!(o.request_rate > 0.0)) {
      throw std::invalid_argument("arrival schedule: request rate must be > 0, got " +
                                  std::to_string(o.request_rate));
    }
  } else {
    if (o.ramp_up_start_rps > o.ramp_up_end_rps) {
      throw std::invalid_argument("arrival schedule: ramp-up start RPS (" +
                                  std::to_string(o.ramp_up_start_rps) + ") must be <= end RPS (" +
                                  std::to_string(o.ramp_up_end_rps) + ")");
    }
    if (o.ramp_up == RampUp::kExponential && o.ramp_up_start_rps <= 0) {
      throw std::invalid_argument("arrival schedule: exponential ramp-up needs start RPS > 0, got " +
                                  std::to_string(o.ramp_up_start_rps));
    }
    if (o.ramp_up_end_rps <= 0) {
      throw std::invalid_argument("arrival schedule: ramp-up end RPS must be > 0, got " +
                                  std::to_string(o.ramp_up_end_rps));
    }
  }
  const double inf = std::numeric_limits<double>::infinity();
  NumpyRandomState rng(o.seed);
  std::vector<double> t(o.num_requests, 0.0);
  for (std::size_t i = 0; i < o.num_requests; ++i) {
    const double rate = arrival_rate(o, i);
    if (!(rate > 0.0)) {
      // vLLM asserts; linear ramp-up from 0 hits this for request 0.
      throw std::invalid_argument("arrival schedule: request rate of request " + std::to_string(i) + " is " +
                                  std::to_string(rate) + ", must be > 0 (ramp-up start 0?)");
    }
    if (rate == inf) {
      t[i] = 0.0;
    } else if (o.burstiness == inf) {
      t[i] = 1.0 / rate;
    } else {
      const double theta = 1.0 / (rate * o.burstiness);
      t[i] = rng.gamma(o.burstiness, theta);
    }
  }
  for (std::size_t i = 1; i < t.size(); ++i) t[i] += t[i - 1];
  if (o.ramp_up == RampUp::kNone && !t.empty() && t.back() != 0.0) {
    const double target_total_delay_s = static_cast<double>(o.num_requests) / o.request_rate;
    const double normalize_factor = target_total_delay_s / t.back();
    for (double& d : t) d *= normalize_factor;
  }
  return t;
}

}  // namespace servelab::schedule
