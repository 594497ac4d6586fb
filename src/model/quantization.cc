// Weight formats from config.json quantization_config and from engine --quantization flags.
//
// Storage rules (bytes per parameter = element bytes + scale bytes / group):
//   FP8 block (DeepSeek / Qwen3-FP8 / GLM-FP8): e4m3 + one fp32 scale per 128x128 block (1 + 4/16384);
//   FP8 per-tensor / per-channel: 1 byte, scales negligible;
//   AWQ / GPTQ INT4 group 128: 0.5 + (fp16 scale 2 B + 4-bit zero 0.5 B) / 128;
//   MXFP4 (OCP MX spec): 4-bit E2M1 + one E8M0 byte per 32;
//   NVFP4 (ModelOpt): 4-bit E2M1 + one FP8 E4M3 byte per 16 (the per-tensor fp32 scale is negligible).
// Embedding, LM head and routers stay in the model dtype in every scheme of the corpus (the checkpoints'
// modules_to_not_convert / ignore lists name lm_head; routers and embeddings are never quantized).
#include <fmt/format.h>

#include <algorithm>
#include <regex>
#include <stdexcept>

#include "model/detail.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace detail {
namespace {

WeightFormat plain(DType d) {
  return WeightFormat{d, 0, 0, false};
}
WeightFormat fp8_block() {
  return WeightFormat{DType::kFp8, 128 * 128, 4, true};
}
WeightFormat int4_group(int group_size) {
  return WeightFormat{DType::kInt4, group_size > 0 ? group_size : 0, 2.5, false};
}
WeightFormat mxfp4() {
  return WeightFormat{DType::kMxfp4, 32, 1, false};
}
WeightFormat nvfp4(int group_size) {
  return WeightFormat{DType::kNvfp4, group_size > 0 ? group_size : 16, 1, false};
}

/// Sets attention, dense FFN and experts to `w` (the rest stays in the model dtype).
void quantize_linears(Quantization& q, const WeightFormat& w) {
  q.attention = w;
  q.dense_ffn = w;
  q.experts = w;
}

/// The dot-separated components of a module name ("model.layers.*.self_attn*" -> model, layers, *,
/// self_attn*).
std::vector<std::string> module_parts(const std::string& name) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  for (std::size_t dot = name.find('.'); dot != std::string::npos; dot = name.find('.', start)) {
    parts.push_back(name.substr(start, dot - start));
    start = dot + 1;
  }
  parts.push_back(name.substr(start));
  return parts;
}

std::string without_wildcard(std::string s) {
  while (!s.empty() && s.back() == '*') s.pop_back();
  return s;
}

/// True when `name` (a modules_to_not_convert / ignore / exclude_modules entry) covers the main linear
/// projections of a block whose module is one of `blocks`: the block itself ("model.layers.*.self_attn"),
/// a wildcard at or right after it ("...self_attn*", "*.attn.*"), or one of its projections ("...q_proj",
/// "...kv_a_proj_with_mqa", "...shared_experts.down_proj"). Entries naming a norm, a bias, a gate or the
/// DSA indexer inside the block ("...self_attn.kv_a_layernorm", "...self_attn.indexers_proj",
/// "...mlp.shared_expert_gate": GLM-5 FP8, Qwen3.5 NVFP4) leave the block's projections quantized.
bool covers_block_linears(const std::string& name, std::initializer_list<const char*> blocks) {
  const std::vector<std::string> parts = module_parts(name);
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::string block = without_wildcard(parts[i]);
    if (std::none_of(blocks.begin(), blocks.end(), [&](const char* b) { return block == b; })) continue;
    if (block != parts[i] || i + 1 == parts.size()) return true;  // "...self_attn*", "...self_attn"
    const std::string r = without_wildcard(parts[i + 1]);
    if (r.empty()) return true;                  // "*.attn.*"
    if (r.rfind("index", 0) == 0) return false;  // "self_attn.indexer*", "self_attn.indexers_proj"
    const bool proj = r.size() > 5 && r.compare(r.size() - 5, 5, "_proj") == 0;
    return proj || r.rfind("kv_a_proj", 0) == 0 || r.rfind("fused_qkv", 0) == 0 || r == "query_key_value" ||
           r == "dense" || r == "wqkv" || r == "wo" || r == "w1" || r == "w2" || r == "w3";
  }
  return false;
}

