// A test engine registered from this one file: vLLM's rules under another name and program
// (`vllm-clone serve`), its resolution delegated to vLLM's module. Whatever runs a launch (sim run, tune's
// targets) must treat it as vLLM's launch, since every engine rule comes from the module and the resolved
// launch, none from the engine's name. Shared by the engines and tune tests (public headers only).
#pragma once

#include <variant>

#include "servelab/engines/engine_module.h"
#include "servelab/engines/launch.h"

namespace servelab::engines::testing {

inline constexpr auto kVllmClone = static_cast<EngineKind>(44);

inline std::variant<ResolvedLaunch, LaunchFailure> vllm_clone_resolve(const LaunchConfig& c,
                                                                      const model::ModelSpec& m,
                                                                      const hardware::ClusterSpec& cluster) {
  LaunchConfig as_vllm = c;
  as_vllm.kind = EngineKind::kVllm;
  auto r = engine_module(EngineKind::kVllm).resolve(as_vllm, m, cluster);
  if (auto* launch = std::get_if<ResolvedLaunch>(&r)) launch->config.kind = kVllmClone;
  return r;
}

/// Registers "vllmclone" once per process. Thread-safety: start-up only (register_engine_module).
inline void register_vllm_clone() {
  if (find_engine_module("vllmclone")) return;
  EngineModule m = engine_module(EngineKind::kVllm);
  m.kind = kVllmClone;
  m.name = "vllmclone";
  m.product_name = "vLLM clone";
  m.programs = {{"vllm-clone serve", "vllm-clone", "serve", false, "", ""}};
  m.images = {};
  m.resolve = vllm_clone_resolve;
  register_engine_module(std::move(m));
}

}  // namespace servelab::engines::testing
