// servelab/engines private: the per-engine hooks the built-in EngineModules (engine_module.h) point to.
// Each engine's hooks live in its own files (vllm*.cc, sglang*.cc, trtllm*.cc); the shared ones of the
// CLI-option config files and of multi-node launches in config_files.cc and multinode.cc.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/launch.h"
#include "servelab/engines/multinode.h"

namespace servelab::engines::detail {

/// Resolution of a launch (launch.h resolve_launch), per engine (vllm_launch.cc, sglang_launch.cc,
/// trtllm_launch.cc).
std::variant<ResolvedLaunch, LaunchFailure> resolve_vllm(const LaunchConfig&, const model::ModelSpec&,
                                                         const hardware::ClusterSpec&);
std::variant<ResolvedLaunch, LaunchFailure> resolve_sglang(const LaunchConfig&, const model::ModelSpec&,
                                                           const hardware::ClusterSpec&);
std::variant<ResolvedLaunch, LaunchFailure> resolve_trtllm(const LaunchConfig&, const model::ModelSpec&,
                                                           const hardware::ClusterSpec&);

/// The engine's refusal of one request (launch.h check_request), per engine.
std::optional<std::string> check_request_vllm(const ResolvedLaunch& launch, int prompt_tokens,
                                              int max_tokens);
std::optional<std::string> check_request_sglang(const ResolvedLaunch& launch, int prompt_tokens,
                                                int max_tokens);
std::optional<std::string> check_request_trtllm(const ResolvedLaunch& launch, int prompt_tokens,
                                                int max_tokens);

/// The engine's modelled environment variables (engines.h to_env), per engine (vllm.cc, sglang.cc,
/// trtllm.cc).
void render_env_vllm(const LaunchConfig& config, std::map<std::string, std::string>& env);
void render_env_sglang(const LaunchConfig& config, std::map<std::string, std::string>& env);
void render_env_trtllm(const LaunchConfig& config, std::map<std::string, std::string>& env);

/// The nodes a launch states with its own flags (LaunchConfig::stated_node_placement), per engine.
std::optional<LaunchConfig::NodePlacement> stated_node_placement_vllm(const LaunchConfig& config);
std::optional<LaunchConfig::NodePlacement> stated_node_placement_sglang(const LaunchConfig& config);
std::optional<LaunchConfig::NodePlacement> stated_node_placement_trtllm(const LaunchConfig& config);

/// One node's part of a multi-node launch (multinode.h), per engine (multinode.cc).
NodeLaunch node_launch_vllm(const LaunchConfig& config, const MultiNodeRequest& request,
                            std::vector<std::string> argv, const std::map<std::string, std::string>& env);
NodeLaunch node_launch_sglang(const LaunchConfig& config, const MultiNodeRequest& request,
                              std::vector<std::string> argv, const std::map<std::string, std::string>& env);
NodeLaunch node_launch_trtllm(const LaunchConfig& config, const MultiNodeRequest& request,
                              std::vector<std::string> argv, const std::map<std::string, std::string>& env);

/// Applies a CLI-option config file (vLLM/SGLang `--config`: each key an option, spelled by the module's
/// EngineConfigFile) to a launch (config_files.cc).
LaunchConfig apply_cli_config_yaml(const LaunchConfig& config, const std::string& yaml_text);
/// Applies TensorRT-LLM's `--extra_llm_api_options` YAML (LLM API arguments) to a launch (config_files.cc).
LaunchConfig apply_trtllm_config_yaml(const LaunchConfig& config, const std::string& yaml_text);

}  // namespace servelab::engines::detail
