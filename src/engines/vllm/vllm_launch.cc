// The vLLM module's resolution (V1 engine): layout, attention backend and kernels per GPU generation,
// start-up refusals, batch defaults by GPU memory class and version, CUDA graphs, async scheduling,
// speculative decoding, memory policy. Sources: vllm_defaults.h, engine-versions.md §1,
// gpu-kernel-facts.md §1.3, the reference study and the perflab corpus (their recorded failures).
#include <algorithm>
#include <cctype>

#include "servelab/common/text.h"

#include "engines/cli_parser.h"
#include "engines/launch_detail.h"
#include "engines/vllm/vllm_defaults.h"
#include "engines/vllm/vllm_detail.h"

namespace servelab::engines::detail {
namespace {

template <class T>
bool allowed(const std::vector<T>& list, const T& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

std::string python_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", '" : "'") + items[i] + "'";
  return out + "]";
}

AttentionKernel kernel_of_backend(const std::string& b, const hardware::ClusterSpec& cl) {
  if (b == "FLASH_ATTN") return is_hopper(cl) ? AttentionKernel::kFlashAttn3 : AttentionKernel::kFlashAttn2;
  if (b == "FLASHINFER") return is_blackwell(cl) ? AttentionKernel::kTrtllmGen : AttentionKernel::kFlashInfer;
  if (b == "TRITON_ATTN" || b == "TREE_ATTN") return AttentionKernel::kTriton;
  if (b == "XFORMERS") return AttentionKernel::kXformers;
  if (b == "FLEX_ATTENTION") return AttentionKernel::kFlexAttention;
  if (b == "FLASHMLA") return AttentionKernel::kFlashMla;
  if (b == "FLASHMLA_SPARSE") return AttentionKernel::kFlashMlaSparse;
  if (b == "CUTLASS_MLA") return AttentionKernel::kCutlassMla;
  if (b == "FLASHINFER_MLA") return AttentionKernel::kFlashInferMla;
  if (b == "FLASH_ATTN_MLA") return AttentionKernel::kFlashAttn3;
  return AttentionKernel::kTritonMla;  // TRITON_MLA
}

// The backend vLLM picks when none is forced (vllm/platforms/cuda.py get_attn_backend_cls; per GPU
// generation: engine-versions.md §1.3 [recalled]). "" = none valid.
std::string default_backend(const model::ModelSpec& m, const hardware::ClusterSpec& cl) {
  const int major = cl.gpu.compute_capability / 10;
  if (m.has_dsa()) return (major == 9 || major == 10) ? kVllmDefaults.attention_backend_sparse_mla.value : "";
  if (m.has_mla()) return is_hopper(cl) ? "FLASHMLA" : is_blackwell(cl) ? "CUTLASS_MLA" : "TRITON_MLA";
  if (m.has_sinks()) return is_hopper(cl) ? "FLASH_ATTN" : is_blackwell(cl) ? "FLASHINFER" : "TRITON_ATTN";
  return is_blackwell(cl) ? "FLASHINFER" : "FLASH_ATTN";
}

// Attention backend: the forced or default one, validated as vLLM does, with the corpus' refusals.
std::optional<LaunchFailure> vllm_choose_attention(ResolvedLaunch& r, const hardware::ClusterSpec& cl,
                                                   const EngineVersion& v) {
  LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  const bool forced = !c.attention_backend.empty();
  if (!forced) {
    c.attention_backend = default_backend(m, cl);
    if (c.attention_backend.empty())
      return fail(FailurePhase::kStartup, "vllm.attention_backend.none_valid",
                  "ValueError: No valid attention backend found for " + display_name(m) +
                      " (MLA, sparse) on " + sm_name(cl) +
                      ": FLASHMLA_SPARSE needs compute capability 9.x or 10.x",
                  false);
    r.notes.push_back("attention backend " + c.attention_backend + ": vLLM's default for " +
                      (m.has_dsa()     ? "MLA + DSA"
                       : m.has_mla()   ? "MLA"
                       : m.has_sinks() ? "attention sinks"
                                       : "GQA") +
                      " on " + sm_name(cl) + " (vllm/platforms/cuda.py; engine-versions.md §1.3)");
  } else {
    const VllmBackend* b = find_vllm_backend(c.attention_backend);
    if (!b)
      return fail(FailurePhase::kStartup, "vllm.attention_backend.unknown",
                  "vLLM does not know attention backend '" + c.attention_backend + "'", false);
    // gpt-oss sinks: the two backends the corpus tried (gpt-oss-120b__h100, vLLM 0.10.2).
    if (m.has_sinks() && c.attention_backend == "XFORMERS")
      return fail(FailurePhase::kStartup, "vllm.attention_backend.sinks_xformers",
                  "TypeError: XFormersImpl.__init__() got an unexpected keyword argument 'sinks'", true);
    if (m.has_sinks() && c.attention_backend == "FLASHINFER" && !is_blackwell(cl) &&
        v < EngineVersion::parse("0.11.0"))
      return fail(FailurePhase::kStartup, "vllm.attention_backend.sinks_flashinfer",
                  "RuntimeError: Worker failed with error 'FlashInfer backend currently does not support "
                  "attention sinks, please use trtllm on blackwell or flash attention on earlier GPUs.', "
                  "please check the stack trace above for the root cause",
                  true);
    const auto reasons =
        vllm_invalid_reasons(*b, c.kv_cache_dtype, c.is_explicit("--block-size") ? c.block_size : 0,
                             m.has_mla(), m.has_dsa(), cl.gpu.compute_capability / 10);
    if (!reasons.empty())
      // The AttentionBackendEnum wording is 0.13's (reference study); older releases word it otherwise.
      return fail(FailurePhase::kStartup, "vllm.attention_backend.invalid",
                  "ValueError: Selected backend AttentionBackendEnum." + c.attention_backend +
                      " is not valid for this configuration. Reason: " + python_list(reasons),
                  EngineVersion::parse("0.13.0") <= v);
    r.notes.push_back(
        "attention backend " + c.attention_backend + ": forced (" +
        (c.is_explicit("--attention-backend") ? "--attention-backend" : "VLLM_ATTENTION_BACKEND") + ")" +
        (m.has_sinks() && c.attention_backend == "FLASHINFER"
             ? "; FlashInfer with sinks after 0.10.2 is not recorded [unverified]"
             : ""));
  }
  r.execution.attention = r.execution.decode_attention = kernel_of_backend(c.attention_backend, cl);
  return std::nullopt;
}

// A boolean of vllm/envs.py read as bool(int(value)); false when unset. An invalid literal is refused by
// mxfp4_env_literals before any kernel choice reads one.
bool env_flag(const LaunchConfig& c, const char* name) {
  const auto it = c.env.find(name);
  if (it == c.env.end()) return false;
  const auto n = python_int(it->second);
  return n && *n != 0;
}

// vllm/envs.py reads VLLM_MXFP4_USE_MARLIN (maybe_convert_bool) and VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8
// as bool(int(value)) when get_mxfp4_backend first asks for them: an MXFP4 checkpoint with "yes" there stops
// at start-up with int()'s ValueError, as VLLM_USE_DEEP_GEMM does at parse time (vllm.cc). Other models never
// read them.
std::optional<LaunchFailure> mxfp4_env_literals(const ResolvedLaunch& r) {
  if (r.model.quantization.method != model::QuantMethod::kMxfp4) return std::nullopt;
  for (const char* name : {"VLLM_MXFP4_USE_MARLIN", "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8"})
    if (const auto it = r.config.env.find(name); it != r.config.env.end() && !python_int(it->second))
      return fail(FailurePhase::kStartup, "vllm.env.invalid_literal",
                  "ValueError: invalid literal for int() with base 10: " + python_repr(it->second), true);
  return std::nullopt;
}

// Dense GEMM and fused-MoE kernels (vllm/model_executor/layers/quantization/*; gpu-kernel-facts §1.3).
void vllm_choose_kernels(ResolvedLaunch& r, const hardware::ClusterSpec& cl, const EngineVersion& v) {
  using Q = model::QuantMethod;
  const model::ModelSpec& m = r.model;
  auto& e = r.execution;
  const bool dg = r.config.deep_gemm;
  switch (m.quantization.method) {
    case Q::kNone:
      e.gemm = GemmKernel::kCublasBf16;
      e.moe = MoeKernel::kTritonFused;
      break;
    case Q::kFp8PerTensor:
    case Q::kFp8Block: {
      const bool block = m.quantization.method == Q::kFp8Block;
      if (!has_fp8_tensor_cores(cl)) {
        e.gemm = GemmKernel::kMarlinW8A16;
        e.moe = MoeKernel::kMarlinMoe;
        r.notes.push_back("FP8 weights on " + sm_name(cl) +
                          " (no FP8 tensor cores): FP8-Marlin W8A16, weights dequantised in the GEMM "
                          "(vLLM fp8.py use_marlin below SM89) [recalled, vLLM FP8 docs]");
        break;
      }
      e.gemm = !block ? GemmKernel::kFp8Native
               : dg   ? GemmKernel::kFp8BlockDeepGemm
                      : GemmKernel::kFp8BlockCutlass;
      e.moe = block && dg && is_hopper(cl) ? MoeKernel::kDeepGemmGrouped : MoeKernel::kTritonFused;
      if (e.moe == MoeKernel::kDeepGemmGrouped) {
        // TritonOrDeepGemmExperts: DeepGEMM needs M >= 128 (its contiguous-layout M alignment), so decode
        // steps of fewer than 128 tokens run fused_moe Triton (_valid_deep_gemm_shape) [recalled].
        e.moe_small = MoeKernel::kTritonFused;
        e.moe_small_below = 128;
      }
      if (block)
        r.notes.push_back(std::string("FP8 block-scaled GEMMs: ") +
                          (dg ? "DeepGEMM" : "CUTLASS/Triton w8a8 block") + " (VLLM_USE_DEEP_GEMM " +
                          (dg ? "1" : "0") +
                          "; MoE TritonOrDeepGemmExperts: DeepGEMM "
                          "where its shape rules allow, Triton otherwise)");
      break;
    }
    case Q::kW8A8Int8:
      e.gemm = GemmKernel::kInt8Native;
      e.moe = MoeKernel::kTritonFused;
      break;
    case Q::kAwq:
    case Q::kGptq:
      e.gemm = GemmKernel::kMarlinW4A16;
      e.moe = MoeKernel::kMarlinMoe;
      r.notes.push_back("INT4 weight-only: awq_marlin / gptq_marlin W4A16 kernels (SM80+) [recalled]");
      break;
    case Q::kMxfp4: {
      e.gemm = GemmKernel::kCublasBf16;  // attention, router, embeddings and head stay BF16
      // get_mxfp4_backend picks triton_kernels on SM90 only where the separately packaged triton_kernels
      // is importable (has_triton_kernels()), Marlin otherwise ("Using Marlin backend"). The 0.10.x wheels
      // and images did not install it (only the 0.10.1+gptoss wheel did; later releases vendor it)
      // [recalled, unverified]. Corpus evidence (gpt-oss-120b, 1xH100, 0.10.2): the KV pool holds ~70k
      // tokens (#010: 32k-token requests decode two at a time, median ITL 7.3 ms, 4 of 99 steps carry a
      // prefill chunk; #011/#012: 15/29 requests decoding at 4k/2k context), which Marlin's padded
      // experts (+5 GiB) explain and triton_kernels' unpadded ones (258k tokens) do not.
      // VLLM_MXFP4_USE_MARLIN=1 takes Marlin wherever FlashInfer is not chosen first (SM100);
      // VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 on SM100 quantizes the activations to MXFP8 for the
      // TRT-LLM-gen kernel (get_mxfp4_backend, SM100_FI_MXFP4_MXFP8_TRTLLM) [recalled].
      const bool marlin_on_hopper = is_hopper(cl) && (v < EngineVersion::parse("0.11.0") ||
                                                      env_flag(r.config, "VLLM_MXFP4_USE_MARLIN"));
      e.moe = is_blackwell(cl)                     ? MoeKernel::kFlashInferTrtllm
              : is_hopper(cl) && !marlin_on_hopper ? MoeKernel::kTritonKernels
                                                   : MoeKernel::kMarlinMoe;
      e.moe_mxfp8_activations = is_blackwell(cl) && env_flag(r.config, "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8");
      if (e.moe == MoeKernel::kMarlinMoe) e.expert_pad_hidden = 256, e.expert_pad_intermediate = 128;
      r.notes.push_back(std::string("MXFP4 MoE: ") + moe_kernel_name(e.moe) +
                        (e.moe_mxfp8_activations ? " with MXFP8 activations" : "") + " on " + sm_name(cl) +
                        " (quantization/mxfp4.py get_mxfp4_backend: FlashInfer on SM100 (MXFP8 activations "
                        "under VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8), triton_kernels on SM90-SM10x where "
                        "installed (not in 0.10.x [recalled]) unless VLLM_MXFP4_USE_MARLIN, Marlin W4A16 "
                        "otherwise; vLLM issue #31085)" +
                        (e.moe == MoeKernel::kMarlinMoe
                             ? "; Marlin pads experts to hidden % 256, intermediate % 128"
                             : ""));
      break;
    }
    case Q::kNvfp4:
      e.gemm = is_blackwell(cl) ? GemmKernel::kFp4Native : GemmKernel::kMarlinW4A16;
      e.moe = is_blackwell(cl) ? MoeKernel::kFlashInferTrtllm : MoeKernel::kMarlinMoe;
      break;
  }
  e.attention_gemm = m.quantization.attention.dtype == model::DType::kBf16 ||
                             m.quantization.attention.dtype == model::DType::kFp16
                         ? GemmKernel::kCublasBf16
                         : e.gemm;
}

// The measured operator tables' rows (aic-ops kernel_source, shell wildcards) of the kernels this launch
// dispatches (ExecutionPolicy::*_kernel_sources). Up to 0.22 vLLM's tables name the MoE method they timed
// (vllm_fused_moe: fused_moe with its TritonOrDeepGemm dispatch; vllm_marlin_(int4_)moe; vllm_mxfp4_moe:
// the MXFP4 method, whichever backend it picks on that GPU; vllm_flashinfer_trtllm_moe_fp4); from 0.24
// they name method, backend and experts class (vllm_fp8moe_triton_tritonexperts,
// vllm_fp8moe_flashinfer_cutlass_flashinferexperts, ..._marlin_marlinexperts, ..._oaitritonmxfp4...,
// ..._flashinfer_trtllm_...). The MLA tables name vllm_flashmla and vllm_flash_attn_mla. Other kernels:
// no rows.
void vllm_measured_kernel_sources(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  auto& e = r.execution;
  using V = std::vector<std::string>;
  const bool mxfp4 = r.model.quantization.experts.dtype == model::DType::kMxfp4;
  switch (e.moe) {
    case MoeKernel::kTritonFused:
      e.moe_kernel_sources = V{"vllm_fused_moe", "vllm_*_triton_tritonexperts"};
      break;
    case MoeKernel::kDeepGemmGrouped:
      e.moe_kernel_sources = V{"vllm_*deepgemm*", "vllm_fused_moe", "vllm_*_triton_tritonexperts"};
      break;
    case MoeKernel::kCutlassGrouped:
      e.moe_kernel_sources = V{"vllm_*_flashinfer_cutlass_*"};
      break;
    case MoeKernel::kMarlinMoe:
      // vllm_mxfp4_moe is Marlin only below SM90, where the MXFP4 method has no other backend; on Hopper
      // it timed triton_kernels (H200 0.19.0's rows are within ~25% of 0.24.0's oaitritonmxfp4 rows, 1 to
      // 4096 tokens, gpt-oss-120b's shape), which a Marlin launch (VLLM_MXFP4_USE_MARLIN) does not run.
      e.moe_kernel_sources =
          mxfp4 ? (is_hopper(cl) || is_blackwell(cl)
                       ? V{"vllm_*mxfp4*_marlin_marlinexperts*"}
                       : V{"vllm_mxfp4_moe", "vllm_*mxfp4*_marlin_marlinexperts*"})
                : V{"vllm_marlin_moe", "vllm_marlin_int4_moe", "vllm_*_marlin_marlinexperts*"};
      break;
    case MoeKernel::kTritonKernels:
      e.moe_kernel_sources = V{"vllm_mxfp4_moe", "vllm_*_oaitritonmxfp4*"};
      break;
    case MoeKernel::kFlashInferTrtllm:
      // Not vllm_mxfp4_moe: that label names the MXFP4 method, and on Blackwell the method has several
      // backends (FlashInfer TRT-LLM-gen with BF16 or MXFP8 activations, CUTLASS, Marlin, Triton); B200's
      // 0.19.0 rows of it grow linearly with the tokens (about 28 ms a decode step of gpt-oss-120b at 16
      // tokens, 7x the roofline of the TRT-LLM-gen kernel), not the kernel this launch runs.
      e.moe_kernel_sources = mxfp4 ? V{"vllm_*mxfp4*_flashinfer_trtllm_*"}
                                   : V{"vllm_flashinfer_trtllm_moe_fp4", "vllm_*_flashinfer_trtllm_*"};
      break;
  }
  auto mla = [](AttentionKernel k) {
    if (k == AttentionKernel::kFlashMla) return V{"vllm_flashmla"};
    if (k == AttentionKernel::kFlashAttn3 || k == AttentionKernel::kFlashAttn2)
      return V{"vllm_flash_attn_mla"};
    return V{};  // CUTLASS MLA, FlashInfer MLA, Triton MLA: no vLLM table row
  };
  e.mla_prefill_kernel_sources = mla(e.attention);
  e.mla_decode_kernel_sources = mla(e.decode_attention);
}

// ParallelLayout (vllm/config/parallel.py; FusedMoEParallelConfig.make: without EP the experts are
// TP-sliced over tp * dp ranks, with --enable-expert-parallel spread whole over them).
std::optional<LaunchFailure> vllm_layout(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const LaunchConfig& c = r.config;
  ParallelLayout& l = r.layout;
  l.tp = c.tp, l.pp = c.pp, l.dp = c.dp, l.dcp = c.dcp;
  l.gpus = c.tp * c.pp * c.dp;
  l.dp_ranks = c.dp;
  l.attn_tp = l.dense_tp = c.tp;
  const bool moe = r.model.has_moe();
  const bool ep = moe && c.enable_expert_parallel;
  l.moe_tp = ep ? 1 : c.tp * c.dp;
  l.moe_ep = ep ? c.tp * c.dp : 1;
  l.ep = l.moe_ep;
  l.moe_gathered = moe && c.dp > 1;
  if (l.moe_gathered) {
    // Default all2all: "allgather_reducescatter" (the same data movement as 0.10's "naive" broadcast).
    const std::string b = c.moe_a2a_backend;
    l.a2a = MoeA2a::kAllgatherReduceScatter;
    if (ep && b == "deepep_high_throughput") l.a2a = MoeA2a::kDeepepNormal;
    if (ep && b == "deepep_low_latency") l.a2a = MoeA2a::kDeepepLowLatency;
    if (ep && b == "pplx") l.a2a = MoeA2a::kPplx;
    if (ep && b == "flashinfer_all2allv") l.a2a = MoeA2a::kFlashinferAllToAllV;
    r.notes.push_back(std::string("MoE tokens of the ") + std::to_string(c.dp) +
                      " DP ranks meet at the experts: " + moe_a2a_name(l.a2a) +
                      (!ep && !b.empty() && b != "allgather_reducescatter" && b != "naive"
                           ? " (" + b + " needs --enable-expert-parallel; the all-gather path is used)"
                           : "") +
                      " (vllm/distributed/device_communicators/all2all.py)");
  }
  l.a2a_decode = l.a2a;
  if (moe)
    r.notes.push_back("experts " +
                      std::string(ep ? "spread whole over " + std::to_string(l.moe_ep) + " GPUs (EP)"
                                     : "TP-sliced over " + std::to_string(l.moe_tp) + " GPUs") +
                      " (FusedMoEParallelConfig.make)");
  return place_layout(l, cl, c);
}

// CUDA-graph capture sizes (vllm/config/vllm.py _set_cudagraph_sizes; see vllm_defaults.h).
std::vector<int> vllm_graph_capture_sizes(const ResolvedLaunch& r, const EngineVersion& v, int spec_tokens) {
  const auto& d = kVllmDefaults;
  const LaunchConfig& c = r.config;
  const int budget = *c.max_num_batched_tokens;
  if (!c.cuda_graph_sizes.empty()) return c.cuda_graph_sizes;
  const bool formula = EngineVersion::parse(d.capture_size_formula_since.value) <= v;
  const bool gpt_oss =
      r.model.model_type == "gpt_oss" && EngineVersion::parse(d.gpt_oss_capture_since.value) <= v;
  int mx = c.cuda_graph_max_bs ? *c.cuda_graph_max_bs
           : gpt_oss           ? d.gpt_oss_capture_max.value
                               : vllm_default_capture_max(v, *c.max_num_seqs, spec_tokens, budget);
  std::vector<int> sizes = {1, 2, 4};
  const bool step16 = formula || (gpt_oss && !c.cuda_graph_max_bs);
  for (int s = 8; s <= mx && (!step16 || s < 256); s += 8) sizes.push_back(s);
  if (step16)
    for (int s = 256; s <= mx; s += 16) sizes.push_back(s);
  if (c.performance_mode == "interactivity")
    for (int s = 1; s <= d.interactivity_dense_capture_max.value; ++s) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<int> out;
  for (int s : sizes)
    if (s <= std::min(mx, budget)) out.push_back(s);
  return out;
}

}  // namespace

