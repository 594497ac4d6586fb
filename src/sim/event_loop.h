// servelab/sim (private): the one event loop of the engine twin (issue 29 §2, "one simulator, one
// answer"). It owns the engine's tick logic over a Simulator: idle waits for the client's next send or the
// API server's next hand-off, the overlapped scheduler's cut, pipeline micro-batches, finish_batch,
// drop_unschedulable and the trace. The offline run (`sim run`: Simulator::run) drives it to the end with
// its benchmark client; the online twin (`sim serve`: OnlineTwin) drives it with advance_to(t) and the
// requests its HTTP clients submit. Both therefore compute the same steps at the same virtual times.
#pragma once

#include <deque>
#include <functional>
#include <limits>
#include <vector>

#include "sim/simulator.h"

namespace servelab::sim::detail {

/// The client side of the loop: who sends requests into the engine (Simulator::send) and when.
struct LoopClient {
  /// Sends every request due by `t_s` (virtual s) at its own send time; `last_step` is the trace index of
  /// the engine step that ended last (-1 before the first).
  std::function<void(double t_s, int last_step)> send_ready;
  /// When the client's next send is due as far as it is known now (virtual s; +inf when none).
  std::function<double()> next_send;
};

/// The engine's event loop over one Simulator in virtual time (s from t = 0). A step (pipeline tick) is
/// formed only at its start, from what the client sent by then: run_until(h) never forms a step that
/// starts after h, so an online caller may submit requests sent after h before the next call.
/// Thread-safety: not thread-safe; one thread drives it (and its Simulator).
class EventLoop {
 public:
  EventLoop(Simulator& sim, LoopClient client);

  /// Applies every event at or before `horizon_s`: steps ending by then (their tokens leave through the
  /// Simulator), idle waits that end by then, and the steps that start by then (formed now; they end later).
  /// Returns when the next event is after the horizon, or when the engine is idle with nothing pending.
  /// Throws std::logic_error if requests are in flight but nothing can ever run (a bug).
  void run_until(double horizon_s);
  /// When the next event happens (virtual s): the end of the step in flight, else the next send or
  /// hand-off the engine waits for; +inf when idle with nothing pending.
  double next_event_s() const;
  /// Whether a step is in flight.
  bool busy() const { return ticking_; }
  /// The engine's clock (virtual s): the start of the step in flight, else the last event applied.
  double clock_s() const { return t_; }
  /// Drops request `id` (its client went away): at once when idle, else when the step in flight ends
  /// (it may be in one of its micro-batches).
  void cancel(int id);

 private:
  void start_tick();
  void end_tick();

  Simulator& sim_;
  LoopClient client_;
  const bool overlapped_;
  double t_ = 0;           ///< engine clock (see clock_s)
  double tick_end_s_ = 0;  ///< end of the step in flight (valid while busy)
  double not_before_ = 0;  ///< trace: the step was held until this hand-off or send (0: not held)
  int wake_ = -1;          ///< trace: the request whose hand-off ended the idle wait
  int last_step_ = -1;     ///< trace index of the step that ended last
  bool ticking_ = false;   ///< a step is in flight (it ends at tick_end_s_)
  bool waiting_ = false;   ///< idle at t_: the engine already planned there and found nothing
  /// Overlapped scheduler: hand-offs after the last step's start wait one more step (Simulator::deliver).
  double cut_ = std::numeric_limits<double>::infinity();
  std::deque<Batch> pipe_;  ///< micro-batches in flight
  std::vector<int> deferred_cancels_;
};

}  // namespace servelab::sim::detail
