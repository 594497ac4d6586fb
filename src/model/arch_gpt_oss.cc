// Variant "gpt_oss": gpt-oss-20b / 120b — GQA with attention sinks and biases, alternating sliding-window
// (128) and full attention layers, MoE with biased experts (MXFP4 in the checkpoint).
//
// HF source: transformers models/gpt_oss/modeling_gpt_oss.py and configuration_gpt_oss.py: q/k/v/o bias
// (attention_bias, default true), per-head learned sinks, router with bias, experts with gate_up / down
// biases, experts intermediate = intermediate_size; layer_types default
// ["sliding_attention" if (i + 1) % 2 else "full_attention"]. Model card: 116.83 B / 5.13 B active (120b),
// 20.91 B / 3.61 B (20b).
#include <fmt/format.h>

#include <algorithm>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

ModelSpec parse_gpt_oss(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "gpt_oss");
  const int num_layers = c.positive("num_hidden_layers");
  GqaAttention attention = detail::parse_gqa(c);
  attention.qkv_bias = attention.o_bias = c.boolean_or("attention_bias", true);
  attention.sinks = true;
  MoeFfn moe;
  moe.experts = c.positive("num_local_experts");
  moe.top_k =
      c.has("experts_per_token") ? c.positive("experts_per_token") : c.positive("num_experts_per_tok");
  moe.expert_intermediate = c.positive("intermediate_size");
  moe.expert_bias = true;
  if (moe.top_k > moe.experts)
    c.fail(fmt::format("experts_per_token {} > num_local_experts {}", moe.top_k, moe.experts));
  auto types = detail::layer_types(c, num_layers, {"sliding_attention", "full_attention"});
  if (types.empty())
    for (int i = 0; i < num_layers; ++i)
      types.push_back((i + 1) % 2 ? "sliding_attention" : "full_attention");
  const bool any_sliding = std::find(types.begin(), types.end(), "sliding_attention") != types.end();
  const int window = any_sliding ? c.positive("sliding_window") : 0;
  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    GqaAttention a = attention;
    a.window = types[i] == "sliding_attention" ? window : 0;
    layers.push_back({a, moe});
  }
  m.layers = detail::group_layers(layers);
  m.chat_template = detail::chat_template_gpt_oss();
  m.tokenizer_package = detail::kTokenizerGptOss;
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(gpt_oss, (ArchitectureVariant{"gpt_oss", {"gpt_oss"}, parse_gpt_oss}));

}  // namespace servelab::model
