// The scheduled-emission streaming test server (see stream_server.h).
#include "support/stream_server.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>

#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <nlohmann/json.hpp>

namespace servelab::test_support {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using error_code = boost::system::error_code;
using Clock = std::chrono::steady_clock;
using SslStream = asio::ssl::stream<tcp::socket>;

tcp::socket& lowest(tcp::socket& s) {
  return s;
}
tcp::socket& lowest(SslStream& s) {
  return s.next_layer();
}

constexpr const char* kFaultNames[] = {"none",
                                       "bad_json",
                                       "http_500",
                                       "reset",
                                       "close",
                                       "split_events",
                                       "comments",
                                       "partial_utf8",
                                       "crlf",
                                       "no_choices",
                                       "server_error",
                                       "stall",
                                       "malformed_sse",
                                       "no_usage",
                                       "close_delimited",
                                       "multi_event_write",
                                       "close_after_response",
                                       "byte_by_byte"};

Clock::duration secs(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(s));
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// One piece of output: bytes written at `at`; `events` choices events complete with this piece.
struct Piece {
  std::string bytes;
  Clock::time_point at;
  int events = 0;
  bool close_after = false;  // FIN after writing
  bool reset_after = false;  // RST after writing
  bool last = false;         // response complete after writing
};

}  // namespace

const char* fault_name(Fault fault) {
  return kFaultNames[static_cast<int>(fault)];
}

Fault fault_from_name(std::string_view name) {
  for (std::size_t i = 0; i < std::size(kFaultNames); ++i) {
    if (name == kFaultNames[i]) return static_cast<Fault>(i);
  }
  throw std::invalid_argument("unknown test-server fault '" + std::string(name) + "'");
}

struct StreamServer::Impl {
  StreamServerOptions options;
  mutable std::mutex mu;
  std::vector<Emission> log;
  std::atomic<std::size_t> received{0};
  std::atomic<std::size_t> accepted{0};
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
  std::unique_ptr<tcp::acceptor> acceptor;
  std::unique_ptr<asio::ssl::context> ssl;  // with StreamServerOptions::tls
  std::vector<std::thread> threads;
  std::size_t next_io = 0;
  std::uint16_t port = 0;
  bool stopped = false;

  void accept();
  void commit(Emission&& e) {
    if (!options.log_emissions) return;
    std::lock_guard lock(mu);
    log.push_back(std::move(e));
  }
};

namespace {

// Per-response plan, from the server options and the request's headers/body.
struct Plan {
  bool chat = false;
  Fault fault = Fault::kNone;
  double ttft_s = 0, itl_s = 0;
  int tokens = 16;
  int prompt_tokens = 0;
  bool usage = true;
  std::string id;
  std::string body;
};

template <class Stream>
class Session : public std::enable_shared_from_this<Session<Stream>> {
 public:
  Session(StreamServer::Impl* srv, Stream stream)
      : srv_(srv), sock_(std::move(stream)), timer_(sock_.get_executor()) {
    error_code ignored;
    lowest(sock_).set_option(tcp::no_delay(true), ignored);
  }
  ~Session() {
    if (logging_) srv_->commit(std::move(emission_));
  }

  void start() {
    if constexpr (std::is_same_v<Stream, SslStream>) {
      sock_.async_handshake(asio::ssl::stream_base::server,
                            [self = this->shared_from_this()](const error_code& ec) {
                              if (!ec) self->read();
                            });
    } else {
      read();
    }
  }

 private:
  void read() {
    if (in_.size() - used_ < 4096) in_.resize(std::max<std::size_t>(in_.size() * 2, 8192));
    sock_.async_read_some(asio::buffer(in_.data() + used_, in_.size() - used_),
                          [self = this->shared_from_this()](const error_code& ec, std::size_t n) {
                            if (ec) return;  // client closed: session ends
                            self->used_ += n;
                            self->on_bytes();
                          });
  }

