// Multi-turn conversations (sample_conversations) and Mooncake-style traces (load_trace), against
// hand-written files and the real multi-turn ShareGPT record in ../shared/data, with hand-computed
// expectations.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "servelab/common/paths.h"
#include "servelab/dataset/multi_turn.h"
#include "test_util.h"

namespace servelab::dataset {
namespace {

using testing::words;

std::filesystem::path write_file(const std::string& name, const std::string& text) {
  const auto path =
      std::filesystem::temp_directory_path() / ("servelab_mt_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << text;
  return path;
}

std::filesystem::path tiny_multiturn() {
  return common::data_dir() / "sharegpt_v4.3_tiny_multiturn.json";
}

TEST(MultiTurn, RealShareGptConversationBecomesSixUserTurnsWithTheirAnswers) {
  MultiTurnOptions o;
  o.num_conversations = 1;
  const auto convs = sample_conversations(tiny_multiturn(), o, words);
  ASSERT_EQ(convs.size(), 1u);
  const ChatConversation& c = convs[0];
  EXPECT_EQ(c.id, "QWJhYvA_0");
  EXPECT_EQ(c.system, "");
  ASSERT_EQ(c.turns.size(), 6u);  // 12 alternating human/gpt turns
  // Word counts of the file's turns (python: len(t['value'].split())).
  const int user_words[] = {29, 28, 14, 31, 6, 9};
  const int answer_words[] = {202, 260, 223, 253, 255, 200};
  for (std::size_t t = 0; t < 6; ++t) {
    EXPECT_EQ(c.turns[t].user_tokens, user_words[t]) << t;
    EXPECT_EQ(c.turns[t].answer_tokens, answer_words[t]) << t;
    EXPECT_EQ(c.turns[t].output_len, answer_words[t]) << t;
  }
  EXPECT_EQ(c.turns[0].user.rfind("Summarize the main ideas of Jeff Walker's Product", 0), 0u);
  EXPECT_EQ(c.turns[4].user.rfind("Summarize Russell Brunson's Perfect Webinar Script", 0), 0u);
  EXPECT_EQ(c.turns[5].answer.rfind("Tony Robbins describes six core human needs", 0), 0u);

  o.max_turns = 2;
  o.output_len = 50;
  const auto cut = sample_conversations(tiny_multiturn(), o, words);
  ASSERT_EQ(cut[0].turns.size(), 2u);
  EXPECT_EQ(cut[0].turns[1].output_len, 50);
  EXPECT_EQ(cut[0].turns[1].answer_tokens, 260);
}

TEST(MultiTurn, SystemPromptBrokenAlternationAndUnansweredTurns) {
  const auto path = write_file("edges.json", R"([
    {"id": "r0", "conversations": [{"from": "system", "value": "be brief"}, {"from": "human", "value": "q one"},
       {"from": "gpt", "value": "a b c"}, {"from": "human", "value": "q two"}, {"from": "human", "value": "q three"}]},
    {"id": "r1", "conversations": [{"from": "human", "value": "x"}, {"from": "gpt", "value": "y y"},
       {"from": "human", "value": "z z z"}]},
    {"id": "r2", "conversations": [{"from": "gpt", "value": "hello"}, {"from": "human", "value": "hi"}]}
  ])");
  MultiTurnOptions o;
  o.num_conversations = 2;
  o.disable_shuffle = true;
  std::vector<std::string> warnings;
  auto convs = sample_conversations(path, o, words, &warnings);
  ASSERT_EQ(convs.size(), 2u);
  EXPECT_EQ(convs[0].id, "r0");
  EXPECT_EQ(convs[0].system, "be brief");
  EXPECT_EQ(convs[0].system_tokens, 2);
  ASSERT_EQ(convs[0].turns.size(), 1u);  // "q two" has no answer (a second user turn follows)
  EXPECT_EQ(convs[0].turns[0].answer, "a b c");
  EXPECT_EQ(convs[1].id, "r1");
  ASSERT_EQ(convs[1].turns.size(), 1u);  // the unanswered "z z z" is left out without a fixed output length
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(
      warnings[0],
      "multi-turn: of 3 records, 2 cut where the turns stop alternating user/assistant, 2 with a last user "
      "turn left out (no recorded answer to size it; give --sharegpt-output-len to keep it), 1 dropped "
      "without any turn");

  o.output_len = 7;  // now the unanswered turns are kept
  convs = sample_conversations(path, o, words);
  ASSERT_EQ(convs[0].turns.size(), 2u);
  EXPECT_EQ(convs[0].turns[1].user, "q two");
  EXPECT_EQ(convs[0].turns[1].answer, "");
  EXPECT_EQ(convs[0].turns[1].output_len, 7);
  ASSERT_EQ(convs[1].turns.size(), 2u);
  EXPECT_EQ(convs[1].turns[1].user_tokens, 3);
  std::filesystem::remove(path);
}

TEST(MultiTurn, ShuffleAndOversampleFollowPythonRandom) {
  std::string five = "[";
  for (int i = 0; i < 5; ++i) {
    five += (i ? "," : "") + std::string(R"({"id": "c)") + std::to_string(i) +
            R"(", "conversations": [{"from": "human", "value": "u"}, {"from": "gpt", "value": "a a"}]})";
  }
  const auto path = write_file("five.json", five + "]");
  MultiTurnOptions o;
  o.num_conversations = 3;
  o.seed = 3;
  // random.seed(3); random.shuffle([0, 1, 2, 3, 4]) -> [0, 2, 3, 4, 1]; the first three.
  auto convs = sample_conversations(path, o, words);
  ASSERT_EQ(convs.size(), 3u);
  EXPECT_EQ(convs[0].id, "c0");
  EXPECT_EQ(convs[1].id, "c2");
  EXPECT_EQ(convs[2].id, "c3");
  // Short of 8 with shuffling off: [c0..c4], then random.seed(3); random.choice x3 -> indexes 1, 4, 4.
  o.num_conversations = 8;
  o.disable_shuffle = true;
  convs = sample_conversations(path, o, words);
  ASSERT_EQ(convs.size(), 8u);
  EXPECT_EQ(convs[5].id, "c1#1");
  EXPECT_EQ(convs[6].id, "c4#1");
  EXPECT_EQ(convs[7].id, "c4#2");
  o.no_oversample = true;
  EXPECT_EQ(sample_conversations(path, o, words).size(), 5u);
  std::filesystem::remove(path);
}

