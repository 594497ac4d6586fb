// The `sim serve` HTTP server: Boost.Beast on one event-loop thread. Requests are validated and
// tokenized here, then handed to the twin's Timeline; a single timer wakes the loop at the next predicted
// token emission and streams each token as an SSE chunk at that moment.
#include "simserve/server.h"

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without including it
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <ctime>
#include <optional>
#include <cstdio>
#include <stdexcept>
#include <unordered_map>

#include "chat/chat.h"
#include "common/utf8.h"
#include "simserve/metrics_text.h"
#include "simserve/openai_api.h"

namespace servelab::simserve {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

std::vector<tokenizer::TokenId> standalone_word_tokens(const tokenizer::Tokenizer& tok) {
  std::vector<tokenizer::TokenId> out;
  const auto n = static_cast<tokenizer::TokenId>(tok.vocab_size());
  for (tokenizer::TokenId id = 0; id < n; ++id) {
    const auto piece = tok.id_to_token(id);
    // Byte-level BPE spells a leading space as "Ġ" (U+0120, bytes C4 A0); sentencepiece as "▁".
    if (!piece || piece->size() < 4) continue;
    const std::string_view p(*piece);
    std::size_t skip = 0;
    if (p.substr(0, 2) == "\xC4\xA0") skip = 2;
    else if (p.substr(0, 3) == "\xE2\x96\x81") skip = 3;
    else continue;
    bool letters = p.size() - skip >= 2;
    for (std::size_t i = skip; i < p.size() && letters; ++i) {
      letters = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z');
    }
    if (!letters) continue;
    const tokenizer::TokenId one[1] = {id};
    const auto text = tok.decode(one, true);
    const auto back = tok.encode(text, false);
    if (back.size() == 1 && back[0] == id) out.push_back(id);
  }
  return out;
}

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

std::string hex_id(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 15];
  return s;
}

}  // namespace

class Session;

struct Active {
  std::weak_ptr<Session> session;
  GenerationRequest request;
  ResponseIdentity identity;
  Usage usage;
  int reasoning_tokens = 0;        // the first `reasoning_tokens` outputs are reasoning
  std::uint64_t draw_seed = 0;
  std::string text, reasoning;     // accumulated (non-streaming responses)
  std::string finish_reason = "length";
};

/// How late tokens leave relative to the twin's schedule, in engine (virtual) ms. A host too slow for the
/// time scale shows up here: every measured time is then inflated and the run is not valid.
struct ScheduleLag {
  std::uint64_t tokens = 0;
  double sum_ms = 0, max_ms = 0, last_ms = 0;  // last: the latest token (at the end of a run: its duration error)
  void add(double lag_ms) {
    ++tokens;
    sum_ms += lag_ms;
    max_ms = std::max(max_ms, lag_ms);
    last_ms = lag_ms;
  }
};

struct Server::Impl {
  ServerOptions options;
  ScheduleLag lag_total, lag_window;  // since start / since the last GET /servelab/schedule
  // Admission: a request read while the event loop has been busy for a while (tokenizing a burst of other
  // requests, emitting tokens) may have waited that long in the socket; its arrival is then late in the
  // twin's time. The busy period's length is an upper bound on that wait, tight for a burst sent at once.
  ScheduleLag admission_total, admission_window;
  Clock::time_point busy_since{}, last_work_end{};
  Clock::time_point last_behind_log{};
  Timeline timeline;
  tokenizer::Tokenizer tok;
  std::vector<tokenizer::TokenId> words;
  net::io_context ioc{1};
  tcp::acceptor acceptor{ioc};
  net::steady_timer timer{ioc};
  net::steady_timer accept_timer{ioc};
  Clock::duration accept_backoff{};
  bool accept_failing = false;     // an accept error was logged and accepting has not recovered yet
  bool stopped = false;
  Clock::time_point t0 = Clock::now();
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, Active> active;
  std::set<std::shared_ptr<Session>> sessions;
  std::atomic<std::size_t> stat_sessions{0}, stat_in_flight{0};
  std::atomic<std::uint64_t> stat_accept_errors{0}, stat_handler_errors{0};

  Impl(ServerOptions o, Timeline t, tokenizer::Tokenizer k)
      : options(std::move(o)), timeline(std::move(t)), tok(std::move(k)) {}

