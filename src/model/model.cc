// Layer kinds: linears, KV / state bytes, attention-core FLOPs; ModelSpec's parameter and byte totals.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "model/detail.h"
#include "servelab/common/hash.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

using common::Overloaded;

/// Units (heads) of `units` one of `tp` ranks holds: ceil(units / tp), at least 1.
double units_per_rank(int units, int tp) {
  if (units <= 0) return 0;
  if (tp <= 1) return units;
  return static_cast<double>((units + tp - 1) / tp);
}

Linear make(const char* name, std::int64_t in, std::int64_t out, Split split, int units, LinearClass cls,
            bool bias = false, int copies = 1) {
  Linear l;
  l.name = name;
  l.in = in;
  l.out = out;
  l.copies = copies;
  l.split = split;
  l.split_units = units;
  l.cls = cls;
  l.bias = bias;
  return l;
}

constexpr LinearClass kAttn = LinearClass::kAttention;

void append_attention(std::vector<Linear>& out, const GqaAttention& a, int hidden) {
  const std::int64_t q = std::int64_t(a.heads) * a.head_dim;
  const std::int64_t kv = std::int64_t(a.kv_heads) * a.head_dim;
  out.push_back(
      make("q_proj", hidden, a.output_gate ? 2 * q : q, Split::kColumn, a.heads, kAttn, a.qkv_bias));
  out.push_back(make("kv_proj", hidden, 2 * kv, Split::kColumn, a.kv_heads, kAttn, a.qkv_bias));
  out.push_back(make("o_proj", q, hidden, Split::kRow, a.heads, kAttn, a.o_bias));
}

void append_attention(std::vector<Linear>& out, const MlaAttention& a, int hidden) {
  const std::int64_t qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    out.push_back(make("q_a_proj", hidden, a.q_lora_rank, Split::kReplicated, 0, kAttn));
    out.push_back(make("q_b_proj", a.q_lora_rank, a.heads * qk_head, Split::kColumn, a.heads, kAttn));
  } else {
    out.push_back(make("q_proj", hidden, a.heads * qk_head, Split::kColumn, a.heads, kAttn));
  }
  out.push_back(
      make("kv_a_proj_with_mqa", hidden, a.kv_lora_rank + a.qk_rope_head_dim, Split::kReplicated, 0, kAttn));
  out.push_back(make("kv_b_proj", a.kv_lora_rank, std::int64_t(a.heads) * (a.qk_nope_head_dim + a.v_head_dim),
                     Split::kColumn, a.heads, kAttn));
  if (a.indexer) {
    // DeepSeek-V3.2-Exp inference/model.py class Indexer: wq_b from the q-LoRA latent, one shared key
    // head wk, per-head weights_proj (bf16); not TP-split (perf-facts §1).
    const std::int64_t q_in = a.q_lora_rank > 0 ? a.q_lora_rank : hidden;
    out.push_back(make("indexer.wq_b", q_in, std::int64_t(a.index_heads) * a.index_head_dim,
                       Split::kReplicated, 0, kAttn));
    out.push_back(make("indexer.wk", hidden, a.index_head_dim, Split::kReplicated, 0, kAttn));
    out.push_back(
        make("indexer.weights_proj", hidden, a.index_heads, Split::kReplicated, 0, LinearClass::kRouter));
  }
  out.push_back(make("o_proj", std::int64_t(a.heads) * a.v_head_dim, hidden, Split::kRow, a.heads, kAttn));
}

void append_attention(std::vector<Linear>& out, const LinearAttention& a, int hidden) {
  // Gated DeltaNet (HF Qwen3NextGatedDeltaNet): in_proj_qkvz = q, k (key heads) and v, z (value heads);
  // in_proj_ba = beta and alpha per value head; out_proj from the value heads. The depthwise conv1d
  // (conv_dim x conv_kernel), A_log, dt_bias and the gated norm are < 0.1% of the layer and not linears.
  const std::int64_t key = std::int64_t(a.key_heads) * a.key_head_dim;
  const std::int64_t value = std::int64_t(a.value_heads) * a.value_head_dim;
  out.push_back(make("in_proj_qkvz", hidden, 2 * key + 2 * value, Split::kColumn, a.key_heads, kAttn));
  out.push_back(make("in_proj_ba", hidden, 2 * a.value_heads, Split::kColumn, a.key_heads, kAttn));
  out.push_back(make("out_proj", value, hidden, Split::kRow, a.key_heads, kAttn));
}

