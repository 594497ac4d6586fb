#include "servelab/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/api_server.h"
#include "sim/sim_detail.h"

namespace servelab::sim {

HeadlineMetrics replay(const Trace& trace, const Calibration& cal) {
  const std::size_t nreq = trace.requests.size(), nstep = trace.steps.size();
  std::vector<double> end(nstep, 0.0), send(nreq, 0.0), hand_off(nreq, -1.0);
  // The API server re-timed (processor sharing or FIFO, requests in index order, as the run sent them).
  detail::ApiServer api(cal.api_request_ms * 1e-3 * (trace.harmony_chat ? cal.harmony_api_share : 1.0),
                        trace.api_fifo);
  std::vector<std::pair<double, int>> done;
  std::size_t next_req = 0;
  auto record = [&] {
    for (const auto& [t, id] : done) hand_off[id] = t;
    done.clear();
  };
  // Sends every request whose send time is known by step `i` (at arrival, or after its slot's step).
  auto send_until = [&](std::size_t i) {
    for (; next_req < nreq; ++next_req) {
      const TraceRequest& r = trace.requests[next_req];
      double s = r.arrival_s;
      if (r.send_after_step >= 0) {
        if (static_cast<std::size_t>(r.send_after_step) >= i) break;
        s = std::max(s, end[r.send_after_step]);
      }
      send[next_req] = s;
      api.arrive(static_cast<int>(next_req), s, done);
    }
    record();
  };
  double t = 0;
  for (std::size_t i = 0; i < nstep; ++i) {
    const TraceStep& s = trace.steps[i];
    send_until(i);
    double not_before = s.not_before_s;
    if (s.wake_request >= 0 && static_cast<std::size_t>(s.wake_request) < nreq) {
      while (hand_off[s.wake_request] < 0 && std::isfinite(api.next_completion())) {
        api.advance(api.next_completion(), done);
        record();
      }
      not_before = std::max(0.0, hand_off[s.wake_request]);
    }
    detail::StepCost c;
    c.gpu_s = s.gpu_s;
    c.memory_s = s.memory_s;
    c.comm_s = s.comm_s;
    c.floor_s = s.floor_s;
    c.launch_kernels = s.launch_kernels;
    c.running = s.running;
    c.overlap = s.overlap;
    c.api_stream_chunks = s.api_stream_chunks;
    t = std::max(t, not_before) + detail::step_seconds(c, cal);
    end[i] = t;
  }
  send_until(nstep);
  HeadlineMetrics h;
  double last = 0, ttft = 0, tpot = 0, in = 0, out = 0;
  int n_tpot = 0;
  for (std::size_t i = 0; i < nreq; ++i) {
    const auto& r = trace.requests[i];
    if (!r.success || r.first_step < 0 || r.last_step < 0) continue;
    const double first = end[r.first_step] + cal.first_token_ms * 1e-3;
    const double last_token = std::max(end[r.last_step], first);
    last = std::max(last, last_token);
    ttft += first - send[i];
    if (r.output_tokens > 1) {
      tpot += (last_token - first) / (r.output_tokens - 1);
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
