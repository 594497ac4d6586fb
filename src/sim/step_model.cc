// The step model: per layer class, the sharded GEMMs, the attention core, the MoE and the collectives of
// one forward step, from the model's layer kinds (src/model), the resolved launch (src/engines) and the
// GPU physics (physics.cc).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "sim/sim_detail.h"

namespace servelab::sim::detail {
namespace {

using model::LinearClass;

constexpr int kDsaIndexerKernels = 20;  // see kernels_of

// Memory-bound kernels reach 80-90% of HBM bandwidth (gpu-kernel-facts.md §2.4); the low end, as the
// sampler's passes.
constexpr double kElementwiseHbmFraction = 0.8;

// Kernels one decoder layer launches (norms, projections, rope, attention, activation, collectives):
// 12 for a dense GQA layer, more for MoE (router, top-k, permute, two grouped GEMMs, un-permute), MLA
// (down/up projections, norms), the DSA indexer and gated DeltaNet [estimate from engine model code].
// The DSA indexer (SGLang layers/attention/nsa/nsa_indexer.py Indexer, vLLM's sparse_attn_indexer)
// launches about 20: wq_b (activation quantisation + FP8 GEMM), wk, its LayerNorm, weights_proj, RoPE on
// q and k, the Hadamard rotation of q and k, FP8 quantisation of q and k, the indexer-key cache write,
// the head-weight scaling, the paged-logits schedule metadata and DeepGEMM fp8_(paged_)mqa_logits, the
// top-k and its page-index transform [estimate from engine model code].
int kernels_of(const model::Layer& l) {
  int k = 12;
  if (std::holds_alternative<model::MoeFfn>(l.ffn)) k += 6;
  if (const auto* mla = std::get_if<model::MlaAttention>(&l.attention)) {
    k += 6;
    if (mla->indexer) k += kDsaIndexerKernels;
  }
  if (std::holds_alternative<model::LinearAttention>(l.attention)) k += 8;
  return k;
}

std::string layer_signature(const model::Layer& l) {
  std::string s;
  std::visit(
      [&](const auto& a) {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, model::GqaAttention>)
          s += fmt::format("gqa{}/{}/{}/{}/{}/{}/{}/{}", a.heads, a.kv_heads, a.head_dim, a.window, a.sinks,
                           a.output_gate, a.qkv_bias, a.chunk);
        else if constexpr (std::is_same_v<T, model::MlaAttention>)
          s += fmt::format("mla{}/{}/{}/{}/{}/{}/{}/{}/{}/{}", a.heads, a.q_lora_rank, a.kv_lora_rank,
                           a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim, a.index_topk, a.indexer,
                           a.index_heads, a.index_head_dim);
        else
          s += fmt::format("lin{}/{}/{}/{}/{}", a.key_heads, a.key_head_dim, a.value_heads, a.value_head_dim,
                           a.conv_kernel);
      },
      l.attention);
  std::visit(
      [&](const auto& f) {
        using T = std::decay_t<decltype(f)>;
        if constexpr (std::is_same_v<T, model::DenseFfn>)
          s += fmt::format("|dense{}", f.intermediate);
        else
          s += fmt::format("|moe{}/{}/{}/{}/{}", f.experts, f.top_k, f.expert_intermediate, f.shared_experts,
                           f.shared_intermediate);
      },
      l.ffn);
  return s;
}

double tp_for(LinearClass cls, const engines::ParallelLayout& p) {
  return cls == LinearClass::kAttention ? p.attn_tp : p.dense_tp;
}

}  // namespace

ElementwiseBytes elementwise_bytes(const model::Layer& l, int hidden, const engines::ParallelLayout& p,
                                   model::DType kv_dtype) {
  ElementwiseBytes b;
  const double h = hidden;
  // Residual add fused with RMSNorm (vLLM fused_add_rms_norm, SGLang / TensorRT-LLM the same): the hidden
  // state and the residual read and written, BF16, before the attention and before the FFN.
  b.attention = 4.0 * h * 2.0;
  b.ffn = 4.0 * h * 2.0;
  if (const auto* g = std::get_if<model::GqaAttention>(&l.attention)) {
    const double tp = std::max(1, p.attn_tp);
    const double q = g->heads / tp * g->head_dim,
                 kv = std::max(1.0, std::floor(g->kv_heads / tp)) * g->head_dim;
    // RoPE reads and writes q and k (BF16); the KV-cache write reads k and v (BF16) and stores them at the
    // cache's dtype.
    b.attention += 2.0 * (q + kv) * 2.0 + 2.0 * kv * (2.0 + model::dtype_bytes(kv_dtype));
  }
  // SwiGLU activation of the dense FFN (or shared experts), at dense TP: gate and up read, the product
  // written, BF16. The routed experts' activation is inside the measured MoE op.
  double inter = 0;
  if (const auto* d = std::get_if<model::DenseFfn>(&l.ffn))
    inter = d->intermediate;
  else if (const auto* m = std::get_if<model::MoeFfn>(&l.ffn))
    inter = double(m->shared_experts) * m->shared_intermediate;
  b.ffn += 3.0 * inter / std::max(1, p.dense_tp) * 2.0;
  return b;
}

std::vector<StageRange> pipeline_stages(const model::ModelSpec& m, int pp) {
  const int layers = m.num_layers();
  pp = std::max(1, std::min(pp, std::max(1, layers)));
  std::vector<StageRange> out;
  const int base = layers / pp, extra = layers % pp;
  int first = 0;
  for (int s = 0; s < pp; ++s) {
    const int n = base + (s < extra ? 1 : 0);
    out.push_back({first, first + n});
    first += n;
  }
  return out;
}