/// Module names of the main projections an "re:" entry (compressed-tensors: a regular expression matched
/// from the start of the name) is tried on.
const std::vector<std::string> kAttentionModules = {
    "model.layers.0.self_attn.q_proj",    "model.layers.0.self_attn.k_proj",
    "model.layers.0.self_attn.v_proj",    "model.layers.0.self_attn.o_proj",
    "model.layers.0.self_attn.qkv_proj",  "model.layers.0.self_attn.q_a_proj",
    "model.layers.0.self_attn.q_b_proj",  "model.layers.0.self_attn.kv_a_proj_with_mqa",
    "model.layers.0.self_attn.kv_b_proj", "model.layers.0.linear_attn.in_proj_qkvz",
    "model.layers.0.linear_attn.out_proj"};
const std::vector<std::string> kSharedExpertModules = {
    "model.layers.3.mlp.shared_experts.gate_proj", "model.layers.3.mlp.shared_experts.down_proj",
    "model.layers.3.mlp.shared_expert.gate_proj", "model.layers.3.mlp.shared_expert.down_proj"};

/// The "re:" entry `pattern` compiled to match from the start of a name. Throws std::runtime_error naming
/// `where` for an invalid expression.
std::regex module_regex(const std::string& pattern, const std::string& where) {
  try {
    return std::regex("(?:" + pattern + ").*");
  } catch (const std::regex_error& e) {
    throw std::runtime_error(fmt::format(
        "{}: the module pattern \"re:{}\" is not a valid regular expression ({})", where, pattern, e.what()));
  }
}

/// True when `re` matches one of `modules`.
bool regex_covers(const std::regex& re, const std::vector<std::string>& modules) {
  return std::any_of(modules.begin(), modules.end(),
                     [&](const std::string& m) { return std::regex_match(m, re); });
}

/// Applies a modules_to_not_convert / ignore / exclude_modules list: entries covering attention's or the
/// shared experts' projections (covers_block_linears; an "re:" entry when it matches one of them) keep
/// those in the model dtype, for every layer (the weight format is one per kind of linear; a list naming
/// some layers only is taken for all). lm_head, embeddings and routers are unquantized already.
void keep_unconverted(Quantization& q, const std::vector<std::string>& modules, DType dtype,
                      const std::string& where) {
  for (const auto& m : modules) {
    bool attention = false, shared = false;
    if (m.rfind("re:", 0) == 0) {
      const std::regex re = module_regex(m.substr(3), where);
      attention = regex_covers(re, kAttentionModules);
      shared = regex_covers(re, kSharedExpertModules);
    } else {
      attention = covers_block_linears(m, {"self_attn", "linear_attn", "attn", "attention"});
      shared = covers_block_linears(m, {"shared_expert", "shared_experts"});
    }
    if (attention) q.attention = plain(dtype);
    if (shared) q.dense_ffn = plain(dtype);
  }
}

std::vector<std::string> string_list(const nlohmann::json& qc, const char* key, const std::string& where) {
  std::vector<std::string> out;
  if (!qc.contains(key) || qc[key].is_null()) return out;
  if (!qc[key].is_array()) throw std::runtime_error(fmt::format("{}: \"{}\" is not an array", where, key));
  for (const auto& e : qc[key]) {
    if (!e.is_string()) throw std::runtime_error(fmt::format("{}: \"{}\" holds a non-string", where, key));
    out.push_back(e.get<std::string>());
  }
  return out;
}

int int_or(const nlohmann::json& o, const char* key, int fallback, const std::string& where) {
  if (!o.contains(key) || o[key].is_null()) return fallback;
  if (!o[key].is_number_integer())
    throw std::runtime_error(fmt::format("{}: \"{}\" is not an integer", where, key));
  return o[key].get<int>();
}

std::string str_or(const nlohmann::json& o, const char* key, const std::string& fallback) {
  if (!o.contains(key) || !o[key].is_string()) return fallback;
  return o[key].get<std::string>();
}

Quantization parse_fp8(const nlohmann::json& qc, const std::string& where, DType dtype) {
  Quantization q = unquantized(dtype);
  q.activation = DType::kFp8;
  if (qc.contains("weight_block_size") && !qc["weight_block_size"].is_null()) {
    const auto& b = qc["weight_block_size"];
    if (!b.is_array() || b.size() != 2 || !b[0].is_number_integer() || !b[1].is_number_integer())
      throw std::runtime_error(where + ": \"weight_block_size\" is not a pair of integers");
    WeightFormat w = fp8_block();
    w.group_size = b[0].get<int>() * b[1].get<int>();
    quantize_linears(q, w);
    q.method = QuantMethod::kFp8Block;
    q.source = fmt::format("quantization_config: fp8, weight_block_size [{}, {}], activation_scheme {}",
                           b[0].get<int>(), b[1].get<int>(), str_or(qc, "activation_scheme", "dynamic"));
  } else {
    quantize_linears(q, plain(DType::kFp8));
    q.method = QuantMethod::kFp8PerTensor;
    q.source = fmt::format("quantization_config: fp8 per-tensor, activation_scheme {}",
                           str_or(qc, "activation_scheme", "dynamic"));
  }
  keep_unconverted(q, string_list(qc, "modules_to_not_convert", where), dtype, where);
  keep_unconverted(q, string_list(qc, "ignored_layers", where), dtype, where);
  return q;
}

