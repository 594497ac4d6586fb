// Variant "glm4_moe": GLM-4.5 / 4.5-Air / 4.6 — GQA with q/k/v bias and partial rotary embeddings, MoE
// with one shared expert after first_k_dense_replace dense layers, and MTP layers.
//
// HF source: transformers models/glm4_moe/modeling_glm4_moe.py (q/k/v bias = attention_bias, o_proj
// without bias; shared experts = n_shared_experts x moe_intermediate_size; layer i is MoE when
// i >= first_k_dense_replace). partial_rotary_factor (0.5) and use_qk_norm change no weight or FLOP count
// the twin uses. The MTP layer (num_nextn_predict_layers) is a full MoE decoder layer plus eh_proj.
#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

ModelSpec parse_glm4_moe(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "glm4_moe");
  const int num_layers = c.positive("num_hidden_layers");
  const GqaAttention attention = detail::parse_gqa(c);
  const DenseFfn dense{c.positive("intermediate_size"), false};
  MoeFfn moe = detail::routed_experts(c, "n_routed_experts", "moe_intermediate_size");
  moe.shared_experts = c.integer_or("n_shared_experts", 0);
  moe.shared_intermediate = moe.shared_experts > 0 ? moe.expert_intermediate : 0;
  const int first_dense = c.integer_or("first_k_dense_replace", 0);
  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i)
    layers.push_back({attention, i >= first_dense ? Ffn{moe} : Ffn{dense}});
  m.layers = detail::group_layers(layers);
  m.mtp_layers = c.integer_or("num_nextn_predict_layers", 0);
  if (m.mtp_layers > 0) m.mtp_layer = Layer{attention, moe};
  m.chat_template = detail::chat_template_glm();
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(glm4_moe, (ArchitectureVariant{"glm4_moe", {"glm4_moe"}, parse_glm4_moe}));

}  // namespace servelab::model