int layers_in_stage(const model::LayerGroup& g, const StageRange& st) {
  const int lo = std::max(g.first, st.first), hi = std::min(g.first + g.count, st.end);
  return std::max(0, hi - lo);
}

ExpertShape expert_shape(const model::Linear& l, int moe_tp, const engines::ExecutionPolicy& ex) {
  const double tp = std::max(1, moe_tp);
  auto pad = [](double x, int to) { return to > 1 ? std::ceil(x / to) * to : x; };
  if (l.split == model::Split::kColumn)  // w13: hidden -> gate | up, each half of out sliced and padded
    return {2.0 * pad(double(l.out) / 2.0 / tp, ex.expert_pad_intermediate),
            pad(double(l.in), ex.expert_pad_hidden)};
  return {pad(double(l.out), ex.expert_pad_hidden), pad(double(l.in) / tp, ex.expert_pad_intermediate)};
}

namespace {

// Weights of one layer on one GPU: each linear at its format, sharded by its split rule; biases in the
// model's dtype, split with a column-parallel output and whole on every rank otherwise.
double layer_weight_bytes(const model::Layer& layer, const model::ModelSpec& m,
                          const engines::ParallelLayout& p, const engines::ExecutionPolicy& ex) {
  double bytes = 0;
  const double bias_b = model::dtype_bytes(m.dtype);
  for (const auto& l : model::linears(layer, m.hidden_size)) {
    const auto& fmt = m.quantization.format(l.cls);
    if (l.cls == LinearClass::kExpert) {
      const double local = std::ceil(double(l.copies) / std::max(1, p.moe_ep));
      const ExpertShape e = expert_shape(l, p.moe_tp, ex);
      bytes += e.n * e.k * local * fmt.bytes_per_param();
      if (l.bias)
        bytes +=
            double(l.out) * local / (l.split == model::Split::kColumn ? std::max(1, p.moe_tp) : 1) * bias_b;
      continue;
    }
    const int tp = static_cast<int>(tp_for(l.cls, p));
    const double shard = model::shard_params(l, tp);
    bytes += shard * fmt.bytes_per_param();
    if (l.bias)
      bytes +=
          (l.split == model::Split::kColumn ? shard / std::max<double>(1, l.in) : double(l.out) * l.copies) *
          bias_b;
  }
  return bytes;
}

// The draft layer of an EAGLE / EAGLE-3 draft model: one Llama-style decoder layer with the target's
// hidden size and attention shape, a dense SwiGLU FFN of the target's dense intermediate (4 x hidden for
// MoE targets) [assumption: EAGLE-3 drafts of Qwen3-8B keep the target's dims].
model::Layer eagle_draft_layer(const model::ModelSpec& m) {
  model::GqaAttention a;
  for (const auto& g : m.layers) {
    if (const auto* q = std::get_if<model::GqaAttention>(&g.layer.attention)) {
      a = *q;
      a.window = 0;
      a.sinks = false;
      break;
    }
    if (const auto* mla = std::get_if<model::MlaAttention>(&g.layer.attention)) {
      a.heads = mla->heads;
      a.kv_heads = mla->heads;
      a.head_dim = mla->v_head_dim;
    }
  }
  model::DenseFfn f;
  for (const auto& g : m.layers)
    if (const auto* d = std::get_if<model::DenseFfn>(&g.layer.ffn)) f.intermediate = d->intermediate;
  if (f.intermediate == 0) f.intermediate = 4 * m.hidden_size;
  return model::Layer{a, f};
}

}  // namespace

StageWeights stage_weights(const engines::ResolvedLaunch& launch, const StageRange& st, bool first,
                           bool last) {
  const model::ModelSpec& m = launch.model;
  const engines::ParallelLayout& p = launch.layout;
  StageWeights w;
  for (const auto& g : m.layers) {
    const int n = layers_in_stage(g, st);
    if (n > 0) w.total += n * layer_weight_bytes(g.layer, m, p, launch.execution);
  }
  const double vocab_local = double(m.vocab_size) / std::max(1, p.dense_tp);
  if (first) w.total += vocab_local * m.hidden_size * m.quantization.embedding.bytes_per_param();
  if (last && !(m.tie_word_embeddings && first))
    w.total += vocab_local * m.hidden_size * m.quantization.lm_head.bytes_per_param();
  if (last && launch.speculative) {
    using Method = engines::SpeculativePolicy::Method;
    const auto& sp = *launch.speculative;
    if (sp.method == Method::kMtp && m.mtp_layers > 0) {
      const double per = layer_weight_bytes(m.mtp_layer, m, p, launch.execution) +
                         2.0 * m.hidden_size * m.hidden_size / std::max(1, p.dense_tp) *
                             m.quantization.dense_ffn.bytes_per_param();
      w.draft = m.mtp_layers * per;
      w.draft_kv_bytes_per_token =
          m.mtp_layers * model::kv_bytes_per_token(m.mtp_layer.attention, p.attn_tp, launch.kv_dtype);
    } else if (sp.method == Method::kEagle || sp.method == Method::kEagle3 ||
               sp.method == Method::kDraftModel) {
      const model::Layer d = eagle_draft_layer(m);
      // Layer + fc (3 x hidden -> hidden for EAGLE-3, 2 x for EAGLE) + its own 32k-vocab LM head, BF16.
      const double fc = (sp.method == Method::kEagle3 ? 3.0 : 2.0) * m.hidden_size * m.hidden_size;
      model::ModelSpec bf16 = m;
      bf16.quantization = model::Quantization{};
      w.draft = layer_weight_bytes(d, bf16, p, launch.execution) +
                (fc + 32000.0 * m.hidden_size) / std::max(1, p.dense_tp) * 2.0;
      w.draft_kv_bytes_per_token = model::kv_bytes_per_token(d.attention, p.attn_tp, model::DType::kBf16);
    }
    w.total += w.draft;
  }
  return w;
}

