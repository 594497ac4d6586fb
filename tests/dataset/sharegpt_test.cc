// ShareGPT loading (real files in shared/data, malformed files) and vLLM ShareGPTDataset sampling against
// a Python re-statement of vLLM's code (tests/dataset/oracles) with a fake token counter.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "test_util.h"

namespace servelab::dataset {
namespace {

std::filesystem::path data(const char* name) {
  return common::data_dir() / name;
}

std::filesystem::path write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("servelab_dataset_" + name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

DatasetOptions sharegpt_options(const std::filesystem::path& path, int n, std::int64_t seed) {
  DatasetOptions o;
  o.dataset_name = "sharegpt";
  o.dataset_path = path.string();
  o.num_prompts = n;
  o.seed = seed;
  return o;
}

TEST(ShareGptLoad, FirstTurnOnlyFileHasNoUsableRecordAndSamplingSaysWhy) {
  const ShareGptFile f = load_sharegpt_file(data("sharegpt_v3_first_turn_1000.json"));
  EXPECT_EQ(f.num_records(), 1000u);
  EXPECT_EQ(f.size(), 0u);
  try {
    sample_sharegpt(f, sharegpt_options(f.path(), 10, 0), testing::fake_count);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("sharegpt_v3_first_turn_1000.json"), std::string::npos) << msg;
    EXPECT_NE(msg.find("at least 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("1000 records"), std::string::npos) << msg;
  }
}

TEST(ShareGptLoad, PairsFileMatchesNlohmannParse) {
  const auto path = data("sharegpt_pairs_sample.json");
  const ShareGptFile f = load_sharegpt_file(path);
  const nlohmann::json j = nlohmann::json::parse(common::read_file(path));
  ASSERT_EQ(f.num_records(), j.size());
  ASSERT_EQ(f.size(), 50u);
  for (std::size_t i = 0; i < f.size(); ++i) {
    ASSERT_EQ(f.record_index(i), i);
    EXPECT_EQ(f.prompt(i), j[i]["conversations"][0]["value"].get<std::string>()) << i;
    EXPECT_EQ(f.completion(i), j[i]["conversations"][1]["value"].get<std::string>()) << i;
  }
}

TEST(ShareGptLoad, EveryShareGptFormFileLoadsLikeNlohmann) {
  const auto files = find_sharegpt_files();
  ASSERT_EQ(files.size(), 5u);  // alpaca x2, arena-hard, mt-bench x2 (see shared/data/SOURCES.md)
  for (const auto& path : files) {
    const ShareGptFile f = load_sharegpt_file(path);
    const nlohmann::json j = nlohmann::json::parse(common::read_file(path));
    ASSERT_EQ(f.size(), j.size()) << path;
    EXPECT_EQ(f.prompt(f.size() - 1), j.back()["conversations"][0]["value"].get<std::string>()) << path;
    EXPECT_EQ(f.completion(f.size() - 1), j.back()["conversations"][1]["value"].get<std::string>()) << path;
  }
}

TEST(ShareGptLoad, MalformedFilesNameFileRecordAndProblem) {
  struct Case {
    const char* name;
    const char* text;
    const char* expect;
  } cases[] = {
      {"top.json", R"({"conversations": []})", "top level must be a JSON array"},
      {"notobj.json", R"([{"conversations": [{"value": "a"}, {"value": "b"}]}, 3])",
       "record 1: not a JSON object"},
      {"convobj.json", R"([{"conversations": {"a": 1, "b": 2}}])",
       "record 0: \"conversations\" is not an array"},
      {"novalue.json", R"([{"conversations": [{"from": "human"}, {"value": "b"}]}])",
       "record 0: conversations[0].value: missing"},
      {"numvalue.json", R"([{"conversations": [{"value": "a"}, {"value": 5}]}])",
       "record 0: conversations[1].value is not a string"},
      {"broken.json", R"([{"conversations": [{"value": "a"}, {"value": "b"}]}, {"conversations": [)", ""},
      {"missing.json", nullptr, "cannot read"},
  };
  for (const auto& c : cases) {
    const auto path =
        c.text ? write_temp(c.name, c.text) : std::filesystem::path("/nonexistent/servelab.json");
    try {
      load_sharegpt_file(path);
      FAIL() << c.name << ": expected an error";
    } catch (const std::runtime_error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos) << c.name << ": " << msg;
    }
  }
}

TEST(ShareGptLoad, PageSizedAndEmptyFilesAreSafe) {
  // The file is memory-mapped with simdjson's padding behind it; a file of exactly one or two pages has no
  // slack in its last page, so the padding must come from the mapping behind it.
  for (std::size_t size : {std::size_t{4096}, std::size_t{8192}, std::size_t{65536}}) {
    std::string text = R"([{"conversations": [{"value": "hello"}, {"value": "world"}]}])";
    text.resize(size, ' ');
    const auto path = write_temp("page" + std::to_string(size) + ".json", text);
    ASSERT_EQ(std::filesystem::file_size(path), size);
    const ShareGptFile f = load_sharegpt_file(path);
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f.prompt(0), "hello");
    EXPECT_EQ(f.completion(0), "world");
  }
  const auto empty = write_temp("empty.json", "");
  EXPECT_THROW(load_sharegpt_file(empty), std::runtime_error);
}

TEST(ShareGptLoad, EscapesAndLoneSurrogates) {
  const auto path = write_temp(
      "escapes.json",
      R"([{"id": "x"}, {"conversations": [{"value": "a\"b\\c\/d\n\u00e9\ud83d\ude00"}, {"value": "lone \ud800 x \udc00"}]}])");
  const ShareGptFile f = load_sharegpt_file(path);
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f.record_index(0), 1u);
  EXPECT_EQ(f.prompt(0), "a\"b\\c/d\n\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(f.completion(0), "lone \xEF\xBF\xBD x \xEF\xBF\xBD");
}