const VllmBackend* find_vllm_backend(const std::string& name) {
  static const std::vector<VllmBackend> kBackends = {
      {"FLASHMLA_SPARSE", true, true, {9, 10}, {64}, {"auto", "bfloat16", "fp8_ds_mla"}},
      {"FLASHMLA", true, false, {9, 10}, {64}, {"auto", "bfloat16", "fp8", "fp8_e4m3"}},
      // SM100-only kernels (reference study: "compute capability not supported" on H200).
      {"CUTLASS_MLA", true, false, {10}, {128}, {"auto", "bfloat16", "fp8", "fp8_e4m3"}},
      {"FLASHINFER_MLA", true, false, {10}, {32, 64}, {"auto", "bfloat16", "fp8", "fp8_e4m3"}},
      {"FLASH_ATTN_MLA", true, false, {9}, {}, {"auto", "bfloat16"}},
      {"TRITON_MLA", true, false, {}, {}, {}},
      {"FLASH_ATTN", false, false, {8, 9, 10, 12}, {}, {}},
      {"FLASHINFER", false, false, {}, {}, {}},
      {"TRITON_ATTN", false, false, {}, {}, {}},
      {"FLEX_ATTENTION", false, false, {}, {}, {}},
      {"TREE_ATTN", false, false, {}, {}, {}},
      {"XFORMERS", false, false, {}, {}, {}},
  };
  for (const auto& b : kBackends)
    if (name == b.name) return &b;
  return nullptr;
}

