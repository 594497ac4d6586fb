// SSE framing and vLLM's timing rules, fed byte-exact reads with synthetic read times.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "client/sse.h"

namespace servelab::client::detail {
namespace {

using metrics::FailureKind;
using metrics::RequestOutput;
using std::chrono::milliseconds;

// Feeds `reads` (bytes, ms after send) through SseParser + apply_event, then finishes the stream.
RequestOutput stream(const std::vector<std::pair<std::string, int>>& reads,
                     Endpoint endpoint = Endpoint::kCompletions, std::string* reasoning = nullptr) {
  RequestOutput out;
  StreamState st;
  SseParser sse;
  simdjson::ondemand::parser parser;
  const Clock::time_point send{};
  st.begin(&out, send);
  st.endpoint = endpoint;
  st.reasoning_text = reasoning;
  for (const auto& [bytes, ms] : reads) {
    const Clock::time_point ts = send + milliseconds(ms);
    auto on_event = [&](const char* d, std::size_t n, std::size_t cap) {
      return apply_event(st, parser, d, n, cap, ts);
    };
    const auto status = sse.feed(bytes.data(), bytes.size(), on_event);
    if (status == SseParser::Status::kMalformed)
      fail(st, FailureKind::kSseParse, "malformed: " + sse.bad_line());
  }
  auto on_event = [&](const char* d, std::size_t n, std::size_t cap) {
    return apply_event(st, parser, d, n, cap, send + milliseconds(reads.empty() ? 0 : reads.back().second));
  };
  if (sse.finish(on_event) == SseParser::Status::kMalformed) fail(st, FailureKind::kSseParse, "malformed");
  finish_stream(st);
  return out;
}

std::string cmpl(const std::string& text) {
  return "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"text\":\"" + text +
         "\",\"finish_reason\":null}]}\n\n";
}
const std::string kUsage =
    "data: "
    "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":3,\"total_tokens\":"
    "14}}\n\n";
const std::string kDone = "data: [DONE]\n\n";

TEST(Sse, TtftItlLatencyAndUsageAsVllm) {
  const RequestOutput out =
      stream({{cmpl("a"), 100}, {cmpl("b"), 130}, {cmpl("c"), 175}, {kUsage, 180}, {kDone, 181}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.100);
  ASSERT_EQ(out.itl_s.size(), 2u);
  EXPECT_NEAR(out.itl_s[0], 0.030, 1e-12);
  EXPECT_NEAR(out.itl_s[1], 0.045, 1e-12);
  EXPECT_DOUBLE_EQ(out.latency_s, 0.175);  // last choices chunk, not usage / [DONE]
  EXPECT_EQ(out.output_tokens, 3);
  EXPECT_EQ(out.usage_completion_tokens, 3);
  EXPECT_EQ(out.prompt_len, 11);  // usage.prompt_tokens overwrites prompt_len (newest vLLM)
  EXPECT_EQ(out.usage_prompt_tokens, 11);
  EXPECT_EQ(out.generated_text, "abc");
  EXPECT_DOUBLE_EQ(out.ttfct_s, 0.100);
  EXPECT_TRUE(out.chunk_tokens.empty());  // no continuous usage → unknown
}

TEST(Sse, EmptyTextChunkCountsAsTokenEventButNotAsFirstContent) {
  const RequestOutput out = stream({{cmpl(""), 50}, {cmpl("x"), 80}, {kDone, 81}});
  ASSERT_TRUE(out.success);
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.050);   // vLLM does not check the text
  EXPECT_DOUBLE_EQ(out.ttfct_s, 0.080);  // servelab extra: first non-empty text
  EXPECT_EQ(out.output_tokens, 0);       // no usage, no re-tokenizer here
}

TEST(Sse, CommentsEventIdLinesAndDoneAreIgnored) {
  const RequestOutput out = stream({{": ping\n\n", 10},
                                    {"event: message\nid: 1\nretry: 5\n" + cmpl("a"), 20},
                                    {": keep-alive\n\n" + kDone, 30}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.020);
  EXPECT_TRUE(out.itl_s.empty());
}

TEST(Sse, SeveralEventsInOneReadGetTheSameReadTimeAndZeroItl) {
  const RequestOutput out = stream({{cmpl("a") + cmpl("b") + cmpl("c") + kUsage + kDone, 40}});
  ASSERT_TRUE(out.success);
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.040);
  ASSERT_EQ(out.itl_s.size(), 2u);
  EXPECT_EQ(out.itl_s[0], 0.0);
  EXPECT_EQ(out.itl_s[1], 0.0);
  EXPECT_EQ(out.generated_text, "abc");
}

TEST(Sse, EventSplitAcrossReadsIsTimedWhenItCompletes) {
  const std::string e = cmpl("hello");
  const RequestOutput out = stream({{e.substr(0, 2), 10},
                                    {e.substr(2, 20), 20},
                                    {e.substr(22, e.size() - 23), 30},
                                    {"\n", 45},
                                    {kDone, 50}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.045);  // the blank line completes the event
  EXPECT_EQ(out.generated_text, "hello");
}

TEST(Sse, PartialUtf8AcrossReadsIsReassembled) {
  const std::string e = cmpl("\xC3\xA9\xE4\xB8\x96\xF0\x9F\x99\x82");
  const std::size_t cut = e.find("\xF0\x9F") + 2;  // inside the 4-byte emoji
  const RequestOutput out = stream({{e.substr(0, cut), 10}, {e.substr(cut), 12}, {kDone, 13}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_EQ(out.generated_text, "\xC3\xA9\xE4\xB8\x96\xF0\x9F\x99\x82");
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.012);
}

TEST(Sse, CrlfAndCrLineEndingsIncludingCrLfSplitAcrossReads) {
  std::string crlf = cmpl("a");
  crlf.replace(crlf.size() - 2, 2, "\r\n\r\n");
  std::string second = cmpl("b");
  second.replace(second.size() - 2, 2, "\r\n\r");  // the final "\n" arrives in the next read
  const RequestOutput out = stream({{crlf, 10}, {second, 20}, {"\ndata: [DONE]\r\r", 30}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_EQ(out.generated_text, "ab");
  ASSERT_EQ(out.itl_s.size(), 1u);
  EXPECT_NEAR(out.itl_s[0], 0.010, 1e-12);
}

TEST(Sse, LastEventWithoutBlankLineIsStillEmittedAtEnd) {
  const RequestOutput out = stream({{cmpl("a"), 10}, {"data: {\"choices\":[{\"text\":\"z\"}]}", 20}});
  ASSERT_TRUE(out.success);
  EXPECT_EQ(out.generated_text, "az");
  EXPECT_EQ(out.itl_s.size(), 1u);
}

TEST(Sse, DataWithoutSpaceAndMultiLineData) {
  const RequestOutput out = stream({{"data:{\"choices\":\ndata: [{\"text\":\"q\"}]}\n\n", 10}});
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_EQ(out.generated_text, "q");
}

TEST(Sse, ChatRoleChunkIsFirstEventAndReasoningCountedSeparately) {
  const std::string role =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
  const std::string think =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"hmm\"}}],\"usage\":null}\n\n";
  const std::string think2 =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning\":\" ok\",\"content\":null}}]}\n\n";
  const std::string content = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n";
  const std::string usage =
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8,"
      "\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\n";
  std::string reasoning;
  const RequestOutput out =
      stream({{role, 10}, {think, 20}, {think2, 30}, {content, 40}, {usage + kDone, 41}},
             Endpoint::kChatCompletions, &reasoning);
  ASSERT_TRUE(out.success) << out.error;
  EXPECT_DOUBLE_EQ(out.ttft_s, 0.010);   // role-only chunk has choices → first event (vLLM)
  EXPECT_DOUBLE_EQ(out.ttfct_s, 0.020);  // first reasoning text
  EXPECT_EQ(out.generated_text, "Hi");   // reasoning not in generated_text (vLLM)
  EXPECT_EQ(reasoning, "hmm ok");
  EXPECT_EQ(out.reasoning_tokens, 2);
  EXPECT_EQ(out.output_tokens, 3);
  EXPECT_EQ(out.itl_s.size(), 3u);
}

TEST(Sse, ContinuousUsageGivesPerChunkTokenCounts) {
  auto chunk = [](const char* text, int cum) {
    return "data: {\"choices\":[{\"text\":\"" + std::string(text) +
           "\"}],\"usage\":{\"prompt_tokens\":4,"
           "\"completion_tokens\":" +
           std::to_string(cum) + ",\"total_tokens\":" + std::to_string(4 + cum) + "}}\n\n";
  };
  const RequestOutput out =
      stream({{chunk("ab", 2), 10}, {chunk("cde", 5), 20}, {chunk("f", 6), 30}, {kDone, 31}});
  ASSERT_TRUE(out.success);
  EXPECT_EQ(out.chunk_tokens, (std::vector<std::int32_t>{2, 3, 1}));
  EXPECT_EQ(out.output_tokens, 6);  // usage on choices chunks (llama.cpp style) is used, unlike vLLM
}

TEST(Sse, FailureKinds) {
  RequestOutput out = stream({{cmpl("a"), 10}, {"data: {\"choices\": [ oops\n\n", 20}});
  EXPECT_FALSE(out.success);
  EXPECT_EQ(out.failure, FailureKind::kJsonParse);
  EXPECT_NE(out.error.find("oops"), std::string::npos);

  out = stream({{cmpl("a"), 10}, {"data: {\"error\":{\"message\":\"engine died\",\"code\":500}}\n\n", 20}});
  EXPECT_EQ(out.failure, FailureKind::kServerError);
  EXPECT_NE(out.error.find("engine died"), std::string::npos);

  out = stream({{kUsage + kDone, 10}});
  EXPECT_EQ(out.failure, FailureKind::kNoValidChunk);
  EXPECT_EQ(out.error, kNoValidChunkError);

  out = stream({{"garbage\n\n", 10}});
  EXPECT_EQ(out.failure, FailureKind::kSseParse);

  out = stream({{"data: [1, 2]\n\n", 10}});  // valid JSON, not an object
  EXPECT_EQ(out.failure, FailureKind::kJsonParse);

  out = stream({});
  EXPECT_EQ(out.failure, FailureKind::kNoValidChunk);
}

// Found by fuzz/sse_fuzz: a malformed literal where null/string/array is read made simdjson throw (an
// exception on an I/O thread ends the run); now it is this request's kJsonParse.
TEST(Sse, MalformedLiteralsAreJsonParseFailuresNotExceptions) {
  // {event, endpoint that reads the broken value}. On-demand parsing validates what it reads; a broken value
  // in a field the endpoint does not read is skipped, as before.
  const std::vector<std::pair<std::string, Endpoint>> cases = {
      {"data: {\"choices\":[{\"delta\":{\"content\":nde}}]}\n\n", Endpoint::kChatCompletions},
      {"data: {\"choices\":[{\"text\":nul}]}\n\n", Endpoint::kCompletions},
      {"data: {\"choices\":nx}\n\n", Endpoint::kCompletions},
      {"data: {\"choices\":nx}\n\n", Endpoint::kChatCompletions},
      {"data: {\"choices\":[],\"usage\":nulL}\n\n", Endpoint::kCompletions}};
  for (const auto& [event, ep] : cases) {
    RequestOutput out;
    EXPECT_NO_THROW(out = stream({{event, 10}}, ep)) << event;
    EXPECT_FALSE(out.success) << event;
    EXPECT_EQ(out.failure, FailureKind::kJsonParse) << event;
  }
  // The fuzzer's input itself (a chat stream with a broken "content" value).
  RequestOutput out;
  EXPECT_NO_THROW(
      out = stream({{"data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\","
                     "\"content\":ndex\":0}}]}\n\n",
                     10}},
                   Endpoint::kChatCompletions));
  EXPECT_EQ(out.failure, FailureKind::kJsonParse);
}

}  // namespace
}  // namespace servelab::client::detail
