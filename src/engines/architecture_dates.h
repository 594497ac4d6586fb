// servelab/engines private: publication dates of model architectures that several engines' bounds
// (EngineModule::architecture_releases) cite, written once.
#pragma once

#include <vector>

#include "servelab/engines/engine_module.h"

#define SERVELAB_QWEN35 \
  "Qwen3.5 was published on 2026-02-16 [recalled: Qwen blog, Qwen/Qwen3.5-* repositories]; "
#define SERVELAB_GLM5 "GLM-5 was published on 2026-02-11 [recalled: Z.ai release, zai-org/GLM-5]; "

namespace servelab::engines::detail {

/// Qwen3.5's dense and MoE architectures, published together: one bound for both.
inline void add_qwen35_release(std::vector<ArchitectureRelease>& rows, const char* first_release,
                               const char* why) {
  for (const char* a : {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})
    rows.push_back({a, first_release, why});
}

}  // namespace servelab::engines::detail
