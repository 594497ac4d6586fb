// Variant "qwen3_5": Qwen3.5 (dense and MoE) and Qwen3-Next — hybrid layers of gated DeltaNet linear
// attention and gated full attention (GQA whose q_proj also emits a sigmoid output gate), dense or MoE FFN
// with one shared expert, MTP layers.
//
// HF sources: transformers models/qwen3_next/modeling_qwen3_next.py (Qwen3NextGatedDeltaNet:
// in_proj_qkvz, in_proj_ba, conv1d over q/k/v, out_proj; Qwen3NextAttention with attn_output_gate doubling
// q_proj; layer i is full attention when (i + 1) % full_attention_interval == 0 unless layer_types says;
// shared_expert of shared_expert_intermediate_size). Qwen3.5's text models (qwen3_5_text,
// qwen3_5_moe_text) use the same blocks with the dims of their config; a multimodal wrapper's text_config
// is lifted by from_config (the vision tower is not counted).
#include <fmt/format.h>

#include <algorithm>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

Ffn ffn_of_layer(const detail::ConfigReader& c, int layer) {
  const int experts = c.integer_or("num_experts", 0);
  if (experts <= 0) return DenseFfn{c.positive("intermediate_size"), false};
  const auto mlp_only = c.integers("mlp_only_layers");
  const int step = c.has("decoder_sparse_step") ? c.positive("decoder_sparse_step") : 1;
  if (std::find(mlp_only.begin(), mlp_only.end(), layer) != mlp_only.end() || (layer + 1) % step != 0)
    return DenseFfn{c.positive("intermediate_size"), false};
  MoeFfn moe = detail::routed_experts(c, "num_experts", "moe_intermediate_size");
  moe.shared_intermediate = c.integer_or("shared_expert_intermediate_size", 0);
  moe.shared_experts = moe.shared_intermediate > 0 ? 1 : 0;
  return moe;
}

ModelSpec parse_qwen3_5(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "qwen3_5");
  const int num_layers = c.positive("num_hidden_layers");
  GqaAttention full = detail::parse_gqa(c);
  full.output_gate = c.boolean_or("attn_output_gate", true);
  LinearAttention linear;
  linear.key_heads = c.positive("linear_num_key_heads");
  linear.key_head_dim = c.positive("linear_key_head_dim");
  linear.value_heads = c.positive("linear_num_value_heads");
  linear.value_head_dim = c.positive("linear_value_head_dim");
  linear.conv_kernel = c.positive("linear_conv_kernel_dim");
  if (linear.value_heads % linear.key_heads != 0)
    c.fail(fmt::format("linear_num_value_heads {} is not a multiple of linear_num_key_heads {}",
                       linear.value_heads, linear.key_heads));
  auto types = detail::layer_types(c, num_layers, {"linear_attention", "full_attention"});
  if (types.empty()) {
    const int interval = c.has("full_attention_interval") ? c.positive("full_attention_interval") : 4;
    for (int i = 0; i < num_layers; ++i)
      types.push_back((i + 1) % interval == 0 ? "full_attention" : "linear_attention");
  }
  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    const Attention a = types[i] == "full_attention" ? Attention{full} : Attention{linear};
    layers.push_back({a, ffn_of_layer(c, i)});
  }
  m.layers = detail::group_layers(layers);
  // MTP (mtp_num_hidden_layers): a gated full-attention layer with the model's FFN kind (HF Qwen3-Next MTP).
  m.mtp_layers = c.has("mtp_num_hidden_layers") ? c.integer("mtp_num_hidden_layers")
                                                : c.integer_or("num_nextn_predict_layers", 0);
  if (m.mtp_layers > 0) m.mtp_layer = Layer{full, ffn_of_layer(c, num_layers - 1)};
  if (m.model_type == "qwen3_next") {  // Qwen3-Next uses Qwen3's tokenizer and its ChatML
    m.chat_template = detail::chat_template_qwen3_for(m.id);
    m.tokenizer_package = detail::kTokenizerQwen3;
  } else {
    m.chat_template = detail::chat_template_qwen3_5();
  }
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(
    qwen3_5,
    (ArchitectureVariant{"qwen3_5", {"qwen3_5_text", "qwen3_5_moe_text", "qwen3_next"}, parse_qwen3_5}));

}  // namespace servelab::model
