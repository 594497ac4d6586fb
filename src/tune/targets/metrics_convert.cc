#include "tune/targets/metrics_convert.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>
#include <vector>

namespace servelab::tune {

namespace {
void put_latency(std::map<std::string, double>& m, const std::string& name,
                 const metrics::LatencySummary& s) {
  m["Mean " + name + " (ms)"] = s.mean_ms;
  m["Median " + name + " (ms)"] = s.median_ms;
  for (const auto& p : s.percentiles_ms) m[fmt::format("P{} {} (ms)", p.p, name)] = p.value_ms;
}
/// The schedule's span, the mean E2EL of its first half of requests (by intended send time, successes) and
/// the requests still in flight when the last one was due: what the SLO search's saturation test reads
/// (SloProbe::saturated).
void put_arrival_metrics(std::map<std::string, double>& m, std::span<const metrics::RequestOutput> outputs) {
  std::vector<std::pair<double, double>> by_send;       // intended send, E2EL (s) of successes
  std::vector<std::pair<double, double>> ttft_by_send;  // intended send, TTFT (s) of successes
  double first = outputs.front().intended_send_time_s, last = first;
  for (const auto& o : outputs) {
    first = std::min(first, o.intended_send_time_s), last = std::max(last, o.intended_send_time_s);
    if (o.success) by_send.emplace_back(o.intended_send_time_s, o.latency_s);
    if (o.success) ttft_by_send.emplace_back(o.intended_send_time_s, o.ttft_s);
  }
  if (ttft_by_send.size() >= 8) {  // median TTFT of the last quarter of arrivals minus the first quarter's
    std::sort(ttft_by_send.begin(), ttft_by_send.end());
    const size_t q = ttft_by_send.size() / 4;
    auto median = [&](size_t from) {
      std::vector<double> v;
      for (size_t i = from; i < from + q; ++i) v.push_back(ttft_by_send[i].second);
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    };
    m[kTtftDriftMetric] = median(ttft_by_send.size() - q) - median(0);
  }
  m[kArrivalSpanMetric] = last - first;
  double backlog = 0;
  for (const auto& o : outputs)
    if (o.success && o.send_time_s + o.latency_s > last) ++backlog;
  m[kBacklogAtLastArrivalMetric] = backlog;
  if (by_send.empty()) return;
  std::sort(by_send.begin(), by_send.end());
  const size_t k = std::max<size_t>(1, by_send.size() / 2);
  double sum = 0;
  for (size_t i = 0; i < k; ++i) sum += by_send[i].second;
  m[kEarlyE2elMetric] = sum / static_cast<double>(k) * 1000;
}
}  // namespace

ScenarioResult scenario_result(const std::string& scenario_id, const metrics::BenchmarkMetrics& m,
                               std::span<const metrics::RequestOutput> outputs, std::string result_block) {
  ScenarioResult r;
  r.scenario_id = scenario_id;
  auto& mm = r.metrics;
  mm["Successful requests"] = m.completed;
  mm["Failed requests"] = m.failed;
  mm["Benchmark duration (s)"] = m.duration_s;
  mm["Total input tokens"] = static_cast<double>(m.total_input);
  mm["Total generated tokens"] = static_cast<double>(m.total_output);
  mm["Request throughput (req/s)"] = m.request_throughput;
  if (m.request_goodput) mm["Request goodput (req/s)"] = *m.request_goodput;
  mm["Output token throughput (tok/s)"] = m.output_throughput;
  mm["Peak output token throughput (tok/s)"] = m.max_output_tokens_per_s;
  mm["Peak concurrent requests"] = m.max_concurrent_requests;
  mm["Total Token throughput (tok/s)"] = m.total_token_throughput;
  put_latency(mm, "TTFT", m.ttft);
  put_latency(mm, "TPOT", m.tpot);
  put_latency(mm, "ITL", m.itl);
  put_latency(mm, "E2EL", m.e2el);
  if (!outputs.empty()) put_arrival_metrics(mm, outputs);
  for (const auto& o : outputs) {
    if (!o.success) continue;
    r.ttft_ms.push_back(o.ttft_s * 1000.0);
    if (o.output_tokens > 1) r.tpot_ms.push_back((o.latency_s - o.ttft_s) / (o.output_tokens - 1) * 1000.0);
  }
  r.result_block = std::move(result_block);
  return r;
}

}  // namespace servelab::tune
