// servelab test support: a streaming OpenAI-style server with exactly scheduled token emission.
// Ground truth for the client's timing: it sends N tokens as SSE chunks at send times
// received + TTFT + k·ITL and logs the steady-clock time right before writing each chunk. It also
// produces every malformed stream the client must survive (bad JSON, HTTP 500, resets, split events,
// comments, partial UTF-8 across writes, ...).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::test_support {

/// How a response misbehaves. Selected per server (StreamServerOptions::fault) or per request with
/// the header `x-test-fault: <name>` (names as fault_name()).
enum class Fault : std::uint8_t {
  kNone,
  kBadJson,             ///< token `fault_after_tokens` is sent as invalid JSON
  kHttp500,             ///< HTTP 500 with a JSON error body (Content-Length)
  kReset,               ///< TCP RST after `fault_after_tokens` tokens
  kClose,               ///< FIN after `fault_after_tokens` tokens (chunked body unfinished)
  kSplitEvents,         ///< every event written in 3 pieces, 1 ms apart (split inside "data:" and the JSON)
  kComments,            ///< `: ping` comments, `event:`/`id:` lines between events
  kPartialUtf8,         ///< multi-byte tokens ("é世🙂") with writes split inside a UTF-8 sequence
  kCrlf,                ///< CRLF line endings and "\r\n\r\n" event separators
  kNoChoices,           ///< only the usage chunk and [DONE] (vLLM: "Never received a valid chunk")
  kServerError,         ///< an `{"error": {...}}` event after `fault_after_tokens` tokens
  kStall,               ///< reads the request, never answers (client timeout)
  kMalformedSse,        ///< a non-SSE line ("garbage") after `fault_after_tokens` tokens
  kNoUsage,             ///< no usage chunk (client falls back to re-tokenization)
  kCloseDelimited,      ///< no chunked encoding: body delimited by connection close (HTTP/1.0 style)
  kMultiEventWrite,     ///< all events of the response in one write at the end (several events per read)
  kCloseAfterResponse,  ///< a complete keep-alive response, then the connection is closed (stale pool entry)
  kByteByByte,  ///< the whole response (head, chunk sizes, CRLFs, events) one byte per write, 20 µs apart
};

/// Stable name of a fault ("none", "bad_json", "http_500", ...).
const char* fault_name(Fault fault);
/// Inverse of fault_name; throws std::invalid_argument for an unknown name.
Fault fault_from_name(std::string_view name);

/// Server configuration. Per-request overrides via headers: `x-test-fault`, `x-test-ttft-ms`,
/// `x-test-itl-ms`, `x-test-tokens`.
struct StreamServerOptions {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;         ///< 0 = ephemeral
  int threads = 1;                ///< io_context threads
  double ttft_s = 0.0;            ///< first token at request receipt + ttft_s
  double itl_s = 0.0;             ///< token k at receipt + ttft_s + k·itl_s
  int num_tokens = -1;            ///< tokens per response; -1 = request max_tokens (or 16)
  int tokens_per_chunk = 1;       ///< tokens carried by one SSE choices event
  bool continuous_usage = false;  ///< usage (cumulative) on every choices chunk
  int reasoning_tokens = 0;       ///< chat: the first N tokens are delta.reasoning_content
  Fault fault = Fault::kNone;
  int fault_after_tokens = 2;
  bool log_emissions = true;       ///< record emission times (see emissions())
  std::string token_text = "tok";  ///< text of one token
  bool tls = false;                ///< https with a fresh self-signed certificate for `host`
};

using SteadyTime = std::chrono::steady_clock::time_point;

/// What the server did for one request.
struct Emission {
  std::string request_id;               ///< x-request-id received ("" if none)
  SteadyTime received;                  ///< end of the request read
  std::vector<SteadyTime> chunk_times;  ///< right before writing each choices event, in order
  std::string body;                     ///< the request body received
};

/// The server: listens on construction, serves until destruction/stop().
/// Thread-safety: all public members may be called from any thread.
class StreamServer {
 public:
  /// Binds and starts serving. Throws std::runtime_error if it cannot listen.
  explicit StreamServer(StreamServerOptions options);
  ~StreamServer();
  StreamServer(const StreamServer&) = delete;
  StreamServer& operator=(const StreamServer&) = delete;

  std::uint16_t port() const;
  /// "http[s]://host:port" + path.
  std::string url(std::string_view path) const;
  /// Snapshot of finished and in-progress requests.
  std::vector<Emission> emissions() const;
  std::size_t requests_received() const;
  /// TCP connections accepted so far (keep-alive reuse shows as fewer connections than requests).
  std::size_t connections_accepted() const;
  /// Stops accepting, closes every connection, joins the threads (idempotent).
  void stop();

  struct Impl;  ///< implementation detail (public so the .cc's session type can name it)

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::test_support
