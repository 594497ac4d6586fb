// servelab/engines private: TensorRT-LLM's module: the hooks its EngineModule points to (trtllm/).
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

/// TensorRT-LLM's hooks (engine_module.h), one per EngineModule field: parse and render (trtllm.cc),
/// resolve and check_request (trtllm_launch.cc), render_env and stated_node_placement (trtllm.cc),
/// node_launch (trtllm_multinode.cc).
void parse_trtllm(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                  LaunchConfig& config);
std::vector<std::string> render_trtllm(const LaunchConfig& config, const LaunchConfig& bare);
std::variant<ResolvedLaunch, LaunchFailure> resolve_trtllm(const LaunchConfig&, const model::ModelSpec&,
                                                           const hardware::ClusterSpec&);
std::optional<std::string> check_request_trtllm(const ResolvedLaunch& launch, int prompt_tokens,
                                                int max_tokens);
void render_env_trtllm(const LaunchConfig& config, std::map<std::string, std::string>& env);
std::optional<LaunchConfig::NodePlacement> stated_node_placement_trtllm(const LaunchConfig& config);
NodeLaunch node_launch_trtllm(const LaunchConfig& config, const MultiNodeRequest& request,
                              std::vector<std::string> argv, const std::map<std::string, std::string>& env);

/// Applies TensorRT-LLM's `--extra_llm_api_options` YAML (LLM API arguments) to a launch
/// (trtllm_config_file.cc): EngineConfigFile::apply.
LaunchConfig apply_trtllm_config_yaml(const LaunchConfig& config, const std::string& yaml_text);

}  // namespace servelab::engines::detail
