// Speculative decoding acceptance: P(draft token i accepted | the ones before it accepted) at batch 1,
// per method and draft, each with its source. The twin lowers it at large batch (sim's model).
#include <algorithm>
#include <cctype>

#include "engines/launch_detail.h"

namespace servelab::engines::detail {
AcceptanceRow acceptance_for(SpeculativePolicy::Method method, const model::ModelSpec& m,
                             const std::string& draft_model) {
  using M = SpeculativePolicy::Method;
  switch (method) {
    case M::kMtp:
      if (m.model_type.rfind("deepseek", 0) == 0)
        return {0.85,
                "DeepSeek-V3 technical report (arXiv 2412.19437) §5.4.3: MTP second-token acceptance 85-90%; "
                "the lower end",
                true};
      return {0.85,
              "DeepSeek-V3 report's MTP acceptance (85-90%) transferred to this model's own MTP head "
              "[unverified for non-DeepSeek models]",
              false};
    case M::kEagle3:
      // The same figure for every EAGLE-3 head: who trained a head is not a property the twin can know
      // from a launch, and no source measures community heads apart (issue 29 §3: no study facts in code).
      return {0.8,
              "EAGLE-3 paper (arXiv 2503.01840): acceptance lengths of about 6 tokens on 8B targets (depth-8 "
              "tree); chain-equivalent per-token acceptance taken as 0.8 [unverified]",
              false};
    case M::kEagle:
      return {0.7,
              "EAGLE paper (arXiv 2401.15077): acceptance lengths ~3.5-4 on 7-13B targets (depth-5 tree); "
              "chain-equivalent per-token acceptance taken as 0.7 [unverified]",
              false};
    case M::kNgram:
      return {0.3,
              "n-gram prompt lookup: acceptance depends on how much the output copies the prompt; 0.3 for "
              "chat workloads [unverified]",
              false};
    case M::kDraftModel:
      return {0.6, "separate draft model: 0.6 [unverified; depends on the draft/target pair]", false};
  }
  return {0.5, "unknown method [unverified]", false};
}

}  // namespace servelab::engines::detail
