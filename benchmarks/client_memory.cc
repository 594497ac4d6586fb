// client_memory: client RSS per in-flight stream (issue 3 §5, target ≤ 16 KB). N requests are sent
// at once to a forked stream server that holds every stream (TTFT 3 s, then 1 token); RSS is sampled
// while all N are in flight and compared with the RSS right before run_load. The delta includes
// everything the client holds per request (HTTP request bytes, the RequestOutput record, the
// connection with its 4 KB read buffer, SSE/parser state).
//
//   build-*/benchmarks/client_memory [streams...]   (default 1000 10000)
#include <atomic>
#include <cstring>

#include "client_bench_common.h"

using namespace servelab;
using namespace servelab::bench_client;

int main(int argc, char** argv) {
  std::vector<int> counts;
  for (int i = 1; i < argc; ++i) counts.push_back(std::atoi(argv[i]));
  if (counts.empty()) counts = {1000, 10000};
  const rlim_t fds = raise_fd_limit();
  constexpr double kTargetBytes = 16 * 1024;
  std::printf("%8s %12s %12s %14s %8s\n", "streams", "rss_base_MB", "rss_peak_MB", "bytes/stream", "ratio");
  for (int n : counts) {
    if (static_cast<rlim_t>(n) + 64 > fds) {
      std::printf("%8d skipped: fd limit %llu\n", n, static_cast<unsigned long long>(fds));
      continue;
    }
    test_support::StreamServerOptions so;
    so.ttft_s = 3.0;
    so.num_tokens = 1;
    ChildServer server(so);
    client::ClientOptions o;
    o.api_url = server.url("/v1/completions");
    o.model = "m";
    o.api_key = "";
    o.num_threads = 1;
    o.keep_generated_text = false;
    std::vector<client::PlannedRequest> reqs(n);
    for (int i = 0; i < n; ++i) {
      reqs[i].prompt = "a short benchmark prompt of a few words";
      reqs[i].output_len = 128;
      reqs[i].request_id = "bench-0123abcd-" + std::to_string(i);
    }
    const std::vector<double> schedule(n, 0.0);
    const long base = rss_bytes();
    long peak = base;
    const auto t0 = Clock::now();
    const client::LoadResult r = client::run_load(o, reqs, schedule, [&](std::size_t done, std::size_t) {
      // Sample while every stream is open (before the first token at 3 s).
      if (done == 0 && Clock::now() - t0 > std::chrono::milliseconds(1500))
        peak = std::max(peak, rss_bytes());
    });
    server.finish();
    std::size_t failed = 0;
    for (const auto& out : r.outputs) failed += !out.success;
    const double per = static_cast<double>(peak - base) / n;
    std::printf(
        "%8d %12.1f %12.1f %14.0f %8.2f  (target <= 16384 B; ratio = target / measured, >= 1 meets; "
        "failed %zu)\n",
        n, base / 1e6, peak / 1e6, per, kTargetBytes / per, failed);
    std::fflush(stdout);
  }
  return 0;
}
