// servelab/engines private: the built-in engine modules (engine_module.h), one per engine folder
// (vllm/vllm_module.cc, sglang/sglang_module.cc, trtllm/trtllm_module.cc), and the hook implementations
// more than one engine points to.
#pragma once

#include <optional>
#include <string>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/engine_module.h"

namespace servelab::engines::detail {

/// The built-in modules, registered in this order by the engine table (engine_modules.cc).
EngineModule vllm_module();
EngineModule sglang_module();
EngineModule trtllm_module();

/// Applies a CLI-option config file (vLLM/SGLang `--config`: each key an option, spelled by the module's
/// EngineConfigFile) to a launch (config_files.cc): EngineConfigFile::apply of such engines.
LaunchConfig apply_cli_config_yaml(const LaunchConfig& config, const std::string& yaml_text);

/// EngineModule::heads_indivisible_error of an engine with no message of its own (launch.cc): nullopt.
std::optional<std::string> no_heads_error(int heads, int tp);

}  // namespace servelab::engines::detail
