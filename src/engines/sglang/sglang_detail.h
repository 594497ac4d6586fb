// servelab/engines private: SGLang's module: the hooks its EngineModule points to and the helpers its
// files share (sglang/).
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

/// SGLang's hooks (engine_module.h), one per EngineModule field: parse and render (sglang.cc),
/// resolve and check_request (sglang_launch.cc), render_env and stated_node_placement (sglang.cc),
/// node_launch (sglang_multinode.cc).
void parse_sglang(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& config);
std::vector<std::string> render_sglang(const LaunchConfig& config, const LaunchConfig& bare);
std::variant<ResolvedLaunch, LaunchFailure> resolve_sglang(const LaunchConfig&, const model::ModelSpec&,
                                                           const hardware::ClusterSpec&);
std::optional<std::string> check_request_sglang(const ResolvedLaunch& launch, int prompt_tokens,
                                                int max_tokens);
void render_env_sglang(const LaunchConfig& config, std::map<std::string, std::string>& env);
std::optional<LaunchConfig::NodePlacement> stated_node_placement_sglang(const LaunchConfig& config);
NodeLaunch node_launch_sglang(const LaunchConfig& config, const MultiNodeRequest& request,
                              std::vector<std::string> argv, const std::map<std::string, std::string>& env);

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

}  // namespace servelab::engines::detail
