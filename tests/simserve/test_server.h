// Test support for `sim serve`: a deterministic timeline standing in for the twin (TTFT = ttft_s, then one
// token every itl_s per request, independent requests) and a server running on a thread.
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "servelab/common/paths.h"
#include "servelab/simserve/simserve.h"

namespace servelab::simserve::testing {

// Token k of a request that arrived at `start` leaves at start + ttft_s + k * itl_s. Called only from the
// server's loop thread, except the counters (atomics).
struct FixedTimeline {
  double ttft_s = 0.02, itl_s = 0.005;
  struct Req {
    double start;
    int n, next = 0;
  };
  std::map<std::uint64_t, Req> reqs;
  std::atomic<int> submitted_prompt_tokens{0};
  std::atomic<int> cancels{0};
  std::atomic<int> submits{0};
  std::function<void(int prompt_tokens)> on_submit;  ///< may throw (a failing twin)
  /// The engine's verdict (Timeline::admit); unset: every request served as asked.
  std::function<Admission(int prompt_tokens, int output_len)> admit;

  Timeline make() {
    Timeline t = make_base();
    t.admit = [this](int p, int n) { return admit ? admit(p, n) : Admission{std::nullopt, n}; };
    return t;
  }
  Timeline make_base() {
    return {[this](std::uint64_t id, int p, int n, double now) {
              if (on_submit) on_submit(p);
              submitted_prompt_tokens = p;
              ++submits;
              reqs[id] = {now, n};
            },
            [this](std::uint64_t id) {
              if (reqs.erase(id) > 0) ++cancels;
            },
            [this](double t, const std::function<void(std::uint64_t, int, double)>& emit) {
              for (;;) {
                std::uint64_t best = 0;
                double when = std::numeric_limits<double>::infinity();
                for (auto& [id, r] : reqs) {
                  const double w = r.start + ttft_s + r.next * itl_s;
                  if (w < when) when = w, best = id;
                }
                if (when > t) return;
                auto& r = reqs[best];
                const int k = r.next++;
                if (r.next >= r.n) reqs.erase(best);
                emit(best, k, when);
              }
            },
            [this] {
              double when = std::numeric_limits<double>::infinity();
              for (auto& [id, r] : reqs) when = std::min(when, r.start + ttft_s + r.next * itl_s);
              return when;
            }};
  }
};

inline tokenizer::Tokenizer gpt2() {
  return tokenizer::Tokenizer::from_file(common::data_dir() / "gpt2-tokenizer.json");
}

// A server on port 0 served by a thread until destruction.
struct Running {
  FixedTimeline tl;
  std::unique_ptr<Server> server;
  std::thread thread;
  unsigned short port = 0;
  explicit Running(ServerOptions o = {}) {
    if (o.served_models.empty()) o.served_models = {"twin"};
    o.port = 0;
    server = std::make_unique<Server>(o, tl.make(), gpt2());
    port = server->start();
    thread = std::thread([this] { server->run(); });
  }
  ~Running() {
    server->stop();
    thread.join();
  }
};

}  // namespace servelab::simserve::testing