  void on_bytes() {
    const std::string_view data(in_.data(), used_);
    const std::size_t head_end = data.find("\r\n\r\n");
    if (head_end == std::string_view::npos) return read();
    std::size_t content_length = 0;
    std::string_view head = data.substr(0, head_end);
    std::string path, request_id, fault_header, ttft_ms, itl_ms, tokens_header;
    {
      const std::size_t line_end = head.find("\r\n");
      const std::string_view request_line = head.substr(0, line_end);
      const std::size_t sp1 = request_line.find(' ');
      const std::size_t sp2 = request_line.find(' ', sp1 + 1);
      path = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
      std::size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2;
      while (pos < head.size()) {
        std::size_t eol = head.find("\r\n", pos);
        if (eol == std::string_view::npos) eol = head.size();
        const std::string_view line = head.substr(pos, eol - pos);
        const std::size_t colon = line.find(':');
        if (colon != std::string_view::npos) {
          const std::string name = lower(line.substr(0, colon));
          std::string_view value = line.substr(colon + 1);
          while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
          if (name == "content-length") content_length = std::stoul(std::string(value));
          if (name == "x-request-id") request_id = std::string(value);
          if (name == "x-test-fault") fault_header = std::string(value);
          if (name == "x-test-ttft-ms") ttft_ms = std::string(value);
          if (name == "x-test-itl-ms") itl_ms = std::string(value);
          if (name == "x-test-tokens") tokens_header = std::string(value);
        }
        pos = eol + 2;
      }
    }
    const std::size_t total = head_end + 4 + content_length;
    if (used_ < total) return read();
    const std::string body(data.substr(head_end + 4, content_length));
    std::memmove(in_.data(), in_.data() + total, used_ - total);
    used_ -= total;
    srv_->received.fetch_add(1, std::memory_order_relaxed);

    const StreamServerOptions& o = srv_->options;
    Plan plan;
    plan.chat = path.find("chat/completions") != std::string::npos;
    plan.fault = fault_header.empty() ? o.fault : fault_from_name(fault_header);
    plan.ttft_s = ttft_ms.empty() ? o.ttft_s : std::stod(ttft_ms) / 1000.0;
    plan.itl_s = itl_ms.empty() ? o.itl_s : std::stod(itl_ms) / 1000.0;
    plan.id = request_id;
    plan.body = body;
    int max_tokens = 16;
    try {
      const auto j = nlohmann::json::parse(body);
      if (j.contains("max_tokens")) max_tokens = j["max_tokens"].get<int>();
      if (j.contains("max_completion_tokens")) max_tokens = j["max_completion_tokens"].get<int>();
      plan.usage = j.value("/stream_options/include_usage"_json_pointer, false);
      if (j.contains("prompt") && j["prompt"].is_string()) {
        plan.prompt_tokens = static_cast<int>(j["prompt"].get_ref<const std::string&>().size());
      } else if (j.contains("prompt") && j["prompt"].is_array()) {
        plan.prompt_tokens = static_cast<int>(j["prompt"].size());
      } else {
        plan.prompt_tokens = static_cast<int>(j.value("messages", nlohmann::json::array()).dump().size());
      }
    } catch (const std::exception&) {
      plan.fault = Fault::kHttp500;  // unparsable request: answer like a server would
    }
    plan.tokens =
        tokens_header.empty() ? (o.num_tokens >= 0 ? o.num_tokens : max_tokens) : std::stoi(tokens_header);
    begin_response(plan);
  }

  std::string event(int chunk, int tokens_in_chunk, int tokens_so_far, bool last_chunk) const {
    const StreamServerOptions& o = srv_->options;
    std::string text;
    const bool utf8 = plan_.fault == Fault::kPartialUtf8;
    for (int t = 0; t < tokens_in_chunk; ++t)
      text += utf8 ? "\xC3\xA9\xE4\xB8\x96\xF0\x9F\x99\x82" : o.token_text;
    std::string usage = "null";
    if (o.continuous_usage) {
      usage = "{\"prompt_tokens\":" + std::to_string(plan_.prompt_tokens) +
              ",\"total_tokens\":" + std::to_string(plan_.prompt_tokens + tokens_so_far) +
              ",\"completion_tokens\":" + std::to_string(tokens_so_far) + "}";
    }
    const char* finish = last_chunk ? "\"length\"" : "null";
    if (!plan_.chat) {
      return "{\"id\":\"cmpl-" + plan_.id +
             "\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\","
             "\"choices\":[{\"index\":0,\"text\":\"" +
             text + "\",\"logprobs\":null,\"finish_reason\":" + finish +
             ",\"stop_reason\":null}],\"usage\":" + usage + "}";
    }
    const bool reasoning = chunk < o.reasoning_tokens;
    const std::string delta =
        reasoning ? "{\"reasoning_content\":\"" + text + "\"}" : "{\"content\":\"" + text + "\"}";
    return "{\"id\":\"chatcmpl-" + plan_.id +
           "\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
           "\"choices\":[{\"index\":0,\"delta\":" +
           delta + ",\"logprobs\":null,\"finish_reason\":" + finish + "}],\"usage\":" + usage + "}";
  }

