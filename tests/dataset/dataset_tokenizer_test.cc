// sample_requests() end to end with the real DeepSeek-V3 and GPT-2 tokenizers: exact random-prompt lengths
// after the decode/re-encode fix-up, BOS-inclusive ShareGPT lengths, the DeepSeek chat template of the
// custom dataset, prefix_repetition and real reply lengths of the ShareGPT-form files.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>

#include <fstream>
#include <map>
#include <set>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/schedule/rng.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::dataset {
namespace {

const tokenizer::Tokenizer& deepseek() {
  static const tokenizer::Tokenizer t = tokenizer::load_tokenizer("deepseek-ai/DeepSeek-V3");
  return t;
}

const tokenizer::Tokenizer& gpt2() {
  static const tokenizer::Tokenizer t =
      tokenizer::Tokenizer::from_file(common::data_dir() / "gpt2-tokenizer.json");
  return t;
}

TEST(RandomWithTokenizer, DeepSeekPromptsReEncodeToExactlyTheirTargetLength) {
  DatasetOptions o;
  o.num_prompts = 40;
  o.random_input_len = 300;
  o.random_output_len = 64;
  o.random_range_ratio = {0.5, 0.25};
  o.random_prefix_len = 20;
  o.seed = 0;
  o.request_id_prefix = "bench-1234abcd-";
  ASSERT_EQ(deepseek().num_special_tokens_to_add(), 1u);
  std::vector<std::string> warnings;
  const auto got = sample_requests(o, deepseek(), &warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  // The target lengths are numpy's draws: real input 299 → [149, 449]; output [48, 80].
  schedule::NumpyGenerator rng(0);
  const auto input_lens = rng.integers(149, 450, 40);
  const auto output_lens = rng.integers(48, 81, 40);
  ASSERT_EQ(got.size(), 40u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const auto ids = deepseek().encode(got[i].prompt, false);
    EXPECT_EQ(static_cast<std::int64_t>(ids.size()), 20 + input_lens[i]) << i;
    EXPECT_EQ(got[i].prompt_len, static_cast<int>(ids.size())) << i;
    EXPECT_EQ(got[i].output_len, output_lens[i]) << i;
    EXPECT_EQ(got[i].request_id, "bench-1234abcd-" + std::to_string(i));
  }
  // Same seed, same prompts; another seed, other prompts.
  const auto again = sample_requests(o, deepseek());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(again[i].prompt, got[i].prompt);
  o.seed = 1;
  EXPECT_NE(sample_requests(o, deepseek())[0].prompt, got[0].prompt);
}

TEST(RandomWithTokenizer, Gpt2HasNoSpecialTokensToAddAndExcludesEndOfText) {
  DatasetOptions o;
  o.num_prompts = 20;
  o.random_input_len = 128;
  o.random_output_len = 16;
  ASSERT_EQ(gpt2().num_special_tokens_to_add(), 0u);
  for (const auto& r : sample_requests(o, gpt2())) {
    const auto ids = gpt2().encode(r.prompt, false);
    EXPECT_EQ(ids.size(), 128u);  // no BOS to subtract, range ratio 0
    EXPECT_EQ(r.prompt_len, 128);
    EXPECT_EQ(r.output_len, 16);
  }
}

TEST(ShareGptWithTokenizer, LengthsIncludeBosAndFiltersHold) {
  DatasetOptions o;
  o.dataset_name = "sharegpt";
  o.dataset_path = (common::data_dir() / "sharegpt_pairs_sample.json").string();
  o.num_prompts = 30;
  o.no_oversample = true;
  const ShareGptFile file = load_sharegpt_file(*o.dataset_path);
  const auto got = sample_requests(o, deepseek());
  ASSERT_FALSE(got.empty());
  for (const auto& r : got) {
    const auto ids = deepseek().encode(r.prompt, true);
    ASSERT_FALSE(ids.empty());
    EXPECT_EQ(ids.front(), 0);  // <｜begin▁of▁sentence｜>
    EXPECT_EQ(r.prompt_len, static_cast<int>(ids.size()));
    EXPECT_EQ(r.prompt_len, static_cast<int>(deepseek().encode(r.prompt, false).size()) + 1);
    EXPECT_TRUE(is_valid_sharegpt_sequence(r.prompt_len, r.output_len, false));
    bool found = false;
    for (std::size_t i = 0; i < file.size() && !found; ++i) {
      if (file.prompt(i) == r.prompt) {
        found = true;
        EXPECT_EQ(r.output_len, static_cast<int>(deepseek().encode(file.completion(i), true).size()));
      }
    }
    EXPECT_TRUE(found);
  }
  // vLLM's picks for seed 0, computed outside servelab: CPython random.seed(0)+shuffle of the 50 records,
  // lengths from HF `tokenizers` (npm 0.23.2, DeepSeek-V3 tokenizer.json, +1 for the BOS that
  // LlamaTokenizerFast adds), vLLM's 4/1024/2048 filters. {record, prompt_len, output_len}:
  const int want[][3] = {{1, 1021, 397}, {14, 1006, 767}, {36, 1015, 687}, {12, 1011, 133},
                         {0, 1005, 238}, {27, 1001, 5},   {47, 1001, 89},  {7, 986, 127},
                         {33, 1001, 9},  {34, 1001, 521}, {49, 1001, 5},   {5, 1001, 89}};
  for (std::size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(got[i].prompt, file.prompt(static_cast<std::size_t>(want[i][0]))) << i;
    EXPECT_EQ(got[i].prompt_len, want[i][1]) << i;
    EXPECT_EQ(got[i].output_len, want[i][2]) << i;
  }
  // Without --no-oversample the usable records are copied up to --num-prompts, and it is said, as vLLM logs
  // it (new-user trial: 100 copies of one conversation sent with no word).
  o.num_prompts = 100;
  std::vector<std::string> warnings;
  const std::size_t usable = sample_requests(o, deepseek(), &warnings).size();  // --no-oversample
  ASSERT_LT(usable, 100u);
  EXPECT_TRUE(warnings.size() == 1 && warnings[0].find("--no-oversample") != std::string::npos);
  o.no_oversample = false;
  warnings.clear();
  const auto all = sample_requests(o, deepseek(), &warnings);
  ASSERT_EQ(all.size(), 100u);
  const auto copies =
      std::count_if(all.begin(), all.end(), [](const SampleRequest& r) { return r.oversampled; });
  EXPECT_EQ(static_cast<std::size_t>(copies), 100 - usable);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            fmt::format("Oversampled requests to reach 100 total samples ({} copies of the dataset's "
                        "{} usable requests; --no-oversample sends only those)",
                        100 - usable, usable));
  EXPECT_EQ(got.size(), 30u);  // 35 of the 50 pass the filters
}

TEST(ShareGptWithTokenizer, FirstTurnOnlyFileGivesAClearError) {
  DatasetOptions o;
  o.dataset_name = "sharegpt";
  o.dataset_path = (common::data_dir() / "sharegpt_v3_first_turn_1000.json").string();
  try {
    sample_requests(o, deepseek());
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 2 turns"), std::string::npos) << e.what();
  }
}

TEST(CustomWithTokenizer, DeepSeekChatTemplateAndDoubleBos) {
  const auto path = std::filesystem::temp_directory_path() / "servelab_dataset_custom_ds.jsonl";
  std::ofstream(path) << "{\"prompt\": \"Hello there\", \"output_tokens\": 9}\n";
  DatasetOptions o;
  o.dataset_name = "custom";
  o.dataset_path = path.string();
  o.num_prompts = 1;
  o.custom_output_len = -1;
  const auto got = sample_requests(o, deepseek());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].prompt,
            "<\xEF\xBD\x9C"
            "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C><\xEF\xBD\x9CUser\xEF\xBD\x9C>Hello "
            "there<\xEF\xBD\x9C"
            "Assistant\xEF\xBD\x9C>");
  const auto ids = deepseek().encode(got[0].prompt, true);
  ASSERT_GE(ids.size(), 2u);
  EXPECT_EQ(ids[0], 0);  // BOS added by the tokenizer ...
  EXPECT_EQ(ids[1], 0);  // ... and the template's own BOS text, as vLLM counts it
  EXPECT_EQ(got[0].prompt_len, static_cast<int>(ids.size()));
  EXPECT_EQ(got[0].output_len, 9);
  // GPT-2 has no chat template: a clear error unless --skip-chat-template.
  EXPECT_THROW(sample_requests(o, gpt2()), std::runtime_error);
  o.skip_chat_template = true;
  EXPECT_EQ(sample_requests(o, gpt2())[0].prompt, "Hello there");
}