Quantization parse_int4(const nlohmann::json& qc, const std::string& where, DType dtype, QuantMethod method) {
  const char* name = method == QuantMethod::kAwq ? "awq" : "gptq";
  const int bits =
      int_or(qc, method == QuantMethod::kAwq && qc.contains("w_bit") ? "w_bit" : "bits", 4, where);
  if (bits != 4)
    throw std::runtime_error(
        fmt::format("{}: {} with bits {} is not modelled (only 4-bit W4A16)", where, name, bits));
  const int group =
      int_or(qc, method == QuantMethod::kAwq && qc.contains("q_group_size") ? "q_group_size" : "group_size",
             128, where);
  Quantization q = unquantized(dtype);
  quantize_linears(q, int4_group(group));
  q.method = method;
  q.source = fmt::format("quantization_config: {}, bits 4, group_size {}", name, group);
  keep_unconverted(q, string_list(qc, "modules_to_not_convert", where), dtype, where);
  return q;
}

Quantization parse_mxfp4(const nlohmann::json& qc, const std::string& where, DType dtype) {
  // gpt-oss: only the MoE experts are MXFP4; modules_to_not_convert names attention, router, embedding
  // and lm_head, which are BF16 (HF Mxfp4Config; vLLM Mxfp4Config quantizes FusedMoE layers only).
  Quantization q = unquantized(dtype);
  q.experts = mxfp4();
  q.method = QuantMethod::kMxfp4;
  const auto keep = string_list(qc, "modules_to_not_convert", where);
  q.source =
      fmt::format("quantization_config: mxfp4 experts, modules_to_not_convert [{}]", fmt::join(keep, ", "));
  return q;
}

Quantization parse_compressed_tensors(const nlohmann::json& qc, const std::string& where, DType dtype) {
  // Scheme from config_groups.*.{weights,input_activations} (the real layout) or top-level weights /
  // input_activations (the reconstructed corpus file); type from weights.type or the format name.
  const nlohmann::json* weights = nullptr;
  const nlohmann::json* acts = nullptr;
  if (qc.contains("config_groups") && qc["config_groups"].is_object()) {
    for (const auto& [name, group] : qc["config_groups"].items()) {
      if (group.contains("weights") && group["weights"].is_object()) weights = &group["weights"];
      if (group.contains("input_activations") && group["input_activations"].is_object())
        acts = &group["input_activations"];
      break;  // one group in every checkpoint of the corpus; the first group decides
    }
  }
  if (weights == nullptr && qc.contains("weights") && qc["weights"].is_object()) weights = &qc["weights"];
  if (acts == nullptr && qc.contains("input_activations") && qc["input_activations"].is_object())
    acts = &qc["input_activations"];
  if (weights == nullptr)
    throw std::runtime_error(where + ": compressed-tensors without a \"weights\" scheme");
  const std::string format = str_or(qc, "format", "");
  std::string type = str_or(*weights, "type", "");
  if (type.empty())
    type = format.rfind("float", 0) == 0               ? "float"
           : format.find("nvfp4") != std::string::npos ? "float"
                                                       : "int";
  const int w_bits = int_or(*weights, "num_bits", 0, where + ": weights");
  const int a_bits = acts != nullptr ? int_or(*acts, "num_bits", 0, where + ": input_activations") : 16;
  const std::string strategy = str_or(*weights, "strategy", "");
  Quantization q = unquantized(dtype);
  if (type == "int" && w_bits == 8 && a_bits == 8) {
    quantize_linears(q, plain(DType::kInt8));
    q.activation = DType::kInt8;
    q.method = QuantMethod::kW8A8Int8;
  } else if (type == "float" && w_bits == 8) {
    quantize_linears(q, strategy == "block" ? fp8_block() : plain(DType::kFp8));
    q.activation = a_bits == 8 ? DType::kFp8 : dtype;
    q.method = strategy == "block" ? QuantMethod::kFp8Block : QuantMethod::kFp8PerTensor;
  } else if (type == "int" && w_bits == 4 && a_bits == 16) {
    quantize_linears(q, int4_group(int_or(*weights, "group_size", 128, where + ": weights")));
    q.method = QuantMethod::kGptq;  // W4A16 INT4 groups, run by the same Marlin kernels as GPTQ
  } else if (type == "float" && w_bits == 4) {
    quantize_linears(q, nvfp4(int_or(*weights, "group_size", 16, where + ": weights")));
    q.activation = a_bits == 4 ? DType::kNvfp4 : dtype;
    q.method = QuantMethod::kNvfp4;
  } else {
    throw std::runtime_error(fmt::format(
        "{}: compressed-tensors scheme {} weights {} bits with {}-bit activations is not modelled (modelled: "
        "int8 W8A8, fp8 W8A8/W8A16, int4 W4A16, nvfp4)",
        where, type, w_bits, a_bits));
  }
  q.source =
      fmt::format("quantization_config: compressed-tensors {} (weights {} {} bits, activations {} bits)",
                  format.empty() ? "(no format)" : format, type, w_bits, a_bits);
  keep_unconverted(q, string_list(qc, "ignore", where), dtype, where);
  return q;
}