  std::string role_event() const {
    return "{\"id\":\"chatcmpl-" + plan_.id +
           "\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\","
           "\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
           "\"finish_reason\":null}]}";
  }

  std::string sse(const std::string& json) const {
    return plan_.fault == Fault::kCrlf ? "data: " + json + "\r\n\r\n" : "data: " + json + "\n\n";
  }

  // HTTP chunk framing unless the body is close-delimited.
  std::string frame(const std::string& payload) const {
    if (plan_.fault == Fault::kCloseDelimited || payload.empty()) return payload;
    char hex[24];
    std::snprintf(hex, sizeof hex, "%zx\r\n", payload.size());
    return hex + payload + "\r\n";
  }

  void begin_response(const Plan& plan) {
    plan_ = plan;
    emission_ = Emission{plan.id, Clock::now(), {}, plan.body};
    logging_ = true;
    const Clock::time_point t0 = emission_.received;
    pieces_.clear();
    next_chunk_ = 0;
    if (plan.fault == Fault::kStall) return read();  // never answers; waits for the client to go
    if (plan.fault == Fault::kHttp500) {
      const std::string body =
          "{\"object\":\"error\",\"message\":\"test server: internal "
          "error\",\"type\":\"InternalServerError\","
          "\"param\":null,\"code\":500}";
      pieces_.push_back(
          {"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
           "Content-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body,
           t0, 0, false, false, true});
      return pump();
    }
    std::string head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\n";
    head += plan.fault == Fault::kCloseDelimited ? "Connection: close\r\n\r\n"
                                                 : "Transfer-Encoding: chunked\r\n\r\n";
    pieces_.push_back({head, t0, 0});
    pump();
  }

  // Appends the pieces of the next chunk (or the tail) to the queue. Returns false when done.
  bool plan_next() {
    const StreamServerOptions& o = srv_->options;
    const int tpc = std::max(1, o.tokens_per_chunk);
    const int chunks = plan_.fault == Fault::kNoChoices ? 0 : (plan_.tokens + tpc - 1) / tpc;
    const Clock::time_point t0 = emission_.received;
    if (next_chunk_ > chunks) return false;
    const int j = next_chunk_++;
    const Clock::time_point at = t0 + secs(plan_.ttft_s + std::max(0, j) * plan_.itl_s);
    const Clock::time_point tail_at = t0 + secs(plan_.ttft_s + std::max(0, chunks - 1) * plan_.itl_s);
    if (j == chunks) {  // tail: usage, [DONE], terminating chunk
      std::string tail;
      if (plan_.usage && plan_.fault != Fault::kNoUsage) {
        const std::string usage = "{\"prompt_tokens\":" + std::to_string(plan_.prompt_tokens) +
                                  ",\"total_tokens\":" + std::to_string(plan_.prompt_tokens + plan_.tokens) +
                                  ",\"completion_tokens\":" + std::to_string(plan_.tokens) + "}";
        tail += sse(std::string("{\"id\":\"x\",\"object\":\"") +
                    (plan_.chat ? "chat.completion.chunk" : "text_completion") +
                    "\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":" + usage + "}");
      }
      tail += sse("[DONE]");
      Piece p{frame(tail), chunks == 0 ? t0 + secs(plan_.ttft_s) : tail_at, 0};
      if (plan_.fault == Fault::kCloseDelimited) {
        p.close_after = true;
      } else {
        p.bytes += "0\r\n\r\n";
      }
      p.last = true;
      if (plan_.fault == Fault::kMultiEventWrite) {
        multi_.bytes += p.bytes;
        multi_.at = p.at;
        multi_.last = true;
        pieces_.push_back(std::move(multi_));
        multi_ = Piece{};
      } else {
        pieces_.push_back(std::move(p));
      }
      return true;
    }
    const int tokens_in_chunk = std::min(tpc, plan_.tokens - j * tpc);
    const int tokens_so_far = j * tpc + tokens_in_chunk;
    const bool at_fault = j == o.fault_after_tokens;
    if (at_fault && plan_.fault == Fault::kReset) {
      pieces_.push_back({"", at, 0, false, true, true});
      return true;
    }
    if (at_fault && plan_.fault == Fault::kClose) {
      pieces_.push_back({"", at, 0, true, false, true});
      return true;
    }
    std::string payload;
    int events = 1;
    if (at_fault && plan_.fault == Fault::kBadJson) {
      payload = "data: {\"choices\": [{\"text\": \"broken\"\n\n";
      events = 0;
    } else if (at_fault && plan_.fault == Fault::kServerError) {
      payload =
          sse("{\"error\":{\"object\":\"error\",\"message\":\"test server: engine died\","
              "\"type\":\"InternalServerError\",\"code\":500}}");
      events = 0;
    } else if (at_fault && plan_.fault == Fault::kMalformedSse) {
      payload = "garbage line without a field\n\n";
      events = 0;
    } else {
      if (plan_.chat && j == 0) {
        payload += sse(role_event());
        ++events;
      }
      if (plan_.fault == Fault::kComments)
        payload += ": ping\n\nevent: message\nid: " + std::to_string(j) + "\n";
      payload += sse(event(j, tokens_in_chunk, tokens_so_far, j == chunks - 1));
    }
    if (plan_.fault == Fault::kSplitEvents) {
      // Three HTTP chunks, 1 ms apart: "da" | "ta: {...half" | "rest\n\n".
      const std::size_t a = std::min<std::size_t>(2, payload.size());
      const std::size_t b = a + (payload.size() - a) / 2;
      pieces_.push_back({frame(payload.substr(0, a)), at, 0});
      pieces_.push_back({frame(payload.substr(a, b - a)), at + std::chrono::milliseconds(1), 0});
      pieces_.push_back({frame(payload.substr(b)), at + std::chrono::milliseconds(2), events});
    } else if (plan_.fault == Fault::kPartialUtf8) {
      // One HTTP chunk written in two socket writes split inside the 4-byte emoji.
      const std::string framed = frame(payload);
      const std::size_t cut = framed.find("\xF0\x9F") + 2;
      pieces_.push_back({framed.substr(0, cut), at, 0});
      pieces_.push_back({framed.substr(cut), at + std::chrono::milliseconds(1), events});
    } else if (plan_.fault == Fault::kMultiEventWrite) {
      multi_.bytes += frame(payload);
      multi_.events += events;
    } else {
      pieces_.push_back({frame(payload), at, events});
    }
    return true;
  }