StepModel::StepModel(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster)
    : launch_(launch), cluster_(cluster) {
  const model::ModelSpec& m = launch_.model;
  const engines::ParallelLayout& lay = launch_.layout;
  const engines::ExecutionPolicy& ex = launch_.execution;
  const hardware::Generation gen = cluster_.gpu.generation;

  patterns_.push_back({std::numeric_limits<double>::infinity(), false});
  auto pattern_of = [&](const model::Attention& a) {
    AttentionPattern p{std::numeric_limits<double>::infinity(), false};
    if (std::holds_alternative<model::LinearAttention>(a))
      p = {0, true};
    else if (const auto* g = std::get_if<model::GqaAttention>(&a); g && g->chunk > 0)
      p.chunk = g->chunk;
    else if (g && g->window > 0)
      p.key_limit = g->window;
    else if (const auto* mla = std::get_if<model::MlaAttention>(&a); mla && mla->index_topk > 0)
      p.key_limit = mla->index_topk;
    for (std::size_t i = 0; i < patterns_.size(); ++i)
      if (patterns_[i].key_limit == p.key_limit && patterns_[i].linear == p.linear &&
          patterns_[i].chunk == p.chunk)
        return static_cast<int>(i);
    if (patterns_.size() >= kMaxPatterns) return 0;
    patterns_.push_back(p);
    const int idx = static_cast<int>(patterns_.size()) - 1;
    if (const auto* mla = std::get_if<model::MlaAttention>(&a); mla && mla->index_topk > 0)
      topk_pattern_ = idx;
    return idx;
  };

  prefill_attn_eff_ = attention_efficiency(ex.attention, gen);
  decode_attn_eff_ = attention_efficiency(ex.decode_attention, gen);
  prefill_fixed_topk_ = ex.attention == engines::AttentionKernel::kFlashMlaSparse;
  decode_fixed_topk_ = ex.decode_attention == engines::AttentionKernel::kFlashMlaSparse;
  // FlashMLA's sparse kernels pad the query heads of a rank to 64 on SM90 and 128 on SM100 (FlashMLA
  // README; vLLM flashmla_sparse.py).
  const double pad = cluster_.gpu.compute_capability >= 100 ? 128 : 64;
  linear_eff_ = linear_attention_efficiency(gen);
  const bool fp8_activations = m.quantization.activation == model::DType::kFp8 || ex.moe_mxfp8_activations;
  auto moe_peak = [&](engines::MoeKernel k) {
    return gemm_peak_flops(k == engines::MoeKernel::kDeepGemmGrouped ? engines::GemmKernel::kFp8BlockDeepGemm
                           : fp8_activations && cluster_.gpu.fp8_flops > 0 ? engines::GemmKernel::kFp8Native
                                                                           : engines::GemmKernel::kCublasBf16,
                           cluster_.gpu);
  };
  moe_eff_ = moe_efficiency(ex.moe, gen);
  moe_peak_ = moe_peak(ex.moe);
  moe_small_eff_ = moe_efficiency(ex.moe_small, gen);
  moe_small_peak_ = moe_peak(ex.moe_small);

  const int per_node = std::max(1, cluster_.gpus_per_node);
  attn_link_ = collective_link(cluster_, lay.attn_tp, lay.attn_tp > per_node);
  dense_link_ = collective_link(cluster_, lay.dense_tp, lay.dense_tp > per_node);
  moe_link_ = collective_link(cluster_, lay.moe_tp * lay.moe_ep, lay.moe_tp * lay.moe_ep > per_node);
  pp_link_ = collective_link(cluster_, 2, lay.pp_crosses_nodes);

  ops_ = measured_op_store();
  if (ops_) op_source_ = op_source(*ops_, launch_, cluster_.gpu);
  if (op_source_) sibling_source_ = sibling_op_source(*ops_, launch_, cluster_.gpu, &sibling_gpu_);
  if (ops_ && !op_source_) {
    hardware::GpuSpec stand_in;
    op_source_ = stand_in_op_source(*ops_, launch_, cluster_.gpu, &stand_in);
    if (op_source_) stand_in_gpu_ = stand_in, lookups_.all_outside = true;
  }
  if (op_source_) {
    auto allreduce = [&](int n) {
      return n > 1 && n <= per_node ? measured_allreduce_curve(*ops_, *op_source_, n) : nullptr;
    };
    attn_allreduce_ = allreduce(lay.attn_tp);
    dense_allreduce_ = allreduce(lay.dense_tp);
    moe_allreduce_ = allreduce(lay.moe_tp * lay.moe_ep);
  }
  auto measure = [&](Gemm& g, engines::GemmKernel kernel) {
    if (!op_source_) return;
    const char* dtype = measured_gemm_dtype(kernel);
    g.measured = measured_gemm_curve(*ops_, *op_source_, dtype, g.n, g.k,
                                     kernel == ex.gemm ? ex.gemm_kernel_sources : std::nullopt);
    const std::string_view d = dtype ? dtype : "";
    if (g.measured && (d == "fp8" || d == "fp8_block"))  // the FP8 rows' ceiling (gemm_s)
      g.measured_bf16 = measured_gemm_curve(*ops_, *op_source_, "bfloat16", g.n, g.k, std::nullopt);
  };
  auto make_gemm = [&](const model::Linear& l, int tp, engines::GemmKernel kernel) {
    Gemm g;
    const double shard = model::shard_params(l, tp);
    if (l.split == model::Split::kColumn)
      g.n = shard / std::max<double>(1, l.in), g.k = double(l.in);
    else if (l.split == model::Split::kRow)
      g.n = double(l.out), g.k = shard / std::max<double>(1, l.out);
    else
      g.n = double(l.out) * l.copies, g.k = double(l.in);
    g.weight_bytes = shard * m.quantization.format(l.cls).bytes_per_param();
    g.eff = gemm_efficiency(kernel, gen);
    g.peak = gemm_peak_flops(kernel, cluster_.gpu);
    measure(g, kernel);
    return g;
  };

  auto build_class = [&](const model::Layer& layer, int count) {
    LayerClass c;
    c.count = count;
    c.pattern = pattern_of(layer.attention);
    c.kernels = kernels_of(layer);
    for (const auto& l : model::linears(layer, m.hidden_size)) {
      switch (l.cls) {
        case LinearClass::kAttention:
          c.attn_gemms.push_back(make_gemm(l, lay.attn_tp, ex.attention_gemm));
          break;
        case LinearClass::kDenseFfn:
        case LinearClass::kSharedExpert:
          c.dense_gemms.push_back(make_gemm(l, lay.dense_tp, ex.gemm));
          break;
        case LinearClass::kRouter:
          c.router_k = double(l.in);
          c.router_n = double(l.out) * l.copies;
          break;
        case LinearClass::kExpert:
          c.moe = true;
          c.experts = l.copies;
          break;
        case LinearClass::kLmHead:
          break;
      }
    }
    if (op_source_) {
      const ElementwiseBytes eb = elementwise_bytes(layer, m.hidden_size, lay, launch_.kv_dtype);
      c.elementwise_attn_bytes = eb.attention, c.elementwise_ffn_bytes = eb.ffn;
    }
    if (c.moe) {
      c.moe_own = expert_layout(layer, lay.moe_tp, lay.moe_ep);
    }
    if (const auto* moe = std::get_if<model::MoeFfn>(&layer.ffn)) {
      c.top_k = moe->top_k;
      if (op_source_) measure_moe(c, layer, *moe);
    }
    const auto& a = layer.attention;
    if (const auto* g = std::get_if<model::GqaAttention>(&a); g && op_source_) {
      const double tp = std::max(1, lay.attn_tp);
      // FP8 attention math needs FP8 Q as well as an FP8 cache: an FP8 checkpoint whose QKV projection
      // emits FP8 (TensorRT-LLM's FP8 context FMHA requires FP8 QDQ [recalled]); a BF16 projection's Q
      // stays BF16 and the kernel reads the FP8 cache through BF16 math.
      const bool fp8_math =
          launch_.kv_dtype == model::DType::kFp8 && ex.attention_gemm == engines::GemmKernel::kFp8Native;
      const AttentionShape shape{g->heads / tp,       std::max(1.0, std::floor(g->kv_heads / tp)),
                                 double(g->head_dim), double(g->window),
                                 launch_.kv_dtype,    fp8_math};
      c.decode_attn = measured_attention(*ops_, *op_source_, true, shape);
      c.prefill_attn = measured_attention(*ops_, *op_source_, false, shape);
    }
    c.linear_attention = std::holds_alternative<model::LinearAttention>(a);
    // gdn_perf's rows are BF16-state timings: at batch 512 they move 1.7-2.1 TB/s of BF16 state on an H100
    // (50-61% of HBM), 3.2-4.0 TB/s (97-119%: impossible) if the state were FP32.
    c.gdn_state_scale = model::dtype_bytes(launch_.state_dtype) / 2.0;
    if (const auto* l = std::get_if<model::LinearAttention>(&a); l && op_source_)
      c.gdn = measured_gdn(*ops_, *op_source_,
                           GdnShape{double(l->key_heads) / std::max(1, lay.attn_tp),
                                    double(l->value_heads) / std::max(1, lay.attn_tp),
                                    double(l->key_head_dim), double(l->value_head_dim)});
    if (const auto* mla = std::get_if<model::MlaAttention>(&a)) {
      c.mla = true;
      c.dsa = mla->index_topk > 0;
      c.indexer = mla->indexer;
      c.pair_flops_absorbed = model::core_flops_per_pair(a, lay.attn_tp, model::AttentionMode::kAbsorbed);
      c.indexer_pair_flops = model::indexer_flops_per_pair(a);
      if (mla->indexer) c.indexer_kv_bytes = mla->index_head_dim + std::ceil(mla->index_head_dim / 128.0) * 4;
      const double local_heads = double(mla->heads) / std::max(1, lay.attn_tp);
      if (c.dsa && prefill_fixed_topk_) c.prefill_pad = std::max(local_heads, pad) / local_heads;
      if (c.dsa && decode_fixed_topk_) c.decode_pad = std::max(local_heads, pad) / local_heads;
      if (c.dsa && op_source_) measure_dsa(c, *mla);
      if (!c.dsa && op_source_) {
        // Dense MLA from the MLA tables (DSA's sparse core stays the roofline), each phase with the
        // engine's own kernel for it.
        const int tp = std::max(1, lay.attn_tp);
        c.decode_attn =
            measured_mla(*ops_, *op_source_, true,
                         MlaShape{local_heads, tp, launch_.kv_dtype, ex.mla_decode_kernel_sources});
        c.prefill_attn =
            measured_mla(*ops_, *op_source_, false,
                         MlaShape{local_heads, tp, launch_.kv_dtype, ex.mla_prefill_kernel_sources});
      }
    }
    c.pair_flops_dense = model::core_flops_per_pair(a, lay.attn_tp, model::AttentionMode::kDense);
    c.kv_bytes = model::kv_bytes_per_token(a, lay.attn_tp, launch_.kv_dtype) - c.indexer_kv_bytes;
    if (c.linear_attention) {
      c.linear_flops_per_token = c.pair_flops_dense;
      c.state_bytes = model::state_bytes_per_request(a, lay.attn_tp, launch_.state_dtype);
    }
    return c;
  };

  const auto ranges = pipeline_stages(m, lay.pp);
  for (std::size_t s = 0; s < ranges.size(); ++s) {
    Stage st;
    st.first = s == 0;
    st.last = s + 1 == ranges.size();
    if (launch_.memory.cpu_offload_bytes > 0 && cluster_.gpu.pcie_Bps > 0) {
      const double offloaded = std::min(launch_.memory.cpu_offload_bytes,
                                        stage_weights(launch_, ranges[s], st.first, st.last).total);
      st.offload_s = offloaded / (kHostLinkFraction * cluster_.gpu.pcie_Bps);
    }
    std::map<std::string, std::size_t> by_signature;
    for (const auto& g : m.layers) {
      const int n = layers_in_stage(g, ranges[s]);
      if (n == 0) continue;
      const std::string sig = layer_signature(g.layer);
      if (auto it = by_signature.find(sig); it != by_signature.end()) {
        st.classes[it->second].count += n;
        continue;
      }
      by_signature[sig] = st.classes.size();
      st.classes.push_back(build_class(g.layer, n));
    }
    stages_.push_back(std::move(st));
  }
  // The draft layer: the model's MTP layer (+ eh_proj, 2 x hidden -> hidden), or an EAGLE draft layer.
  if (launch_.speculative) {
    const bool mtp =
        launch_.speculative->method == engines::SpeculativePolicy::Method::kMtp && m.mtp_layers > 0;
    draft_ = build_class(mtp ? m.mtp_layer : eagle_draft_layer(m), 1);
    Gemm fc;
    fc.n = double(m.hidden_size) / std::max(1, lay.dense_tp);
    fc.k = (launch_.speculative->method == engines::SpeculativePolicy::Method::kEagle3 ? 3.0 : 2.0) *
           m.hidden_size;
    fc.weight_bytes = fc.n * fc.k * (mtp ? m.quantization.dense_ffn.bytes_per_param() : 2.0);
    fc.eff = gemm_efficiency(mtp ? ex.gemm : engines::GemmKernel::kCublasBf16, gen);
    fc.peak = gemm_peak_flops(mtp ? ex.gemm : engines::GemmKernel::kCublasBf16, cluster_.gpu);
    measure(fc, mtp ? ex.gemm : engines::GemmKernel::kCublasBf16);
    draft_->attn_gemms.push_back(fc);
  }
  // LM head (vocab-parallel over dense TP) on the last stage.
  lm_head_.n = double(m.vocab_size) / std::max(1, lay.dense_tp);
  lm_head_.k = m.hidden_size;
  lm_head_.weight_bytes = lm_head_.n * lm_head_.k * m.quantization.lm_head.bytes_per_param();
  lm_head_.eff = gemm_efficiency(engines::GemmKernel::kCublasBf16, gen);
  lm_head_.peak = cluster_.gpu.bf16_flops;
  measure(lm_head_, engines::GemmKernel::kCublasBf16);
  describe_measured();
}

