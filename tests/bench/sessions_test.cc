// bench::run with --multi-turn (the real multi-turn ShareGPT record) and --dataset-name timed_trace, in
// process against the scheduled-emission test server: the message arrays sent, turn order, per-turn counts,
// the trace's arrival times scaled, and the flag checks.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/sessions.h"
#include "servelab/bench/bench.h"
#include "servelab/common/paths.h"
#include "servelab/tokenizer/tokenizer.h"
#include "support/stream_server.h"

namespace servelab::bench {
namespace {

using test_support::Emission;
using test_support::StreamServer;
using test_support::StreamServerOptions;

class Sessions : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = common::data_dir() / "gpt2-tokenizer.json";
    conversation_ = common::data_dir() / "sharegpt_v4.3_tiny_multiturn.json";
    ASSERT_TRUE(std::filesystem::exists(tokenizer_)) << tokenizer_;
    std::ifstream in(conversation_);
    turns_ = nlohmann::json::parse(in)[0]["conversations"];  // the oracle: the file's own turns
  }
  RunOptions multi_turn_config(std::uint16_t port) {
    RunOptions c;
    c.port = port;
    c.model = "gpt2";
    c.tokenizer = tokenizer_.string();
    c.backend = "openai-chat";
    c.endpoint = "/v1/chat/completions";
    c.dataset_name = "sharegpt";
    c.dataset_path = conversation_.string();
    c.multi_turn = true;
    c.multi_turn_max_turns = 3;
    c.sharegpt_output_len = 4;
    c.num_prompts = 2;  // the one conversation and its oversampled copy
    c.session_concurrency = 1;
    c.request_id_prefix = "mt-";
    c.ready_check_timeout_s = 0;
    c.percentile_metrics = "ttft,e2el";
    return c;
  }
  std::string user(int t) const { return turns_[2 * t]["value"].get<std::string>(); }
  std::string recorded(int t) const { return turns_[2 * t + 1]["value"].get<std::string>(); }

  std::filesystem::path tokenizer_, conversation_;
  nlohmann::json turns_;
};

std::map<std::string, Emission> by_id(const StreamServer& server) {
  std::map<std::string, Emission> out;
  for (auto& e : server.emissions())
    if (!e.request_id.empty()) out[e.request_id] = e;
  return out;
}

// What the test server reports as usage.prompt_tokens of a chat request: the size of its messages JSON.
std::size_t t2_size(const std::string& body) {
  return nlohmann::json::parse(body)["messages"].dump().size();
}

nlohmann::json msg(const char* role, const std::string& content) {
  return {{"role", role}, {"content", content}};
}

