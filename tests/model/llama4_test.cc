// Variant llama4: Llama 4 Scout (16 experts, every layer MoE) and Maverick (128 experts, MoE every other
// layer) from the text_config of AIConfigurator's copies of the Hub configs; chunked local attention on
// three layers of four.
//
// Published figures: Meta's cards give 109 B total / 17 B active (Scout) and 400 B / 17 B (Maverick),
// whole checkpoints (vision encoder included) rounded to the unit; Meta's active count includes the
// embedding. The language model computed here must be within 2% of them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "aic_test_support.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using testing::aic_model;
using testing::model_kv_bytes;

TEST(Llama4, Scout) {
  const ModelSpec m = aic_model("meta-llama--Llama-4-Scout-17B-16E-Instruct_config.json");
  EXPECT_EQ(m.model_type, "llama4_text");
  EXPECT_EQ(m.architecture, "Llama4ForConditionalGeneration");
  EXPECT_EQ(m.variant, "llama4");
  EXPECT_EQ(m.num_layers(), 48);
  // Layers 3, 7, ..., 47 are NoPE full attention; the others chunked (8192): 12 groups of 3 + 1.
  ASSERT_EQ(m.layers.size(), 24u);
  const auto& chunked = std::get<GqaAttention>(m.layers[0].layer.attention);
  const auto& full = std::get<GqaAttention>(m.layers[1].layer.attention);
  EXPECT_EQ(m.layers[0].count, 3);
  EXPECT_EQ(chunked.chunk, 8192);
  EXPECT_EQ(full.chunk, 0);
  EXPECT_EQ(m.layers[1].first, 3);
  EXPECT_EQ(chunked.heads, 40);
  EXPECT_EQ(chunked.kv_heads, 8);
  EXPECT_EQ(chunked.head_dim, 128);
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 16);
  EXPECT_EQ(moe.top_k, 1);
  EXPECT_EQ(moe.expert_intermediate, 8192);
  EXPECT_EQ(moe.shared_experts, 1);
  EXPECT_EQ(moe.shared_intermediate, 8192);
  // Attention 5120x5120 + 5120x2048 + 5120x5120 = 62,914,560; expert 3x5120x8192 = 125,829,120;
  // router 5120x16. 48 x (62,914,560 + 17 x 125,829,120 + 81,920) + 2 x 202048x5120 = 107,769,364,480.
  EXPECT_DOUBLE_EQ(m.total_params(), 107769364480.0);
  EXPECT_NEAR(m.total_params() / 109e9, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(m.active_params(), 16137912320.0);
  EXPECT_NEAR((m.active_params() + 202048.0 * 5120) / 17e9, 1.0, 0.02);
  // KV: every layer stores 2 x 8 x 128 x 2 B a token (48 layers: 196,608 B); the 36 chunked layers hold
  // at most one chunk of it.
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 196608);
  EXPECT_EQ(kv_window_tokens(m.layers[0].layer.attention), 8192);
  EXPECT_TRUE(m.has_sliding_window());
  EXPECT_EQ(m.tokenizer_package, "");
  EXPECT_EQ(m.chat_template.overhead_tokens, 9);
}

TEST(Llama4, MaverickInterleavesDenseAndMoe) {
  const ModelSpec m = aic_model("meta-llama--Llama-4-Maverick-17B-128E-Instruct_config.json");
  EXPECT_EQ(m.num_layers(), 48);
  int moe_layers = 0, dense_layers = 0;
  for (const auto& g : m.layers) {
    if (std::holds_alternative<MoeFfn>(g.layer.ffn)) {
      moe_layers += g.count;
      EXPECT_EQ(g.first % 2, 1);  // interleave_moe_layer_step 2: layers 1, 3, 5, ...
    } else {
      dense_layers += g.count;
      EXPECT_EQ(std::get<DenseFfn>(g.layer.ffn).intermediate, 16384);  // intermediate_size_mlp
    }
  }
  EXPECT_EQ(moe_layers, 24);
  EXPECT_EQ(dense_layers, 24);
  EXPECT_EQ(m.moe().experts, 128);
  // 48 x 62,914,560 + 24 x 3x5120x16384 + 24 x (129 x 125,829,120 + 5120x128) + 2 x 202048x5120 =
  // 400,711,352,320 (card: 400 B); active 16,149,708,800 + embedding 1,034,485,760 (card: 17 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 400711352320.0);
  EXPECT_NEAR(m.total_params() / 400e9, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(m.active_params(), 16149708800.0);
  EXPECT_NEAR((m.active_params() + 202048.0 * 5120) / 17e9, 1.0, 0.02);
}

// no_rope_layers and moe_layers, when given, decide per layer.
TEST(Llama4, ExplicitNoRopeAndMoeLayers) {
  nlohmann::json c = {{"model_type", "llama4_text"},
                      {"hidden_size", 64},
                      {"num_hidden_layers", 3},
                      {"num_attention_heads", 4},
                      {"num_key_value_heads", 2},
                      {"head_dim", 16},
                      {"intermediate_size", 32},
                      {"intermediate_size_mlp", 128},
                      {"num_local_experts", 4},
                      {"num_experts_per_tok", 1},
                      {"attention_chunk_size", 256},
                      {"no_rope_layers", {0, 1, 1}},
                      {"moe_layers", {2}},
                      {"vocab_size", 100},
                      {"max_position_embeddings", 1024}};
  const ModelSpec m = from_config(c, "l4.json");
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(std::get<GqaAttention>(m.layers[0].layer.attention).chunk, 0);
  EXPECT_EQ(std::get<GqaAttention>(m.layers[1].layer.attention).chunk, 256);
  EXPECT_TRUE(std::holds_alternative<DenseFfn>(m.layers[1].layer.ffn));
  EXPECT_TRUE(std::holds_alternative<MoeFfn>(m.layers[2].layer.ffn));
  // Keys of a chunked layer restart at each chunk: position 256 reads 256, 257 reads 1, 600 reads 88.
  const Attention& a = m.layers[1].layer.attention;
  EXPECT_DOUBLE_EQ(keys_per_query(a, 256), 256);
  EXPECT_DOUBLE_EQ(keys_per_query(a, 257), 1);
  EXPECT_DOUBLE_EQ(keys_per_query(a, 600), 88);
  c["no_rope_layers"] = {1, 1};
  EXPECT_THROW(from_config(c, "l4.json"), std::runtime_error);
}

}  // namespace
}  // namespace servelab::model
