#include "sim/trace.h"

#include <algorithm>

#include "sim/sim_detail.h"

namespace servelab::sim {

HeadlineMetrics replay(const Trace& trace, const Calibration& cal) {
  std::vector<double> end(trace.steps.size());
  double t = 0;
  for (std::size_t i = 0; i < trace.steps.size(); ++i) {
    const TraceStep& s = trace.steps[i];
    detail::StepCost c;
    c.gpu_s = s.gpu_s;
    c.comm_s = s.comm_s;
    c.floor_s = s.floor_s;
    c.launch_s = s.launch_s;
    c.running = s.running;
    c.overlap = s.overlap;
    t = std::max(t, s.not_before_s) + detail::step_seconds(c, cal);
    end[i] = t;
  }
  HeadlineMetrics h;
  double last = 0, ttft = 0, tpot = 0, in = 0, out = 0;
  int n_tpot = 0;
  for (const auto& r : trace.requests) {
    if (!r.success || r.first_step < 0 || r.last_step < 0) continue;
    const double send = r.send_after_step >= 0 ? std::max(r.arrival_s, end[r.send_after_step]) : r.arrival_s;
    const double first = end[r.first_step], done = end[r.last_step];
    last = std::max(last, done);
    ttft += first - send;
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
