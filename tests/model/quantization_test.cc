// quantization_config parsing per method, engine --quantization, and their errors.
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"

namespace servelab::model {
namespace {

nlohmann::json qwen3_8b() {
  return nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "qwen3-8b.json"));
}

// Qwen3-8B: linears 6,945,767,424 params; embedding + head 1,244,659,712 (BF16 in every scheme).
constexpr double kLinears = 6945767424.0;
constexpr double kEmbedHeadBytes = 1244659712.0 * 2;

ModelSpec with_quant(const nlohmann::json& qc) {
  nlohmann::json c = qwen3_8b();
  c["quantization_config"] = qc;
  return from_config(c, "q.json");
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Quantization, Fp8BlockAndPerTensor) {
  const ModelSpec block = resolve_model("Qwen/Qwen3-8B-FP8");
  EXPECT_EQ(block.quantization.method, QuantMethod::kFp8Block);
  EXPECT_TRUE(block.quantization.attention.block_scaled);
  EXPECT_EQ(block.quantization.activation, DType::kFp8);
  EXPECT_EQ(block.quantization.source,
            "quantization_config: fp8, weight_block_size [128, 128], activation_scheme dynamic");
  EXPECT_DOUBLE_EQ(block.weight_bytes(), kLinears * (1 + 4.0 / 16384) + kEmbedHeadBytes);
  const ModelSpec tensor = with_quant({{"quant_method", "fp8"}, {"activation_scheme", "static"}});
  EXPECT_EQ(tensor.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_FALSE(tensor.quantization.attention.block_scaled);
  EXPECT_EQ(tensor.quantization.activation, DType::kFp8);
  EXPECT_DOUBLE_EQ(tensor.weight_bytes(), kLinears + kEmbedHeadBytes);
  // modules_to_not_convert naming attention keeps it BF16: attention 36 x 41,943,040 = 1,509,949,440.
  const ModelSpec keep = with_quant(
      {{"quant_method", "fp8"}, {"modules_to_not_convert", {"model.layers.*.self_attn", "lm_head"}}});
  EXPECT_EQ(keep.quantization.attention.dtype, DType::kBf16);
  EXPECT_EQ(keep.quantization.dense_ffn.dtype, DType::kFp8);
  EXPECT_DOUBLE_EQ(keep.weight_bytes(), 1509949440.0 * 2 + (kLinears - 1509949440.0) + kEmbedHeadBytes);
  // Entries naming a norm, the DSA indexer or a gate inside attention leave its projections FP8 (the
  // verbatim zai-org/GLM-5-FP8 list: every layer's q_a/kv_a layernorm, indexers_proj, indexer.k_norm; all
  // attention was BF16 before, 18.7 instead of 29.6 ms TPOT for GLM-5.2-FP8 at TP8 on H200).
  const ModelSpec norms =
      with_quant({{"quant_method", "fp8"},
                  {"weight_block_size", {128, 128}},
                  {"modules_to_not_convert",
                   {"model.layers.3.self_attn.kv_a_layernorm", "model.layers.3.self_attn.q_a_layernorm",
                    "model.layers.0.self_attn.indexers_proj", "model.layers.6.self_attn.indexer.k_norm",
                    "model.layers.3.post_attention_layernorm", "model.layers.3.mlp.shared_expert_gate",
                    "model.layers.3.mlp.gate", "lm_head", "model.embed_tokens"}}});
  EXPECT_EQ(norms.quantization.attention.dtype, DType::kFp8);
  EXPECT_EQ(norms.quantization.dense_ffn.dtype, DType::kFp8);
  EXPECT_DOUBLE_EQ(norms.weight_bytes(), block.weight_bytes());
  // A projection, the block itself, or a wildcard at or after it keeps the whole kind in BF16.
  for (const char* entry : {"model.layers.0.self_attn.q_proj", "model.layers.5.self_attn.kv_a_proj_with_mqa",
                            "model.layers.*.self_attn*", "*.attn.*", "model.layers.2.linear_attn*"}) {
    const ModelSpec m = with_quant({{"quant_method", "fp8"}, {"modules_to_not_convert", {entry}}});
    EXPECT_EQ(m.quantization.attention.dtype, DType::kBf16) << entry;
    EXPECT_EQ(m.quantization.dense_ffn.dtype, DType::kFp8) << entry;
  }
  for (const char* entry : {"model.layers.3.mlp.shared_experts*", "*.mlp.shared_expert.*",
                            "model.layers.3.mlp.shared_experts.down_proj"}) {
    const ModelSpec m = with_quant({{"quant_method", "fp8"}, {"modules_to_not_convert", {entry}}});
    EXPECT_EQ(m.quantization.dense_ffn.dtype, DType::kBf16) << entry;
    EXPECT_EQ(m.quantization.attention.dtype, DType::kFp8) << entry;
  }
  // compressed-tensors "re:" entries are regular expressions tried on the projections' names.
  EXPECT_EQ(with_quant({{"quant_method", "fp8"}, {"modules_to_not_convert", {"re:.*self_attn.*"}}})
                .quantization.attention.dtype,
            DType::kBf16);
  EXPECT_EQ(with_quant({{"quant_method", "fp8"}, {"modules_to_not_convert", {"re:.*layernorm.*"}}})
                .quantization.attention.dtype,
            DType::kFp8);
  EXPECT_EQ(
      message_of([] {
        with_quant({{"quant_method", "fp8"}, {"modules_to_not_convert", {"re:(self_attn"}}});
      })
          .rfind("q.json: quantization_config: the module pattern \"re:(self_attn\" is not a valid regular "
                 "expression",
                 0),
      0u);
  EXPECT_EQ(message_of([] {
              with_quant({{"quant_method", "fp8"}, {"weight_block_size", {128}}});
            }),
            "q.json: quantization_config: \"weight_block_size\" is not a pair of integers");
}

TEST(Quantization, AwqAndGptqInt4) {
  const ModelSpec gptq =
      with_quant({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", 128}, {"desc_act", false}});
  EXPECT_EQ(gptq.quantization.method, QuantMethod::kGptq);
  EXPECT_EQ(gptq.quantization.dense_ffn.dtype, DType::kInt4);
  EXPECT_EQ(gptq.quantization.activation, DType::kBf16);
  // 0.5 + 2.5 / 128 = 0.51953125 B per param.
  EXPECT_DOUBLE_EQ(gptq.weight_bytes(), kLinears * 0.51953125 + kEmbedHeadBytes);
  EXPECT_EQ(message_of([] {
              with_quant({{"quant_method", "gptq"}, {"bits", 8}});
            }),
            "q.json: quantization_config: gptq with bits 8 is not modelled (only 4-bit W4A16)");
  const ModelSpec awq = resolve_model("Qwen/Qwen3-14B-AWQ");
  EXPECT_EQ(awq.quantization.source, "quantization_config: awq, bits 4, group_size 128");
}

TEST(Quantization, CompressedTensors) {
  // The corpus W8A8 file (top-level weights / input_activations, format int-quantized).
  const ModelSpec w8a8 = resolve_model("vllm-ascend/Qwen3-8B-W8A8");
  EXPECT_EQ(w8a8.quantization.method, QuantMethod::kW8A8Int8);
  EXPECT_EQ(w8a8.quantization.attention.dtype, DType::kInt8);
  EXPECT_EQ(w8a8.quantization.activation, DType::kInt8);
  EXPECT_DOUBLE_EQ(w8a8.weight_bytes(), kLinears + kEmbedHeadBytes);
  // The real layout: config_groups with typed schemes.
  auto group = [](nlohmann::json weights, nlohmann::json acts) {
    nlohmann::json g = {{"weights", weights}, {"targets", {"Linear"}}};
    if (!acts.is_null()) g["input_activations"] = acts;
    return nlohmann::json{
        {"quant_method", "compressed-tensors"}, {"config_groups", {{"group_0", g}}}, {"ignore", {"lm_head"}}};
  };
  const ModelSpec fp8 = with_quant(group({{"num_bits", 8}, {"type", "float"}, {"strategy", "channel"}},
                                         {{"num_bits", 8}, {"type", "float"}, {"dynamic", true}}));
  EXPECT_EQ(fp8.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(fp8.quantization.activation, DType::kFp8);
  const ModelSpec w4a16 = with_quant(group({{"num_bits", 4}, {"type", "int"}, {"group_size", 128}}, nullptr));
  EXPECT_EQ(w4a16.quantization.method, QuantMethod::kGptq);
  EXPECT_EQ(w4a16.quantization.experts.group_size, 128);
  EXPECT_EQ(
      message_of([&] {
        with_quant(group({{"num_bits", 2}, {"type", "int"}}, nullptr));
      }),
      "q.json: quantization_config: compressed-tensors scheme int weights 2 bits with 16-bit activations is "
      "not modelled (modelled: int8 W8A8, fp8 W8A8/W8A16, int4 W4A16, nvfp4)");
}

TEST(Quantization, ModeloptNvfp4AndFp8) {
  const ModelSpec nvfp4 = with_quant({{"quant_method", "modelopt"},
                                      {"quant_algo", "NVFP4"},
                                      {"group_size", 16},
                                      {"exclude_modules", {"lm_head"}}});
  EXPECT_EQ(nvfp4.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(nvfp4.quantization.activation, DType::kNvfp4);
  // 0.5 + 1 / 16 = 0.5625 B per param.
  EXPECT_DOUBLE_EQ(nvfp4.weight_bytes(), kLinears * 0.5625 + kEmbedHeadBytes);
  const ModelSpec fp8 = with_quant({{"quant_method", "modelopt"}, {"quantization", {{"quant_algo", "FP8"}}}});
  EXPECT_EQ(fp8.quantization.method, QuantMethod::kFp8PerTensor);
  // ModelOpt's own config.json block has no quant_method, only its producer (as vLLM reads it): FP8 here,
  // with the FP8 KV cache it names (Qwen3-32B-FP8-Static-PerTensor's config, once refused).
  const ModelSpec producer = with_quant({{"producer", {{"name", "modelopt"}, {"version", "0.31.0"}}},
                                         {"quant_algo", "FP8"},
                                         {"kv_cache_scheme", "FP8"},
                                         {"ignore", {"lm_head"}}});
  EXPECT_EQ(producer.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(producer.quantization.source, "quantization_config: modelopt FP8");
  EXPECT_EQ(producer.quantization.kv_cache, DType::kFp8);
  EXPECT_EQ(resolve_model("Qwen/Qwen3-32B-FP8-Static-PerTensor").quantization.method,
            QuantMethod::kFp8PerTensor);
  EXPECT_EQ(
      message_of([] {
        with_quant({{"quant_method", "modelopt"}, {"quant_algo", "W4A8_AWQ"}});
      }),
      "q.json: quantization_config: modelopt quant_algo \"W4A8_AWQ\" is not modelled (modelled: NVFP4, FP8)");
}

TEST(Quantization, UnknownMethodIsNamed) {
  EXPECT_EQ(message_of([] {
              with_quant({{"quant_method", "bitsandbytes"}, {"load_in_4bit", true}});
            }),
            "q.json: quantization_config: unknown quant_method \"bitsandbytes\" (known: fp8, awq, gptq, "
            "compressed-tensors, mxfp4, modelopt)");
  EXPECT_EQ(message_of([] {
              with_quant({{"bits", 4}});
            }),
            "q.json: quantization_config: missing key \"quant_method\"");
}

TEST(EngineQuantization, OnlineFp8OfABf16Checkpoint) {
  const ModelSpec bf16 = resolve_model("Qwen/Qwen3-8B");
  EXPECT_EQ(with_engine_quantization(bf16, "").quantization.method, QuantMethod::kNone);
  const ModelSpec fp8 = with_engine_quantization(bf16, "fp8");
  EXPECT_EQ(fp8.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(fp8.quantization.activation, DType::kFp8);
  EXPECT_EQ(fp8.quantization.lm_head.dtype, DType::kBf16);
  EXPECT_EQ(fp8.quantization.source,
            "engine flag --quantization fp8 (online per-tensor FP8 of a bf16 checkpoint)");
  EXPECT_DOUBLE_EQ(fp8.weight_bytes(), kLinears + kEmbedHeadBytes);
  // MoE: experts FP8, routers stay BF16.
  const ModelSpec moe = with_engine_quantization(resolve_model("Qwen/Qwen3-235B-A22B-Instruct-2507"), "fp8");
  EXPECT_EQ(moe.quantization.experts.dtype, DType::kFp8);
  EXPECT_EQ(moe.quantization.router.dtype, DType::kBf16);
  // The checkpoint's own method: unchanged (the block-scaled format stays).
  const ModelSpec block = resolve_model("Qwen/Qwen3-8B-FP8");
  EXPECT_EQ(with_engine_quantization(block, "fp8").quantization.method, QuantMethod::kFp8Block);
  const ModelSpec awq = resolve_model("Qwen/Qwen3-14B-AWQ");
  EXPECT_EQ(with_engine_quantization(awq, "awq_marlin").quantization.method, QuantMethod::kAwq);
  EXPECT_EQ(with_engine_quantization(resolve_model("openai/gpt-oss-20b"), "mxfp4").quantization.method,
            QuantMethod::kMxfp4);
}

// SGLang spells ModelOpt's schemes modelopt_fp8 / modelopt_fp4: each matches its own checkpoint only (a new
// user's InferenceX-style SGLang launch of NVIDIA's FP8 Llama was refused as "not modelled").
TEST(EngineQuantization, ModelOptSpellings) {
  const ModelSpec fp8 = resolve_model("nvidia/Llama-3.1-70B-Instruct-FP8");
  ASSERT_EQ(fp8.quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(with_engine_quantization(fp8, "modelopt_fp8").quantization.method, QuantMethod::kFp8PerTensor);
  EXPECT_EQ(with_engine_quantization(fp8, "modelopt").quantization.method, QuantMethod::kFp8PerTensor);
  try {
    with_engine_quantization(fp8, "modelopt_fp4");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("--quantization modelopt_fp4: the checkpoint of ", 0), 0u) << what;
    EXPECT_NE(
        what.find(" is fp8 (quantization_config: modelopt FP8); the engine refuses a mismatching method"),
        std::string::npos)
        << what;
  }
}

TEST(EngineQuantization, Refusals) {
  const ModelSpec bf16 = resolve_model("Qwen/Qwen3-8B");
  try {
    with_engine_quantization(bf16, "awq");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "--quantization awq: the checkpoint of Qwen/Qwen3-8B is none (unquantized bf16); the "
                 "engine refuses a mismatching method");
  }
  EXPECT_THROW(with_engine_quantization(resolve_model("Qwen/Qwen3-14B-AWQ"), "fp8"), std::invalid_argument);
  try {
    with_engine_quantization(bf16, "bitsandbytes");
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--quantization bitsandbytes: not modelled by the twin", 0), 0u)
        << e.what();
  }
}

}  // namespace
}  // namespace servelab::model