  double virtual_now() const {
    return std::chrono::duration<double>(Clock::now() - t0).count() * options.time_scale;
  }
  void schedule();
  void on_timer();
  void emit(std::uint64_t id, int index);
  void emit_token(Active& a, Session& s, std::uint64_t id, int index);
  void record_lag(double t_emit_s);
  /// At the start of a handler: engine ms the loop has been continuously busy (gaps < 0.2 ms) until now.
  double busy_for_ms() {
    const auto now = Clock::now();
    if (now - last_work_end > std::chrono::microseconds(200)) busy_since = now;
    return std::chrono::duration<double>(now - busy_since).count() * options.time_scale * 1e3;
  }
  void work_done() { last_work_end = Clock::now(); }
  std::string schedule_json();
  std::string time_scale_text() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", options.time_scale);
    return buf;
  }
  void accept();
  void on_accept_error(const beast::error_code& ec);
  // Handles a generation request; returns an error or registers the request with the twin.
  // `received_s`: virtual time the request was read (before tokenizing it), its arrival in the twin.
  std::optional<ApiError> generate(const std::shared_ptr<Session>& s, Endpoint ep, const std::string& body,
                                   const std::string& request_id, double received_s);
  void erase_active(std::unordered_map<std::uint64_t, Active>::iterator it) {
    active.erase(it);
    stat_in_flight = active.size();
  }
  void cancel_all(const std::set<std::uint64_t>& ids) {
    for (auto id : ids) {
      if (active.erase(id) > 0) timeline.cancel(id);
    }
    stat_in_flight = active.size();
    schedule();
  }
  void add_session(const std::shared_ptr<Session>& s) {
    sessions.insert(s);
    stat_sessions = sessions.size();
  }
  void remove_session(const std::shared_ptr<Session>& s) {
    sessions.erase(s);
    stat_sessions = sessions.size();
  }
};

namespace {

// Header bytes are ISO-8859-1 as Starlette decodes them (vLLM echoes x-request-id so): each byte becomes
// one code point, written as UTF-8, so the id is valid JSON text whatever the client sent.
std::string latin1_to_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (unsigned char c : bytes) common::utf8_append(out, c);
  return out;
}

// A request path for an error message: printable ASCII kept, any other byte as %XX, at most 200 bytes.
std::string printable_path(std::string_view path) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : path.substr(0, 200)) {
    if (c >= 0x21 && c < 0x7F && c != '%') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

constexpr std::size_t kMaxQueuedRequests = 16;  // pipelined requests waiting for the one in progress
constexpr double kLingerS = 1.0;                // after a final response: how long unread input is drained

}  // namespace

