// Variant "qwen3_moe": Qwen3 GQA attention with qk-norm and a routed-expert MoE (no shared experts).
//
// HF source: transformers models/qwen3_moe/modeling_qwen3_moe.py — layer i is sparse when it is not in
// mlp_only_layers, num_experts > 0 and (i + 1) % decoder_sparse_step == 0; otherwise a dense MLP of
// intermediate_size. norm_topk_prob changes routing weights only (no cost). Qwen3-VL-MoE's language model
// (`qwen3_vl_moe_text`, the text_config of Qwen3VLMoeForConditionalGeneration, lifted by from_config) is
// the same decoder (transformers models/qwen3_vl_moe/modeling_qwen3_vl_moe.py Qwen3VLMoeTextSparseMoeBlock:
// router + num_experts fused gate_up / down experts, no shared expert); the vision tower is not counted.
#include <algorithm>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

ModelSpec parse_qwen3_moe(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "qwen3_moe");
  const int num_layers = c.positive("num_hidden_layers");
  GqaAttention attention = detail::parse_gqa(c);
  attention.o_bias = attention.qkv_bias;
  const MoeFfn moe = detail::routed_experts(c, "num_experts", "moe_intermediate_size");
  const int step = c.has("decoder_sparse_step") ? c.positive("decoder_sparse_step") : 1;
  const auto mlp_only = c.integers("mlp_only_layers");
  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    const bool dense =
        std::find(mlp_only.begin(), mlp_only.end(), i) != mlp_only.end() || (i + 1) % step != 0;
    if (dense) {
      layers.push_back({attention, DenseFfn{c.positive("intermediate_size"), false}});
    } else {
      layers.push_back({attention, moe});
    }
  }
  m.layers = detail::group_layers(layers);
  m.chat_template = detail::chat_template_qwen3_for(m.id);
  m.tokenizer_package = detail::kTokenizerQwen3;
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(qwen3_moe,
                               (ArchitectureVariant{
                                   "qwen3_moe", {"qwen3_moe", "qwen3_vl_moe_text"}, parse_qwen3_moe}));

}  // namespace servelab::model
