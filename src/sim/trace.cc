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
  steps.repeat.push_back(1.0f);
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
        overlap(st.overlap.data()),
        repeat(st.repeat.data()) {}
  double operator()(std::size_t i) const {
    return detail::step_seconds_of(kernel[i], memory[i], comm[i], floor[i], kernels[i], running[i],
                                   overlap[i] != 0, chunks[i], cal) *
           repeat[i];
  }
  Calibration cal;
  const double* kernel;
  const float *memory, *comm, *floor, *kernels, *chunks;
  const int* running;
  const unsigned char* overlap;
  const float* repeat;
};

// Reused per thread: a fit replays thousands of traces per second.
struct ReplayBuffers {
  std::vector<double> end, send, hand_off;
  std::vector<std::pair<double, int>> done;
};

// The running extent of one column over a run of steps (compress_trace).
struct Extent {
  double lo = 0, hi = 0, sum = 0;  ///< sum: weighted by the steps' repeat counts
  void start(double v, double w) { lo = hi = v, sum = v * w; }
  void add(double v, double w) {
    lo = std::min(lo, v), hi = std::max(hi, v);
    sum += v * w;
  }
  /// The spread with `v` added.
  double spread_with(double v) const { return std::max(hi, v) - std::min(lo, v); }
  double lo_with(double v) const { return std::min(lo, v); }
};

}  // namespace

Trace compress_trace(const Trace& trace, double tolerance) {
  const TraceSteps& st = trace.steps;
  const std::size_t n = st.size();
  // A run may end at a step something refers to, and start at a step a wait precedes, never hold either
  // inside.
  std::vector<char> ends(n, 0), starts(n, 0);
  for (const auto& r : trace.requests)
    for (const int s : {r.first_step, r.last_step, r.send_after_step})
      if (s >= 0 && static_cast<std::size_t>(s) < n) ends[s] = 1;
  for (const auto& w : st.waits)
    if (w.step >= 0 && static_cast<std::size_t>(w.step) < n) starts[w.step] = 1;
  auto column = [&](std::size_t i, int c) -> double {
    switch (c) {
      case 0:
        return st.kernel_s[i];
      case 1:
        return st.memory_s[i];
      case 2:
        return st.comm_s[i];
      case 3:
        return st.floor_s[i];
      case 4:
        return st.launch_kernels[i];
      default:
        return st.api_stream_chunks[i];
    }
  };
  constexpr int kTimeColumns = 4, kColumns = 6;  // seconds: kernel, memory, comm, floor; then counts
  Trace out;
  out.harmony_chat = trace.harmony_chat;
  out.api_fifo = trace.api_fifo;
  std::vector<int> entry_of(n);
  std::size_t next_wait = 0;
  auto weight = [&](std::size_t s) { return static_cast<double>(st.repeat[s]); };
  for (std::size_t i = 0; i < n;) {
    Extent ext[kColumns];
    for (int c = 0; c < kColumns; ++c) ext[c].start(column(i, c), weight(i));
    double k = weight(i);
    std::size_t j = i + 1;
    for (; j < n && !ends[j - 1] && !starts[j] && st.running[j] == st.running[i] &&
           st.overlap[j] == st.overlap[i];
         ++j) {
      // The time columns' spreads together within `tolerance` of the run's smallest seconds; the counts'
      // each within `tolerance` of their smallest.
      double spread = 0, seconds = 0;
      for (int c = 0; c < kTimeColumns; ++c) {
        spread += ext[c].spread_with(column(j, c));
        seconds += ext[c].lo_with(column(j, c));
      }
      bool alike = spread <= tolerance * seconds;
      for (int c = kTimeColumns; c < kColumns && alike; ++c)
        alike = ext[c].spread_with(column(j, c)) <= tolerance * std::fabs(ext[c].lo_with(column(j, c)));
      if (!alike) break;
      for (int c = 0; c < kColumns; ++c) ext[c].add(column(j, c), weight(j));
      k += weight(j);
    }
    const int entry = static_cast<int>(out.steps.size());
    for (std::size_t s = i; s < j; ++s) entry_of[s] = entry;
    for (; next_wait < st.waits.size() && static_cast<std::size_t>(st.waits[next_wait].step) < j;
         ++next_wait) {
      TraceSteps::Wait w = st.waits[next_wait];
      w.step = entry;
      out.steps.waits.push_back(w);
    }
    TraceSteps& o = out.steps;
    o.kernel_s.push_back(ext[0].sum / k);
    o.memory_s.push_back(static_cast<float>(ext[1].sum / k));
    o.comm_s.push_back(static_cast<float>(ext[2].sum / k));
    o.floor_s.push_back(static_cast<float>(ext[3].sum / k));
    o.launch_kernels.push_back(static_cast<float>(ext[4].sum / k));
    o.api_stream_chunks.push_back(static_cast<float>(ext[5].sum / k));
    o.running.push_back(st.running[i]);
    o.overlap.push_back(st.overlap[i]);
    o.repeat.push_back(static_cast<float>(k));
    i = j;
  }
  out.requests = trace.requests;
  auto remap = [&](int s) { return s >= 0 && static_cast<std::size_t>(s) < n ? entry_of[s] : s; };
  for (auto& r : out.requests) {
    r.first_step = remap(r.first_step);
    r.last_step = remap(r.last_step);
    r.send_after_step = remap(r.send_after_step);
  }
  return out;
}

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
  const double first_token_s = cal.first_token_ms * 1e-3;
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
        s = std::max(s, end[r.send_after_step] + (r.send_after_token ? first_token_s : 0.0));
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
    const double last_token = std::max(end[r.last_step] + cal.first_token_ms * 1e-3, first);
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
