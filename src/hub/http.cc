// servelab/hub private: a blocking HTTP(S) request with Boost.Beast, the body streamed to a sink.
#include "hub/http.h"

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>
#include <optional>
#include "servelab/common/text.h"

namespace servelab::hub::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

std::chrono::steady_clock::duration seconds(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

/// Runs the asynchronous operation `start` begins on `ioc` to completion; its error code, or timed_out when
/// the stream's timer cancelled it.
template <class Start>
beast::error_code run_op(asio::io_context& ioc, Start&& start) {
  beast::error_code ec;
  bool done = false;
  start([&](beast::error_code e, auto&&...) {
    ec = e;
    done = true;
  });
  ioc.restart();
  ioc.run();
  if (!done) return asio::error::timed_out;
  return ec;
}

std::string describe(const beast::error_code& ec) {
  if (ec == beast::error::timeout || ec == asio::error::timed_out || ec == asio::error::operation_aborted)
    return "timed out";
  return ec.message();
}

constexpr std::size_t kErrorBodyLimit = 64 * 1024;

template <class Stream>
HttpResponse exchange(asio::io_context& ioc, Stream& stream, beast::tcp_stream& tcp, const Url& u,
                      const std::string& method,
                      const std::vector<std::pair<std::string, std::string>>& headers,
                      const HttpTimeouts& timeouts, const std::function<bool(const char*, std::size_t)>& sink,
                      const std::function<void(const HttpResponse&)>& on_head) {
  const bool head = method == "HEAD";
  http::request<http::empty_body> req{head ? http::verb::head : http::verb::get, u.target, 11};
  req.set(http::field::host, u.host_header);
  req.set(http::field::user_agent, "servelab");
  req.set(http::field::accept_encoding, "identity");  // sizes and hashes are of the bytes themselves
  req.set(http::field::connection, "close");
  for (const auto& [k, v] : headers) req.set(k, v);
  tcp.expires_after(seconds(timeouts.connect_s));
  if (auto ec = run_op(ioc, [&](auto h) { http::async_write(stream, req, h); }))
    throw NetworkError(fmt::format("sending the request to {}: {}", u.host_header, describe(ec)));

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  // Not boost::none: Boost 1.74's basic_parser compares `len_ > body_limit_`, true for an empty optional.
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  parser.skip(head);
  tcp.expires_after(seconds(timeouts.connect_s));
  if (auto ec = run_op(ioc, [&](auto h) { http::async_read_header(stream, buffer, parser, h); }))
    throw NetworkError(fmt::format("waiting for the answer of {}: {}", u.host_header, describe(ec)));
  HttpResponse res;
  res.status = static_cast<int>(parser.get().result_int());
  for (const auto& f : parser.get())
    res.headers[common::ascii_lower(std::string_view(f.name_string().data(), f.name_string().size()))] =
        std::string(f.value());
  if (on_head) on_head(res);
  if (head) return res;
  const bool to_sink = sink && res.status >= 200 && res.status < 300;
  char chunk[64 * 1024];
  while (!parser.is_done()) {
    parser.get().body().data = chunk;
    parser.get().body().size = sizeof chunk;
    tcp.expires_after(seconds(timeouts.read_s));
    beast::error_code ec = run_op(ioc, [&](auto h) { http::async_read(stream, buffer, parser, h); });
    if (ec == http::error::need_buffer) ec = {};
    const std::size_t n = sizeof chunk - parser.get().body().size;
    if (n > 0) {
      if (to_sink) {
        if (!sink(chunk, n)) return res;
      } else if (res.body.size() < kErrorBodyLimit) {
        res.body.append(chunk, std::min(n, kErrorBodyLimit - res.body.size()));
      }
    }
    if (ec) throw NetworkError(fmt::format("reading the answer of {}: {}", u.host_header, describe(ec)));
  }
  return res;
}

}  // namespace

std::string Url::origin() const {
  const bool default_port = (tls && port == "443") || (!tls && port == "80");
  const bool v6 = host.find(':') != std::string::npos;
  return std::string(tls ? "https://" : "http://") + (v6 ? "[" + host + "]" : host) +
         (default_port ? "" : ":" + port);
}

