// servelab/cli private: the engine release `sim run` / `sim serve` predict a launch for when
// --engine-version is not given.
#pragma once

#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/model/model.h"

namespace servelab::cli {

/// When no release was given (`given` empty) and the engine module's default release predates the model's
/// architecture (engines::default_version_for), re-parses `launch` for the oldest modelled release that
/// loads it and returns the note that says so; otherwise leaves `config` as parsed and returns "".
/// Throws engines::EngineArgError when the launch's flags do not exist in that release.
inline std::string move_past_architecture_bound(const std::string& given,
                                                const std::vector<std::string>& launch,
                                                const model::ModelSpec& model,
                                                engines::LaunchConfig& config) {
  if (!given.empty()) return "";
  const engines::EngineModule& m = engines::engine_module(config.kind);
  const std::string v = engines::default_version_for(config.kind, model.architecture);
  if (v == m.default_version) return "";
  config = engines::apply_config_files(engines::parse_launch_command(launch, common::environment_map(), v));
  return std::string("no --engine-version: ") + m.product_name + " " + m.default_version +
         " (the default) predates " + model.architecture + ", so " + v +
         ", the oldest modelled release that can load it, is predicted";
}

}  // namespace servelab::cli
