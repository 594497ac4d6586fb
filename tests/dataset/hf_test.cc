// --dataset-name hf: a fake local HF cache (hub layout), split resolution, row order against the numpy
// oracle of HF datasets' shuffle, and vLLM 0.13's dataset classes on hand-computed samples.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "dataset/hf.h"
#include "servelab/dataset/dataset.h"
#include "test_util.h"

namespace servelab::dataset {
namespace {

using testing::error_of;
using testing::words_plus_bos;
using testing::wrap_chat;

namespace fs = std::filesystem;

fs::path temp_root(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("servelab_hf_" + std::to_string(::getpid())) / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

std::vector<std::string> rel(const std::vector<fs::path>& files, const fs::path& root) {
  std::vector<std::string> out;
  for (const auto& f : files) out.push_back(fs::relative(f, root).generic_string());
  return out;
}

using V = std::vector<std::string>;

TEST(HfSplits, ShardsFoldersFileNamesAndDefault) {
  fs::path r = temp_root("shards");
  write(r / "data/train-00000-of-00002.json", "[]");
  write(r / "data/train-00001-of-00002.json", "[]");
  write(r / "data/test-00000-of-00001.jsonl", "");
  write(r / "README.md", "# card");
  write(r / ".gitattributes", "*");
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "train"), r),
            (V{"data/train-00000-of-00002.json", "data/train-00001-of-00002.json"}));
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "test"), r), (V{"data/test-00000-of-00001.jsonl"}));
  EXPECT_NE(error_of([&] {
              detail::hf_split_files(r, std::nullopt, "validation");
            }).find("--hf-split validation: " + r.string() + " has no such split (found: test, train)"),
            std::string::npos);

  r = temp_root("folders");  // split folders win over keywords in file names
  write(r / "train/part_test.jsonl", "");
  write(r / "my-dev/a.jsonl", "");
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "train"), r), (V{"train/part_test.jsonl"}));
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "validation"), r), (V{"my-dev/a.jsonl"}));

  r = temp_root("names");
  write(r / "question_train.jsonl", "");
  write(r / "eval.json", "[]");
  write(r / "trainer.json", "[]");  // "train" not followed by a separator: no split keyword
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "train"), r), (V{"question_train.jsonl"}));
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "test"), r), (V{"eval.json"}));

  r = temp_root("plain");
  write(r / "question.jsonl", "");
  write(r / "sub/extra.json", "[]");
  EXPECT_EQ(rel(detail::hf_split_files(r, std::nullopt, "train"), r),
            (V{"question.jsonl", "sub/extra.json"}));
  EXPECT_EQ(rel(detail::hf_split_files(r, std::string("sub"), "train"), r / "sub"), (V{"extra.json"}));
  EXPECT_NE(
      error_of([&] { detail::hf_split_files(r, std::string("nope"), "train"); }).find("--hf-subset nope"),
      std::string::npos);

  r = temp_root("parquet");
  write(r / "data/train-00000-of-00001.parquet", "PAR1");
  const std::string e = error_of([&] { detail::hf_split_files(r, std::nullopt, "train"); });
  EXPECT_NE(e.find("split train is stored as parquet (data/train-00000-of-00001.parquet); servelab reads "
                   "JSON/JSONL HF datasets only"),
            std::string::npos)
      << e;
}

TEST(HfOrder, MatchesHfDatasetsShuffle) {
  // Hand value: one shard of 6 rows, seed 0: fewer rows than the buffer, so the order is
  // default_rng(0).shuffle([0..5]) = [3, 2, 5, 4, 0, 1].
  EXPECT_EQ(detail::hf_shuffled_order({6}, 0, true), (std::vector<std::size_t>{3, 2, 5, 4, 0, 1}));
  const auto stream = testing::run_oracle("/usr/bin/python3", "hf_order 42 1 700,900,5");
  const auto map = testing::run_oracle("/usr/bin/python3", "hf_order 3 0 20,7");
  ASSERT_TRUE(stream && map) << "the oracle needs Debian's /usr/bin/python3 with python3-numpy (make deps)";
  EXPECT_EQ(detail::hf_shuffled_order({700, 900, 5}, 42, true), stream->get<std::vector<std::size_t>>());
  EXPECT_EQ(detail::hf_shuffled_order({20, 7}, 3, false), map->get<std::vector<std::size_t>>());
}