Quantization parse_modelopt(const nlohmann::json& qc, const std::string& where, DType dtype) {
  // The algo sits at the top level (config.json) or under "quantization" (hf_quant_config.json layout).
  const nlohmann::json& body =
      qc.contains("quantization") && qc["quantization"].is_object() ? qc["quantization"] : qc;
  const std::string algo = str_or(body, "quant_algo", "");
  Quantization q = unquantized(dtype);
  if (algo == "NVFP4") {
    quantize_linears(q, nvfp4(int_or(body, "group_size", 16, where)));
    q.activation = DType::kNvfp4;
    q.method = QuantMethod::kNvfp4;
  } else if (algo == "FP8") {
    quantize_linears(q, plain(DType::kFp8));
    q.activation = DType::kFp8;
    q.method = QuantMethod::kFp8PerTensor;
  } else {
    throw std::runtime_error(
        fmt::format("{}: modelopt quant_algo \"{}\" is not modelled (modelled: NVFP4, FP8)", where, algo));
  }
  q.source = "quantization_config: modelopt " + algo;
  if (str_or(body, "kv_cache_quant_algo", "") == "FP8") q.kv_cache = DType::kFp8;
  // ModelOpt's config.json block names it kv_cache_scheme: "FP8", or compressed-tensors style
  // {type: float, num_bits: 8}.
  if (const auto kv = body.find("kv_cache_scheme"); kv != body.end()) {
    if ((kv->is_string() && kv->get<std::string>() == "FP8") ||
        (kv->is_object() && str_or(*kv, "type", "") == "float" && kv->value("num_bits", 0) == 8))
      q.kv_cache = DType::kFp8;
  }
  // hf_quant_config.json lists them as exclude_modules; a config.json quantization_config written by
  // ModelOpt as "ignore" (nvidia's NVFP4 MiniMax-M2.5 / Kimi-K2.5 copies).
  keep_unconverted(q, string_list(body, "exclude_modules", where), dtype, where);
  keep_unconverted(q, string_list(body, "ignore", where), dtype, where);
  return q;
}

}  // namespace

Quantization unquantized(DType dtype) {
  Quantization q;
  q.method = QuantMethod::kNone;
  q.attention = q.dense_ffn = q.experts = q.embedding = q.lm_head = q.router = plain(dtype);
  q.activation = dtype;
  q.source = std::string("unquantized ") + dtype_name(dtype);
  return q;
}

