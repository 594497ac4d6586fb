// Request payloads and HTTP heads vs what vLLM 0.13 sends (bytes of Python json.dumps, checked with
// /usr/bin/python3: json.dumps(payload) of the dicts built by endpoint_request_func.py).
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "servelab/client/client.h"
#include "servelab/client/request.h"
#include "servelab/common/redact.h"

namespace servelab::client {
namespace {

TEST(Payload, CompletionsBodyMatchesVllmBytes) {
  ClientOptions o;
  o.model = "deepseek-ai/DeepSeek-V3.2";
  PlannedRequest r;
  r.prompt = "Hello \"world\"\n\u00e9\u4e16\U0001F642\x7f";
  r.output_len = 128;
  // json.dumps({"model": m, "prompt": p, "repetition_penalty": 1.0, "max_tokens": 128, "logprobs": None,
  //             "stream": True, "stream_options": {"include_usage": True}})
  EXPECT_EQ(request_body_json(o, r),
            "{\"model\": \"deepseek-ai/DeepSeek-V3.2\", \"prompt\": \"Hello \\\"world\\\"\\n\\u00e9\\u4e16"
            "\\ud83d\\ude42\\u007f\", \"repetition_penalty\": 1.0, \"max_tokens\": 128, \"logprobs\": null, "
            "\"stream\": true, \"stream_options\": {\"include_usage\": true}}");
}

TEST(Payload, CompletionsIgnoreEosLogprobsAndExtraBodyMergeLikeDictUpdate) {
  ClientOptions o;
  o.model = "m";
  o.ignore_eos = true;
  o.logprobs = 5;
  o.extra_body = nlohmann::ordered_json::parse(R"({"temperature": 0.0, "max_tokens": 7, "top_k": -1})");
  PlannedRequest r;
  r.prompt_token_ids = {1, 2, 3};
  r.output_len = 10;
  r.extra_body = nlohmann::ordered_json::parse(R"({"top_p": 0.95, "temperature": 1e-05})");
  // payload.update(extra): existing keys keep their place, values replaced; new keys appended.
  EXPECT_EQ(request_body_json(o, r),
            "{\"model\": \"m\", \"prompt\": [1, 2, 3], \"repetition_penalty\": 1.0, \"max_tokens\": 7, "
            "\"logprobs\": 5, \"stream\": true, \"stream_options\": {\"include_usage\": true}, "
            "\"ignore_eos\": true, \"temperature\": 1e-05, \"top_k\": -1, \"top_p\": 0.95}");
}

// Bugs of the old payload writer (issue 12): "\xC3(" (Latin-1 "é(" read as UTF-8) became "\u00e8" and the
// '(' was lost; 1e15 was written "1e+15". Now: an error naming the byte, and Python's repr.
TEST(Payload, InvalidUtf8PromptIsAnErrorAndFloatsArePythonRepr) {
  ClientOptions o;
  o.model = "m";
  PlannedRequest r;
  r.prompt = "caf\xc3(";
  r.output_len = 1;
  try {
    request_body_json(o, r);
    ADD_FAILURE() << "no exception for invalid UTF-8";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "JSON string: invalid UTF-8 at byte 3 of 5");
  }
  r.prompt = "x";
  r.extra_body = nlohmann::ordered_json::parse(R"({"seed_scale": 1e15})");
  // json.dumps({..., "seed_scale": 1e15}) ends with "1000000000000000.0}"
  const std::string body = request_body_json(o, r);
  EXPECT_EQ(body.substr(body.size() - 33), "\"seed_scale\": 1000000000000000.0}");
}

TEST(Payload, ChatBodyUsesListContentAndMaxCompletionTokens) {
  ClientOptions o;
  o.model = "m";
  o.endpoint = Endpoint::kChatCompletions;
  PlannedRequest r;
  r.prompt = "hi";
  r.output_len = 3;
  EXPECT_EQ(request_body_json(o, r),
            "{\"model\": \"m\", \"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", "
            "\"text\": \"hi\"}]}], \"max_completion_tokens\": 3, \"stream\": true, "
            "\"stream_options\": {\"include_usage\": true}}");
  r.messages_json = R"([{"role":"system","content":"s"},{"role":"user","content":"u"}])";
  EXPECT_EQ(
      request_body_json(o, r),
      "{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"s\"}, {\"role\": \"user\", "
      "\"content\": \"u\"}], \"max_completion_tokens\": 3, \"stream\": true, "
      "\"stream_options\": {\"include_usage\": true}}");
  r.messages_json = "{not json";
  EXPECT_THROW(request_body_json(o, r), std::invalid_argument);
}

TEST(Payload, UrlParsingAndEndpointValidation) {
  auto u = detail::parse_url("http://127.0.0.1:8000/v1/completions");
  EXPECT_FALSE(u.tls);
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, "8000");
  EXPECT_EQ(u.target, "/v1/completions");
  EXPECT_EQ(u.host_header, "127.0.0.1:8000");
  u = detail::parse_url("https://api.example.com/v1/chat/completions");
  EXPECT_TRUE(u.tls);
  EXPECT_EQ(u.port, "443");
  EXPECT_EQ(u.host_header, "api.example.com");
  u = detail::parse_url("http://[::1]:9000/v1/completions");
  EXPECT_EQ(u.host, "::1");
  EXPECT_EQ(u.host_header, "[::1]:9000");
  EXPECT_THROW(detail::parse_url("ftp://x/v1/completions"), std::invalid_argument);
  EXPECT_THROW(detail::parse_url("http://:80/x"), std::invalid_argument);
  EXPECT_THROW(detail::parse_url("http://h:99999/x"), std::invalid_argument);

