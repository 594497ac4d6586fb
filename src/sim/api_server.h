// servelab/sim (private): the engine's API server as a processor-sharing queue. The OpenAI front ends of
// vLLM, SGLang and TensorRT-LLM are asyncio loops that interleave every request they hold (HTTP parsing,
// chat template, tokenisation, the hand-off to the engine): with n requests inside, each progresses at
// 1/n of the CPU, so a burst of N requests reaches the engine together after N x the per-request work
// (what the corpus shows: `vllm bench serve` bursts of 1000 requests see nearly equal TTFTs, mean ~ median,
// of 10-16 s). Work per request: Calibration::api_request_ms x physics.h api_work_share (a launch that
// renders chat requests with openai_harmony does the fitted Calibration::harmony_api_share of it). A FIFO
// server (ExecutionPolicy::api_fifo) instead runs each request's work to completion in arrival order: the
// k-th of a burst reaches the engine after k x the work, the first at once.
// Either way the hand-offs themselves leave one at a time (kApiHandOffS apart): one event loop sends one
// message at a time, so requests whose work ends at the same instant do not reach the engine together, and
// an idle engine starts its next step with the first of them, as a real one does.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

namespace servelab::sim::detail {

/// Seconds one hand-off of a request from the API server's event loop to the engine takes (encoding the
/// request, one ZeroMQ / IPC message) [estimate: tens of microseconds for a ~1k-token request]. Hand-offs
/// leave one at a time, at least this far apart. It orders hand-offs that would be simultaneous; the exact
/// value matters little (Qwen3-8B, 1xH100, fixed 1024 / 128 lengths: the same figures at 20 and 200 us
/// under --max-concurrency 4 and 16; at 64, where the interleaving of 64 hand-offs decides the waves, mean
/// TTFT 1.54 vs 1.32 s).
inline constexpr double kApiHandOffS = 50e-6;

class ApiServer {
 public:
  /// `work_s`: CPU seconds of one request; `fifo`: serve one request at a time in arrival order instead of
  /// sharing the CPU between all of them.
  explicit ApiServer(double work_s, bool fifo = false) : work_(work_s), fifo_(fifo) {}

  /// Request `id` arrives at `t` (non-decreasing across calls); requests finishing before it are
  /// appended to `done` as (hand-off time, id).
  void arrive(int id, double t, std::vector<std::pair<double, int>>& done) {
    advance(t, done);
    if (fifo_) {
      const double start = std::max(t, jobs_.empty() ? now_ : jobs_.back().first);
      jobs_.emplace_back(start + work_, id);
      arrivals_.push_back(t);
      return;
    }
    jobs_.emplace_back(v_ + work_, id);
  }

  /// Completes every request whose work ends by `t` and hands it off, appending (hand-off time, id) in time
  /// order: hand-offs leave in the order the work ends, kApiHandOffS apart at least.
  void advance(double t, std::vector<std::pair<double, int>>& done) {
    if (t < now_) return;
    work_until(t);
    while (!ready_.empty() && std::max(ready_.front().first, last_hand_off_ + kApiHandOffS) <= t) {
      last_hand_off_ = std::max(ready_.front().first, last_hand_off_ + kApiHandOffS);
      done.emplace_back(last_hand_off_, ready_.front().second);
      ready_.pop_front();
    }
  }

  /// When the next request would be handed off if nothing else arrived (+inf when idle).
  double next_completion() const {
    const double worked = !ready_.empty() ? ready_.front().first : next_work_end();
    return std::isfinite(worked) ? std::max(worked, last_hand_off_ + kApiHandOffS) : worked;
  }
  int next_completion_id() const {
    if (!ready_.empty()) return ready_.front().second;
    return jobs_.empty() ? -1 : jobs_.front().second;
  }

  /// Drops a request that has not been handed off (client gone). Returns whether it was inside.
  bool remove(int id) {
    for (std::size_t i = 0; i < ready_.size(); ++i)
      if (ready_[i].second == id) {
        ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
        return true;
      }
    for (std::size_t i = 0; i < jobs_.size(); ++i) {
      if (jobs_[i].second != id) continue;
      jobs_.erase(jobs_.begin() + static_cast<std::ptrdiff_t>(i));
      if (fifo_) {
        arrivals_.erase(arrivals_.begin() + static_cast<std::ptrdiff_t>(i));
        // The requests behind it start earlier; the one in service (i > 0 keeps the front) is unchanged.
        double prev = i == 0 ? now_ : jobs_[i - 1].first;
        for (std::size_t j = i; j < jobs_.size(); ++j)
          prev = jobs_[j].first = std::max(arrivals_[j], prev) + work_;
      }
      return true;
    }
    return false;
  }

 private:
  /// Runs the requests' work to `t`: those whose work ends by then move to ready_ (work end, id).
  void work_until(double t) {
    if (fifo_) {
      // FIFO: jobs_ holds wall-clock finish times.
      while (!jobs_.empty() && jobs_.front().first <= t) {
        ready_.emplace_back(jobs_.front().first, jobs_.front().second);
        jobs_.pop_front();
        arrivals_.pop_front();
      }
      now_ = t;
      return;
    }
    while (!jobs_.empty()) {
      const double n = static_cast<double>(jobs_.size());
      const double finish = now_ + (jobs_.front().first - v_) * n;
      if (finish > t) {
        v_ += (t - now_) / n;
        now_ = t;
        return;
      }
      now_ = finish;
      v_ = jobs_.front().first;
      ready_.emplace_back(now_, jobs_.front().second);
      jobs_.pop_front();
    }
    now_ = t;
  }

  /// When the work of the first request in jobs_ ends if nothing else arrived (+inf when none).
  double next_work_end() const {
    if (jobs_.empty()) return std::numeric_limits<double>::infinity();
    if (fifo_) return jobs_.front().first;
    return now_ + (jobs_.front().first - v_) * static_cast<double>(jobs_.size());
  }

  double work_;
  bool fifo_ = false;
  double now_ = 0;  ///< wall time the state refers to
  double v_ = 0;    ///< service each resident request has received since the start (virtual time)
  std::deque<std::pair<double, int>> jobs_;  ///< (virtual finish time, id), in finish order (FIFO: wall time)
  std::deque<double> arrivals_;              ///< FIFO only: arrival time of each job in jobs_
  std::deque<std::pair<double, int>> ready_;  ///< (work end, id): worked, waiting for the hand-off
  double last_hand_off_ = -kApiHandOffS;      ///< when the last hand-off left
};

}  // namespace servelab::sim::detail
