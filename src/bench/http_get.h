// servelab/bench private: one blocking HTTP(S) GET, for the few non-benchmark calls of `bench serve`
// (model discovery: GET {base_url}/v1/models). Not on any hot path.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace servelab::bench::detail {

/// Status and body of a GET.
struct HttpGetResult {
  int status = 0;      ///< HTTP status code
  std::string reason;  ///< reason phrase ("OK", "Not Found")
  std::string body;
};

/// GETs `url` ("http[s]://host[:port]/path", IPv6 hosts in brackets) with `headers` added, within
/// `timeout_s` seconds (connect + request + response). `insecure` skips TLS certificate verification.
/// Throws std::runtime_error naming the URL on a malformed URL, DNS/connect/TLS/IO failure or timeout.
/// Thread-safety: reentrant.
HttpGetResult http_get(const std::string& url,
                       const std::vector<std::pair<std::string, std::string>>& headers, bool insecure,
                       double timeout_s);

}  // namespace servelab::bench::detail