void append_ffn(std::vector<Linear>& out, const DenseFfn& f, int hidden) {
  out.push_back(make("gate_up_proj", hidden, 2 * std::int64_t(f.intermediate), Split::kColumn, 0,
                     LinearClass::kDenseFfn, f.bias));
  out.push_back(make("down_proj", f.intermediate, hidden, Split::kRow, 0, LinearClass::kDenseFfn, f.bias));
}

void append_ffn(std::vector<Linear>& out, const MoeFfn& f, int hidden) {
  out.push_back(
      make("router", hidden, f.experts, Split::kReplicated, 0, LinearClass::kRouter, f.expert_bias));
  out.push_back(make("experts.w13", hidden, 2 * std::int64_t(f.expert_intermediate), Split::kColumn, 0,
                     LinearClass::kExpert, f.expert_bias, f.experts));
  out.push_back(make("experts.w2", f.expert_intermediate, hidden, Split::kRow, 0, LinearClass::kExpert,
                     f.expert_bias, f.experts));
  if (f.shared_experts > 0) {
    const std::int64_t inter = std::int64_t(f.shared_experts) * f.shared_intermediate;
    out.push_back(make("shared_experts.gate_up_proj", hidden, 2 * inter, Split::kColumn, 0,
                       LinearClass::kSharedExpert));
    out.push_back(
        make("shared_experts.down_proj", inter, hidden, Split::kRow, 0, LinearClass::kSharedExpert));
  }
}

/// Elements of one linear, all copies, biases included.
double linear_params(const Linear& l) {
  return (double(l.in) * double(l.out) + (l.bias ? double(l.out) : 0.0)) * l.copies;
}

/// Parameters of `l` that one token runs through: top_k of the copies for experts.
double linear_active_params(const Linear& l, int top_k) {
  if (l.cls == LinearClass::kExpert && l.copies > 0) return linear_params(l) / l.copies * top_k;
  return linear_params(l);
}

double layer_params(const Layer& layer, int hidden) {
  double p = 0;
  for (const auto& l : linears(layer, hidden)) p += linear_params(l);
  return p;
}

int layer_top_k(const Layer& layer) {
  if (const auto* m = std::get_if<MoeFfn>(&layer.ffn)) return m->top_k;
  return 0;
}

double layer_active_params(const Layer& layer, int hidden) {
  double p = 0;
  for (const auto& l : linears(layer, hidden)) p += linear_active_params(l, layer_top_k(layer));
  return p;
}

double layer_weight_bytes(const Layer& layer, int hidden, const Quantization& q, DType dtype) {
  double b = 0;
  for (const auto& l : linears(layer, hidden)) {
    b += double(l.in) * double(l.out) * l.copies * q.format(l.cls).bytes_per_param();
    if (l.bias) b += double(l.out) * l.copies * dtype_bytes(dtype);
  }
  return b;
}

}  // namespace

