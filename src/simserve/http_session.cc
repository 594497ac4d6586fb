// One HTTP/1.x connection of `sim serve`: reading requests (deadlines, limits, pipelining), routing them,
// and writing responses and SSE streams. See http_session.h.
#include "simserve/http_session.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <sstream>
#include <string_view>

#include "servelab/common/utf8.h"
#include "simserve/metrics_text.h"

namespace servelab::simserve::detail {
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

void Session::drop() {
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

void Session::write(std::string bytes) {
  if (dropped_) return;
  out_.push_back(std::move(bytes));
  if (!writing_) flush();
}

void Session::begin_stream() {
  // HTTP/1.0 has no chunked encoding: the body ends when the connection closes.
  chunked_ = version_ >= 11;
  if (!chunked_) keep_alive_ = false;
  std::string head = version_ >= 11 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n";
  head +=
      "server: servelab-twin\r\ncontent-type: text/event-stream; charset=utf-8\r\ncache-control: "
      "no-cache\r\n";
  head += "x-servelab-time-scale: " + server_.time_scale_text() + "\r\n";
  if (chunked_) head += "transfer-encoding: chunked\r\n";
  if (!keep_alive_) head += "connection: close\r\n";
  write(head + "\r\n");
}

void Session::stream_event(const std::string& event) {
  if (!chunked_) return write(event);
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", event.size());
  write(size + event + "\r\n");
}

void Session::end_stream(std::uint64_t id) {
  if (chunked_) write("0\r\n\r\n");
  if (!keep_alive_) close_after_write_ = true;
  finish(id);
}

void Session::respond(int status, const std::string& content_type, std::string body) {
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

void Session::finish(std::uint64_t id) {
  in_flight_.erase(id);
  busy_ = false;
  if (close_after_write_) {
    queue_.clear();
    if (!writing_) flush();
    return;
  }
  net::post(socket_.get_executor(), [self = shared_from_this()] { self->process_queue(); });
}

void Session::read_request() {
  if (stop_reading_ && !reading_ && !watching_ && !dropped_) return watch();
  if (reading_ || dropped_ || close_after_write_ || stop_reading_ || queue_.size() >= kMaxQueuedRequests)
    return;
  reading_ = true;
  parser_.emplace();
  parser_->header_limit(static_cast<std::uint32_t>(server_.options.max_header_bytes));
  parser_->body_limit(server_.options.max_body_bytes);
  phase_ = Phase::kHead;
  arm_read_timer();
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_head(ec); });
}

void Session::arm_read_timer() {
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

void Session::on_head(beast::error_code ec) {
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

void Session::on_body(beast::error_code ec) {
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

void Session::on_read_error(const beast::error_code& ec) {
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
                   "request head exceeds " + std::to_string(server_.options.max_header_bytes) + " bytes",
                   ""});
  } else {
    respond_error({400, "BadRequestError", "malformed HTTP request: " + ec.message(), ""});
  }
  finish(0);
}

void Session::process_queue() {
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

void Session::handle(const Pending& pending) {
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
    respond(
        200, "application/json",
        models_json(server_.options.served_models, server_.options.root_model, server_.options.max_model_len,
                    static_cast<std::int64_t>(std::time(nullptr)), server_.options.time_scale));
  } else if (path == "/metrics" && server_.timeline.engine_metrics) {
    if (!get) return method_not_allowed(path);
    respond(200, std::string(kPrometheusContentType),
            render_vllm_metrics(
                server_.timeline.engine_metrics(),
                server_.options.served_models.empty() ? std::string() : server_.options.served_models[0],
                server_.timeline.spec_decode));
  } else if (path == "/servelab/schedule") {
    if (!get) return method_not_allowed(path);
    respond(200, "application/json", server_.schedule_json());
  } else if (path == "/v1/completions" || path == "/v1/chat/completions") {
    if (!post) return method_not_allowed(path);
    const auto ep = path == "/v1/completions" ? Endpoint::kCompletions : Endpoint::kChatCompletions;
    std::string rid;
    if (auto it = req.find("x-request-id"); it != req.end())
      rid = latin1_to_utf8(std::string_view(it->value().data(), it->value().size()));
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

void Session::method_not_allowed(const std::string& path) {
  respond_error({405, "MethodNotAllowed", "method not allowed on " + printable_path(path), ""});
  finish(0);
}

void Session::flush() {
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

void Session::linger_close() {
  if (lingering_) return;
  lingering_ = true;
  beast::error_code ec;
  socket_.shutdown(tcp::socket::shutdown_send, ec);
  if (reading_) return drop();
  read_timer_.expires_after(
      std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kLingerS)));
  read_timer_.async_wait([w = weak_from_this()](beast::error_code ec) {
    if (auto self = w.lock(); self && !ec) self->drop();
  });
  if (!watching_) watch();
}

void Session::watch() {
  watching_ = true;
  socket_.async_read_some(net::buffer(drain_buf_),
                          [self = shared_from_this()](beast::error_code ec, std::size_t) {
                            if (self->dropped_) return;
                            if (ec) return self->drop();
                            self->watch();
                          });
}

}  // namespace servelab::simserve::detail
