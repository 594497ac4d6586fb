// Legacy API (ModelTraits / HardwareTraits, kept until src/sim switches to resolve_launch): engine defaults
// that depend on the model and GPU (resolve_defaults) and start-up / run-time refusal rules
// (check_launch). The tables and formulas are the engine modules' (launch_detail.h); see launch.h. Sources:
// the per-engine defaults tables and the reference study's failures
// (../shared/reference/seed-measurements.json).
#include <algorithm>
#include <cmath>
#include <string>

#include "engines/engines.h"
#include "engines/launch_detail.h"
#include "engines/sglang_defaults.h"
#include "engines/trtllm_defaults.h"
#include "engines/vllm_defaults.h"

namespace servelab::engines {
namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

double gib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

std::string cc_name(const HardwareTraits& hw) {
  return "sm" + std::to_string(hw.compute_capability_major) + std::to_string(hw.compute_capability_minor);
}

using detail::fail;
using detail::find_vllm_backend;
using detail::range_checks;

std::string python_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

std::vector<std::string> vllm_invalid_reasons(const detail::VllmBackend& b, const EngineConfig& c,
                                              const ModelTraits& m, const HardwareTraits& hw) {
  return detail::vllm_invalid_reasons(b, c.kv_cache_dtype, c.is_explicit("--block-size") ? c.block_size : 0,
                                      m.mla, m.sparse_attention, hw.compute_capability_major);
}

std::optional<LaunchFailure> gpu_count_check(const EngineConfig& c, const HardwareTraits& hw) {
  if (c.gpus_used() > hw.gpu_count)
    return fail(FailurePhase::kStartup, "parallel.gpu_count",
                std::string(engine_kind_name(c.kind)) + " needs " + std::to_string(c.gpus_used()) +
                    " GPUs but the node has " + std::to_string(hw.gpu_count) + " " + hw.name,
                false);
  return std::nullopt;
}

std::optional<LaunchFailure> check_vllm(const EngineConfig& c, const ModelTraits& m,
                                        const HardwareTraits& hw) {
  // Attention backend selection (vllm/platforms/cuda.py get_attn_backend_cls, vLLM 0.13).
  if (!c.attention_backend.empty()) {
    const detail::VllmBackend* b = find_vllm_backend(c.attention_backend);
    if (!b)
      return fail(FailurePhase::kStartup, "vllm.attention_backend.unknown",
                  "vLLM does not know attention backend '" + c.attention_backend + "'", false);
    auto reasons = vllm_invalid_reasons(*b, c, m, hw);
    if (!reasons.empty())
      return fail(FailurePhase::kStartup, "vllm.attention_backend.invalid",
                  "ValueError: Selected backend AttentionBackendEnum." + c.attention_backend +
                      " is not valid for this configuration. Reason: " + python_list(reasons),
                  true);
  }
  // Automatic selection for sparse MLA: FLASHMLA_SPARSE is the only candidate; resolve_defaults leaves
  // the backend empty when the GPU's compute capability has none.
  if (c.attention_backend.empty() && m.mla && m.sparse_attention)
    return fail(FailurePhase::kStartup, "vllm.attention_backend.none_valid",
                "ValueError: No valid attention backend found for " + m.display_name + " (MLA, sparse) on " +
                    cc_name(hw) + ": FLASHMLA_SPARSE needs compute capability 9.x or 10.x",
                false);
  if (c.tp % c.dcp != 0)
    return fail(FailurePhase::kStartup, "vllm.dcp.divides_tp",
                "tensor parallel size " + std::to_string(c.tp) +
                    " is not divisible by decode context parallel size " + std::to_string(c.dcp),
                false);
  // -dcp needs the attention kernel's softmax LSE; FlashMLA sparse decode does not return it. The
  // server starts and dies on the first decode step (reference study, vLLM issue #27544).
  if (c.dcp > 1 && c.attention_backend == "FLASHMLA_SPARSE")
    return fail(
        FailurePhase::kRuntime, "vllm.dcp.sparse_flashmla",
        "runtime error: decode context parallelism (-dcp) needs the softmax log-sum-exp from the attention "
        "kernel, which the FlashMLA sparse decode backend used by " +
            m.display_name + " does not return (vLLM issue #27544)",
        true);
  if (c.speculative && (c.speculative->method == "mtp" || c.speculative->method == "deepseek_mtp") &&
      c.speculative->draft_model.empty() && m.num_nextn_predict_layers == 0)
    return fail(FailurePhase::kStartup, "vllm.speculative.no_mtp_head",
                "speculative method '" + c.speculative->method + "' needs MTP layers, and " + m.display_name +
                    " has none (num_nextn_predict_layers = 0)",
                false);
  if (c.max_model_len && *c.max_model_len > m.max_position_embeddings &&
      !(c.env.count("VLLM_ALLOW_LONG_MAX_MODEL_LEN") && c.env.at("VLLM_ALLOW_LONG_MAX_MODEL_LEN") == "1"))
    return fail(FailurePhase::kStartup, "vllm.max_model_len.too_long",
                "ValueError: User-specified max_model_len (" + std::to_string(*c.max_model_len) +
                    ") is greater than the derived max_model_len (max_position_embeddings=" +
                    std::to_string(m.max_position_embeddings) + ")",
                false);
  if (!c.enable_chunked_prefill && c.max_num_batched_tokens && c.max_model_len &&
      *c.max_num_batched_tokens < *c.max_model_len)
    return fail(FailurePhase::kStartup, "vllm.max_num_batched_tokens.below_max_model_len",
                "max_num_batched_tokens (" + std::to_string(*c.max_num_batched_tokens) +
                    ") is smaller than max_model_len (" + std::to_string(*c.max_model_len) +
                    ") with chunked prefill disabled",
                false);
  return std::nullopt;
}

std::optional<LaunchFailure> check_sglang(const EngineConfig& c, const ModelTraits& m,
                                          const HardwareTraits& hw) {
  // The NSA indexer's FP8 logits kernels come from DeepGEMM; without it the server does not start
  // (reference study, sglang deepgemm-off).
  if (!c.deep_gemm && m.sparse_attention)
    return fail(FailurePhase::kStartup, "sglang.deepgemm.required",
                "server fails to start when DeepGEMM is disabled (SGLANG_ENABLE_JIT_DEEPGEMM=0)", true);
  if (c.enable_dp_attention && c.tp % c.dp != 0)
    return fail(FailurePhase::kStartup, "sglang.dp_attention.divides_tp",
                "DP-attention needs tp_size divisible by dp_size (tp " + std::to_string(c.tp) + ", dp " +
                    std::to_string(c.dp) + ")",
                false);
  const std::pair<const char*, const std::string*> kernels[] = {
      {"--attention-backend", &c.attention_backend},
      {"--nsa-prefill-backend", &c.nsa_prefill_backend},
      {"--nsa-decode-backend", &c.nsa_decode_backend}};
  for (const auto& [flag, value] : kernels) {
    auto ccs = detail::sglang_backend_cc(*value);
    if (ccs && std::find(ccs->begin(), ccs->end(), hw.compute_capability_major) == ccs->end())
      return fail(
          FailurePhase::kStartup, "sglang.backend.compute_capability",
          std::string(flag) + " " + *value + " has no kernel for " + cc_name(hw) + " (" + hw.name + ")",
          false);
  }
  if (c.max_model_len && *c.max_model_len > m.max_position_embeddings &&
      !(c.env.count("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") &&
        c.env.at("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") == "1"))
    return fail(FailurePhase::kStartup, "sglang.context_length.too_long",
                "ValueError: User-specified context_length (" + std::to_string(*c.max_model_len) +
                    ") is greater than the derived context_length (" +
                    std::to_string(m.max_position_embeddings) + ")",
                false);
  return std::nullopt;
}

std::optional<LaunchFailure> check_trtllm(const EngineConfig& c, const ModelTraits& m,
                                          const HardwareTraits& hw) {
  if (c.ep > c.tp || c.tp % c.ep != 0)
    return fail(FailurePhase::kStartup, "trtllm.ep.divides_tp",
                "ep_size " + std::to_string(c.ep) + " must divide tp_size " + std::to_string(c.tp) +
                    " (MoE TP = tp_size / ep_size)",
                false);
  return std::nullopt;
}

}  // namespace

