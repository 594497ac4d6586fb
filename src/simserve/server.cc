// The `sim serve` HTTP server: Boost.Beast on one event-loop thread. Requests are validated and
// tokenized here, then handed to the twin's Timeline; a single timer wakes the loop at the next predicted
// token emission and streams each token as an SSE chunk at that moment.
#include "simserve/server.h"

#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without including it
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

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
  Clock::time_point t0 = Clock::now();
  std::uint64_t next_id = 1;
  std::unordered_map<std::uint64_t, Active> active;
  std::set<std::shared_ptr<Session>> sessions;

  Impl(ServerOptions o, Timeline t, tokenizer::Tokenizer k)
      : options(std::move(o)), timeline(std::move(t)), tok(std::move(k)) {}

  double virtual_now() const {
    return std::chrono::duration<double>(Clock::now() - t0).count() * options.time_scale;
  }
  void schedule();
  void on_timer();
  void emit(std::uint64_t id, int index);
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
  // Handles a generation request; returns an error or registers the request with the twin.
  // `received_s`: virtual time the request was read (before tokenizing it), its arrival in the twin.
  std::optional<ApiError> generate(const std::shared_ptr<Session>& s, Endpoint ep, const std::string& body,
                                   const std::string& request_id, double received_s);
  void cancel_all(const std::set<std::uint64_t>& ids) {
    for (auto id : ids) {
      if (active.erase(id) > 0) timeline.cancel(id);
    }
    schedule();
  }
};

// One HTTP/1.1 connection. Responses are written from an output queue so token chunks never interleave.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server::Impl& server) : socket_(std::move(socket)), server_(server) {}

  void start() { read(); }
  void close() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_both, ec);
    socket_.close(ec);
  }

  // Raw bytes onto the wire, in order.
  void write(std::string bytes) {
    out_.push_back(std::move(bytes));
    if (!writing_) flush();
  }
  void begin_stream() {
    write("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: no-cache\r\n"
          "x-servelab-time-scale: " + server_.time_scale_text() + "\r\ntransfer-encoding: chunked\r\n\r\n");
  }
  void stream_event(const std::string& event) {
    char size[32];
    std::snprintf(size, sizeof size, "%zx\r\n", event.size());
    write(size + event + "\r\n");
  }
  void end_stream(std::uint64_t id) {
    write("0\r\n\r\n");
    finish(id);
  }
  void respond(int status, const std::string& content_type, std::string body) {
    http::response<http::string_body> res{static_cast<http::status>(status), 11};
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
  void finish(std::uint64_t id) {
    in_flight_.erase(id);
    if (!close_after_write_) read();
  }
  void track(std::uint64_t id) { in_flight_.insert(id); }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.max_body_bytes);
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

  void on_read(beast::error_code ec) {
    struct Done {
      Server::Impl& im;
      ~Done() { im.work_done(); }
    } done{server_};
    const double busy_ms = server_.busy_for_ms();
    const double received_s = server_.virtual_now();
    if (ec == http::error::body_limit) {
      keep_alive_ = false;
      respond_error({413, "RequestEntityTooLarge",
                     "request body exceeds " + std::to_string(server_.options.max_body_bytes) + " bytes", ""});
      return;
    }
    if (ec) return drop();
    auto req = parser_->release();
    keep_alive_ = req.keep_alive();
    const std::string target(req.target());
    const auto path = target.substr(0, target.find('?'));
    const bool get = req.method() == http::verb::get;
    const bool post = req.method() == http::verb::post;
    if (path == "/health") {
      if (!get) return method_not_allowed(path), read_next();
      respond(200, "application/json", "");
    } else if (path == "/v1/models") {
      if (!get) return method_not_allowed(path), read_next();
      std::vector<std::string> names = server_.options.served_models;
      respond(200, "application/json",
              models_json(names, server_.options.root_model, server_.options.max_model_len,
                          static_cast<std::int64_t>(std::time(nullptr)), server_.options.time_scale));
    } else if (path == "/servelab/schedule") {
      if (!get) return method_not_allowed(path), read_next();
      respond(200, "application/json", server_.schedule_json());
    } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
      if (!post) return method_not_allowed(path), read_next();
      const auto ep = path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions;
      std::string rid;
      if (auto it = req.find("x-request-id"); it != req.end()) rid = std::string(it->value());
      if (auto err = server_.generate(shared_from_this(), ep, req.body(), rid, received_s)) {
        respond_error(*err);
      } else {
        server_.admission_total.add(busy_ms);
        server_.admission_window.add(busy_ms);
        return;  // the response is produced by the twin's token events; next read after it finishes
      }
    } else {
      respond_error({404, "NotFoundError", "no route for " + path, ""});
    }
    read_next();
  }

  void method_not_allowed(const std::string& path) {
    respond_error({405, "MethodNotAllowed", "method not allowed on " + path, ""});
  }
  void read_next() {
    if (!close_after_write_) read();
  }

  void flush() {
    if (out_.empty()) {
      writing_ = false;
      if (close_after_write_) close();
      return;
    }
    writing_ = true;
    net::async_write(socket_, net::buffer(out_.front()),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->drop();
                       self->out_.pop_front();
                       self->flush();
                     });
  }

  void drop() {
    if (dropped_) return;
    dropped_ = true;
    close();
    auto ids = in_flight_;
    in_flight_.clear();
    server_.cancel_all(ids);
    server_.sessions.erase(shared_from_this());
  }

  tcp::socket socket_;
  Server::Impl& server_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  std::deque<std::string> out_;
  std::set<std::uint64_t> in_flight_;
  bool writing_ = false;
  bool keep_alive_ = true;
  bool close_after_write_ = false;
  bool dropped_ = false;
};