const char* dtype_name(DType d) {
  switch (d) {
    case DType::kFp32:
      return "fp32";
    case DType::kBf16:
      return "bf16";
    case DType::kFp16:
      return "fp16";
    case DType::kFp8:
      return "fp8";
    case DType::kInt8:
      return "int8";
    case DType::kInt4:
      return "int4";
    case DType::kMxfp4:
      return "mxfp4";
    case DType::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

double dtype_bytes(DType d) {
  switch (d) {
    case DType::kFp32:
      return 4;
    case DType::kBf16:
    case DType::kFp16:
      return 2;
    case DType::kFp8:
    case DType::kInt8:
      return 1;
    case DType::kInt4:
    case DType::kMxfp4:
    case DType::kNvfp4:
      return 0.5;
  }
  return 0;
}

double WeightFormat::bytes_per_param() const {
  return dtype_bytes(dtype) + (group_size > 0 ? scale_bytes / group_size : 0.0);
}

const char* quant_method_name(QuantMethod m) {
  switch (m) {
    case QuantMethod::kNone:
      return "none";
    case QuantMethod::kFp8PerTensor:
      return "fp8";
    case QuantMethod::kFp8Block:
      return "fp8-block";
    case QuantMethod::kW8A8Int8:
      return "w8a8-int8";
    case QuantMethod::kAwq:
      return "awq";
    case QuantMethod::kGptq:
      return "gptq";
    case QuantMethod::kMxfp4:
      return "mxfp4";
    case QuantMethod::kNvfp4:
      return "nvfp4";
  }
  return "?";
}

const WeightFormat& Quantization::format(LinearClass cls) const {
  switch (cls) {
    case LinearClass::kAttention:
      return attention;
    case LinearClass::kDenseFfn:
    case LinearClass::kSharedExpert:
      return dense_ffn;
    case LinearClass::kExpert:
      return experts;
    case LinearClass::kRouter:
      return router;
    case LinearClass::kLmHead:
      return lm_head;
  }
  return attention;
}

std::vector<Linear> linears(const Layer& layer, int hidden_size) {
  std::vector<Linear> out;
  out.reserve(10);
  std::visit([&](const auto& a) { append_attention(out, a, hidden_size); }, layer.attention);
  std::visit([&](const auto& f) { append_ffn(out, f, hidden_size); }, layer.ffn);
  return out;
}

double shard_params(const Linear& l, int tp) {
  const double all = double(l.in) * double(l.out) * l.copies;
  if (l.split == Split::kReplicated || tp <= 1) return all;
  if (l.split_units > 0) return all * units_per_rank(l.split_units, tp) / l.split_units;
  return all / tp;
}

double keys_per_query(const Attention& a, double pos) {
  return std::visit(
      Overloaded{
          [&](const GqaAttention& g) {
            if (g.chunk > 0) return std::fmod(std::max(pos, 1.0) - 1, double(g.chunk)) + 1;
            return g.window > 0 ? std::min(pos, double(g.window)) : pos;
          },
          [&](const MlaAttention& m) { return m.index_topk > 0 ? std::min(pos, double(m.index_topk)) : pos; },
          [](const LinearAttention&) { return 0.0; },
      },
      a);
}

double kv_bytes_per_token(const Attention& a, int attn_tp, DType kv_dtype) {
  return std::visit(
      Overloaded{
          [&](const GqaAttention& g) {
            return 2.0 * units_per_rank(g.kv_heads, attn_tp) * g.head_dim * dtype_bytes(kv_dtype);
          },
          [&](const MlaAttention& m) {
            double latent = 0;
            if (kv_dtype == DType::kFp8 && m.index_heads > 0) {
              // FlashMLA sparse "FP8 with scale" (vLLM fp8_ds_mla): e4m3 latent, an fp32 scale per 128
              // latent values, the RoPE part in bf16 (perf-facts §2: 512 + 16 + 128 = 656 B).
              latent = m.kv_lora_rank + std::ceil(m.kv_lora_rank / 128.0) * 4 + m.qk_rope_head_dim * 2.0;
            } else {
              latent = (m.kv_lora_rank + m.qk_rope_head_dim) * dtype_bytes(kv_dtype);
            }
            // Indexer key: FP8 + an fp32 scale per 128 elements (aiconfigurator indexer_cache_entry_bytes).
            const double index_key =
                m.indexer ? m.index_head_dim + std::ceil(m.index_head_dim / 128.0) * 4 : 0.0;
            return latent + index_key;
          },
          [](const LinearAttention&) { return 0.0; },
      },
      a);
}

int kv_window_tokens(const Attention& a) {
  if (const auto* g = std::get_if<GqaAttention>(&a)) return g->chunk > 0 ? g->chunk : g->window;
  return 0;
}

double state_bytes_per_request(const Attention& a, int attn_tp, DType state_dtype) {
  const auto* l = std::get_if<LinearAttention>(&a);
  if (l == nullptr) return 0;
  const double value_heads = units_per_rank(l->value_heads, attn_tp);
  const double key_heads = units_per_rank(l->key_heads, attn_tp);
  const double recurrent = value_heads * l->key_head_dim * l->value_head_dim * dtype_bytes(state_dtype);
  const double conv_channels = 2.0 * key_heads * l->key_head_dim + value_heads * l->value_head_dim;
  const double conv = std::max(0, l->conv_kernel - 1) * conv_channels * 2.0;
  return recurrent + conv;
}

double core_flops_per_pair(const Attention& a, int attn_tp, AttentionMode mode) {
  return std::visit(
      Overloaded{
          [&](const GqaAttention& g) { return 2.0 * units_per_rank(g.heads, attn_tp) * (2.0 * g.head_dim); },
          [&](const MlaAttention& m) {
            const double heads = units_per_rank(m.heads, attn_tp);
            if (mode == AttentionMode::kAbsorbed)
              return 2.0 * heads * ((m.kv_lora_rank + m.qk_rope_head_dim) + double(m.kv_lora_rank));
            return 2.0 * heads * ((m.qk_nope_head_dim + m.qk_rope_head_dim) + double(m.v_head_dim));
          },
          [&](const LinearAttention& l) {
            return 6.0 * units_per_rank(l.value_heads, attn_tp) * l.key_head_dim * double(l.value_head_dim);
          },
      },
      a);
}

double indexer_flops_per_pair(const Attention& a) {
  const auto* m = std::get_if<MlaAttention>(&a);
  if (m == nullptr || !m->indexer) return 0;
  return 2.0 * m->index_heads * m->index_head_dim;
}

// ---------------------------------------------------------------------------------------------------
// ModelSpec

int ModelSpec::num_layers() const {
  int n = 0;
  for (const auto& g : layers) n += g.count;
  return n;
}

double ModelSpec::total_params() const {
  double p = 0;
  for (const auto& g : layers) p += g.count * layer_params(g.layer, hidden_size);
  const double embedding = double(vocab_size) * hidden_size;
  return p + embedding + (tie_word_embeddings ? 0.0 : embedding);
}

double ModelSpec::active_params() const {
  double p = 0;
  for (const auto& g : layers) p += g.count * layer_active_params(g.layer, hidden_size);
  return p + double(vocab_size) * hidden_size;  // LM head (tied or not, every token runs it)
}

double ModelSpec::mtp_params() const {
  if (mtp_layers <= 0) return 0;
  const double eh_proj = 2.0 * hidden_size * hidden_size;
  return mtp_layers * (layer_params(mtp_layer, hidden_size) + eh_proj);
}

double ModelSpec::weight_bytes() const {
  double b = 0;
  for (const auto& g : layers) b += g.count * layer_weight_bytes(g.layer, hidden_size, quantization, dtype);
  const double embedding = double(vocab_size) * hidden_size;
  b += embedding * quantization.embedding.bytes_per_param();
  if (!tie_word_embeddings) b += embedding * quantization.lm_head.bytes_per_param();
  return b;
}

namespace {
template <class Pred>
bool any_layer(const std::vector<LayerGroup>& layers, Pred pred) {
  for (const auto& g : layers)
    if (g.count > 0 && pred(g.layer)) return true;
  return false;
}
}  // namespace

bool ModelSpec::has_moe() const {
  return any_layer(layers, [](const Layer& l) { return std::holds_alternative<MoeFfn>(l.ffn); });
}
bool ModelSpec::has_mla() const {
  return any_layer(layers, [](const Layer& l) { return std::holds_alternative<MlaAttention>(l.attention); });
}
bool ModelSpec::has_dsa() const {
  return any_layer(layers, [](const Layer& l) {
    const auto* m = std::get_if<MlaAttention>(&l.attention);
    return m != nullptr && m->index_topk > 0;
  });
}
bool ModelSpec::has_linear_attention() const {
  return any_layer(layers,
                   [](const Layer& l) { return std::holds_alternative<LinearAttention>(l.attention); });
}
bool ModelSpec::has_sliding_window() const {
  return any_layer(layers, [](const Layer& l) { return kv_window_tokens(l.attention) > 0; });
}
bool ModelSpec::has_sinks() const {
  return any_layer(layers, [](const Layer& l) {
    const auto* g = std::get_if<GqaAttention>(&l.attention);
    return g != nullptr && g->sinks;
  });
}

const MoeFfn& ModelSpec::moe() const {
  for (const auto& g : layers)
    if (const auto* m = std::get_if<MoeFfn>(&g.layer.ffn); m != nullptr && g.count > 0) return *m;
  throw std::logic_error("model " + id + " has no MoE layer");
}

namespace detail {
std::vector<LayerGroup> group_layers(const std::vector<Layer>& layers) {
  std::vector<LayerGroup> groups;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!groups.empty() && groups.back().layer == layers[i]) {
      ++groups.back().count;
    } else {
      groups.push_back({static_cast<int>(i), 1, layers[i]});
    }
  }
  return groups;
}
}  // namespace detail

}  // namespace servelab::model