// One HTTP/1.x connection. Requests are read continuously (so a client that hangs up is noticed while its
// request is in flight) and answered one at a time in arrival order; responses are written from an output
// queue so token chunks never interleave.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server::Impl& server)
      : socket_(std::move(socket)), server_(server), read_timer_(socket_.get_executor()) {}

  void start() { read_request(); }
  /// Closes the connection and forgets it: in-flight requests are cancelled in the twin.
  void drop() {
    if (dropped_) return;
    dropped_ = true;
    beast::error_code ec;
    read_timer_.cancel();
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
    auto ids = in_flight_;
    in_flight_.clear();
    server_.cancel_all(ids);
    server_.remove_session(shared_from_this());
  }

  // Raw bytes onto the wire, in order.
  void write(std::string bytes) {
    if (dropped_) return;
    out_.push_back(std::move(bytes));
    if (!writing_) flush();
  }
  void begin_stream() {
    // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
    chunked_ = version_ >= 11;
    if (!chunked_) keep_alive_ = false;
    std::string head = version_ >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
    head += "server: servelab-twin\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n";
    head += "x-servelab-time-scale: " + server_.time_scale_text() + "\r\n";
    if (chunked_) head += "transfer-encoding: chunked\r\n";
    if (!keep_alive_) head += "connection: close\r\n";
    write(head + "\r\n");
  }
  void stream_event(const std::string& event) {
    if (!chunked_) return write(event);
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", event.size());
    write(size + event + "\r\n");
  }
  void end_stream(std::uint64_t id) {
    if (chunked_) write("0\r\n\r\n");
    if (!keep_alive_) close_after_write_ = true;
    finish(id);
  }
  void respond(int status, const std::string& content_type, std::string body) {
    http::response<http::string_body> res{static_cast<http::status>(status), version_ >= 11 ? 11u : 10u};
    res.set(http::field::server, "servelab-twin");
    res.set("x-servelab-time-scale", server_.time_scale_text());
    res.set(http::field::content_type, content_type);
    res.keep_alive(keep_alive_);
    res.body() = std::move(body);
    res.prepare_payload();
    std::ostringstream ss;
    ss << res;
    write(ss.str());
    if (!keep_alive_) close_after_write_ = true;
  }
  void respond_error(const ApiError& e) { respond(e.status, "application/json", error_json(e)); }
  /// The response in progress is complete (immediate ones too): the next queued request may start.
  void finish(std::uint64_t id) {
    in_flight_.erase(id);
    busy_ = false;
    if (close_after_write_) {
      queue_.clear();
      if (!writing_) flush();
      return;
    }
    net::post(socket_.get_executor(), [self = shared_from_this()] { self->process_queue(); });
  }
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

  void read_request() {
    if (stop_reading_ && !reading_ && !watching_ && !dropped_) return watch();
    if (reading_ || dropped_ || close_after_write_ || stop_reading_ || queue_.size() >= kMaxQueuedRequests) return;
    reading_ = true;
    parser_.emplace();
    parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header_bytes));
    parser_->body_limit(server_.options.max_body_bytes);
    phase_ = Phase::kHead;
    arm_read_timer();
    http::async_read_header(socket_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
  }

  // Deadlines: the head of a request must arrive within header_timeout_s while nothing is in progress
  // (an idle keep-alive connection included); its body within body_timeout_s after the head.
  void arm_read_timer() {
    if (!reading_) return;
    if (phase_ == Phase::kHead && (busy_ || !queue_.empty())) {
      read_timer_.cancel();  // a response is streaming: waiting for the next request is not a stall
      return;
    }
    const double s = phase_ == Phase::kHead ? server_.options.header_timeout_s : server_.options.body_timeout_s;
    read_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s)));
    read_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
      if (auto self = w.lock(); self && !ec && self->reading_) self->drop();
    });
  }

  void on_head(beast::error_code ec) {
    if (dropped_) return;
    if (ec) return on_read_error(ec);
    auto& head = parser_->get();
    if (head.version() >= 11 && beast::iequals(head[http::field::expect], "100-continue")) {
      write("HTTP/1.1 100 Continue\r\n\r\n");
    }
    phase_ = Phase::kBody;
    arm_read_timer();
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_body(ec); });
  }

  void on_body(beast::error_code ec) {
    if (dropped_) return;
    struct Done {
      Server::Impl& im;
      ~Done() { im.work_done(); }
    } done{server_};
    const double busy_ms = server_.busy_for_ms();
    reading_ = false;
    read_timer_.cancel();
    if (ec) return on_read_error(ec);
    queue_.push_back({parser_->release(), server_.virtual_now(), busy_ms});
    if (!queue_.back().request.keep_alive()) stop_reading_ = true;  // the last request this connection sends
    process_queue();
    read_request();
  }

  // The client hung up (its requests in flight are cancelled), or sent what is not HTTP.
  void on_read_error(const beast::error_code& ec) {
    reading_ = false;
    read_timer_.cancel();
    const bool too_large = ec == http::error::body_limit;
    const bool bad_head = ec == http::error::header_limit;
    const bool hung_up = ec == http::error::end_of_stream || ec == net::error::eof ||
                         ec == net::error::connection_reset || ec == net::error::operation_aborted ||
                         ec == http::error::partial_message;
    if (hung_up || busy_ || !queue_.empty()) return drop();
    keep_alive_ = false;
    version_ = 11;
    if (too_large) {
      respond_error({413, "RequestEntityTooLarge",
                     "request body exceeds " + std::to_string(server_.options.max_body_bytes) + " bytes", ""});
    } else if (bad_head) {
      respond_error({431, "RequestHeaderFieldsTooLarge",
                     "request head exceeds " + std::to_string(server_.options.max_header_bytes) + " bytes", ""});
    } else {
      respond_error({400, "BadRequestError", "malformed HTTP request: " + ec.message(), ""});
    }
    finish(0);
  }

  void process_queue() {
    while (!busy_ && !queue_.empty() && !dropped_ && !close_after_write_) {
      Pending pending = std::move(queue_.front());
      queue_.pop_front();
      keep_alive_ = pending.request.keep_alive();
      version_ = pending.request.version();
      busy_ = true;
      try {
        handle(pending);
      } catch (const std::exception& e) {
        // No request may end the server: whatever escaped is this request's 500.
        ++server_.stat_handler_errors;
        if (busy_ && in_flight_.empty()) {
          respond_error({500, "InternalServerError", std::string("internal error: ") + e.what(), ""});
          finish(0);
        }
      }
    }
    arm_read_timer();
    read_request();  // resumes reading if the queue had been full
  }

  void handle(const Pending& pending) {
    const auto& req = pending.request;
    const std::string target(req.target());
    const auto path = target.substr(0, target.find('?'));
    const bool get = req.method() == http::verb::get;
    const bool post = req.method() == http::verb::post;
    if (path == "/health") {
      if (!get) return method_not_allowed(path);
      respond(200, "application/json", "");
    } else if (path == "/v1/models") {
      if (!get) return method_not_allowed(path);
      respond(200, "application/json",
              models_json(server_.options.served_models, server_.options.root_model, server_.options.max_model_len,
                          static_cast<std::int64_t>(std::time(nullptr)), server_.options.time_scale));
    } else if (path == "/metrics" && server_.timeline.engine_metrics) {
      if (!get) return method_not_allowed(path);
      respond(200, std::string(kPrometheusContentType),
              render_vllm_metrics(server_.timeline.engine_metrics(), server_.options.served_models.empty()
                                                                        ? std::string()
                                                                        : server_.options.served_models[0],
                                  server_.timeline.spec_decode));
    } else if (path == "/servelab/schedule") {
      if (!get) return method_not_allowed(path);
      respond(200, "application/json", server_.schedule_json());
    } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
      if (!post) return method_not_allowed(path);
      const auto ep = path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions;
      std::string rid;
      if (auto it = req.find("x-request-id"); it != req.end()) rid = latin1_to_utf8(std::string_view(it->value().data(), it->value().size()));
      if (auto err = server_.generate(shared_from_this(), ep, req.body(), rid, pending.received_s)) {
        respond_error(*err);
      } else {
        server_.admission_total.add(pending.busy_ms);
        server_.admission_window.add(pending.busy_ms);
        return;  // the twin's token events produce the response; finish() ends it
      }
    } else {
      respond_error({404, "NotFoundError", "no route for " + printable_path(path), ""});
    }
    finish(0);
  }

  void method_not_allowed(const std::string& path) {
    respond_error({405, "MethodNotAllowed", "method not allowed on " + printable_path(path), ""});
    finish(0);
  }

  void flush() {
    if (dropped_) return;
    if (out_.empty()) {
      writing_ = false;
      if (close_after_write_ && !busy_) linger_close();
      return;
    }
    writing_ = true;
    net::async_write(socket_, net::buffer(out_.front()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (self->dropped_) return;
                       if (ec) return self->drop();
                       self->out_.pop_front();
                       self->flush();
                     });
  }

  // After the last response: stop sending, drain what the client still sends (a rejected body) for at most
  // kLingerS so it reads the response instead of a reset, then close.
  void linger_close() {
    if (lingering_) return;
    lingering_ = true;
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    if (reading_) return drop();
    read_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kLingerS)));
    read_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
      if (auto self = w.lock(); self && !ec) self->drop();
    });
    if (!watching_) watch();
  }
  // Reads and discards: on a connection that sends no further request, notices the client hanging up
  // (its request is cancelled in the twin) and drains a rejected body while lingering.
  void watch() {
    watching_ = true;
    socket_.async_read_some(net::buffer(drain_buf_), [self = shared_from_this()](beast::error_code ec, std::size_t) {
      if (self->dropped_) return;
      if (ec) return self->drop();
      self->watch();
    });
  }

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
  bool busy_ = false;               // a response is in progress
  bool writing_ = false;
  bool keep_alive_ = true;
  bool chunked_ = true;
  bool stop_reading_ = false;       // the client said Connection: close (or HTTP/1.0)
  bool close_after_write_ = false;
  bool lingering_ = false;
  bool watching_ = false;
  bool dropped_ = false;
};