// --tokenizer-mode deepseek_v32: vLLM's DeepseekV32Tokenizer renders with DeepSeek-V3.2's encoding
// (non-thinking chat: BOS <｜User｜>{prompt}<｜Assistant｜></think>) instead of the tokenizer_config.json
// template, and works for a tokenizer without one.
TEST(CustomWithTokenizer, DeepSeekV32TokenizerModeRendersItsEncoding) {
  const auto path = std::filesystem::temp_directory_path() / "servelab_dataset_custom_v32.jsonl";
  std::ofstream(path) << "{\"prompt\": \"Hello there\", \"output_tokens\": 9}\n";
  DatasetOptions o;
  o.dataset_name = "custom";
  o.dataset_path = path.string();
  o.num_prompts = 1;
  o.custom_output_len = -1;
  o.tokenizer_mode = "deepseek_v32";
  const std::string expected =
      "<\xEF\xBD\x9C"
      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C><\xEF\xBD\x9CUser\xEF\xBD\x9C>Hello "
      "there<\xEF\xBD\x9C"
      "Assistant\xEF\xBD\x9C></think>";
  const auto got = sample_requests(o, deepseek());
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].prompt, expected);
  EXPECT_EQ(got[0].prompt_len, static_cast<int>(deepseek().encode(expected, true).size()));
  std::vector<std::string> warnings;
  EXPECT_TRUE((sample_requests(o, deepseek(), &warnings), warnings.empty()));
  EXPECT_EQ(sample_requests(o, gpt2(), &warnings)[0].prompt, expected);  // no template needed ...
  // ... but GPT-2 is not DeepSeek's tokenizer: its markers are counted in GPT-2 pieces, and the run says so
  // (new-user trial: silently).
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("--tokenizer-mode deepseek_v32 with a tokenizer that is not DeepSeek's"),
            std::string::npos)
      << warnings[0];
  // Without a chat template the deepseek_v32 advice is for DeepSeek's tokenizer only (new-user trial: it was
  // given for GPT-2's).
  o.tokenizer_mode = "auto";
  try {
    sample_requests(o, gpt2());
    FAIL() << "GPT-2 has no chat template";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).find("deepseek_v32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("give the tokenizer of the served model"), std::string::npos)
        << e.what();
  }

  std::filesystem::remove(path);
}

