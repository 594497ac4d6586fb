// Unit tests of servelab::tokenizer that need no oracle at run time: API values (ids checked against npm
// tokenizers 0.23.2 when written), loading errors with JSON paths, path resolution.
#include "servelab/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <thread>

#include "servelab/common/paths.h"

namespace servelab::tokenizer {
namespace {

namespace fs = std::filesystem;

// Scratch directories, removed when the test program exits.
struct TempDirs : ::testing::Environment {
  std::vector<fs::path> dirs;
  void TearDown() override {
    std::error_code ec;
    for (const auto& d : dirs) fs::remove_all(d, ec);
  }
};
TempDirs* const temp_dirs = static_cast<TempDirs*>(::testing::AddGlobalTestEnvironment(new TempDirs));

fs::path temp_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("servelab_tok_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  temp_dirs->dirs.push_back(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
}

// A minimal valid byte-level BPE tokenizer.json with `pre` as pre_tokenizer.
std::string tiny_json(const std::string& pre = R"({"type": "ByteLevel", "add_prefix_space": false})",
                      const std::string& extra_model = "") {
  return R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
    "normalizer": null, "pre_tokenizer": )" +
         pre + R"(, "post_processor": null,
    "decoder": {"type": "ByteLevel"},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b"])" +
         extra_model + "}}";
}

std::string load_error(const fs::path& p) {
  try {
    Tokenizer::from_file(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "(no error)";
}

const Tokenizer& deepseek() {
  static const Tokenizer t = load_tokenizer("deepseek-ai/DeepSeek-V3");
  return t;
}

TEST(Tokenizer, DeepSeekKnownIds) {
  // Reference: npm tokenizers 0.23.2 on DeepSeek-V3's tokenizer.json, add_special_tokens=false.
  const std::vector<TokenId> want = {19923, 2058, 6776,  223,  1527, 223,    6895, 18009,
                                     25,    223,  30594, 3427, 223,  128803, 6366, 0};
  const std::string text = "Hello world  \n\n  x 1234567 你好世界 <｜User｜>hi<｜begin▁of▁sentence｜>";
  EXPECT_EQ(deepseek().encode(text, false), want);
  // With special tokens: transformers' LlamaTokenizerFast adds BOS (tokenizer_config add_bos_token).
  std::vector<TokenId> with_bos = {0};
  with_bos.insert(with_bos.end(), want.begin(), want.end());
  EXPECT_EQ(deepseek().encode(text, true), with_bos);
  EXPECT_EQ(deepseek().decode(want), text);
  EXPECT_EQ(deepseek().decode(with_bos, true), "Hello world  \n\n  x 1234567 你好世界 <｜User｜>hi");
}

TEST(Tokenizer, DeepSeekVocabAndSpecials) {
  const Tokenizer& t = deepseek();
  EXPECT_EQ(t.vocab_size(), 128000u);
  EXPECT_EQ(t.vocab_size_with_added(), 128815u);
  EXPECT_EQ(t.num_special_tokens_to_add(), 1u);
  EXPECT_EQ(t.bos_id(), 0);
  EXPECT_EQ(t.eos_id(), 1);
  EXPECT_EQ(t.token_to_id("<｜User｜>"), 128803);
  EXPECT_EQ(t.id_to_token(128803), "<｜User｜>");
  EXPECT_EQ(t.id_to_token(2058), "Ġworld");
  EXPECT_EQ(t.id_to_token(999999), std::nullopt);
  const auto specials = t.special_ids();
  ASSERT_FALSE(specials.empty());
  EXPECT_EQ(specials.front(), 0);
  EXPECT_TRUE(std::is_sorted(specials.begin(), specials.end()));
  EXPECT_TRUE(std::binary_search(specials.begin(), specials.end(), 128805));   // <|EOT|>
  EXPECT_FALSE(std::binary_search(specials.begin(), specials.end(), 128803));  // <｜User｜> is not special
  EXPECT_NE(t.chat_template().find("<｜Assistant｜>"), std::string::npos);
  EXPECT_TRUE(t.load_warnings().empty());
  // transformers all_special_ids = the config's bos/eos/pad (pad = eos): what vLLM's random dataset
  // excludes. Token 2 is an ordinary id there, though special_ids() lists hundreds of added tokens.
  EXPECT_EQ(t.all_special_ids(), (std::vector<TokenId>{0, 1}));
}

TEST(Tokenizer, DeepSeekV32RegistersThinkTokens) {
  const Tokenizer v3 = load_tokenizer("deepseek-ai/DeepSeek-V3");
  const Tokenizer v32 = load_tokenizer("DEEPSEEK-AI/deepseek-v3.2-exp");
  EXPECT_EQ(v3.token_to_id("<think>"), std::nullopt);
  EXPECT_EQ(v32.token_to_id("<think>"), 128798);
  EXPECT_EQ(v32.token_to_id("</think>"), 128799);
  EXPECT_EQ(v32.encode("<think>x</think>", false), (std::vector<TokenId>{128798, 90, 128799}));
  EXPECT_EQ(v32.decode(std::vector<TokenId>{128798, 90, 128799}, true), "<think>x</think>");
}

TEST(Tokenizer, Gpt2OriginalFileLoadsAndDropsUnusableMerge) {
  const Tokenizer t = Tokenizer::from_file(common::data_dir() / "gpt2-tokenizer.json");
  ASSERT_EQ(t.load_warnings().size(), 2u);
  EXPECT_NE(t.load_warnings()[0].find("model.type is missing"), std::string::npos);
  EXPECT_NE(t.load_warnings()[1].find("ĠCla ude"), std::string::npos);
  // Reference (fixed copy, npm tokenizers 0.23.2): "Hello Claude world's  end".
  EXPECT_EQ(t.encode("Hello Claude world's  end"),
            (std::vector<TokenId>{15496, 27166, 2507, 995, 338, 220, 886}));
  EXPECT_EQ(t.vocab_size(), 50257u);
  EXPECT_EQ(t.num_special_tokens_to_add(), 0u);
  EXPECT_EQ(t.special_ids(), std::vector<TokenId>{50256});
  EXPECT_EQ(t.all_special_ids(),
            std::vector<TokenId>{50256});  // no tokenizer_config.json: the added specials
}

TEST(Tokenizer, InvalidUtf8IsReplacedLikeTheReference) {
  // Bytes 61 FF 62: the reference only takes strings; the bytes become "a\uFFFDb" (maximal-subpart
  // replacement), whose ids are [67, 2808, 68] (npm tokenizers 0.23.2).
  EXPECT_EQ(deepseek().encode(std::string("a\xFF"
                                          "b"),
                              false),
            (std::vector<TokenId>{67, 2808, 68}));
}

TEST(Tokenizer, ConcurrentEncodeIsConsistent) {
  const std::string text = "The quick brown fox jumps over the lazy dog 12345 你好 <｜User｜> ";
  const auto want = deepseek().encode(text);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        if (deepseek().encode(text + std::to_string(i % 7)).size() < want.size()) ++bad;
        if (deepseek().encode(text) != want) ++bad;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Tokenizer, LiteralStringPatternRegression) {
  // Bug fixed: PCRE2 refuses PCRE2_UCP with PCRE2_LITERAL, so {"String": " "} (Llama-2's Replace
  // normalizer) failed to load. Hand-computed: "a b" -> "a▁b" -> no merge applies -> [a, ▁, b].
  const fs::path d = temp_dir("literal");
  write(d / "tokenizer.json",
        R"({"normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
    "pre_tokenizer": null, "decoder": {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
    "model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2, "\u2581": 3}, "merges": ["a b"]}})");
  const Tokenizer t = Tokenizer::from_file(d / "tokenizer.json");
  EXPECT_EQ(t.encode("a b"), (std::vector<TokenId>{0, 3, 1}));
  EXPECT_EQ(t.encode("ab.b"), (std::vector<TokenId>{2, 1}));  // "." is not in the vocabulary: dropped
  EXPECT_EQ(t.decode(std::vector<TokenId>{0, 3, 1}), "a b");
}

TEST(Tokenizer, DefaultConstructedThrowsInsteadOfCrashing) {
  const Tokenizer t;
  EXPECT_THROW(t.encode("x"), std::logic_error);
  EXPECT_THROW(t.vocab_size(), std::logic_error);
}

TEST(TokenizerLoad, MissingFile) {
  EXPECT_NE(
      load_error("/nonexistent/tokenizer.json").find("tokenizer file not found: /nonexistent/tokenizer.json"),
      std::string::npos);
}

TEST(TokenizerLoad, DirectoryIsNotAFile) {
  const fs::path d = temp_dir("dir");
  EXPECT_NE(load_error(d).find("is a directory"), std::string::npos);
}

TEST(TokenizerLoad, InvalidJson) {
  const fs::path d = temp_dir("badjson");
  write(d / "tokenizer.json", "{\"model\": ");
  const std::string e = load_error(d / "tokenizer.json");
  EXPECT_NE(e.find("invalid JSON"), std::string::npos) << e;
  EXPECT_NE(e.find((d / "tokenizer.json").string()), std::string::npos) << e;
}

TEST(TokenizerLoad, UnsupportedPreTokenizerNamesJsonPath) {
  const fs::path d = temp_dir("punct");
  write(d / "tokenizer.json",
        tiny_json(R"({"type": "Sequence", "pretokenizers": [{"type": "Digits", "individual_digits": true},
                     {"type": "ByteLevel", "add_prefix_space": false}, {"type": "Punctuation", "behavior": "Isolated"}]})"));
  EXPECT_NE(load_error(d / "tokenizer.json")
                .find("pre_tokenizer.pretokenizers[2].type = \"Punctuation\" is not supported"),
            std::string::npos)
      << load_error(d / "tokenizer.json");
}

TEST(TokenizerLoad, MalformedComponentsNameJsonPath) {
  const fs::path d = temp_dir("malformed");
  struct Case {
    std::string json, expect;
  };
  const std::vector<Case> cases = {
      {tiny_json(
           R"({"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false})"),
       "pre_tokenizer.pattern.Regex = \"(unclosed\": invalid regex"},
      {tiny_json(R"({"type": "Split", "pattern": {"Regex": "a"}, "behavior": "Sideways", "invert": false})"),
       "pre_tokenizer.behavior = \"Sideways\" is not supported"},
      {tiny_json("null", R"(, "dropout": 0.1)"), "model.dropout = 0.1 is not supported"},
      {tiny_json("null", R"(, "unk_token": "<unk>")"), "model.unk_token = \"<unk>\" is not in model.vocab"},
      {R"({"model": {"type": "Unigram", "vocab": []}})", "model.type = \"Unigram\" is not supported"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [1]}})", "model.merges[0] must be"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}}})", "model.merges is missing"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "normalizer": {"type": "Precompiled"}})",
       "normalizer.type = \"Precompiled\" is not supported"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "decoder": {"type": "Sequence", "decoders": [{"type": "WordPiece"}]}})",
       "decoder.decoders[0].type = \"WordPiece\" is not supported"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "truncation": {"max_length": 5}})",
       "truncation = {\"max_length\":5} is not supported"},
      {R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "added_tokens": [{"id": 1}]})",
       "added_tokens[0].content is missing"},
      {R"([1, 2])", "must be a JSON object"},
  };
  for (const Case& c : cases) {
    write(d / "tokenizer.json", c.json);
    EXPECT_NE(load_error(d / "tokenizer.json").find(c.expect), std::string::npos)
        << "want: " << c.expect << "\ngot:  " << load_error(d / "tokenizer.json");
  }
}

