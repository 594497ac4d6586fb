// Arrival schedule of `vllm bench serve` (serve.py get_request) with numpy's legacy RandomState.
#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include "client/client.h"

namespace servelab::client {
namespace {

// numpy legacy RandomState: MT19937 seeded by init_genrand (std::mt19937 uses the same seeding) plus
// the cached-Gaussian state of the legacy distributions (numpy/random/src/legacy/legacy-distributions.c).
class LegacyRandomState {
 public:
  explicit LegacyRandomState(std::uint32_t seed) : mt_(seed) {}

  // numpy mt19937 next_double: 53-bit double from two 32-bit draws.
  double next_double() {
    const std::int32_t a = static_cast<std::int32_t>(mt_() >> 5);
    const std::int32_t b = static_cast<std::int32_t>(mt_() >> 6);
    return (a * 67108864.0 + b) / 9007199254740992.0;
  }

  double standard_exponential() { return -std::log(1.0 - next_double()); }

  // Polar Box–Muller (Marsaglia) with the second value cached, as legacy_gauss.
  double gauss() {
    if (has_gauss_) {
      has_gauss_ = false;
      const double g = gauss_;
      gauss_ = 0.0;
      return g;
    }
    double x1, x2, r2;
    do {
      x1 = 2.0 * next_double() - 1.0;
      x2 = 2.0 * next_double() - 1.0;
      r2 = x1 * x1 + x2 * x2;
    } while (r2 >= 1.0 || r2 == 0.0);
    const double f = std::sqrt(-2.0 * std::log(r2) / r2);
    gauss_ = f * x1;
    has_gauss_ = true;
    return f * x2;
  }

  // legacy_standard_gamma (Marsaglia–Tsang for shape > 1, Johnk-style rejection for shape < 1).
  double standard_gamma(double shape) {
    if (shape == 1.0) return standard_exponential();
    if (shape == 0.0) return 0.0;
    if (shape < 1.0) {
      for (;;) {
        const double u = next_double();
        const double v = standard_exponential();
        if (u <= 1.0 - shape) {
          const double x = std::pow(u, 1.0 / shape);
          if (x <= v) return x;
        } else {
          const double y = -std::log((1 - u) / shape);
          const double x = std::pow(1.0 - shape + shape * y, 1.0 / shape);
          if (x <= (v + y)) return x;
        }
      }
    }
    const double b = shape - 1.0 / 3.0;
    const double c = 1.0 / std::sqrt(9 * b);
    for (;;) {
      double x, v;
      do {
        x = gauss();
        v = 1.0 + c * x;
      } while (v <= 0.0);
      v = v * v * v;
      const double u = next_double();
      if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return b * v;
      if (std::log(u) < 0.5 * x * x + b * (1.0 - v + std::log(v))) return b * v;
    }
  }

  double gamma(double shape, double scale) { return scale * standard_gamma(shape); }

 private:
  std::mt19937 mt_;
  bool has_gauss_ = false;
  double gauss_ = 0.0;
};

}  // namespace

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
  LegacyRandomState rng(o.seed);
  std::vector<double> t(o.num_requests, 0.0);
  for (std::size_t i = 0; i < o.num_requests; ++i) {
    const double rate = arrival_rate(o, i);
    if (!(rate > 0.0)) {
      // vLLM asserts; linear ramp-up from 0 hits this for request 0.
      throw std::invalid_argument("arrival schedule: request rate of request " + std::to_string(i) +
                                  " is " + std::to_string(rate) + ", must be > 0 (ramp-up start 0?)");
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

}  // namespace servelab::client