TEST_F(Sessions, EveryTurnCarriesTheServersAnswersAndTheNextWaitsForThePrevious) {
  StreamServerOptions so;
  so.ttft_s = 0.002;
  so.itl_s = 0.001;
  StreamServer server(so);
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(multi_turn_config(server.port()), {}, io);
  ASSERT_EQ(r.outputs.size(), 6u);
  for (const auto& o : r.outputs) ASSERT_TRUE(o.success) << o.request_id << ": " << o.error;
  const auto seen = by_id(server);
  ASSERT_EQ(seen.size(), 6u);
  const std::string answer = "toktoktoktok";  // 4 tokens (--sharegpt-output-len 4) of "tok"
  for (int c = 0; c < 2; ++c) {
    const std::string id = "mt-" + std::to_string(c) + "-";
    const auto t0 = nlohmann::json::parse(seen.at(id + "0").body);
    const auto t1 = nlohmann::json::parse(seen.at(id + "1").body);
    const auto t2 = nlohmann::json::parse(seen.at(id + "2").body);
    EXPECT_EQ(t0["messages"], nlohmann::json::array({msg("user", user(0))}));
    EXPECT_EQ(t1["messages"],
              nlohmann::json::array({msg("user", user(0)), msg("assistant", answer), msg("user", user(1))}));
    EXPECT_EQ(t2["messages"],
              nlohmann::json::array({msg("user", user(0)), msg("assistant", answer), msg("user", user(1)),
                                     msg("assistant", answer), msg("user", user(2))}));
    EXPECT_EQ(t2["max_completion_tokens"], 4);
    EXPECT_GE(seen.at(id + "1").received, seen.at(id + "0").chunk_times.back());
    EXPECT_GE(seen.at(id + "2").received, seen.at(id + "1").chunk_times.back());
  }
  // --session-concurrency 1: one conversation after the other (which one first is the I/O threads' race).
  const bool zero_first = seen.at("mt-0-0").received < seen.at("mt-1-0").received;
  const std::string first = zero_first ? "mt-0-" : "mt-1-", second = zero_first ? "mt-1-" : "mt-0-";
  EXPECT_GE(seen.at(second + "0").received, seen.at(first + "2").chunk_times.back());

  // Client-side input count of turn 2: the user turns 0-2 (GPT-2 tokens, no special tokens) + two answers
  // of 4.
  const auto tok = tokenizer::load_tokenizer(tokenizer_.string());
  int expected = 8;
  for (int t = 0; t < 3; ++t) expected += static_cast<int>(tok.encode(user(t), false).size());
  EXPECT_EQ(r.outputs[2].dataset_prompt_len, expected);
  // Input tokens are the server's usage (the test server reports the size of the messages JSON).
  EXPECT_EQ(r.outputs[2].prompt_len, static_cast<int>(t2_size(seen.at("mt-0-2").body)));

  const auto& mt = r.result_json["servelab"]["multi_turn"];
  EXPECT_EQ(mt["history"], "server");
  EXPECT_EQ(mt["session_concurrency"], 1);
  EXPECT_EQ(mt["conversations"], 2);
  EXPECT_EQ(mt["completed_conversations"], 2);
  EXPECT_EQ(mt["turns_total"], 6);
  EXPECT_EQ(mt["turns_completed"], 6);
  ASSERT_EQ(mt["per_turn"].size(), 3u);
  for (int t = 0; t < 3; ++t) {
    EXPECT_EQ(mt["per_turn"][t]["turn"], t);
    EXPECT_EQ(mt["per_turn"][t]["sent"], 2);
    EXPECT_EQ(mt["per_turn"][t]["completed"], 2);
    EXPECT_EQ(mt["per_turn"][t]["ttft"]["count"], 2);
    EXPECT_EQ(mt["per_turn"][t]["mean_output_tokens"], 4.0);
    EXPECT_GE(mt["per_turn"][t]["ttft"]["mean_ms"].get<double>(), 2.0);  // the server's TTFT is 2 ms
  }
  EXPECT_EQ(mt["conversation_duration"]["count"], 2);
  EXPECT_EQ(mt["session_wait"]["count"], 2);    // first turns
  EXPECT_EQ(mt["next_turn_wait"]["count"], 4);  // turns 2 and 3
  // Three turns of >= 2 ms TTFT + 3 ms of tokens each.
  EXPECT_GE(mt["conversation_duration"]["mean_ms"].get<double>(), 3 * 5.0);
  EXPECT_EQ(r.metrics.completed, 6);
  EXPECT_NE(r.console_report.find("-------------- multi-turn sessions ---------------\n"), std::string::npos)
      << r.console_report;
  EXPECT_NE(r.console_report.find("Completed conversations:                 2"), std::string::npos);
  EXPECT_NE(r.console_report.find("History sent with each turn:             server answers"),
            std::string::npos);
}

TEST_F(Sessions, DatasetHistorySendsTheRecordedAnswers) {
  StreamServer server(StreamServerOptions{});
  RunOptions c = multi_turn_config(server.port());
  c.multi_turn_history = "dataset";
  c.num_prompts = 1;
  c.multi_turn_max_turns = 2;
  c.sharegpt_output_len.reset();  // max_tokens = the recorded answer's length
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(c, {}, io);
  const auto seen = by_id(server);
  const auto t1 = nlohmann::json::parse(seen.at("mt-0-1").body);
  EXPECT_EQ(t1["messages"], nlohmann::json::array(
                                {msg("user", user(0)), msg("assistant", recorded(0)), msg("user", user(1))}));
  const auto tok = tokenizer::load_tokenizer(tokenizer_.string());
  EXPECT_EQ(t1["max_completion_tokens"], static_cast<int>(tok.encode(recorded(1), false).size()));
  EXPECT_EQ(r.outputs[1].dataset_prompt_len,
            static_cast<int>(tok.encode(user(0), false).size() + tok.encode(recorded(0), false).size() +
                             tok.encode(user(1), false).size()));
  EXPECT_EQ(r.result_json["servelab"]["multi_turn"]["history"], "dataset");
}

