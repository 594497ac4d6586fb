// common::redact: the one rule for what servelab never prints. Each case is a credential form seen in the
// hardening review (issue 9 section 4) or a near miss that must stay readable.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "servelab/common/redact.h"

using namespace servelab::common;

TEST(Redact, CredentialNames) {
  for (const char* n : {"Authorization",
                        "proxy-authorization",
                        "Proxy-Authorization",
                        "X-Auth",
                        "X-Auth-Token",
                        "x-api-key",
                        "api_key",
                        "apiKey",
                        "X-ApiKey",
                        "Ocp-Apim-Subscription-Key",
                        "HF_TOKEN",
                        "OPENAI_API_KEY",
                        "X-Amz-Security-Token",
                        "Cookie",
                        "Set-Cookie",
                        "client_secret",
                        "DB_PASSWORD",
                        "--api-key",
                        "--hf-token",
                        "x-goog-api-key",
                        "AWS_SECRET_ACCESS_KEY"})
    EXPECT_TRUE(is_credential_name(n)) << n;
  for (const char* n : {"Content-Type", "x-request-id", "max_tokens", "--tokenizer", "tokenizer_mode",
                        "author", "key", "monkey", "config_key", "trial_key", "cache-key", "x-test-tokens",
                        "--max-num-batched-tokens", "User-Agent", "Accept"})
    EXPECT_FALSE(is_credential_name(n)) << n;
}

TEST(Redact, Urls) {
  EXPECT_EQ(redact_url("https://alice:s3cret@api.example.com:8443/v1"),
            "https://<redacted>@api.example.com:8443/v1");
  EXPECT_EQ(redact_url("http://tok@h/v1/completions"), "http://<redacted>@h/v1/completions");
  EXPECT_EQ(redact_url("http://h:8000/v1?api_key=abc&x=1"), "http://h:8000/v1?api_key=<redacted>&x=1");
  EXPECT_EQ(redact_url("http://127.0.0.1:8000"), "http://127.0.0.1:8000");
  EXPECT_EQ(redact_url(redact_url("https://a:b@h/")), "https://<redacted>@h/");
}

TEST(Redact, HeaderItems) {
  EXPECT_EQ(redact_header_item("Authorization=Bearer sk-123"), "Authorization=<redacted>");
  EXPECT_EQ(redact_header_item("Proxy-Authorization=Basic dXNlcjpwdw=="), "Proxy-Authorization=<redacted>");
  EXPECT_EQ(redact_header_item("X-Auth-Token=abc"), "X-Auth-Token=<redacted>");
  // Malformed items (a colon instead of '=', no separator at all) are redacted too.
  EXPECT_EQ(redact_header_item("Authorization: Bearer sk-123"), "Authorization: <redacted>");
  EXPECT_EQ(redact_header_item("Authorization Bearer sk-123"), "Authorization <redacted>");
  EXPECT_EQ(redact_header_item("Bearer sk-123"), "Bearer <redacted>");
  EXPECT_EQ(redact_header_item("x-additional-info=0.3.3"), "x-additional-info=0.3.3");
}

TEST(Redact, CommandLines) {
  const std::vector<std::string> args = {
      "vllm",          "serve",         "m",   "--api-key", "sk-1",       "--hf-token=hf_2",
      "--header",      "X-Api-Key: k3", "-H",  "Cookie=c4", "--base-url", "http://u:p5@h:1",
      "HF_TOKEN=hf_6", "--port",        "8000"};
  const std::vector<std::string> want = {"vllm",
                                         "serve",
                                         "m",
                                         "--api-key",
                                         "<redacted>",
                                         "--hf-token=<redacted>",
                                         "--header",
                                         "X-Api-Key: <redacted>",
                                         "-H",
                                         "Cookie=<redacted>",
                                         "--base-url",
                                         "http://<redacted>@h:1",
                                         "HF_TOKEN=<redacted>",
                                         "--port",
                                         "8000"};
  EXPECT_EQ(redact_args(args), want);
  EXPECT_EQ(redact_env({{"HF_TOKEN", "hf_x"}, {"VLLM_USE_V1", "1"}}),
            (std::map<std::string, std::string>{{"HF_TOKEN", "<redacted>"}, {"VLLM_USE_V1", "1"}}));
}

