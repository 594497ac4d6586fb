// LaunchConfig helpers.
#include "servelab/engines/engine_config.h"

#include "servelab/engines/engines.h"

namespace servelab::engines {

const char* engine_kind_name(EngineKind kind) {
  switch (kind) {
    case EngineKind::kVllm:
      return "vllm";
    case EngineKind::kSglang:
      return "sglang";
    case EngineKind::kTrtllm:
      return "trtllm";
  }
  return "unknown";
}

std::optional<EngineKind> engine_kind_from_name(const std::string& name) {
  for (EngineKind k : {EngineKind::kVllm, EngineKind::kSglang, EngineKind::kTrtllm})
    if (name == engine_kind_name(k)) return k;
  return std::nullopt;
}

int LaunchConfig::gpus_used() const {
  // SGLang's DP-attention splits one TP group's GPUs into dp attention ranks (tp % dp == 0), so dp adds
  // no GPUs; TRT-LLM's enable_attention_dp likewise (dp = tp). vLLM's -dp adds replicas; its dcp reuses
  // the TP GPUs.
  if (kind != EngineKind::kVllm && enable_dp_attention) return tp * pp;
  return tp * pp * dp;
}

std::optional<LaunchConfig::NodePlacement> LaunchConfig::stated_node_placement() const {
  const int world = gpus_used();
  auto ceil_div = [](int a, int b) { return (a + b - 1) / b; };
  if (kind == EngineKind::kSglang && nnodes > 1)
    return NodePlacement{nnodes, ceil_div(world, nnodes), "--nnodes " + std::to_string(nnodes)};
  if (kind == EngineKind::kVllm && dp_size_local && *dp_size_local > 0)
    return NodePlacement{ceil_div(dp, *dp_size_local), *dp_size_local * tp * pp,
                         "--data-parallel-size-local " + std::to_string(*dp_size_local)};
  if (kind == EngineKind::kTrtllm && gpus_per_node && *gpus_per_node > 0)
    return NodePlacement{ceil_div(world, *gpus_per_node), *gpus_per_node,
                         "--gpus_per_node " + std::to_string(*gpus_per_node)};
  return std::nullopt;
}

const char* failure_phase_name(FailurePhase phase) {
  return phase == FailurePhase::kStartup ? "startup" : "runtime";
}

EngineArgError::EngineArgError(EngineKind k, std::string message)
    : std::runtime_error(std::move(message)), kind(k) {}

}  // namespace servelab::engines