TEST(ShareGptSample, MatchesVllmOnPairsSeed0HardCoded) {
  // python3 tests/dataset/oracles/vllm_datasets_oracle.py sharegpt .../sharegpt_pairs_sample.json 0 10 none
  const ShareGptFile f = load_sharegpt_file(data("sharegpt_pairs_sample.json"));
  auto o = sharegpt_options(f.path(), 10, 0);
  o.request_id_prefix = "bench-x-";
  const auto got = sample_sharegpt(f, o, testing::fake_count);
  const std::vector<std::array<int, 3>> want = {{28, 889, 382}, {38, 410, 496}, {11, 939, 168}, {40, 988, 76},
                                                {21, 766, 686}, {46, 887, 792}, {3, 856, 163},  {9, 996, 365},
                                                {4, 907, 115},  {35, 859, 682}};
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(got[i].prompt, f.prompt(static_cast<std::size_t>(want[i][0]))) << i;
    EXPECT_EQ(got[i].prompt_len, want[i][1]) << i;
    EXPECT_EQ(got[i].output_len, want[i][2]) << i;
    EXPECT_EQ(got[i].request_id, "bench-x-" + std::to_string(i));
  }
}

TEST(ShareGptSample, OversamplesWithRandomChoiceAfterReseeding) {
  // One usable record, asked for 3: the copies get ids 1 and 2.
  const ShareGptFile f = load_sharegpt_file(data("sharegpt_v4.3_tiny_multiturn.json"));
  auto o = sharegpt_options(f.path(), 3, 0);
  const auto got = sample_sharegpt(f, o, testing::fake_count);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].prompt_len, 48);
  EXPECT_EQ(got[0].output_len, 325);
  EXPECT_EQ(got[2].prompt, got[0].prompt);
  EXPECT_EQ(got[1].request_id, "1");
  EXPECT_EQ(got[2].request_id, "2");
  o.no_oversample = true;
  EXPECT_EQ(sample_sharegpt(f, o, testing::fake_count).size(), 1u);
}

TEST(ShareGptSample, FixedOutputLenSkipsMinOutputCheckAndFiltersTotal) {
  const ShareGptFile f = load_sharegpt_file(data("sharegpt_pairs_sample.json"));
  auto o = sharegpt_options(f.path(), 50, 3);
  o.sharegpt_output_len = 1;
  o.no_oversample = true;
  for (const auto& r : sample_sharegpt(f, o, testing::fake_count)) {
    EXPECT_EQ(r.output_len, 1);
    EXPECT_TRUE(r.prompt_len >= 4 && r.prompt_len <= 1024);
  }
  o.sharegpt_output_len = 2045;  // prompt_len >= 4 always: nothing passes prompt + output <= 2048
  EXPECT_THROW(sample_sharegpt(f, o, testing::fake_count), std::runtime_error);
}

