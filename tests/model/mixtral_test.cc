// Variant mixtral: Mixtral-8x7B / 8x22B and MiniMax-M2.5 / M2.7 (BF16-FP8 and nvidia NVFP4) from
// AIConfigurator's copies of the Hub configs; MiniMax's lightning-attention and shared-expert refusals.
//
// Published figures: Mistral AI gives 46.7 B total / 12.9 B per token for 8x7B and 141 B / 39 B for 8x22B;
// MiniMax's card gives 230 B total / 10 B activated for M2.x (rounded to the unit). Tolerances: 0.5% on
// totals given to 0.1 B, 0.5 B on figures rounded to the unit. Mistral's per-token figure counts the
// embedding too (12.75 B + 0.13 B); ModelSpec's active count (contract: embedding excluded) is compared
// after adding it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "aic_test_support.h"
#include "servelab/common/paths.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using testing::aic_model;
using testing::model_kv_bytes;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Mixtral, Mixtral8x7B) {
  const ModelSpec m = aic_model("mistralai--Mixtral-8x7B-v0.1_config.json");
  EXPECT_EQ(m.variant, "mixtral");
  EXPECT_EQ(m.num_layers(), 32);
  ASSERT_EQ(m.layers.size(), 1u);
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 8);
  EXPECT_EQ(moe.top_k, 2);
  EXPECT_EQ(moe.expert_intermediate, 14336);
  EXPECT_EQ(moe.shared_experts, 0);
  EXPECT_FALSE(m.has_sliding_window());  // sliding_window: null
  // Layer: attention 41,943,040 + 8 experts x 3x4096x14336 (176,160,768) + router 32,768; x 32 +
  // 2 x 32000x4096 = 46,702,526,464 (46.7 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 46702526464.0);
  EXPECT_NEAR(m.total_params() / 46.7e9, 1.0, 0.005);
  EXPECT_DOUBLE_EQ(m.active_params(), 12748587008.0);
  EXPECT_NEAR((m.active_params() + 32000.0 * 4096) / 12.9e9, 1.0, 0.005);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 131072);  // 32 x 2 x 8 x 128 x 2
  EXPECT_EQ(m.chat_template.overhead_tokens, 2);                 // [INST] ... [/INST]
  EXPECT_EQ(m.tokenizer_package, "");
}

TEST(Mixtral, Mixtral8x22B) {
  const ModelSpec m = aic_model("mistralai--Mixtral-8x22B-v0.1_config.json");
  EXPECT_EQ(m.num_layers(), 56);
  EXPECT_DOUBLE_EQ(m.total_params(), 140619939840.0);
  EXPECT_NEAR(m.total_params() / 1e9, 141, 0.5);
  EXPECT_DOUBLE_EQ(m.active_params(), 38954729472.0);
  EXPECT_NEAR(m.active_params() / 1e9, 39, 0.5);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 229376);  // 56 x 2 x 8 x 128 x 2
}