TEST(MultiTurn, NoUsableConversationIsAnError) {
  const auto path = write_file("none.json", R"([{"id": "g", "conversations": [{"from": "gpt", "value": "a"},
      {"from": "human", "value": "b"}]}])");
  MultiTurnOptions o;
  try {
    sample_conversations(path, o, words);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no usable conversation (1 records"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// ---- traces

TraceOptions trace_options() {
  TraceOptions o;
  o.request_id_prefix = "p";
  o.vocab_size = 10;
  o.special_ids = {0, 1};
  return o;
}

TEST(Trace, BlockTokensAreSplitMix64OverSeedHashAndPosition) {
  const std::vector<std::int32_t> allowed = {2, 3, 4, 5, 6, 7, 8, 9};
  // Python: allowed[sm(sm(sm(seed) ^ h) ^ j) % 8] with SplitMix64 sm.
  const int seed0_hash5[] = {7, 8, 7, 6, 7, 9};
  const int seed1_hash5[] = {5, 9, 7, 9, 2, 9};
  const int seed0_hash6[] = {7, 9, 4, 2, 9, 3};
  for (int j = 0; j < 6; ++j) {
    EXPECT_EQ(trace_block_token(0, 5, j, allowed), seed0_hash5[j]) << j;
    EXPECT_EQ(trace_block_token(1, 5, j, allowed), seed1_hash5[j]) << j;
    EXPECT_EQ(trace_block_token(0, 6, j, allowed), seed0_hash6[j]) << j;
  }
}

TEST(Trace, SharedHashIdsAreSharedPrefixesAndRecordsGoInTimeOrder) {
  const auto path = write_file(
      "trace.jsonl",
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 10, \"hash_ids\": [0, 1]}\n"
      "{\"timestamp\": 1500, \"input_length\": 1024, \"output_length\": 20, \"hash_ids\": [0, 1]}\n"
      "\n"
      "{\"timestamp\": 700.5, \"input_length\": 100, \"output_length\": 5, \"hash_ids\": [7]}\n"
      "{\"timestamp\": 2000, \"input_length\": 5, \"output_length\": 5, \"hash_ids\": [9]}\n");
  TraceOptions o = trace_options();
  o.num_prompts = 3;  // the first three records of the file
  std::vector<std::string> warnings;
  const auto reqs = load_trace(path, o, &warnings);
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].line, 1u);
  EXPECT_EQ(reqs[1].line, 4u);
  EXPECT_EQ(reqs[2].line, 2u);
  EXPECT_EQ(reqs[1].timestamp_ms, 700.5);
  EXPECT_EQ(reqs[0].request_id, "p0");
  EXPECT_EQ(reqs[1].request_id, "p1");
  EXPECT_EQ(reqs[2].request_id, "p2");
  EXPECT_EQ(reqs[0].output_len, 10);
  EXPECT_EQ(reqs[2].output_len, 20);
  ASSERT_EQ(reqs[0].prompt_token_ids.size(), 600u);
  ASSERT_EQ(reqs[1].prompt_token_ids.size(), 100u);
  ASSERT_EQ(reqs[2].prompt_token_ids.size(), 1024u);
  // Blocks 0 and 1 are the same tokens in both requests: the 600-token prompt is a prefix of the 1024 one.
  EXPECT_TRUE(std::equal(reqs[0].prompt_token_ids.begin(), reqs[0].prompt_token_ids.end(),
                         reqs[2].prompt_token_ids.begin()));
  const std::vector<std::int32_t> allowed = {2, 3, 4, 5, 6, 7, 8, 9};
  for (int j = 0; j < 512; ++j) ASSERT_EQ(reqs[2].prompt_token_ids[j], trace_block_token(0, 0, j, allowed));
  for (int j = 0; j < 512; ++j)
    ASSERT_EQ(reqs[2].prompt_token_ids[512 + j], trace_block_token(0, 1, j, allowed));
  for (int j = 0; j < 100; ++j) ASSERT_EQ(reqs[1].prompt_token_ids[j], trace_block_token(0, 7, j, allowed));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "timed_trace: records were not in timestamp order; sent in timestamp order");

  o.num_prompts = 10;
  o.output_len = 3;
  warnings.clear();
  const auto all = load_trace(path, o, &warnings);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all[3].output_len, 3);
  EXPECT_EQ(warnings.back(),
            "timed_trace: the trace has 4 records, fewer than --num-prompts 10; all are sent");
  std::filesystem::remove(path);
}

