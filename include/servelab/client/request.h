// servelab/client private: URL parsing and HTTP request building (exposed for tests).
#pragma once

#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/client/client.h"

namespace servelab::client::detail {

/// Parts of an http(s) URL. `target` is the path plus query ("/v1/completions").
struct ParsedUrl {
  bool tls = false;
  std::string host;  ///< without IPv6 brackets
  std::string port;  ///< numeric string; default 80 / 443
  std::string target;
  std::string host_header;  ///< Host header value (host[:port] with brackets for IPv6)
  /// From "user:password@" in the URL: the value of an `Authorization: Basic ...` header (RFC 7617,
  /// percent-decoded credentials, as aiohttp sends them); empty without userinfo.
  std::string basic_authorization;
};

/// Parses "http[s]://[user:password@]host[:port][/path]". Throws std::invalid_argument naming the URL (its
/// credentials redacted) on error.
ParsedUrl parse_url(std::string_view url);

/// Checks that the URL path fits the endpoint as vLLM's request functions do (chat: ends with
/// "chat/completions" or "profile"; completions: "completions" or "profile"). Throws
/// std::invalid_argument with vLLM's message otherwise.
void validate_endpoint_url(const ParsedUrl& url, Endpoint endpoint);

/// The complete HTTP/1.1 request (head + body) for one planned request. Authorization: a --header of that
/// name, else the URL's userinfo (Basic), else the API key (Bearer).
std::string build_http_request(const ClientOptions& options, const ParsedUrl& url, const std::string& api_key,
                               const PlannedRequest& request);

/// run_load's argument checks (schedule size and values, priority, concurrency, timeouts). Throws
/// std::invalid_argument naming the field and the offending value.
void validate_load(const ClientOptions& options, std::size_t num_requests,
                   std::span<const double> schedule_s);

/// Resolves ClientOptions::api_key (nullopt → $OPENAI_API_KEY or "").
std::string resolve_api_key(const ClientOptions& options);

/// What a server may echo back in an error body that must not be printed (for common::redact_values):
/// `api_key`, the values of credential-named headers (and the word after an auth scheme: "Bearer sk" →
/// "sk" too), the userinfo of options.api_url (and its password), and the values of credential-named keys
/// of options.extra_body.
std::vector<std::string> request_secrets(const ClientOptions& options, const std::string& api_key);

/// After a run: re-tokenizes successful outputs with options.retokenize (tokenizer_output_tokens;
/// output_tokens when the server sent no usage or an out-of-range one; reasoning_tokens from `reasoning[i]`
/// when unknown) on options.num_threads threads, drops generated_text unless kept, and adds the
/// usage-vs-tokenizer mismatch warning. A stop request skips the outputs not yet counted (result marked
/// interrupted, with a warning saying how many).
void count_output_tokens(const ClientOptions& options, const std::vector<std::string>& reasoning,
                         LoadResult& result, std::stop_token stop = {});

}  // namespace servelab::client::detail