std::optional<ApiError> Server::Impl::generate(const std::shared_ptr<Session>& s, Endpoint ep,
                                               const std::string& body, const std::string& request_id,
                                               double received_s) {
  auto parsed = parse_generation_request(body, ep, options.served_models);
  if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
  auto& req = std::get<GenerationRequest>(parsed);

  int prompt_tokens = 0;
  if (ep == Endpoint::kCompletions) {
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
    const int asked = prompt_tokens + req.max_tokens.value_or(0);
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
  active.emplace(id, std::move(a));
  s->track(id);
  if (stream) s->begin_stream();
  timeline.submit(id, prompt_tokens, output_tokens, received_s);
  schedule();
  return std::nullopt;
}

void Server::Impl::emit(std::uint64_t id, int index) {
  auto it = active.find(id);
  if (it == active.end()) return;
  Active& a = it->second;
  auto s = a.session.lock();
  if (!s) {
    active.erase(it);
    timeline.cancel(id);
    return;
  }
  if (index < 0) {  // the engine aborted the request (it needs more KV than one rank holds)
    const ApiError err{500, "InternalServerError",
                       "the engine aborted the request: it needs more KV cache than one rank holds", ""};
    if (a.request.stream) {
      s->stream_event("data: " + error_json(err) + "\n\n");
      s->stream_event(stream_done());
      active.erase(it);
      s->end_stream(id);
    } else {
      s->respond_error(err);
      active.erase(it);
      s->finish(id);
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
      s->stream_event(stream_chunk(ep, a.identity, role));
    }
    StreamDelta d;
    d.text = piece;
    d.reasoning = reasoning;
    if (last) d.finish_reason = a.finish_reason;
    s->stream_event(stream_chunk(ep, a.identity, d));
    if (last) {
      if (a.request.include_usage) s->stream_event(stream_usage_chunk(ep, a.identity, a.usage));
      s->stream_event(stream_done());
      active.erase(it);
      s->end_stream(id);
    }
  } else {
    (reasoning ? a.reasoning : a.text) += piece;
    if (last) {
      s->respond(200, "application/json",
                 full_response(ep, a.identity, a.text, a.reasoning, a.finish_reason, a.usage));
      active.erase(it);
      s->finish(id);
    }
  }
}

void Server::Impl::schedule() {
  const double next = timeline.next_event_s();
  if (!std::isfinite(next)) {
    timer.cancel();
    return;
  }
  const auto when = t0 + std::chrono::duration_cast<Clock::duration>(
                             std::chrono::duration<double>(next / options.time_scale));
  timer.expires_at(when);
  timer.async_wait([this](beast::error_code ec) {
    if (!ec) on_timer();
  });
}

void Server::Impl::on_timer() {
  busy_for_ms();
  timeline.advance_to(virtual_now(), [this](std::uint64_t id, int index, double t_emit) {
    if (index >= 0 && active.count(id)) record_lag(t_emit);
    emit(id, index);
  });
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
    if (ec) {
      if (ec == net::error::operation_aborted) return;
    } else {
      socket.set_option(tcp::no_delay(true));
      auto s = std::make_shared<Session>(std::move(socket), *this);
      sessions.insert(s);
      s->start();
    }
    accept();
  });
}

Server::Server(ServerOptions options, Timeline timeline, tokenizer::Tokenizer tokenizer)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(timeline), std::move(tokenizer))) {
  if (impl_->options.served_models.empty()) throw std::invalid_argument("sim serve: no served model name");
  if (!(impl_->options.time_scale > 0)) throw std::invalid_argument("sim serve: --time-scale must be > 0");
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
    beast::error_code ec;
    im->acceptor.close(ec);
    im->timer.cancel();
    for (auto& s : im->sessions) s->close();
    im->sessions.clear();
    im->ioc.stop();
  });
}

}  // namespace servelab::simserve
