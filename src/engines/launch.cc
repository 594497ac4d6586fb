// The engine table, resolve_launch dispatch, the per-request context-length refusal, and helpers shared
// by the engine modules (launch_detail.h).
#include "servelab/engines/launch.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <string_view>

#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "servelab/engines/engine_module.h"

namespace servelab::engines {

const char* attention_kernel_name(AttentionKernel k) {
  switch (k) {
    case AttentionKernel::kFlashAttn2:
      return "fa2";
    case AttentionKernel::kFlashAttn3:
      return "fa3";
    case AttentionKernel::kFlashInfer:
      return "flashinfer";
    case AttentionKernel::kTriton:
      return "triton";
    case AttentionKernel::kTrtllmGen:
      return "trtllm";
    case AttentionKernel::kXformers:
      return "xformers";
    case AttentionKernel::kFlexAttention:
      return "flex-attention";
    case AttentionKernel::kFlashMla:
      return "flashmla";
    case AttentionKernel::kFlashMlaSparse:
      return "flashmla-sparse";
    case AttentionKernel::kCutlassMla:
      return "cutlass-mla";
    case AttentionKernel::kFlashInferMla:
      return "flashinfer-mla";
    case AttentionKernel::kTritonMla:
      return "triton-mla";
    case AttentionKernel::kTrtllmMla:
      return "trtllm-mla";
  }
  return "unknown";
}

const char* gemm_kernel_name(GemmKernel k) {
  switch (k) {
    case GemmKernel::kCublasBf16:
      return "cublas-bf16";
    case GemmKernel::kFp8Native:
      return "fp8-native";
    case GemmKernel::kFp8BlockDeepGemm:
      return "fp8-block-deepgemm";
    case GemmKernel::kFp8BlockCutlass:
      return "fp8-block-cutlass";
    case GemmKernel::kFp8BlockTrtllm:
      return "fp8-block-trtllm";
    case GemmKernel::kInt8Native:
      return "int8-native";
    case GemmKernel::kMarlinW8A16:
      return "marlin-w8a16";
    case GemmKernel::kMarlinW4A16:
      return "marlin-w4a16";
    case GemmKernel::kAwqTrtllm:
      return "awq-trtllm";
    case GemmKernel::kFp4Native:
      return "fp4-native";
  }
  return "unknown";
}

const char* moe_kernel_name(MoeKernel k) {
  switch (k) {
    case MoeKernel::kTritonFused:
      return "triton-fused";
    case MoeKernel::kDeepGemmGrouped:
      return "deepgemm-grouped";
    case MoeKernel::kCutlassGrouped:
      return "cutlass-grouped";
    case MoeKernel::kMarlinMoe:
      return "marlin-moe";
    case MoeKernel::kTritonKernels:
      return "triton-kernels";
    case MoeKernel::kFlashInferTrtllm:
      return "flashinfer-trtllm";
  }
  return "unknown";
}

const char* moe_a2a_name(MoeA2a a) {
  switch (a) {
    case MoeA2a::kNone:
      return "none";
    case MoeA2a::kAllgatherReduceScatter:
      return "allgather-reducescatter";
    case MoeA2a::kDeepepNormal:
      return "deepep-normal";
    case MoeA2a::kDeepepLowLatency:
      return "deepep-low-latency";
    case MoeA2a::kPplx:
      return "pplx";
    case MoeA2a::kFlashinferAllToAllV:
      return "flashinfer-all2allv";
  }
  return "unknown";
}

const char* graph_mode_name(GraphMode g) {
  switch (g) {
    case GraphMode::kNone:
      return "none";
    case GraphMode::kPiecewise:
      return "piecewise";
    case GraphMode::kFullAndPiecewise:
      return "full-and-piecewise";
    case GraphMode::kFull:
      return "full";
    case GraphMode::kDecodeOnly:
      return "decode-only";
  }
  return "unknown";
}

namespace {

// Every engine shards the attention heads over its attention TP group. An engine that refuses at start-up
// with its own words gives them (EngineModule::heads_indivisible_error); the others fail while loading the
// sharded weights (servelab's text). Linear-attention (gated DeltaNet) heads are sharded the same way.
std::optional<LaunchFailure> heads_check(const ResolvedLaunch& r) {
  const int tp = r.layout.attn_tp;
  if (tp <= 1) return std::nullopt;
  int heads = 0, linear_heads = 0;
  for (const auto& g : r.model.layers) {
    if (const auto* a = std::get_if<model::GqaAttention>(&g.layer.attention))
      heads = std::max(heads, a->heads);
    if (const auto* a = std::get_if<model::MlaAttention>(&g.layer.attention))
      heads = std::max(heads, a->heads);
    if (const auto* a = std::get_if<model::LinearAttention>(&g.layer.attention))
      linear_heads = a->key_heads % tp != 0     ? a->key_heads
                     : a->value_heads % tp != 0 ? a->value_heads
                                                : linear_heads;
  }
  if (heads > 0 && heads % tp != 0) {
    const auto own = engine_module(r.config.kind).heads_indivisible_error(heads, tp);
    return detail::fail(FailurePhase::kStartup, "parallel.heads_divisible",
                        own ? *own
                            : "the model's " + std::to_string(heads) +
                                  " attention heads cannot be split over " + std::to_string(tp) +
                                  " tensor-parallel ranks (attention TP must divide them)",
                        own.has_value());
  }
  if (linear_heads > 0)
    return detail::fail(FailurePhase::kStartup, "parallel.linear_heads_divisible",
                        "the model's " + std::to_string(linear_heads) +
                            " linear-attention heads cannot be split over " + std::to_string(tp) +
                            " tensor-parallel ranks",
                        false);
  return std::nullopt;
}

}  // namespace

namespace {

// A release older than the architecture's bound (EngineModule::architecture_releases) stops at start-up: the
// model class is not in its registry (and the transformers it pins may not know the config either).
std::optional<LaunchFailure> architecture_check(const LaunchConfig& config, const model::ModelSpec& model) {
  const EngineModule& m = engine_module(config.kind);
  const ArchitectureRelease* a = architecture_release(config.kind, model.architecture);
  const std::string version = config.engine_version.empty() ? m.default_version : config.engine_version;
  if (!a || !(EngineVersion::parse(version) < EngineVersion::parse(a->first_release))) return std::nullopt;
  std::string later;
  for (const auto& r : m.releases)
    if (!(EngineVersion::parse(r.version) < EngineVersion::parse(a->first_release)))
      later += (later.empty() ? "" : ", ") + r.version;
  // None modelled: the bound itself can be asked for, predicted with the newest modelled release's flags.
  if (later.empty() && !m.releases.empty())
    later = "none (the newest, " + m.releases.back().version + ", predates " + a->first_release +
            "); --engine-version " + a->first_release + " predicts it with " + m.releases.back().version +
            "'s flags and defaults [not a modelled release]";
  return detail::fail(
      FailurePhase::kStartup, std::string(m.name) + ".architecture.release",
      std::string(m.product_name) + " " + version + " predates " + model.architecture + " (model_type " +
          model.model_type + "): releases before " + a->first_release + " cannot load it (" + a->source +
          ")" + (config.engine_version.empty() ? " [the module's default release; none was given]" : "") +
          (later.empty() ? "" : "; modelled releases that can: " + later),
      false);
}

}  // namespace

std::variant<ResolvedLaunch, LaunchFailure> resolve_launch(const LaunchConfig& config,
                                                           const model::ModelSpec& model,
                                                           const hardware::ClusterSpec& cluster) {
  if (auto f = architecture_check(config, model)) return *f;
  auto r = engine_module(config.kind).resolve(config, model, cluster);
  if (auto* l = std::get_if<ResolvedLaunch>(&r)) {
    if (auto f = heads_check(*l)) return *f;
    // The kernel families the step model times (--explain): which GEMM and MoE kernels the engine was
    // resolved to dispatch, whatever path chose them.
    std::string kernels = std::string("kernels: linears ") + gemm_kernel_name(l->execution.gemm);
    if (model.has_moe()) kernels += std::string(", routed experts ") + moe_kernel_name(l->execution.moe);
    l->notes.push_back(kernels);
  }
  return r;
}

std::optional<std::string> check_request(const ResolvedLaunch& launch, int prompt_tokens, int max_tokens) {
  return engine_module(launch.config.kind).check_request(launch, prompt_tokens, max_tokens);
}

namespace detail {

std::string version_family(EngineKind kind, const EngineVersion& version) {
  const std::vector<EngineRelease>& list = engine_module(kind).releases;
  // The family of the newest modelled release at or before `version`; but when that release is of another
  // major.minor and one of `version`'s own major.minor is modelled, that one's (0.17.0 is vllm-0.17 although
  // the modelled 0.17 release is 0.17.1; 1.2.0rc0 is trtllm-1.2).
  auto part = [](const EngineVersion& v, std::size_t i) { return i < v.release.size() ? v.release[i] : 0; };
  auto same_minor = [&](const EngineVersion& a, const EngineVersion& b) {
    return part(a, 0) == part(b, 0) && part(a, 1) == part(b, 1);
  };
  const EngineRelease* at_or_before = nullptr;
  for (const auto& m : list)
    if (EngineVersion::parse(m.version) <= version) at_or_before = &m;
  if (at_or_before && same_minor(EngineVersion::parse(at_or_before->version), version))
    return at_or_before->family;
  for (const auto& m : list)
    if (same_minor(EngineVersion::parse(m.version), version)) return m.family;
  return at_or_before ? at_or_before->family : list.front().family;
}

EngineVersion apply_version(ResolvedLaunch& launch) {
  const EngineKind kind = launch.config.kind;
  if (launch.config.engine_version.empty())
    launch.config.engine_version = engine_module(kind).default_version;
  EngineVersion v = EngineVersion::parse(launch.config.engine_version);
  launch.version = launch.config.engine_version;
  launch.version_family = version_family(kind, v);
  bool modelled = false;
  for (const auto& r : engine_module(kind).releases)
    modelled = modelled || EngineVersion::parse(r.version) == v;
  launch.notes.push_back(std::string("engine ") + engine_kind_name(kind) + " " + launch.version +
                         " (fitted-parameter family " + launch.version_family + ")" +
                         (modelled
                              ? ""
                              : "; not a modelled release: the flags and defaults of its place among the "
                                "modelled ones apply [unverified]"));
  return v;
}

std::optional<std::string> no_heads_error(int /*heads*/, int /*tp*/) {
  return std::nullopt;
}

LaunchFailure fail(FailurePhase phase, std::string rule, std::string message, bool verbatim) {
  return LaunchFailure{phase, std::move(message), verbatim, std::move(rule)};
}

std::optional<LaunchFailure> range_checks(const LaunchConfig& c, const RangeAllowances& allowed) {
  if (c.tp < 1 || c.dp < 1 || c.pp < 1 || c.ep < 1 || c.dcp < 1)
    return fail(FailurePhase::kStartup, "parallel.sizes",
                "parallel sizes must be >= 1 (tp " + std::to_string(c.tp) + ", dp " + std::to_string(c.dp) +
                    ", pp " + std::to_string(c.pp) + ", ep " + std::to_string(c.ep) + ")",
                false);
  // vLLM: pydantic Field(gt=0, le=1) on gpu_memory_utilization, ge=1 on counts; SGLang / TRT-LLM
  // asserts at start-up. Messages are servelab's.
  if (!(c.gpu_memory_fraction >= 0.0 && c.gpu_memory_fraction <= 1.0) ||
      (c.gpu_memory_fraction == 0.0 && !allowed.zero_memory_fraction))
    return fail(
        FailurePhase::kStartup, "memory.fraction_range",
        fmt::format("GPU memory fraction {:g} is outside (0, 1] (vLLM --gpu-memory-utilization, SGLang "
                    "--mem-fraction-static, TensorRT-LLM --kv_cache_free_gpu_memory_fraction)",
                    c.gpu_memory_fraction),
        false);
  // Each count by the flags that set it in the three engines (the message names them, not the field).
  struct Count {
    const char* field;
    const char* flags;
    const std::optional<int>* value;
  };
  const Count counts[] = {
      {"max_num_seqs",
       "running requests (vLLM --max-num-seqs, SGLang --max-running-requests, TensorRT-LLM "
       "--max_batch_size)",
       &c.max_num_seqs},
      {"max_num_batched_tokens",
       "tokens per step (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size, "
       "TensorRT-LLM --max_num_tokens)",
       &c.max_num_batched_tokens},
      {"max_model_len",
       "context length (vLLM --max-model-len, SGLang --context-length, TensorRT-LLM "
       "--max_seq_len)",
       &c.max_model_len},
      {"cuda_graph_max_bs",
       "CUDA graph batch size (SGLang --cuda-graph-max-bs, vLLM "
       "--max-seq-len-to-capture / cudagraph capture sizes)",
       &c.cuda_graph_max_bs}};
  for (const auto& [field, flags, value] : counts)
    if (*value && **value < 1 &&
        !(allowed.nonpositive_cuda_graph_max_bs && std::string_view(field) == "cuda_graph_max_bs"))
      return fail(FailurePhase::kStartup, "limits.positive",
                  fmt::format("the {} must be >= 1 (got {})", flags, **value), false);
  return std::nullopt;
}

std::optional<LaunchFailure> hardware_check(const hardware::ClusterSpec& cluster) {
  if (cluster.gpu.modelled) return std::nullopt;
  return fail(FailurePhase::kStartup, "hardware.unmodelled",
              cluster.gpu.name + ": " +
                  (cluster.gpu.unsupported_reason.empty() ? std::string("not modelled by the twin")
                                                          : cluster.gpu.unsupported_reason),
              false);
}

namespace {
const EngineOption* option_of(const LaunchConfig& c, std::string_view flag) {
  for (const auto& o : c.unmodelled_options)
    if (o.flag == flag) return &o;
  return nullptr;
}
}  // namespace

std::optional<LaunchFailure> unmodelled_flag_check(const LaunchConfig& c) {
  if (const auto* o = option_of(c, "--dtype"); o && !o->values.empty()) {
    const std::string& d = o->values.front();
    if (d == "float32" || d == "float")
      return fail(FailurePhase::kStartup, "dtype.float32.unmodelled",
                  "--dtype " + d +
                      ": FP32 weights (twice BF16's memory) and FP32 GEMMs are not modelled by the twin (its "
                      "tables and corpus hold BF16/FP16 and quantized runs only); leave --dtype at auto, "
                      "bfloat16 or float16 for a prediction",
                  false);
  }
  return std::nullopt;
}

std::optional<LaunchFailure> apply_cpu_offload(ResolvedLaunch& r) {
  const auto* o = option_of(r.config, "--cpu-offload-gb");
  if (o == nullptr || o->values.empty()) return std::nullopt;
  double gib = 0;
  try {
    gib = std::stod(o->values.front());
  } catch (const std::exception&) {
    return fail(FailurePhase::kStartup, "cpu_offload.value",
                "--cpu-offload-gb: not a number: " + o->values.front(), false);
  }
  if (!(gib >= 0) || !std::isfinite(gib))
    return fail(FailurePhase::kStartup, "cpu_offload.value",
                fmt::format("--cpu-offload-gb must be >= 0 (got {})", o->values.front()), false);
  if (gib == 0) return std::nullopt;
  r.memory.cpu_offload_bytes = gib * 1024.0 * 1024.0 * 1024.0;
  r.notes.push_back(fmt::format(
      "--cpu-offload-gb {}: up to {} GiB of weights per GPU stay in pinned host memory and every step reads "
      "them over PCIe (vLLM V1 maybe_offload_to_cpu: UVA views; SGLang's offloader taken as alike "
      "[unverified])",
      o->values.front(), o->values.front()));
  r.unmodelled.push_back(fmt::format(
      "--cpu-offload-gb {}: the twin charges each step one read of the offloaded weights over PCIe (at 80% "
      "of the GPU's link); prefill GEMMs that re-read weight tiles from host memory run slower than that",
      o->values.front()));
  return std::nullopt;
}

bool is_ampere(const hardware::ClusterSpec& c) {
  return c.gpu.generation == hardware::Generation::kAmpere;
}
bool is_hopper(const hardware::ClusterSpec& c) {
  return c.gpu.generation == hardware::Generation::kHopper;
}
bool is_blackwell(const hardware::ClusterSpec& c) {
  return c.gpu.generation == hardware::Generation::kBlackwell;
}
bool has_fp8_tensor_cores(const hardware::ClusterSpec& c) {
  return c.gpu.compute_capability >= 89;
}

std::string sm_name(const hardware::ClusterSpec& c) {
  return "sm" + std::to_string(c.gpu.compute_capability);
}

namespace {

/// The refusal of a launch whose stated nodes (`p`) the cluster cannot hold, or nullopt.
std::optional<LaunchFailure> check_stated_nodes(const LaunchConfig::NodePlacement& p, const LaunchConfig& c,
                                                const hardware::ClusterSpec& cluster) {
  const std::string who = std::string(engine_kind_name(c.kind)) + " " + p.flag;
  const std::string hw = hardware::cluster_name(cluster);
  auto refuse = [](const std::string& message) {
    return fail(FailurePhase::kStartup, "parallel.nodes", message, false);
  };
  // An engine that splits the launch's GPUs evenly over its stated nodes (NodePlacement::split_evenly).
  if (p.split_evenly && c.gpus_used() % p.nodes != 0)
    return refuse(who + " does not split the launch's " + std::to_string(c.gpus_used()) +
                  " GPUs evenly over the nodes");
  if (p.nodes > cluster.nodes)
    return refuse(who + " spans " + std::to_string(p.nodes) + " nodes of " + std::to_string(p.gpus_per_node) +
                  " GPUs but " + hw + " is " + std::to_string(cluster.nodes) + " node(s) of " +
                  std::to_string(cluster.gpus_per_node) + ": give the hardware as " +
                  std::to_string(p.nodes) + "x" + std::to_string(cluster.gpus_per_node) + "x" +
                  cluster.gpu.name);
  // A node holds min(stated per node, the launch's GPUs): `trtllm-serve --gpus_per_node 8 --tp_size 1`
  // on one GPU runs (the flag sizes the MPI layout, one rank here).
  const int placed = std::min(p.gpus_per_node, std::max(1, c.gpus_used()));
  if (placed > cluster.gpus_per_node)
    return refuse(who + " puts " + std::to_string(placed) + " GPUs on each node but " + hw + " has " +
                  std::to_string(cluster.gpus_per_node) + " per node");
  return std::nullopt;
}

}  // namespace

std::optional<LaunchFailure> place_layout(ParallelLayout& l, const hardware::ClusterSpec& cluster,
                                          const LaunchConfig& config) {
  const EngineKind kind = config.kind;
  int per_node = std::max(1, cluster.gpus_per_node);
  if (l.gpus > cluster.total_gpus())
    return fail(FailurePhase::kStartup, "parallel.gpu_count",
                std::string(engine_kind_name(kind)) + " needs " + std::to_string(l.gpus) + " GPUs but " +
                    hardware::cluster_name(cluster) + " has " + std::to_string(cluster.total_gpus()),
                false);
  if (const auto stated = config.stated_node_placement()) {
    if (auto refused = check_stated_nodes(*stated, config, cluster)) return refused;
    per_node = stated->gpus_per_node;
  }
  l.nodes = (l.gpus + per_node - 1) / per_node;
  // Ranks: TP innermost, then PP, then DP (vLLM/SGLang/TRT-LLM rank order); a group of `size`
  // consecutive ranks crosses nodes when its first and last rank sit on different nodes.
  auto crosses = [&](int size) {
    for (int first = 0; first + size <= l.gpus; first += size)
      if (first / per_node != (first + size - 1) / per_node) return true;
    return false;
  };
  l.tp_crosses_nodes = l.tp > 1 && crosses(l.tp);
  l.pp_crosses_nodes = l.pp > 1 && crosses(l.tp * l.pp);
  return std::nullopt;
}

std::variant<model::ModelSpec, LaunchFailure> engine_quantized(const LaunchConfig& c,
                                                               const model::ModelSpec& m) {
  if (c.quantization.empty()) return m;
  try {
    return model::with_engine_quantization(m, c.quantization);
  } catch (const std::invalid_argument& e) {
    // The message names the flag already ("--quantization NAME: ...").
    return fail(FailurePhase::kStartup, "quantization.unmodelled", e.what(), false);
  }
}

model::DType kv_dtype_of(const std::string& d, const model::ModelSpec& m) {
  if (d.rfind("fp8", 0) == 0) return model::DType::kFp8;
  if (d == "bfloat16" || d == "bf16") return model::DType::kBf16;
  if (d == "float16" || d == "fp16" || d == "half") return model::DType::kFp16;
  if (d == "fp4_e2m1" || d == "nvfp4") return model::DType::kNvfp4;
  return m.dtype == model::DType::kFp16 ? model::DType::kFp16 : model::DType::kBf16;
}

std::string display_name(const model::ModelSpec& m) {
  // A config's _name_or_path may be a local checkpoint directory with a trailing slash
  // ("/opt/ckpts/Llama-3.1-70B-Instruct/"): its last component is the name.
  std::string id = m.id;
  while (!id.empty() && id.back() == '/') id.pop_back();
  const auto slash = id.find_last_of('/');
  if (slash != std::string::npos) id = id.substr(slash + 1);
  return id.empty() ? m.architecture : id;
}

bool is_multimodal(const model::ModelSpec& m) {
  const std::string suffix = "ForConditionalGeneration";
  return m.architecture.size() > suffix.size() &&
         m.architecture.compare(m.architecture.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> inert_flags_of(const LaunchConfig& c, const std::vector<std::string>& effective,
                                        const std::vector<std::string>& modelled_env) {
  std::vector<std::string> out;
  const std::set<std::string> eff(effective.begin(), effective.end());
  for (const auto& f : c.explicit_flags)
    if (!eff.count(f)) out.push_back(f);
  for (const auto& o : c.config_file_options) out.push_back(o.flag + " (extra_llm_api_options)");
  const std::set<std::string> env(modelled_env.begin(), modelled_env.end());
  for (const auto& [k, v] : c.env)
    if (!env.count(k)) out.push_back(k + " (environment)");
  for (const auto& k : c.dropped_env) out.push_back(k + " (environment; not an engine variable)");
  return out;
}

}  // namespace detail
}  // namespace servelab::engines