TEST_F(Sessions, SelfTimedTraceIsSentAtTheScaledTimestampsWithSharedPrefixes) {
  const auto trace =
      std::filesystem::temp_directory_path() / ("servelab_trace_" + std::to_string(::getpid()) + ".jsonl");
  std::ofstream(trace)
      << "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 3, \"hash_ids\": [11, 12]}\n"
         "{\"timestamp\": 40, \"input_length\": 520, \"output_length\": 2, \"hash_ids\": [11, 13]}\n"
         "{\"timestamp\": 20, \"input_length\": 7, \"output_length\": 5, \"hash_ids\": [14]}\n";
  StreamServer server(StreamServerOptions{});
  RunOptions c;
  c.port = server.port();
  c.model = "gpt2";
  c.tokenizer = tokenizer_.string();
  c.dataset_name = "timed_trace";
  c.dataset_path = trace.string();
  c.self_timed = true;
  c.timed_trace_sec_multiplier = 0.002;  // twice as slow as the trace's milliseconds
  c.request_id_prefix = "tr-";
  c.ready_check_timeout_s = 0;
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(c, {}, io);
  ASSERT_EQ(r.outputs.size(), 3u);
  // Send order is timestamp order; intended send times = timestamp x 0.002 s.
  EXPECT_EQ(r.outputs[0].intended_send_time_s, 0 * 0.002);
  EXPECT_EQ(r.outputs[1].intended_send_time_s, 20 * 0.002);
  EXPECT_EQ(r.outputs[2].intended_send_time_s, 40 * 0.002);
  for (const auto& o : r.outputs) {
    ASSERT_TRUE(o.success) << o.error;
    EXPECT_GE(o.dispatch_time_s, o.intended_send_time_s);
  }
  const auto seen = by_id(server);
  const auto a = nlohmann::json::parse(seen.at("tr-0").body), b = nlohmann::json::parse(seen.at("tr-1").body),
             d = nlohmann::json::parse(seen.at("tr-2").body);
  ASSERT_EQ(a["prompt"].size(), 600u);
  ASSERT_EQ(b["prompt"].size(), 7u);
  ASSERT_EQ(d["prompt"].size(), 520u);
  EXPECT_EQ(a["max_tokens"], 3);
  EXPECT_EQ(b["max_tokens"], 5);
  EXPECT_EQ(d["max_tokens"], 2);
  EXPECT_EQ(a["ignore_eos"], true);  // forced for timed_trace
  // Hash id 11 is the first block of both: 512 shared tokens, then they differ (blocks 12 and 13).
  for (int j = 0; j < 512; ++j) ASSERT_EQ(a["prompt"][j], d["prompt"][j]) << j;
  int same = 0;
  for (int j = 512; j < 520; ++j) same += a["prompt"][j] == d["prompt"][j];
  EXPECT_LT(same, 8);
  EXPECT_GE(r.outputs[2].send_time_s, 0.080);  // never before its time (a lower bound: the client may lag)
  EXPECT_EQ(r.metrics.total_input, 600 + 7 + 520);
  EXPECT_EQ(r.result_json["servelab"]["timed_trace"]["self_timed"], true);
  std::filesystem::remove(trace);
}

