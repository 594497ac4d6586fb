#include "servelab/sim/trace.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "sim/api_server.h"
#include "sim/sim_detail.h"

namespace servelab::sim {

void Trace::add_step(const TraceStep& s) {
  if (s.not_before_s != 0 || s.wake_request >= 0)
    steps.waits.push_back({static_cast<int>(steps.size()), s.not_before_s, s.wake_request});
  steps.kernel_s.push_back(static_cast<double>(s.gpu_s) - static_cast<double>(s.memory_s));
  steps.memory_s.push_back(s.memory_s);
  steps.comm_s.push_back(s.comm_s);
  steps.floor_s.push_back(s.floor_s);
  steps.launch_kernels.push_back(s.launch_kernels);
  steps.api_stream_chunks.push_back(s.api_stream_chunks);
  steps.running.push_back(s.running);
  steps.overlap.push_back(s.overlap ? 1 : 0);
}

namespace {

// Step i's seconds under `cal` (detail::step_seconds_of on the columns), inlined into replay's loop so that
// it overlaps the running sum. It holds its own copy of the calibration and raw column pointers: the loop's
// stores into the end-time buffer cannot alias them, so nothing is reloaded per step.
struct StepSeconds {
  StepSeconds(const TraceSteps& st, const Calibration& c)
      : cal(c),
        kernel(st.kernel_s.data()),
        memory(st.memory_s.data()),
        comm(st.comm_s.data()),
        floor(st.floor_s.data()),
        kernels(st.launch_kernels.data()),
        chunks(st.api_stream_chunks.data()),
        running(st.running.data()),
        overlap(st.overlap.data()) {}
  double operator()(std::size_t i) const {
    return detail::step_seconds_of(kernel[i], memory[i], comm[i], floor[i], kernels[i], running[i],
                                   overlap[i] != 0, chunks[i], cal);
  }
  Calibration cal;
  const double* kernel;
  const float *memory, *comm, *floor, *kernels, *chunks;
  const int* running;
  const unsigned char* overlap;
};

// Reused per thread: a fit replays thousands of traces per second.
struct ReplayBuffers {
  std::vector<double> end, send, hand_off;
  std::vector<std::pair<double, int>> done;
};

}  // namespace

HeadlineMetrics replay(const Trace& trace, const Calibration& cal) {
  const TraceSteps& st = trace.steps;
  const std::size_t nreq = trace.requests.size(), nstep = st.size();
  thread_local ReplayBuffers buf;
  const StepSeconds dt(st, cal);
  std::vector<double>& end = buf.end;
  std::vector<double>& send = buf.send;
  std::vector<double>& hand_off = buf.hand_off;
  end.resize(nstep);  // every step's end is written below
  send.assign(nreq, 0.0);
  hand_off.assign(nreq, -1.0);
  // The API server re-timed (processor sharing or FIFO, requests in index order, as the run sent them).
  detail::ApiServer api(cal.api_request_ms * 1e-3 * (trace.harmony_chat ? cal.harmony_api_share : 1.0),
                        trace.api_fifo);
  std::vector<std::pair<double, int>>& done = buf.done;
  done.clear();
  std::size_t next_req = 0;
  auto record = [&] {
    for (const auto& [t, id] : done) hand_off[id] = t;
    done.clear();
  };
  // The step at which request r's send time is known: at once, or after its slot's step ended.
  auto ready_step = [&](std::size_t r) {
    const int after = trace.requests[r].send_after_step;
    return after >= 0 ? static_cast<std::size_t>(after) + 1 : 0;
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
  double* end_of = end.data();
  std::size_t next_wait = 0;
  double t = 0;
  for (std::size_t i = 0; i < nstep;) {
    // Step i: a send or a wait happens before it (the general case).
    send_until(i);
    double not_before = 0;
    if (next_wait < st.waits.size() && static_cast<std::size_t>(st.waits[next_wait].step) == i) {
      const TraceSteps::Wait& w = st.waits[next_wait++];
      not_before = w.not_before_s;
      if (w.wake_request >= 0 && static_cast<std::size_t>(w.wake_request) < nreq) {
        while (hand_off[w.wake_request] < 0 && std::isfinite(api.next_completion())) {
          api.advance(api.next_completion(), done);
          record();
        }
        not_before = std::max(0.0, hand_off[w.wake_request]);
      }
    }
    t = std::max(t, not_before) + dt(i);
    end_of[i] = t;
    // The steps up to the next send or wait start when the previous one ends.
    std::size_t stop = nstep;
    if (next_wait < st.waits.size())
      stop = std::min(stop, static_cast<std::size_t>(st.waits[next_wait].step));
    if (next_req < nreq) stop = std::min(stop, std::max(i + 1, ready_step(next_req)));
    for (++i; i < stop; ++i) {
      t += dt(i);
      end_of[i] = t;
    }
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
