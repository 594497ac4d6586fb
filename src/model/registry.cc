// The architecture registry, config.json field access, from_config and load_config.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>

#include "model/detail.h"
#include "servelab/common/paths.h"
#include "servelab/common/python_json.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

std::vector<ArchitectureVariant>& registry() {
  static std::vector<ArchitectureVariant> variants;
  return variants;
}

DType parse_dtype(const detail::ConfigReader& c) {
  const char* key = c.has("torch_dtype") ? "torch_dtype" : "dtype";
  const std::string d = c.string_or(key, "bfloat16");
  if (d == "bfloat16") return DType::kBf16;
  if (d == "float16" || d == "half") return DType::kFp16;
  if (d == "float32" || d == "float") return DType::kFp32;
  c.fail(fmt::format("\"{}\" is \"{}\" (expected bfloat16, float16 or float32)", key, d));
}

/// config with the text model of a multimodal wrapper (text_config) lifted to the top level: the text
/// model's keys win; the wrapper's quantization_config, _name_or_path (also over an empty one), dtype,
/// tie_word_embeddings and model_type fill in. The wrapper's architectures always win: they name the class
/// the engine loads (Kimi-K2.5's text_config says DeepseekV3ForCausalLM, the checkpoint is
/// KimiK25ForConditionalGeneration with a vision tower).
nlohmann::json text_model(const nlohmann::json& config) {
  if (!config.contains("text_config") || !config["text_config"].is_object()) return config;
  nlohmann::json text = config["text_config"];
  for (const char* key :
       {"quantization_config", "_name_or_path", "torch_dtype", "dtype", "tie_word_embeddings"}) {
    const bool empty_name = std::string(key) == "_name_or_path" && text.contains(key) && text[key] == "";
    if (config.contains(key) && (!text.contains(key) || empty_name)) text[key] = config[key];
  }
  if (config.contains("architectures")) text["architectures"] = config["architectures"];
  if (!text.contains("model_type") && config.contains("model_type"))
    text["model_type"] = config["model_type"];
  return text;
}

/// model_types the twin recognises but does not model, with the layer feature ModelSpec lacks for each
/// (read from the checkpoints' config.json keys named here). A type here is refused with that reason
/// rather than as unknown.
struct UnmodelledType {
  const char* model_type;
  const char* missing;
};
constexpr const char* kGemma4Missing =
    "per-layer-type attention shapes (global_head_dim and num_global_key_value_heads on full-attention "
    "layers, attention_k_eq_v shared K/V) and a MoE block beside the dense MLP";
constexpr UnmodelledType kUnmodelledTypes[] = {
    {"nemotron_h",
     "Mamba-2 state-space layers (hybrid_override_pattern \"M\": SSM state and conv per request) and "
     "squared-ReLU non-gated FFN / MoE experts"},
    {"nemotron-nas",
     "per-layer heterogeneous blocks (block_configs: attention replaced or skipped, FFN width per layer)"},
    {"gemma4", kGemma4Missing},
    {"gemma4_text", kGemma4Missing},
    {"deepseek_v4",
     "compressed sparse attention (compress_ratios per layer), hyper-connections (hc_mult), the grouped "
     "low-rank output projection (o_lora_rank, o_groups) and hash-routed MoE layers (num_hash_layers)"},
    {"deepseek_ref",
     "DeepSeek-V4's compressed sparse attention (compress_ratios per layer), hyper-connections (hc_mult), "
     "grouped low-rank output projection (o_lora_rank, o_groups) and hash-routed MoE layers"},
    {"step3p7",
     "a verified layer structure: no reference modeling file for Step-3.7 is available to check its "
     "sliding-window layers, shared expert (share_expert_dim) and MTP layers against, and the twin does not "
     "guess"},
    {"minimax_m3",
     "block-sparse attention with an index (sparse_attention_config: top-k key blocks per query) and the "
     "clamped swigluoai activation"},
    {"minimax_m3_vl",
     "MiniMax-M3's block-sparse attention with an index (sparse_attention_config) and its vision tower"},
    {"minimax",
     "MiniMax lightning (linear) attention layers (attn_type_list 0) and the shared-expert MoE mode"},
    {"kimi_linear",
     "Kimi Delta Attention linear-attention layers (linear_attn_config.kda_layers: recurrent state per "
     "request) mixed with MLA layers"},
    {"kimi_k3",
     "Kimi Delta Attention linear-attention layers (linear_attn_config.kda_layers) mixed with MLA"},
    {"mimo",
     "MTP layers on a dense Qwen2-style decoder (num_nextn_predict_layers): the dense variant carries no MTP "
     "layer"},
    {"mimo_v2_flash",
     "sliding-window layers with their own head counts and dims (swa_num_attention_heads, swa_head_dim, "
     "v_head_dim != head_dim) and attention sink biases on them"},
};

}  // namespace