double StepModel::measured_at(const ops::OpCurve& curve, double q, bool borrowed) const {
  bool outside = false;
  const double t = curve.at(q, &outside) * 1e-3;
  lookups_.add(outside || curve.extrapolated || borrowed);
  return t;
}

double StepModel::allreduce_time(double elements, int n, const CollectiveLink& link,
                                 const std::shared_ptr<const ops::OpCurve>& measured) const {
  if (n <= 1 || elements <= 0) return 0.0;
  if (measured) return measured_at(*measured, elements);
  return allreduce_s(elements * 2.0, n, link);
}

// An FP8 GEMM's measured row is capped by the same table's BF16 row of the shape [physics bound, not
// fitted]: it reads half the bytes and has twice the peak, so a table whose FP8 rows are slower measured a
// path serving does not take (aic-ops vLLM 0.14 / 0.18 / 0.22 H200 and SGLang 0.5.9 B200 block-FP8 at one
// token: 2.7-5.4x their BF16 rows, where SGLang's and TensorRT-LLM's Hopper rows are 0.8-1.0x).
double StepModel::gemm_s(const Gemm& g, double m, double* unscaled) const {
  if (g.measured) {
    double s = measured_at(*g.measured, m);
    if (g.measured_bf16) s = std::min(s, measured_at(*g.measured_bf16, m));
    if (stand_in_gpu_)  // the same compute (stand_in_op_source): only the memory-bound part moves
      s *= gemm_time_s(m, g.n, g.k, g.weight_bytes, g.peak, g.eff, cluster_.gpu, nullptr) /
           gemm_time_s(m, g.n, g.k, g.weight_bytes, g.peak, g.eff, *stand_in_gpu_, nullptr);
    return measured_s(s, unscaled);
  }
  return gemm_time_s(m, g.n, g.k, g.weight_bytes, g.peak, g.eff, cluster_.gpu, unscaled);
}

