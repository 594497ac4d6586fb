// servelab/schedule: when vLLM's benchmark sends each request — the arrival process of `vllm bench serve`
// (serve.py get_request: Poisson/gamma gaps, ramp-up), drawn with numpy's legacy RandomState (rng.h).
// No I/O and no dependency but the standard library: the load generator (client), the engine twin (sim)
// and bench share it. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace servelab::schedule {

/// Ramp-up of the request rate across requests (vLLM --ramp-up-strategy).
enum class RampUp : std::uint8_t { kNone, kLinear, kExponential };

/// Parameters of vLLM's arrival process (serve.py `get_request`, §3.3).
struct ArrivalOptions {
  std::size_t num_requests = 0;
  double request_rate = 1.0 / 0.0;  ///< req/s; +inf → every send at t = 0
  double burstiness = 1.0;          ///< gamma shape (1 = Poisson); +inf → constant gaps 1/rate
  std::uint32_t seed = 0;           ///< numpy `np.random.seed(seed)` (legacy MT19937)
  RampUp ramp_up = RampUp::kNone;
  int ramp_up_start_rps = 0;  ///< integer req/s, as vLLM's argparse type=int
  int ramp_up_end_rps = 0;
};

/// The request rate λ_i (req/s) at which request `i` of `options.num_requests` is scheduled (vLLM serve.py
/// `_get_current_request_rate`): `request_rate` without ramp-up; with it progress = i / max(N-1, 1), linear
/// start + (end-start)·progress, exponential start·(end/start)^progress. Pure; no validation.
double arrival_rate(const ArrivalOptions& options, std::size_t i);

/// Intended send times, seconds from the benchmark start, one per request, non-decreasing.
/// Exactly vLLM 0.13's precomputed schedule: per-request rate λ_i (ramp-up: progress = i/max(N-1,1),
/// linear s+(e-s)·p, exponential s·(e/s)^p), gap 0 (λ=inf), 1/λ (burstiness=inf) or
/// numpy legacy `RandomState.gamma(shape=b, scale=1/(λ·b))` (MT19937 init_genrand(seed), legacy
/// Marsaglia–Tsang with polar Gaussian for b>1, Johnk-style branch for b<1, -log(1-U) for b=1),
/// cumulative sum, and without ramp-up rescaled so the last send is at N/rate. Matches numpy to
/// ~1 ulp (tested against numpy 1.24 to 1e-12).
/// Throws std::invalid_argument: burstiness ≤ 0, rate ≤ 0, ramp-up with start > end, exponential with
/// start ≤ 0, ramp-up with end ≤ 0.
std::vector<double> arrival_schedule(const ArrivalOptions& options);

}  // namespace servelab::schedule
