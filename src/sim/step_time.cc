#include "sim/step_time.h"

#include <algorithm>
#include <cmath>

namespace servelab::sim {

StepTime step_time(const StepContext& c, const RankBatch* ranks, int num_ranks, int running_requests,
                   bool graph) {
  const ModelConfig& m = c.model;
  const Parallelism& par = c.par;
  const Calibration& cal = c.cal;
  const double L = m.num_hidden_layers, Lm = m.moe_layers(), Ld = m.first_k_dense_replace;
  const double H = m.hidden_size;
  const double gemm_eff = cal.gemm_efficiency * (c.deep_gemm ? 1.0 : cal.gemm_no_deepgemm_ratio);
  const double fp8 = c.gpu.fp8_dense_flops * gemm_eff;
  const double bf16_gemm = c.gpu.bf16_dense_flops * gemm_eff;
  const double attn_flops = c.gpu.bf16_dense_flops * cal.attention_efficiency;
  const double hbm = c.gpu.hbm_bandwidth_bps * cal.memory_efficiency;
  const double link = c.gpu.nvlink_bandwidth_bps * cal.comm_efficiency;
  const double lat = cal.collective_latency_us * 1e-6;

  StepTime t;
  double total_tokens = 0, max_rank_tokens = 0, sampled_total = 0, max_sampled = 0;
  for (int r = 0; r < num_ranks; ++r) {
    const RankBatch& b = ranks[r];
    total_tokens += b.query_tokens;
    max_rank_tokens = std::max<double>(max_rank_tokens, b.query_tokens);
    sampled_total += b.sampled_tokens;
    max_sampled = std::max<double>(max_sampled, b.sampled_tokens);
    if (b.query_tokens == 0) continue;
    // MLA + indexer projections (FP8 GEMMs); MLA heads split over attn_tp, indexer replicated (not TP-split).
    const double proj_params = m.mla_params_per_layer() / par.attn_tp + m.indexer_params_per_layer();
    const double proj = std::max(2.0 * proj_params * L * b.query_tokens / fp8, proj_params * L * m.weight_bytes / hbm);
    t.attn_proj_s = std::max(t.attn_proj_s, proj);
    // Core attention: MQA/absorbed sparse MLA (576 QK + 512 PV per head per key), heads padded to the
    // kernel's minimum; dense MHA prefill (192 QK + 128 PV per head per key). Memory: selected latent
    // entries of decode requests.
    const double heads = double(m.num_attention_heads) / par.attn_tp;
    const double heads_sparse = std::max<double>(heads, b.sparse_head_pad);
    const double qk = m.kv_lora_rank + m.qk_rope_head_dim, pv = m.kv_lora_rank;
    const double flops = L * (b.sparse_pairs * 2 * heads_sparse * (qk + pv) +
                              b.dense_pairs * 2 * heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim));
    const double attn = std::max(flops / attn_flops, L * b.kv_read_bytes / hbm);
    t.attention_s = std::max(t.attention_s, attn);
    // Lightning indexer: 64 heads x 128 dims x 2 FLOP per (query, key) pair per layer in FP8, reading the
    // 132 B/token key cache of each decode request's whole context.
    const double idx_flops = L * b.indexer_pairs * 2.0 * m.index_n_heads * m.index_head_dim;
    t.indexer_s = std::max(t.indexer_s, std::max(idx_flops / fp8, 0.0));
  }
  if (total_tokens == 0) return t;
  // Indexer memory traffic is carried in kv_read_bytes (attention); nothing more here.

  // Dense parts: shared expert (MoE layers), dense FFN (first layers), router gate, LM head.
  const bool gathered = par.dense_tp > par.attn_tp;  // dense TP spans several DP ranks -> tokens gathered
  const double dense_tokens = gathered ? total_tokens : max_rank_tokens;
  const double dense_params = Lm * m.n_shared_experts * m.expert_params() + Ld * m.dense_ffn_params();
  const double head_rows = gathered ? sampled_total : max_sampled;
  const double dense_c = 2.0 * dense_params * dense_tokens / par.dense_tp / fp8 +
                         2.0 * Lm * m.gate_params() * dense_tokens / bf16_gemm +
                         2.0 * m.embedding_params() * head_rows / par.dense_tp / bf16_gemm;
  const double dense_m = (dense_params * m.weight_bytes + m.embedding_params() * 2) / par.dense_tp / hbm +
                         Lm * m.gate_params() * 2 / hbm;
  t.dense_s = std::max(dense_c, dense_m);

