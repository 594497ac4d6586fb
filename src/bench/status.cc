// servelab/bench: status lines at the edges (see status.h).
#include "servelab/bench/status.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "servelab/common/text.h"

namespace servelab::bench {

std::string ready_attempt_line(const client::ReadyAttempt& a) {
  std::string error = a.output ? a.output->error : std::string("unknown failure");
  if (error.empty() && a.output) error = metrics::failure_kind_name(a.output->failure);
  std::string line = fmt::format("Endpoint not ready (attempt {}): {}; ", a.attempt, error);
  if (a.retry_in_s > 0)
    line += fmt::format("{:.1f} s left, next attempt in {:.1f} s", a.remaining_s, a.retry_in_s);
  else if (a.remaining_s >= 0.05)
    line +=
        fmt::format("{:.1f} s left, less than the time between attempts: no further attempt", a.remaining_s);
  else
    line += "no time left";
  return line;
}

namespace {
/// Whether an error body says the requested model is not served (vLLM / SGLang: "The model `X` does not
/// exist."; others: "model ... not found").
bool names_unknown_model(std::string_view body) {
  const std::string error = common::ascii_lower(body);
  return error.find("model") != std::string::npos &&
         (error.find("does not exist") != std::string::npos || error.find("not found") != std::string::npos);
}
}  // namespace

namespace {
/// The path `api_url` asks for when --base-url and --endpoint repeat a part at their joint (vLLM joins them
/// as written): "//v1/completions" (a trailing slash) or "/v1/v1/completions" (a base URL ending in /v1);
/// empty otherwise.
std::string doubled_path(const RunOptions& c) {
  const std::string url = build_urls(c).api_url;
  const size_t scheme = url.find("://");
  const size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return {};
  const std::string p = url.substr(path);
  return p.find("//") != std::string::npos || p.find("/v1/v1/") != std::string::npos ? p : std::string();
}
}  // namespace

std::string backend_hint(const RunOptions& c, const metrics::RequestOutput& failure) {
  if (failure.failure != metrics::FailureKind::kHttpStatus) return {};
  if (failure.http_status != 404 && failure.http_status != 405) return {};
  // A doubled joint is the likelier cause than the other API (new-user trial: --base-url http://h:p/ and
  // --base-url http://h:p/v1 were both told to switch to --backend openai-chat).
  if (const std::string p = doubled_path(c); !p.empty())
    return fmt::format(
        " Hint: the request went to {}: --base-url and --endpoint are joined as written (base_url + "
        "endpoint), so give --base-url as scheme://host:port without a trailing slash or /v1 (e.g. "
        "--base-url http://127.0.0.1:8000 --endpoint {}).",
        p, c.endpoint);
  if (failure.http_status == 404 && names_unknown_model(failure.error))
    return " Hint: the server does not serve the requested model: pass --model (or --served-model-name) as "
           "one of the ids GET /v1/models lists, or leave --model out to use the server's first model.";
  if (c.backend == "openai-chat")
    return fmt::format(
        " Hint: the server has no {} (HTTP {}); if it serves only the completions API, use --backend openai "
        "--endpoint /v1/completions.",
        c.endpoint, failure.http_status);
  return fmt::format(
      " Hint: the server has no {} (HTTP {}); if it serves only the chat completions API, use --backend "
      "openai-chat --endpoint /v1/chat/completions.",
      c.endpoint, failure.http_status);
}

std::string all_failed_message(const RunOptions& c, std::span<const metrics::RequestOutput> outputs,
                               bool interrupted) {
  if (outputs.empty() || interrupted) return {};
  std::map<metrics::FailureKind, std::size_t> by_kind;  // ordered by kind, as the report's table
  for (const auto& o : outputs) {
    if (o.success) return {};
    ++by_kind[o.failure];
  }
  const metrics::RequestOutput* first = &outputs.front();
  std::string kinds;
  for (const auto& [kind, n] : by_kind)
    kinds += fmt::format("{}{} {}", kinds.empty() ? "" : ", ", metrics::failure_kind_name(kind), n);
  return fmt::format(
      "All requests failed. This is likely due to a misconfiguration on the benchmark arguments. ({} of {} "
      "failed: {}; first error: {}){}",
      outputs.size(), outputs.size(), kinds, first->error, backend_hint(c, *first));
}

}  // namespace servelab::bench
