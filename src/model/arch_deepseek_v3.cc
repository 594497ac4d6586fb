// Variant "deepseek_v3": MLA + MoE with shared experts and first-k dense layers (DeepSeek-V3), plus the
// DSA lightning indexer (DeepSeek-V3.2 `deepseek_v32`, GLM-5.x `glm_moe_dsa`) and MTP layers. Kimi-K2
// (`kimi_k2`, DeepseekV3ForCausalLM: 384 experts, 64 heads, one dense layer) is the same model with other
// dims. Kimi-K2.5 (`kimi_k25`, KimiK25ForConditionalGeneration) is modelled as its language model only:
// from_config lifts its text_config (a DeepseekV3 config, model_type kimi_k2 or deepseek_v3); the MoonViT
// vision tower and projector are not counted (the engines' vision-encoder memory rule sees the wrapper's
// architecture).
//
// Sources: DeepSeek-V3.2-Exp inference/model.py (MLA projections, class Indexer) and
// shared/reference/deepseek-v32-perf-facts.md §1-2; HF modeling_deepseek_v3.py (first_k_dense_replace,
// moe_layer_freq, n_shared_experts x moe_intermediate_size shared MLP).
//
// GLM-5.2's index_topk_freq / index_skip_topk_offset are INTERPRETED (unverified against GLM's code):
// layers below index_skip_topk_offset run dense MLA; layers from it on attend to the index_topk keys the
// indexer selects; the indexer runs (and holds weights and a key cache) on layers where
// (layer - offset) % index_topk_freq == 0, and the layers in between reuse its latest selection.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

struct DsaRule {
  int topk = 0;
  int heads = 0;
  int head_dim = 0;
  int offset = 0;  // index_skip_topk_offset
  int freq = 1;    // index_topk_freq
};

MlaAttention mla_of_layer(const MlaAttention& base, const DsaRule& dsa, int layer) {
  MlaAttention a = base;
  if (dsa.topk <= 0) return a;
  a.index_heads = dsa.heads;
  a.index_head_dim = dsa.head_dim;
  if (layer < dsa.offset) return a;  // dense MLA below the offset
  a.index_topk = dsa.topk;
  a.indexer = (layer - dsa.offset) % dsa.freq == 0;
  return a;
}

