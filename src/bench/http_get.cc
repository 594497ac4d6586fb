// servelab/bench private: a blocking HTTP(S) GET with Boost.Beast (model discovery).
#include "bench/http_get.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <fmt/format.h>

#include <chrono>
#include <stdexcept>

namespace servelab::bench::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

struct Url {
  bool tls = false;
  std::string host, port, target, host_header;
};

Url parse(const std::string& url) {
  Url u;
  std::string rest;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
  } else if (url.rfind("https://", 0) == 0) {
    u.tls = true;
    rest = url.substr(8);
  } else {
    throw std::runtime_error("URL '" + url + "' must start with http:// or https://");
  }
  auto slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  u.host_header = authority;
  if (!authority.empty() && authority[0] == '[') {
    auto close = authority.find(']');
    if (close == std::string::npos) throw std::runtime_error("URL '" + url + "': unterminated IPv6 host");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
  } else {
    auto colon = authority.rfind(':');
    u.host = authority.substr(0, colon);
    if (colon != std::string::npos) u.port = authority.substr(colon + 1);
  }
  if (u.host.empty()) throw std::runtime_error("URL '" + url + "' has no host");
  if (u.port.empty()) u.port = u.tls ? "443" : "80";
  return u;
}

template <class Stream>
HttpGetResult exchange(Stream& stream, beast::tcp_stream& tcp, const Url& u,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       std::chrono::steady_clock::time_point deadline) {
  http::request<http::empty_body> req{http::verb::get, u.target, 11};
  req.set(http::field::host, u.host_header);
  req.set(http::field::user_agent, "servelab");
  req.set(http::field::accept, "application/json");
  for (const auto& [k, v] : headers) req.set(k, v);
  beast::error_code ec;
  tcp.expires_at(deadline);
  bool done = false;
  http::async_write(stream, req, [&](beast::error_code e, std::size_t) {
    ec = e;
    done = true;
  });
  auto& ioc = static_cast<asio::io_context&>(tcp.get_executor().context());
  ioc.restart();
  ioc.run();
  if (!done || ec) throw std::runtime_error("sending the request: " + ec.message());
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  done = false;
  http::async_read(stream, buffer, res, [&](beast::error_code e, std::size_t) {
    ec = e;
    done = true;
  });
  ioc.restart();
  ioc.run();
  if (!done || ec) throw std::runtime_error("reading the response: " + ec.message());
  return {static_cast<int>(res.result_int()), std::string(res.reason()), res.body()};
}

}  // namespace

HttpGetResult http_get(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers,
                       bool insecure, double timeout_s) {
  Url u = parse(url);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                      std::chrono::duration<double>(timeout_s));
  try {
    asio::io_context ioc;
    asio::ip::tcp::resolver resolver(ioc);
    auto endpoints = resolver.resolve(u.host, u.port);
    beast::tcp_stream tcp(ioc);
    tcp.expires_at(deadline);
    beast::error_code ec;
    bool done = false;
    tcp.async_connect(endpoints, [&](beast::error_code e, const asio::ip::tcp::endpoint&) {
      ec = e;
      done = true;
    });
    ioc.run();
    if (!done || ec) throw std::runtime_error("connect: " + ec.message());
    if (!u.tls) return exchange(tcp, tcp, u, headers, deadline);
    asio::ssl::context ctx(asio::ssl::context::tls_client);
    if (insecure) {
      ctx.set_verify_mode(asio::ssl::verify_none);
    } else {
      ctx.set_default_verify_paths();
      ctx.set_verify_mode(asio::ssl::verify_peer);
    }
    beast::ssl_stream<beast::tcp_stream&> tls(tcp, ctx);
    if (!insecure) tls.set_verify_callback(asio::ssl::host_name_verification(u.host));
    SSL_set_tlsext_host_name(tls.native_handle(), u.host.c_str());
    done = false;
    tls.async_handshake(asio::ssl::stream_base::client, [&](beast::error_code e) {
      ec = e;
      done = true;
    });
    ioc.restart();
    ioc.run();
    if (!done || ec) throw std::runtime_error("TLS handshake: " + ec.message());
    return exchange(tls, tcp, u, headers, deadline);
  } catch (const boost::system::system_error& e) {
    throw std::runtime_error(fmt::format("GET {} failed: {}", url, e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("GET {} failed: {}", url, e.what()));
  }
}

}  // namespace servelab::bench::detail