TEST(SonnetWithTokenizer, DeepSeekTemplateAndLengths) {
  const auto path = std::filesystem::temp_directory_path() / "servelab_dataset_sonnet_ds.txt";
  {
    std::ofstream f(path);
    for (int i = 0; i < 40; ++i) f << "Line " << i << " of a small test poem, written for this test\n";
  }
  DatasetOptions o;
  o.dataset_name = "sonnet";
  o.dataset_path = path.string();
  o.num_prompts = 5;
  o.sonnet_input_len = 120;
  o.sonnet_prefix_len = 60;
  o.request_id_prefix = "s";
  const std::string bos =
      "<\xEF\xBD\x9C"
      "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>";
  const std::string user = "<\xEF\xBD\x9CUser\xEF\xBD\x9C>";
  const std::string assistant =
      "<\xEF\xBD\x9C"
      "Assistant\xEF\xBD\x9C>";
  const auto got = sample_requests(o, deepseek());
  ASSERT_EQ(got.size(), 5u);
  for (const auto& r : got) {
    // Completions backend: the formatted prompt; its length counted with the tokenizer's BOS on top.
    ASSERT_EQ(
        r.prompt.rfind(bos + user + "Pick as many lines as you can from these poem lines:\nLine 0 of", 0),
        0u);
    EXPECT_EQ(r.prompt.substr(r.prompt.size() - assistant.size()), assistant);
    EXPECT_EQ(r.prompt_len, static_cast<int>(deepseek().encode(r.prompt, true).size()));
    EXPECT_LE(r.prompt_len, 120);
    EXPECT_EQ(r.output_len, 150);
  }
  o.backend = "openai-chat";  // the raw prompt, same draws and lengths
  const auto chat = sample_requests(o, deepseek());
  EXPECT_EQ(bos + user + chat[0].prompt + assistant, got[0].prompt);
  EXPECT_EQ(chat[0].prompt_len, got[0].prompt_len);
  EXPECT_THROW(sample_requests(o, gpt2()), std::runtime_error);  // no chat template
}