bool StepModel::graphed(std::span<const RankLoad> loads) const {
  const auto& ex = launch_.execution;
  if (ex.graphs == engines::GraphMode::kNone) return false;
  int max_tokens = 0, max_decode = 0;
  bool prefill = false;
  for (const auto& l : loads) {
    prefill = prefill || l.prefill_tokens > 0;
    max_tokens = std::max(max_tokens, l.query_tokens);
    max_decode = std::max(max_decode, l.decode_requests);
  }
  // FULL graphs cover mixed batches too; the other modes graph decode-only steps (mixed ones run
  // piecewise at best, see cost()).
  if (prefill && ex.graphs != engines::GraphMode::kFull) return false;
  if (ex.graphs == engines::GraphMode::kPiecewise) return false;
  const bool tokens_rule = ex.graph_batch_in_tokens || prefill;
  const int size = tokens_rule ? max_tokens : max_decode;
  if (size <= 0 || size > ex.graph_max_batch) return false;
  if (!ex.graph_padding && !ex.graph_sizes.empty())
    return std::find(ex.graph_sizes.begin(), ex.graph_sizes.end(), size) != ex.graph_sizes.end();
  return true;
}

double StepModel::moe_s(const LayerClass& c, double tokens, double* unscaled) const {
  const auto& gpu = cluster_.gpu;
  const double hidden = launch_.model.hidden_size;
  // Below the engine's DeepGEMM M threshold (vLLM TritonOrDeepGemmExperts) the step's experts run the
  // fallback kernel; M is the tokens entering the MoE layer on this rank.
  const bool small = tokens < launch_.execution.moe_small_below;
  const KernelEfficiency& eff = small ? moe_small_eff_ : moe_eff_;
  const double peak = small ? moe_small_peak_ : moe_peak_;
  // The roofline of the routed experts at a layout (expert shapes, experts on the GPU, EP) and GPU.
  auto roofline = [&](const MoeLayout& at, const hardware::GpuSpec& g, double* mem) {
    const double rows = tokens * c.top_k / std::max(1, at.ep);
    const double touched = routed_experts_touched(tokens, c.top_k, c.experts, at.experts_local);
    // small_m_rows is the 16-bit weights' config (block-scaled FP8 keeps 64-row tiles): 2 bytes a weight.
    const bool wide_weights = at.up.weight_bytes >= 1.5 * at.up.n * at.up.k;
    const int tile =
        eff.small_m_rows > 0 && wide_weights && tokens <= at.experts_local ? eff.small_m_rows : eff.min_rows;
    const double rows_eff = std::max(rows, touched * tile);
    const double flops = 2.0 * rows_eff * (at.up.n * at.up.k + at.down.n * at.down.k);
    const double weights = touched * (at.up.weight_bytes + at.down.weight_bytes);
    const double bytes = weights + rows * (at.up.n + at.down.n + 2 * hidden) * 2.0;
    return moe_time_s(flops, bytes, weights, touched, at.down.k, peak, eff, g, mem);
  };
  const MoeLayout& own = c.moe_own;
  double moe = 0;
  if (!c.moe_measured) {
    moe = roofline(own, gpu, unscaled);
  } else {
    // A measured time is unscaled whole (measured_s); the roofline's memory-bound part must not be counted
    // unscaled beside it. A row of the sibling GPU (sibling_op_source) or of another layout
    // (nearest_moe_layout) is rescaled by the ratio of the two rooflines, and counted as extrapolated.
    const bool borrowed = c.moe_from_sibling || c.moe_stand_in;
    double t = measured_at(*c.moe_measured, tokens, borrowed);
    if (c.moe_from_sibling) t *= roofline(own, gpu, nullptr) / roofline(own, sibling_gpu_, nullptr);
    if (stand_in_gpu_) t *= roofline(own, gpu, nullptr) / roofline(own, *stand_in_gpu_, nullptr);
    if (c.moe_stand_in) t *= roofline(own, gpu, nullptr) / roofline(*c.moe_stand_in, gpu, nullptr);
    moe = measured_s(t, unscaled);
  }
  if (c.router_n > 0)
    moe += gemm_time_s(tokens, c.router_n, c.router_k, c.router_n * c.router_k * 2.0, gpu.bf16_flops,
                       gemm_efficiency(engines::GemmKernel::kCublasBf16, gpu.generation), gpu, unscaled);
  return moe;
}