TEST(Redact, FreeText) {
  // A value that is already a redaction label keeps its number (a credential-named knob's
  // "api_key=<redacted-2>" in summary.json); anything else after the name is hidden, "<redacted-x>" included.
  EXPECT_EQ(redact_text(R"({"config": "api_key=<redacted-2>", "b": "token=<redacted>"})"),
            R"({"config": "api_key=<redacted-2>", "b": "token=<redacted>"})");
  EXPECT_EQ(redact_text(R"(["api_key=<redacted-x>", "api_key=<redacted-12>", "api_key=sk-1"])"),
            R"(["api_key=<redacted>", "api_key=<redacted-12>", "api_key=<redacted>"])");
  // bench error message echoing a malformed --header
  EXPECT_EQ(redact_text("Invalid header format. (--header 'Authorization: Bearer sk-1')"),
            "Invalid header format. (--header 'Authorization: <redacted>')");
  // an unquoted shell line / Markdown code span
  EXPECT_EQ(redact_text("servelab bench serve --header Authorization=Bearer sk-1 --num-prompts 5"),
            "servelab bench serve --header Authorization=Bearer <redacted> --num-prompts 5");
  // a study's TOML
  EXPECT_EQ(redact_text("common_args = [\"--header\", \"Authorization=Bearer sk-1\", \"--api-key\", \"k2\"]\n"
                        "api_key = \"k3\"\nname = \"x\"\n"),
            "common_args = [\"--header\", \"Authorization=<redacted>\", \"--api-key\", \"<redacted>\"]\n"
            "api_key = \"<redacted>\"\nname = \"x\"\n");
  // JSON
  EXPECT_EQ(redact_text(R"({"env":{"HF_TOKEN":"hf_1","A":"b"},"argv":["--api-key","k"]})"),
            R"({"env":{"HF_TOKEN":"<redacted>","A":"b"},"argv":["--api-key","<redacted>"]})");
  EXPECT_EQ(redact_text("GET https://u:pw@h/v1/models failed"), "GET https://<redacted>@h/v1/models failed");
  EXPECT_EQ(redact_text("Proxy-Authorization: Basic dXNlcjpwdw== and X-Auth: s"),
            "Proxy-Authorization: Basic <redacted> and X-Auth: <redacted>");
  // Nothing credential-like: unchanged.
  const std::string report = "Mean TTFT (ms): 12.5\nmax_tokens: 10\nmodel: m\nhttp://h:1/v1\n";
  EXPECT_EQ(redact_text(report), report);
  // A file and line of an error's location is not a credential name and its value (new-user trial:
  // "api_key.toml:<redacted> hardware.gpu_count: must be an integer"); the value after it still is.
  EXPECT_EQ(redact_text("api_key.toml:11: hardware.gpu_count: must be an integer"),
            "api_key.toml:11: hardware.gpu_count: must be an integer");
  EXPECT_EQ(redact_text("my_token_study.toml:3:7: bad value"), "my_token_study.toml:3:7: bad value");
  EXPECT_EQ(redact_text("api_key:12345"), "api_key:<redacted>");
  EXPECT_EQ(redact_text("api_key.toml:11: api_key = \"sk-1\""), "api_key.toml:11: api_key = \"<redacted>\"");
  // Idempotent.
  const std::string once = redact_text("Authorization: Bearer x y 'X-Api-Key=k' https://a:b@h");
  EXPECT_EQ(redact_text(once), once);
}

