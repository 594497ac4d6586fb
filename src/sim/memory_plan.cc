#include "sim/memory_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "sim/knobs.h"

namespace servelab::sim {
namespace {

using engines::EngineKind;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;

bool is_fp8_name(const std::string& s) { return s.rfind("fp8", 0) == 0; }

// Bytes of the activations/workspaces the engine's profile run reserves (vLLM profile_run; TRT-LLM's
// estimate before sizing the KV pool). Per token entering the MoE: top_k expert rows of gate_up output
// (2*I_local bf16), activation (I_local bf16) and down output (hidden bf16), plus ~4 hidden-size bf16
// buffers (residual, normed input, gathered input, output). Tokens entering the MoE on one GPU are the
// step's token budget, times the DP ranks when the ranks' tokens are all-gathered before the experts
// (vLLM DP+EP allgather_reducescatter, SGLang DP-attention). The sampler adds fp32 logits for
// max_num_seqs rows (x3: logits, probs, logprobs). [derived; bounded by the study's vLLM -dp 8 OOM at
// 163840 and fit at 81920, see tests/sim/memory_plan_test.cc]
double activation_bytes(const ModelConfig& m, const Parallelism& par, const detail::EngineKnobs& k) {
  const double i_local = par.moe_ep ? m.moe_intermediate_size : double(m.moe_intermediate_size) / par.moe_group;
  const double per_row = 2 * i_local * 2 + i_local * 2 + m.hidden_size * 2.0;
  const double per_token = m.num_experts_per_tok * per_row + 4.0 * m.hidden_size * 2;
  const double moe_tokens = double(k.token_budget) * (par.dp_ranks > 1 ? par.dp_ranks : 1);
  const double sampler = 3.0 * 4.0 * m.vocab_size * std::min(k.max_num_seqs > 0 ? k.max_num_seqs : 1024, 1024);
  return moe_tokens * per_token + sampler;
}

}  // namespace

double kv_latent_bytes_per_layer(const ModelConfig& m, bool fp8) {
  if (!fp8) return 2.0 * (m.kv_lora_rank + m.qk_rope_head_dim);
  return m.kv_lora_rank + std::ceil(m.kv_lora_rank / 128.0) * 4 + 2.0 * m.qk_rope_head_dim;
}

double kv_indexer_bytes_per_layer(const ModelConfig& m) {
  if (!m.sparse()) return 0.0;
  return m.index_head_dim + std::ceil(m.index_head_dim / 128.0) * 4;
}

bool kv_cache_fp8(const engines::EngineConfig& e, const Hardware& gpu) {
  const std::string& d = e.kv_cache_dtype;
  if (is_fp8_name(d)) return true;
  if (d == "auto" || d.empty()) return e.kind == EngineKind::kSglang && gpu.compute_capability >= 100;
  return false;
}

Parallelism parallelism_of(const engines::EngineConfig& e) {
  Parallelism p;
  const int tp = std::max(1, e.tp), dp = std::max(1, e.dp), pp = std::max(1, e.pp);
  switch (e.kind) {
    case EngineKind::kVllm:
      p.gpus = tp * dp * pp;
      p.dp_ranks = dp;
      p.attn_tp = tp;
      p.dense_tp = tp;
      p.moe_group = tp * dp;
      p.moe_ep = e.enable_expert_parallel;
      break;
    case EngineKind::kSglang:
      p.gpus = tp * pp;
      p.dp_ranks = e.enable_dp_attention ? dp : 1;
      p.attn_tp = e.enable_dp_attention ? std::max(1, tp / dp) : tp;
      p.dense_tp = tp;
      p.moe_group = tp;
      p.moe_ep = e.ep > 1;
      if (!e.enable_dp_attention && dp > 1) {  // plain SGLang DP: dp independent replicas of tp GPUs
        p.gpus = tp * dp * pp;
        p.dp_ranks = dp;
      }
      break;
    case EngineKind::kTrtllm:
      p.gpus = tp * pp;
      p.dp_ranks = 1;
      p.attn_tp = tp;
      p.dense_tp = tp;
      p.moe_group = tp;
      p.moe_ep = e.ep > 1;
      break;
  }
  return p;
}

double sglang_auto_mem_fraction(const engines::EngineConfig& e, const Hardware& gpu) {
  const double gpu_mib = gpu.hbm_bytes / kMiB;
  const int tp = std::max(1, e.tp), pp = std::max(1, e.pp), dp = std::max(1, e.dp);
  const int chunk = e.chunked_prefill_size.value_or(gpu_mib > 90 * 1024 && gpu_mib < 160 * 1024 ? 8192 : 4096);
  const int cg_bs = e.cuda_graph_max_bs.value_or(tp >= 4 ? 512 : 256);
  double reserved = 512 + std::max(chunk, 2048) * 1.5 + cg_bs * 2.0 + tp * pp / 8.0 * 1024;
  if (e.enable_dp_attention) {
    reserved += cg_bs * dp * 3.0;
    if (cg_bs > 300) reserved += cg_bs * dp * 1.5;
  }
  if (gpu_mib > 60 * 1024) reserved = std::max(reserved, 10.0 * 1024);
  if (e.speculative) reserved += 2 * 1024;
  return (gpu_mib - reserved) / gpu_mib;
}

MemoryPlan plan_memory(const engines::EngineConfig& e, const Hardware& gpu, const ModelConfig& m) {
  const auto k = detail::resolve_knobs(e, gpu, m);
  MemoryPlan plan;
  plan.par = parallelism_of(e);
  const Parallelism& par = plan.par;
  plan.gpu_bytes = gpu.hbm_bytes;
  plan.block_size = k.block_size;
  plan.max_model_len = k.max_model_len;
  plan.memory_fraction = k.memory_fraction;

  // Weights per GPU (perf-facts §1 "Weight bytes"): FP8 linear layers at 1 B/param; embedding, LM head,
  // router gates in bf16. Attention (MLA + indexer) is split over attn_tp, dense parts over dense_tp,
  // routed experts over moe_group (whole experts under EP, TP slices otherwise: same bytes per GPU).
  const double wb = m.weight_bytes;
  const double attn = m.num_hidden_layers * (m.mla_params_per_layer() + m.indexer_params_per_layer()) * wb;
  const double routed = double(m.moe_layers()) * m.n_routed_experts * m.expert_params() * wb;
  const double shared = double(m.moe_layers()) * m.n_shared_experts * m.expert_params() * wb;
  const double dense = double(m.first_k_dense_replace) * m.dense_ffn_params() * wb;
  const double gates = double(m.moe_layers()) * m.gate_params() * 2;
  const double embed = 2.0 * m.embedding_params() * 2;
  plan.weight_bytes = attn / par.attn_tp + routed / par.moe_group + (shared + dense + embed) / par.dense_tp + gates;
  if (k.spec_tokens > 0 && m.num_nextn_predict_layers > 0) {
    // MTP layer: one MoE decoder layer + eh_proj (2*hidden -> hidden); shares embedding and head.
    const double layer_attn = (m.mla_params_per_layer() + m.indexer_params_per_layer()) * wb;
    const double layer_moe = double(m.n_routed_experts) * m.expert_params() * wb;
    const double layer_rest = (m.n_shared_experts * m.expert_params() + 2.0 * m.hidden_size * m.hidden_size) * wb;
    plan.weight_bytes += m.num_nextn_predict_layers *
                         (layer_attn / par.attn_tp + layer_moe / par.moe_group + layer_rest / par.dense_tp);
  }

  plan.kv_latent_bytes = kv_latent_bytes_per_layer(m, k.kv_fp8);
  const int kv_layers = m.num_hidden_layers + (k.spec_tokens > 0 ? m.num_nextn_predict_layers : 0);
  plan.kv_bytes_per_token = kv_layers * (plan.kv_latent_bytes + kv_indexer_bytes_per_layer(m));

  switch (e.kind) {
    case EngineKind::kVllm: {
      // vLLM: gpu_memory_utilization x total - weights - profiled peak activations - non-torch memory
      // (NCCL buffers ~392 MB at 8 GPUs, cuBLAS/DeepGEMM workspaces; aiconfigurator other_mem 3.5 GB
      // includes the CUDA context that vLLM's non-torch accounting sees as well). Use 2 GiB.
      plan.activation_bytes = activation_bytes(m, par, k);
      plan.reserved_bytes = 2.0 * kGiB;
      plan.kv_budget_bytes =
          k.memory_fraction * gpu.hbm_bytes - plan.weight_bytes - plan.activation_bytes - plan.reserved_bytes;
      break;
    }
    case EngineKind::kSglang: {
      // SGLang: mem_fraction_static x total covers weights + KV pool; the rest is its reserve.
      plan.activation_bytes = 0;
      plan.reserved_bytes = (1.0 - k.memory_fraction) * gpu.hbm_bytes;
      plan.kv_budget_bytes = k.memory_fraction * gpu.hbm_bytes - plan.weight_bytes;
      break;
    }
    case EngineKind::kTrtllm: {
      // TensorRT-LLM: kv_cache_free_gpu_memory_fraction of the memory free after weights, activations
      // and the runtime's buffers (CUDA context, NCCL, graphs: 3.5 GB, aiconfigurator other_mem).
      plan.activation_bytes = activation_bytes(m, par, k);
      plan.reserved_bytes = 3.5e9;
      const double free_bytes = gpu.hbm_bytes - plan.weight_bytes - plan.activation_bytes - plan.reserved_bytes;
      plan.kv_budget_bytes = k.memory_fraction * free_bytes;
      break;
    }
  }
  const double blocks = std::floor(std::max(0.0, plan.kv_budget_bytes) / (plan.kv_bytes_per_token * k.block_size));
  plan.kv_tokens_per_rank = static_cast<long long>(blocks) * k.block_size;

  const double need = plan.kv_bytes_per_token * k.max_model_len;
  if (plan.kv_budget_bytes <= 0) {
    plan.fits = false;
    plan.failure = fmt::format(
        "CUDA out of memory: weights need {:.2f} GiB per GPU, leaving no memory for the KV cache "
        "({:.2f} GiB x {:.3f} memory fraction)",
        plan.weight_bytes / kGiB, gpu.hbm_bytes / kGiB, k.memory_fraction);
  } else if (e.kind == EngineKind::kVllm && plan.kv_budget_bytes < need) {
    // vLLM kv_cache_utils.check_enough_kv_cache_memory message.
    const long long est = static_cast<long long>(plan.kv_budget_bytes / plan.kv_bytes_per_token) /
                          k.block_size * k.block_size;
    plan.fits = false;
    plan.failure = fmt::format(
        "ValueError: To serve at least one request with the models's max seq len ({}), ({:.2f} GiB KV cache "
        "is needed, which is larger than the available KV cache memory ({:.2f} GiB). Based on the available "
        "memory, the estimated maximum model length is {}. Try increasing `gpu_memory_utilization` or "
        "decreasing `max_model_len` when initializing the engine.",
        k.max_model_len, need / kGiB, plan.kv_budget_bytes / kGiB, est);
  } else if (plan.kv_tokens_per_rank < k.block_size) {
    plan.fits = false;
    plan.failure = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.";
  }
  return plan;
}

namespace detail {

EngineKnobs resolve_knobs(const engines::EngineConfig& e, const Hardware& gpu, const ModelConfig& m) {
  EngineKnobs k;
  k.kind = e.kind;
  k.max_model_len = e.max_model_len.value_or(m.max_position_embeddings);
  k.block_size = m.sparse() ? 64 : (e.block_size > 0 ? e.block_size : (e.kind == EngineKind::kSglang ? 1 : 64));
  k.kv_fp8 = kv_cache_fp8(e, gpu);
  k.deep_gemm = e.deep_gemm;
  if (e.speculative) {
    const auto& s = *e.speculative;
    k.spec_tokens = s.num_speculative_tokens > 0 ? s.num_speculative_tokens
                    : s.num_draft_tokens > 1     ? s.num_draft_tokens - 1
                    : s.num_steps > 0            ? s.num_steps
                                                 : 1;
  }
  const bool big_gpu = gpu.hbm_bytes >= 70.0 * kGiB;
  const int dp = std::max(1, e.dp);
  switch (e.kind) {
    case EngineKind::kVllm: {
      // vllm/engine/arg_utils.py get_batch_defaults (OPENAI_API_SERVER, >= 70 GiB, not A100): 8192 / 1024.
      k.max_num_seqs = e.max_num_seqs.value_or(big_gpu ? 1024 : 256);
      k.token_budget = e.max_num_batched_tokens.value_or(big_gpu ? 8192 : 2048);
      k.chunked_prefill = e.enable_chunked_prefill;
      k.memory_fraction = e.gpu_memory_fraction > 0 ? e.gpu_memory_fraction : 0.9;
      // vllm/config/vllm.py _set_cudagraph_sizes: min(max_num_seqs*(1+k)*2, 512), capped at the budget.
      k.cuda_graph_max_bs = e.enforce_eager ? 0
                            : e.cuda_graph_max_bs.value_or(std::min(
                                  {k.max_num_seqs * (1 + k.spec_tokens) * 2, 512, k.token_budget}));
      k.overlap_scheduler = false;  // vLLM 0.13: async scheduling is opt-in
      k.prefill_backend = "flashmla_sparse";
      k.decode_backend = k.kv_fp8 ? "flashmla_kv" : "flashmla_sparse";
      break;
    }
    case EngineKind::kSglang: {
      // server_args.py _handle_gpu_memory_settings (90-160 GB tier), _handle_data_parallelism.
      int chunk = e.chunked_prefill_size.value_or(big_gpu ? 8192 : 4096);
      if (e.enable_dp_attention && !e.chunked_prefill_size) chunk = std::max(1, chunk / dp);
      k.chunked_prefill = chunk > 0;
      k.token_budget = chunk > 0 ? chunk : 1 << 30;
      k.max_prefill_tokens = e.max_prefill_tokens.value_or(16384);
      k.cuda_graph_max_bs = e.cuda_graph_max_bs.value_or(e.tp >= 4 ? 512 : 256);
      k.memory_fraction = e.gpu_memory_fraction > 0 ? e.gpu_memory_fraction : sglang_auto_mem_fraction(e, gpu);
      k.conservativeness = e.schedule_conservativeness.value_or(1.0);
      if (e.enable_dp_attention && !e.schedule_conservativeness) k.conservativeness *= 0.3;
      // 48 with speculative decoding ("reset to 48"), a global budget divided by dp; else computed from
      // the KV pool in the scheduler (0 here).
      if (e.max_num_seqs) k.max_num_seqs = std::max(1, *e.max_num_seqs / (e.enable_dp_attention ? dp : 1));
      else if (k.spec_tokens > 0) k.max_num_seqs = std::max(1, 48 / (e.enable_dp_attention ? dp : 1));
      k.overlap_scheduler = k.spec_tokens == 0;  // overlap is disabled with speculative decoding (spec v1)
      const bool fp8 = k.kv_fp8;
      k.prefill_backend = !e.nsa_prefill_backend.empty() ? e.nsa_prefill_backend : "flashmla_sparse";
      k.decode_backend = !e.nsa_decode_backend.empty() ? e.nsa_decode_backend : (fp8 ? "flashmla_kv" : "fa3");
      if (k.prefill_backend == "flashmla_auto") k.prefill_backend = "flashmla_sparse";
      break;
    }
    case EngineKind::kTrtllm: {
      // trtllm-serve: BuildConfig max_batch_size 2048 / max_num_tokens 8192, no chunked prefill,
      // kv_cache_free_gpu_memory_fraction 0.9, CUDA graphs up to batch 128 (llm_args.py).
      k.max_num_seqs = e.max_num_seqs.value_or(2048);
      k.token_budget = e.max_num_batched_tokens.value_or(8192);
      k.chunked_prefill = e.is_explicit("--enable_chunked_prefill") ? e.enable_chunked_prefill : false;
      k.memory_fraction = e.gpu_memory_fraction > 0 ? e.gpu_memory_fraction : 0.9;
      k.cuda_graph_max_bs = e.cuda_graph_max_bs.value_or(128);
      k.overlap_scheduler = true;
      k.prefill_backend = "trtllm";
      k.decode_backend = "trtllm";
      break;
    }
  }
  return k;
}

}  // namespace detail
}  // namespace servelab::sim