double StepModel::rank_attention_s(const LayerClass& c, const RankLoad& r, double* proj,
                                   double* unscaled) const {
  const auto& gpu = cluster_.gpu;
  const double bf16 = gpu.bf16_flops, bw = gpu.hbm_bandwidth_Bps;
  const double fp8 = gpu.fp8_flops > 0 ? gpu.fp8_flops : gpu.bf16_flops;
  // A measured DSA block holds the projections too.
  if (const double block = c.dsa_module ? measured_dsa_s(c, r) : -1; block >= 0)
    return measured_s(block, unscaled);
  const double T = r.query_tokens;
  for (const auto& g : c.attn_gemms) *proj += gemm_s(g, T, unscaled);
  double core = 0;
  if (c.linear_attention) {
    core = linear_attention_s(c, r, unscaled);
  } else if (const double measured = c.dsa ? -1 : measured_attention_s(c, r); measured >= 0) {
    core = measured_s(measured, unscaled);
  } else {
    const int p = c.pattern;
    // Prefill: MLA in MHA form unless the layer is sparse (absorbed MQA on the selected keys).
    const double pre_pair = c.mla && c.dsa ? c.pair_flops_absorbed : c.pair_flops_dense;
    const double dec_pair = c.mla ? c.pair_flops_absorbed : c.pair_flops_dense;
    double pre_flops =
        r.prefill_pairs[p] * pre_pair + (c.dsa ? r.dsa_dense_prefill_pairs * c.pair_flops_dense : 0.0);
    double dec_flops = r.decode_pairs[p] * dec_pair;
    pre_flops *= c.prefill_pad;
    dec_flops *= c.decode_pad;
    const double dec_bytes = r.decode_kv_tokens[p] * c.kv_bytes;
    core =
        pre_flops / (bf16 * prefill_attn_eff_.compute) +
        std::max(dec_flops / (bf16 * decode_attn_eff_.compute), dec_bytes / (bw * decode_attn_eff_.memory));
    if (c.indexer) {
      const double idx_flops = (r.indexer_prefill_pairs + r.decode_pairs[0]) * c.indexer_pair_flops;
      const double idx_bytes = r.decode_kv_tokens[0] * c.indexer_kv_bytes;
      core += std::max(idx_flops / (fp8 * 0.6), idx_bytes / (bw * 0.8));
    }
  }
  return *proj + core;
}

