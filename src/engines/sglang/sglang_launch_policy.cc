// The SGLang module, second half: memory tier (chunk, CUDA-graph max batch), speculative defaults,
// mem_fraction_static, DP-attention adjustments, context length, CUDA graphs / torch.compile / overlap,
// scheduler, memory policy, routing, inert flags. Sources: sglang_defaults.h, engine-versions.md §2.
#include <algorithm>
#include <cmath>

#include "engines/launch_detail.h"
#include "engines/sglang/sglang_defaults.h"
#include "engines/sglang/sglang_detail.h"

namespace servelab::engines::detail {
namespace {

std::string fixed3(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f", x);
  return buf;
}

// Speculative decoding: NEXTN is EAGLE with the model's MTP head; auto_choose_speculative_params when
// the steps are unset; topk 1 forces draft tokens = steps + 1; max_running_requests 48.
std::optional<LaunchFailure> sglang_speculative(ResolvedLaunch& r) {
  const auto& d = kSglangDefaults;
  LaunchConfig& c = r.config;
  if (!c.speculative) return std::nullopt;
  auto& s = *c.speculative;
  const model::ModelSpec& m = r.model;
  using M = SpeculativePolicy::Method;
  SpeculativePolicy p;
  const std::string& a = s.method;
  p.method = a == "EAGLE3"                             ? M::kEagle3
             : a == "NGRAM"                            ? M::kNgram
             : a == "STANDALONE"                       ? M::kDraftModel
             : (a == "NEXTN" || s.draft_model.empty()) ? M::kMtp
                                                       : M::kEagle;
  if (p.method == M::kMtp && m.mtp_layers == 0)
    return fail(FailurePhase::kStartup, "sglang.speculative.no_mtp_head",
                "--speculative-algorithm " + a +
                    " without --speculative-draft-model-path needs the model's MTP "
                    "layers, and " +
                    display_name(m) + " has none",
                false);
  if ((p.method == M::kEagle3 || p.method == M::kDraftModel) && s.draft_model.empty())
    return fail(FailurePhase::kStartup, "sglang.speculative.draft_model",
                "--speculative-algorithm " + a + " needs --speculative-draft-model-path", false);
  if (s.num_steps == 0) {
    const bool deepseek_like = m.architecture == "DeepseekV3ForCausalLM" ||
                               m.architecture == "DeepseekV32ForCausalLM" ||
                               m.architecture == "DeepseekV2ForCausalLM" ||
                               m.architecture == "GptOssForCausalLM" || a == "STANDALONE" || m.mtp_layers > 0;
    s.num_steps = deepseek_like ? d.speculative_num_steps.value : d.speculative_default_llama[0].value;
    if (s.eagle_topk == 0)
      s.eagle_topk = deepseek_like ? d.speculative_eagle_topk.value : d.speculative_default_llama[1].value;
    if (s.num_draft_tokens == 0)
      s.num_draft_tokens =
          deepseek_like ? d.speculative_num_draft_tokens.value : d.speculative_default_llama[2].value;
    r.notes.push_back(
        "speculative steps/topk/draft " + std::to_string(s.num_steps) + "/" + std::to_string(s.eagle_topk) +
        "/" + std::to_string(s.num_draft_tokens) + ": auto_choose_speculative_params (" +
        (deepseek_like ? "DeepSeek-style MTP models" : "the Llama/fallback row") + ") [recalled]");
  }
  if (s.eagle_topk == 0) s.eagle_topk = 1;
  if (s.num_draft_tokens == 0) s.num_draft_tokens = s.num_steps + 1;
  if (s.eagle_topk == 1 && s.num_draft_tokens != s.num_steps + 1) {
    s.num_draft_tokens = s.num_steps + 1;  // server_args.py: forced for topk 1
    r.notes.push_back("speculative num_draft_tokens = steps + 1 for topk 1 (server_args.py)");
  }
  s.num_speculative_tokens = s.num_draft_tokens - 1;
  p.num_steps = s.num_steps;
  p.topk = s.eagle_topk;
  p.num_draft_tokens = s.num_draft_tokens;
  p.num_speculative_tokens = s.num_draft_tokens - 1;
  p.draft_model = s.draft_model;
  const auto row = acceptance_for(p.method, m, p.draft_model);
  p.acceptance = row.acceptance;
  p.acceptance_source = row.source;
  p.acceptance_verified = row.verified;
  p.overlap = false;  // spec v1 runs without the overlap scheduler (engine-versions.md §2.2)
  r.speculative = p;
  if (!c.max_num_seqs) {
    c.max_num_seqs = d.max_running_requests_speculative.value;
    r.notes.push_back(std::string("max_running_requests 48: ") + d.max_running_requests_speculative.source);
  }
  r.notes.push_back("speculative " + a + ": acceptance " + std::to_string(p.acceptance).substr(0, 4) + " (" +
                    row.source + ")");
  return std::nullopt;
}

// CUDA-graph capture list (cuda_graph_runner get_batch_sizes_to_capture; engine-versions.md §2.1).
std::vector<int> capture_list(int max_bs, bool spec) {
  std::vector<int> s;
  if (spec) {
    for (int i = 1; i <= 8; ++i) s.push_back(i);
    for (int i = 10; i <= 32; i += 2) s.push_back(i);
    for (int i = 40; i <= 64; i += 4) s.push_back(i);
    for (int i = 72; i <= 256; i += 8) s.push_back(i);
    for (int i = 272; i <= max_bs; i += 16) s.push_back(i);
  } else {
    s = {1, 2, 4, 8, 12};
    for (int i = 16; i <= 256; i += 8) s.push_back(i);
    for (int i = 272; i < 512; i += 16) s.push_back(i);
    for (int i = 512; i <= max_bs; i += 32) s.push_back(i);
  }
  std::vector<int> out;
  for (int x : s)
    if (x <= max_bs) out.push_back(x);
  return out;
}

// Memory tier, mem_fraction_static and the DP-attention adjustments (_handle_gpu_memory_settings, then
// _handle_data_parallelism).
void memory_settings(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  const auto& d = kSglangDefaults;
  LaunchConfig& c = r.config;
  const double gpu_gib = cl.gpu.memory_bytes / kGiB;
  const auto& tier = d.tiers[sglang_tier_index(gpu_gib)];
  if (!c.chunked_prefill_size) {
    c.chunked_prefill_size = tier.chunked_prefill_size;
    r.notes.push_back("chunked_prefill_size " + std::to_string(tier.chunked_prefill_size) +
                      ": memory tier of " + cl.gpu.name + " (" + tier.example +
                      ") (_handle_gpu_memory_settings, PR #10975)");
  } else {
    r.notes.push_back("chunked_prefill_size " + std::to_string(*c.chunked_prefill_size) +
                      " (--chunked-prefill-size)");
  }
  if (!c.cuda_graph_max_bs) {
    c.cuda_graph_max_bs = !c.cuda_graph_sizes.empty() ? c.cuda_graph_sizes.back()
                          : c.tp < 4                  ? tier.cuda_graph_max_bs_tp_lt4
                                                      : tier.cuda_graph_max_bs_tp_ge4;
    r.notes.push_back("cuda_graph_max_bs " + std::to_string(*c.cuda_graph_max_bs) + ": memory tier, tp " +
                      (c.tp < 4 ? "< 4" : ">= 4"));
  } else {
    r.notes.push_back("cuda_graph_max_bs " + std::to_string(*c.cuda_graph_max_bs) + " (--cuda-graph-max-bs)");
  }
  if (c.gpu_memory_fraction <= 0.0) {
    SglangReserveInputs in;
    in.gpu_mib = cl.gpu.memory_bytes / (1024.0 * 1024.0);
    in.chunked_prefill_size = *c.chunked_prefill_size;
    in.cuda_graph_max_bs = *c.cuda_graph_max_bs;
    in.tp = c.tp, in.pp = c.pp, in.dp = c.dp;
    in.dp_attention = c.enable_dp_attention;
    in.speculative_algorithm = c.speculative ? c.speculative->method : "";
    in.piecewise_sizes = 0;  // piecewise graphs are opt-in; their token list is not modelled [unverified]
    c.gpu_memory_fraction = sglang_mem_fraction_static(in);
    r.notes.push_back(
        "mem_fraction_static " + fixed3(c.gpu_memory_fraction) +
        ": (gpu - reserved) / gpu, reserved = 512 + 1.5 x max(chunk, 2048) + 2 x cuda_graph_max_bs + "
        "1024 x tp x pp / 8 (+ DP-attention and speculative terms, 10 GiB floor) "
        "(_handle_gpu_memory_settings)");
  } else {
    r.notes.push_back("mem_fraction_static " + fixed3(c.gpu_memory_fraction) + " (--mem-fraction-static)");
  }
  if (c.enable_dp_attention) {
    if (*c.chunked_prefill_size > 0) c.chunked_prefill_size = *c.chunked_prefill_size / c.dp;
    c.schedule_conservativeness = c.schedule_conservativeness.value_or(d.schedule_conservativeness.value) *
                                  d.dp_attention_conservativeness_factor.value;
    r.notes.push_back(
        "DP-attention: chunked_prefill_size // dp = " + std::to_string(*c.chunked_prefill_size) +
        ", schedule_conservativeness x 0.3 (_handle_data_parallelism)");
  }
  c.enable_chunked_prefill = *c.chunked_prefill_size > 0;
  if (!c.max_prefill_tokens) c.max_prefill_tokens = d.max_prefill_tokens.value;
  if (c.block_size == 0) c.block_size = d.page_size.value;
}

void sglang_execution(ResolvedLaunch& r) {
  const auto& d = kSglangDefaults;
  LaunchConfig& c = r.config;
  auto& e = r.execution;
  const bool deepep_normal =
      r.layout.a2a == MoeA2a::kDeepepNormal && r.layout.a2a_decode == MoeA2a::kDeepepNormal;
  if (c.enforce_eager || deepep_normal) {
    e.graphs = GraphMode::kNone;
    e.graph_max_batch = 0;
    r.notes.push_back(c.enforce_eager
                          ? "no CUDA graphs (--disable-cuda-graph)"
                          : "no CUDA graphs: \"Cuda graph is disabled because deepep_mode=`normal`\" "
                            "(server_args.py _handle_a2a_moe)");
  } else {
    e.graphs = GraphMode::kDecodeOnly;
    e.graph_sizes = !c.cuda_graph_sizes.empty()
                        ? c.cuda_graph_sizes
                        : capture_list(*c.cuda_graph_max_bs, r.speculative.has_value());
    e.graph_max_batch = e.graph_sizes.empty() ? 0 : e.graph_sizes.back();
    r.notes.push_back("CUDA graphs for decode batches up to " + std::to_string(e.graph_max_batch) + " (" +
                      std::to_string(e.graph_sizes.size()) + " sizes; " + d.capture_list.source + ")");
  }
  e.graph_padding = c.cuda_graph_padding.value_or(true);
  e.torch_compile = c.enable_torch_compile;
  e.torch_compile_max_batch =
      c.enable_torch_compile ? c.torch_compile_max_bs.value_or(d.torch_compile_max_bs.value) : 0;
  if (e.torch_compile)
    r.notes.push_back("torch.compile'd decode graphs up to batch " +
                      std::to_string(e.torch_compile_max_batch) +
                      " (--enable-torch-compile, torch_compile_max_bs)");
  // Overlap scheduler: on unless disabled, with speculative decoding (spec v1) or pipeline parallelism
  // [recalled: "Pipeline parallelism is incompatible with overlap schedule"].
  e.async_scheduling = !c.disable_overlap_schedule && !r.speculative && c.pp == 1;
  r.notes.push_back(std::string("overlap scheduler ") + (e.async_scheduling ? "on" : "off") +
                    (c.disable_overlap_schedule ? " (--disable-overlap-schedule)"
                     : r.speculative            ? " (speculative decoding)"
                     : c.pp > 1                 ? " (pipeline parallelism) [recalled]"
                                                : " (default)"));
  e.stream_interval = c.stream_interval.value_or(1);
  e.api_server_count = 1;
}

// Hybrid linear-attention models keep their recurrent states in a MambaPool of their own: with the radix
// cache it takes mamba_full_memory_ratio / (1 + ratio) of the pool memory and caps the running requests
// at a third of its slots; without it, it holds max_running_requests (else 512) states. Each slot holds
// 1 + draft-token states under speculative decoding. (sglang_defaults.h, model_runner.py [recalled])
void state_pool(ResolvedLaunch& r) {
  const auto& d = kSglangDefaults;
  const LaunchConfig& c = r.config;
  if (!r.model.has_linear_attention()) return;
  auto& mem = r.memory;
  mem.state_copies_per_slot = 1 + (r.speculative ? std::max(0, r.speculative->num_draft_tokens) : 0);
  if (c.enable_prefix_caching) {
    mem.state_pool_ratio = d.mamba_full_memory_ratio.value;
    mem.state_slots_per_running = d.mamba_cache_per_running_request.value;
    r.notes.push_back("recurrent-state pool: " + fixed3(mem.state_pool_ratio) +
                      " / (1 + ratio) of the pool memory, running requests <= its slots / " +
                      std::to_string(mem.state_slots_per_running) + " (" + d.mamba_full_memory_ratio.source +
                      "; " + d.mamba_cache_per_running_request.source + ")");
  } else {
    mem.state_slots = c.max_num_seqs ? *c.max_num_seqs : d.mamba_cache_size_no_radix.value;
    mem.state_slots_per_running = 1;
    r.notes.push_back("recurrent-state pool: " + std::to_string(mem.state_slots) + " states (" +
                      d.mamba_cache_size_no_radix.source + ")");
  }
}

void sglang_scheduler_memory_routing(ResolvedLaunch& r) {
  const auto& d = kSglangDefaults;
  const LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  auto& s = r.scheduler;
  s.kind = SchedulerPolicy::Kind::kSglang;
  s.request_len_from_pool = true;
  const int ranks = c.enable_dp_attention ? c.dp : 1;
  if (c.max_num_seqs) {
    s.max_num_seqs = std::max(1, *c.max_num_seqs / ranks);
    s.max_num_seqs_from_pool = false;
    if (ranks > 1)
      r.notes.push_back("max_running_requests " + std::to_string(*c.max_num_seqs) +
                        " is global: " + std::to_string(s.max_num_seqs) + " per DP-attention rank");
  } else {
    s.max_num_seqs_from_pool = true;
    s.max_num_seqs = 0;
    r.notes.push_back(
        "max_running_requests from the KV pool: min(pool / 2, clamp(pool / context * 512, 2048, "
        "4096)) (model_runner.py; computed by the twin)");
  }
  s.chunked_prefill = c.enable_chunked_prefill;
  s.max_prefill_tokens = *c.max_prefill_tokens;
  s.token_budget = s.chunked_prefill ? *c.chunked_prefill_size : s.max_prefill_tokens;
  s.conservativeness = c.schedule_conservativeness.value_or(d.schedule_conservativeness.value);
  s.clip_max_new_tokens = d.clip_max_new_tokens.value;
  s.mixed_prefill_decode = c.enable_mixed_chunk && !r.speculative;
  s.pp_micro_batches = c.pp;
  s.recv_interval = std::max(1, c.scheduler_recv_interval.value_or(1));
  if (s.recv_interval > 1)
    r.notes.push_back("new requests are received every " + std::to_string(s.recv_interval) +
                      " decode steps, or after a prefill step or an idle loop (--scheduler-recv-interval; "
                      "scheduler_recv_skipper.py [recalled])" +
                      std::string(c.enable_dp_attention
                                      ? "; SGLang may refuse it with --enable-dp-attention (the skipper "
                                        "asserts DP attention is off [recalled]); the twin applies it to all "
                                        "ranks at once"
                                      : ""));
  auto& mem = r.memory;
  mem.basis = MemoryPolicy::Basis::kOfTotal;
  mem.fraction = c.gpu_memory_fraction;
  mem.profile_activations = false;
  mem.reserved_bytes = 0;
  if (c.max_total_tokens) mem.max_total_tokens = *c.max_total_tokens;
  // The req_to_token table (model_runner.py ReqToTokenPool), sized from the pool (memory_plan.cc).
  mem.request_table = true;
  r.notes.push_back(
      "req_to_token table: (slots + 1) x (context_len + 4) int32 per rank, charged to the KV "
      "budget (model_runner.py ReqToTokenPool; the charge is corpus evidence, memory_plan.cc)");
  mem.kv_window_only = m.has_sliding_window() && !c.disable_hybrid_swa_memory;
  mem.swa_full_tokens_ratio =
      mem.kv_window_only ? c.swa_full_tokens_ratio.value_or(d.swa_full_tokens_ratio.value) : 1.0;
  mem.swa_split_pool = mem.kv_window_only;
  mem.mm_encoder = is_multimodal(m);
  mem.mm_encoder_shards = std::max(1, r.layout.attn_tp);
  state_pool(r);
  if (mem.kv_window_only)
    r.notes.push_back("SWA pool: sliding-window layers get " + fixed3(mem.swa_full_tokens_ratio) +
                      " x the full layers' tokens from the same memory (--swa-full-tokens-ratio; "
                      "model_runner.py set_num_token_hybrid)");
  const std::string& lb = c.load_balance_method;
  r.routing = lb == "shortest_queue"   ? Routing::kShortestQueue
              : lb == "minimum_tokens" ? Routing::kMinimumTokens
                                       : Routing::kRoundRobin;
  if (c.dp > 1)
    r.notes.push_back("DP routing: " + (lb.empty() ? std::string("round_robin") : lb) +
                      " (data_parallel_controller --load-balance-method)");
  r.prefix_caching = c.enable_prefix_caching;
}

}  // namespace

std::optional<LaunchFailure> sglang_policies(ResolvedLaunch& r, const hardware::ClusterSpec& cl) {
  LaunchConfig& c = r.config;
  const model::ModelSpec& m = r.model;
  const int derived = m.max_position_embeddings;
  if (c.max_model_len && *c.max_model_len > derived &&
      !(c.env.count("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN") &&
        sglang_env_true(c.env.at("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"), false)))
    return fail(FailurePhase::kStartup, "sglang.context_length.too_long",
                "ValueError: User-specified context_length (" + std::to_string(*c.max_model_len) +
                    ") is greater than the derived context_length (" + std::to_string(derived) + ")",
                false);
  if (!c.max_model_len) c.max_model_len = derived;
  r.max_model_len = *c.max_model_len;
  if (auto f = sglang_speculative(r)) return f;
  memory_settings(r, cl);
  r.kv_dtype = kv_dtype_of(c.kv_cache_dtype, m);
  r.state_dtype = c.mamba_ssm_cache_dtype == "bfloat16" ? model::DType::kBf16 : model::DType::kFp32;
  r.block_size = c.block_size;
  sglang_execution(r);
  sglang_scheduler_memory_routing(r);
  // --config: the option file's keys are applied as the flags they spell (each judged on its own).
  static const std::vector<std::string> kEffective = {"--config",
                                                      "--model-path",
                                                      "--cpu-offload-gb",
                                                      "--tensor-parallel-size",
                                                      "--pipeline-parallel-size",
                                                      "--data-parallel-size",
                                                      "--enable-dp-attention",
                                                      "--expert-parallel-size",
                                                      "--enable-ep-moe",  // deprecated: ep = tp
                                                      "--enable-flashinfer-trtllm-moe",  // deprecated runner
                                                      "--moe-a2a-backend",
                                                      "--deepep-mode",
                                                      "--moe-dense-tp-size",
                                                      "--moe-runner-backend",
                                                      "--context-length",
                                                      "--mem-fraction-static",
                                                      "--max-running-requests",
                                                      "--max-total-tokens",
                                                      "--chunked-prefill-size",
                                                      "--max-prefill-tokens",
                                                      "--schedule-conservativeness",
                                                      "--page-size",
                                                      "--kv-cache-dtype",
                                                      "--attention-backend",
                                                      "--nsa-prefill-backend",
                                                      "--nsa-decode-backend",
                                                      "--quantization",
                                                      "--speculative-algorithm",
                                                      "--speculative-draft-model-path",
                                                      "--speculative-num-steps",
                                                      "--speculative-eagle-topk",
                                                      "--speculative-num-draft-tokens",
                                                      "--cuda-graph-max-bs",
                                                      "--cuda-graph-bs",
                                                      "--disable-cuda-graph",
                                                      "--disable-cuda-graph-padding",
                                                      "--enable-torch-compile",
                                                      "--torch-compile-max-bs",
                                                      "--disable-overlap-schedule",
                                                      "--enable-mixed-chunk",
                                                      "--disable-radix-cache",
                                                      "--stream-interval",
                                                      "--load-balance-method",
                                                      "--swa-full-tokens-ratio",
                                                      "--disable-hybrid-swa-memory",
                                                      "--mamba-ssm-dtype",
                                                      "--fp8-gemm-backend",
                                                      "--scheduler-recv-interval"};
  static const std::vector<std::string> kEnv = {"SGLANG_ENABLE_JIT_DEEPGEMM", "SGL_ENABLE_JIT_DEEPGEMM",
                                                "SGLANG_ENABLE_FLASHINFER_GEMM",
                                                "SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"};
  r.inert_flags = inert_flags_of(c, kEffective, kEnv);
  if (c.is_explicit("--deepep-mode") && c.moe_a2a_backend != "deepep")
    r.inert_flags.push_back("--deepep-mode (without --moe-a2a-backend deepep)");
  if (c.is_explicit("--expert-parallel-size") && !m.has_moe())
    r.inert_flags.push_back("--expert-parallel-size (no MoE)");
  if (c.env.count("SGLANG_ENABLE_FLASHINFER_GEMM") && !is_blackwell(cl))
    r.inert_flags.push_back("SGLANG_ENABLE_FLASHINFER_GEMM (FlashInfer's FP8 GEMM runs on SM100 only)");
  return std::nullopt;
}

int sglang_tier_index(double gpu_gib) {
  const auto& tiers = kSglangDefaults.tiers;
  for (int i = 0; i < 6; ++i)
    if (gpu_gib < tiers[i].max_gpu_memory_gib) return i;
  return 5;
}

double sglang_mem_fraction_static(const SglangReserveInputs& in) {
  const auto& d = kSglangDefaults;
  const double chunk = std::max(in.chunked_prefill_size, d.chunked_prefill_min_for_reserve.value);
  const double bs = in.cuda_graph_max_bs;
  double reserved = d.reserved_base_mib.value + chunk * d.reserved_per_chunk_token_mib.value +
                    bs * d.reserved_per_graph_bs_mib.value +
                    in.tp * in.pp / 8.0 * d.reserved_per_tp_eighth_mib.value;
  if (in.dp_attention) {
    reserved += bs * in.dp * d.reserved_dp_attention_per_graph_bs_dp_mib.value;
    if (bs > 300) reserved += bs * in.dp * d.reserved_dp_attention_large_graph_mib.value;
  }
  reserved += in.piecewise_sizes * d.reserved_per_piecewise_size_mib.value;
  if (in.gpu_mib > 60 * 1024) reserved = std::max(reserved, d.reserved_floor_mib.value);
  const std::string& a = in.speculative_algorithm;
  if (a == "EAGLE" || a == "EAGLE3" || a == "NEXTN") reserved += d.reserved_speculative_mib.value;
  if (a == "STANDALONE") reserved += d.reserved_speculative_standalone_mib.value;
  const double frac = (in.gpu_mib - reserved) / in.gpu_mib;
  const double scale = std::pow(10.0, d.mem_fraction_decimals.value);
  return std::round(frac * scale) / scale;
}

}  // namespace servelab::engines::detail