EngineConfig resolve_defaults(const EngineConfig& in, const ModelTraits& m, const HardwareTraits& hw) {
  EngineConfig c = in;
  if (!c.max_model_len) c.max_model_len = m.max_position_embeddings;
  if (c.kind == EngineKind::kVllm) {
    const auto& d = kVllmDefaults;
    bool large = gib(hw.gpu_memory_bytes) >= d.large_gpu_min_gib.value &&
                 lower(hw.name).find("a100") == std::string::npos;
    if (!c.max_num_seqs)
      c.max_num_seqs = large ? d.max_num_seqs_large_gpu.value : d.max_num_seqs_small_gpu.value;
    if (!c.max_num_batched_tokens) {
      int dflt = large ? d.max_num_batched_tokens_large_gpu.value : d.max_num_batched_tokens_small_gpu.value;
      // Without chunked prefill a whole prompt must fit one step. [unverified for 0.13]
      c.max_num_batched_tokens = c.enable_chunked_prefill ? dflt : std::max(dflt, *c.max_model_len);
    }
    if (m.mla && m.sparse_attention) {
      if (c.block_size == 0) c.block_size = d.block_size_sparse_mla.value;
      if (starts_with(c.kv_cache_dtype, "fp8")) c.kv_cache_dtype = d.kv_cache_dtype_fp8_sparse_mla.value;
      if (c.attention_backend.empty() &&
          (hw.compute_capability_major == 9 || hw.compute_capability_major == 10))
        c.attention_backend = d.attention_backend_sparse_mla.value;
    }
    if (c.block_size == 0) c.block_size = d.block_size.value;
    if (c.speculative && (c.speculative->method == "mtp" || c.speculative->method == "deepseek_mtp") &&
        c.speculative->num_speculative_tokens == 0)
      c.speculative->num_speculative_tokens = m.num_nextn_predict_layers;
    if (!c.cuda_graph_max_bs && !c.enforce_eager) {
      int k = c.speculative ? c.speculative->num_speculative_tokens : 0;
      c.cuda_graph_max_bs = detail::vllm_default_capture_max(
          EngineVersion::parse(c.engine_version.empty() ? d.version.value : c.engine_version),
          *c.max_num_seqs, k, *c.max_num_batched_tokens);
    }
  } else if (c.kind == EngineKind::kSglang) {
    const auto& d = kSglangDefaults;
    double gpu_gib = gib(hw.gpu_memory_bytes);
    const auto& tier = d.tiers[detail::sglang_tier_index(gpu_gib)];
    if (!c.chunked_prefill_size) c.chunked_prefill_size = tier.chunked_prefill_size;
    if (!c.cuda_graph_max_bs)
      c.cuda_graph_max_bs = c.tp < 4 ? tier.cuda_graph_max_bs_tp_lt4 : tier.cuda_graph_max_bs_tp_ge4;
    if (c.speculative) {
      auto& s = *c.speculative;
      if (s.num_steps == 0) s.num_steps = d.speculative_num_steps.value;
      if (s.eagle_topk == 0) s.eagle_topk = d.speculative_eagle_topk.value;
      if (s.num_draft_tokens == 0) s.num_draft_tokens = d.speculative_num_draft_tokens.value;
      if (s.eagle_topk == 1) s.num_draft_tokens = s.num_steps + 1;  // server_args.py: forced for topk 1
      s.num_speculative_tokens = s.num_draft_tokens - 1;
      if (!c.max_num_seqs) c.max_num_seqs = d.max_running_requests_speculative.value;
    }
    if (c.gpu_memory_fraction <= 0.0) {
      detail::SglangReserveInputs r;
      r.gpu_mib = static_cast<double>(hw.gpu_memory_bytes) / (1024.0 * 1024.0);
      r.chunked_prefill_size = *c.chunked_prefill_size;
      r.cuda_graph_max_bs = *c.cuda_graph_max_bs;
      r.tp = c.tp, r.pp = c.pp, r.dp = c.dp;
      r.dp_attention = c.enable_dp_attention;
      r.speculative_algorithm =
          c.speculative ? (c.speculative->method.empty() ? "EAGLE" : c.speculative->method) : "";
      c.gpu_memory_fraction = detail::sglang_mem_fraction_static(r);
    }
    if (c.enable_dp_attention) {
      if (*c.chunked_prefill_size > 0 && c.dp > 0) c.chunked_prefill_size = *c.chunked_prefill_size / c.dp;
      c.schedule_conservativeness = c.schedule_conservativeness.value_or(d.schedule_conservativeness.value) *
                                    d.dp_attention_conservativeness_factor.value;
    }
    c.enable_chunked_prefill = *c.chunked_prefill_size > 0;
    if (!c.max_prefill_tokens) c.max_prefill_tokens = d.max_prefill_tokens.value;
    if (m.mla && m.sparse_attention) {
      c.block_size = d.page_size_dsa.value;
      c.attention_backend = d.attention_backend_dsa.value;
      if (c.kv_cache_dtype == "auto")
        c.kv_cache_dtype = hw.compute_capability_major >= 10 ? d.kv_cache_dtype_dsa_sm100.value
                                                             : d.kv_cache_dtype_dsa_sm90.value;
      bool fp8 = starts_with(c.kv_cache_dtype, "fp8");
      if (c.nsa_prefill_backend.empty())
        c.nsa_prefill_backend = fp8 ? d.nsa_prefill_backend_fp8.value : d.nsa_prefill_backend_sm90_bf16.value;
      if (c.nsa_decode_backend.empty())
        c.nsa_decode_backend = fp8 ? d.nsa_decode_backend_fp8.value : d.nsa_decode_backend_sm90_bf16.value;
    }
    if (c.block_size == 0) c.block_size = d.page_size.value;
  } else {
    const auto& d = kTrtllmDefaults;
    if (!c.cuda_graph_max_bs && !c.enforce_eager) c.cuda_graph_max_bs = d.cuda_graph_max_batch_size.value;
  }
  return c;
}

std::optional<LaunchFailure> check_launch(const EngineConfig& config, const ModelTraits& model,
                                          const HardwareTraits& hardware) {
  EngineConfig c = resolve_defaults(config, model, hardware);
  if (auto f = range_checks(c)) return f;
  if (c.kind == EngineKind::kVllm) {
    // vLLM validates the attention backend before it spawns workers, so a refused backend is reported
    // even when the GPU count would also be wrong.
    if (auto f = check_vllm(c, model, hardware)) return f;
    return gpu_count_check(c, hardware);
  }
  if (auto f = gpu_count_check(c, hardware)) return f;
  if (c.kind == EngineKind::kSglang) return check_sglang(c, model, hardware);
  return check_trtllm(c, model, hardware);
}

}  // namespace servelab::engines