std::vector<std::string> vllm_invalid_reasons(const VllmBackend& b, const std::string& kv_cache_dtype,
                                              int explicit_block_size, bool mla, bool sparse, int cc_major) {
  std::vector<std::string> r;
  if (!allowed(b.kv_dtypes, kv_cache_dtype)) r.push_back("kv_cache_dtype not supported");
  // Before the engine fixes the block size it passes None (always accepted); an explicit --block-size
  // is validated. [unverified: block size at selection time]
  if (explicit_block_size > 0 && !allowed(b.block_sizes, explicit_block_size))
    r.push_back("block_size not supported");
  if (mla != b.mla) r.push_back(mla ? "MLA not supported" : "non-MLA not supported");
  if (sparse != b.sparse) r.push_back(sparse ? "sparse not supported" : "non-sparse not supported");
  if (!allowed(b.cc_majors, cc_major)) r.push_back("compute capability not supported");
  return r;
}

// Continued in vllm_launch_policy.cc (batch defaults, graphs, speculative, cache) through these.
std::optional<LaunchFailure> vllm_policies(ResolvedLaunch& r, const hardware::ClusterSpec& cl,
                                           const EngineVersion& v);
std::vector<int> vllm_capture_sizes(const ResolvedLaunch& r, const EngineVersion& v, int spec_tokens) {
  return vllm_graph_capture_sizes(r, v, spec_tokens);
}

