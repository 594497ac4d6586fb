// The engine twin's one event loop (event_loop.h): the offline run and the online twin both step the
// Simulator through it.
#include "sim/event_loop.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace servelab::sim::detail {

EventLoop::EventLoop(Simulator& sim, LoopClient client)
    : sim_(sim), client_(std::move(client)), overlapped_(sim.overlapped_scheduler()) {}

void EventLoop::run_until(double horizon_s) {
  for (;;) {
    if (ticking_) {
      if (tick_end_s_ > horizon_s) return;
      end_tick();
      continue;
    }
    if (!waiting_) {
      // Form the next step at t_ from what the client has sent and the API server has handed off by now.
      sim_.now_s_ = t_;
      client_.send_ready(t_, last_step_);
      sim_.deliver(t_, cut_);
      cut_ = std::numeric_limits<double>::infinity();
      sim_.plan_into(pipe_, t_);
      if (!pipe_.empty()) {
        start_tick();
        continue;
      }
      waiting_ = true;
    }
    // Idle: wait for the API server's next hand-off or the client's next send, whichever is first.
    const double send_at = client_.next_send();
    const double hand_off = sim_.next_delivery();
    if (std::isfinite(send_at) || std::isfinite(hand_off)) {
      const double to = std::max(t_, std::min(send_at, hand_off));
      if (to > horizon_s) return;
      sim_.view_.idle_time_s += to - t_;
      if (hand_off <= send_at) wake_ = sim_.next_delivery_id();
      t_ = to;
      not_before_ = t_;
      waiting_ = false;
      continue;
    }
    if (sim_.in_flight() == 0) return;  // drained
    if (sim_.drop_unschedulable() == 0)
      throw std::logic_error("twin scheduler stalled with requests in flight (bug)");
    waiting_ = false;
  }
}

void EventLoop::start_tick() {
  // One tick: every micro-batch in flight advances one stage; the slowest sets the tick.
  const Batch* slow = &pipe_.front();
  for (const auto& b : pipe_)
    if (b.stage_s > slow->stage_s) slow = &b;
  // An overlapped scheduler (vLLM async scheduling, SGLang's overlap loop, TensorRT-LLM's overlap
  // scheduler) forms step k+1 while step k runs: a request handed off after step k began joins step k+2
  // (one step more TTFT under load; the "TTFT rises slightly" of vLLM PR #19970, gpu-kernel-facts.md
  // §2.7). An idle engine schedules it at once (Simulator::plan_into). `cut_`: when the next step was formed.
  if (overlapped_) cut_ = t_;
  tick_end_s_ = t_ + slow->stage_s;
  if (sim_.trace_) sim_.record_step(*slow, not_before_, wake_);
  wake_ = -1;
  not_before_ = 0;
  ticking_ = true;
}

void EventLoop::end_tick() {
  t_ = tick_end_s_;
  ticking_ = false;
  client_.send_ready(t_, last_step_);  // sends during the tick, each at its own time
  ++last_step_;
  sim_.count_tick();
  for (auto& b : pipe_) --b.stages_left;
  while (!pipe_.empty() && pipe_.front().stages_left <= 0) {
    sim_.finish_batch(pipe_.front(), t_);
    sim_.recycle(std::move(pipe_.front()));
    pipe_.pop_front();
  }
  std::vector<int> cancels;
  cancels.swap(deferred_cancels_);
  for (int id : cancels) sim_.cancel(id);
}

double EventLoop::next_event_s() const {
  if (ticking_) return tick_end_s_;
  if (!waiting_) return t_;
  const double next = std::min(client_.next_send(), sim_.next_delivery());
  return std::isfinite(next) ? std::max(t_, next) : next;
}

void EventLoop::cancel(int id) {
  if (ticking_)
    deferred_cancels_.push_back(id);
  else
    sim_.cancel(id);
}

}  // namespace servelab::sim::detail
