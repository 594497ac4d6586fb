// Kimi-K2 (model_type kimi_k2, DeepseekV3ForCausalLM) and Kimi-K2.5 (kimi_k25, the language model of
// KimiK25ForConditionalGeneration from its text_config) in the deepseek_v3 variant, from AIConfigurator's
// copies of the Hub configs.
//
// Published figures: Moonshot's card gives 1 T total (1.04 T in the Hub's safetensors metadata, which also
// counts norms, the e_score_correction_bias vectors and, for K2.5, the vision tower) and 32 B activated.
// The computed counts must be within 2% of 1.03 T and of 32 B.
#include <gtest/gtest.h>

#include "aic_test_support.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using testing::aic_model;
using testing::model_kv_bytes;

TEST(KimiK2, Instruct) {
  const ModelSpec m = aic_model("moonshotai--Kimi-K2-Instruct_config.json");
  EXPECT_EQ(m.model_type, "kimi_k2");
  EXPECT_EQ(m.architecture, "DeepseekV3ForCausalLM");
  EXPECT_EQ(m.variant, "deepseek_v3");
  EXPECT_EQ(m.num_layers(), 61);
  ASSERT_EQ(m.layers.size(), 2u);  // first_k_dense_replace 1
  EXPECT_EQ(m.layers[0].count, 1);
  EXPECT_TRUE(m.has_mla());
  EXPECT_FALSE(m.has_dsa());
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 384);
  EXPECT_EQ(moe.top_k, 8);
  EXPECT_EQ(moe.shared_experts, 1);
  EXPECT_EQ(m.mtp_layers, 0);
  // MLA (64 heads): 7168x1536 + 1536x64x192 + 7168x576 + 512x64x256 + 64x128x7168 = 101,122,048 per layer.
  // 61 x MLA + 3x7168x18432 (dense) + 60 x (385 x 3x7168x2048 + 7168x384) + 2 x 163840x7168 =
  // 1,026,407,202,816 (1.03 T); active 61 x MLA + dense + 60 x (9 x 3x7168x2048 + 7168x384) + 163840x7168
  // = 31,686,066,176 (32 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 1026407202816.0);
  EXPECT_NEAR(m.total_params() / 1.03e12, 1.0, 0.02);
  EXPECT_DOUBLE_EQ(m.active_params(), 31686066176.0);
  EXPECT_NEAR(m.active_params() / 32e9, 1.0, 0.02);
  // KV: the 576-element latent per layer, replicated over TP: 61 x 576 x 2 B = 70,272 B (BF16).
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 70272);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 8, DType::kBf16), 70272);
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(m.max_position_embeddings, 131072);
  EXPECT_EQ(m.tokenizer_package, "");
  EXPECT_EQ(m.chat_template.overhead_tokens, 23);
}

// Kimi-K2.5: the text_config (model_type kimi_k2, _name_or_path "") is the model; the wrapper's architecture
// names the checkpoint (the engines count a vision encoder for it). Experts are compressed-tensors INT4
// W4A16 in groups of 32; attention, the dense layer and the shared experts stay BF16 (its ignore list).
TEST(KimiK2, K25IsItsLanguageModel) {
  const ModelSpec m = aic_model("moonshotai--Kimi-K2.5_config.json");
  EXPECT_EQ(m.model_type, "kimi_k2");
  EXPECT_EQ(m.architecture, "KimiK25ForConditionalGeneration");
  EXPECT_NE(m.id.find("Kimi-K2.5_config.json"), std::string::npos) << m.id;  // not the empty name
  EXPECT_EQ(m.num_layers(), 61);
  EXPECT_DOUBLE_EQ(m.total_params(), 1026407202816.0);
  EXPECT_DOUBLE_EQ(m.active_params(), 31686066176.0);
  EXPECT_EQ(m.max_position_embeddings, 262144);
  EXPECT_EQ(m.quantization.method, QuantMethod::kGptq);
  EXPECT_EQ(m.quantization.experts.dtype, DType::kInt4);
  EXPECT_EQ(m.quantization.experts.group_size, 32);
  EXPECT_EQ(m.quantization.attention.dtype, DType::kBf16);
  EXPECT_EQ(m.quantization.dense_ffn.dtype, DType::kBf16);
  EXPECT_EQ(m.chat_template.overhead_tokens, 23);

  // nvidia's NVFP4 copy: text_config model_type deepseek_v3, the Kimi template from the wrapper's class.
  const ModelSpec n = aic_model("nvidia--Kimi-K2.5-NVFP4_config.json");
  EXPECT_EQ(n.architecture, "KimiK25ForConditionalGeneration");
  EXPECT_EQ(n.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(n.quantization.attention.dtype, DType::kBf16);  // language_model.model.layers.*.self_attn*
  EXPECT_DOUBLE_EQ(n.total_params(), 1026407202816.0);
  EXPECT_EQ(n.chat_template.overhead_tokens, 23);
}

}  // namespace
}  // namespace servelab::model
