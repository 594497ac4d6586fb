// servelab/engines private: vLLM's module: the hooks its EngineModule points to and the helpers its files
// share (vllm/).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engines/version.h"
#include "servelab/engines/engine_config.h"
#include "servelab/engines/launch.h"
#include "servelab/engines/multinode.h"

namespace servelab::engines::detail {

/// vLLM's hooks (engine_module.h), one per EngineModule field: parse and render (vllm.cc),
/// resolve and check_request (vllm_launch.cc), render_env and stated_node_placement (vllm.cc),
/// node_launch (vllm_multinode.cc).
void parse_vllm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                LaunchConfig& config);
std::vector<std::string> render_vllm(const LaunchConfig& config, const LaunchConfig& bare);
std::variant<ResolvedLaunch, LaunchFailure> resolve_vllm(const LaunchConfig&, const model::ModelSpec&,
                                                         const hardware::ClusterSpec&);
std::optional<std::string> check_request_vllm(const ResolvedLaunch& launch, int prompt_tokens,
                                              int max_tokens);
/// vLLM's start-up error for attention heads that TP does not divide (EngineModule::heads_indivisible_error).
std::optional<std::string> heads_indivisible_error_vllm(int heads, int tp);
void render_env_vllm(const LaunchConfig& config, std::map<std::string, std::string>& env);
std::optional<LaunchConfig::NodePlacement> stated_node_placement_vllm(const LaunchConfig& config);
NodeLaunch node_launch_vllm(const LaunchConfig& config, const MultiNodeRequest& request,
                            std::vector<std::string> argv, const std::map<std::string, std::string>& env);

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

/// vLLM's largest CUDA-graph capture size when the user sets none (before performance-mode and model
/// overrides): 0.13 rule min(max_num_seqs * (1 + k) * 2, 512) capped at max_num_batched_tokens, or the
/// fixed 512 of releases before vllm_defaults.capture_size_formula_since, capped the same way.
int vllm_default_capture_max(const EngineVersion& v, int max_num_seqs, int spec_tokens, int token_budget);

}  // namespace servelab::engines::detail
