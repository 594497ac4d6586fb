// The vLLM module, second half: context and batch defaults by GPU memory class and version, KV cache
// layout, speculative decoding, CUDA graphs and async scheduling, scheduler, memory policy, routing,
// inert flags. Sources: vllm_defaults.h and engine-versions.md §1.
#include <algorithm>
#include <cctype>
#include <cmath>

#include "engines/launch_detail.h"
#include "engines/vllm/vllm_defaults.h"
#include "engines/vllm/vllm_detail.h"
#include "servelab/common/text.h"

namespace servelab::engines::detail {

std::vector<int> vllm_capture_sizes(const ResolvedLaunch& r, const EngineVersion& v, int spec_tokens);

namespace {

// Context length, the start-up rules that depend on it, and the batch defaults
// (EngineArgs.get_batch_defaults; --performance-mode throughput doubles them).
std::optional<LaunchFailure> batch_defaults(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const auto& d = kVllmDefaults;
  LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  const int derived = m.max_position_embeddings;
  if (c.max_model_len && *c.max_model_len > derived &&
      !vllm_env_one_or_true(c, "VLLM_ALLOW_LONG_MAX_MODEL_LEN"))
    return fail(FailurePhase::kStartup, "vllm.max_model_len.too_long",
                "ValueError: User-specified max_model_len (" + std::to_string(*c.max_model_len) +
                    ") is greater than the derived max_model_len (max_position_embeddings=" +
                    std::to_string(derived) + ")",
                false);
  if (!c.max_model_len) c.max_model_len = derived;
  r.max_model_len = *c.max_model_len;
  r.notes.push_back(
      "max_model_len " + std::to_string(r.max_model_len) +
      (c.is_explicit("--max-model-len") ? " (--max-model-len)" : " (the model's max_position_embeddings)"));
  const bool large = cl.gpu.memory_bytes / kGiB >= d.large_gpu_min_gib.value &&
                     common::ascii_lower(cl.gpu.name).find("a100") == std::string::npos;
  const int factor = c.performance_mode == "throughput" ? d.throughput_mode_factor.value : 1;
  const int seqs = (large ? d.max_num_seqs_large_gpu.value : d.max_num_seqs_small_gpu.value) * factor;
  int tokens =
      (large ? d.max_num_batched_tokens_large_gpu.value : d.max_num_batched_tokens_small_gpu.value) * factor;
  const std::string tier =
      std::string(large ? ">= 70 GiB and not an A100" : "< 70 GiB or an A100 (PR #17885)") +
      (factor > 1 ? ", x2 for --performance-mode throughput (PR #34936)" : "");
  if (!c.max_num_seqs) {
    c.max_num_seqs = seqs;
    r.notes.push_back("max_num_seqs " + std::to_string(seqs) + ": get_batch_defaults, " + cl.gpu.name + " " +
                      tier);
  } else {
    r.notes.push_back("max_num_seqs " + std::to_string(*c.max_num_seqs) + " (--max-num-seqs)");
  }
  if (!c.max_num_batched_tokens) {
    // Without chunked prefill a whole prompt must fit one step. [unverified for V1]
    if (!c.enable_chunked_prefill) tokens = std::max(tokens, r.max_model_len);
    c.max_num_batched_tokens = tokens;
    r.notes.push_back("max_num_batched_tokens " + std::to_string(tokens) + ": get_batch_defaults, " + tier);
  } else {
    r.notes.push_back("max_num_batched_tokens " + std::to_string(*c.max_num_batched_tokens) +
                      " (--max-num-batched-tokens)");
  }
  if (!c.enable_chunked_prefill && *c.max_num_batched_tokens < r.max_model_len)
    return fail(FailurePhase::kStartup, "vllm.max_num_batched_tokens.below_max_model_len",
                "max_num_batched_tokens (" + std::to_string(*c.max_num_batched_tokens) +
                    ") is smaller than max_model_len (" + std::to_string(r.max_model_len) +
                    ") with chunked prefill disabled",
                false);
  // SchedulerConfig._verify_args: every running sequence must fit one step's budget [recalled: vllm/config
  // (scheduler.py), unchanged from 0.2 to 0.13]. A budget set below the GPU tier's default max_num_seqs
  // (1024 on an H100) fails at start-up unless --max-num-seqs is lowered with it.
  if (*c.max_num_batched_tokens < *c.max_num_seqs)
    return fail(FailurePhase::kStartup, "vllm.max_num_batched_tokens.below_max_num_seqs",
                "ValueError: max_num_batched_tokens (" + std::to_string(*c.max_num_batched_tokens) +
                    ") must be greater than or equal to max_num_seqs (" + std::to_string(*c.max_num_seqs) +
                    ").",
                false);
  return std::nullopt;
}

// KV cache dtype, block size (FlashMLA 64, CUTLASS MLA 128; hybrid models raise it until an attention
// page holds a linear-attention state), prefix caching, sliding windows.
void cache_layout(ResolvedLaunch& r) {
  const auto& d = kVllmDefaults;
  LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  if (m.has_dsa() && c.kv_cache_dtype.rfind("fp8", 0) == 0) {
    c.kv_cache_dtype = d.kv_cache_dtype_fp8_sparse_mla.value;
    r.notes.push_back(std::string("kv_cache_dtype fp8_ds_mla: ") + d.kv_cache_dtype_fp8_sparse_mla.source);
  }
  r.kv_dtype = kv_dtype_of(c.kv_cache_dtype, m);
  if (c.block_size == 0) {
    c.block_size = c.attention_backend == "FLASHMLA_SPARSE" || c.attention_backend == "FLASHMLA" ? 64
                   : c.attention_backend == "CUTLASS_MLA"                                        ? 128
                                                          : d.block_size.value;
  }
  // CacheConfig: mamba_ssm_cache_dtype "auto" follows mamba_cache_dtype, whose "auto" is the model's dtype
  // [recalled: vllm/config/cache.py, MambaStateDtypeCalculator].
  const std::string& ssm = c.mamba_ssm_cache_dtype.empty() || c.mamba_ssm_cache_dtype == "auto"
                               ? c.mamba_cache_dtype
                               : c.mamba_ssm_cache_dtype;
  r.state_dtype = ssm == "float32" ? model::DType::kFp32 : ssm == "float16" ? model::DType::kFp16 : m.dtype;
  if (m.has_linear_attention()) {
    // HybridAttentionMambaModelConfig.verify_and_update_config: block = 16 * cdiv(state page, 16 * attention
    // page of one token) so that an attention page holds a linear-attention state.
    const model::Attention* full = nullptr;
    const model::Attention* linear = nullptr;
    for (const auto& g : m.layers) {
      if (!full && std::holds_alternative<model::GqaAttention>(g.layer.attention)) full = &g.layer.attention;
      if (!linear && std::holds_alternative<model::LinearAttention>(g.layer.attention))
        linear = &g.layer.attention;
    }
    if (full && linear) {
      const double per_token = model::kv_bytes_per_token(*full, c.tp, r.kv_dtype);
      const double state = model::state_bytes_per_request(*linear, c.tp, r.state_dtype);
      const int block = 16 * static_cast<int>(std::ceil(state / (16.0 * per_token)));
      if (c.block_size < block) {
        c.block_size = block;
        r.notes.push_back("block_size " + std::to_string(block) +
                          ": raised so that an attention page holds a linear-attention state "
                          "(HybridAttentionMambaModelConfig, vllm/model_executor/models/config.py)");
      }
      r.memory.state_page_padded = true;
    }
  }
  r.block_size = c.block_size;
  // Prefix caching: on by default, except for hybrid linear-attention models where it is opt-in
  // [recalled: "prefix caching is not supported for hybrid models" default].
  if (m.has_linear_attention() && !c.is_explicit("--enable-prefix-caching")) {
    c.enable_prefix_caching = false;
    r.notes.push_back("prefix caching off: hybrid linear-attention model, opt-in only [recalled]");
  }
  r.prefix_caching = c.enable_prefix_caching;
  r.memory.kv_window_only = m.has_sliding_window() && !c.disable_hybrid_kv_cache_manager;
  if (r.memory.kv_window_only)
    r.notes.push_back("sliding-window layers keep only their window (V1 hybrid KV cache manager)");
}

std::optional<LaunchFailure> vllm_speculative(ResolvedLaunch& r) {
  LaunchConfig& c = r.config;
  if (!c.speculative) return std::nullopt;
  auto& s = *c.speculative;
  const model::ModelSpec& m = r.model;
  const std::string method = common::ascii_lower(s.method);
  using M = SpeculativePolicy::Method;
  SpeculativePolicy p;
  const bool mtp = method == "mtp" || method.find("_mtp") != std::string::npos;
  if (mtp) {
    p.method = M::kMtp;
    if (s.draft_model.empty() && m.mtp_layers == 0)
      return fail(FailurePhase::kStartup, "vllm.speculative.no_mtp_head",
                  "speculative method '" + s.method + "' needs MTP layers, and " + display_name(m) +
                      " has none (num_nextn_predict_layers = 0)",
                  false);
    if (s.num_speculative_tokens == 0) s.num_speculative_tokens = m.mtp_layers;
  } else if (method == "eagle") {
    p.method = M::kEagle;
  } else if (method == "eagle3") {
    p.method = M::kEagle3;
  } else if (method == "ngram") {
    p.method = M::kNgram;
  } else if (!s.draft_model.empty()) {
    p.method = M::kDraftModel;
  } else {
    return fail(FailurePhase::kStartup, "vllm.speculative.method",
                "--speculative-config needs a method (mtp, eagle, eagle3, ngram) or a draft model", false);
  }
  if (s.num_speculative_tokens < 1)
    return fail(FailurePhase::kStartup, "vllm.speculative.num_tokens",
                s.num_speculative_tokens == 0
                    ? "--speculative-config: num_speculative_tokens must be given (>= 1) for method '" +
                          s.method + "'"
                    : "--speculative-config: num_speculative_tokens must be >= 1 (got " +
                          std::to_string(s.num_speculative_tokens) + ") for method '" + s.method + "'",
                false);
  if ((p.method == M::kEagle || p.method == M::kEagle3) && s.draft_model.empty())
    return fail(FailurePhase::kStartup, "vllm.speculative.draft_model",
                "--speculative-config: method '" + s.method + "' needs a draft model (\"model\")", false);
  p.num_speculative_tokens = s.num_speculative_tokens;
  p.num_steps = s.num_speculative_tokens;  // one draft forward per proposed token (chain)
  p.topk = 1;
  p.num_draft_tokens = s.num_speculative_tokens + 1;
  p.draft_model = s.draft_model;
  const auto row = acceptance_for(p.method, m, p.draft_model);
  p.acceptance = row.acceptance;
  p.acceptance_source = row.source;
  p.acceptance_verified = row.verified;
  r.speculative = p;
  r.notes.push_back("speculative decoding " + s.method + ", " + std::to_string(p.num_speculative_tokens) +
                    " tokens per step (chain); acceptance " + std::to_string(p.acceptance).substr(0, 4) +
                    ": " + row.source);
  return std::nullopt;
}

// CUDA graphs (cudagraph_mode by version, DeepEP high-throughput off), capture sizes, async scheduling.
void vllm_execution(ResolvedLaunch& r, const EngineVersion& v) {
  const auto& d = kVllmDefaults;
  LaunchConfig& c = r.config;
  auto& e = r.execution;
  const std::string mode = c.cudagraph_mode;
  if (c.enforce_eager || mode == "NONE") {
    e.graphs = GraphMode::kNone;
    r.notes.push_back(c.enforce_eager ? "no CUDA graphs (--enforce-eager)"
                                      : "no CUDA graphs (cudagraph_mode NONE)");
  } else if (!mode.empty()) {
    e.graphs = mode == "PIECEWISE"          ? GraphMode::kPiecewise
               : mode == "FULL"             ? GraphMode::kFull
               : mode == "FULL_DECODE_ONLY" ? GraphMode::kDecodeOnly
                                            : GraphMode::kFullAndPiecewise;
    r.notes.push_back("cudagraph_mode " + mode + " (--compilation-config)");
  } else {
    const bool full = EngineVersion::parse(d.full_and_piecewise_since.value) <= v;
    e.graphs = full ? GraphMode::kFullAndPiecewise : GraphMode::kPiecewise;
    r.notes.push_back(std::string("cudagraph_mode ") + (full ? "FULL_AND_PIECEWISE" : "PIECEWISE") +
                      ": the release's default (" + d.full_and_piecewise_since.source + ")");
  }
  if (r.layout.a2a == MoeA2a::kDeepepNormal && e.graphs != GraphMode::kNone) {
    e.graphs = GraphMode::kNone;
    r.notes.push_back(
        "no CUDA graphs: DeepEP high-throughput kernels are incompatible with CUDA graphs "
        "(vllm/platforms/cuda.py check_and_update_config)");
  }
  if (e.graphs != GraphMode::kNone) {
    const int k = r.speculative ? r.speculative->num_speculative_tokens : 0;
    e.graph_sizes = vllm_capture_sizes(r, v, k);
    e.graph_max_batch = e.graph_sizes.empty() ? 0 : e.graph_sizes.back();
    c.cuda_graph_max_bs = e.graph_max_batch;
    r.notes.push_back("CUDA graphs captured for " + std::to_string(e.graph_sizes.size()) + " sizes up to " +
                      std::to_string(e.graph_max_batch) + " tokens (_set_cudagraph_sizes" +
                      (r.model.model_type == "gpt_oss" ? "; gpt-oss raises the max to 992" : "") +
                      (c.performance_mode == "interactivity" ? "; interactivity adds 1..32" : "") + ")");
  } else {
    e.graph_max_batch = 0;
  }
  e.graph_padding = true;
  e.graph_batch_in_tokens = true;
  const bool flag = EngineVersion::parse(d.async_scheduling_flag_since.value) <= v;
  const bool default_on = EngineVersion::parse(d.async_scheduling_default_since.value) <= v;
  e.async_scheduling = flag && c.async_scheduling.value_or(default_on);
  r.notes.push_back(
      std::string("async scheduling ") + (e.async_scheduling ? "on" : "off") +
      (c.async_scheduling ? " (--" + std::string(*c.async_scheduling ? "" : "no-") + "async-scheduling)"
       : default_on       ? std::string(" (default since ") + d.async_scheduling_default_since.source + ")"
                          : " (opt-in in this release: PR #19970)"));
  if (r.speculative)
    r.speculative->overlap = e.async_scheduling && r.speculative->method != SpeculativePolicy::Method::kNgram;
  e.api_server_count = c.api_server_count.value_or(1);
  e.stream_interval = c.stream_interval.value_or(1);
  e.harmony_chat = r.model.model_type == "gpt_oss";
  // The API server's streamed chat reply through a reasoning parser (entrypoints/openai/serving_chat.py:
  // per output, the detokenised delta, the parser's extract_reasoning_streaming over the accumulated text
  // and token ids, a pydantic ChatCompletionStreamResponse and its JSON, one SSE write) is serial CPU per
  // decoding request per step in the API process, a pipeline stage beside the engine core [recalled
  // mechanism, unverified]. Its cost per chunk is fitted (sim Calibration::api_stream_request_us).
  if (!c.reasoning_parser.empty()) {
    e.api_stream_stage = true;
    r.notes.push_back(
        "--reasoning-parser: the API server's streamed chat reply costs serial CPU per decoding request per "
        "step (beside the engine core; / api-server-count x stream-interval; the time per chunk is fitted)");
  }
  if (e.harmony_chat)
    r.notes.push_back(
        "chat requests rendered by openai_harmony, not the Jinja chat template (serving_chat.py use_harmony "
        "for gpt_oss) [recalled]");
}

void vllm_scheduler_memory_routing(ResolvedLaunch& r) {
  const auto& d = kVllmDefaults;
  const LaunchConfig& c = r.config;
  auto& s = r.scheduler;
  s.kind = SchedulerPolicy::Kind::kVllmV1;
  s.max_num_seqs = *c.max_num_seqs;
  s.token_budget = *c.max_num_batched_tokens;
  s.chunked_prefill = c.enable_chunked_prefill;
  s.mixed_prefill_decode = true;
  s.pp_micro_batches = c.pp;
  if (c.pp > 1)
    r.notes.push_back("pipeline: " + std::to_string(c.pp) + " batches in flight (V1 batch queue = pp)");
  auto& mem = r.memory;
  mem.basis = MemoryPolicy::Basis::kOfTotal;
  mem.fraction = c.gpu_memory_fraction;
  mem.profile_activations = true;
  mem.profile_tokens = s.token_budget;
  mem.profile_sequences = s.max_num_seqs;
  const bool single = c.tp * c.pp * c.dp == 1;
  mem.reserved_bytes = single ? d.reserved_bytes_single_gpu.value : d.reserved_bytes.value;
  mem.mm_encoder = is_multimodal(r.model) && !c.language_model_only;
  r.notes.push_back("KV pool = " + std::to_string(mem.fraction).substr(0, 5) +
                    " x total memory - weights - profiled activations (" +
                    std::to_string(mem.profile_tokens) + " tokens) - " +
                    std::to_string(mem.reserved_bytes / kGiB).substr(0, 4) + " GiB non-torch [" +
                    (single ? d.reserved_bytes_single_gpu.source : d.reserved_bytes.source) + "]");
  mem.mm_encoder_shards = c.mm_encoder_tp_mode == "data" ? 1 : std::max(1, r.layout.attn_tp);
  if (is_multimodal(r.model))
    r.notes.push_back(
        mem.mm_encoder ? "vision encoder loaded (multimodal checkpoint; --language-model-only skips it), its "
                         "weights split over " +
                             std::to_string(mem.mm_encoder_shards) + " GPU(s) (--mm-encoder-tp-mode " +
                             c.mm_encoder_tp_mode + ")"
                       : "vision encoder skipped (--language-model-only)");
  r.routing = Routing::kLeastLoaded;
  if (c.dp > 1)
    r.notes.push_back(
        "DP routing: least loaded, score = waiting * 4 + running (vllm/v1/engine/core_client.py)");
}

}  // namespace

std::optional<LaunchFailure> vllm_policies(ResolvedLaunch& r, const hardware::ClusterSpec& cl,
                                           const EngineVersion& v) {
  LaunchConfig& c = r.config;
  if (c.tp % c.dcp != 0)
    return fail(FailurePhase::kStartup, "vllm.dcp.divides_tp",
                "tensor parallel size " + std::to_string(c.tp) +
                    " is not divisible by decode context parallel size " + std::to_string(c.dcp),
                false);
  // -dcp needs the attention kernel's softmax LSE; FlashMLA sparse decode does not return it. The server
  // starts and dies on the first decode step (reference study, vLLM issue #27544).
  if (c.dcp > 1 && c.attention_backend == "FLASHMLA_SPARSE")
    return fail(FailurePhase::kRuntime, "vllm.dcp.sparse_flashmla",
                "runtime error: decode context parallelism (-dcp) needs the softmax log-sum-exp from the "
                "attention kernel, which the FlashMLA sparse decode backend used by " +
                    display_name(r.model) + " does not return (vLLM issue #27544)",
                true);
  if (auto f = vllm_speculative(r)) return f;
  if (auto f = batch_defaults(r, cl)) return f;
  cache_layout(r);
  vllm_scheduler_memory_routing(r);
  // Without --max-model-len, recent releases lower the context to what the KV pool holds instead of
  // refusing to start [unverified release: the corpus's GLM-5.2 at its 1,048,576 default started on 0.24].
  r.memory.auto_fit_max_model_len = !c.is_explicit("--max-model-len") && EngineVersion::parse("0.17.0") <= v;
  r.memory.kv_pool_holds_one_request = true;
  vllm_execution(r, v);
  // Flags whose effect the resolution above models; everything else given explicitly is inert.
  // --config: the option file's keys are applied as the flags they spell (each judged on its own).
  static const std::vector<std::string> kEffective = {"--config",
                                                      "--model",
                                                      "--tensor-parallel-size",
                                                      "--pipeline-parallel-size",
                                                      "--data-parallel-size",
                                                      "--decode-context-parallel-size",
                                                      "--enable-expert-parallel",
                                                      "--all2all-backend",
                                                      "--max-model-len",
                                                      "--gpu-memory-utilization",
                                                      "--cpu-offload-gb",
                                                      "--kv-cache-dtype",
                                                      "--block-size",
                                                      "--max-num-seqs",
                                                      "--max-num-batched-tokens",
                                                      "--enable-chunked-prefill",
                                                      "--enable-prefix-caching",
                                                      "--enforce-eager",
                                                      "--quantization",
                                                      "--speculative-config",
                                                      "--compilation-config",
                                                      "--cudagraph-capture-sizes",
                                                      "--max-cudagraph-capture-size",
                                                      "--cuda-graph-sizes",
                                                      "--attention-backend",
                                                      "--async-scheduling",
                                                      "--performance-mode",
                                                      "--language-model-only",
                                                      "--mm-encoder-tp-mode",
                                                      "--stream-interval",
                                                      "--api-server-count",
                                                      "--reasoning-parser",
                                                      "--mamba-ssm-cache-dtype",
                                                      "--mamba-cache-dtype",
                                                      "--disable-hybrid-kv-cache-manager"};
  static const std::vector<std::string> kEnv = {
      "VLLM_USE_DEEP_GEMM",    "VLLM_ATTENTION_BACKEND",
      "VLLM_ALL2ALL_BACKEND",  "VLLM_ALLOW_LONG_MAX_MODEL_LEN",
      "VLLM_MXFP4_USE_MARLIN", "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8"};
  r.inert_flags = inert_flags_of(c, kEffective, kEnv);
  const bool mxfp4 = r.model.quantization.experts.dtype == model::DType::kMxfp4;
  if (c.env.count("VLLM_MXFP4_USE_MARLIN") && (!mxfp4 || !is_hopper(cl)))
    r.inert_flags.push_back(
        "VLLM_MXFP4_USE_MARLIN (MXFP4 experts on SM90 only: Marlin already below, "
        "FlashInfer first on SM100)");
  if (c.env.count("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8") && (!mxfp4 || !is_blackwell(cl)))
    r.inert_flags.push_back("VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8 (MXFP4 experts on SM100 only)");
  if (c.enable_expert_parallel && !r.model.has_moe())
    r.inert_flags.push_back("--enable-expert-parallel (no MoE)");
  return std::nullopt;
}

int vllm_default_capture_max(const EngineVersion& v, int max_num_seqs, int spec_tokens, int token_budget) {
  const auto& d = kVllmDefaults;
  // Before the max_cudagraph_capture_size rework: SchedulerConfig.cuda_graph_sizes unset ->
  // [min(max_num_seqs * 2, 512)] from 0.10 (docstring of vllm/config/scheduler.py [recalled]; 0.9 used
  // [512]).
  if (v < EngineVersion::parse(d.capture_size_formula_since.value)) {
    const int mx = v < EngineVersion::parse("0.10.0") ? d.fixed_capture_max.value
                                                      : std::min(max_num_seqs * 2, d.fixed_capture_max.value);
    return std::min(mx, token_budget);
  }
  const int size = std::min(max_num_seqs * (1 + spec_tokens) * d.max_cudagraph_capture_size_seq_factor.value,
                            d.max_cudagraph_capture_size_cap.value);
  return std::min(size, token_budget);
}

}  // namespace servelab::engines::detail
