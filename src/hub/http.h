// servelab/hub private: one blocking HTTP(S) request with Boost.Beast, headers first, the body streamed to
// a sink (a download never sits in memory). TLS verifies the certificate against the system store.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace servelab::hub::detail {

/// A parsed "http[s]://host[:port][/target]" URL.
struct Url {
  bool tls = false;
  std::string host;  ///< without IPv6 brackets, lower case
  std::string port;  ///< numeric; default 80 / 443
  std::string target = "/";
  std::string host_header;  ///< host[:port] as the Host header carries it
  /// scheme://host[:port] (the origin, for resolving relative redirects and comparing hosts).
  std::string origin() const;
};

/// Parses an absolute http(s) URL. Throws std::invalid_argument naming it.
Url parse_url(std::string_view url);

/// `location` (a Location header) resolved against `base`: absolute URLs as they are, "//host/x" with the
/// base's scheme, "/x" on the base's origin, anything else relative to the base's directory.
std::string resolve_location(const Url& base, std::string_view location);

/// A transport failure (DNS, connect, TLS, timeout, connection lost), with the phase in the message.
class NetworkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Status, lower-cased headers and (for non-2xx answers, or without a sink) up to 64 KiB of the body.
struct HttpResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  ///< lower-case names
  std::string body;
  /// The header's value, "" when absent. `name` in lower case.
  std::string header(const std::string& name) const;
};

/// Timeouts of one request, seconds.
struct HttpTimeouts {
  double connect_s = 10;  ///< DNS + TCP connect + TLS handshake + the response head
  double read_s = 10;     ///< longest wait for the next body bytes
};

/// Sends `method` ("HEAD" or "GET") to `url` with `headers`; no redirect is followed. `on_head` (when given)
/// sees the status and headers before any body byte. For a 2xx answer to a GET the body goes to `sink` (when
/// given) as it arrives; a sink returning false stops the transfer.
/// Throws NetworkError (the body bytes already given to the sink stay given) or std::invalid_argument for
/// a malformed URL. Thread-safety: reentrant.
HttpResponse http_request(const std::string& method, const std::string& url,
                          const std::vector<std::pair<std::string, std::string>>& headers,
                          const HttpTimeouts& timeouts,
                          const std::function<bool(const char* data, std::size_t size)>& sink = {},
                          const std::function<void(const HttpResponse&)>& on_head = {});

}  // namespace servelab::hub::detail