namespace {

// Fp8MoEMethod.create_weights (model_executor/layers/quantization/fp8.py): block-scaled FP8 experts sliced
// by tensor parallelism must keep whole 128-wide blocks in each rank's slice of the intermediate dimension,
// else the server does not start; the Qwen3 FP8 model cards advise fewer TP ranks or
// --enable-expert-parallel (Qwen3-235B-A22B-FP8 at TP8: 1536 / 8 = 192) [recalled]. SGLang loads such
// slices (GLM-4.6-FP8, moe_intermediate_size 1536, ran at TP8 in the corpus).
std::optional<LaunchFailure> block_fp8_moe_slice(const ResolvedLaunch& r) {
  const int tp = r.layout.moe_tp;
  if (!r.model.quantization.experts.block_scaled || tp <= 1) return std::nullopt;
  for (const auto& g : r.model.layers) {
    const auto* moe = std::get_if<model::MoeFfn>(&g.layer.ffn);
    if (!moe || (moe->expert_intermediate % tp == 0 && moe->expert_intermediate / tp % 128 == 0)) continue;
    return fail(FailurePhase::kStartup, "vllm.fp8_block.moe_slice",
                "ValueError: The output_size of gate's and up's weight = " +
                    std::to_string(moe->expert_intermediate / tp) +
                    " is not divisible by weight quantization block_n = 128.",
                true);
  }
  return std::nullopt;
}

}  // namespace

