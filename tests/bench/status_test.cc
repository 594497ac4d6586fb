// Status lines at the edges of a run: failed ready-check attempts, backend hints, the all-failed message.
#include "servelab/bench/status.h"

#include <gtest/gtest.h>

#include <vector>

namespace servelab::bench {
namespace {

using metrics::FailureKind;
using metrics::RequestOutput;

RequestOutput failed(FailureKind kind, std::string error, int status = 0) {
  RequestOutput o;
  o.failure = kind;
  o.error = std::move(error);
  o.http_status = status;
  return o;
}

TEST(BenchStatus, ReadyAttemptLineSaysWhyAndTimeLeft) {
  RequestOutput refused =
      failed(FailureKind::kConnect, "connect to 127.0.0.1:8000 failed: Connection refused");
  EXPECT_EQ(
      ready_attempt_line({2, &refused, 590.04, 5.0}),
      "Endpoint not ready (attempt 2): connect to 127.0.0.1:8000 failed: Connection refused; 590.0 s left, "
      "next attempt in 5.0 s");
  RequestOutput http = failed(FailureKind::kHttpStatus, "HTTP 500 Internal Server Error", 500);
  EXPECT_EQ(ready_attempt_line({7, &http, 0.0, 0.0}),
            "Endpoint not ready (attempt 7): HTTP 500 Internal Server Error; no time left");
  // Time left, but less than the interval between attempts: no next attempt is announced (none follows).
  EXPECT_EQ(ready_attempt_line({2, &http, 2.04, 0.0}),
            "Endpoint not ready (attempt 2): HTTP 500 Internal Server Error; 2.0 s left, less than the time "
            "between attempts: no further attempt");
  RequestOutput bare = failed(FailureKind::kNoValidChunk, "");
  EXPECT_EQ(ready_attempt_line({1, &bare, 3.26, 3.26}),
            "Endpoint not ready (attempt 1): no_valid_chunk; 3.3 s left, next attempt in 3.3 s");
}

TEST(BenchStatus, BackendHintForChatOnlyAndCompletionsOnlyServers) {
  RunOptions c;  // openai, /v1/completions
  RequestOutput not_found = failed(FailureKind::kHttpStatus, "HTTP 404 Not Found", 404);
  EXPECT_EQ(
      backend_hint(c, not_found),
      " Hint: the server has no /v1/completions (HTTP 404); if it serves only the chat completions API, use "
      "--backend openai-chat --endpoint /v1/chat/completions.");
  c.backend = "openai-chat";
  c.endpoint = "/v1/chat/completions";
  RequestOutput not_allowed = failed(FailureKind::kHttpStatus, "HTTP 405 Method Not Allowed", 405);
  EXPECT_EQ(
      backend_hint(c, not_allowed),
      " Hint: the server has no /v1/chat/completions (HTTP 405); if it serves only the completions API, use "
      "--backend openai --endpoint /v1/completions.");
  // A 404 whose body says the model is not served: the endpoint exists, the model name is wrong.
  RequestOutput unknown_model = failed(FailureKind::kHttpStatus,
                                       "HTTP 404 Not Found: {\"object\":\"error\",\"message\":\"The model "
                                       "`gpt-4` does not exist.\",\"type\":\"NotFoundError\"}",
                                       404);
  EXPECT_EQ(
      backend_hint(c, unknown_model),
      " Hint: the server does not serve the requested model: pass --model (or --served-model-name) as one "
      "of the ids GET /v1/models lists, or leave --model out to use the server's first model.");
  // Other failures say nothing about the API.
  EXPECT_EQ(backend_hint(c, failed(FailureKind::kHttpStatus, "HTTP 500", 500)), "");
  EXPECT_EQ(backend_hint(c, failed(FailureKind::kConnect, "refused")), "");
}

// A 404 on a path doubled at the joint of --base-url and --endpoint names the joint, not the other API
// (new-user trial: "no route for //v1/completions" and "/v1/v1/completions" were told to use openai-chat).
TEST(BenchStatus, BackendHintNamesADoubledJoint) {
  RequestOutput not_found = failed(FailureKind::kHttpStatus, "HTTP 404 Not Found", 404);
  RunOptions c;
  c.base_url = "http://127.0.0.1:18123/";
  EXPECT_EQ(backend_hint(c, not_found),
            " Hint: the request went to //v1/completions: --base-url and --endpoint are joined as written "
            "(base_url + endpoint), so give --base-url as scheme://host:port without a trailing slash or /v1 "
            "(e.g. --base-url http://127.0.0.1:8000 --endpoint /v1/completions).");
  c.base_url = "http://127.0.0.1:18123/v1";
  EXPECT_NE(backend_hint(c, not_found).find("the request went to /v1/v1/completions"), std::string::npos);
  c.base_url = "http://127.0.0.1:18123";
  EXPECT_NE(backend_hint(c, not_found).find("the server has no /v1/completions"), std::string::npos);
}

TEST(BenchStatus, ChatEndpointWithCompletionsBackendIsRefusedUpFront) {
  RunOptions c;
  c.endpoint = "/v1/chat/completions";
  try {
    resolve(c);
    FAIL() << "completions backend accepted a chat endpoint";
  } catch (const ConfigError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "--backend openai sends completions requests (a \"prompt\" body), but --endpoint "
        "'/v1/chat/completions' "
        "is the chat completions API: use --backend openai-chat for it (or --endpoint /v1/completions)");
  }
  c.backend = "vllm";
  EXPECT_THROW(resolve(c), ConfigError);
  c.backend = "openai-chat";
  EXPECT_NO_THROW(resolve(c));
}

TEST(BenchStatus, AllFailedMessageCountsKindsAndHints) {
  RunOptions c;
  std::vector<RequestOutput> outs = {
      failed(FailureKind::kHttpStatus, "HTTP 404 Not Found", 404),
      failed(FailureKind::kConnect, "connect to 127.0.0.1:1 failed: Connection refused"),
      failed(FailureKind::kHttpStatus, "HTTP 404 Not Found", 404)};
  EXPECT_EQ(
      all_failed_message(c, outs, false),
      "All requests failed. This is likely due to a misconfiguration on the benchmark arguments. (3 of 3 "
      "failed: connect 1, http_status 2; first error: HTTP 404 Not Found) Hint: the server has no "
      "/v1/completions (HTTP 404); if it serves only the chat completions API, use --backend openai-chat "
      "--endpoint /v1/chat/completions.");
  EXPECT_EQ(all_failed_message(c, outs, /*interrupted=*/true), "");  // Ctrl-C has its own exit status
  outs[1].success = true;
  outs[1].failure = FailureKind::kNone;
  EXPECT_EQ(all_failed_message(c, outs, false), "");  // one success: the run is a result
  EXPECT_EQ(all_failed_message(c, {}, false), "");
}

}  // namespace
}  // namespace servelab::bench
