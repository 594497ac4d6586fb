// TensorRT-LLM's engine module (engine_module.h): how it is started, its releases, its hooks and the
// architectures that need a newer release than some modelled ones.
#include <string>
#include <utility>
#include <vector>

#include "engines/architecture_dates.h"
#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "engines/trtllm/trtllm_defaults.h"
#include "engines/trtllm/trtllm_detail.h"

namespace servelab::engines::detail {
namespace {

// The modelled releases, oldest first (the reference study's and the perflab corpus' engine_version of
// each point), each with the family of its fitted parameters.
const std::vector<EngineRelease>& trtllm_releases() {
  static const std::vector<EngineRelease> kReleases = {
      {"1.0.0", "trtllm-1.0"}, {"1.2.0rc1", "trtllm-1.2"}, {"1.2.0rc5", "trtllm-1.2"}};
  return kReleases;
}

// Architecture bounds (ArchitectureRelease): a model published after a release cannot be loaded by it. Only
// bounds whose dates are known are listed; an architecture without one is accepted on every release.
std::vector<ArchitectureRelease> trtllm_architecture_releases() {
  std::vector<ArchitectureRelease> rows = {
      {"GlmMoeDsaForCausalLM", "1.2.0",
       SERVELAB_GLM5 "TensorRT-LLM 1.2.0rc5 (2025-12 [recalled]) predates it"},
      {"KimiK25ForConditionalGeneration", "1.2.0",
       "Kimi K2.5 was published on 2026-01-27 [recalled]; TensorRT-LLM 1.2.0rc5 (2025-12 [recalled]) "
       "predates it"},
  };
  detail::add_qwen35_release(rows, "1.2.0",
                             SERVELAB_QWEN35 "TensorRT-LLM 1.2.0rc5 (2025-12 [recalled]) predates it");
  return rows;
}

// How bench reads TensorRT-LLM's `/metrics`: `trtllm-serve` answers JSON iteration statistics, not
// Prometheus text: a list of `{"iter", "numActiveRequests", "numQueuedRequests", "kvCacheStats":
// {"usedNumBlocks", "maxNumBlocks", "reusedBlocks", "missedBlocks", ...}, "specDecodingStats":
// {"numRequestsWithDraftTokens", "numDraftTokens", "numAcceptedTokens"}, ...}` since the previous GET
// (tensorrt_llm/serve/openai_server.py get_iteration_stats, executor IterationStats). Its kvCacheStats count
// prefix-cache reuse in KV-cache blocks, cumulative; specDecodingStats are per iteration.
metrics::ServerMetricNames trtllm_server_metrics() {
  metrics::ServerMetricNames n;
  n.engine = "trtllm";
  n.prefix_cache_unit = "blocks";
  metrics::IterationStatsKeys k;
  k.entry_keys = {"iter", "numActiveRequests"};
  k.num_requests_running = "numActiveRequests";
  k.num_requests_waiting = "numQueuedRequests";
  k.kv_cache_blocks_used = "kvCacheStats.usedNumBlocks";
  k.kv_cache_blocks_total = "kvCacheStats.maxNumBlocks";
  k.prefix_cache_hits = "kvCacheStats.reusedBlocks";
  k.prefix_cache_misses = "kvCacheStats.missedBlocks";
  k.spec_decode_num_drafts = "specDecodingStats.numRequestsWithDraftTokens";
  k.spec_decode_draft_tokens = "specDecodingStats.numDraftTokens";
  k.spec_decode_accepted_tokens = "specDecodingStats.numAcceptedTokens";
  n.iteration_stats = std::move(k);
  return n;
}

}  // namespace

EngineModule trtllm_module() {
  return {EngineKind::kTrtllm,
          "trtllm",
          "TensorRT-LLM",
          trtllm_releases(),
          kTrtllmDefaults.version.value,
          {{"trtllm-serve", "trtllm-serve", "serve", true, "", ""}},
          {{"tensorrt-llm", "tensorrt_llm", "trtllm"}, {}},
          {"TRTLLM_", "TLLM_"},
          parse_trtllm,
          render_trtllm,
          render_env_trtllm,
          resolve_trtllm,
          check_request_trtllm,
          no_heads_error,
          {"--extra_llm_api_options", &LaunchConfig::extra_llm_api_options, false, false,
           apply_trtllm_config_yaml},
          /*dp_attention_within_tp=*/true,
          stated_node_placement_trtllm,
          node_launch_trtllm,
          /*multi_node_one_job=*/true,
          {1.5, 5.0},
          "",
          "",
          "trtllm",
          trtllm_server_metrics(),
          trtllm_architecture_releases()};
}

}  // namespace servelab::engines::detail