TEST(TokenizerLoad, ConfigErrors) {
  const fs::path d = temp_dir("config");
  write(d / "tokenizer.json", tiny_json());
  write(d / "tokenizer_config.json", R"({"bos_token": "<s>"})");
  EXPECT_NE(load_error(d / "tokenizer.json").find("bos_token = \"<s>\" is not in the tokenizer's vocabulary"),
            std::string::npos);
  write(d / "tokenizer_config.json", R"({"bos_token": {"content": "ab"}, "eos_token": "b",
      "chat_template": [{"name": "default", "template": "T"}]})");
  const Tokenizer t = Tokenizer::from_file(d / "tokenizer.json");
  EXPECT_EQ(t.bos_id(), 2);
  EXPECT_EQ(t.eos_id(), 1);
  EXPECT_EQ(t.chat_template(), "T");
  EXPECT_EQ(t.encode("abab"), (std::vector<TokenId>{2, 2}));
  write(d / "tokenizer_config.json", "{oops");
  EXPECT_NE(load_error(d / "tokenizer.json").find("tokenizer_config.json: invalid JSON"), std::string::npos);
}

TEST(TokenizerResolve, FileDirectoryAndErrors) {
  const fs::path d = temp_dir("resolve");
  write(d / "tokenizer.json", tiny_json());
  EXPECT_EQ(resolve_tokenizer_path((d / "tokenizer.json").string()), d / "tokenizer.json");
  EXPECT_EQ(resolve_tokenizer_path(d.string()), d / "tokenizer.json");
  const fs::path empty = temp_dir("resolve_empty");
  try {
    resolve_tokenizer_path(empty.string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no tokenizer.json"), std::string::npos) << e.what();
  }
  try {
    resolve_tokenizer_path("nobody/no-such-model");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("file nobody/no-such-model (does not exist)"), std::string::npos) << m;
    EXPECT_NE(m.find("models--nobody--no-such-model/snapshots"), std::string::npos) << m;
  }
}

TEST(TokenizerResolve, HuggingFaceCacheSnapshot) {
  const fs::path hf = temp_dir("hfhome");
  const fs::path snap = hf / "hub" / "models--acme--tiny" / "snapshots" / "abc123";
  fs::create_directories(snap);
  write(snap / "tokenizer.json", tiny_json());
  ::setenv("HF_HOME", hf.c_str(), 1);
  EXPECT_EQ(resolve_tokenizer_path("acme/tiny"), snap / "tokenizer.json");
  ::unsetenv("HF_HOME");
}

TEST(TokenizerResolve, DeepSeekIdsUseTheMakeDepsCache) {
  for (const char* id : {"deepseek-ai/DeepSeek-V3", "deepseek-ai/DeepSeek-V3.1", "deepseek-ai/DeepSeek-V3.2",
                         "deepseek-ai/DeepSeek-V3.2-Exp", "DeepSeek-AI/deepseek-v3.2"}) {
    EXPECT_EQ(resolve_tokenizer_path(id),
              common::cache_dir() / "tokenizers" / "deepseek-v3" / "tokenizer.json")
        << id;
  }
}

}  // namespace
}  // namespace servelab::tokenizer