namespace detail {

void ConfigReader::fail(const std::string& what) const {
  throw std::runtime_error(source_ + ": " + what);
}

bool ConfigReader::has(const char* key) const {
  return j_.contains(key) && !j_[key].is_null();
}

int ConfigReader::integer(const char* key) const {
  if (!has(key)) fail(fmt::format("missing key \"{}\"", key));
  if (!j_[key].is_number_integer()) fail(fmt::format("\"{}\" is not an integer ({})", key, j_[key].dump()));
  return j_[key].get<int>();
}

int ConfigReader::integer_or(const char* key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

int ConfigReader::positive(const char* key) const {
  const int v = integer(key);
  if (v <= 0) fail(fmt::format("\"{}\" is {} (must be positive)", key, v));
  return v;
}

double ConfigReader::number_or(const char* key, double fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_number()) fail(fmt::format("\"{}\" is not a number ({})", key, j_[key].dump()));
  return j_[key].get<double>();
}

bool ConfigReader::boolean_or(const char* key, bool fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_boolean()) fail(fmt::format("\"{}\" is not a boolean ({})", key, j_[key].dump()));
  return j_[key].get<bool>();
}

std::string ConfigReader::string_or(const char* key, const std::string& fallback) const {
  if (!has(key)) return fallback;
  if (!j_[key].is_string()) fail(fmt::format("\"{}\" is not a string ({})", key, j_[key].dump()));
  return j_[key].get<std::string>();
}

std::vector<std::string> ConfigReader::strings(const char* key) const {
  std::vector<std::string> out;
  if (!has(key)) return out;
  if (!j_[key].is_array()) fail(fmt::format("\"{}\" is not an array", key));
  for (const auto& e : j_[key]) {
    if (!e.is_string()) fail(fmt::format("\"{}\" holds a non-string ({})", key, e.dump()));
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<int> ConfigReader::integers(const char* key) const {
  std::vector<int> out;
  if (!has(key)) return out;
  if (!j_[key].is_array()) fail(fmt::format("\"{}\" is not an array", key));
  for (const auto& e : j_[key]) {
    if (!e.is_number_integer()) fail(fmt::format("\"{}\" holds a non-integer ({})", key, e.dump()));
    out.push_back(e.get<int>());
  }
  return out;
}

ModelSpec common_fields(const ConfigReader& c, const char* variant) {
  ModelSpec m;
  m.id = c.string_or("_name_or_path", "");
  if (m.id.empty()) m.id = c.source();  // absent, or "" (Kimi-K2.5's text_config)
  m.model_type = c.string_or("model_type", "");
  const auto archs = c.strings("architectures");
  m.architecture = archs.empty() ? "" : archs.front();
  m.variant = variant;
  m.hidden_size = c.positive("hidden_size");
  m.vocab_size = c.positive("vocab_size");
  m.max_position_embeddings = c.positive("max_position_embeddings");
  m.tie_word_embeddings = c.boolean_or("tie_word_embeddings", false);
  m.dtype = parse_dtype(c);
  m.quantization = parse_quantization(c.json(), c.source(), m.dtype);
  m.config_source = c.source();
  return m;
}

MoeFfn routed_experts(const ConfigReader& c, const char* experts_key, const char* intermediate_key) {
  MoeFfn moe;
  moe.experts = c.positive(experts_key);
  moe.top_k = c.positive("num_experts_per_tok");
  moe.expert_intermediate = c.positive(intermediate_key);
  if (moe.top_k > moe.experts)
    c.fail(fmt::format("num_experts_per_tok {} > {} {}", moe.top_k, experts_key, moe.experts));
  return moe;
}

GqaAttention parse_gqa(const ConfigReader& c) {
  GqaAttention a;
  a.heads = c.positive("num_attention_heads");
  a.kv_heads = c.has("num_key_value_heads") ? c.positive("num_key_value_heads") : a.heads;
  if (a.heads % a.kv_heads != 0)
    c.fail(fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}", a.heads,
                       a.kv_heads));
  a.head_dim = c.has("head_dim") ? c.positive("head_dim") : c.positive("hidden_size") / a.heads;
  a.qkv_bias = c.boolean_or("attention_bias", false);
  return a;
}

std::vector<std::string> layer_types(const ConfigReader& c, int num_layers,
                                     const std::vector<std::string>& allowed) {
  auto types = c.strings("layer_types");
  if (types.empty()) return types;
  if (static_cast<int>(types.size()) != num_layers)
    c.fail(fmt::format("\"layer_types\" has {} entries for num_hidden_layers {}", types.size(), num_layers));
  for (std::size_t i = 0; i < types.size(); ++i)
    if (std::find(allowed.begin(), allowed.end(), types[i]) == allowed.end())
      c.fail(fmt::format("layer_types[{}] is \"{}\" (expected one of: {})", i, types[i],
                         fmt::join(allowed, ", ")));
  return types;
}

}  // namespace detail