  void pump() {
    for (;;) {
      if (pieces_.empty() && !plan_next()) return;
      if (pieces_.empty()) continue;
      Piece& p = pieces_.front();
      if (Clock::now() < p.at) {
        timer_.expires_at(p.at);
        timer_.async_wait([self = this->shared_from_this()](const error_code& ec) {
          if (!ec) self->pump();
        });
        return;
      }
      const Clock::time_point stamp = Clock::now();
      error_code ec;
      if (plan_.fault == Fault::kByteByByte && p.bytes.size() > 1) {
        asio::write(sock_, asio::buffer(p.bytes.data(), 1), ec);
        if (ec) return;
        p.bytes.erase(0, 1);
        p.at = stamp + std::chrono::microseconds(20);
        continue;
      }
      // Log before writing: the client may finish (and a test read the log) as soon as the bytes land.
      for (int e = 0; e < p.events; ++e) emission_.chunk_times.push_back(stamp);
      const bool last = p.last;
      if (last) {
        srv_->commit(std::move(emission_));
        logging_ = false;
      }
      if (!p.bytes.empty()) asio::write(sock_, asio::buffer(p.bytes), ec);
      if (ec) return;  // client went away
      if (p.reset_after) {
        lowest(sock_).set_option(asio::socket_base::linger(true, 0), ec);
        lowest(sock_).close(ec);
        return;
      }
      if (p.close_after) {
        lowest(sock_).shutdown(tcp::socket::shutdown_send, ec);
        lowest(sock_).close(ec);
        return;
      }
      pieces_.pop_front();
      if (last && plan_.fault == Fault::kCloseAfterResponse) {
        lowest(sock_).shutdown(tcp::socket::shutdown_both, ec);
        lowest(sock_).close(ec);
        return;
      }
      if (last) {
        // Keep-alive: serve the next request on this connection.
        if (used_ > 0) return on_bytes();
        return read();
      }
    }
  }

