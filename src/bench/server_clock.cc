#include "bench/server_clock.h"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/http_get.h"

namespace servelab::bench::detail {

ServerClock server_clock_from_models(const std::string& body) {
  ServerClock clock;
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty())
    return clock;
  const auto& first = j["data"][0];
  if (!first.is_object() || !first.contains("servelab") || !first["servelab"].is_object()) return clock;
  const auto& s = first["servelab"];
  if (s.contains("engine_twin") && s["engine_twin"].is_boolean())
    clock.engine_twin = s["engine_twin"].get<bool>();
  if (s.contains("time_scale") && s["time_scale"].is_number()) {
    const double k = s["time_scale"].get<double>();
    if (k > 0 && std::isfinite(k)) clock.time_scale = k;
  }
  return clock;
}

ServerClock probe_server_clock(const std::string& base_url,
                               const std::vector<std::pair<std::string, std::string>>& headers,
                               bool insecure) {
  try {
    const HttpGetResult res = http_get(base_url + "/v1/models", headers, insecure, 5.0);
    if (res.status != 200) return ServerClock{};
    return server_clock_from_models(res.body);
  } catch (const std::exception&) {
    return ServerClock{};
  }
}

std::optional<ScheduleWindow> read_schedule_window(
    const std::string& base_url, const std::vector<std::pair<std::string, std::string>>& headers,
    bool insecure) {
  try {
    const HttpGetResult res = http_get(base_url + "/servelab/schedule", headers, insecure, 5.0);
    if (res.status != 200) return std::nullopt;
    const auto j = nlohmann::json::parse(res.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("window") || !j["window"].is_object())
      return std::nullopt;
    const auto& w = j["window"];
    ScheduleWindow out;
    out.tokens = w.value("tokens", std::uint64_t{0});
    out.lag_sum_ms = w.value("lag_sum_ms", 0.0);
    out.lag_max_ms = w.value("lag_max_ms", 0.0);
    out.lag_last_ms = w.value("lag_last_ms", 0.0);
    if (j.contains("admission_window") && j["admission_window"].is_object())
      out.admission_wait_max_ms = j["admission_window"].value("wait_max_ms", 0.0);
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

void to_engine_time(std::span<metrics::RequestOutput> outputs, double k) {
  if (k == 1.0) return;
  for (auto& o : outputs) {
    o.intended_send_time_s *= k;
    o.dispatch_time_s *= k;
    o.send_time_s *= k;
    if (o.wire_time_s >= 0) o.wire_time_s *= k;
    o.ttft_s *= k;
    if (o.ttfct_s >= 0) o.ttfct_s *= k;
    for (auto& x : o.itl_s) x *= k;
    o.latency_s *= k;
  }
}

struct StallMonitor::State {
  std::atomic<bool> done{false};
  double sum_ms = 0;
  long n = 0;
  std::thread thread;
};

StallMonitor::StallMonitor() : state_(std::make_unique<State>()) {
  State* s = state_.get();
  s->thread = std::thread([s] {
    using Clock = std::chrono::steady_clock;
    while (!s->done.load(std::memory_order_relaxed)) {
      const auto t0 = Clock::now();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      const double over_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count() - 1.0;
      s->sum_ms += std::max(0.0, over_ms);
      ++s->n;
    }
  });
}

StallMonitor::~StallMonitor() {
  stop();
}

double StallMonitor::stop() {
  if (state_->thread.joinable()) {
    state_->done = true;
    state_->thread.join();
  }
  return state_->n ? state_->sum_ms / static_cast<double>(state_->n) : 0.0;
}

std::string schedule_invalid_reason(const ScheduleWindow& w, double duration_s,
                                    const metrics::BenchmarkMetrics& m, double time_scale,
                                    double client_stall_ms) {
  if (w.tokens == 0) return "";  // nothing emitted in the window: no timing to judge
  const double duration_ms = duration_s * 1e3;
  std::string why;
  if (w.lag_last_ms > 0.01 * duration_ms)
    why = fmt::format("the last token left {:.1f} ms late, more than 1% of the {:.0f} ms run", w.lag_last_ms,
                      duration_ms);

  else if (w.admission_wait_max_ms > 0.10 * duration_ms)
    why = fmt::format(
        "a request may have waited {:.0f} ms unread while the server was busy, more than 10% of the "
        "{:.0f} ms run",
        w.admission_wait_max_ms, duration_ms);
  else if (m.ttft.count > 0 && w.mean_ms() > 0.05 * m.ttft.mean_ms)
    why = fmt::format("tokens left {:.2f} ms late on average, more than 5% of the mean TTFT ({:.1f} ms)",
                      w.mean_ms(), m.ttft.mean_ms);
  else if (m.ttft.count > 0 && client_stall_ms * time_scale > 0.05 * m.ttft.mean_ms)
    why = fmt::format(
        "the benchmark client itself woke {:.2f} ms late on average ({:.1f} ms scaled), more than 5% "
        "of the mean TTFT ({:.1f} ms)",
        client_stall_ms, client_stall_ms * time_scale, m.ttft.mean_ms);
  if (why.empty()) return "";
  return fmt::format(
      "the timing cannot be trusted at time scale {:g}: {} (engine time); the host is too busy for "
      "this scale: rerun with a smaller time scale or on an idle machine",
      time_scale, why);
}

}  // namespace servelab::bench::detail