std::optional<ApiError> Server::Impl::generate(const std::shared_ptr<Session>& s, Endpoint ep,
                                               const std::string& body, const std::string& request_id,
                                               double received_s) {
  auto parsed = parse_generation_request(body, ep, options.served_models);
  if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
  auto& req = std::get<GenerationRequest>(parsed);

  int prompt_tokens = 0;
  if (ep == Endpoint::kCompletions && req.prompt_token_ids) {
    prompt_tokens = static_cast<int>(req.prompt_token_ids->size());  // token ids: the prompt as sent
  } else if (ep == Endpoint::kCompletions) {
    prompt_tokens = static_cast<int>(tok.encode(req.prompt, true).size());
  } else {
    chat::RenderOptions ro;
    ro.thinking = req.thinking;
    ro.add_bos = options.chat_bos;
    std::string prompt;
    try {
      prompt = chat::render_deepseek_v32(req.messages, ro);
    } catch (const std::exception& e) {
      return ApiError{400, "BadRequestError", e.what(), "messages"};
    }
    prompt_tokens = static_cast<int>(tok.encode(prompt, false).size());
  }
  const int room = options.max_model_len - prompt_tokens;
  if (room < 1 || (req.max_tokens && *req.max_tokens > room)) {
    const std::int64_t asked = std::int64_t{prompt_tokens} + req.max_tokens.value_or(0);  // 2^31 - 1 + prompt
    return ApiError{400, "BadRequestError",
                    "This model's maximum context length is " + std::to_string(options.max_model_len) +
                        " tokens. However, you requested " + std::to_string(asked) + " tokens (" +
                        std::to_string(prompt_tokens) + " in the messages, " +
                        std::to_string(req.max_tokens.value_or(0)) +
                        " in the completion). Please reduce the length of the messages or completion.",
                    ep == Endpoint::kCompletions ? "prompt" : "messages"};
  }
  // Output length: the request's budget (the twin has no model to emit EOS earlier; see docs), else the
  // server default, else up to the end of the context; never below min_tokens.
  int output_tokens = req.max_tokens.value_or(options.default_max_tokens > 0 ? std::min(options.default_max_tokens, room)
                                                                            : room);
  output_tokens = std::max(output_tokens, std::min(req.min_tokens, room));

  const std::uint64_t id = next_id++;
  Active a;
  a.session = s;
  a.identity.id = std::string(ep == Endpoint::kCompletions ? "cmpl-" : "chatcmpl-") +
                  (request_id.empty() ? hex_id(splitmix64(options.seed ^ id)) : request_id);
  a.identity.model = req.model;
  a.identity.created = static_cast<std::int64_t>(std::time(nullptr));
  a.usage = {prompt_tokens, output_tokens};
  if (options.reasoning_parser && ep == Endpoint::kChatCompletions && req.thinking) {
    a.reasoning_tokens = static_cast<int>(std::floor(options.reasoning_fraction * output_tokens));
  }
  a.draw_seed = req.seed ? splitmix64(*req.seed) : splitmix64(options.seed * 0x100000001B3ull + id);
  a.request = std::move(req);
  const bool stream = a.request.stream;
  // The twin first: if it throws, nothing was registered and the request gets a 500.
  timeline.submit(id, prompt_tokens, output_tokens, received_s);
  active.emplace(id, std::move(a));
  stat_in_flight = active.size();
  s->track(id);
  if (stream) s->begin_stream();
  schedule();
  return std::nullopt;
}