ModelSpec parse_mla_moe(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "deepseek_v3");
  const int num_layers = c.positive("num_hidden_layers");
  MlaAttention mla;
  mla.heads = c.positive("num_attention_heads");
  mla.q_lora_rank = c.integer_or("q_lora_rank", 0);  // null in V2-Lite: queries projected directly
  mla.kv_lora_rank = c.positive("kv_lora_rank");
  mla.qk_nope_head_dim = c.positive("qk_nope_head_dim");
  mla.qk_rope_head_dim = c.positive("qk_rope_head_dim");
  mla.v_head_dim = c.positive("v_head_dim");

  DsaRule dsa;
  const bool sparse_type = m.model_type == "deepseek_v32" || m.model_type == "glm_moe_dsa";
  if (sparse_type || c.has("index_topk")) {
    dsa.topk = c.positive("index_topk");
    dsa.heads = c.positive("index_n_heads");
    dsa.head_dim = c.positive("index_head_dim");
    dsa.offset = c.integer_or("index_skip_topk_offset", 0);
    dsa.freq = c.has("index_topk_freq") ? c.positive("index_topk_freq") : 1;
    if (dsa.offset < 0 || dsa.offset > num_layers)
      c.fail(fmt::format("\"index_skip_topk_offset\" is {} (must be in 0..num_hidden_layers {})", dsa.offset,
                         num_layers));
  }

  const DenseFfn dense{c.positive("intermediate_size"), false};
  MoeFfn moe = detail::routed_experts(c, "n_routed_experts", "moe_intermediate_size");
  moe.shared_experts = c.integer_or("n_shared_experts", 0);
  moe.shared_intermediate = moe.shared_experts > 0 ? moe.expert_intermediate : 0;
  const int first_dense = c.integer_or("first_k_dense_replace", 0);
  const int moe_freq = c.has("moe_layer_freq") ? c.positive("moe_layer_freq") : 1;

  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    const bool is_moe = i >= first_dense && i % moe_freq == 0;
    layers.push_back({mla_of_layer(mla, dsa, i), is_moe ? Ffn{moe} : Ffn{dense}});
  }
  m.layers = detail::group_layers(layers);
  // MTP: one more decoder layer (MoE) after the last, with the attention that layer index would get.
  m.mtp_layers = c.integer_or("num_nextn_predict_layers", 0);
  if (m.mtp_layers > 0) m.mtp_layer = Layer{mla_of_layer(mla, dsa, num_layers), moe};

  const bool kimi = m.model_type == "kimi_k2" || m.architecture.rfind("KimiK2", 0) == 0;
  if (kimi) {
    // Kimi's tiktoken vocabulary (163,840) is not published on npm: tokenizer_package stays "".
    m.chat_template = detail::chat_template_kimi_k2();
  } else if (m.model_type == "glm_moe_dsa") {
    m.chat_template = detail::chat_template_glm();
  } else if (m.model_type == "deepseek_v32") {
    m.chat_template = detail::chat_template_deepseek_v32();
    m.tokenizer_package = detail::kTokenizerDeepseekV3;
  } else {
    m.chat_template = detail::chat_template_deepseek_v3();
    // DeepSeek-R1's template opens <think> in the generation prompt: it always reasons.
    m.chat_template.thinks_by_default = m.id.find("-R1") != std::string::npos;
    m.tokenizer_package = detail::kTokenizerDeepseekV3;
  }
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(deepseek_v3,
                               (ArchitectureVariant{"deepseek_v3",
                                                    {"deepseek_v3", "deepseek_v32", "glm_moe_dsa", "kimi_k2"},
                                                    parse_mla_moe}));

ModelSpec deepseek_v32() {
  // shared/data/SOURCES.md "Not available here" and deepseek-v32-perf-facts.md §1 (HF config.json as
  // mirrored by aiconfigurator; V3.2-Exp inference/config_671B_v3.2.json).
  const nlohmann::json config = {
      {"_name_or_path", "deepseek-ai/DeepSeek-V3.2"},
      {"architectures", nlohmann::json::array({"DeepseekV32ForCausalLM"})},
      {"model_type", "deepseek_v32"},
      {"hidden_size", 7168},
      {"intermediate_size", 18432},
      {"moe_intermediate_size", 2048},
      {"num_hidden_layers", 61},
      {"first_k_dense_replace", 3},
      {"num_attention_heads", 128},
      {"num_key_value_heads", 128},
      {"q_lora_rank", 1536},
      {"kv_lora_rank", 512},
      {"qk_nope_head_dim", 128},
      {"qk_rope_head_dim", 64},
      {"v_head_dim", 128},
      {"n_routed_experts", 256},
      {"n_shared_experts", 1},
      {"num_experts_per_tok", 8},
      {"n_group", 8},
      {"topk_group", 4},
      {"routed_scaling_factor", 2.5},
      {"norm_topk_prob", true},
      {"index_n_heads", 64},
      {"index_head_dim", 128},
      {"index_topk", 2048},
      {"vocab_size", 129280},
      {"max_position_embeddings", 163840},
      {"rope_scaling", {{"type", "yarn"}, {"factor", 40}, {"original_max_position_embeddings", 4096}}},
      {"num_nextn_predict_layers", 1},
      {"tie_word_embeddings", false},
      {"bos_token_id", 0},
      {"eos_token_id", 1},
      {"torch_dtype", "bfloat16"},
      {"quantization_config",
       {{"quant_method", "fp8"},
        {"fmt", "e4m3"},
        {"activation_scheme", "dynamic"},
        {"scale_fmt", "ue8m0"},
        {"weight_block_size", {128, 128}}}},
  };
  return parse_mla_moe(config,
                       "built-in DeepSeek-V3.2 (shared/data/SOURCES.md, deepseek-v32-perf-facts.md §1)");
}

}  // namespace servelab::model