  StreamServer::Impl* srv_;
  Stream sock_;
  asio::steady_timer timer_;
  std::vector<char> in_;
  std::size_t used_ = 0;
  Plan plan_;
  Emission emission_;
  bool logging_ = false;
  std::deque<Piece> pieces_;
  Piece multi_;
  int next_chunk_ = 0;
};

}  // namespace

// A TLS server context with a fresh self-signed P-256 certificate for `host` (CN and SAN).
static std::unique_ptr<asio::ssl::context> make_self_signed_context(const std::string& host) {
  auto ctx = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_server);
  EVP_PKEY* key = EVP_EC_gen("P-256");
  X509* cert = X509_new();
  if (!key || !cert) throw std::runtime_error("stream server: cannot create a TLS key/certificate");
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), 1);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(host.c_str()),
                             -1, -1, 0);
  X509_set_issuer_name(cert, name);
  X509V3_CTX v3;
  X509V3_set_ctx_nodb(&v3);
  X509V3_set_ctx(&v3, cert, cert, nullptr, nullptr, 0);
  const bool is_ip = host.find_first_not_of("0123456789.") == std::string::npos;
  const std::string san = (is_ip ? "IP:" : "DNS:") + host;
  if (X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &v3, NID_subject_alt_name, san.c_str())) {
    X509_add_ext(cert, ext, -1);
    X509_EXTENSION_free(ext);
  }
  X509_sign(cert, key, EVP_sha256());
  SSL_CTX_use_certificate(ctx->native_handle(), cert);
  SSL_CTX_use_PrivateKey(ctx->native_handle(), key);
  X509_free(cert);
  EVP_PKEY_free(key);
  return ctx;
}

void StreamServer::Impl::accept() {
  asio::io_context& target = *ios[next_io];
  next_io = (next_io + 1) % ios.size();
  acceptor->async_accept(target, [this](const error_code& ec, tcp::socket sock) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) {
      accepted.fetch_add(1, std::memory_order_relaxed);
      if (ssl) {
        std::make_shared<Session<SslStream>>(this, SslStream(std::move(sock), *ssl))->start();
      } else {
        std::make_shared<Session<tcp::socket>>(this, std::move(sock))->start();
      }
    }
    accept();  // on EMFILE etc. keep accepting
  });
}

StreamServer::StreamServer(StreamServerOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
  if (impl_->options.tls) impl_->ssl = make_self_signed_context(impl_->options.host);
  const int threads = std::max(1, impl_->options.threads);
  for (int i = 0; i < threads; ++i) {
    impl_->ios.push_back(std::make_unique<asio::io_context>(1));
    impl_->guards.push_back(asio::make_work_guard(*impl_->ios.back()));
  }
  try {
    const auto address = asio::ip::make_address(impl_->options.host);
    const tcp::endpoint ep(address, impl_->options.port);
    impl_->acceptor = std::make_unique<tcp::acceptor>(*impl_->ios[0]);
    impl_->acceptor->open(ep.protocol());
    impl_->acceptor->set_option(asio::socket_base::reuse_address(true));
    impl_->acceptor->bind(ep);
    impl_->acceptor->listen(asio::socket_base::max_listen_connections);
    impl_->port = impl_->acceptor->local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error("stream server: cannot listen on " + impl_->options.host + ":" +
                             std::to_string(impl_->options.port) + ": " + e.what());
  }
  impl_->accept();
  for (auto& io : impl_->ios) {
    impl_->threads.emplace_back([ioc = io.get()] { ioc->run(); });
  }
}

StreamServer::~StreamServer() {
  stop();
}

void StreamServer::stop() {
  if (impl_->stopped) return;
  impl_->stopped = true;
  for (auto& io : impl_->ios) io->stop();
  for (auto& t : impl_->threads) t.join();
  impl_->acceptor.reset();
  impl_->guards.clear();
  for (auto& io : impl_->ios) io.reset();  // destroys sessions (their logs are committed)
}

std::uint16_t StreamServer::port() const {
  return impl_->port;
}

std::string StreamServer::url(std::string_view path) const {
  return (impl_->options.tls ? "https://" : "http://") + impl_->options.host + ":" +
         std::to_string(impl_->port) + std::string(path);
}

std::vector<Emission> StreamServer::emissions() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}

std::size_t StreamServer::requests_received() const {
  return impl_->received.load();
}

std::size_t StreamServer::connections_accepted() const {
  return impl_->accepted.load();
}

}  // namespace servelab::test_support