Url parse_url(std::string_view url) {
  Url u;
  std::string_view rest;
  const std::string scheme = common::ascii_lower(url.substr(0, url.find("://")));
  if (url.find("://") == std::string_view::npos || (scheme != "http" && scheme != "https"))
    throw std::invalid_argument(fmt::format("not an http(s) URL: '{}'", url));
  u.tls = scheme == "https";
  rest = url.substr(url.find("://") + 3);
  const auto slash = rest.find_first_of("/?#");
  std::string_view authority = rest.substr(0, slash);
  if (slash != std::string_view::npos) {
    u.target = std::string(rest.substr(slash));
    if (u.target[0] != '/') u.target = "/" + u.target;
    if (const auto hash = u.target.find('#'); hash != std::string::npos) u.target.resize(hash);
  }
  if (authority.find('@') != std::string_view::npos)
    throw std::invalid_argument(
        fmt::format("credentials in a Hub URL are not supported: give HF_TOKEN instead"));
  std::string_view port;
  if (!authority.empty() && authority[0] == '[') {
    const auto close = authority.find(']');
    if (close == std::string_view::npos)
      throw std::invalid_argument(fmt::format("bad IPv6 host in '{}'", url));
    u.host = common::ascii_lower(authority.substr(1, close - 1));
    if (close + 1 < authority.size()) {
      if (authority[close + 1] != ':') throw std::invalid_argument(fmt::format("bad host in '{}'", url));
      port = authority.substr(close + 2);
    }
  } else {
    const auto colon = authority.rfind(':');
    u.host = common::ascii_lower(authority.substr(0, colon));
    if (colon != std::string_view::npos) port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw std::invalid_argument(fmt::format("no host in '{}'", url));
  if (!port.empty() && !std::all_of(port.begin(), port.end(), [](char c) { return c >= '0' && c <= '9'; }))
    throw std::invalid_argument(fmt::format("bad port in '{}'", url));
  u.port = port.empty() ? (u.tls ? "443" : "80") : std::string(port);
  const bool v6 = u.host.find(':') != std::string::npos;
  u.host_header = (v6 ? "[" + u.host + "]" : u.host) + (port.empty() ? "" : ":" + std::string(port));
  return u;
}

std::string resolve_location(const Url& base, std::string_view location) {
  const std::string l = common::ascii_lower(location.substr(0, 8));
  if (l.rfind("http://", 0) == 0 || l.rfind("https://", 0) == 0) return std::string(location);
  if (location.rfind("//", 0) == 0) return std::string(base.tls ? "https:" : "http:") + std::string(location);
  if (!location.empty() && location[0] == '/') return base.origin() + std::string(location);
  std::string dir = base.target.substr(0, base.target.find('?'));
  dir = dir.substr(0, dir.rfind('/') + 1);
  return base.origin() + dir + std::string(location);
}

std::string HttpResponse::header(const std::string& name) const {
  const auto it = headers.find(name);
  return it == headers.end() ? std::string() : it->second;
}

HttpResponse http_request(const std::string& method, const std::string& url,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          const HttpTimeouts& timeouts,
                          const std::function<bool(const char*, std::size_t)>& sink,
                          const std::function<void(const HttpResponse&)>& on_head) {
  const Url u = parse_url(url);
  asio::io_context ioc;
  asio::ip::tcp::resolver resolver(ioc);
  beast::error_code ec;
  const auto endpoints = resolver.resolve(u.host, u.port, ec);
  if (ec) throw NetworkError(fmt::format("DNS lookup of {} failed: {}", u.host, ec.message()));
  beast::tcp_stream tcp(ioc);
  tcp.expires_after(seconds(timeouts.connect_s));
  if (auto e = run_op(ioc, [&](auto h) { tcp.async_connect(endpoints, h); }))
    throw NetworkError(fmt::format("connecting to {} failed: {}", u.host_header, describe(e)));
  if (!u.tls) return exchange(ioc, tcp, tcp, u, method, headers, timeouts, sink, on_head);
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream&> tls(tcp, ctx);
  tls.set_verify_callback(asio::ssl::host_name_verification(u.host));
  SSL_set_tlsext_host_name(tls.native_handle(), u.host.c_str());
  tcp.expires_after(seconds(timeouts.connect_s));
  if (auto e = run_op(ioc, [&](auto h) { tls.async_handshake(asio::ssl::stream_base::client, h); }))
    throw NetworkError(fmt::format("TLS handshake with {} failed: {}", u.host_header, describe(e)));
  return exchange(ioc, tls, tcp, u, method, headers, timeouts, sink, on_head);
}

}  // namespace servelab::hub::detail
