// servelab/engines private: helpers shared by the engine modules (vllm/, sglang/, trtllm/; an engine's own
// helpers are in its folder's <engine>_detail.h): version lookup, notes, refusals, GPU generation tests, the
// parallel layout's node placement, and the formulas the modules share.
#pragma once

#include <cctype>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engines/version.h"
#include "servelab/common/text.h"
#include "servelab/engines/launch.h"

namespace servelab::engines::detail {

/// Bytes in a GiB.
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

using Resolved = std::variant<ResolvedLaunch, LaunchFailure>;

/// The family of `version`: the one of the newest modelled release <= version (the oldest one's for
/// older releases).
std::string version_family(EngineKind kind, const EngineVersion& version);

/// Sets launch.version / version_family from config.engine_version and notes when the release is not
/// one of the modelled ones. Throws std::invalid_argument on a malformed version.
EngineVersion apply_version(ResolvedLaunch& launch);

/// A refusal.
LaunchFailure fail(FailurePhase phase, std::string rule, std::string message, bool verbatim);

/// What an engine accepts that range_checks refuses for the others.
struct RangeAllowances {
  bool zero_memory_fraction = false;           ///< a memory fraction of 0: unset, the engine sizes it itself
  bool nonpositive_cuda_graph_max_bs = false;  ///< a CUDA-graph batch bound below 1
};

/// Config-only range checks shared by every engine (parallel sizes >= 1, memory fraction in (0, 1],
/// positive limits), less what the engine `allowed`.
std::optional<LaunchFailure> range_checks(const LaunchConfig& c, const RangeAllowances& allowed = {});

/// Refuses a GPU the twin does not model (hardware::GpuSpec::modelled == false).
std::optional<LaunchFailure> hardware_check(const hardware::ClusterSpec& cluster);

/// Refuses a launch whose flags change the speed or memory beyond what the twin models (vLLM and SGLang
/// `--dtype float32` / `float`: FP32 weights, twice BF16's memory, and FP32 GEMMs without a measured table),
/// naming the flag, instead of predicting it as the default dtype.
std::optional<LaunchFailure> unmodelled_flag_check(const LaunchConfig& c);

/// vLLM / SGLang `--cpu-offload-gb N`: N GiB of weights per GPU kept in pinned host memory and read by the
/// kernels over PCIe at every forward (vLLM V1 maybe_offload_to_cpu: UVA views of the pinned tensors).
/// Sets MemoryPolicy::cpu_offload_bytes and lists the path in ResolvedLaunch::unmodelled (a large prefill
/// GEMM re-reads weight tiles over PCIe, which the once-per-step read the twin charges does not cover).
/// Throws nothing; a value below 0 is a LaunchFailure (the engine's own check).
std::optional<LaunchFailure> apply_cpu_offload(ResolvedLaunch& r);

/// GPU generation tests on the cluster's GPU.
bool is_ampere(const hardware::ClusterSpec& c);             ///< SM80/SM86 (no FP8 tensor cores)
bool is_hopper(const hardware::ClusterSpec& c);             ///< SM90
bool is_blackwell(const hardware::ClusterSpec& c);          ///< SM100
bool has_fp8_tensor_cores(const hardware::ClusterSpec& c);  ///< SM89+

/// "sm90" style name of the cluster's GPU.
std::string sm_name(const hardware::ClusterSpec& c);

/// Fills layout.gpus-derived placement: nodes spanned and whether the TP group / the pipeline stages
/// cross nodes, ranks laid out TP innermost, then PP, then DP. Refuses more GPUs than the cluster has.
/// A launch that states its nodes (LaunchConfig::stated_node_placement: SGLang --nnodes, vLLM
/// --data-parallel-size-local, TRT-LLM --gpus_per_node) is placed that many GPUs per node, and refused
/// ("parallel.nodes") when the cluster has fewer nodes or fewer GPUs per node than it states, or (SGLang)
/// when --nnodes does not split the GPUs evenly.
std::optional<LaunchFailure> place_layout(ParallelLayout& layout, const hardware::ClusterSpec& cluster,
                                          const LaunchConfig& config);

/// The served model after an engine --quantization flag (model::with_engine_quantization), or a
/// refusal naming the flag.
std::variant<model::ModelSpec, LaunchFailure> engine_quantized(const LaunchConfig& c,
                                                               const model::ModelSpec& m);

/// KV cache element type for a kv_cache_dtype value ("auto" = the model dtype).
model::DType kv_dtype_of(const std::string& kv_cache_dtype, const model::ModelSpec& m);

/// The acceptance table row for a speculative method and model (see speculative.cc).
struct AcceptanceRow {
  double acceptance;
  const char* source;
  bool verified;
};
AcceptanceRow acceptance_for(SpeculativePolicy::Method method, const model::ModelSpec& m,
                             const std::string& draft_model);

/// The model's name for messages: the last component of its id ("deepseek-ai/DeepSeek-V3.2" ->
/// "DeepSeek-V3.2").
std::string display_name(const model::ModelSpec& m);

/// A model's multimodal wrapper (config.json architectures[0] "...ForConditionalGeneration").
bool is_multimodal(const model::ModelSpec& m);

/// Flags of `c` given explicitly that are not in `effective` (each engine's list of flags that change
/// the resolved launch), plus every unmodelled option and environment variable not in `modelled_env`.
std::vector<std::string> inert_flags_of(const LaunchConfig& c, const std::vector<std::string>& effective,
                                        const std::vector<std::string>& modelled_env);

}  // namespace servelab::engines::detail
