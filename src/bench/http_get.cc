// servelab/bench private: a blocking HTTP(S) GET with Boost.Beast (model discovery).
#include "bench/http_get.h"

#include <fmt/format.h>
#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <chrono>
#include <stdexcept>

#include "servelab/client/request.h"
#include "servelab/common/redact.h"

namespace servelab::bench::detail {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

using Url = client::detail::ParsedUrl;

template <class Stream>
HttpGetResult exchange(Stream& stream, beast::tcp_stream& tcp, const Url& u,
                       const std::vector<std::pair<std::string, std::string>>& headers,
                       std::chrono::steady_clock::time_point deadline) {
  http::request<http::empty_body> req{http::verb::get, u.target, 11};
  req.set(http::field::host, u.host_header);
  req.set(http::field::user_agent, "servelab");
  req.set(http::field::accept, "application/json");
  if (!u.basic_authorization.empty()) req.set(http::field::authorization, u.basic_authorization);
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

HttpGetResult http_get(const std::string& url,
                       const std::vector<std::pair<std::string, std::string>>& headers, bool insecure,
                       double timeout_s) {
  Url u;
  try {
    u = client::detail::parse_url(url);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(e.what());
  }
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
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
    throw std::runtime_error(fmt::format("GET {} failed: {}", common::redact_url(url), e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("GET {} failed: {}", common::redact_url(url), e.what()));
  }
}

}  // namespace servelab::bench::detail