class HfCache : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_root("cache");
    const char* old = std::getenv("HF_HUB_CACHE");
    if (old) old_ = old;
    setenv("HF_HUB_CACHE", root_.c_str(), 1);
  }
  void TearDown() override {
    if (old_) {
      setenv("HF_HUB_CACHE", old_->c_str(), 1);
    } else {
      unsetenv("HF_HUB_CACHE");
    }
  }
  fs::path snapshot(const std::string& repo, const std::string& rev) {
    write(root_ / repo / "refs" / "main", rev);
    return root_ / repo / "snapshots" / rev;
  }
  fs::path root_;
  std::optional<std::string> old_;
};

TEST_F(HfCache, MtBenchFromTheHubCache) {
  const fs::path snap = snapshot("datasets--philschmid--mt-bench", "c0ffee");
  write(root_ / "datasets--philschmid--mt-bench/snapshots/older/question.jsonl",
        "{\"turns\": [\"stale\"]}\n");
  std::string rows;
  for (int i = 0; i < 6; ++i)
    rows += "{\"question_id\": " + std::to_string(81 + i) + ", \"turns\": [\"q" + std::to_string(i) +
            " words here\", \"second\"]}\n";
  write(snap / "question.jsonl", rows);
  DatasetOptions o;
  o.dataset_name = "hf";
  o.dataset_path = "philschmid/mt-bench";
  o.num_prompts = 4;
  o.request_id_prefix = "m";
  // Streaming shuffle of 6 rows with seed 0 → rows 3, 2, 5, 4 (then 0, 1); MTBench: template, output 256.
  const auto out = detail::sample_hf(o, words_plus_bos, wrap_chat);
  ASSERT_EQ(out.size(), 4u);
  EXPECT_EQ(out[0].prompt, "<U>q3 words here<A>");
  EXPECT_EQ(out[1].prompt, "<U>q2 words here<A>");
  EXPECT_EQ(out[3].prompt, "<U>q4 words here<A>");
  EXPECT_EQ(out[0].prompt_len, 4);
  EXPECT_EQ(out[0].output_len, 256);
  EXPECT_EQ(out[3].request_id, "m3");
  o.skip_chat_template = true;
  o.hf_output_len = 9;
  o.disable_shuffle = true;
  o.num_prompts = 8;  // 6 rows: oversampled with Python random.seed(0) choices
  const auto raw = detail::sample_hf(o, words_plus_bos, wrap_chat);
  ASSERT_EQ(raw.size(), 8u);
  EXPECT_EQ(raw[0].prompt, "q0 words here");
  EXPECT_EQ(raw[0].output_len, 9);
  EXPECT_EQ(raw[7].request_id, "m7");
}

