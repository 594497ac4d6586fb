// Variant qwen3_moe: Qwen3-235B-A22B(-Instruct-2507) from the corpus config; sparse-step and
// mlp_only_layers rules on minimal configs.
//
// Tolerance: Qwen publishes 235 B total / 22 B activated (rounded to the unit); computed totals must be
// within 0.5 B of them. The activated figure here includes the LM head (0.62 B), as ModelSpec's contract
// says; without it the count is 20.95 B, so Qwen's 22 B also counts the head (or rounds up).
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace servelab::model {
namespace {

TEST(Qwen3Moe, Qwen3_235B_A22B) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507");
  EXPECT_EQ(m.variant, "qwen3_moe");
  EXPECT_EQ(m.num_layers(), 94);
  ASSERT_EQ(m.layers.size(), 1u);
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 128);
  EXPECT_EQ(moe.top_k, 8);
  EXPECT_EQ(moe.expert_intermediate, 1536);
  EXPECT_EQ(moe.shared_experts, 0);
  // Attention: q 4096x8192 + kv 4096x1024 + o 8192x4096 = 71,303,168. One expert 3x4096x1536 = 18,874,368;
  // router 4096x128 = 524,288. Layer = 71,303,168 + 128 x 18,874,368 + 524,288 = 2,487,746,560; x 94 =
  // 233,848,176,640; + 2 x 151936x4096 = 1,244,659,712 -> 235,092,836,352.
  EXPECT_DOUBLE_EQ(m.total_params(), 235092836352.0);
  EXPECT_NEAR(m.total_params() / 1e9, 235, 0.5);
  // Active: (71,303,168 + 8 x 18,874,368 + 524,288) x 94 + 622,329,856 = 21,567,635,456.
  EXPECT_DOUBLE_EQ(m.active_params(), 21567635456.0);
  EXPECT_NEAR(m.active_params() / 1e9, 22, 0.5);
  // KV: 94 layers x 2 x 4 KV heads x 128 x 2 B = 192,512 B per token at TP1; at TP8 each rank keeps one
  // of the 4 heads (replicated on 2 ranks): 48,128 B.
  double tp1 = 0, tp8 = 0;
  for (const auto& g : m.layers) {
    tp1 += g.count * kv_bytes_per_token(g.layer.attention, 1, DType::kBf16);
    tp8 += g.count * kv_bytes_per_token(g.layer.attention, 8, DType::kBf16);
  }
  EXPECT_DOUBLE_EQ(tp1, 192512);
  EXPECT_DOUBLE_EQ(tp8, 48128);
  EXPECT_EQ(m.max_position_embeddings, 262144);
  EXPECT_EQ(m.chat_template.overhead_tokens, 8);  // Instruct-2507: no <think>
}

TEST(Qwen3Moe, Fp8BlockExpertsKeepBf16RouterAndHead) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8");
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(m.quantization.experts.dtype, DType::kFp8);
  EXPECT_EQ(m.quantization.router.dtype, DType::kBf16);
  EXPECT_EQ(m.quantization.lm_head.dtype, DType::kBf16);
  // (71,303,168 + 128 x 18,874,368) x 94 = 233,798,893,568 FP8 params x (1 + 4/16384) = 233,855,973,376;
  // routers 524,288 x 94 x 2 B = 98,566,144; embedding + head 1,244,659,712 x 2 = 2,489,319,424.
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 233855973376.0 + 98566144.0 + 2489319424.0);
}

nlohmann::json small_moe() {
  return {{"model_type", "qwen3_moe"},    {"hidden_size", 1024},    {"intermediate_size", 4096},
          {"moe_intermediate_size", 512}, {"num_hidden_layers", 6}, {"num_attention_heads", 16},
          {"num_key_value_heads", 4},     {"head_dim", 64},         {"num_experts", 16},
          {"num_experts_per_tok", 2},     {"vocab_size", 1000},     {"max_position_embeddings", 4096}};
}

TEST(Qwen3Moe, DecoderSparseStepAndMlpOnlyLayers) {
  nlohmann::json c = small_moe();
  c["decoder_sparse_step"] = 2;  // layers 1, 3, 5 sparse
  c["mlp_only_layers"] = {3};    // ... except 3
  const ModelSpec m = from_config(c, "small");
  std::vector<bool> sparse;
  for (const auto& g : m.layers)
    for (int i = 0; i < g.count; ++i) sparse.push_back(std::holds_alternative<MoeFfn>(g.layer.ffn));
  EXPECT_EQ(sparse, (std::vector<bool>{false, true, false, false, false, true}));
  EXPECT_EQ(std::get<DenseFfn>(m.layers[0].layer.ffn).intermediate, 4096);
  c["num_experts_per_tok"] = 17;
  EXPECT_THROW(from_config(c, "small"), std::runtime_error);
}

TEST(Qwen3Moe, ThinkingIdGetsTheThinkingTemplate) {
  nlohmann::json c = small_moe();
  c["_name_or_path"] = "Qwen/Qwen3-235B-A22B-Thinking-2507";
  EXPECT_EQ(from_config(c, "x").chat_template.overhead_tokens, 10);
}

}  // namespace
}  // namespace servelab::model