std::string trace_error(const std::string& line) {
  const auto path = write_file(
      "bad.jsonl",
      "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 1, \"hash_ids\": [1]}\n" + line + "\n");
  std::string what = "no error";
  try {
    TraceOptions o = trace_options();
    load_trace(path, o);
  } catch (const std::runtime_error& e) {
    what = e.what();
    what = what.substr(what.find(".jsonl:") + 7);  // from the line number on
  }
  std::filesystem::remove(path);
  return what;
}

TEST(Trace, MalformedRecordsNameTheLineAndField) {
  EXPECT_EQ(trace_error("[1, 2]"), "2: not a JSON object");
  EXPECT_EQ(trace_error(R"({"input_length": 3, "output_length": 1, "hash_ids": [1]})"),
            "2: \"timestamp\" (ms) must be a finite number >= 0");
  EXPECT_EQ(trace_error(R"({"timestamp": 1, "input_length": 0, "output_length": 1, "hash_ids": [1]})"),
            "2: \"input_length\" must be an integer in [1, 2^30], got 0");
  EXPECT_EQ(trace_error(R"({"timestamp": 1, "input_length": 3, "hash_ids": [1]})"),
            "2: missing \"output_length\"");
  EXPECT_EQ(trace_error(R"({"timestamp": 1, "input_length": 513, "output_length": 1, "hash_ids": [1]})"),
            "2: input_length 513 does not fit 1 hash ids of 512 tokens (needs 0 < input_length <= 512)");
  EXPECT_EQ(trace_error(R"({"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": [-4]})"),
            "2: hash_ids[0] must be an integer >= 0, got -4");
  EXPECT_EQ(trace_error(R"({"timestamp": 1, "input_length": 3, "output_length": 1, "hash_ids": 5})"),
            "2: \"hash_ids\" must be an array of integers");
}

}  // namespace
}  // namespace servelab::dataset