TEST(SessionMetrics, HandComputedFromRecords) {
  dataset::ChatConversation a, b;
  a.id = "a";
  a.turns = {{"q0", "r0", 1, 1, 2}, {"q1", "r1", 1, 1, 2}};
  b = a;
  b.id = "b";
  auto w = detail::make_multi_turn({a, b}, detail::HistoryMode::kDataset, "x-", 0, 0.5);
  ASSERT_EQ(w.requests.size(), 4u);
  EXPECT_EQ(w.requests[3].request_id, "x-1-1");
  EXPECT_EQ(w.requests[1].prompt_len, 3);  // q0 + r0 + q1
  std::vector<metrics::RequestOutput> out(4);
  // a: turn 0 sent at 1.0 s (arrived at 0), TTFT 0.1, E2EL 0.5; turn 1 intended 1.7, sent 1.75, TTFT 0.2,
  // E2EL 1.0.
  out[0].success = true, out[0].send_time_s = 1.0, out[0].ttft_s = 0.1, out[0].latency_s = 0.5;
  out[0].prompt_len = 10, out[0].output_tokens = 4;
  out[1].success = true, out[1].intended_send_time_s = 1.7, out[1].dispatch_time_s = 1.7,
  out[1].send_time_s = 1.75;
  out[1].ttft_s = 0.2, out[1].latency_s = 1.0, out[1].prompt_len = 20, out[1].output_tokens = 6;
  // b: turn 0 sent at 2.0 s and failed; turn 1 never sent.
  out[2].failure = metrics::FailureKind::kHttpStatus, out[2].send_time_s = 2.0, out[2].dispatch_time_s = 2.0;
  out[3].failure = metrics::FailureKind::kCancelled;
  const auto m = detail::session_metrics(w, out, 4.0, {50});
  EXPECT_EQ(m.conversations, 2);
  EXPECT_EQ(m.completed, 1);
  EXPECT_EQ(m.turns_total, 4);
  EXPECT_EQ(m.turns_completed, 2);
  EXPECT_DOUBLE_EQ(m.conversation_throughput, 0.25);                // 1 conversation / 4 s
  EXPECT_DOUBLE_EQ(m.duration.mean_ms, (1.75 + 1.0 - 1.0) * 1000);  // last end - first send
  EXPECT_DOUBLE_EQ(m.session_wait.mean_ms, (1.0 + 2.0) / 2 * 1000);
  EXPECT_DOUBLE_EQ(m.turn_wait.mean_ms, (1.75 - 1.7) * 1000);
  ASSERT_EQ(m.per_turn.size(), 2u);
  EXPECT_EQ(m.per_turn[0].sent, 2);
  EXPECT_EQ(m.per_turn[0].completed, 1);
  EXPECT_EQ(m.per_turn[0].not_sent, 0);
  EXPECT_DOUBLE_EQ(m.per_turn[0].ttft.mean_ms, 100.0);
  EXPECT_DOUBLE_EQ(m.per_turn[0].e2el.percentiles_ms[0].value_ms, 500.0);
  EXPECT_EQ(m.per_turn[1].sent, 1);
  EXPECT_EQ(m.per_turn[1].not_sent, 1);
  EXPECT_DOUBLE_EQ(m.per_turn[1].ttft.mean_ms, 200.0);
  EXPECT_DOUBLE_EQ(m.per_turn[1].mean_input_tokens, 20.0);
  EXPECT_DOUBLE_EQ(m.per_turn[1].mean_output_tokens, 6.0);
  const auto j = detail::session_metrics_json(m, detail::HistoryMode::kDataset, 500.0, 0);
  EXPECT_EQ(j["history"], "dataset");
  EXPECT_TRUE(j["session_concurrency"].is_null());
  EXPECT_EQ(j["per_turn"][1]["not_sent"], 1);
  EXPECT_EQ(j["conversation_duration"]["p50_ms"], 1750.0);
}

std::string config_error(RunOptions c) {
  try {
    resolve(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(SessionFlags, CombinationsAreChecked) {
  RunOptions c;
  c.dataset_name = "sharegpt";
  c.dataset_path = "x.json";
  c.multi_turn = true;
  EXPECT_EQ(config_error(c),
            "--multi-turn sends chat messages: use --backend openai-chat --endpoint /v1/chat/completions");
  c.backend = "openai-chat";
  c.endpoint = "/v1/chat/completions";
  EXPECT_EQ(config_error(c), "no error");
  c.session_concurrency = 0;
  EXPECT_EQ(config_error(c), "--session-concurrency must be >= 1 (got 0)");
  c.session_concurrency = 4;
  c.multi_turn_think_time_ms = -1;
  EXPECT_EQ(config_error(c), "--multi-turn-think-time-ms must be in [0, 1e9] (got -1.0)");
  c.multi_turn_think_time_ms = 500;
  c.dataset_name = "custom";
  EXPECT_EQ(config_error(c),
            "--multi-turn reads ShareGPT conversations: use --dataset-name sharegpt (got custom)");
  c.dataset_name = "sharegpt";
  c.multi_turn = false;
  EXPECT_EQ(
      config_error(c),
      "--multi-turn-history, --multi-turn-think-time-ms, --multi-turn-max-turns and --session-concurrency "
      "need --multi-turn");

  RunOptions t;
  t.dataset_name = "timed_trace";
  t.dataset_path = "trace.jsonl";
  EXPECT_EQ(config_error(t), "no error");
  t.timed_trace_sec_multiplier = 0;
  EXPECT_EQ(config_error(t), "--timed-trace-sec-multiplier must be > 0 and at most 1e6 (got 0.0)");
  t.timed_trace_sec_multiplier = 0.001;
  t.backend = "openai-chat";
  t.endpoint = "/v1/chat/completions";
  EXPECT_EQ(config_error(t),
            "--dataset-name timed_trace sends token-id prompts: use --backend openai or vllm (the "
            "completions API), "
            "not openai-chat");
  RunOptions s;
  s.self_timed = true;
  EXPECT_EQ(config_error(s), "--self-timed is only for --dataset-name timed_trace");
}

}  // namespace
}  // namespace servelab::bench
