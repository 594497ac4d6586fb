// client_throughput: SSE events per second one client core sustains (issue 3 §5, target ≥ 100,000/s).
// One client I/O thread; the stream server runs in a forked child. For each offered event rate the
// run reports the client's CPU time per event (getrusage of the client process = events per
// client-core-second) and the p99 delay between the server's write and the client's event time
// (schedule lag): the rate is sustained while that delay stays flat.
//
//   build-*/benchmarks/client_throughput [--streams 200] [--seconds 2] [--server-threads 1] [rates...]
#include <sys/resource.h>

#include <cstring>

#include "client_bench_common.h"

using namespace servelab;
using namespace servelab::bench_client;

namespace {
double cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6;
}
}  // namespace

int main(int argc, char** argv) {
  int streams = 200, server_threads = 1;
  double seconds = 2.0;
  std::vector<double> rates;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--streams") && i + 1 < argc) {
      streams = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) {
      seconds = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--server-threads") && i + 1 < argc) {
      server_threads = std::atoi(argv[++i]);
    } else if (argv[i][0] != '-') {
      rates.push_back(std::atof(argv[i]));
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  if (rates.empty()) rates = {25000, 50000, 100000, 150000, 200000};
  raise_fd_limit();
  constexpr double kTarget = 100000.0;
  std::printf("%d streams, 1 client thread, %d server thread(s), %.1f s per rate\n", streams, server_threads,
              seconds);
  std::printf("%10s %10s %10s %12s %12s %10s %8s\n", "offered/s", "received/s", "client_cpu", "events/cpu-s",
              "delay_p50ms", "delay_p99ms", "failed");
  double best_per_core = 0;
  for (double rate : rates) {
    const double itl_s = streams / rate;
    const int tokens = std::max(2, static_cast<int>(seconds / itl_s));
    test_support::StreamServerOptions so;
    so.ttft_s = 0.050;
    so.itl_s = itl_s;
    so.num_tokens = tokens;
    so.threads = server_threads;
    ChildServer server(so);
    client::ClientOptions o;
    o.api_url = server.url("/v1/completions");
    o.model = "m";
    o.api_key = "";
    o.num_threads = 1;
    o.keep_generated_text = false;
    std::vector<client::PlannedRequest> reqs(streams);
    for (int i = 0; i < streams; ++i) {
      reqs[i].prompt = "p";
      reqs[i].output_len = tokens;
      reqs[i].request_id = "r" + std::to_string(i);
    }
    client::ArrivalOptions a;
    a.num_requests = streams;
    a.request_rate = streams / itl_s;  // spread starts over one ITL
    a.burstiness = 1.0 / 0.0;
    const auto schedule = client::arrival_schedule(a);
    const double cpu0 = cpu_seconds();
    const client::LoadResult r = client::run_load(o, reqs, schedule);
    const double cpu = cpu_seconds() - cpu0;
    const auto log = server.finish();
    Errors e = compare(r, log);
    std::size_t failed = 0, events = 0;
    for (const auto& out : r.outputs) {
      failed += !out.success;
      if (out.success) events += out.itl_s.size() + 1;
    }
    const double per_core = events / cpu;
    best_per_core = std::max(best_per_core, per_core);
    std::printf("%10.0f %10.0f %10.3f %12.0f %12.3f %10.3f %8zu\n", rate, events / r.duration_s, cpu,
                per_core, percentile(e.event, 50) * 1e3, percentile(e.event, 99) * 1e3, failed + e.missing);
    std::fflush(stdout);
  }
  std::printf("best client events per core-second: %.0f; ratio vs target %.0f/s: %.2f (>= 1 meets)\n",
              best_per_core, kTarget, best_per_core / kTarget);
  return 0;
}