  // Routed experts: all tokens of all ranks pass the MoE (ranks are lock-stepped); each GPU holds
  // 1/moe_group of the expert weights and reads the slices of the experts the step touches:
  // fraction 1 - (1 - k/E)^tokens (perf-facts §3).
  const double moe_tokens = par.dp_ranks > 1 ? total_tokens : max_rank_tokens;
  const double k_over_e = double(m.num_experts_per_tok) / m.n_routed_experts;
  const double touch = 1.0 - std::pow(1.0 - k_over_e, moe_tokens);
  const double moe_fp8 = fp8 * (!par.moe_ep && par.moe_group > 1 ? cal.moe_tp_efficiency_ratio : 1.0);
  const double moe_c = 2.0 * m.num_experts_per_tok * m.expert_params() * Lm * moe_tokens / par.moe_group / moe_fp8;
  const double moe_m = Lm * m.n_routed_experts * m.expert_params() * m.weight_bytes / par.moe_group * touch / hbm;
  t.moe_s = std::max(moe_c, moe_m);

  // Collectives over NVLink: per layer one after attention (all-reduce over attn_tp, or all-gather into the
  // MoE group when ranks are gathered) and one after the FFN/MoE (all-reduce or reduce-scatter). Ring
  // volume per GPU: 2 (n-1)/n x tokens x hidden x 2 B for an all-reduce; (n-1)/n x ... each for
  // all-gather and reduce-scatter.
  const double row = H * 2.0;
  double bytes = 0;
  int collectives = 0;
  if (par.attn_tp > 1) {
    const double n = par.attn_tp;
    bytes += L * 2 * (n - 1) / n * max_rank_tokens * row;
    collectives += m.num_hidden_layers;
  }
  if (par.moe_group > 1) {
    const double n = par.moe_group;
    if (par.dp_ranks > 1) {
      bytes += L * 2 * (n - 1) / n * total_tokens * row;  // all-gather before + reduce-scatter after
      collectives += 2 * m.num_hidden_layers;
    } else {
      bytes += L * 2 * (n - 1) / n * max_rank_tokens * row;  // all-reduce after the FFN/MoE
      collectives += m.num_hidden_layers;
    }
  }
  t.comm_s = bytes / link + collectives * lat;

  double gpu = t.attn_proj_s + t.attention_s + t.indexer_s + t.dense_s + t.moe_s + t.comm_s;
  if (c.spec_tokens > 0) {
    // MTP draft: spec_tokens passes of one extra decoder layer (+ LM head) on the decode rows.
    gpu += c.spec_tokens * (gpu - t.dense_s) / L + c.spec_tokens * t.dense_s * 0.5;
  }
  double eager = 0;
  if (!graph) {
    int batch_requests = 0;
    for (int r = 0; r < num_ranks; ++r) batch_requests = std::max(batch_requests, ranks[r].batch_requests);
    eager = cal.launch_overhead_ms * 1e-3 + cal.eager_per_request_us * 1e-6 * batch_requests;
  }
  gpu += eager;
  const double cpu = cal.cpu_step_ms * 1e-3 + cal.cpu_per_request_us * 1e-6 * running_requests;
  const double cpu_visible = c.overlap_scheduler ? std::max(0.0, cpu - gpu) : cpu;
  t.overhead_s = eager + cpu_visible;
  t.total_s = gpu + cpu_visible;
  return t;
}

}  // namespace servelab::sim

namespace servelab::sim {

const char* const kCalibrationFieldNames[kCalibrationFields] = {
    "gemm_efficiency",   "gemm_no_deepgemm_ratio", "attention_efficiency", "memory_efficiency",
    "comm_efficiency",   "collective_latency_us",  "cpu_step_ms",          "cpu_per_request_us",
    "launch_overhead_ms", "eager_per_request_us",  "mtp_acceptance",       "moe_tp_efficiency_ratio"};

std::vector<double> calibration_vector(const Calibration& c) {
  return {c.gemm_efficiency, c.gemm_no_deepgemm_ratio, c.attention_efficiency, c.memory_efficiency,
          c.comm_efficiency, c.collective_latency_us,  c.cpu_step_ms,          c.cpu_per_request_us,
          c.launch_overhead_ms, c.eager_per_request_us, c.mtp_acceptance, c.moe_tp_efficiency_ratio};
}

Calibration calibration_from_vector(const std::vector<double>& v) {
  Calibration c;
  double* f[] = {&c.gemm_efficiency, &c.gemm_no_deepgemm_ratio, &c.attention_efficiency, &c.memory_efficiency,
                 &c.comm_efficiency, &c.collective_latency_us,  &c.cpu_step_ms,          &c.cpu_per_request_us,
                 &c.launch_overhead_ms, &c.eager_per_request_us, &c.mtp_acceptance, &c.moe_tp_efficiency_ratio};
  for (std::size_t i = 0; i < std::size(f) && i < v.size(); ++i) *f[i] = v[i];
  return c;
}

}  // namespace servelab::sim
