// servelab/client private: opening connections ahead of a run (ClientOptions::preconnect), so that a burst of
// requests at t = 0 finds them open instead of causing a connect storm inside the measured run.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <deque>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <openssl/ssl.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "client/os_limits.h"

namespace servelab::client::detail {

/// Connections a preconnect phase keeps connecting at once per I/O thread: enough to keep the loopback
/// handshakes back to back, few enough not to overflow a server's accept backlog (uvicorn's default is
/// 2048, Linux caps it at net.core.somaxconn) and trigger SYN retransmits.
inline constexpr std::size_t kPreconnectWindow = 128;

/// Sets up a client TLS stream as run_load does for every connection: certificate and host name
/// verification unless `insecure`, SNI = `host`. Not thread-safe for one stream (Asio stream rules).
inline void prepare_tls(boost::asio::ssl::stream<boost::asio::ip::tcp::socket>& stream,
                        const std::string& host, bool insecure) {
  namespace ssl = boost::asio::ssl;
  if (!insecure) {
    stream.set_verify_mode(ssl::verify_peer);
    stream.set_verify_callback(ssl::host_name_verification(host));
  } else {
    stream.set_verify_mode(ssl::verify_none);
  }
  SSL_set_tlsext_host_name(stream.native_handle(), host.c_str());
}

/// A worker's share of `total` pre-opened connections: in proportion to the `mine` of `all` requests it
/// sends, rounded up, at most `mine`. Connections. Thread-safety: pure.
inline std::size_t preconnect_share(std::size_t total, std::size_t mine, std::size_t all) {
  return all == 0 ? 0 : std::min(mine, (total * mine + all - 1) / all);
}

/// After the phase: connections opened over all workers (share[k] asked, failed[k] not opened, error[k] the
/// first failure of worker k); adds a warning to `warnings` when some could not be opened. Thread-safety:
/// call after the workers joined (reads their results).
inline std::size_t preconnect_summary(const std::vector<std::size_t>& share,
                                      const std::vector<std::size_t>& failed,
                                      const std::vector<std::string>& error,
                                      std::vector<std::string>& warnings) {
  std::size_t asked = 0, lost = 0;
  std::string first;
  for (std::size_t k = 0; k < share.size(); ++k) {
    asked += share[k];
    lost += failed[k];
    if (failed[k] > 0 && first.empty()) first = error[k];
  }
  if (lost > 0) {
    warnings.push_back("pre-opened " + std::to_string(asked - lost) + " of " + std::to_string(asked) +
                       " connections before the run (the others connect on demand): " + first);
  }
  return asked - lost;
}

/// What a preconnect phase opened.
template <class Stream>
struct Preconnected {
  std::vector<Stream> streams;  ///< open (TCP connected, TLS handshaken), TCP_NODELAY set
  std::size_t failed = 0;       ///< connections that could not be opened (or were abandoned by a stop)
  std::string first_error;      ///< the first failure's message ("" when none failed)
};

/// Opens `count` connections to `endpoints` on `io`, at most kPreconnectWindow connecting at once, each
/// bounded by `connect_timeout_s` (seconds), and returns once every attempt finished. Runs `io` itself
/// (run_one: handlers already queued on `io` may run too; the caller's work guard may be held).
/// `make_stream()` returns a fresh Stream on `io`; `Stream` is tcp::socket or ssl::stream<tcp::socket> (TLS:
/// prepare_tls with `host`/`insecure`, then the handshake). `stopped()` is polled between handlers: once true
/// no new attempt starts and the ones in flight are closed. Never throws for connection failures.
/// Thread-safety: call from the one thread that runs `io`.
template <class Stream, class MakeStream, class Stopped>
Preconnected<Stream> preconnect(boost::asio::io_context& io,
                                const boost::asio::ip::tcp::resolver::results_type& endpoints,
                                std::size_t count, double connect_timeout_s, MakeStream make_stream,
                                const std::string& host, bool insecure, Stopped stopped) {
  namespace asio = boost::asio;
  using tcp = asio::ip::tcp;
  using error_code = boost::system::error_code;
  constexpr bool kTls = !std::is_same_v<Stream, tcp::socket>;
  struct Attempt {
    std::optional<Stream> stream;
    asio::steady_timer timer;
    bool done = false;
    int pending = 0;  // handlers outstanding
    explicit Attempt(asio::io_context& ctx) : timer(ctx) {}
  };
  auto lowest = [](Stream& s) -> tcp::socket& {
    if constexpr (kTls) {
      return s.next_layer();
    } else {
      return s;
    }
  };
  Preconnected<Stream> result;
  std::deque<Attempt> attempts;  // stable addresses for the handlers
  std::size_t started = 0, finished = 0, outstanding = 0;
  bool aborting = false;
  auto finish = [&](Attempt& a, const error_code& ec, const char* what) {
    if (a.done) return;
    a.done = true;
    ++finished;
    a.timer.cancel();
    if (ec) {
      ++result.failed;
      if (result.first_error.empty())
        result.first_error = std::string(what) + ": " + ec.message() + connect_error_hint(ec);
      error_code ignored;
      lowest(*a.stream).close(ignored);
    } else {
      result.streams.push_back(std::move(*a.stream));
      a.stream.reset();
    }
  };
  auto settle = [&](Attempt& a) {  // a handler of `a` returned
    if (--a.pending == 0) --outstanding;
  };
  auto start_one = [&] {
    Attempt& a = attempts.emplace_back(io);
    ++started;
    ++outstanding;
    a.stream.emplace(make_stream());
    a.pending = 2;
    a.timer.expires_after(std::chrono::duration_cast<asio::steady_timer::duration>(
        std::chrono::duration<double>(connect_timeout_s)));
    a.timer.async_wait([&, pa = &a](const error_code& ec) {
      if (!ec && !pa->done) finish(*pa, asio::error::timed_out, "connect");
      settle(*pa);
    });
    asio::async_connect(
        lowest(*a.stream), endpoints, [&, pa = &a](const error_code& ec, const tcp::endpoint&) {
          if (ec || pa->done) {
            finish(*pa, ec ? ec : asio::error::operation_aborted, "connect");
          } else {
            error_code ignored;
            lowest(*pa->stream).set_option(tcp::no_delay(true), ignored);
            if constexpr (kTls) {
              prepare_tls(*pa->stream, host, insecure);
              ++pa->pending;
              pa->stream->async_handshake(asio::ssl::stream_base::client, [&, pa](const error_code& hec) {
                finish(*pa, hec, "TLS handshake");
                settle(*pa);
              });
            } else {
              finish(*pa, ec, "connect");
            }
          }
          settle(*pa);
        });
  };
  while (started < count && started - finished < kPreconnectWindow && !stopped()) start_one();
  while (outstanding > 0 && io.run_one()) {
    if (!aborting && stopped()) {
      aborting = true;
      for (Attempt& a : attempts) {
        if (!a.done) finish(a, asio::error::operation_aborted, "connect");
      }
    }
    while (!aborting && started < count && started - finished < kPreconnectWindow) start_one();
  }
  result.failed += count - started;  // not attempted because of a stop
  if (result.first_error.empty() && result.failed > 0) result.first_error = "stopped";
  return result;
}

}  // namespace servelab::client::detail