void Server::Impl::emit(std::uint64_t id, int index) {
  auto it = active.find(id);
  if (it == active.end()) return;
  auto s = it->second.session.lock();
  if (!s || s->dropped()) {
    erase_active(it);
    timeline.cancel(id);
    return;
  }
  try {
    emit_token(it->second, *s, id, index);
  } catch (const std::exception& e) {
    // A response that cannot be written ends its own connection, never the server.
    ++stat_handler_errors;
    std::fprintf(stderr, "sim serve: request %llu dropped: %s\n", static_cast<unsigned long long>(id), e.what());
    if (auto again = active.find(id); again != active.end()) erase_active(again);
    s->drop();
  }
}

void Server::Impl::emit_token(Active& a, Session& s, std::uint64_t id, int index) {
  if (index < 0) {  // the engine aborted the request (it needs more KV than one rank holds)
    const ApiError err{500, "InternalServerError",
                       "the engine aborted the request: it needs more KV cache than one rank holds", ""};
    const bool stream = a.request.stream;
    erase_active(active.find(id));
    if (stream) {
      s.stream_event("data: " + error_json(err) + "\n\n");
      s.stream_event(stream_done());
      s.end_stream(id);
    } else {
      s.respond_error(err);
      s.finish(id);
    }
    return;
  }
  const tokenizer::TokenId token =
      words.empty() ? 0 : words[splitmix64(a.draw_seed + static_cast<std::uint64_t>(index)) % words.size()];
  const tokenizer::TokenId one[1] = {token};
  const std::string piece = tok.decode(one, true);
  const bool reasoning = index < a.reasoning_tokens;
  const bool last = index + 1 >= a.usage.completion_tokens;
  const Endpoint ep = a.request.endpoint;
  if (a.request.stream) {
    if (index == 0 && ep == Endpoint::kChatCompletions) {
      StreamDelta role;
      role.role_only = true;
      s.stream_event(stream_chunk(ep, a.identity, role));
    }
    StreamDelta d;
    d.text = piece;
    d.reasoning = reasoning;
    if (last) d.finish_reason = a.finish_reason;
    s.stream_event(stream_chunk(ep, a.identity, d));
    if (last) {
      if (a.request.include_usage) s.stream_event(stream_usage_chunk(ep, a.identity, a.usage));
      s.stream_event(stream_done());
      erase_active(active.find(id));
      s.end_stream(id);
    }
  } else {
    (reasoning ? a.reasoning : a.text) += piece;
    if (last) {
      std::string body = full_response(ep, a.identity, a.text, a.reasoning, a.finish_reason, a.usage);
      erase_active(active.find(id));
      s.respond(200, "application/json", std::move(body));
      s.finish(id);
    }
  }
}

