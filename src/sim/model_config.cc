#include "sim/model_config.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <stdexcept>

namespace servelab::sim {

double ModelConfig::mla_params_per_layer() const {
  const double qk_head = qk_nope_head_dim + qk_rope_head_dim;
  const double wq_a = double(hidden_size) * q_lora_rank;
  const double wq_b = double(q_lora_rank) * num_attention_heads * qk_head;
  const double wkv_a = double(hidden_size) * (kv_lora_rank + qk_rope_head_dim);
  const double wkv_b = double(kv_lora_rank) * num_attention_heads * (qk_nope_head_dim + v_head_dim);
  const double wo = double(num_attention_heads) * v_head_dim * hidden_size;
  return wq_a + wq_b + wkv_a + wkv_b + wo;
}

double ModelConfig::indexer_params_per_layer() const {
  if (!sparse()) return 0.0;
  return double(q_lora_rank) * index_n_heads * index_head_dim + double(hidden_size) * index_head_dim +
         double(hidden_size) * index_n_heads;
}

double ModelConfig::expert_params() const { return 3.0 * hidden_size * moe_intermediate_size; }
double ModelConfig::dense_ffn_params() const { return 3.0 * hidden_size * intermediate_size; }
double ModelConfig::gate_params() const { return double(n_routed_experts) * hidden_size; }
double ModelConfig::embedding_params() const { return double(vocab_size) * hidden_size; }

ModelConfig deepseek_v32() {
  ModelConfig m;
  m.name = "deepseek-ai/DeepSeek-V3.2";
  m.num_hidden_layers = 61;
  m.first_k_dense_replace = 3;
  m.hidden_size = 7168;
  m.intermediate_size = 18432;
  m.moe_intermediate_size = 2048;
  m.num_attention_heads = 128;
  m.q_lora_rank = 1536;
  m.kv_lora_rank = 512;
  m.qk_nope_head_dim = 128;
  m.qk_rope_head_dim = 64;
  m.v_head_dim = 128;
  m.n_routed_experts = 256;
  m.n_shared_experts = 1;
  m.num_experts_per_tok = 8;
  m.vocab_size = 129280;
  m.max_position_embeddings = 163840;
  m.num_nextn_predict_layers = 1;
  m.index_n_heads = 64;
  m.index_head_dim = 128;
  m.index_topk = 2048;
  m.weight_bytes = 1;
  return m;
}

ModelConfig load_model_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open model config " + path.string());
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw std::runtime_error("model config " + path.string() + ": invalid JSON: " + e.what());
  }
  auto get = [&](const char* key, bool required, int fallback) -> int {
    if (!j.contains(key)) {
      if (required) throw std::runtime_error("model config " + path.string() + ": missing key \"" + key + "\"");
      return fallback;
    }
    if (!j[key].is_number_integer())
      throw std::runtime_error("model config " + path.string() + ": \"" + key + "\" is not an integer");
    return j[key].get<int>();
  };
  ModelConfig m;
  m.name = j.value("_name_or_path", path.parent_path().filename().string());
  m.num_hidden_layers = get("num_hidden_layers", true, 0);
  m.first_k_dense_replace = get("first_k_dense_replace", false, 0);
  m.hidden_size = get("hidden_size", true, 0);
  m.intermediate_size = get("intermediate_size", true, 0);
  m.moe_intermediate_size = get("moe_intermediate_size", true, 0);
  m.num_attention_heads = get("num_attention_heads", true, 0);
  m.q_lora_rank = j.contains("q_lora_rank") && j["q_lora_rank"].is_null() ? 0 : get("q_lora_rank", false, 0);
  m.kv_lora_rank = get("kv_lora_rank", true, 0);
  m.qk_nope_head_dim = get("qk_nope_head_dim", true, 0);
  m.qk_rope_head_dim = get("qk_rope_head_dim", true, 0);
  m.v_head_dim = get("v_head_dim", true, 0);
  m.n_routed_experts = get("n_routed_experts", true, 0);
  m.n_shared_experts = get("n_shared_experts", false, 0);
  m.num_experts_per_tok = get("num_experts_per_tok", true, 0);
  m.vocab_size = get("vocab_size", true, 0);
  m.max_position_embeddings = get("max_position_embeddings", true, 0);
  m.num_nextn_predict_layers = get("num_nextn_predict_layers", false, 0);
  m.index_n_heads = get("index_n_heads", false, 0);
  m.index_head_dim = get("index_head_dim", false, 0);
  m.index_topk = get("index_topk", false, 0);
  m.weight_bytes = j.contains("quantization_config") ? 1 : 2;
  if (m.q_lora_rank == 0) m.q_lora_rank = m.hidden_size;  // V2-Lite style: q projected directly
  return m;
}

ModelConfig resolve_model(const std::string& model) {
  std::string lower(model.size(), ' ');
  std::transform(model.begin(), model.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  std::filesystem::path p(model);
  std::error_code ec;
  if (std::filesystem::is_directory(p, ec) && std::filesystem::exists(p / "config.json", ec))
    return load_model_config(p / "config.json");
  if (std::filesystem::is_regular_file(p, ec)) return load_model_config(p);
  if (lower.find("deepseek-v3.2") != std::string::npos || lower.find("deepseek-v32") != std::string::npos)
    return deepseek_v32();
  throw std::runtime_error("unknown model \"" + model +
                           "\": the twin has DeepSeek-V3.2 built in; pass a directory or path of an HF "
                           "config.json for another DeepSeek-V3-family model");
}

}  // namespace servelab::sim
