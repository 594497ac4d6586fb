// Variant "llama4": Llama 4 Scout / Maverick language model (llama4_text, the text_config of
// Llama4ForConditionalGeneration lifted by from_config; the vision tower is not counted) — GQA with chunked
// local attention on RoPE layers and full attention on the NoPE layers, MoE layers of num_local_experts
// experts (top num_experts_per_tok) plus one shared expert, interleaved with dense SwiGLU layers.
//
// HF source: transformers models/llama4/modeling_llama4.py — Llama4TextAttention (q/k/v/o, bias =
// attention_bias; use_rope = no_rope_layers[i], default 1 except every fourth layer: (i + 1) % 4 != 0;
// RoPE layers attend within attention_chunk_size chunks, NoPE layers attend to the whole context; qk-norm
// and attention temperature tuning are not linears); Llama4TextDecoderLayer (layer i is MoE when i is in
// moe_layers, default every interleave_moe_layer_step-th layer from step - 1; else a dense MLP of
// intermediate_size_mlp); Llama4TextMoe (router hidden -> num_local_experts without bias, experts
// gate_up / down of intermediate_size, shared_expert an MLP of intermediate_size). vLLM
// model_executor/models/llama4.py uses the same rule for its chunked local attention layers.
#include <fmt/format.h>

#include <algorithm>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

/// Whether layer `i` uses RoPE (and so chunked attention): no_rope_layers[i] when given, else
/// (i + 1) % 4 != 0.
bool llama4_rope_layer(const std::vector<int>& no_rope_layers, int i) {
  if (!no_rope_layers.empty()) return no_rope_layers[i] != 0;
  return (i + 1) % 4 != 0;
}

ModelSpec parse_llama4_text(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "llama4");
  const int num_layers = c.positive("num_hidden_layers");
  const GqaAttention attention = detail::parse_gqa(c);
  const int chunk = c.integer_or("attention_chunk_size", 0);
  if (chunk < 0) c.fail(fmt::format("\"attention_chunk_size\" is {} (must be >= 0)", chunk));
  const auto no_rope = c.integers("no_rope_layers");
  if (!no_rope.empty() && static_cast<int>(no_rope.size()) != num_layers)
    c.fail(fmt::format("\"no_rope_layers\" has {} entries for num_hidden_layers {}", no_rope.size(),
                       num_layers));

  MoeFfn moe = detail::routed_experts(c, "num_local_experts", "intermediate_size");
  moe.shared_experts = 1;
  moe.shared_intermediate = moe.expert_intermediate;
  const DenseFfn dense{c.positive("intermediate_size_mlp"), false};
  auto moe_layers = c.integers("moe_layers");
  if (moe_layers.empty()) {
    const int step = c.has("interleave_moe_layer_step") ? c.positive("interleave_moe_layer_step") : 1;
    for (int i = step - 1; i < num_layers; i += step) moe_layers.push_back(i);
  }

  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    GqaAttention a = attention;
    if (llama4_rope_layer(no_rope, i)) a.chunk = chunk;
    const bool is_moe = std::find(moe_layers.begin(), moe_layers.end(), i) != moe_layers.end();
    layers.push_back({a, is_moe ? Ffn{moe} : Ffn{dense}});
  }
  m.layers = detail::group_layers(layers);
  m.chat_template = detail::chat_template_llama4();
  // Llama 4's 202,048-token vocabulary has no npm tokenizer: tokenizer_package stays "".
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(llama4, (ArchitectureVariant{"llama4", {"llama4_text"}, parse_llama4_text}));

}  // namespace servelab::model