void Server::Impl::schedule() {
  if (stopped) return;
  const double next = timeline.next_event_s();
  if (!std::isfinite(next)) {
    timer.cancel();
    return;
  }
  // Wall seconds from t0, bounded so that the clock arithmetic cannot overflow (~31 years ahead).
  const double wall_s = std::clamp(next / options.time_scale, 0.0, 1e9);
  const auto when = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wall_s));
  timer.expires_at(when);
  timer.async_wait([this](beast::error_code ec) {
    if (!ec) on_timer();
  });
}

void Server::Impl::on_timer() {
  busy_for_ms();
  try {
    timeline.advance_to(virtual_now(), [this](std::uint64_t id, int index, double t_emit) {
      if (index >= 0 && active.count(id)) record_lag(t_emit);
      emit(id, index);
    });
  } catch (const std::exception& e) {
    ++stat_handler_errors;
    std::fprintf(stderr, "sim serve: engine model error: %s\n", e.what());
  }
  schedule();
  work_done();
}

void Server::Impl::record_lag(double t_emit_s) {
  const double lag_ms = std::max(0.0, virtual_now() - t_emit_s) * 1e3;
  lag_total.add(lag_ms);
  lag_window.add(lag_ms);
  // Say so when the host cannot keep up: a token 50 ms of wall time late is far outside timer jitter.
  const double wall_lag_ms = lag_ms / options.time_scale;
  const auto now = Clock::now();
  if (wall_lag_ms > options.behind_warn_wall_ms && now - last_behind_log > std::chrono::seconds(10)) {
    last_behind_log = now;
    std::fprintf(stderr,
                 "servelab sim serve: falling behind the twin's schedule: a token left %.1f ms late in engine time "
                 "(%.1f ms wall) at time scale %g; the host is too slow for this scale and measured times are "
                 "inflated (bench marks such runs invalid)\n",
                 lag_ms, wall_lag_ms, options.time_scale);
    std::fflush(stderr);
  }
}