double StepModel::layer_time(const LayerClass& c, std::span<const RankLoad> loads, StepCost& out) const {
  const auto& lay = launch_.layout;
  const double hidden = launch_.model.hidden_size;
  const double bw = cluster_.gpu.hbm_bandwidth_Bps;
  double tokens_total = 0, tokens_max = 0;
  double attn_max = 0, linear_max = 0;
  double attn_mem = 0;  // memory-bound part of the slowest rank's attention (roofline_s)
  for (const auto& r : loads) {
    tokens_total += r.query_tokens;
    tokens_max = std::max<double>(tokens_max, r.query_tokens);
    if (r.query_tokens == 0) continue;
    double proj = 0, mem = 0;
    const double attn = rank_attention_s(c, r, &proj, &mem);
    if (attn > attn_max) attn_max = attn, attn_mem = mem;
    linear_max = std::max(linear_max, proj);
  }
  if (tokens_total == 0) return 0;
  (c.linear_attention ? out.linear_attention_s : out.attention_s) += c.count * (attn_max - linear_max);
  out.linear_s += c.count * linear_max;

  // FFN: gathered over the DP ranks when its TP group spans them (SGLang DP-attention).
  const bool dense_gathered = lay.dense_tp > lay.attn_tp && loads.size() > 1;
  const double t_dense_tokens = dense_gathered ? tokens_total : tokens_max;
  double ffn = 0, mem = attn_mem;
  for (const auto& g : c.dense_gemms) ffn += gemm_s(g, t_dense_tokens, &mem);
  // Elementwise kernels beside the measured ones (memory-bound, at kElementwiseHbmFraction of HBM): the
  // attention side's on the busiest rank, the FFN side's on the FFN's tokens.
  const double elementwise =
      (tokens_max * c.elementwise_attn_bytes + t_dense_tokens * c.elementwise_ffn_bytes) /
      (bw * kElementwiseHbmFraction);
  mem += elementwise;
  out.elementwise_s += c.count * elementwise;
  const double moe =
      c.moe ? moe_s(c, lay.moe_gathered || dense_gathered ? tokens_total : tokens_max, &mem) : 0.0;
  out.moe_s += c.count * moe;
  out.linear_s += c.count * ffn;

  // Collectives of one layer. The MoE's all-to-all may differ for decode-only steps (SGLang DeepEP auto:
  // low-latency kernels for decode, normal ones for prefill).
  bool decode_only = true;
  for (const auto& r : loads) decode_only = decode_only && r.prefill_tokens == 0;
  const engines::MoeA2a a2a = decode_only ? lay.a2a_decode : lay.a2a;
  const bool deepep = a2a == engines::MoeA2a::kDeepepNormal || a2a == engines::MoeA2a::kDeepepLowLatency ||
                      a2a == engines::MoeA2a::kPplx || a2a == engines::MoeA2a::kFlashinferAllToAllV;
  const double row = hidden * 2.0;
  double comm = 0;
  if (dense_gathered && c.moe && deepep) {
    // DP-attention with a token all-to-all: tokens go to their experts directly, no all-gather.
  } else if (dense_gathered) {
    // All-gather the ranks' tokens into the FFN's TP group and reduce-scatter back.
    comm += 2 * allgather_s(tokens_total * row, lay.dense_tp, dense_link_);
  } else {
    comm += allreduce_time(tokens_max * hidden, lay.attn_tp, attn_link_, attn_allreduce_);  // after o_proj
    if (!c.moe || a2a == engines::MoeA2a::kNone)
      comm += allreduce_time(tokens_max * hidden, c.moe ? lay.moe_tp * lay.moe_ep : lay.dense_tp,
                             c.moe ? moe_link_ : dense_link_,
                             c.moe ? moe_allreduce_ : dense_allreduce_);  // after the FFN / TP MoE
  }
  if (c.moe) {
    if (a2a == engines::MoeA2a::kAllgatherReduceScatter && !dense_gathered)
      comm += 2 * allgather_s(tokens_total * row, lay.moe_tp * lay.moe_ep, moe_link_);
    else if (deepep)
      comm += deepep_s(tokens_max, static_cast<int>(c.top_k), std::max(lay.moe_ep, lay.moe_tp), hidden,
                       a2a != engines::MoeA2a::kDeepepNormal,
                       lay.moe_ep * lay.moe_tp > cluster_.gpus_per_node, cluster_);
  }
  out.comm_s += c.count * comm;
  out.memory_s += c.count * mem;
  return c.count * (attn_max + ffn + moe + elementwise);
}

double StepModel::stage_time(const Stage& s, std::span<const RankLoad> loads, StepCost& out) const {
  double t = 0;
  for (const auto& c : s.classes) t += layer_time(c, loads, out);
  if (s.last) {
    // LM head on the sampled rows and the sampler's FP32 passes over the vocabulary slice.
    const auto& lay = launch_.layout;
    const bool gathered = lay.dense_tp > lay.attn_tp && loads.size() > 1;
    double rows = 0;
    for (const auto& r : loads)
      rows = gathered ? rows + r.sampled_tokens : std::max<double>(rows, r.sampled_tokens);
    if (rows > 0) {
      const auto& gpu = cluster_.gpu;
      const double sampler = 3.0 * rows * lm_head_.n * 4.0 / (gpu.hbm_bandwidth_Bps * 0.8);  // memory-bound
      const double head = gemm_s(lm_head_, rows, &out.memory_s) + sampler;
      out.memory_s += sampler;
      out.lm_head_s += head;
      t += head;
    }
  }
  return t;
}

