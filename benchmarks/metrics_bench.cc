// compute_metrics at `bench serve` scale: 10,000 requests x 1,000 chunks (10 M pooled ITL samples).
// Reference measured in the same run: std::sort of a copy of those 10 M ITL samples — the unavoidable
// cost of exact (numpy "linear") percentiles. Prints both times and the ratio.
// Reproduce: cmake --build <build> --target metrics_bench && <build>/benchmarks/metrics_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "servelab/metrics/metrics.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  using servelab::metrics::RequestOutput;
  constexpr int kRequests = 10000;
  constexpr int kChunks = 1000;
  std::mt19937_64 rng(1);
  std::exponential_distribution<double> gap(50.0);
  std::uniform_real_distribution<double> start(0.0, 60.0);
  std::vector<RequestOutput> outputs(kRequests);
  std::vector<double> pooled;
  pooled.reserve(static_cast<std::size_t>(kRequests) * (kChunks - 1));
  for (auto& r : outputs) {
    r.success = true;
    r.prompt_len = 1000;
    r.output_tokens = kChunks;
    r.send_time_s = r.dispatch_time_s = r.intended_send_time_s = start(rng);
    r.ttft_s = 0.2 + gap(rng);
    r.latency_s = r.ttft_s;
    r.itl_s.resize(kChunks - 1);
    for (double& g : r.itl_s) {
      g = gap(rng);
      r.latency_s += g;
      pooled.push_back(g);
    }
  }
  servelab::metrics::MetricsOptions opts;
  opts.percentiles = {50, 90, 99, 99.9};
  double best_metrics = 1e300, best_sort = 1e300;
  double sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    auto t0 = std::chrono::steady_clock::now();
    const auto m = servelab::metrics::compute_metrics(outputs, 80.0, opts);
    best_metrics = std::min(best_metrics, seconds_since(t0));
    sink += m.itl.mean_ms;
    std::vector<double> copy = pooled;
    t0 = std::chrono::steady_clock::now();
    std::sort(copy.begin(), copy.end());
    best_sort = std::min(best_sort, seconds_since(t0));
    sink += copy[copy.size() / 2];
  }
  std::printf("compute_metrics, %d requests x %d chunks (%zu ITL samples): %.3f s (best of 3)\n", kRequests,
              kChunks, pooled.size(), best_metrics);
  std::printf("reference std::sort of the pooled ITL samples:            %.3f s\n", best_sort);
  std::printf("ratio compute_metrics / sort: %.2f  (checksum %.6f)\n", best_metrics / best_sort, sink);
  return 0;
}
