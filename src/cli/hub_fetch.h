// servelab/cli private: how `sim run` / `sim serve` read a launch, and what they fetch from the Hugging Face
// Hub for its model id (config.json, tokenizer.json) when nothing local has it, at the revision it names.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/hub/hub.h"
#include "servelab/model/model.h"

namespace servelab::cli {

/// The value of `flag` in an engine launch command ("--revision X" or "--revision=X"), "" when absent.
inline std::string launch_flag_value(const std::vector<std::string>& launch, const std::string& flag) {
  for (std::size_t i = 0; i < launch.size(); ++i) {
    if (launch[i] == flag && i + 1 < launch.size()) return launch[i + 1];
    if (launch[i].rfind(flag + "=", 0) == 0) return launch[i].substr(flag.size() + 1);
  }
  return "";
}

/// A download-enabled fetch at `revision` ("" = main) whose progress lines go to stderr.
inline hub::FetchRequest hub_fetch(const std::string& revision) {
  hub::FetchRequest f;
  f.revision = revision;
  f.download = true;
  f.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return f;
}

/// `launch` parsed for the release it is predicted on (engines::parse_launch_for_model, with this process's
/// environment and `engine_version`, "" = stated by the launch or chosen), its model read from
/// `model_config` (a local config.json) or else resolved from the launch's model id at `revision`.
/// Throws as parse_launch_for_model.
inline engines::ReleasedLaunch parse_served_launch(const std::vector<std::string>& launch,
                                                   const std::string& engine_version,
                                                   const std::string& model_config,
                                                   const std::string& revision) {
  return engines::parse_launch_for_model(
      launch, common::environment_map(), engine_version, [&](const engines::LaunchConfig& c) {
        return model_config.empty() ? model::resolve_model(c.model, hub_fetch(revision))
                                    : model::load_config_with_modelopt(model_config);
      });
}

/// The notices of a parsed launch (ReleasedLaunch::notices), on stderr before anything else is printed.
inline void print_release_notices(const engines::ReleasedLaunch& released) {
  for (const auto& n : released.notices) std::fprintf(stderr, "servelab: %s\n", n.c_str());
}

/// After an engine's argument error: which release's flags the launch was checked against, and the
/// modelled releases --engine-version can name instead (on stderr).
inline void print_release_checked(const engines::EngineArgError& e) {
  if (e.release.empty()) return;
  const engines::EngineModule& m = engines::engine_module(e.kind);
  std::string others;
  for (const auto& r : m.releases) others += (others.empty() ? "" : ", ") + r.version;
  std::fprintf(stderr,
               "servelab: the flags were checked against %s %s (--engine-version or an image tag picks "
               "another modelled release: %s)\n",
               m.product_name, e.release.c_str(), others.c_str());
}

}  // namespace servelab::cli
