// The SGLang module's resolution: layout (DP-attention, EP, DeepEP modes, dense TP), memory tier and
// mem_fraction_static, chunk // dp, max_running_requests, speculative defaults, attention backend per GPU
// generation and model (gpt-oss, DSA), kernels, CUDA graphs and torch.compile, overlap scheduler.
// Sources: sglang_defaults.h, engine-versions.md §2, gpu-kernel-facts.md §1.3, the reference study.
#include <algorithm>
#include <cctype>

#include "engines/launch_detail.h"
#include "engines/sglang/sglang_defaults.h"
#include "engines/sglang/sglang_detail.h"

namespace servelab::engines::detail {

std::optional<LaunchFailure> sglang_policies(ResolvedLaunch& r, const hardware::ClusterSpec& cl);

namespace {

bool starts_with(const std::string& s, const char* p) {
  return s.rfind(p, 0) == 0;
}

AttentionKernel kernel_of(const std::string& b, bool mla) {
  if (b == "fa3") return AttentionKernel::kFlashAttn3;
  if (b == "flashinfer") return mla ? AttentionKernel::kFlashInferMla : AttentionKernel::kFlashInfer;
  if (b == "triton") return mla ? AttentionKernel::kTritonMla : AttentionKernel::kTriton;
  if (b == "trtllm_mha" || b == "trtllm") return AttentionKernel::kTrtllmGen;
  if (b == "trtllm_mla") return AttentionKernel::kTrtllmMla;
  if (b == "cutlass_mla") return AttentionKernel::kCutlassMla;
  if (b == "flashmla" || b == "flashmla_kv") return AttentionKernel::kFlashMla;
  if (b == "flashmla_sparse" || b == "flashmla_auto") return AttentionKernel::kFlashMlaSparse;
  if (b == "flex_attention") return AttentionKernel::kFlexAttention;
  return AttentionKernel::kTriton;  // torch_native, fa4, wave, ... (no own efficiency table)
}

// DSA (DeepSeek-V3.2, GLM-5.x): page 64, nsa backends, KV dtype by generation (_set_default_nsa_*).
void dsa_defaults(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const auto& d = kSglangDefaults;
  LaunchConfig& c = r.config;
  c.block_size = d.page_size_dsa.value;
  c.attention_backend = d.attention_backend_dsa.value;
  if (c.kv_cache_dtype == "auto")
    c.kv_cache_dtype = is_blackwell(cl) ? d.kv_cache_dtype_dsa_sm100.value : d.kv_cache_dtype_dsa_sm90.value;
  const bool fp8 = starts_with(c.kv_cache_dtype, "fp8");
  if (c.nsa_prefill_backend.empty())
    c.nsa_prefill_backend = fp8 ? d.nsa_prefill_backend_fp8.value : d.nsa_prefill_backend_sm90_bf16.value;
  if (c.nsa_decode_backend.empty())
    c.nsa_decode_backend = fp8                ? d.nsa_decode_backend_fp8.value
                           : is_blackwell(cl) ? "trtllm"
                                              : d.nsa_decode_backend_sm90_bf16.value;
  r.execution.attention = kernel_of(c.nsa_prefill_backend, true);
  r.execution.decode_attention = kernel_of(c.nsa_decode_backend, true);
  if (c.nsa_prefill_backend == "fa3") r.execution.attention = AttentionKernel::kFlashAttn3;
  if (c.nsa_decode_backend == "fa3") r.execution.decode_attention = AttentionKernel::kFlashAttn3;
  r.notes.push_back("DSA: page 64, attention nsa (prefill " + c.nsa_prefill_backend + ", decode " +
                    c.nsa_decode_backend + "), KV " + c.kv_cache_dtype +
                    " (server_args.py _set_default_nsa_backends / _set_default_nsa_kv_cache_dtype)");
}

// Attention backend: forced (validated against the GPU) or SGLang's default per generation and model
// (docs attention_backend; server_args model-specific overrides for gpt-oss).
std::optional<LaunchFailure> sglang_choose_attention(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  const std::pair<const char*, const std::string*> kernels[] = {
      {"--attention-backend", &c.attention_backend},
      {"--nsa-prefill-backend", &c.nsa_prefill_backend},
      {"--nsa-decode-backend", &c.nsa_decode_backend}};
  const int major = cl.gpu.compute_capability / 10;
  for (const auto& [flag, value] : kernels) {
    auto ccs = sglang_backend_cc(*value);
    if (ccs && std::find(ccs->begin(), ccs->end(), major) == ccs->end())
      return fail(
          FailurePhase::kStartup, "sglang.backend.compute_capability",
          std::string(flag) + " " + *value + " has no kernel for " + sm_name(cl) + " (" + cl.gpu.name + ")",
          false);
  }
  if (m.has_dsa()) {
    dsa_defaults(r, cl);
    return std::nullopt;
  }
  const bool forced = !c.attention_backend.empty();
  if (!forced) {
    const bool gpt_oss = m.model_type == "gpt_oss";
    if (is_hopper(cl))
      c.attention_backend = "fa3";
    else if (is_blackwell(cl))
      c.attention_backend = m.has_mla() ? "trtllm_mla" : "trtllm_mha";
    else
      c.attention_backend = gpt_oss || m.has_mla() ? "triton" : "flashinfer";
    r.notes.push_back(
        "attention backend " + c.attention_backend + ": SGLang's default for " +
        (gpt_oss       ? "gpt-oss"
         : m.has_mla() ? "MLA"
                       : "MHA/GQA") +
        " on " + sm_name(cl) +
        " (docs attention_backend; server_args gpt-oss override; flashinfer assumed installed)");
  } else {
    r.notes.push_back("attention backend " + c.attention_backend + " (--attention-backend)");
  }
  r.execution.attention = r.execution.decode_attention = kernel_of(c.attention_backend, m.has_mla());
  return std::nullopt;
}

MoeKernel moe_runner(const std::string& b, MoeKernel fallback) {
  if (b == "deep_gemm") return MoeKernel::kDeepGemmGrouped;
  if (b == "triton") return MoeKernel::kTritonFused;
  if (b == "triton_kernel") return MoeKernel::kTritonKernels;
  if (b == "flashinfer_trtllm" || b == "flashinfer_mxfp4") return MoeKernel::kFlashInferTrtllm;
  if (b == "flashinfer_cutlass" || b == "cutlass" || b == "flashinfer_cutedsl")
    return MoeKernel::kCutlassGrouped;
  return fallback;
}

// The FP8 block-scaled linear (srt/layers/quantization/fp8_utils.py dispatch_w8a8_block_fp8_linear
// [recalled]): --fp8-gemm-backend when given ("auto" = the default order); else FlashInfer's groupwise GEMM
// when SGLANG_ENABLE_FLASHINFER_GEMM is true on SM100, then DeepGEMM when JIT DeepGEMM is on, then Triton.
GemmKernel block_fp8_gemm(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const LaunchConfig& c = r.config;
  const std::string& b = c.fp8_gemm_backend;
  std::string why;
  if (!b.empty() && b != "auto")
    why = b == "deep_gemm" ? "" : "--fp8-gemm-backend " + b;
  else if (auto it = c.env.find("SGLANG_ENABLE_FLASHINFER_GEMM");
           it != c.env.end() && is_blackwell(cl) && sglang_env_true(it->second, false))
    why = "FlashInfer's groupwise GEMM (SGLANG_ENABLE_FLASHINFER_GEMM)";
  else if (!c.deep_gemm)
    why = "Triton's w8a8 block GEMM (JIT DeepGEMM off)";
  if (why.empty()) return GemmKernel::kFp8BlockDeepGemm;
  r.notes.push_back("FP8 block-scaled linears: " + why + ", not DeepGEMM");
  return GemmKernel::kFp8BlockCutlass;
}

void sglang_choose_kernels(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  using Q = model::QuantMethod;
  const model::ModelSpec& m = r.model;
  auto& e = r.execution;
  const bool deepep = r.layout.a2a == MoeA2a::kDeepepNormal || r.layout.a2a == MoeA2a::kDeepepLowLatency;
  MoeKernel moe = MoeKernel::kTritonFused;
  switch (m.quantization.method) {
    case Q::kNone:
      e.gemm = GemmKernel::kCublasBf16;
      break;
    case Q::kFp8PerTensor:
    case Q::kFp8Block:
      if (!has_fp8_tensor_cores(cl)) {
        e.gemm = GemmKernel::kMarlinW8A16;
        moe = MoeKernel::kMarlinMoe;
        r.notes.push_back("FP8 weights on " + sm_name(cl) +
                          ": FP8 Marlin W8A16 fallback [unverified for SGLang]");
        break;
      }
      e.gemm = m.quantization.method == Q::kFp8PerTensor ? GemmKernel::kFp8Native : block_fp8_gemm(r, cl);
      moe = deepep && m.quantization.method == Q::kFp8Block ? MoeKernel::kDeepGemmGrouped
                                                            : MoeKernel::kTritonFused;
      break;
    case Q::kW8A8Int8:
      e.gemm = GemmKernel::kInt8Native;
      break;
    case Q::kAwq:
    case Q::kGptq:
      e.gemm = GemmKernel::kMarlinW4A16;
      moe = MoeKernel::kMarlinMoe;
      break;
    case Q::kMxfp4:
      e.gemm = GemmKernel::kCublasBf16;
      moe = is_blackwell(cl) ? MoeKernel::kFlashInferTrtllm : MoeKernel::kTritonKernels;
      r.notes.push_back(std::string("MXFP4 MoE: ") + moe_kernel_name(moe) +
                        " (server_args gpt-oss: flashinfer_mxfp4 on Blackwell, triton_kernel otherwise; bf16 "
                        "activations)");
      break;
    case Q::kNvfp4:
      e.gemm = is_blackwell(cl) ? GemmKernel::kFp4Native : GemmKernel::kMarlinW4A16;
      moe = is_blackwell(cl) ? MoeKernel::kFlashInferTrtllm : MoeKernel::kMarlinMoe;
      break;
  }
  e.moe = moe_runner(r.config.moe_runner_backend, moe);
  if (is_ampere(cl) && m.quantization.method == Q::kMxfp4 && e.moe == MoeKernel::kTritonKernels)
    r.unmodelled.push_back(
        "MXFP4 MoE on Ampere through triton_kernels (no FP4 or FP8 tensor cores on SM80: the MXFP4 weights "
        "are upcast in Triton): the twin has no efficiency figure for this path; the one corpus run of it "
        "(gpt-oss-20b, 1xA100, SGLang 0.5.3) measured 20x below the physics (TPOT 6.2 s)");
  if (!r.config.moe_runner_backend.empty() && r.config.moe_runner_backend != "auto")
    r.notes.push_back("MoE runner " + r.config.moe_runner_backend + " (--moe-runner-backend)");
  e.attention_gemm = m.quantization.attention.dtype == model::DType::kBf16 ||
                             m.quantization.attention.dtype == model::DType::kFp16
                         ? GemmKernel::kCublasBf16
                         : e.gemm;
}

// Layout: plain DP = replicas; DP-attention splits one TP group into dp attention ranks whose tokens meet
// at the MoE (and the dense FFN, at --moe-dense-tp-size); DeepEP sets ep = tp (server_args.py
// _handle_a2a_moe) and picks the all-to-all kernels per --deepep-mode.
std::optional<LaunchFailure> sglang_layout(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  LaunchConfig& c = r.config;
  ParallelLayout& l = r.layout;
  const bool moe = r.model.has_moe();
  if (c.moe_a2a_backend == "deepep") {
    if (c.ep != c.tp)
      r.notes.push_back("DeepEP MoE: the expert parallel size is adjusted to the tensor parallel size (" +
                        std::to_string(c.tp) + ") (server_args.py _handle_a2a_moe)");
    c.ep = c.tp;
  }
  l.tp = c.tp, l.pp = c.pp, l.dp = c.dp, l.ep = c.ep;
  if (c.enable_dp_attention) {
    if (c.tp % c.dp != 0)
      return fail(FailurePhase::kStartup, "sglang.dp_attention.divides_tp",
                  "DP-attention needs tp_size divisible by dp_size (tp " + std::to_string(c.tp) + ", dp " +
                      std::to_string(c.dp) + ")",
                  false);
    l.gpus = c.tp * c.pp;
    l.dp_ranks = c.dp;
    l.attn_tp = c.tp / c.dp;
    l.dense_tp = c.moe_dense_tp_size.value_or(c.tp);
    l.moe_gathered = moe;
    r.notes.push_back("DP-attention: " + std::to_string(c.dp) + " attention ranks of TP " +
                      std::to_string(l.attn_tp) + " in one TP-" + std::to_string(c.tp) +
                      " group; dense FFN TP " + std::to_string(l.dense_tp) +
                      (c.moe_dense_tp_size ? " (--moe-dense-tp-size)" : ""));
  } else {
    l.gpus = c.tp * c.pp * c.dp;
    l.dp_ranks = c.dp;
    l.attn_tp = l.dense_tp = c.tp;
  }
  if (moe && c.tp % c.ep != 0)
    return fail(FailurePhase::kStartup, "sglang.ep.divides_tp",
                "ep_size " + std::to_string(c.ep) + " must divide tp_size " + std::to_string(c.tp), false);
  l.moe_ep = moe ? c.ep : 1;
  l.moe_tp = moe ? c.tp / c.ep : c.tp;
  l.a2a = l.a2a_decode = l.moe_gathered ? MoeA2a::kAllgatherReduceScatter : MoeA2a::kNone;
  if (moe && c.moe_a2a_backend == "deepep") {
    const std::string mode = c.deepep_mode.empty() ? kSglangDefaults.deepep_mode.value : c.deepep_mode;
    l.a2a = mode == "low_latency" ? MoeA2a::kDeepepLowLatency : MoeA2a::kDeepepNormal;
    l.a2a_decode = mode == "normal" ? MoeA2a::kDeepepNormal : MoeA2a::kDeepepLowLatency;
    r.notes.push_back("DeepEP " + mode + ": prefill " + moe_a2a_name(l.a2a) + ", decode " +
                      moe_a2a_name(l.a2a_decode) +
                      (mode == "auto" ? " (auto: normal kernels for prefill, low-latency for decode)" : ""));
  }
  if (moe)
    r.notes.push_back("experts: EP " + std::to_string(l.moe_ep) + " x MoE-TP " + std::to_string(l.moe_tp) +
                      " (--ep-size; MoE TP = tp / ep)");
  return place_layout(l, cl, c);
}

}  // namespace

std::optional<std::vector<int>> sglang_backend_cc(const std::string& backend) {
  if (backend == "fa3") return std::vector<int>{9};
  if (backend == "trtllm_mla" || backend == "trtllm_mha" || backend == "cutlass_mla" || backend == "fa4" ||
      backend == "trtllm")
    return std::vector<int>{10};
  if (backend == "flashmla" || backend == "flashmla_sparse" || backend == "flashmla_kv" ||
      backend == "flashmla_auto")
    return std::vector<int>{9, 10};
  return std::nullopt;
}

// The measured operator tables' rows (aic-ops kernel_source, shell wildcards) of the kernels this launch
// dispatches (ExecutionPolicy::*_kernel_sources). SGLang's MoE tables time sglang_fused_moe_triton (BF16,
// FP8 block), sglang_marlin_moe (INT4) and, in some releases, the FlashInfer runners
// (sglang_flashinfer_trtllm_moe, sglang_*mxfp4*_moe, sglang_flashinfer_cutlass_moe); its MLA tables the
// backend the collector ran on that GPU (flash_attention on Hopper, trtllm_mla on Blackwell). DeepGEMM and
// triton_kernels MoE runners: no rows. Its GEMM tables time the default FP8 block-scaled linear, DeepGEMM:
// unnamed ("sglang") up to 0.5.10, sglang_deepgemm_gemm_nt_f8f8bf16 from 0.5.14 (the same latencies within
// a few %, H200 and B200); FlashInfer's, CUTLASS's and Triton's block-scaled GEMMs: no rows.
void sglang_measured_kernel_sources(ResolvedLaunch& r) {
  auto& e = r.execution;
  using V = std::vector<std::string>;
  if (e.gemm == GemmKernel::kFp8BlockDeepGemm) e.gemm_kernel_sources = V{"sglang_deepgemm*", "sglang"};
  if (e.gemm == GemmKernel::kFp8BlockCutlass) e.gemm_kernel_sources = V{};
  e.moe_kernel_sources =
      e.moe == MoeKernel::kTritonFused ? V{"sglang_fused_moe_triton"}
      : e.moe == MoeKernel::kMarlinMoe ? V{"sglang_marlin_moe"}
      : e.moe == MoeKernel::kFlashInferTrtllm
          ? V{"sglang_flashinfer_trtllm_moe", "sglang_*mxfp4*flashinfer*", "sglang_flashinfer_mxfp4_moe"}
      : e.moe == MoeKernel::kCutlassGrouped ? V{"sglang_flashinfer_cutlass_moe"}
                                            : V{};
  auto mla = [](AttentionKernel k) {
    if (k == AttentionKernel::kFlashAttn3) return V{"flash_attention"};
    if (k == AttentionKernel::kTrtllmMla) return V{"trtllm_mla"};
    return V{};
  };
  e.mla_prefill_kernel_sources = mla(e.attention);
  e.mla_decode_kernel_sources = mla(e.decode_attention);
}

Resolved resolve_sglang(const LaunchConfig& in, const model::ModelSpec& model,
                        const hardware::ClusterSpec& cl) {
  ResolvedLaunch r;
  r.config = in;
  const EngineVersion v = apply_version(r);
  if (auto f = hardware_check(cl)) return *f;
  // 0 is --mem-fraction-static unset (SGLang computes it); SGLang takes any --cuda-graph-max-bs.
  if (auto f = range_checks(r.config, {.zero_memory_fraction = true, .nonpositive_cuda_graph_max_bs = true}))
    return *f;
  if (auto f = unmodelled_flag_check(r.config)) return *f;
  auto quantized = engine_quantized(r.config, model);
  if (auto* f = std::get_if<LaunchFailure>(&quantized)) return *f;
  r.model = std::get<model::ModelSpec>(std::move(quantized));
  // The NSA indexer's FP8 logits kernels come from DeepGEMM; without it the server does not start
  // (reference study, sglang deepgemm-off).
  if (!r.config.deep_gemm && r.model.has_dsa())
    return fail(FailurePhase::kStartup, "sglang.deepgemm.required",
                "server fails to start when DeepGEMM is disabled (SGLANG_ENABLE_JIT_DEEPGEMM=0)", true);
  if (auto f = sglang_layout(r, cl)) return *f;
  if (auto f = sglang_choose_attention(r, cl)) return *f;
  sglang_choose_kernels(r, cl);
  if (auto f = sglang_policies(r, cl)) return *f;
  if (auto f = apply_cpu_offload(r)) return *f;
  sglang_measured_kernel_sources(r);
  return r;
}

// The request admission rule of launch.h check_request.
std::optional<std::string> check_request_sglang(const ResolvedLaunch& launch, int prompt_tokens,
                                                int max_tokens) {
  const int len = launch.max_model_len;
  const std::string p = std::to_string(prompt_tokens), m = std::to_string(max_tokens);
  // sglang/srt/managers/tokenizer_manager.py _validate_one_request [recalled for 0.5.x: both checks and
  // their text].
  if (prompt_tokens >= len)
    return "The input (" + p + " tokens) is longer than the model's context length (" + std::to_string(len) +
           " tokens).";
  if (prompt_tokens + max_tokens >= len)
    return "Requested token count exceeds the model's maximum context length of " + std::to_string(len) +
           " tokens. You requested a total of " + std::to_string(prompt_tokens + max_tokens) +
           " tokens: " + p + " tokens from the input messages and " + m +
           " tokens for the completion. Please reduce the number of tokens in the input messages or the "
           "completion to fit within the limit.";
  return std::nullopt;
}

}  // namespace servelab::engines::detail
