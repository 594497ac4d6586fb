// servelab/sim (private): the engine's API server as a processor-sharing queue. The OpenAI front ends of
// vLLM, SGLang and TensorRT-LLM are asyncio loops that interleave every request they hold (HTTP parsing,
// chat template, tokenisation, the hand-off to the engine): with n requests inside, each progresses at
// 1/n of the CPU, so a burst of N requests reaches the engine together after N x the per-request work
// (what the corpus shows: `vllm bench serve` bursts of 1000 requests see nearly equal TTFTs, mean ~ median,
// of 10-16 s). Work per request: Calibration::api_request_ms x physics.h api_work_share (a launch that
// renders chat requests with openai_harmony does the fitted Calibration::harmony_api_share of it). A FIFO
// server (ExecutionPolicy::api_fifo) instead runs each request's work to completion in arrival order: the
// k-th of a burst reaches the engine after k x the work, the first at once.
#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

namespace servelab::sim::detail {

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

  /// Completes every request whose work ends by `t`, appending (hand-off time, id) in time order.
  void advance(double t, std::vector<std::pair<double, int>>& done) {
    if (t < now_) return;
    if (fifo_) {
      // FIFO: jobs_ holds wall-clock finish times.
      while (!jobs_.empty() && jobs_.front().first <= t) {
        done.emplace_back(jobs_.front().first, jobs_.front().second);
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
      done.emplace_back(now_, jobs_.front().second);
      jobs_.pop_front();
    }
    now_ = t;
  }

  /// When the next request would be handed off if nothing else arrived (+inf when idle).
  double next_completion() const {
    if (jobs_.empty()) return std::numeric_limits<double>::infinity();
    if (fifo_) return jobs_.front().first;
    return now_ + (jobs_.front().first - v_) * static_cast<double>(jobs_.size());
  }
  int next_completion_id() const { return jobs_.empty() ? -1 : jobs_.front().second; }

  /// Drops a request that has not been handed off (client gone). Returns whether it was inside.
  bool remove(int id) {
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
  double work_;
  bool fifo_ = false;
  double now_ = 0;  ///< wall time the state refers to
  double v_ = 0;    ///< service each resident request has received since the start (virtual time)
  std::deque<std::pair<double, int>> jobs_;  ///< (virtual finish time, id), in finish order (FIFO: wall time)
  std::deque<double> arrivals_;              ///< FIFO only: arrival time of each job in jobs_
};

}  // namespace servelab::sim::detail
