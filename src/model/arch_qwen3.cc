// Variant "qwen3": dense decoder with GQA and a SwiGLU FFN (Qwen3 with qk-norm; also Llama, Mistral,
// Qwen2/2.5, which differ only in biases, sliding windows and chat template).
//
// HF sources: transformers models/qwen3/modeling_qwen3.py (q/k/v/o bias = attention_bias; q_norm/k_norm
// per head, not linears), models/qwen2/modeling_qwen2.py (q/k/v bias always on, o without; sliding
// window on layers >= max_window_layers when use_sliding_window), models/llama/modeling_llama.py
// (attention_bias on q/k/v/o, mlp_bias), models/mistral (sliding_window on every layer when set).
// Qwen3-VL's language model (`qwen3_vl_text`, the text_config of Qwen3VLForConditionalGeneration, lifted
// by from_config) is Qwen3's decoder (transformers models/qwen3_vl/modeling_qwen3_vl.py
// Qwen3VLTextDecoderLayer: the same q/k/v/o with q/k-norm and SwiGLU MLP; interleaved MRoPE and the
// DeepStack visual residuals add no weights to it); the vision tower is not counted.
#include <fmt/format.h>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

int window_of_layer(const detail::ConfigReader& c, const std::string& type, int layer,
                    const std::vector<std::string>& types) {
  if (!c.has("sliding_window")) return 0;
  const int window = c.positive("sliding_window");
  if (!types.empty()) return types[layer] == "sliding_attention" ? window : 0;
  if (type == "mistral" || type == "llama") return window;
  // Qwen2 / Qwen3: the window applies only with use_sliding_window, from max_window_layers on.
  if (!c.boolean_or("use_sliding_window", false)) return 0;
  return layer >= c.integer_or("max_window_layers", 0) ? window : 0;
}

ModelSpec parse_dense(const nlohmann::json& config, const std::string& source) {
  const detail::ConfigReader c(config, source);
  ModelSpec m = detail::common_fields(c, "qwen3");
  // Qwen3-VL's text model is Qwen3's decoder: treat it as qwen3 below (biases, template, tokenizer).
  const std::string type = m.model_type == "qwen3_vl_text" ? "qwen3" : m.model_type;
  const int num_layers = c.positive("num_hidden_layers");
  GqaAttention attention = detail::parse_gqa(c);
  if (type == "qwen2") attention.qkv_bias = true;
  attention.o_bias = (type == "llama" || type == "qwen3") && c.boolean_or("attention_bias", false);
  DenseFfn ffn{c.positive("intermediate_size"), type == "llama" && c.boolean_or("mlp_bias", false)};
  const auto types = detail::layer_types(c, num_layers, {"full_attention", "sliding_attention"});
  std::vector<Layer> layers;
  for (int i = 0; i < num_layers; ++i) {
    GqaAttention a = attention;
    a.window = window_of_layer(c, type, i, types);
    layers.push_back({a, ffn});
  }
  m.layers = detail::group_layers(layers);
  if (type == "qwen3") {
    m.chat_template = detail::chat_template_qwen3_for(m.id);
    m.tokenizer_package = detail::kTokenizerQwen3;
  } else if (type == "qwen2") {
    m.chat_template = detail::chat_template_qwen2();
  } else if (type == "llama" && m.vocab_size == 128256) {  // Llama 3.x vocabulary
    m.chat_template = detail::chat_template_llama3();
    m.tokenizer_package = detail::kTokenizerLlama31;
  } else {
    m.chat_template = detail::chat_template_mistral();  // Mistral; Llama 2's [INST] form is the same shape
  }
  return m;
}

}  // namespace

SERVELAB_REGISTER_ARCHITECTURE(
    qwen3,
    (ArchitectureVariant{"qwen3", {"qwen3", "qwen2", "llama", "mistral", "qwen3_vl_text"}, parse_dense}));

}  // namespace servelab::model
