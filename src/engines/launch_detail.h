// servelab/engines private: helpers shared by the engine modules (vllm_launch.cc, sglang_launch.cc,
// trtllm_launch.cc): version lookup, notes, refusals, GPU generation tests, the parallel layout's node
// placement, and the formulas the modules share.
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

/// One modelled release of an engine and the key of its fitted parameters.
struct ModelledVersion {
  const char* version;
  const char* family;
};

/// The modelled releases of `kind`, oldest first.
const std::vector<ModelledVersion>& modelled_versions(EngineKind kind);

/// The family of `version`: the one of the newest modelled release <= version (the oldest one's for
/// older releases).
std::string version_family(EngineKind kind, const EngineVersion& version);

/// Sets launch.version / version_family from config.engine_version and notes when the release is not
/// one of the modelled ones. Throws std::invalid_argument on a malformed version.
EngineVersion apply_version(ResolvedLaunch& launch);

/// A refusal.
LaunchFailure fail(FailurePhase phase, std::string rule, std::string message, bool verbatim);

/// Config-only range checks shared by every engine (parallel sizes >= 1, memory fraction in (0, 1],
/// positive limits).
std::optional<LaunchFailure> range_checks(const LaunchConfig& c);

/// Refuses a GPU the twin does not model (hardware::GpuSpec::modelled == false).
std::optional<LaunchFailure> hardware_check(const hardware::ClusterSpec& cluster);

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

/// A vLLM attention backend's support matrix (vllm/v1/attention/backends/*, AttentionBackend.
/// validate_configuration, vLLM 0.13): only the properties the corpus' models and GPUs exercise.
struct VllmBackend {
  const char* name;
  bool mla;
  bool sparse;
  std::vector<int> cc_majors;          ///< supported compute-capability majors (empty = any)
  std::vector<int> block_sizes;        ///< supported block sizes (empty = any)
  std::vector<std::string> kv_dtypes;  ///< supported kv_cache_dtype values (empty = any)
};

/// The backend named `name` ("FLASHMLA", ...), nullptr when vLLM has none by that name.
const VllmBackend* find_vllm_backend(const std::string& name);

/// validate_configuration's reasons, in vLLM's order ("kv_cache_dtype not supported", "block_size not
/// supported", "MLA not supported" / "non-MLA not supported", "sparse not supported" / "non-sparse not
/// supported", "compute capability not supported"). `explicit_block_size` 0 = not given (accepted).
std::vector<std::string> vllm_invalid_reasons(const VllmBackend& b, const std::string& kv_cache_dtype,
                                              int explicit_block_size, bool mla, bool sparse, int cc_major);

/// A vLLM environment switch read as vllm/envs.py reads VLLM_ALLOW_LONG_MAX_MODEL_LEN and its kind:
/// `os.environ.get(name, "0").strip().lower() in ("1", "true")` [recalled]; false when unset.
bool vllm_env_one_or_true(const LaunchConfig& c, const char* name);

/// An SGLang boolean environment variable's value (environ.py EnvBool / utils.get_bool_env_var: "true" /
/// "1" / "yes" true, "false" / "0" / "no" false, case-insensitive); `fallback` for any other spelling.
bool sglang_env_true(const std::string& value, bool fallback);

/// Compute-capability majors an SGLang attention / NSA backend has kernels for (Hopper-only FA3;
/// Blackwell-only TRT-LLM / CUTLASS MLA, FA4; FlashMLA on Hopper and Blackwell); nullopt = any.
std::optional<std::vector<int>> sglang_backend_cc(const std::string& backend);

/// SGLang's automatic mem_fraction_static (server_args.py _handle_gpu_memory_settings, see
/// sglang_defaults.h): (gpu_mib - reserved) / gpu_mib rounded to 3 decimals.
struct SglangReserveInputs {
  double gpu_mib = 0;
  int chunked_prefill_size = 0;
  int cuda_graph_max_bs = 0;
  int tp = 1, pp = 1, dp = 1;
  bool dp_attention = false;
  std::string speculative_algorithm;  ///< "" none, "EAGLE", "EAGLE3", "NEXTN", "STANDALONE", "NGRAM"
  int piecewise_sizes = 0;            ///< captured piecewise token sizes (0 = piecewise graphs off)
};
double sglang_mem_fraction_static(const SglangReserveInputs& in);

/// SGLang's memory tier (index into kSglangDefaults.tiers) for a GPU of `gpu_gib` GiB.
int sglang_tier_index(double gpu_gib);

/// vLLM's largest CUDA-graph capture size when the user sets none (before performance-mode and model
/// overrides): 0.13 rule min(max_num_seqs * (1 + k) * 2, 512) capped at max_num_batched_tokens, or the
/// fixed 512 of releases before vllm_defaults.capture_size_formula_since, capped the same way.
int vllm_default_capture_max(const EngineVersion& v, int max_num_seqs, int spec_tokens, int token_budget);

}  // namespace servelab::engines::detail
