// servelab/sim: the transformer a twin serves, from its Hugging Face config.json (DeepSeek-V3.2 built in).
#pragma once

#include <filesystem>
#include <string>

namespace servelab::sim {

/// Architecture of a DeepSeek-V3-family MLA + MoE model (+ DSA lightning indexer for V3.2).
/// Field names follow HF config.json. Dimensions in elements, sizes in parameters.
struct ModelConfig {
  std::string name;                 ///< e.g. "deepseek-ai/DeepSeek-V3.2"
  int num_hidden_layers = 0;        ///< 61
  int first_k_dense_replace = 0;    ///< dense (non-MoE) layers at the start: 3
  int hidden_size = 0;              ///< 7168
  int intermediate_size = 0;        ///< dense FFN intermediate: 18432
  int moe_intermediate_size = 0;    ///< per-expert intermediate: 2048
  int num_attention_heads = 0;      ///< 128
  int q_lora_rank = 0;              ///< 1536
  int kv_lora_rank = 0;             ///< 512
  int qk_nope_head_dim = 0;         ///< 128
  int qk_rope_head_dim = 0;         ///< 64
  int v_head_dim = 0;               ///< 128
  int n_routed_experts = 0;         ///< 256
  int n_shared_experts = 0;         ///< 1
  int num_experts_per_tok = 0;      ///< top-k: 8
  int vocab_size = 0;               ///< 129280
  int max_position_embeddings = 0;  ///< 163840
  int num_nextn_predict_layers = 0; ///< MTP layers: 1
  int index_n_heads = 0;            ///< DSA indexer heads: 64 (0 = no indexer, dense MLA)
  int index_head_dim = 0;           ///< 128
  int index_topk = 0;               ///< keys selected per query: 2048
  int weight_bytes = 1;             ///< bytes per linear weight (FP8 e4m3 = 1)

  int moe_layers() const { return num_hidden_layers - first_k_dense_replace; }
  bool sparse() const { return index_topk > 0; }

  // Parameter counts [derived; formulas in deepseek-v32-perf-facts.md §1].
  /// MLA projections of one layer: wq_a, wq_b, wkv_a, wkv_b, wo (187.1 M for V3.2).
  double mla_params_per_layer() const;
  /// Indexer of one layer: wq_b (q_lora -> heads*dim), wk (hidden -> dim), weights_proj (hidden -> heads).
  double indexer_params_per_layer() const;
  /// One expert (SwiGLU w1, w3, w2): 3 * hidden * moe_intermediate (44.04 M).
  double expert_params() const;
  /// Dense FFN of one dense layer: 3 * hidden * intermediate (396.4 M).
  double dense_ffn_params() const;
  /// Router gate of one MoE layer: experts * hidden (1.84 M, bf16).
  double gate_params() const;
  /// Embedding (= LM head, untied): vocab * hidden (926.7 M each, bf16).
  double embedding_params() const;
};

/// DeepSeek-V3.2 built in, from the HF config.json values listed in shared/data/SOURCES.md ("Not available
/// here") and deepseek-v32-perf-facts.md §1.
ModelConfig deepseek_v32();

/// Reads an HF config.json (DeepSeek-V3 / V3.2 family). Throws std::runtime_error naming the file and the
/// missing/mistyped key.
ModelConfig load_model_config(const std::filesystem::path& config_json);

/// "deepseek-ai/DeepSeek-V3.2" (or any id containing "DeepSeek-V3.2", case-insensitive) -> built-in;
/// a path to a config.json or a directory holding one -> load_model_config. Throws std::runtime_error
/// otherwise.
ModelConfig resolve_model(const std::string& model);

}  // namespace servelab::sim
