// servelab/client private: the operating-system limits a burst of connections runs into (file descriptors,
// ephemeral ports), checked before a run so that it fails with a message instead of with EMFILE/EADDRNOTAVAIL
// on request 4,097. Exposed for tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include <boost/system/error_code.hpp>

namespace servelab::client::detail {

/// File descriptors run_load keeps for itself beyond one per connection (epoll, eventfds, timers, stdio,
/// the dataset and tokenizer files of the caller): a margin, not a measured count.
inline constexpr std::uint64_t kFdMargin = 64;

/// The most connections run_load can hold at once for this run: the requests due at the first send time (a
/// burst: every one of them is in flight together), capped by `max_concurrency` (0 = none), at least
/// `preconnect`. For a schedule without a burst it is the burst at t = first send (a lower bound: how many
/// a finite rate keeps in flight depends on the server). Connections. Thread-safety: pure.
std::size_t burst_connections(std::span<const double> schedule_s, int max_concurrency,
                              std::size_t preconnect);

/// Why `connections` cannot be held with RLIMIT_NOFILE (soft `fd_soft`, hard `fd_hard`) and `local_ports`
/// ephemeral ports (net.ipv4.ip_local_port_range size; 0 = unknown, not checked), or nullopt when they can.
/// Needs connections + kFdMargin descriptors under the soft limit (which run_load first raises to the hard
/// one) and one local port per connection to the one server address. Thread-safety: pure.
std::optional<std::string> connection_limit_problem(std::size_t connections, std::uint64_t fd_soft,
                                                    std::uint64_t fd_hard, std::uint64_t local_ports);

/// RLIMIT_NOFILE after raising the soft limit to the hard one (setrlimit; process-wide, as every load
/// generator does). `soft`/`hard` receive the limits now in force. Thread-safety: may be called from any
/// thread (setrlimit is process-wide and atomic).
void raise_fd_limit(std::uint64_t& soft, std::uint64_t& hard);

/// run_load's check before anything is sent: raises the fd soft limit to the hard one, then throws
/// std::invalid_argument("run_load: " + connection_limit_problem(...)) when the burst_connections of this run
/// cannot be held. Thread-safety: as raise_fd_limit.
void check_connection_limits(std::span<const double> schedule_s, int max_concurrency, std::size_t preconnect);

/// Size of /proc/sys/net/ipv4/ip_local_port_range (hi - lo + 1), 0 when it cannot be read. Thread-safe.
std::uint64_t local_port_count();

/// A hint for a connect error that a burst causes: EMFILE/ENFILE (descriptor limit) and EADDRNOTAVAIL (no
/// free local port); "" for other errors. Appended to the request's error message. Thread-safe.
std::string connect_error_hint(const boost::system::error_code& ec);

}  // namespace servelab::client::detail