bool register_architecture(ArchitectureVariant variant) {
  auto& r = registry();
  for (const auto& v : r)
    for (const auto& t : variant.model_types)
      if (std::find(v.model_types.begin(), v.model_types.end(), t) != v.model_types.end())
        throw std::logic_error(
            fmt::format("model_type \"{}\" registered by both {} and {}", t, v.name, variant.name));
  r.push_back(std::move(variant));
  std::sort(r.begin(), r.end(), [](const auto& a, const auto& b) { return std::string(a.name) < b.name; });
  return true;
}

std::vector<ArchitectureVariant> architectures() {
  return registry();
}

double vision_tower_params(const nlohmann::json& vision_config, const std::string& source) {
  if (!vision_config.is_object()) return 0.0;
  const std::string type = vision_config.value("model_type", "");
  if (type != "qwen3_vl" && type != "qwen3_vl_moe") return 0.0;
  const detail::ConfigReader c(vision_config, source + ": vision_config");
  const double h = c.positive("hidden_size"), inter = c.positive("intermediate_size");
  const double patch = c.positive("patch_size"), merge = c.positive("spatial_merge_size");
  const double blocks = c.positive("depth") * (4 * h * h + 2 * h * inter);
  const double embed =
      c.integer_or("in_channels", 3) * c.integer_or("temporal_patch_size", 2) * patch * patch * h +
      c.integer_or("num_position_embeddings", 0) * h;
  const double m = h * merge * merge;
  const double mergers =
      (1.0 + c.integers("deepstack_visual_indexes").size()) * (m * m + m * c.positive("out_hidden_size"));
  return blocks + embed + mergers;
}

namespace {

ModelSpec parse_text_model(const nlohmann::json& raw, const std::string& source) {
  const nlohmann::json config = text_model(raw);
  if (!config.contains("model_type") || !config["model_type"].is_string())
    throw std::runtime_error(source + ": missing key \"model_type\"");
  const std::string type = config["model_type"].get<std::string>();
  std::vector<std::string> known;
  for (const auto& v : registry()) {
    if (std::find(v.model_types.begin(), v.model_types.end(), type) != v.model_types.end())
      return v.parse(config, source);
    known.insert(known.end(), v.model_types.begin(), v.model_types.end());
  }
  std::sort(known.begin(), known.end());
  for (const auto& u : kUnmodelledTypes)
    if (type == u.model_type)
      throw std::runtime_error(fmt::format(
          "{}: model_type \"{}\" is recognised but not modelled: the twin lacks {} (modelled: {})", source,
          type, u.missing, fmt::join(known, ", ")));
  throw std::runtime_error(
      fmt::format("{}: unknown model_type \"{}\" (known: {})", source, type, fmt::join(known, ", ")));
}

}  // namespace

ModelSpec from_config(const nlohmann::json& raw, const std::string& source) {
  if (!raw.is_object()) throw std::runtime_error(source + ": config is not a JSON object");
  ModelSpec m = parse_text_model(raw, source);
  if (raw.contains("vision_config")) m.vision_params = vision_tower_params(raw["vision_config"], source);
  return m;
}

namespace {

nlohmann::json read_config_json(const std::filesystem::path& file) {
  const std::string text = common::read_file(file);  // throws naming the path
  try {
    return nlohmann::json::parse(common::python_nonfinite_to_null(text));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error("model config " + file.string() + ": invalid JSON: " + e.what());
  }
}

}  // namespace

ModelSpec load_config(const std::filesystem::path& config_json) {
  return from_config(read_config_json(config_json), config_json.string());
}

ModelSpec load_config(const std::filesystem::path& config_json,
                      const std::filesystem::path& hf_quant_config) {
  nlohmann::json j = read_config_json(config_json);
  std::string source = config_json.string();
  if (j.is_object() && !j.contains("quantization_config")) {
    nlohmann::json q = read_config_json(hf_quant_config);
    if (!q.is_object())
      throw std::runtime_error("model config " + hf_quant_config.string() + " is not an object");
    q["quant_method"] = "modelopt";
    j["quantization_config"] = std::move(q);
    source += " + " + hf_quant_config.filename().string();
  }
  return from_config(j, source);
}

ModelSpec load_config_with_modelopt(const std::filesystem::path& path) {
  std::error_code ec;
  // A checkpoint directory, as engines take it: its config.json (and hf_quant_config.json beside it).
  const std::filesystem::path config_json =
      std::filesystem::is_directory(path, ec) ? path / "config.json" : path;
  const std::filesystem::path quant = detail::hf_quant_config_beside(config_json);
  return !quant.empty() && std::filesystem::is_regular_file(quant, ec) ? load_config(config_json, quant)
                                                                       : load_config(config_json);
}

std::filesystem::path detail::hf_quant_config_beside(const std::filesystem::path& config_json) {
  const std::string name = config_json.filename().string(), suffix = "config.json";
  if (name.size() < suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
    return {};
  return config_json.parent_path() / (name.substr(0, name.size() - suffix.size()) + "hf_quant_config.json");
}

}  // namespace servelab::model
