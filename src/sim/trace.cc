#include "sim/trace.h"

#include <algorithm>
#include <utility>

#include "sim/sim_detail.h"

namespace servelab::sim {

HeadlineMetrics replay(const Trace& trace, const Calibration& cal) {
  const std::size_t nreq = trace.requests.size(), nstep = trace.steps.size();
  std::vector<double> end(nstep), send(nreq, 0.0), hand_off(nreq, 0.0);
  // Steps, with the API server's hand-offs re-timed (requests reach it in index order).
  double api_free = 0, t = 0;
  std::vector<std::pair<double, double>> busy;
  std::size_t next_req = 0;
  auto stream_of = [&](double x) {
    auto it = std::upper_bound(busy.begin(), busy.end(), x, [](double v, const auto& b) { return v < b.first; });
    if (it == busy.begin()) return x;
    --it;
    return x < it->second ? it->second : x;
  };
  auto hand_off_until = [&](std::size_t upto) {
    for (; next_req < upto && next_req < nreq; ++next_req) {
      const TraceRequest& r = trace.requests[next_req];
      double s = r.arrival_s;
      if (r.send_after_step >= 0 && static_cast<std::size_t>(r.send_after_step) < nstep)
        s = std::max(s, stream_of(end[r.send_after_step]));
      send[next_req] = s;
      const double start = std::max(api_free, s);
      api_free = start + cal.api_request_ms * 1e-3;
      if (!busy.empty() && start <= busy.back().second) busy.back().second = api_free;
      else busy.emplace_back(start, api_free);
      hand_off[next_req] = api_free;
    }
  };
  for (std::size_t i = 0; i < nstep; ++i) {
    const TraceStep& s = trace.steps[i];
    // Requests sent before this step's end can be handed off (their send time is known by then).
    while (next_req < nreq && (trace.requests[next_req].send_after_step < 0 ||
                               trace.requests[next_req].send_after_step < static_cast<int>(i)))
      hand_off_until(next_req + 1);
    double not_before = s.not_before_s;
    if (s.wake_request >= 0 && static_cast<std::size_t>(s.wake_request) < nreq) {
      hand_off_until(s.wake_request + 1);
      not_before = hand_off[s.wake_request];
    }
    detail::StepCost c;
    c.gpu_s = s.gpu_s;
    c.comm_s = s.comm_s;
    c.floor_s = s.floor_s;
    c.launch_s = s.launch_s;
    c.running = s.running;
    c.overlap = s.overlap;
    t = std::max(t, not_before) + detail::step_seconds(c, cal);
    end[i] = t;
  }
  hand_off_until(nreq);
  const auto& stream = stream_of;
  HeadlineMetrics h;
  double last = 0, ttft = 0, tpot = 0, in = 0, out = 0;
  int n_tpot = 0;
  for (std::size_t i = 0; i < nreq; ++i) {
    const auto& r = trace.requests[i];
    if (!r.success || r.first_step < 0 || r.last_step < 0) continue;
    const double first = stream(end[r.first_step]) + cal.first_token_ms * 1e-3;
    const double done = std::max(stream(end[r.last_step]), first);
    last = std::max(last, done);
    ttft += first - send[i];
    if (r.output_tokens > 1) {
      tpot += (done - first) / (r.output_tokens - 1);
      ++n_tpot;
    }
    in += r.prompt_tokens;
    out += r.output_tokens;
    ++h.completed;
  }
  if (h.completed == 0 || last <= 0) return h;
  h.duration_s = last;
  h.total_tok_s = (in + out) / last;
  h.output_tok_s = out / last;
  h.mean_ttft_ms = 1e3 * ttft / h.completed;
  h.mean_tpot_ms = n_tpot ? 1e3 * tpot / n_tpot : 0;
  return h;
}

}  // namespace servelab::sim
