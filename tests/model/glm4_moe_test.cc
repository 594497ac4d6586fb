// Variant glm4_moe: GLM-4.5-Air and GLM-4.6 from the corpus configs (GLM-4.5-Air's is reconstructed).
//
// Tolerance: Zhipu publishes GLM-4.5-Air 106 B / 12 B activated and GLM-4.5 (= 4.6 architecture) 355 B /
// 32 B. Totals are checked within 1%: the main model excludes the MTP layer (2.4 B / 4.0 B here), which
// public parameter counts partly include, and norms. Zhipu's activated counts exclude the LM head:
// active_params() - LM head is checked within 2% (12.18 B vs 12 B, 32.08 B vs 32 B).
#include "servelab/model/model.h"

#include <gtest/gtest.h>

namespace servelab::model {
namespace {

TEST(Glm4Moe, Glm45Air) {
  const ModelSpec m = resolve_model("zai-org/GLM-4.5-Air");
  EXPECT_EQ(m.variant, "glm4_moe");
  EXPECT_EQ(m.num_layers(), 46);
  ASSERT_EQ(m.layers.size(), 2u);  // layer 0 dense, 1-45 MoE
  EXPECT_EQ(m.layers[0].count, 1);
  EXPECT_TRUE(std::holds_alternative<DenseFfn>(m.layers[0].layer.ffn));
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 128);
  EXPECT_EQ(moe.shared_experts, 1);
  EXPECT_EQ(moe.shared_intermediate, 1408);
  const auto& a = std::get<GqaAttention>(m.layers[1].layer.attention);
  EXPECT_EQ(a.heads, 96);
  EXPECT_TRUE(a.qkv_bias);
  EXPECT_FALSE(a.o_bias);
  // Attention: q 4096x12288 + 12288 bias, kv 4096x2048 + 2048, o 12288x4096 = 109,066,240.
  // Expert 3x4096x1408 = 17,301,504; router 4096x128 = 524,288; dense FFN 3x4096x10944 = 134,479,872.
  // Layer 0: 243,546,112. MoE layer: 109,066,240 + 129 x 17,301,504 + 524,288 = 2,341,484,544; x 45.
  // Embedding + head 2 x 151552x4096 = 1,241,513,984. Total 106,851,864,576.
  EXPECT_DOUBLE_EQ(m.total_params(), 106851864576.0);
  EXPECT_NEAR(m.total_params() / 106e9, 1.0, 0.01);
  // Active: 243,546,112 + 45 x (109,066,240 + 9 x 17,301,504 + 524,288) + 620,756,992 = 12,802,985,984.
  EXPECT_DOUBLE_EQ(m.active_params(), 12802985984.0);
  const double head = 151552.0 * 4096;
  EXPECT_NEAR((m.active_params() - head) / 12e9, 1.0, 0.02);
  // MTP: one MoE layer 2,341,484,544 + eh_proj 2 x 4096 x 4096 = 2,375,038,976.
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_DOUBLE_EQ(m.mtp_params(), 2375038976.0);
  // KV per token at TP1 BF16: 46 x 2 x 8 x 128 x 2 = 188,416 B.
  double kv = 0;
  for (const auto& g : m.layers) kv += g.count * kv_bytes_per_token(g.layer.attention, 1, DType::kBf16);
  EXPECT_DOUBLE_EQ(kv, 188416);
  EXPECT_EQ(m.chat_template.overhead_tokens, 5);
  EXPECT_EQ(m.tokenizer_package, "");  // no GLM tokenizer published on npm
}

TEST(Glm4Moe, Glm46) {
  const ModelSpec m = resolve_model("zai-org/GLM-4.6");
  EXPECT_EQ(m.num_layers(), 92);
  EXPECT_EQ(m.layers[0].count, 3);  // first_k_dense_replace
  EXPECT_EQ(m.moe().experts, 160);
  // Attention 5120x12288 + 12288 + 5120x2048 + 2048 + 12288x5120 = 136,328,192; expert 3x5120x1536 =
  // 23,592,960; dense FFN 3x5120x12288 = 188,743,680; router 819,200.
  // 3 x 325,071,872 + 89 x (136,328,192 + 161 x 23,592,960 + 819,200) + 2 x 151552x5120 = 352,796,844,032.
  EXPECT_DOUBLE_EQ(m.total_params(), 352796844032.0);
  EXPECT_NEAR(m.total_params() / 355e9, 1.0, 0.01);
  EXPECT_DOUBLE_EQ(m.active_params(), 32855334912.0);
  EXPECT_NEAR((m.active_params() - 151552.0 * 5120) / 32e9, 1.0, 0.02);
  EXPECT_EQ(m.max_position_embeddings, 202752);
}

TEST(Glm4Moe, Fp8CheckpointAndBareNameResolve) {
  const ModelSpec fp8 = resolve_model("zai-org/GLM-4.5-Air-FP8");
  EXPECT_EQ(fp8.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(fp8.id, "zai-org/GLM-4.5-Air-FP8");
  EXPECT_LT(fp8.weight_bytes(), 0.51 * resolve_model("zai-org/GLM-4.5-Air").weight_bytes());
  EXPECT_EQ(resolve_model("GLM-4.5-Air").id, "zai-org/GLM-4.5-Air");
  EXPECT_EQ(resolve_model("zai-org/GLM-4.6-FP8").quantization.method, QuantMethod::kFp8Block);
}

}  // namespace
}  // namespace servelab::model