TEST_F(HfCache, ConversationsAndAimoFilters) {
  // Aeala/ShareGPT_Vicuna_unfiltered as a JSON array; --no-stream: default_rng(0).permutation(5).
  const fs::path snap = snapshot("datasets--Aeala--ShareGPT_Vicuna_unfiltered", "r1");
  auto conv = [](const std::string& h, const std::string& g) {
    return "{\"id\": \"x\", \"conversations\": [{\"from\": \"human\", \"value\": \"" + h +
           "\"}, {\"from\": \"gpt\", \"value\": \"" + g + "\"}]}";
  };
  write(snap / "ShareGPT_V4.3_unfiltered_cleaned_split.json",
        "[" + conv("a b c d", "e f g h") +
            ", {\"conversations\": [{\"from\": \"human\", \"value\": \"only\"}]}, " +
            conv("short", "reply is long enough") + ", " +
            conv("one two three four five", "six seven eight") + ", " + conv("w x y z", "reply of words") +
            "]");
  DatasetOptions o;
  o.dataset_name = "hf";
  o.dataset_path = "Aeala/ShareGPT_Vicuna_unfiltered";
  o.num_prompts = 2;
  o.no_stream = true;
  o.no_oversample = true;
  o.request_id_prefix = "c";
  EXPECT_NE(error_of([&] { detail::sample_hf(o, words_plus_bos, wrap_chat); }).find("give --hf-split"),
            std::string::npos);
  o.hf_split = "train";
  const auto perm = detail::hf_shuffled_order({5}, 0, false);
  // Rows with their lengths (words + BOS): 0 (5, 5) ok; 1 one turn (filtered); 2 (2, 5) prompt < 4;
  // 3 (6, 4) ok; 4 (5, 4) ok. Visit in `perm` order and keep the first two valid ones.
  std::vector<std::string> want;
  const std::vector<std::string> prompts = {"a b c d", "", "short", "one two three four five", "w x y z"};
  for (std::size_t i : perm) {
    if (i != 1 && i != 2 && want.size() < 2) want.push_back(prompts[i]);
  }
  const auto out = detail::sample_hf(o, words_plus_bos, wrap_chat);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].prompt, want[0]);  // the raw first turn, no chat template
  EXPECT_EQ(out[1].prompt, want[1]);
  EXPECT_EQ(out[1].request_id, "c1");
  // With --hf-output-len the length filter is off (vLLM checks is_valid_sequence only for dynamic output).
  o.hf_output_len = 3;
  o.num_prompts = 4;
  o.disable_shuffle = true;
  const auto fixed = detail::sample_hf(o, words_plus_bos, wrap_chat);
  ASSERT_EQ(fixed.size(), 4u);
  EXPECT_EQ(fixed[1].prompt, "short");
  EXPECT_EQ(fixed[1].output_len, 3);

  // AIMO: problem / solution, prompt <= 2048 and total <= 32000 (min 4 each); split forced to train.
  const fs::path aimo = snapshot("datasets--AI-MO--aimo-validation-aime", "r2");
  write(aimo / "data/train-00000-of-00001.jsonl",
        "{\"problem\": \"p q r s\", \"solution\": \"t u\"}\n{\"problem\": \"p q r s\", \"solution\": \"t u v "
        "w\"}\n");
  DatasetOptions a;
  a.dataset_name = "hf";
  a.dataset_path = "AI-MO/aimo-validation-aime";
  a.num_prompts = 1;
  a.disable_shuffle = true;
  const auto am = detail::sample_hf(a, words_plus_bos, wrap_chat);
  ASSERT_EQ(am.size(), 1u);
  EXPECT_EQ(am[0].prompt, "p q r s");
  EXPECT_EQ(am[0].output_len, 5);  // row 0's solution has 3 tokens (< 4): skipped
}

TEST_F(HfCache, InstructCoderPromptAndErrors) {
  const fs::path snap = snapshot("datasets--likaixin--InstructCoder", "r3");
  write(snap / "train.json",
        R"([{"input": "def f(): pass", "instruction": "Add a docstring."}, {"input": 3}])");
  DatasetOptions o;
  o.dataset_name = "hf";
  o.dataset_path = "likaixin/InstructCoder";
  o.num_prompts = 1;
  o.disable_shuffle = true;
  const std::string e = error_of([&] { detail::sample_hf(o, words_plus_bos, wrap_chat); });
  EXPECT_NE(e.find("train.json: record 1: the row has no string \"input\""), std::string::npos) << e;
  write(snap / "train.json", R"([{"input": "def f(): pass", "instruction": "Add a docstring."}])");
  const auto out = detail::sample_hf(o, words_plus_bos, wrap_chat);
  EXPECT_EQ(out[0].prompt,
            "<U>def f(): pass\n\nAdd a docstring. Just output the code, do not include any explanation.<A>");
  EXPECT_EQ(out[0].output_len, 200);

  DatasetOptions u = o;
  u.dataset_path = "lmarena-ai/VisionArena-Chat";
  EXPECT_NE(error_of([&] { detail::sample_hf(u, words_plus_bos, wrap_chat); }).find("multimodal (images)"),
            std::string::npos);
  u.dataset_path = "someone/unknown";
  EXPECT_NE(error_of([&] {
              detail::sample_hf(u, words_plus_bos, wrap_chat);
            }).find("Unsupported dataset path: someone/unknown. Huggingface dataset only supports"),
            std::string::npos);
  u.dataset_path = "philschmid/mt-bench";  // not in this cache
  EXPECT_NE(error_of([&] {
              detail::sample_hf(u, words_plus_bos, wrap_chat);
            }).find("philschmid/mt-bench: the dataset is not in the local Hugging Face cache"),
            std::string::npos);
  u.dataset_path = snap.string();  // a local folder: the class comes from --hf-name
  EXPECT_NE(error_of([&] { detail::sample_hf(u, words_plus_bos, wrap_chat); }).find("needs --hf-name"),
            std::string::npos);
  u.hf_name = "likaixin/InstructCoder";
  EXPECT_EQ(detail::sample_hf(u, words_plus_bos, wrap_chat).at(0).prompt, out[0].prompt);
}

}  // namespace
}  // namespace servelab::dataset
