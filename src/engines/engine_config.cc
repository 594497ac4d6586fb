// LaunchConfig helpers.
#include "servelab/engines/engine_config.h"

#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {

const char* engine_kind_name(EngineKind kind) {
  for (const auto& m : engine_modules())
    if (m.kind == kind) return m.name;
  return "unknown";
}

std::optional<EngineKind> engine_kind_from_name(const std::string& name) {
  if (const EngineModule* m = find_engine_module(name)) return m->kind;
  return std::nullopt;
}

int LaunchConfig::gpus_used() const {
  // SGLang's DP-attention splits one TP group's GPUs into dp attention ranks (tp % dp == 0), so dp adds
  // no GPUs; TRT-LLM's enable_attention_dp likewise (dp = tp). vLLM's -dp adds replicas; its dcp reuses
  // the TP GPUs (EngineModule::dp_attention_within_tp).
  if (enable_dp_attention && engine_module(kind).dp_attention_within_tp) return tp * pp;
  return tp * pp * dp;
}

std::optional<LaunchConfig::NodePlacement> LaunchConfig::stated_node_placement() const {
  return engine_module(kind).stated_node_placement(*this);
}

const char* failure_phase_name(FailurePhase phase) {
  return phase == FailurePhase::kStartup ? "startup" : "runtime";
}

EngineArgError::EngineArgError(EngineKind k, std::string message)
    : std::runtime_error(std::move(message)), kind(k) {}

}  // namespace servelab::engines
