// servelab/sim (private): the step model's measured side (sim_detail.h StepModel): the notes on which
// operators came from which measured table, the routed experts' row (own, sibling GPU's, nearest layout's),
// the attention cores timed from the GQA / MLA attention tables and the gated-DeltaNet kernels, with the
// DeltaNet roofline they fall back to.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/sim_detail.h"

namespace servelab::sim::detail {

void StepModel::describe_measured() {
  if (!ops_) return;
  if (!op_source_) {
    measured_notes_.push_back(missing_source_note(*ops_, launch_, cluster_.gpu));
    return;
  }
  const OpSource& src = *op_source_;
  if (stand_in_gpu_) {
    const auto& own = cluster_.gpu;
    measured_notes_.push_back(fmt::format(
        "no {} tables of {}'s release line on {}: {}'s stand in (the same generation, SMs and BF16 / FP8 "
        "peaks; HBM {:.3g} vs {:.3g} TB/s): GEMM and MoE times x the ratio of the two GPUs' rooflines, "
        "attention and collectives as measured (an NVFP4 row keeps {}'s FP4 speed); every lookup counted "
        "as extrapolated",
        src.backend, launch_.version, own.name, stand_in_gpu_->name, own.hbm_bandwidth_Bps / 1e12,
        stand_in_gpu_->hbm_bandwidth_Bps / 1e12, stand_in_gpu_->name));
  }
  auto from = [&](const char* table) { return table_note(*ops_, src, table); };
  int gemms = 0, gemms_measured = 0, attn = 0, attn_measured = 0, moe = 0, moe_measured = 0, moe_sibling = 0;
  std::vector<std::string> stand_ins;  // the MoE layouts whose rows stood in for the launch's
  int linear = 0, linear_decode = 0, linear_prefill = 0;
  std::string gdn_kernels;
  double gdn_state_scale = 1;
  bool mla = false;
  int dsa = 0;
  std::vector<const LayerClass*> dsa_blocks;  // the classes with a measured DSA block, for the note
  auto count = [&](const LayerClass& c) {
    if (c.dsa) ++dsa;
    if (c.dsa_module) dsa_blocks.push_back(&c);
    for (const auto* list : {&c.attn_gemms, &c.dense_gemms})
      if (list != &c.attn_gemms || !c.dsa_module)  // a measured DSA block times its projections itself
        for (const auto& g : *list) ++gemms, gemms_measured += g.measured ? 1 : 0;
    mla = mla || c.mla;
    if (!c.linear_attention && !c.dsa) ++attn, attn_measured += c.decode_attn && c.prefill_attn ? 1 : 0;
    if (c.linear_attention) {
      ++linear;
      linear_decode += c.gdn && !c.gdn->decode.empty() ? 1 : 0;
      if (c.gdn && !c.gdn->decode.empty()) gdn_state_scale = c.gdn_state_scale;
      linear_prefill += c.gdn && !c.gdn->prefill.empty() ? 1 : 0;
      if (c.gdn && gdn_kernels.empty()) {
        std::vector<std::string> k = c.gdn->decode_kernels;
        k.insert(k.end(), c.gdn->prefill_kernels.begin(), c.gdn->prefill_kernels.end());
        gdn_kernels = fmt::format(" ({})", fmt::join(k, ", "));
      }
    }
    if (c.moe) ++moe, moe_measured += c.moe_measured ? 1 : 0, moe_sibling += c.moe_from_sibling ? 1 : 0;
    if (c.moe_stand_in)
      stand_ins.push_back(fmt::format("MoE TP {} x EP {}", c.moe_stand_in->tp, c.moe_stand_in->ep));
  };
  for (const auto& st : stages_)
    for (const auto& c : st.classes) count(c);
  if (draft_) count(*draft_);
  ++gemms, gemms_measured += lm_head_.measured ? 1 : 0;
  auto rest = [](int measured, int all, const std::string& why) {
    return measured < all ? fmt::format("; {} the roofline ({})", all - measured, why) : std::string();
  };
  const auto& gemm_rows = launch_.execution.gemm_kernel_sources;
  measured_notes_.push_back(fmt::format(
      "GEMMs: {} of {} shapes from {}{}", gemms_measured, gemms, from("gemm_perf"),
      rest(gemms_measured, gemms,
           gemm_rows && gemm_rows->empty() ? fmt::format("no table row times the {} GEMM",
                                                         engines::gemm_kernel_name(launch_.execution.gemm))
                                           : std::string("a kernel no table measures"))));
  // Decode rows from the generation table, prefill rows from the context table of the same release.
  // (table_note starts with the table's name: the prefill table goes right after it.)
  const std::string decode_table = mla ? "generation_mla_perf" : "generation_attention_perf";
  const char* prefill_table = mla ? "context_mla_perf" : "context_attention_perf";
  std::string attn_from = from(decode_table.c_str());
  attn_from.insert(decode_table.size(), fmt::format(" (decode) and {} (prefill)", prefill_table));
  if (attn > 0)
    measured_notes_.push_back(fmt::format("attention: {} of {} layer kinds ({} KV cache) from {}{}",
                                          attn_measured, attn, model::dtype_name(launch_.kv_dtype), attn_from,
                                          rest(attn_measured, attn, "heads / KV dtype / kernel no row has")));
  if (dsa > 0) measured_notes_.push_back(dsa_note(dsa, dsa_blocks));
  if (linear > 0)
    measured_notes_.push_back(fmt::format(
        "gated DeltaNet: decode {} of {}, prefill {} of {} layer kinds from {}{}{}{}", linear_decode, linear,
        linear_prefill, linear, from("gdn_perf"), gdn_kernels,
        linear_decode == linear && linear_prefill == linear ? ""
        : table_release(*ops_, src, "gdn_perf").empty()
            ? "; the roofline"
            : "; the rest the roofline (no row of the recurrent / chunked-prefill kernel of these heads)",
        linear_decode > 0 && gdn_state_scale != 1
            ? fmt::format("; the recurrent rows (a BF16 state) x{:g} for the launch's {} state",
                          gdn_state_scale, model::dtype_name(launch_.state_dtype))
            : std::string()));
  if (moe > 0)
    measured_notes_.push_back(fmt::format(
        "MoE experts: {} of {} layer kinds from {}{}{}{}", moe_measured - moe_sibling, moe, from("moe_perf"),
        stand_ins.empty()
            ? std::string()
            : fmt::format(
                  " ({} of them from rows of {}, the nearest measured layout to the launch's MoE TP {} x "
                  "EP {}; extrapolated: x the ratio of the two layouts' rooflines)",
                  stand_ins.size(), stand_ins.front(), launch_.layout.moe_tp, launch_.layout.moe_ep),
        moe_sibling > 0
            ? fmt::format("; {} from {} (the same chip with other memory; extrapolated: its times x "
                          "the ratio of the two GPUs' MoE rooflines)",
                          moe_sibling, table_note(*ops_, *sibling_source_, "moe_perf"))
            : std::string(),
        rest(moe_measured, moe,
             launch_.execution.moe_kernel_sources && launch_.execution.moe_kernel_sources->empty()
                 ? fmt::format("no table row times the {} MoE kernel",
                               engines::moe_kernel_name(launch_.execution.moe))
                 : std::string("no row of this kernel, expert shape, dtype and MoE TP x EP")) +
            (moe_bf16_stand_in_ ? "; no MXFP8-activation row of this shape: the kernel's "
                                  "BF16-activation (w4a16_mxfp4) rows stand in"
                                : "")));
  const bool allreduce = attn_allreduce_ || dense_allreduce_ || moe_allreduce_;
  measured_notes_.push_back(fmt::format(
      "norms, residual adds, RoPE, KV-cache writes and the dense SwiGLU: their bytes at 80% of HBM "
      "bandwidth; "
      "{}",
      allreduce
          ? fmt::format("all-reduce from {}; other collectives: the roofline", from("custom_allreduce_perf"))
          : std::string("collectives: the roofline")));
}

std::string StepModel::dsa_note(int classes, const std::vector<const LayerClass*>& measured) const {
  const OpSource& src = *op_source_;
  // Every checkpoint and kernel whose rows a layer kind took, once each, in order.
  std::vector<std::string> rows, left_out;
  auto add = [&](const std::string& v) {
    if (!v.empty() && std::find(rows.begin(), rows.end(), v) == rows.end()) rows.push_back(v);
  };
  for (const auto* c : measured) {
    const DsaModule& m = *c->dsa_module;
    if (!m.decode_left_out.empty() &&
        std::find(left_out.begin(), left_out.end(), m.decode_left_out) == left_out.end())
      left_out.push_back(m.decode_left_out);
    std::string kernels;
    for (const auto* k : {&m.decode_kernel, &m.prefill_kernel, &m.dense_kernel})
      if (!k->empty()) kernels += (kernels.empty() ? "" : ", ") + *k;
    add(fmt::format("{} ({})", m.model, kernels));
  }
  // Decode rows left out (histories short of index_topk) are said in decode's place, not beside its table.
  const std::string prefill = table_note(*ops_, src, "dsa_context_module_perf") + " (prefill)";
  const std::string tables =
      left_out.empty()
          ? fmt::format("{} (decode) and {}", table_note(*ops_, src, "dsa_generation_module_perf"), prefill)
          : fmt::format("{}; {}", prefill, fmt::join(left_out, "; "));
  return fmt::format(
      "DSA attention blocks (projections, the indexer or the reuse of its selection, sparse core): {} of {} "
      "layer kinds ({} KV cache) from {}{}; each lookup less its fixed part (the least time its rows "
      "measured: the launch gaps and host work the kernel floors and eager launches count) plus the "
      "projection weights' read, once a step{}",
      measured.size(), classes, model::dtype_name(launch_.kv_dtype), tables,
      rows.empty() ? std::string() : fmt::format(", rows of {}", fmt::join(rows, "; ")),
      measured.size() < std::size_t(classes)
          ? fmt::format(
                "; {} the roofline (no checkpoint of this attention, kernel, KV or GEMM dtype and TP in "
                "the tables)",
                classes - int(measured.size()))
          : std::string());
}

StepModel::MoeLayout StepModel::expert_layout(const model::Layer& layer, int tp, int ep) const {
  const auto& m = launch_.model;
  MoeLayout out;
  out.tp = tp, out.ep = ep;
  for (const auto& l : model::linears(layer, m.hidden_size)) {
    if (l.cls != model::LinearClass::kExpert) continue;
    Gemm g;
    const ExpertShape e = expert_shape(l, tp, launch_.execution);
    g.n = e.n, g.k = e.k;
    g.weight_bytes = g.n * g.k * m.quantization.experts.bytes_per_param();
    (l.split == model::Split::kColumn ? out.up : out.down) = g;
    out.experts_local = std::ceil(double(l.copies) / std::max(1, ep));
  }
  return out;
}

void StepModel::measure_moe(LayerClass& c, const model::Layer& layer, const model::MoeFfn& moe) {
  const auto& m = launch_.model;
  const auto& ex = launch_.execution;
  const auto& lay = launch_.layout;
  const MoeShape shape{measured_moe_dtype(m.quantization.experts, ex.moe_mxfp8_activations),
                       double(m.hidden_size),
                       double(moe.expert_intermediate),
                       double(moe.top_k),
                       double(moe.experts),
                       lay.moe_tp,
                       lay.moe_ep,
                       ex.moe_kernel_sources};
  // The row of `at` from `src`. An FP8 row is not capped by its table's BF16 row as FP8 GEMMs are
  // (StepModel::gemm_s): TensorRT-LLM 1.2.0rc5's H200 CUTLASS block-FP8 MoE of DeepSeek's experts takes
  // 5.4 ms at 8,192 tokens where BF16 takes 2.7, a kernel the engine does run, and capping it moved no
  // held-out point but the reference study's TensorRT-LLM DSA runs (36.5 -> 38.9% tok/s).
  auto take = [&](const OpSource& src, const MoeShape& at) {
    c.moe_measured = measured_moe_curve(*ops_, src, at);
    return c.moe_measured != nullptr;
  };
  if (take(*op_source_, shape)) return;
  // No MXFP8-activation row of this shape: the same kernel's BF16-activation rows stand in (the MXFP4
  // expert weights, the same either way, bound decode; prefill comes out slower), with a note.
  if (ex.moe_mxfp8_activations) {
    MoeShape bf16_act = shape;
    bf16_act.dtype = measured_moe_dtype(m.quantization.experts, false);
    if (take(*op_source_, bf16_act)) {
      moe_bf16_stand_in_ = true;
      return;
    }
  }
  if (sibling_source_ && take(*sibling_source_, shape)) {
    c.moe_from_sibling = true;
    return;
  }
  const auto at = nearest_moe_layout(*ops_, *op_source_, shape);
  if (!at) return;
  MoeShape near = shape;
  near.tp = at->first, near.ep = at->second;
  if (!take(*op_source_, near)) return;
  c.moe_stand_in = expert_layout(layer, near.tp, near.ep);
}

void StepModel::measure_dsa(LayerClass& c, const model::MlaAttention& mla) {
  const auto& m = launch_.model;
  const int tp = std::max(1, launch_.layout.attn_tp);
  const DsaModuleShape shape{mla,
                             m.hidden_size,
                             m.id,
                             double(mla.heads) / tp,
                             tp,
                             launch_.kv_dtype,
                             measured_gemm_dtype(launch_.execution.attention_gemm)};
  c.dsa_module = measured_dsa_module(*ops_, *op_source_, shape);
  if (!c.dsa_module) return;
  double weights = 0;
  for (const auto& g : c.attn_gemms) weights += g.weight_bytes;
  c.dsa_stream_s = weights / (cluster_.gpu.hbm_bandwidth_Bps * 0.8);
  c.dsa_topk = mla.index_topk;
}

double StepModel::measured_dsa_s(const LayerClass& c, const RankLoad& r) const {
  const DsaModule& m = *c.dsa_module;
  // Each phase: its work (the rows less their surface's fixed part, OpSurface::fixed_ms) and the projection
  // weights' read, which the fixed part's subtraction took out with it; the weights stream once a step.
  double t = 0;
  bool outside[2] = {false, false};
  const int decode_rows = r.query_tokens - r.prefill_tokens;
  const bool decoding = r.decode_requests > 0 && decode_rows > 0;
  const bool prefilling = r.prefill_requests > 0 && r.prefill_tokens > 0;
  if (decoding) {
    if (!m.decode) return -1;
    // Pattern 0 (full causal) counts the whole history: the indexer scans all of it.
    const double history = r.decode_kv_tokens[0] / r.decode_requests;
    const double y = m.decode->at(decode_rows, history, &outside[0]);
    t += std::max(0.0, y - m.decode->fixed_ms) * 1e-3 + c.dsa_stream_s;
  }
  if (prefilling) {
    const bool dense = !m.prefill_dense.empty() && r.prefill_max_context <= c.dsa_topk;
    const PrefixedSurfaces& s = dense ? m.prefill_dense : m.prefill;
    if (s.empty()) return -1;
    t += dsa_prefill_work_s(s, r, &outside[1]) + c.dsa_stream_s;
  }
  if (decoding) lookups_.add(outside[0]);
  if (prefilling) lookups_.add(outside[1]);
  if (decoding && prefilling) t -= c.dsa_stream_s;
  return t;
}

double StepModel::dsa_prefill_work_s(const PrefixedSurfaces& s, const RankLoad& r, bool* outside) const {
  const double n = r.prefill_requests;
  const double chunk = r.prefill_tokens / n, cached = r.prefill_cached / n;
  auto work = [&](std::size_t k) {
    return std::max(0.0, s.surface[k]->at(n, chunk) - s.surface[k]->fixed_ms);
  };
  const auto [lo, hi] = s.around(n, chunk, cached);
  if (lo && hi) {
    const double w = *lo == *hi ? 0.0 : (cached - s.prefix[*lo]) / (s.prefix[*hi] - s.prefix[*lo]);
    return (work(*lo) * (1 - w) + work(*hi) * w) * 1e-3;
  }
  *outside = true;
  if (hi) return work(*hi) * 1e-3;  // no grid at or below the prefix holds the shape: the one above
  // Past the largest prefix whose grid holds the shape: the nearest at or below whose smallest batch reaches
  // down to the chunk (else the first that does, else the first), its rows split into per-token and per-pair
  // work.
  auto reaches = [&](std::size_t k) { return s.surface[k]->curves.front().x.front() <= chunk; };
  std::optional<std::size_t> k = lo;
  for (std::size_t i = s.prefix.size(); !k && i-- > 0;)
    if (s.prefix[i] <= cached && reaches(i)) k = i;
  for (std::size_t i = 0; !k && i < s.prefix.size(); ++i)
    if (reaches(i)) k = i;
  const OpSurface& at = *s.surface[k.value_or(0)];
  return std::max(0.0, split_prefill_s(at, s.prefix[k.value_or(0)], r, outside) - at.fixed_ms * 1e-3);
}

double StepModel::split_prefill_s(const OpSurface& s, double prefix, const RankLoad& r, bool* outside) const {
  const double n = r.prefill_requests;
  const double l1 = r.prefill_tokens / n;
  const double pairs = r.prefill_pairs[0] / n;  // per request: chunk x cached + chunk (chunk + 1) / 2
  auto pairs_at = [&](double l) { return l * prefix + l * (l + 1) / 2; };
  // The chunk length whose pairs after `prefix` cached tokens are the step's mean.
  const double l2 = -(prefix + 0.5) + std::sqrt((prefix + 0.5) * (prefix + 0.5) + 2 * pairs);
  bool o1 = false, o2 = false;
  const double m1 = s.at(n, l1, &o1) * 1e-3;
  *outside = *outside || o1;
  if (l2 <= l1 * 1.02) return m1;
  const double m2 = s.at(n, l2, &o2) * 1e-3;
  *outside = *outside || o2 || r.prefill_cached / n > prefix * 1.02 + 1;
  // m_i - F = n (P l_i + A pairs_at(l_i)): the per-token work P and the per-pair work A through both rows.
  const double F = s.fixed_ms * 1e-3;
  const double x1 = n * l1, y1 = n * pairs_at(l1), x2 = n * l2, y2 = n * pairs_at(l2);
  const double det = x1 * y2 - x2 * y1;
  const double P = ((m1 - F) * y2 - (m2 - F) * y1) / det, A = (x1 * (m2 - F) - x2 * (m1 - F)) / det;
  if (det > 0 && P >= 0 && A >= 0) return F + P * r.prefill_tokens + A * r.prefill_pairs[0];
  return m2;  // the rows with the step's pairs (and more projection work than it has)
}

double StepModel::measured_attention_s(const LayerClass& c, const RankLoad& r) const {
  const int p = c.pattern;
  double t = 0;
  bool outside = false;
  if (r.decode_requests > 0) {
    if (!c.decode_attn) return -1;
    const double kv = r.decode_kv_tokens[p] / r.decode_requests;
    t += c.decode_attn->at(r.decode_requests, kv, &outside) * 1e-3;
    lookups_.add(outside);
  }
  if (r.prefill_requests > 0 && r.prefill_pairs[p] > 0) {
    if (!c.prefill_attn) return -1;
    // The prompt length whose causal prefill has the chunk's (query, key) pairs (L^2 / 2 per request):
    // chunks after a prefix cost what a prompt of the same work does.
    const double isl = std::sqrt(2.0 * r.prefill_pairs[p] / r.prefill_requests);
    t += c.prefill_attn->at(r.prefill_requests, isl, &outside) * 1e-3;
    lookups_.add(outside);
  }
  return t;
}

double StepModel::linear_attention_s(const LayerClass& c, const RankLoad& r, double* unscaled) const {
  const auto& gpu = cluster_.gpu;
  // The roofline of one phase: the state-update FLOPs of its query tokens and each of its requests'
  // recurrent state read and written once, at the FLA kernels' efficiency (not the attention backend's).
  auto roofline = [&](double tokens, double requests) {
    const double compute = tokens * c.linear_flops_per_token / (gpu.bf16_flops * linear_eff_.compute);
    const double memory = 2.0 * requests * c.state_bytes / (gpu.hbm_bandwidth_Bps * linear_eff_.memory);
    return std::max(compute, memory);
  };
  const double decode_tokens = std::max(0, r.query_tokens - r.prefill_tokens);
  double t = 0;
  // The engines run a step's decoding and prefilling requests through separate kernels (the recurrent
  // update; the chunked prefill), so the two phases add.
  if (r.decode_requests > 0) {
    if (c.gdn && !c.gdn->decode.empty()) {
      // The recurrent kernel (the first) reads and writes each request's state once whatever its draft
      // tokens, in the launch's state dtype (gdn_state_scale); the conv-state update does not depend on it.
      double s = 0;
      for (std::size_t i = 0; i < c.gdn->decode.size(); ++i)
        s += measured_at(c.gdn->decode[i], r.decode_requests) * (i == 0 ? c.gdn_state_scale : 1.0);
      t += measured_s(s, unscaled);
    } else {
      t += roofline(decode_tokens, r.decode_requests);
    }
  }
  if (r.prefill_requests > 0 && r.prefill_tokens > 0) {
    if (c.gdn && !c.gdn->prefill.empty()) {
      const double length = double(r.prefill_tokens) / r.prefill_requests;
      double s = 0;
      for (const auto& k : c.gdn->prefill) {
        bool outside = false;
        s += k.at(r.prefill_requests, length, &outside) * 1e-3;
        lookups_.add(outside);
      }
      t += measured_s(s, unscaled);
    } else {
      t += roofline(r.prefill_tokens, r.prefill_requests);
    }
  }
  return t;
}

}  // namespace servelab::sim::detail
