// Helpers shared by the client benchmarks: a stream server in a forked child process (its own fds and
// cores, same steady clock), the emission log handed back through a file, percentiles and RSS.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "servelab/client/client.h"
#include "support/stream_server.h"

namespace servelab::bench_client {

using Clock = std::chrono::steady_clock;

/// Raises RLIMIT_NOFILE to the hard limit; returns the new soft limit.
inline rlim_t raise_fd_limit() {
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  getrlimit(RLIMIT_NOFILE, &rl);
  return rl.rlim_cur;
}

/// Resident set size of this process, bytes (/proc/self/statm).
inline long rss_bytes() {
  long pages_total = 0, pages_resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2) pages_resident = 0;
    std::fclose(f);
  }
  return pages_resident * sysconf(_SC_PAGESIZE);
}

/// numpy "linear" percentile of `v` (sorted in place), p in [0, 100].
inline double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const double pos = (v.size() - 1) * p / 100.0;
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

/// A StreamServer running in a forked child. Construct before creating any thread in the parent.
class ChildServer {
 public:
  explicit ChildServer(const test_support::StreamServerOptions& options) {
    char path[] = "/tmp/servelab-emissions-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) throw std::runtime_error("mkstemp failed");
    close(fd);
    log_path_ = path;
    int to_child[2], to_parent[2];
    if (pipe(to_child) != 0 || pipe(to_parent) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ < 0) throw std::runtime_error("fork failed");
    if (pid_ == 0) {
      close(to_child[1]);
      close(to_parent[0]);
      int rc = 0;
      try {
        test_support::StreamServer server(options);
        const std::uint16_t port = server.port();
        if (write(to_parent[1], &port, sizeof port) != sizeof port) _exit(3);
        char c;
        while (read(to_child[0], &c, 1) > 0) {
        }
        server.stop();
        std::ofstream out(log_path_);
        for (const auto& e : server.emissions()) {
          out << e.request_id << ' ' << e.received.time_since_epoch().count() << ' ' << e.chunk_times.size();
          for (auto t : e.chunk_times) out << ' ' << t.time_since_epoch().count();
          out << '\n';
        }
      } catch (const std::exception& e) {
        std::fprintf(stderr, "child server: %s\n", e.what());
        rc = 2;
      }
      _exit(rc);
    }
    close(to_child[0]);
    close(to_parent[1]);
    stop_fd_ = to_child[1];
    if (read(to_parent[0], &port_, sizeof port_) != sizeof port_) {
      throw std::runtime_error("child server did not start");
    }
    close(to_parent[0]);
  }

  ~ChildServer() {
    if (stop_fd_ >= 0) finish();
    std::remove(log_path_.c_str());
  }

  std::uint16_t port() const { return port_; }
  std::string url(const char* path) const { return "http://127.0.0.1:" + std::to_string(port_) + path; }

  /// Stops the child and returns its emission log: request id → chunk write times (the receipt time of
  /// each request, the end of its read, is kept in received()).
  std::map<std::string, std::vector<Clock::time_point>> finish() {
    close(stop_fd_);
    stop_fd_ = -1;
    int status = 0;
    waitpid(pid_, &status, 0);
    std::map<std::string, std::vector<Clock::time_point>> log;
    std::ifstream in(log_path_);
    std::string id;
    long long received;
    std::size_t n;
    while (in >> id >> received >> n) {
      received_[id] = Clock::time_point(Clock::duration(received));
      auto& v = log[id];
      v.resize(n);
      for (auto& t : v) {
        long long ns;
        in >> ns;
        t = Clock::time_point(Clock::duration(ns));
      }
    }
    return log;
  }

  /// Request id → when the server had read the whole request (steady clock); filled by finish().
  const std::map<std::string, Clock::time_point>& received() const { return received_; }

 private:
  std::map<std::string, Clock::time_point> received_;
  pid_t pid_ = -1;
  int stop_fd_ = -1;
  std::uint16_t port_ = 0;
  std::string log_path_;
};

/// Per-event client error against the server's emission log (seconds): `ttft` = client time of the
/// first choices event − server write time of that chunk; `itl` = |client gap − server gap|.
struct Errors {
  std::vector<double> ttft;
  std::vector<double> itl;
  std::vector<double> event;  ///< client event time − server write time, every event
  std::size_t events = 0;
  std::size_t missing = 0;                ///< requests without a matching log or with a different event count
  std::vector<double> late_server_times;  ///< server write times (s) of events seen > 5 ms late
};

inline Errors compare(const client::LoadResult& r,
                      const std::map<std::string, std::vector<Clock::time_point>>& log) {
  Errors e;
  for (const auto& out : r.outputs) {
    auto it = log.find(out.request_id);
    if (!out.success || it == log.end() || it->second.size() != out.itl_s.size() + 1) {
      ++e.missing;
      continue;
    }
    const auto& s = it->second;
    const double s0 = std::chrono::duration<double>(s[0] - r.start).count();
    double c = out.send_time_s + out.ttft_s;
    e.ttft.push_back(c - s0);

    e.event.push_back(c - s0);
    if (c - s0 > 0.005) e.late_server_times.push_back(s0);
    for (std::size_t k = 1; k < s.size(); ++k) {
      const double sk = std::chrono::duration<double>(s[k] - r.start).count();
      const double server_gap = std::chrono::duration<double>(s[k] - s[k - 1]).count();
      c += out.itl_s[k - 1];
      e.itl.push_back(std::abs(out.itl_s[k - 1] - server_gap));
      e.event.push_back(c - sk);
      if (c - sk > 0.005) e.late_server_times.push_back(sk);
    }
    e.events += s.size();
  }
  return e;
}

}  // namespace servelab::bench_client
