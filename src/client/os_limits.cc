// Limits a burst of connections runs into: RLIMIT_NOFILE and the ephemeral port range (see os_limits.h).
#include "client/os_limits.h"

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <fstream>
#include <stdexcept>

#include <boost/asio/error.hpp>

namespace servelab::client::detail {

std::size_t burst_connections(std::span<const double> schedule_s, int max_concurrency,
                              std::size_t preconnect) {
  std::size_t burst = 0;
  if (!schedule_s.empty()) {
    const double first = *std::min_element(schedule_s.begin(), schedule_s.end());
    burst = static_cast<std::size_t>(std::count(schedule_s.begin(), schedule_s.end(), first));
  }
  if (max_concurrency > 0) burst = std::min(burst, static_cast<std::size_t>(max_concurrency));
  return std::max(burst, preconnect);
}

std::optional<std::string> connection_limit_problem(std::size_t connections, std::uint64_t fd_soft,
                                                    std::uint64_t fd_hard, std::uint64_t local_ports) {
  const std::uint64_t need = connections + kFdMargin;
  if (fd_soft < need) {
    return std::to_string(connections) + " concurrent connections need about " + std::to_string(need) +
           " file descriptors, but the limit (RLIMIT_NOFILE) is " + std::to_string(fd_soft) +
           " (hard limit " + std::to_string(fd_hard) +
           "): raise it (ulimit -n / ulimit -Hn, LimitNOFILE= in systemd, nofile in "
           "/etc/security/limits.conf) or lower --max-concurrency";
  }
  if (local_ports > 0 && connections > local_ports) {
    return std::to_string(connections) +
           " concurrent connections to one server need as many local ports, but "
           "net.ipv4.ip_local_port_range has " +
           std::to_string(local_ports) +
           ": widen it (sysctl -w net.ipv4.ip_local_port_range=\"1024 65535\") or lower --max-concurrency";
  }
  return std::nullopt;
}

void raise_fd_limit(std::uint64_t& soft, std::uint64_t& hard) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
  }
  soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
  hard = rl.rlim_max == RLIM_INFINITY ? UINT64_MAX : rl.rlim_max;
}

void check_connection_limits(std::span<const double> schedule_s, int max_concurrency,
                             std::size_t preconnect) {
  std::uint64_t fd_soft = 0, fd_hard = 0;
  raise_fd_limit(fd_soft, fd_hard);
  const std::size_t burst = burst_connections(schedule_s, max_concurrency, preconnect);
  if (auto problem = connection_limit_problem(burst, fd_soft, fd_hard, local_port_count())) {
    throw std::invalid_argument("run_load: " + *problem);
  }
}

std::uint64_t local_port_count() {
  std::ifstream in("/proc/sys/net/ipv4/ip_local_port_range");
  std::uint64_t lo = 0, hi = 0;
  if (!(in >> lo >> hi) || hi < lo) return 0;
  return hi - lo + 1;
}

std::string connect_error_hint(const boost::system::error_code& ec) {
  namespace error = boost::asio::error;
  if (ec == error::no_descriptors || ec.value() == ENFILE) {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    return " (file descriptor limit reached: RLIMIT_NOFILE " + std::to_string(rl.rlim_cur) +
           "; raise ulimit -n or lower --max-concurrency)";
  }
  if (ec.value() == EADDRNOTAVAIL) {
    return " (no free local port: the ephemeral ports of net.ipv4.ip_local_port_range are in use or in "
           "TIME_WAIT; widen the range or lower --max-concurrency)";
  }
  return "";
}

}  // namespace servelab::client::detail