  // vLLM: the chat function rejects URLs not ending in chat/completions (the default --endpoint).
  EXPECT_THROW(
      detail::validate_endpoint_url(detail::parse_url("http://h/v1/completions"), Endpoint::kChatCompletions),
      std::invalid_argument);
  EXPECT_NO_THROW(detail::validate_endpoint_url(detail::parse_url("http://h/v1/chat/completions"),
                                                Endpoint::kChatCompletions));
  EXPECT_NO_THROW(
      detail::validate_endpoint_url(detail::parse_url("http://h/v1/completions"), Endpoint::kCompletions));
  EXPECT_NO_THROW(
      detail::validate_endpoint_url(detail::parse_url("http://h/start_profile"), Endpoint::kCompletions));
  EXPECT_THROW(detail::validate_endpoint_url(detail::parse_url("http://h/v1/models"), Endpoint::kCompletions),
               std::invalid_argument);
}

TEST(Payload, HttpHeadHasAuthorizationExtrasAndRequestIdLast) {
  ClientOptions o;
  o.model = "m";
  o.headers = {{"X-Team", "a"}, {"x-request-id", "user"}, {"content-type", "application/json; x=1"}};
  PlannedRequest r;
  r.prompt = "p";
  r.output_len = 1;
  r.request_id = "bench-1234abcd-0";
  const auto url = detail::parse_url("http://localhost:8000/v1/completions");
  const std::string req = detail::build_http_request(o, url, "sk-test", r);
  const std::string body = request_body_json(o, r);
  EXPECT_EQ(req,
            "POST /v1/completions HTTP/1.1\r\nHost: localhost:8000\r\nUser-Agent: servelab\r\nAccept: */*\r\n"
            "Content-Type: application/json; x=1\r\nAuthorization: Bearer sk-test\r\nX-Team: a\r\n"
            "x-request-id: bench-1234abcd-0\r\nContent-Length: " +
                std::to_string(body.size()) + "\r\n\r\n" + body);
  o.headers = {{"bad", "a\r\nInjected: 1"}};
  EXPECT_THROW(detail::build_http_request(o, url, "", r), std::invalid_argument);
}

TEST(Payload, ApiKeyFromEnvironmentUnlessGiven) {
  ClientOptions o;
  setenv("OPENAI_API_KEY", "sk-env", 1);
  EXPECT_EQ(detail::resolve_api_key(o), "sk-env");
  o.api_key = "";
  EXPECT_EQ(detail::resolve_api_key(o), "");
  unsetenv("OPENAI_API_KEY");
  o.api_key.reset();
  EXPECT_EQ(detail::resolve_api_key(o), "");
}

}  // namespace
}  // namespace servelab::client

namespace servelab::client {
namespace {

TEST(Payload, UrlUserinfoBecomesBasicAuthAndIsNeverPrinted) {
  const auto u = detail::parse_url("http://al%40ice:s3cr%3At@127.0.0.1:8000/v1/completions");
  EXPECT_EQ(u.host, "127.0.0.1");
  EXPECT_EQ(u.port, "8000");
  EXPECT_EQ(u.host_header, "127.0.0.1:8000");
  EXPECT_EQ(u.target, "/v1/completions");
  EXPECT_EQ(u.basic_authorization, "Basic YWxAaWNlOnMzY3I6dA==");  // base64("al@ice:s3cr:t")
  ClientOptions o;
  o.api_url = "http://al%40ice:s3cr%3At@127.0.0.1:8000/v1/completions";
  o.model = "m";
  PlannedRequest r;
  r.prompt = "x";
  const std::string head = detail::build_http_request(o, u, "", r);
  EXPECT_NE(head.find("\r\nAuthorization: Basic YWxAaWNlOnMzY3I6dA==\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("s3cr"), std::string::npos);
  try {
    detail::parse_url("http://user:s3cret@host:99999/v1/completions");
    FAIL() << "a bad port must throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("s3cret"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("<redacted>@host"), std::string::npos) << e.what();
  }
}

// Issue 31: a key a server echoes back in its error body ("Incorrect API key provided: sk-...") is printed
// by nobody: the run's credentials are collected once (api key, credential-named headers, URL userinfo,
// credential keys of --extra-body) and redacted by value from the HTTP error message.
TEST(Payload, EchoedCredentialsAreRedactedByValue) {
  ClientOptions o;
  o.api_url = "http://bob:pw-4567@127.0.0.1:8000/v1/completions";
  o.headers = {{"X-Api-Key", "hdr-key-1"}, {"Authorization", "Bearer tok-2222"}, {"x-info", "7777"}};
  o.extra_body = nlohmann::ordered_json::parse(R"({"top_k": 1, "api_key": "body-key-3"})");
  const auto secrets = detail::request_secrets(o, "sk-abc123");
  EXPECT_EQ(secrets, (std::vector<std::string>{"sk-abc123", "hdr-key-1", "Bearer tok-2222", "tok-2222",
                                               "bob:pw-4567", "pw-4567", "body-key-3"}));
  const std::string echoed =
      R"({"error": "Incorrect API key provided: sk-abc123; got hdr-key-1, tok-2222, body-key-3 as bob:pw-4567; id 7777"})";
  EXPECT_EQ(
      common::redact_values(echoed, secrets),
      R"({"error": "Incorrect API key provided: <redacted>; got <redacted>, <redacted>, <redacted> as <redacted>; id 7777"})");
}

}  // namespace
}  // namespace servelab::client