Quantization parse_quantization(const nlohmann::json& config, const std::string& source, DType dtype) {
  if (!config.contains("quantization_config") || config["quantization_config"].is_null())
    return unquantized(dtype);
  const auto& qc = config["quantization_config"];
  const std::string where = source + ": quantization_config";
  if (!qc.is_object()) throw std::runtime_error(where + " is not an object");
  // ModelOpt writes config.json's quantization_config without quant_method, naming itself as the producer;
  // vLLM sets the method from it (config.py ModelConfig._parse_quant_hf_config: producer "modelopt" ->
  // "modelopt" for FP8, "modelopt_fp4" for NVFP4) [recalled].
  const auto producer = qc.find("producer");
  if (!qc.contains("quant_method") && producer != qc.end() && producer->is_object() &&
      str_or(*producer, "name", "") == "modelopt")
    return parse_modelopt(qc, where, dtype);
  if (!qc.contains("quant_method") || !qc["quant_method"].is_string())
    throw std::runtime_error(where + ": missing key \"quant_method\"");
  std::string method = qc["quant_method"].get<std::string>();
  std::transform(method.begin(), method.end(), method.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (method == "fp8") return parse_fp8(qc, where, dtype);
  if (method == "awq") return parse_int4(qc, where, dtype, QuantMethod::kAwq);
  if (method == "gptq") return parse_int4(qc, where, dtype, QuantMethod::kGptq);
  if (method == "compressed-tensors" || method == "compressed_tensors")
    return parse_compressed_tensors(qc, where, dtype);
  if (method == "mxfp4") return parse_mxfp4(qc, where, dtype);
  if (method == "modelopt") return parse_modelopt(qc, where, dtype);
  throw std::runtime_error(fmt::format(
      "{}: unknown quant_method \"{}\" (known: fp8, awq, gptq, compressed-tensors, mxfp4, modelopt)", where,
      qc["quant_method"].get<std::string>()));
}

}  // namespace detail

ModelSpec with_engine_quantization(const ModelSpec& spec, const std::string& method) {
  if (method.empty()) return spec;
  const QuantMethod have = spec.quantization.method;
  auto is = [&](std::initializer_list<const char*> names) {
    return std::any_of(names.begin(), names.end(), [&](const char* n) { return method == n; });
  };
  // The checkpoint already carries the scheme the flag names (vLLM accepts the matching spelling and its
  // kernel variants: awq_marlin, gptq_marlin, modelopt_fp4; SGLang names ModelOpt's two schemes
  // modelopt_fp8 and modelopt_fp4, server_args.py QUANTIZATION_CHOICES [recalled]).
  // The ModelOpt spellings match a checkpoint ModelOpt wrote (parse_modelopt's source), not any FP8 one.
  const bool modelopt = spec.quantization.source.rfind("quantization_config: modelopt", 0) == 0;
  const bool matches =
      (is({"fp8"}) && (have == QuantMethod::kFp8Block || have == QuantMethod::kFp8PerTensor)) ||
      (is({"awq", "awq_marlin"}) && have == QuantMethod::kAwq) ||
      (is({"gptq", "gptq_marlin"}) && have == QuantMethod::kGptq) ||
      (is({"mxfp4"}) && have == QuantMethod::kMxfp4) ||
      (is({"modelopt"}) && modelopt && (have == QuantMethod::kNvfp4 || have == QuantMethod::kFp8PerTensor)) ||
      (is({"modelopt_fp4"}) && modelopt && have == QuantMethod::kNvfp4) ||
      (is({"modelopt_fp8"}) && modelopt && have == QuantMethod::kFp8PerTensor) ||
      (is({"compressed-tensors", "w8a8_int8"}) && have == QuantMethod::kW8A8Int8);
  if (matches) return spec;
  if (method == "fp8" && have == QuantMethod::kNone) {
    // vLLM Fp8Config with no checkpoint scales (online dynamic quantization): per-tensor FP8 weights and
    // dynamic per-tensor FP8 activations for every linear; LM head, embedding and routers stay unquantized.
    ModelSpec out = spec;
    Quantization& q = out.quantization;
    q.method = QuantMethod::kFp8PerTensor;
    q.attention = q.dense_ffn = q.experts = WeightFormat{DType::kFp8, 0, 0, false};
    q.activation = DType::kFp8;
    q.source = "engine flag --quantization fp8 (online per-tensor FP8 of a " +
               std::string(dtype_name(spec.dtype)) + " checkpoint)";
    return out;
  }
  if (is({"fp8", "awq", "awq_marlin", "gptq", "gptq_marlin", "mxfp4", "modelopt", "modelopt_fp4",
          "modelopt_fp8", "compressed-tensors", "w8a8_int8"})) {
    // vLLM: "Quantization method specified in the model config (...) does not match the quantization
    // method specified in the `quantization` argument (...)".
    throw std::invalid_argument(fmt::format(
        "--quantization {}: the checkpoint of {} is {} ({}); the engine refuses a mismatching method", method,
        spec.id, quant_method_name(have), spec.quantization.source));
  }
  throw std::invalid_argument(fmt::format(
      "--quantization {}: not modelled by the twin (modelled: fp8 on an unquantized checkpoint, or the "
      "checkpoint's own method: fp8, awq, gptq, mxfp4, modelopt (modelopt_fp8, modelopt_fp4), "
      "compressed-tensors)",
      method));
}

}  // namespace servelab::model
