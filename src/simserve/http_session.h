// servelab/simserve (private to the module; see simserve.h): one HTTP/1.x connection of `sim serve`.
// Requests are read continuously (so a client that hangs up is noticed while its request is in flight) and
// answered one at a time in arrival order; responses, SSE streams included, are written from an output queue
// so token chunks never interleave. Thread-safety: the server's event-loop thread only.
#pragma once

#include <boost/beast/http.hpp>

#include <array>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "simserve/openai_api.h"
#include "simserve/server_impl.h"

namespace servelab::simserve::detail {

namespace http = beast::http;

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server::Impl& server)
      : socket_(std::move(socket)), server_(server), read_timer_(socket_.get_executor()) {}

  void start() { read_request(); }
  /// Closes the connection and forgets it: in-flight requests are cancelled in the twin.
  void drop();

  /// Raw bytes onto the wire, in order (an output queue: token chunks never interleave).
  void write(std::string bytes);
  /// The head of a streamed (SSE) response: chunked on HTTP/1.1; on HTTP/1.0 the body ends at close.
  void begin_stream();
  /// One SSE event (`data: ...\n\n`), framed as a chunk when the stream is chunked.
  void stream_event(const std::string& event);
  /// The stream of request `id` is complete: the last chunk, then finish(id).
  void end_stream(std::uint64_t id);
  /// A whole (non-streamed) response; `status` is the HTTP status.
  void respond(int status, const std::string& content_type, std::string body);
  void respond_error(const ApiError& e) { respond(e.status, "application/json", error_json(e)); }
  /// The response in progress is complete (immediate ones too): the next queued request may start.
  void finish(std::uint64_t id);
  /// Request `id` of this connection is in the twin (cancelled there if the connection drops).
  void track(std::uint64_t id) { in_flight_.insert(id); }
  bool dropped() const { return dropped_; }

 private:
  enum class Phase { kHead, kBody };
  /// A request read and waiting its turn. `received_s`: virtual time its body was read, its arrival in the
  /// twin; `busy_ms`: engine ms the event loop had been busy before reading it (a bound on how long it
  /// waited unread in the socket).
  struct Pending {
    http::request<http::string_body> request;
    double received_s = 0;
    double busy_ms = 0;
  };

  /// Starts reading the next request unless one is being read, the queue is full or the connection ends.
  void read_request();

  // Deadlines: the head of a request must arrive within header_timeout_s while nothing is in progress
  // (an idle keep-alive connection included); its body within body_timeout_s after the head.
  void arm_read_timer();
  void on_head(beast::error_code ec);
  /// A whole request was read: queue it with its arrival time and the event loop's busy time.
  void on_body(beast::error_code ec);
  // The client hung up (its requests in flight are cancelled), or sent what is not HTTP.
  void on_read_error(const beast::error_code& ec);

  /// Answers queued requests in arrival order, one at a time; an exception becomes that request's 500.
  void process_queue();
  /// Routes one request: /health, /v1/models, /metrics, /servelab/schedule, /v1/completions,
  /// /v1/chat/completions; anything else is a 404, a wrong method a 405.
  void handle(const Pending& pending);
  void method_not_allowed(const std::string& path);
  /// Writes the output queue's front; at its end, closes when the last response asked for it.
  void flush();

  // After the last response: stop sending, drain what the client still sends (a rejected body) for at most
  // kLingerS so it reads the response instead of a reset, then close.
  void linger_close();
  // Reads and discards: on a connection that sends no further request, notices the client hanging up
  // (its request is cancelled in the twin) and drains a rejected body while lingering.
  void watch();

  tcp::socket socket_;
  Server::Impl& server_;
  net::steady_timer read_timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<Pending> queue_;
  std::deque<std::string> out_;
  std::set<std::uint64_t> in_flight_;
  std::array<char, 4096> drain_buf_{};
  Phase phase_ = Phase::kHead;
  unsigned version_ = 11;
  bool reading_ = false;
  bool busy_ = false;  // a response is in progress
  bool writing_ = false;
  bool keep_alive_ = true;
  bool chunked_ = true;
  bool stop_reading_ = false;  // the client said Connection: close (or HTTP/1.0)
  bool close_after_write_ = false;
  bool lingering_ = false;
  bool watching_ = false;
  bool dropped_ = false;
};

}  // namespace servelab::simserve::detail