// Issue 30/31: every benchmark block of report.md and report.html read "Inter-token <redacted>": the banner's
// dash run made "---------------Inter-token" a flag and "token" made it a credential. A result block as
// report::format_console_block prints it passes unchanged; each credential form beside it is still redacted.
TEST(Redact, BenchResultBlockPassesUnchanged) {
  const std::string block =
      "============ Serving Benchmark Result ============\n"
      "Successful requests:                     200       \n"
      "Failed requests:                         0         \n"
      "Request rate configured (RPS):           64.00     \n"
      "Benchmark duration (s):                  12.16     \n"
      "Total input tokens:                      204800    \n"
      "Total generated tokens:                  25600     \n"
      "Request throughput (req/s):              16.45     \n"
      "Request goodput (req/s):                 16.45     \n"
      "Output token throughput (tok/s):         2105.60   \n"
      "Peak output token throughput (tok/s):    3300.00   \n"
      "Peak concurrent requests:                180.00    \n"
      "Total Token throughput (tok/s):          18950.40  \n"
      "---------------Time to First Token----------------\n"
      "Mean TTFT (ms):                          812.50    \n"
      "P99 TTFT (ms):                           1990.10   \n"
      "-----Time per Output Token (excl. 1st token)------\n"
      "Mean TPOT (ms):                          41.20     \n"
      "---------------Inter-token Latency----------------\n"
      "Mean ITL (ms):                           40.90     \n"
      "P99 ITL (ms):                            95.00     \n"
      "==================================================\n";
  EXPECT_EQ(redact_text(block), block);
  // The same labels in other shapes the reports use.
  for (const char* t : {"Inter-token Latency: 40.9 ms", "| Inter-token Latency | 40.9 |", "inter_token: 3",
                        "per-token: 2", "\"bos_token\": \"<s>\"", "Output token throughput (tok/s): 2105.60"})
    EXPECT_EQ(redact_text(t), t) << t;
  EXPECT_FALSE(is_credential_name("Inter-token"));
  EXPECT_FALSE(is_credential_name("---------------Inter-token"));
  // Credentials around the block are still redacted: header values, URL userinfo, flags, variables, keys.
  const std::string with_secrets = block +
                                   "Authorization: Bearer sk-1\nx-api-key: k2\nhttp://u:p3@h:1/v1\n"
                                   "--api-key k4 --hf-token k5\nHF_TOKEN=k6\napi_key = \"k7\"\n"
                                   "{\"api_key\": \"k8\"}\ntoken: k9\n--token k10\n";
  EXPECT_EQ(redact_text(with_secrets),
            block +
                "Authorization: Bearer <redacted>\nx-api-key: <redacted>\nhttp://<redacted>@h:1/v1\n"
                "--api-key <redacted> --hf-token <redacted>\nHF_TOKEN=<redacted>\napi_key = \"<redacted>\"\n"
                "{\"api_key\": \"<redacted>\"}\ntoken: <redacted>\n--token <redacted>\n");
  EXPECT_EQ(redact_args({"--hf-token", "k", "--api-key=k"}),
            (std::vector<std::string>{"--hf-token", "<redacted>", "--api-key=<redacted>"}));
}

// Issue 31: redaction by key name inside JSON (bench's --extra-body) and by value in text a server echoes.
TEST(Redact, JsonBodiesByKeyName) {
  EXPECT_EQ(
      redact_json_text(R"({"temperature": 0.5, "api_key": "sk-1", "nested": {"hf_token": 7, "top_k": 3}})"),
      R"({"temperature":0.5,"api_key":"<redacted>","nested":{"hf_token":"<redacted>","top_k":3}})");
  // Nothing credential-named: the text as written (its formatting kept).
  EXPECT_EQ(redact_json_text(R"({"temperature": 0.5, "max_tokens": 10})"),
            R"({"temperature": 0.5, "max_tokens": 10})");
  // Not JSON: the free-text rule.
  EXPECT_EQ(redact_json_text("api_key=sk-1 {"), "api_key=<redacted> {");
  EXPECT_EQ(
      json_secret_values(nlohmann::ordered_json::parse(R"({"a": {"api_key": "sk-1"}, "secret": [1, "x2"]})")),
      (std::vector<std::string>{"sk-1", "1", "x2"}));
  // A command line: the JSON argument of --extra-body, in both spellings; a non-credential JSON unchanged.
  EXPECT_EQ(redact_args({"--extra-body", R"({"top_k": 1, "api_key": "sk-2"})",
                         R"(--extra-body={"api_key": "sk-3"})", "--extra-body", R"({"top_k": 1})"}),
            (std::vector<std::string>{"--extra-body", R"({"top_k":1,"api_key":"<redacted>"})",
                                      R"(--extra-body={"api_key":"<redacted>"})", "--extra-body",
                                      R"({"top_k": 1})"}));
}

TEST(Redact, EchoedValues) {
  // OpenAI's answer to a wrong key names neither a header nor a key=value: only the value we sent finds it.
  EXPECT_EQ(redact_values(R"({"error": {"message": "Incorrect API key provided: sk-abc123. See ..."}})",
                          {"sk-abc123"}),
            R"({"error": {"message": "Incorrect API key provided: <redacted>. See ..."}})");
  // Longer secrets first (a value containing another); too-short ones skipped; the name rule still applies.
  EXPECT_EQ(
      redact_values("u:pass1234 pass1234 abc Authorization: Bearer zz", {"pass1234", "u:pass1234", "abc"}),
      "<redacted> <redacted> abc Authorization: Bearer <redacted>");
  EXPECT_EQ(redact_values("nothing here", {}), "nothing here");
}