StepCost StepModel::cost(std::span<const RankLoad> loads, int running, bool graph, bool stage_only) const {
  StepCost out;
  out.running = running;
  out.overlap = launch_.execution.async_scheduling;
  const auto& lay = launch_.layout;
  const auto& ex = launch_.execution;
  double gpu = 0, tokens_max = 0, decode_max = 0, decoding = 0;
  int kernels = 0, layers = 0;
  for (const auto& r : loads) {
    tokens_max = std::max<double>(tokens_max, r.query_tokens);
    decode_max = std::max<double>(decode_max, r.decode_requests);
    decoding += r.decode_requests;
  }
  // Each decoding request streams one chunk through the API server (ExecutionPolicy::api_stream_stage).
  if (ex.api_stream_stage)
    out.api_stream_chunks = decoding / (std::max(1, ex.api_server_count) * std::max(1, ex.stream_interval));
  // Stages: all of them in sequence, or (pipeline ticks) the slowest one.
  double slowest = -1;
  for (const auto& st : stages_) {
    StepCost sc;
    // Offloaded weights stream from host memory at every forward: memory-bound, not kernel-scaled.
    const double t = stage_time(st, loads, sc) + st.offload_s;
    sc.memory_s += st.offload_s;
    int k = 0, n = 0;
    for (const auto& c : st.classes) k += c.count * c.kernels, n += c.count;
    if (stage_only) {
      if (t + sc.comm_s <= slowest) continue;
      slowest = t + sc.comm_s;
      gpu = t;
      kernels = k, layers = n;
      out.attention_s = sc.attention_s, out.linear_s = sc.linear_s, out.moe_s = sc.moe_s;
      out.lm_head_s = sc.lm_head_s, out.comm_s = sc.comm_s, out.memory_s = sc.memory_s;
      out.elementwise_s = sc.elementwise_s, out.linear_attention_s = sc.linear_attention_s;
    } else {
      gpu += t;
      out.memory_s += sc.memory_s;
      kernels += k, layers += n;
      out.attention_s += sc.attention_s, out.linear_s += sc.linear_s, out.moe_s += sc.moe_s;
      out.lm_head_s += sc.lm_head_s, out.comm_s += sc.comm_s;
      out.elementwise_s += sc.elementwise_s, out.linear_attention_s += sc.linear_attention_s;
    }
  }
  if (lay.pp > 1) {
    const double bytes = tokens_max * launch_.model.hidden_size * 2.0;
    out.comm_s += (stage_only ? 1 : lay.pp - 1) * p2p_s(bytes, pp_link_);
  }
  // Speculative decoding: the draft proposes on every decode row before the verification pass.
  if (launch_.speculative && decode_max > 0 && !stages_.empty()) {
    const auto& sp = *launch_.speculative;
    const bool mtp = sp.method == engines::SpeculativePolicy::Method::kMtp;
    const int steps = mtp ? sp.num_speculative_tokens : std::max(1, sp.num_steps);
    const double rows_per_req = mtp ? 1.0 : std::max(1, sp.topk);
    std::vector<RankLoad> draft(loads.begin(), loads.end());
    for (auto& d : draft) {
      const double verify =
          d.decode_requests > 0 ? double(d.query_tokens - d.prefill_tokens) / d.decode_requests : 1.0;
      d.query_tokens = static_cast<int>(d.decode_requests * rows_per_req);
      d.prefill_tokens = 0;
      d.sampled_tokens = d.query_tokens;
      for (int p = 0; p < kMaxPatterns; ++p) {
        d.prefill_pairs[p] = 0;
        d.decode_pairs[p] = d.decode_pairs[p] / std::max(1.0, verify) * rows_per_req;
      }
    }
    StepCost scratch;
    double one = draft_ ? layer_time(*draft_, draft, scratch) : 0.0;
    Stage head_only;
    head_only.last = true;
    one += stage_time(head_only, draft, scratch);
    out.draft_s = steps * one;
    gpu += out.draft_s;
    kernels += steps * 20;
    out.comm_s += steps * scratch.comm_s;
    out.memory_s += steps * scratch.memory_s;
  }
  out.gpu_s = gpu;
  // SGLang --enable-torch-compile: decode batches up to torch_compile_max_batch run Inductor-fused
  // graphs, about a third fewer kernels per layer (norms, RoPE, activation fused) [estimate].
  if (ex.torch_compile && graph && decode_max <= ex.torch_compile_max_batch) kernels = kernels * 2 / 3;
  const double floor = ex.programmatic_dependent_launch ? 0.0 : kernel_floor_s(cluster_.gpu.generation);
  if (graph) {
    out.floor_s = kernels * floor;
  } else {
    const bool piecewise =
        (ex.graphs == engines::GraphMode::kPiecewise || ex.graphs == engines::GraphMode::kFullAndPiecewise) &&
        tokens_max <= ex.graph_max_batch;
    // Each eagerly issued kernel costs the engine's fitted CPU time (Calibration::eager_launch_us).
    // Every kernel keeps its launch-to-launch gap on the GPU, graphs or not (step_seconds_of then takes the
    // larger of the GPU's time and the CPU's launches): a step without graphs is never faster.
    out.floor_s = kernels * floor;
    if (piecewise) {
      // torch.compile piecewise graphs: every layer's graph replays, its attention launches eagerly.
      out.launch_kernels = layers * 3.0;
      out.piecewise_graphs = true;
    } else {
      out.launch_kernels = kernels;
    }
  }
  return out;
}

}  // namespace servelab::sim::detail
