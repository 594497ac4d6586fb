// EngineConfig helpers.
#include "engines/engine_config.h"

#include "engines/engines.h"

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

int EngineConfig::gpus_used() const {
  // SGLang's DP-attention splits one TP group's GPUs into dp attention ranks (tp % dp == 0), so dp adds
  // no GPUs; TRT-LLM's enable_attention_dp likewise (dp = tp). vLLM's -dp adds replicas; its dcp reuses
  // the TP GPUs.
  if (kind != EngineKind::kVllm && enable_dp_attention) return tp * pp;
  return tp * pp * dp;
}

const char* failure_phase_name(FailurePhase phase) {
  return phase == FailurePhase::kStartup ? "startup" : "runtime";
}

EngineArgError::EngineArgError(EngineKind k, std::string message)
    : std::runtime_error(std::move(message)), kind(k) {}

}  // namespace servelab::engines
