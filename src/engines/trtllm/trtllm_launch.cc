// The TensorRT-LLM module's resolution (PyTorch backend, trtllm-serve): model and kernel support per GPU
// generation with the engine's own errors (perflab corpus), layout (TP/PP/EP, attention DP), batch
// defaults, CUDA graphs (max 128, padding off), overlap scheduler, chunked prefill off, memory policy.
// Sources: trtllm_defaults.h, engine-versions.md §3, gpu-kernel-facts.md §1.3.
#include <algorithm>
#include <cmath>

#include "engines/launch_detail.h"
#include "engines/trtllm/trtllm_defaults.h"
#include "engines/trtllm/trtllm_detail.h"

namespace servelab::engines::detail {
namespace {

// Model loading and kernel support, in the order the engine meets them (model class, weight loading,
// kernels at warm-up). Messages recorded by the perflab corpus are verbatim.
std::optional<LaunchFailure> support_rules(const ResolvedLaunch& r, const hardware::ClusterSpec& cl,
                                           const EngineVersion& v) {
  using Q = model::QuantMethod;
  const model::ModelSpec& m = r.model;
  if (m.architecture == "Glm4MoeForCausalLM" && !(EngineVersion::parse("1.2.0rc1") < v))
    return fail(FailurePhase::kStartup, "trtllm.model.glm4_moe",
                "TensorRT-LLM " + v.text + " does not support " + m.architecture +
                    " (GLM-4.5 / GLM-4.6): the studies record \"Not supported\" for 1.0.0 and 1.2.0rc1",
                false);
  // Recorded on 1.2.0rc1 only: later releases are not assumed to fail (issue 29 §3: one run is evidence
  // about its release, not every release), as the GLM rule above.
  if (m.quantization.method == Q::kAwq && m.architecture == "Qwen3ForCausalLM" &&
      !(EngineVersion::parse("1.2.0rc1") < v))
    return fail(FailurePhase::kStartup, "trtllm.awq.qwen3_weight_key", "KeyError: 'weight'",
                true);  // perflab qwen3-14b__a100#004 (1.2.0rc1) loading Qwen3-14B-AWQ
  const bool sm80 = cl.gpu.compute_capability / 10 == 8 && cl.gpu.compute_capability < 89;
  if (m.quantization.method == Q::kMxfp4 && sm80)
    return fail(FailurePhase::kStartup, "trtllm.mxfp4.sm80",
                "NotImplementedError: WFP4A16 MoE is unsupported on SM80.",
                true);  // perflab gpt-oss-20b__a100#002
  if (m.quantization.method == Q::kFp8Block && sm80)
    return fail(FailurePhase::kStartup, "trtllm.fp8_block.sm80",
                "RuntimeError: Unsupported SM version for FP8 block scaling GEMM",
                true);  // qwen3-14b__a100#003
  if ((m.quantization.method == Q::kFp8PerTensor || m.quantization.method == Q::kNvfp4) &&
      !has_fp8_tensor_cores(cl))
    return fail(FailurePhase::kStartup, "trtllm.fp8.unmodelled",
                std::string("TensorRT-LLM with ") + model::quant_method_name(m.quantization.method) +
                    " weights on " + sm_name(cl) +
                    " (no FP8 tensor cores): not modelled (the engine's behaviour is not recorded)",
                false);
  if (m.quantization.method == Q::kNvfp4 && !is_blackwell(cl))
    return fail(
        FailurePhase::kStartup, "trtllm.nvfp4.unmodelled",
        "TensorRT-LLM NVFP4 before Blackwell: not modelled (an opt-in Marlin path exists from PR #13476)",
        false);
  return std::nullopt;
}

void trtllm_choose_kernels(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  using Q = model::QuantMethod;
  const model::ModelSpec& m = r.model;
  auto& e = r.execution;
  e.attention = e.decode_attention = m.has_mla() ? AttentionKernel::kTrtllmMla : AttentionKernel::kTrtllmGen;
  if (m.has_dsa()) {
    e.dsa_dense_short_prefill = true;
    r.notes.push_back(
        "DSA prompts of at most index_topk tokens prefill as dense MHA without the indexer "
        "(DeepSeekSparseAttentionConfig.skip_indexer_for_short_seqs)");
    if (!is_blackwell(cl))
      r.unmodelled.push_back(
          "DeepSeek Sparse Attention through TensorRT-LLM before Blackwell: the twin has no figure for this "
          "path (TensorRT-LLM's DSA kernels targeted Blackwell first [recalled, unverified]); the corpus "
          "runs "
          "of it (DeepSeek-V3.2, 8xH200, 1.2.0rc5) decode 5-12x slower than the physics (mean TPOT 1.39 s at "
          "TP8, 0.56 s at TP8+EP8): fitted, they drive the release's Hopper kernel scale below its 0.4 "
          "bound, "
          "where its Qwen3-8B/32B runs put it at 0.44");
  }
  switch (m.quantization.method) {
    case Q::kNone:
      e.gemm = GemmKernel::kCublasBf16;
      break;
    case Q::kFp8PerTensor:
      e.gemm = GemmKernel::kFp8Native;
      break;
    case Q::kFp8Block:
      // FP8BlockScalesLinearMethod (_torch/modules/linear.py, 1.0-1.2): DeepGEMM's fp8_gemm_nt on
      // Blackwell only; on Hopper the activations go through fp8_quantize_1x128 and the GEMM through
      // torch.ops.trtllm.fp8_block_scaling_gemm, the engine's own block-scaled kernel [recalled]. The
      // corpus agrees: on qwen3-32b__h100 TensorRT-LLM 1.2's FP8 runs sit 1.3-1.5x further below the
      // DeepGEMM figure than its BF16 run and than SGLang's DeepGEMM FP8 run on the same GPU.
      e.gemm =
          r.config.deep_gemm && !is_hopper(cl) ? GemmKernel::kFp8BlockDeepGemm : GemmKernel::kFp8BlockTrtllm;
      if (is_hopper(cl))
        r.notes.push_back(
            "FP8 block-scaled linears on Hopper: fp8_block_scaling_gemm, not DeepGEMM "
            "(linear.py calls deep_gemm on SM100 only) [recalled]");
      break;
    case Q::kW8A8Int8:
      e.gemm = GemmKernel::kInt8Native;
      break;
    case Q::kAwq:
    case Q::kGptq:
      e.gemm = GemmKernel::kAwqTrtllm;
      break;
    case Q::kMxfp4:
      e.gemm = GemmKernel::kCublasBf16;
      break;
    case Q::kNvfp4:
      e.gemm = GemmKernel::kFp4Native;
      break;
  }
  // MoE backend (moe_config.backend): the one named; unset, the default picks TRTLLM-gen for MXFP4 on
  // Blackwell (MoE backend AUTO, engine-versions.md [src]; TRTLLM-gen is the MXFP4 kernel NVIDIA's gpt-oss
  // guide names there [recalled]) and CUTLASS otherwise (WFP4A16 mixed-input CUTLASS for MXFP4 on Hopper).
  const std::string& b = r.config.moe_runner_backend;
  const bool default_trtllm_gen = b.empty() && is_blackwell(cl) && m.quantization.method == Q::kMxfp4;
  e.moe = b == "DEEPGEMM"                       ? MoeKernel::kDeepGemmGrouped
          : b == "TRITON"                       ? MoeKernel::kTritonKernels
          : b == "TRTLLM" || default_trtllm_gen ? MoeKernel::kFlashInferTrtllm
                                                : MoeKernel::kCutlassGrouped;
  // The measured tables' rows of that MoE (aic-ops kernel_source; ExecutionPolicy::moe_kernel_sources):
  // the CUTLASS flows (moe_torch_flow, moe_torch_flow_cutlass) and DeepGEMM; the TRTLLM-gen and Triton
  // backends have none. The MLA tables name no kernel ("default"): every row.
  using V = std::vector<std::string>;
  e.moe_kernel_sources = e.moe == MoeKernel::kCutlassGrouped ? V{"moe_torch_flow", "moe_torch_flow_cutlass"}
                         : e.moe == MoeKernel::kDeepGemmGrouped ? V{"deepgemm"}
                                                                : V{};
  if (is_hopper(cl) && m.quantization.method == Q::kMxfp4 && e.moe == MoeKernel::kCutlassGrouped)
    r.unmodelled.push_back(
        "MXFP4 MoE on Hopper through TensorRT-LLM's default CUTLASS WFP4A16 backend: the twin has no "
        "efficiency figure for this mixed-input kernel (NVIDIA's gpt-oss guide points Hopper at "
        "moe_config.backend TRITON [recalled]); the one corpus run of it (gpt-oss-120b, 1xH100, 1.0.0) "
        "measured 4x below the physics");
  e.attention_gemm = m.quantization.attention.dtype == model::DType::kBf16 ||
                             m.quantization.attention.dtype == model::DType::kFp16
                         ? GemmKernel::kCublasBf16
                         : e.gemm;
  r.notes.push_back(std::string("kernels: TRTLLM attention, GEMM ") + gemm_kernel_name(e.gemm) + ", MoE " +
                    moe_kernel_name(e.moe) +
                    (!b.empty() ? " (moe_config.backend " + b + ")"
                     : default_trtllm_gen
                         ? std::string(" (moe_config.backend unset: TRTLLM-gen for MXFP4 on Blackwell)")
                         : std::string(" (moe_config.backend unset: CUTLASS)")));
}

// TP x PP, MoE TP = tp / ep (Mapping), attention DP: every TP rank its own attention rank.
std::optional<LaunchFailure> trtllm_layout(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const LaunchConfig& c = r.config;
  if (c.ep > c.tp || c.tp % c.ep != 0)
    return fail(FailurePhase::kStartup, "trtllm.ep.divides_tp",
                "ep_size " + std::to_string(c.ep) + " must divide tp_size " + std::to_string(c.tp) +
                    " (MoE TP = tp_size / ep_size)",
                false);
  ParallelLayout& l = r.layout;
  const bool moe = r.model.has_moe();
  l.tp = c.tp, l.pp = c.pp, l.ep = c.ep;
  l.gpus = c.tp * c.pp;
  l.dp = l.dp_ranks = c.enable_dp_attention ? c.tp : 1;
  l.attn_tp = c.enable_dp_attention ? 1 : c.tp;
  l.dense_tp = c.tp;  // [unverified: dense MLP TP under attention DP]
  l.moe_ep = moe ? c.ep : 1;
  l.moe_tp = moe ? c.tp / c.ep : c.tp;
  l.moe_gathered = moe && c.enable_dp_attention;
  l.a2a = l.a2a_decode = l.moe_gathered ? MoeA2a::kAllgatherReduceScatter : MoeA2a::kNone;
  if (c.enable_dp_attention)
    r.notes.push_back("attention DP: " + std::to_string(c.tp) + " attention ranks (enable_attention_dp)");
  if (moe)
    r.notes.push_back("experts: EP " + std::to_string(l.moe_ep) + " x MoE-TP " + std::to_string(l.moe_tp) +
                      " (Mapping: moe_tp = tp / ep; --ep_size default 1 " +
                      (kTrtllmDefaults.ep_size.verified ? "" : "[unverified]") + ")");
  return place_layout(l, cl, c);
}

// llmapi/llm_args.py _generate_cuda_graph_batch_sizes [recalled]: without padding 1..31, 32, 64, 128;
// with padding [1, 2, 4] + 8..128 step 8; then powers of two from 256 below max; max appended.
std::vector<int> trtllm_capture_sizes(int max_bs, bool padding) {
  std::vector<int> s;
  if (padding) {
    s = {1, 2, 4};
    for (int i = 1; i <= 16; ++i) s.push_back(8 * i);
  } else {
    for (int i = 1; i < 32; ++i) s.push_back(i);
    s.insert(s.end(), {32, 64, 128});
  }
  for (int p = 256; p < max_bs; p *= 2) s.push_back(p);
  std::vector<int> out;
  for (int x : s)
    if (x <= max_bs) out.push_back(x);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  if (out.empty() || out.back() != max_bs) out.push_back(max_bs);
  return out;
}

std::optional<LaunchFailure> trtllm_speculative(ResolvedLaunch& r) {
  LaunchConfig& c = r.config;
  if (!c.speculative) return std::nullopt;
  const auto& s = *c.speculative;
  using M = SpeculativePolicy::Method;
  SpeculativePolicy p;
  const std::string& t = s.method;
  // The PyTorch backend runs EAGLE-3 drafts under decoding_type Eagle (EagleDecodingConfig, with
  // speculative_model_dir and eagle3_one_model) as under Eagle3 [recalled: llmapi/llm_args.py].
  const bool mtp = t == "MTP", ngram = t == "NGram" || t == "NGRAM";
  const bool eagle3 = t == "Eagle" || t == "Eagle3" || t == "EAGLE3";
  if (!mtp && !eagle3 && !ngram) {
    // llmapi/llm_args.py DecodingBaseConfig subclasses' decoding_type names [recalled].
    static const char* const kUnmodelled[] = {"Medusa",       "Lookahead", "DraftTarget",
                                              "UserProvided", "SaveState", "AUTO"};
    if (std::none_of(std::begin(kUnmodelled), std::end(kUnmodelled), [&](const char* k) { return t == k; })) {
      std::string names = "MTP, Eagle, Eagle3, NGram";
      for (const char* k : kUnmodelled) names += std::string(", ") + k;
      return fail(FailurePhase::kStartup, "trtllm.speculative.unknown",
                  "speculative_config decoding_type " + (t.empty() ? std::string("(missing)") : t) +
                      " is not one of TensorRT-LLM's (" + names + ")",
                  false);
    }
    return fail(FailurePhase::kStartup, "trtllm.speculative.unmodelled",
                "speculative_config decoding_type " + t +
                    ": not modelled by the twin (modelled: MTP, Eagle / Eagle3, NGram)",
                false);
  }
  p.method = eagle3 ? M::kEagle3 : ngram ? M::kNgram : M::kMtp;
  if (p.method == M::kMtp && r.model.mtp_layers == 0)
    return fail(FailurePhase::kStartup, "trtllm.speculative.no_mtp_head",
                "speculative_config decoding_type " + t + " needs MTP layers, and " + display_name(r.model) +
                    " has none",
                false);
  p.num_speculative_tokens = std::max(1, s.num_speculative_tokens);
  p.num_steps = p.num_speculative_tokens;
  p.num_draft_tokens = p.num_speculative_tokens + 1;
  p.draft_model = s.draft_model;
  const auto row = acceptance_for(p.method, r.model, p.draft_model);
  p.acceptance = row.acceptance;
  p.acceptance_source = row.source;
  p.acceptance_verified = row.verified;
  p.overlap = !c.disable_overlap_schedule;  // [unverified: overlap with MTP in 1.x]
  r.speculative = p;
  r.notes.push_back("speculative " + t + ", " + std::to_string(p.num_speculative_tokens) +
                    " tokens: " + row.source);
  return std::nullopt;
}

void policies(ResolvedLaunch& r) {
  const auto& d = kTrtllmDefaults;
  LaunchConfig& c = r.config;
  if (!c.max_model_len) c.max_model_len = r.model.max_position_embeddings;
  r.max_model_len = *c.max_model_len;
  if (!c.max_num_seqs) c.max_num_seqs = d.max_batch_size.value;
  if (!c.max_num_batched_tokens) c.max_num_batched_tokens = d.max_num_tokens.value;
  r.notes.push_back("max_batch_size " + std::to_string(*c.max_num_seqs) + ", max_num_tokens " +
                    std::to_string(*c.max_num_batched_tokens) + " (" + d.max_batch_size.source +
                    (d.max_batch_size.verified ? ")" : ") [unverified]"));
  auto& s = r.scheduler;
  s.kind = SchedulerPolicy::Kind::kTrtllmInflight;
  s.max_num_seqs = *c.max_num_seqs;
  s.token_budget = *c.max_num_batched_tokens;
  s.chunked_prefill = c.enable_chunked_prefill;
  s.mixed_prefill_decode = true;
  s.pp_micro_batches = c.pp;
  if (c.enable_dp_attention && r.layout.dp > 1) {
    s.dp_balance = c.attention_dp_balance.value_or(d.attention_dp_balance.value);
    s.dp_balance_timeout_steps = c.attention_dp_timeout_iters.value_or(d.attention_dp_timeout_iters.value);
    s.dp_balance_batching_steps =
        c.attention_dp_batching_wait_iters.value_or(d.attention_dp_batching_wait_iters.value);
    if (s.dp_balance)
      r.notes.push_back(
          "attention-DP context balancing on (attention_dp_config.enable_balance): new contexts "
          "start only when every DP rank has one, or after " +
          std::to_string(s.dp_balance_timeout_steps) +
          " steps (timeout_iters), or at once when some rank decodes nothing; when every rank "
          "has one and every rank decodes, they start " +
          std::to_string(s.dp_balance_batching_steps) +
          " steps later (batching_wait_iters) [recalled: pyexecutor/py_executor.py]");
    else
      r.notes.push_back(
          std::string("attention-DP context balancing off (attention_dp_config.enable_balance; ") +
          d.attention_dp_balance.source + ")");
  } else if (c.attention_dp_balance.value_or(false)) {
    r.notes.push_back(
        "attention_dp_config.enable_balance has no effect without attention DP (enable_attention_dp)");
  }
  r.notes.push_back(std::string("chunked prefill ") +
                    (s.chunked_prefill ? "on (--enable_chunked_prefill)" : "off (default)") +
                    "; GUARANTEED_NO_EVICT capacity scheduler");
  auto& e = r.execution;
  if (c.enforce_eager) {
    e.graphs = GraphMode::kNone;
    r.notes.push_back("no CUDA graphs (cuda_graph_config: null)");
  } else {
    e.graphs = GraphMode::kDecodeOnly;
    e.graph_padding = c.cuda_graph_padding.value_or(d.cuda_graph_padding.value);
    // Where the size and padding came from: the launch's cuda_graph_config, else llm_args.py's defaults.
    const std::string size_source = !c.cuda_graph_sizes.empty() ? "cuda_graph_config.batch_sizes"
                                    : c.cuda_graph_max_bs       ? "cuda_graph_config.max_batch_size"
                                                                : d.cuda_graph_max_batch_size.source;
    const std::string padding_source =
        c.cuda_graph_padding ? "cuda_graph_config.enable_padding" : d.cuda_graph_padding.source;
    const int mx = c.cuda_graph_max_bs.value_or(d.cuda_graph_max_batch_size.value);
    e.graph_sizes =
        !c.cuda_graph_sizes.empty() ? c.cuda_graph_sizes : trtllm_capture_sizes(mx, e.graph_padding);
    e.graph_max_batch = e.graph_sizes.back();
    c.cuda_graph_max_bs = e.graph_max_batch;
    r.notes.push_back("CUDA graphs for decode-only batches up to " + std::to_string(e.graph_max_batch) +
                      " (" + size_source + "), padding " +
                      (e.graph_padding ? "on" : "off: only captured sizes replay") + " (" + padding_source +
                      ")");
  }
  e.async_scheduling = !c.disable_overlap_schedule && d.overlap_scheduler.value;
  r.notes.push_back(std::string("overlap scheduler ") +
                    (e.async_scheduling ? "on (" + std::string(d.overlap_scheduler.source) + ")"
                                        : "off (disable_overlap_scheduler)"));
  e.stream_interval = c.stream_interval.value_or(d.stream_interval.value);
  e.api_fifo =
      true;  // trtllm-serve's chat handler runs each request to its hand-off (ExecutionPolicy::api_fifo)
  auto& mem = r.memory;
  mem.basis = MemoryPolicy::Basis::kOfFree;
  mem.fraction = c.gpu_memory_fraction;
  mem.profile_activations = true;
  mem.profile_tokens = s.token_budget;
  mem.profile_sequences = s.max_num_seqs;
  mem.reserved_bytes = d.reserved_bytes.value;
  mem.kv_window_only = r.model.has_sliding_window();  // variable sliding-window KV pools [recalled]
  mem.mm_encoder = is_multimodal(r.model);
  r.notes.push_back(
      "KV pool = " + std::to_string(mem.fraction).substr(0, 4) +
      " x memory free after weights, activations and runtime buffers (kv_cache_free_gpu_memory_fraction)");
  if (c.block_size == 0) c.block_size = d.tokens_per_block.value;
  r.block_size = c.block_size;
  // kv_cache_config.dtype "auto" follows the checkpoint's quantization config (a ModelOpt checkpoint's
  // kv_cache_quant_algo FP8 gives an FP8 cache; llmapi KvCacheConfig / quant_config [recalled]).
  r.kv_dtype = (c.kv_cache_dtype.empty() || c.kv_cache_dtype == "auto") &&
                       r.model.quantization.kv_cache == model::DType::kFp8
                   ? model::DType::kFp8
                   : kv_dtype_of(c.kv_cache_dtype, r.model);
  r.state_dtype = r.model.dtype;
  r.prefix_caching = c.enable_prefix_caching;
  r.routing = c.enable_dp_attention ? Routing::kShortestQueue : Routing::kRoundRobin;
  if (c.enable_dp_attention)
    r.notes.push_back(
        "attention-DP request placement: each new request goes to the rank with the fewest active ones "
        "[recalled]");
}

}  // namespace

Resolved resolve_trtllm(const LaunchConfig& in, const model::ModelSpec& model,
                        const hardware::ClusterSpec& cl) {
  ResolvedLaunch r;
  r.config = in;
  const EngineVersion v = apply_version(r);
  if (auto f = hardware_check(cl)) return *f;
  if (auto f = range_checks(r.config)) return *f;
  if (!r.config.trtllm_backend.empty() && r.config.trtllm_backend != "pytorch")
    return fail(FailurePhase::kStartup, "trtllm.backend.unmodelled",
                "trtllm-serve --backend " + r.config.trtllm_backend +
                    ": only the PyTorch backend is modelled by the twin",
                false);
  r.model = model;  // trtllm-serve has no --quantization flag: the checkpoint's format is served
  if (auto f = trtllm_layout(r, cl)) return *f;
  if (auto f = support_rules(r, cl, v)) return *f;
  trtllm_choose_kernels(r, cl);
  if (auto f = trtllm_speculative(r)) return *f;
  policies(r);
  // TRTLLM_ENABLE_PDL=1: TensorRT-LLM's own kernels launch with programmatic dependent launch on SM90+
  // (tensorrt_llm/common/envUtils getEnvEnablePDL) [recalled].
  if (auto it = r.config.env.find("TRTLLM_ENABLE_PDL");
      it != r.config.env.end() && it->second == "1" && cl.gpu.compute_capability >= 90) {
    r.execution.programmatic_dependent_launch = true;
    r.notes.push_back(
        "programmatic dependent launch on (TRTLLM_ENABLE_PDL=1): no per-kernel launch gap in graphs");
  }
  static const std::vector<std::string> kEffective = {"--tp_size",
                                                      "--pp_size",
                                                      "--ep_size",
                                                      "--max_batch_size",
                                                      "--max_num_tokens",
                                                      "--max_seq_len",
                                                      "--kv_cache_free_gpu_memory_fraction",
                                                      "--enable_chunked_prefill",
                                                      "--extra_llm_api_options",
                                                      "--config",  // the newer spelling of the same file
                                                      "--gpus_per_node",  // placement: nodes of G GPUs
                                                      "--backend"};
  static const std::vector<std::string> kEnv = {"TRTLLM_DG_ENABLED", "TRTLLM_ENABLE_PDL"};
  r.inert_flags = inert_flags_of(r.config, kEffective, kEnv);
  if (r.config.env.count("TRTLLM_ENABLE_PDL") && !r.execution.programmatic_dependent_launch)
    r.inert_flags.push_back("TRTLLM_ENABLE_PDL (PDL needs SM90+ and the value 1)");
  return r;
}

// The request admission rule of launch.h check_request.
std::optional<std::string> check_request_trtllm(const ResolvedLaunch& launch, int prompt_tokens,
                                                int /*max_tokens*/) {
  const int len = launch.max_model_len;
  const std::string p = std::to_string(prompt_tokens);
  // tensorrt_llm/llmapi/llm.py _check_arguments (PyTorch backend): without chunked prefill a prompt
  // must fit max_num_tokens (prompt_len / cp_size is a Python float).
  if (!launch.scheduler.chunked_prefill && prompt_tokens > launch.scheduler.token_budget)
    return "The sum of prompt length (" + p + ".0), query length (0) should not exceed max_num_tokens (" +
           std::to_string(launch.scheduler.token_budget) + ")";
  if (prompt_tokens >= len)
    return "prompt of " + p + " tokens does not fit max_seq_len " + std::to_string(len) +
           " (servelab's text: the engine's message for this case is not recorded)";
  return std::nullopt;
}

}  // namespace servelab::engines::detail