TEST(Mixtral, MiniMaxM25) {
  const ModelSpec m = aic_model("MiniMaxAI--MiniMax-M2.5_config.json");
  EXPECT_EQ(m.model_type, "minimax_m2");
  EXPECT_EQ(m.variant, "mixtral");
  EXPECT_EQ(m.num_layers(), 62);
  ASSERT_EQ(m.layers.size(), 1u);
  const auto& a = std::get<GqaAttention>(m.layers[0].layer.attention);
  EXPECT_EQ(a.heads, 48);
  EXPECT_EQ(a.kv_heads, 8);
  EXPECT_EQ(a.head_dim, 128);  // head_dim given: 48 x 128 = 6144 != hidden 3072
  const MoeFfn& moe = m.moe();
  EXPECT_EQ(moe.experts, 256);
  EXPECT_EQ(moe.top_k, 8);
  EXPECT_EQ(moe.expert_intermediate, 1536);
  EXPECT_EQ(moe.shared_experts, 0);
  EXPECT_EQ(m.mtp_layers, 0);  // the MTP modules are not modelled (arch_mixtral.cc)
  // Attention 3072x6144 + 3072x2048 + 6144x3072 = 44,040,192; expert 3x3072x1536 = 14,155,776; router
  // 3072x256 = 786,432. (44,040,192 + 256 x 14,155,776 + 786,432) x 62 + 2 x 200064x3072 =
  // 228,688,920,576 (card: 230 B); active (44,040,192 + 8 x 14,155,776 + 786,432) x 62 + 614,596,608 =
  // 10,415,112,192 (card: 10 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 228688920576.0);
  EXPECT_NEAR(m.total_params() / 1e9, 230, 1.5);
  EXPECT_DOUBLE_EQ(m.active_params(), 10415112192.0);
  EXPECT_NEAR(m.active_params() / 1e9, 10, 0.5);
  // KV: 62 x 2 x 8 x 128 x 2 B = 253,952 B per token at TP1; 63,488 at TP4 (2 heads a rank); 31,744 at TP8.
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 1, DType::kBf16), 253952);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 4, DType::kBf16), 63488);
  EXPECT_DOUBLE_EQ(model_kv_bytes(m, 8, DType::kBf16), 31744);
  // FP8 128x128 blocks on attention and experts; router (modules_to_not_convert "gate"), embedding and
  // head BF16: (44,040,192 + 256 x 14,155,776) x 62 x (1 + 4/16384) + 786,432 x 62 x 2 + 2 x 614,596,608
  // x 2 = 230,022,392,832 B.
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 230022392832.0);
  EXPECT_EQ(m.max_position_embeddings, 196608);
  EXPECT_EQ(m.tokenizer_package, "");
  EXPECT_EQ(m.chat_template.overhead_tokens, 36);
  EXPECT_NE(m.chat_template.source.find("unverified"), std::string::npos);

  const ModelSpec m27 = aic_model("MiniMaxAI--MiniMax-M2.7_config.json");  // attn_type_list all 1
  EXPECT_DOUBLE_EQ(m27.total_params(), m.total_params());
  EXPECT_EQ(m27.max_position_embeddings, 204800);
}

// nvidia/MiniMax-M2.5-NVFP4: NVFP4 experts (FP8 scale per 16), self_attn* and the gates excluded (BF16).
TEST(Mixtral, MiniMaxM25Nvfp4) {
  const ModelSpec m = aic_model("nvidia--MiniMax-M2.5-NVFP4_config.json");
  EXPECT_EQ(m.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(m.quantization.experts.dtype, DType::kNvfp4);
  EXPECT_EQ(m.quantization.attention.dtype, DType::kBf16);
  // 44,040,192 x 62 x 2 + 256 x 14,155,776 x 62 x 0.5625 + 786,432 x 62 x 2 + 2 x 614,596,608 x 2 =
  // 134,399,655,936 B.
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 134399655936.0);
  EXPECT_DOUBLE_EQ(m.total_params(), 228688920576.0);
}

TEST(Mixtral, MiniMaxRefusesLightningAttentionAndSharedExperts) {
  auto config = nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "aic" /
                                                        "MiniMaxAI--MiniMax-M2.7_config.json"));
  config["attn_type_list"][3] = 0;
  EXPECT_NE(message_of([&] {
              from_config(config, "m.json");
            }).find("attn_type_list[3] is 0: MiniMax lightning (linear) attention layers are not modelled"),
            std::string::npos);
  config["attn_type_list"][3] = 1;
  config["shared_intermediate_size"] = 1536;
  EXPECT_NE(message_of([&] {
              from_config(config, "m.json");
            }).find("\"shared_intermediate_size\" is 1536: a MiniMax shared expert is not modelled"),
            std::string::npos);
}

// A Mixtral config with sliding_window set windows every layer (transformers MixtralAttention).
TEST(Mixtral, SlidingWindowOnEveryLayer) {
  auto config = nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "aic" /
                                                        "mistralai--Mixtral-8x7B-v0.1_config.json"));
  config["sliding_window"] = 4096;
  const ModelSpec m = from_config(config, "m.json");
  EXPECT_TRUE(m.has_sliding_window());
  EXPECT_EQ(kv_window_tokens(m.layers[0].layer.attention), 4096);
  EXPECT_EQ(m.layers[0].count, 32);
}

}  // namespace
}  // namespace servelab::model
