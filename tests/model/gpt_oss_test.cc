// Variant gpt_oss: gpt-oss-120b / 20b from the corpus configs (reconstructed from the model card).
//
// Tolerance: the model card gives 116.83 B total / 5.13 B active (120b) and 20.91 B / 3.61 B (20b) to
// 0.01 B; the computed counts (biases and sinks' neighbours included, norms excluded) must match to 0.01 B.
#include "servelab/model/model.h"

#include <gtest/gtest.h>

namespace servelab::model {
namespace {

TEST(GptOss, Gpt_Oss_120b_Parameters) {
  const ModelSpec m = resolve_model("openai/gpt-oss-120b");
  EXPECT_EQ(m.variant, "gpt_oss");
  EXPECT_EQ(m.num_layers(), 36);
  // Attention: q 2880x4096 + 4096, kv 2880x1024 + 1024, o 4096x2880 + 2880 = 26,550,080.
  // Expert: gate_up 2880x5760 + 5760, down 2880x2880 + 2880 = 24,891,840; router 2880x128 + 128.
  // 36 x (26,550,080 + 128 x 24,891,840 + 368,768) + 2 x 201088x2880 = 116,828,944,128.
  EXPECT_DOUBLE_EQ(m.total_params(), 116828944128.0);
  EXPECT_NEAR(m.total_params() / 1e9, 116.83, 0.01);
  // Active: 36 x (26,550,080 + 4 x 24,891,840 + 368,768) + 579,133,440 = 5,132,636,928.
  EXPECT_DOUBLE_EQ(m.active_params(), 5132636928.0);
  EXPECT_NEAR(m.active_params() / 1e9, 5.13, 0.01);
  EXPECT_EQ(m.moe().top_k, 4);
  EXPECT_TRUE(m.moe().expert_bias);
}

TEST(GptOss, Gpt_Oss_20b_Parameters) {
  const ModelSpec m = resolve_model("openai/gpt-oss-20b");
  // 24 x (26,550,080 + 32 x 24,891,840 + 2880x32 + 32) + 1,158,266,880 = 20,914,614,528.
  EXPECT_DOUBLE_EQ(m.total_params(), 20914614528.0);
  EXPECT_NEAR(m.total_params() / 1e9, 20.91, 0.01);
  EXPECT_NEAR(m.active_params() / 1e9, 3.61, 0.01);
}

TEST(GptOss, SlidingWindowAndSinks) {
  const ModelSpec m = resolve_model("openai/gpt-oss-120b");
  EXPECT_TRUE(m.has_sliding_window());
  EXPECT_TRUE(m.has_sinks());
  EXPECT_FALSE(m.has_mla());
  ASSERT_EQ(m.layers.size(), 36u);  // alternating layers never merge
  const auto& l0 = std::get<GqaAttention>(m.layers[0].layer.attention);
  const auto& l1 = std::get<GqaAttention>(m.layers[1].layer.attention);
  EXPECT_EQ(l0.window, 128);  // layer_types[0] = sliding_attention
  EXPECT_EQ(l1.window, 0);    // layer_types[1] = full_attention
  EXPECT_TRUE(l0.sinks && l1.sinks);
  EXPECT_TRUE(l0.qkv_bias && l0.o_bias);
  EXPECT_EQ(kv_window_tokens(m.layers[0].layer.attention), 128);
  EXPECT_DOUBLE_EQ(keys_per_query(m.layers[0].layer.attention, 4000), 128);
  EXPECT_DOUBLE_EQ(keys_per_query(m.layers[1].layer.attention, 4000), 4000);
  // KV per token per layer at TP1 BF16: 2 x 8 x 64 x 2 = 2,048 B (18 windowed layers hold at most 128
  // tokens of it); TP8: 256 B.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m.layers[0].layer.attention, 1, DType::kBf16), 2048);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(m.layers[1].layer.attention, 8, DType::kBf16), 256);
}

TEST(GptOss, Mxfp4ExpertsBf16Rest) {
  const ModelSpec m = resolve_model("openai/gpt-oss-120b");
  const Quantization& q = m.quantization;
  EXPECT_EQ(q.method, QuantMethod::kMxfp4);
  EXPECT_EQ(q.experts.dtype, DType::kMxfp4);
  EXPECT_EQ(q.experts.group_size, 32);
  EXPECT_EQ(q.attention.dtype, DType::kBf16);
  EXPECT_EQ(q.embedding.dtype, DType::kBf16);
  EXPECT_EQ(q.lm_head.dtype, DType::kBf16);
  EXPECT_EQ(q.activation, DType::kBf16);
  // Experts: 36 x 128 x (2880x5760 + 2880x2880) = 114,661,785,600 params x 0.53125 B = 60,914,073,600;
  // expert biases 36 x 128 x 8640 x 2 B = 79,626,240; attention 36 x 26,550,080 x 2 = 1,911,605,760;
  // routers 36 x 368,768 x 2 = 26,551,296; embedding + head 1,158,266,880 x 2 = 2,316,533,760.
  // Sum: 65,248,390,656 B (the checkpoint is ~65 GB).
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 65248390656.0);
}

}  // namespace
}  // namespace servelab::model
