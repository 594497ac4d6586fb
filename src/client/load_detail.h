// servelab/client private: the shared state of one run_load / run_sessions run (Run) and a connection (Conn).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>

#include "client/http_response.h"
#include "client/sse.h"
#include "servelab/client/client.h"
#include "servelab/client/request.h"
#include "servelab/client/session.h"

namespace servelab::client::detail {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using SslStream = asio::ssl::stream<tcp::socket>;
using metrics::FailureKind;
using metrics::RequestOutput;

inline constexpr std::size_t kNoRequest = static_cast<std::size_t>(-1);
inline constexpr std::size_t kReadBufferBytes = 4096;  // grows (×2) only for larger HTTP headers
inline constexpr std::size_t kMaxReadBufferBytes = 1 << 20;
inline constexpr std::size_t kErrorExcerptBytes = 512;
inline constexpr int kDispatchBatch = 16;  // sends per event-loop turn during a burst

inline tcp::socket& lowest(tcp::socket& s) {
  return s;
}
inline tcp::socket& lowest(SslStream& s) {
  return s.next_layer();
}

inline bool is_eof(const error_code& ec) {
  return ec == asio::error::eof || ec == asio::ssl::error::stream_truncated;
}

template <class Stream>
class Worker;

// Shared state of one run. Thread-safety: immutable after construction except the atomics and the
// limiter (guarded by mu); outputs[i] is written only by the worker owning request i.
template <class Stream>
struct Run {
  const ClientOptions& options;
  std::vector<double> schedule;  // intended send times; a later session turn's is set when it is released
  std::vector<std::string> http;
  std::vector<RequestOutput>& outputs;
  std::vector<std::string>& reasoning;  // per request; used only with a re-tokenizer
  tcp::resolver::results_type endpoints;
  asio::ssl::context* ssl = nullptr;
  std::string host;
  std::string authority;
  Clock::time_point t0;
  std::atomic<std::size_t> completed{0};
  /// Of `completed`, the requests a stop ended (cancelled in flight or never sent): the progress shown counts
  /// the others only, so an interrupted run never reads "300/300 requests done".
  std::atomic<std::size_t> cancelled{0};
  std::atomic<std::size_t> not_sent{0};
  std::atomic<bool> stop_requested{false};  // set before any worker sees its stop
  std::atomic<Clock::rep> last_completion{0};
  std::size_t preconnected = 0;  // connections opened before t = 0 (ClientOptions::preconnect)
  double preconnect_s = 0.0;     // how long opening them took, s
  // --max-concurrency semaphore. Without sessions, slots go out in send order (intended send time, then
  // index: vLLM's tasks wait on an asyncio semaphore in the order they were created, which is FIFO),
  // whichever worker thread dispatched the request: admit_order is that order, admit_pos the next to admit,
  // and admit_waiting[i] the worker whose request i waits for a slot (null: not dispatched yet). With
  // sessions (a turn is released when the previous one ends) `waiters` is FIFO by arrival at the semaphore.
  bool limited = false;
  std::mutex mu;
  int available = 0;
  std::deque<std::pair<Worker<Stream>*, std::size_t>> waiters;
  std::vector<std::size_t> admit_order;
  std::size_t admit_pos = 0;
  std::vector<Worker<Stream>*> admit_waiting;
  std::vector<std::string> warnings;
  // Sessions (run_sessions; null for run_load): turn k+1 is built by the owning worker when turn k ended.
  const SessionPlan* plan = nullptr;
  std::vector<std::size_t> session_of, turn_of;  // per request
  std::vector<char> holds_session_slot;          // per session; written by its owning worker only
  const ParsedUrl* url = nullptr;
  std::string api_key;
  std::vector<std::string> secrets;  // request_secrets: redacted from the error bodies a server echoes
  bool sessions_limited = false;     // session concurrency semaphore, FIFO, guarded by mu
  int sessions_available = 0;
  std::deque<std::pair<Worker<Stream>*, std::size_t>> session_waiters;

  Run(const ClientOptions& o, std::span<const double> s, std::vector<RequestOutput>& out,
      std::vector<std::string>& r)
      : options(o), schedule(s.begin(), s.end()), outputs(out), reasoning(r) {}

  double rel(Clock::time_point tp) const { return std::chrono::duration<double>(tp - t0).count(); }
};

/// Lifecycle of a Conn's socket. Transitions (all in Worker, on the worker's thread):
///   (new) / kFree --new_conn--> kUnconnected --connect--> kConnecting --on_connected--> kOpen
///   kUnconnected --preconnect (socket handed over already connected)--> kOpen
///   any but kFree --close--> kClosed --recycle_if_idle (no handler pending, no request)--> kFree
/// Whether an open connection is idle (in the keep-alive pool) or carries a request is `Conn::idx`.
enum class ConnState : std::uint8_t {
  kUnconnected,  // no socket yet (a fresh or recycled object about to connect)
  kConnecting,   // TCP connect (and TLS handshake) in flight; a deadline now is a connect timeout
  kOpen,         // connected (and TLS handshaken): carries a request or waits in the keep-alive pool
  kClosed,       // socket closed; handlers may still be pending, then the object is recycled
  kFree,         // in the worker's free list: no socket, no request, no handler pending
};

/// How the current request reached its connection; decides whether a failure before any response byte
/// is resent once on a fresh connection (only on a kept-alive one: the server may have closed it idle).
enum class Attempt : std::uint8_t {
  kFresh,      // first attempt, on a connection opened for it
  kKeptAlive,  // first attempt, on a kept-alive (or pre-opened) connection: may be retried once
  kRetry,      // the one resend on a fresh connection after the kept-alive one failed: no further retry
};

// One connection and the request it currently carries.
template <class Stream>
struct Conn {
  Worker<Stream>* worker = nullptr;
  std::optional<Stream> stream;
  asio::steady_timer timer;
  std::unique_ptr<char[]> buf;
  std::size_t cap = kReadBufferBytes;
  std::size_t used = 0;
  std::optional<ResponseParser<Conn>> parser;
  SseParser sse;
  StreamState st;
  std::uint32_t gen = 0;  // bumped on every close / new request: stale handlers compare it
  int pending = 0;        // async operations in flight on this object
  std::size_t idx = kNoRequest;
  ConnState state = ConnState::kUnconnected;
  Attempt attempt = Attempt::kFresh;  // of the current request
  bool got_bytes = false;             // the current request has received a response byte
  int status = 0;
  std::string status_reason;
  std::string error_body;

  Conn(Worker<Stream>* w, asio::io_context& io) : worker(w), timer(io), buf(new char[kReadBufferBytes]) {}

  void on_status(int code, std::string_view reason) {
    status = code;
    status_reason.assign(reason);
  }
  void on_body(std::string_view bytes);
};

}  // namespace servelab::client::detail