TEST(ShareGptSample, MatchesPythonOracleAcrossSeedsAndFiles) {
  struct Case {
    const char* file;
    int seed, n;
    std::optional<int> fixed;
  } cases[] = {{"sharegpt_pairs_sample.json", 0, 60, std::nullopt},
               {"sharegpt_pairs_sample.json", 12345, 20, 100},
               {"alpaca_eval_gpt4_outputs.sharegpt.json", 7, 300, std::nullopt},
               {"arena_hard_v0.1_answer_gpt-4-0314.sharegpt.json", 99, 520, std::nullopt},
               {"mt_bench_answer_gpt-4.sharegpt.json", 1, 100, 256}};
  for (const auto& c : cases) {
    const auto path = data(c.file);
    const auto oracle = testing::run_oracle(
        "python3", "sharegpt " + path.string() + " " + std::to_string(c.seed) + " " + std::to_string(c.n) +
                       " " + (c.fixed ? std::to_string(*c.fixed) : std::string("none")));
    if (!oracle) FAIL() << "python3 not available (make deps installs it)";
    const ShareGptFile f = load_sharegpt_file(path);
    auto o = sharegpt_options(path, c.n, c.seed);
    o.sharegpt_output_len = c.fixed;
    const auto got = sample_sharegpt(f, o, testing::fake_count);
    ASSERT_EQ(got.size(), oracle->size()) << c.file;
    for (std::size_t i = 0; i < got.size(); ++i) {
      const auto& w = (*oracle)[i];
      ASSERT_EQ(got[i].prompt, f.prompt(w[0].get<std::size_t>())) << c.file << " #" << i;
      ASSERT_EQ(got[i].prompt_len, w[1].get<int>()) << c.file << " #" << i;
      ASSERT_EQ(got[i].output_len, w[2].get<int>()) << c.file << " #" << i;
      ASSERT_EQ(got[i].request_id, w[3].get<std::string>()) << c.file << " #" << i;
    }
  }
}

TEST(ShareGptSample, GeneratedLargeFormatFileMatchesPythonOracle) {
  // A small file from scripts/gen_large_sharegpt.py (indent-2, ASCII-escaped, multi-turn and first-turn-only
  // records, as the real 640 MB file): servelab and vLLM's rules in Python select the same prompts.
  const auto out = std::filesystem::temp_directory_path() / "servelab_dataset_gen_small.json";
  const std::string cmd = "python3 " + (common::source_dir() / "scripts/gen_large_sharegpt.py").string() +
                          " --size-mb 1.5 --seed 3 --data " + common::data_dir().string() + " --out " +
                          out.string() + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) FAIL() << "python3 not available (make deps installs it): " << cmd;
  const auto oracle = testing::run_oracle("python3", "sharegpt " + out.string() + " 11 150 none");
  ASSERT_TRUE(oracle.has_value());
  const ShareGptFile f = load_sharegpt_file(out);
  EXPECT_GT(f.num_records(), f.size());  // some first-turn-only records were dropped
  const auto got = sample_sharegpt(f, sharegpt_options(out, 150, 11), testing::fake_count);
  ASSERT_EQ(got.size(), oracle->size());
  std::size_t usable_index_of_record = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto record = (*oracle)[i][0].get<std::size_t>();
    // map the oracle's file-level record index to servelab's usable index
    usable_index_of_record = 0;
    while (f.record_index(usable_index_of_record) != record) ++usable_index_of_record;
    ASSERT_EQ(got[i].prompt, f.prompt(usable_index_of_record)) << i;
    ASSERT_EQ(got[i].prompt_len, (*oracle)[i][1].get<int>()) << i;
    ASSERT_EQ(got[i].output_len, (*oracle)[i][2].get<int>()) << i;
  }
}

TEST(Conversations, LoadsEveryTurnAndIds) {
  const auto tiny = load_conversations(data("sharegpt_v4.3_tiny_multiturn.json"));
  ASSERT_EQ(tiny.size(), 1u);
  EXPECT_EQ(tiny[0].id, "QWJhYvA_0");
  EXPECT_EQ(tiny[0].turns.size(), 12u);
  EXPECT_EQ(tiny[0].turns[0].from, "human");
  EXPECT_EQ(tiny[0].turns[1].from, "gpt");
  const auto pairs = load_conversations(data("sharegpt_pairs_sample.json"));
  ASSERT_EQ(pairs.size(), 50u);
  EXPECT_EQ(pairs[0].id, "aLzORDR_0");  // no top-level "id": taken from "conversation_id"
  const auto mt = load_conversations(data("mt_bench_answer_gpt-4.sharegpt.json"));
  ASSERT_EQ(mt.size(), 80u);
  for (const auto& c : mt) EXPECT_EQ(c.turns.size(), 4u) << c.id;
  EXPECT_EQ(load_conversations(data("alpaca_eval_gpt4_outputs.sharegpt.json"))[0].id, "alpaca_eval_gpt4_0");
  EXPECT_THROW(load_conversations(write_temp("conv_bad.json", R"([{"conversations": [{"value": "a"}]}])")),
               std::runtime_error);
}

}  // namespace
}  // namespace servelab::dataset