Resolved resolve_vllm(const LaunchConfig& in, const model::ModelSpec& model,
                      const hardware::ClusterSpec& cl) {
  ResolvedLaunch r;
  r.config = in;
  const EngineVersion v = apply_version(r);
  if (auto f = hardware_check(cl)) return *f;
  if (auto f = range_checks(r.config)) return *f;
  if (auto f = unmodelled_flag_check(r.config)) return *f;
  auto quantized = engine_quantized(r.config, model);
  if (auto* f = std::get_if<LaunchFailure>(&quantized)) return *f;
  r.model = std::get<model::ModelSpec>(std::move(quantized));
  // vLLM validates the attention backend before it spawns workers, so a refused backend is reported
  // even when the GPU count would also be wrong (reference study).
  if (auto f = vllm_choose_attention(r, cl, v)) return *f;
  if (auto f = mxfp4_env_literals(r)) return *f;
  vllm_choose_kernels(r, cl, v);
  const auto too_few_gpus = vllm_layout(r, cl);  // reported after the config-only rules, as vLLM does
  if (auto f = vllm_policies(r, cl, v)) return *f;
  if (too_few_gpus) return *too_few_gpus;
  if (auto f = block_fp8_moe_slice(r)) return *f;
  if (auto f = apply_cpu_offload(r)) return *f;
  vllm_measured_kernel_sources(r, cl);
  return r;
}