TEST(BurstGptWithTokenizer, PromptsDecodeTheIdSequence) {
  const auto path = std::filesystem::temp_directory_path() / "servelab_dataset_burstgpt.csv";
  std::ofstream(path) << "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
                         "1,GPT-4,20,5,25,Conversation log\n2,GPT-4,3,0,3,API log\n";
  DatasetOptions o;
  o.dataset_name = "burstgpt";
  o.dataset_path = path.string();
  o.num_prompts = 2;  // one usable row: sampled with replacement
  const auto got = sample_requests(o, gpt2());
  ASSERT_EQ(got.size(), 2u);
  std::vector<tokenizer::TokenId> ids;
  for (int j = 0; j < 20; ++j) ids.push_back(1 + j);
  EXPECT_EQ(got[1].prompt, gpt2().decode(ids));  // request 1: ids 1..20
  EXPECT_EQ(got[1].prompt_len, 20);
  EXPECT_EQ(got[1].output_len, 5);
}

TEST(PrefixRepetitionWithTokenizer, SharedPrefixesExactLengths) {
  DatasetOptions o;
  o.dataset_name = "prefix_repetition";
  o.num_prompts = 12;
  o.prefix_repetition_prefix_len = 64;
  o.prefix_repetition_suffix_len = 32;
  o.prefix_repetition_num_prefixes = 3;
  const auto got = sample_requests(o, deepseek());
  ASSERT_EQ(got.size(), 12u);
  std::map<std::string, int> per_prefix;
  std::map<std::string, std::set<int>> groups_of_prefix;  // the twin's prefix_group agrees with the text
  for (const auto& r : got) {
    EXPECT_EQ(r.prompt_len, 96);
    EXPECT_TRUE(r.request_id.empty());
    EXPECT_EQ(r.shared_prefix_len, 64);
    const auto ids = deepseek().encode(r.prompt, false);
    EXPECT_NEAR(static_cast<double>(ids.size()), 96.0, 4.0);  // decode of a token concatenation may re-merge
    const auto head = deepseek().decode(std::vector<tokenizer::TokenId>(ids.begin(), ids.begin() + 16));
    per_prefix[head]++;
    groups_of_prefix[head].insert(r.prefix_group);
  }
  EXPECT_EQ(per_prefix.size(), 3u);
  for (const auto& [k, n] : per_prefix) EXPECT_EQ(n, 4);
  std::set<int> groups;
  for (const auto& [k, g] : groups_of_prefix) {
    EXPECT_EQ(g.size(), 1u);
    groups.insert(*g.begin());
  }
  EXPECT_EQ(groups, (std::set<int>{0, 1, 2}));
}

TEST(Conversations, ExchangeLengthsOfRealReplies) {
  const auto mt = load_conversations(common::data_dir() / "mt_bench_answer_gpt-4.sharegpt.json");
  const auto lengths = exchange_lengths(mt, deepseek());
  ASSERT_EQ(lengths.size(), 160u);  // 80 conversations x 2 human→gpt exchanges
  EXPECT_EQ(lengths[0].turn_index, 0);
  EXPECT_EQ(lengths[1].turn_index, 2);
  EXPECT_EQ(lengths[0].reply_len, static_cast<int>(deepseek().encode(mt[0].turns[1].value, true).size()));
  for (const auto& e : lengths) {
    EXPECT_GE(e.prompt_len, 2);
    EXPECT_GE(e.reply_len, 2);
  }
}

}  // namespace
}  // namespace servelab::dataset