std::string Server::Impl::schedule_json() {
  auto one = [](const ScheduleLag& l) {
    char buf[200];
    std::snprintf(buf, sizeof buf, "{\"tokens\":%llu,\"lag_sum_ms\":%.6f,\"lag_max_ms\":%.6f,\"lag_last_ms\":%.6f}",
                  static_cast<unsigned long long>(l.tokens), l.sum_ms, l.max_ms, l.last_ms);
    return std::string(buf);
  };
  auto admission = [](const ScheduleLag& l) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"requests\":%llu,\"wait_sum_ms\":%.6f,\"wait_max_ms\":%.6f}",
                  static_cast<unsigned long long>(l.tokens), l.sum_ms, l.max_ms);
    return std::string(buf);
  };
  std::string out = "{\"time_scale\":" + time_scale_text() + ",\"total\":" + one(lag_total) +
                    ",\"window\":" + one(lag_window) + ",\"admission_total\":" + admission(admission_total) +
                    ",\"admission_window\":" + admission(admission_window) + "}";
  lag_window = {};
  admission_window = {};
  return out;
}

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopped || ec == net::error::operation_aborted) return;
    if (ec) return on_accept_error(ec);
    if (accept_failing) {
      std::fprintf(stderr, "sim serve: accepting connections again\n");
      accept_failing = false;
    }
    accept_backoff = {};
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto s = std::make_shared<Session>(std::move(socket), *this);
    add_session(s);
    s->start();
    accept();
  });
}

// accept() failing (EMFILE at the descriptor limit, ENOBUFS, ...) would fail again at once: wait 10 ms,
// doubling up to 1 s while it keeps failing, and say so once per episode.
void Server::Impl::on_accept_error(const beast::error_code& ec) {
  ++stat_accept_errors;
  if (!accept_failing) {
    std::fprintf(stderr, "sim serve: accept failed (%s); retrying with back-off while it fails\n",
                 ec.message().c_str());
    accept_failing = true;
  }
  accept_backoff = std::min<Clock::duration>(std::chrono::seconds(1),
                                             accept_backoff == Clock::duration{} ? std::chrono::milliseconds(10)
                                                                                 : accept_backoff * 2);
  accept_timer.expires_after(accept_backoff);
  accept_timer.async_wait([this](beast::error_code e) {
    if (!e && !stopped) accept();
  });
}

Server::Server(ServerOptions options, Timeline timeline, tokenizer::Tokenizer tokenizer)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(timeline), std::move(tokenizer))) {
  if (impl_->options.served_models.empty()) throw std::invalid_argument("sim serve: no served model name");
  if (!(impl_->options.time_scale > 0)) throw std::invalid_argument("sim serve: --time-scale must be > 0");
  auto& o = impl_->options;
  if (o.max_body_bytes == 0) {
    o.max_body_bytes = std::max<std::size_t>(1u << 20, 32u * static_cast<std::size_t>(std::max(o.max_model_len, 0)));
  }
  if (!(o.header_timeout_s > 0) || !(o.body_timeout_s > 0)) {
    throw std::invalid_argument("sim serve: header and body timeouts must be > 0");
  }
  impl_->words = standalone_word_tokens(impl_->tok);
  if (impl_->words.empty()) throw std::runtime_error("sim serve: the tokenizer has no standalone word tokens");
}

Server::~Server() = default;

unsigned short Server::start() {
  auto& im = *impl_;
  beast::error_code ec;
  const auto address = net::ip::make_address(im.options.host, ec);
  if (ec) throw std::runtime_error("sim serve: bad --host '" + im.options.host + "': " + ec.message());
  const tcp::endpoint ep{address, im.options.port};
  im.acceptor.open(ep.protocol(), ec);
  if (!ec) im.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(ep, ec);
  if (!ec) im.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("sim serve: cannot listen on " + im.options.host + ":" +
                             std::to_string(im.options.port) + ": " + ec.message());
  }
  im.t0 = Clock::now();
  im.accept();
  return im.acceptor.local_endpoint().port();
}

void Server::run() { impl_->ioc.run(); }

void Server::stop() {
  net::post(impl_->ioc, [im = impl_.get()] {
    im->stopped = true;
    beast::error_code ec;
    im->acceptor.close(ec);
    im->timer.cancel();
    im->accept_timer.cancel();
    auto sessions = im->sessions;  // drop() removes each from the set
    for (auto& s : sessions) s->drop();
    im->ioc.stop();
  });
}

ServerStats Server::stats() const {
  ServerStats st;
  st.sessions = impl_->stat_sessions.load();
  st.requests_in_flight = impl_->stat_in_flight.load();
  st.accept_errors = impl_->stat_accept_errors.load();
  st.handler_errors = impl_->stat_handler_errors.load();
  return st;
}

}  // namespace servelab::simserve
