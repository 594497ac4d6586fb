// stream_server: the scheduled-emission streaming test server as a standalone binary (for manual
// runs of `servelab bench serve` against known emission times). On SIGINT/SIGTERM it stops and, with
// --log FILE, writes one line per request: request_id received_ns n chunk_write_ns... (steady clock).
//
//   build-*/benchmarks/stream_server --port 8000 --ttft-ms 100 --itl-ms 20 [--tokens N] [--threads 2]
//       [--fault NAME] [--reasoning-tokens N] [--tokens-per-chunk N] [--continuous-usage] [--log FILE]
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#include "support/stream_server.h"

int main(int argc, char** argv) {
  servelab::test_support::StreamServerOptions o;
  o.port = 8000;
  std::string log_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "stream_server: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--port")
      o.port = static_cast<std::uint16_t>(std::atoi(next()));
    else if (a == "--host")
      o.host = next();
    else if (a == "--threads")
      o.threads = std::atoi(next());
    else if (a == "--ttft-ms")
      o.ttft_s = std::atof(next()) / 1000.0;
    else if (a == "--itl-ms")
      o.itl_s = std::atof(next()) / 1000.0;
    else if (a == "--tokens")
      o.num_tokens = std::atoi(next());
    else if (a == "--tokens-per-chunk")
      o.tokens_per_chunk = std::atoi(next());
    else if (a == "--reasoning-tokens")
      o.reasoning_tokens = std::atoi(next());
    else if (a == "--continuous-usage")
      o.continuous_usage = true;
    else if (a == "--fault")
      o.fault = servelab::test_support::fault_from_name(next());
    else if (a == "--log")
      log_path = next();
    else {
      std::fprintf(stderr, "stream_server: unknown flag %s\n", a.c_str());
      return 2;
    }
  }
  o.log_emissions = !log_path.empty();
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before the server threads start
  servelab::test_support::StreamServer server(o);
  std::printf("stream_server listening on %s\n", server.url("").c_str());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  server.stop();
  if (!log_path.empty()) {
    std::ofstream out(log_path);
    for (const auto& e : server.emissions()) {
      out << e.request_id << ' ' << e.received.time_since_epoch().count() << ' ' << e.chunk_times.size();
      for (auto t : e.chunk_times) out << ' ' << t.time_since_epoch().count();
      out << '\n';
    }
  }
  std::printf("stream_server: %zu requests, %zu connections\n", server.requests_received(),
              server.connections_accepted());
  return 0;
}