// The request admission rule of launch.h check_request.
std::optional<std::string> check_request_vllm(const ResolvedLaunch& launch, int prompt_tokens,
                                              int max_tokens) {
  const int len = launch.max_model_len;
  const std::string p = std::to_string(prompt_tokens), m = std::to_string(max_tokens);
  // vllm/entrypoints/openai/serving_engine.py _validate_input (HTTP 400).
  if (prompt_tokens + max_tokens > len)
    return "This model's maximum context length is " + std::to_string(len) +
           " tokens. However, you requested " + std::to_string(prompt_tokens + max_tokens) + " tokens (" + p +
           " in the messages, " + m +
           " in the completion). Please reduce the length of the messages "
           "or completion.";
  return std::nullopt;
}

bool vllm_env_one_or_true(const LaunchConfig& c, const char* name) {
  const auto it = c.env.find(name);
  if (it == c.env.end()) return false;
  const std::string v = common::ascii_lower(common::trim(it->second));
  return v == "1" || v == "true";
}

// vLLM refuses at start-up (config/model.py verify_with_parallel_config).
std::optional<std::string> heads_indivisible_error_vllm(int heads, int tp) {
  return "ValueError: Total number of attention heads (" + std::to_string(heads) +
         ") must be divisible by tensor parallel size (" + std::to_string(tp) + ").";
}

}  // namespace servelab::engines::detail
