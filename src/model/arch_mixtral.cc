// Variant "mixtral": GQA attention and a routed-expert MoE of num_local_experts SwiGLU experts of
// intermediate_size each on every layer, no shared expert (Mixtral-8x7B / 8x22B), and MiniMax-M2 /
// M2.5 / M2.7, which is the same block with per-layer qk-norm, partial rotary and a sigmoid router with a
// score-correction bias.
//
// HF sources: transformers models/mixtral/modeling_mixtral.py (MixtralAttention q/k/v/o without bias,
// sliding_window on every layer when set; MixtralSparseMoeBlock: gate hidden -> num_local_experts, experts
// w1/w3 hidden -> intermediate_size, w2 back); models/minimax_m2/modular_minimax_m2.py (built from the
// Mixtral classes: MiniMaxM2Attention adds q_norm / k_norm over all heads and rotary_dim, neither a linear;
// e_score_correction_bias is a vector of num_local_experts, not counted). vLLM model_executor/models/
// minimax_m2.py has the same linears. attn_type_list (MiniMax-Text-01 / M1: 0 = lightning linear
// attention) must be all 1 (softmax attention): the lightning layers are refused, not modelled.
// MiniMax-M2's checkpoint also describes MTP modules (use_mtp, num_mtp_modules); they are not modelled
// (mtp_layers = 0): the vLLM and SGLang minimax_m2 model classes load no MTP draft [recalled], so a launch
// asking for MTP speculation is refused as for any model without MTP layers.
#include <fmt/format.h>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

/// Checks MiniMax's attn_type_list (one entry per layer, 1 = softmax attention).
void check_minimax_attention_types(const detail::ConfigReader& c, int num_layers) {
  const auto types = c.integers("attn_type_list");
  if (types.empty()) return;
  if (static_cast<int>(types.size()) != num_layers)
    c.fail(
        fmt::format("\"attn_type_list\" has {} entries for num_hidden_layers {}", types.size(), num_layers));
  for (std::size_t i = 0; i < types.size(); ++i)
    if (types[i] != 1)
      c.fail(fmt::format(
          "attn_type_list[{}] is {}: MiniMax lightning (linear) attention layers are not modelled (only "
          "softmax attention, type 1)",
          i, types[i]));
}

ModelSpec parse_mixtral_moe(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "mixtral");
  const bool minimax = m.model_type == "minimax_m2";
  const int num_layers = c.positive("num_hidden_layers");
  if (minimax) {
    check_minimax_attention_types(c, num_layers);
    if (c.integer_or("shared_intermediate_size", 0) != 0)
      c.fail(fmt::format("\"shared_intermediate_size\" is {}: a MiniMax shared expert is not modelled",
                         c.integer("shared_intermediate_size")));
  }
  GqaAttention attention = detail::parse_gqa(c);
  if (c.has("sliding_window")) attention.window = c.positive("sliding_window");
  const MoeFfn moe = detail::routed_experts(c, "num_local_experts", "intermediate_size");
  m.layers = {LayerGroup{0, num_layers, Layer{attention, moe}}};
  if (minimax) {
    m.chat_template = detail::chat_template_minimax_m2();
  } else {
    m.chat_template = detail::chat_template_mistral();
  }
  // No MiniMax or Mistral tokenizer is published on npm: tokenizer_package stays "" (a random or ShareGPT
  // workload then needs --tokenizer FILE; --scenario needs none).
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(mixtral, (ArchitectureVariant{
                                            "mixtral", {"mixtral", "minimax_m2"}, parse_mixtral_moe}));

}  // namespace servelab::model
