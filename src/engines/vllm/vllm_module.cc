// vLLM's engine module (engine_module.h): how it is started, its releases, its hooks and the
// architectures that need a newer release than some modelled ones.
#include <string>
#include <vector>

#include "engines/architecture_dates.h"
#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "engines/vllm/vllm_defaults.h"
#include "engines/vllm/vllm_detail.h"

namespace servelab::engines::detail {
namespace {

// The modelled releases, oldest first (the reference study's and the perflab corpus' engine_version of
// each point), each with the family of its fitted parameters.
const std::vector<EngineRelease>& vllm_releases() {
  static const std::vector<EngineRelease> kReleases = {{"0.10.2", "vllm-0.10"},
                                                       {"0.11.0", "vllm-0.11"},
                                                       {"0.13.0", "vllm-0.11"},
                                                       {"0.17.1", "vllm-0.17"},
                                                       {"0.24.0", "vllm-0.17"}};
  return kReleases;
}

// Architecture bounds (ArchitectureRelease): a model published after a release cannot be loaded by it. Only
// bounds whose dates are known are listed; an architecture without one is accepted on every release.
std::vector<ArchitectureRelease> vllm_architecture_releases() {
  std::vector<ArchitectureRelease> rows = {
      {"GptOssForCausalLM", "0.10.1",
       "gpt-oss was published on 2025-08-05 with day-0 support in vLLM 0.10.1 [recalled: vLLM blog]"},
      {"Qwen3NextForCausalLM", "0.10.2",
       "Qwen3-Next was published on 2025-09-11 with support in vLLM 0.10.2 [recalled: vLLM blog]"},
      {"DeepseekV32ForCausalLM", "0.11.0",
       "DeepSeek-V3.2-Exp was published on 2025-09-29, in a vLLM release from 0.11.0 [recalled: vLLM blog]"},
      {"Qwen3VLForConditionalGeneration", "0.11.0",
       "Qwen3-VL was published on 2025-09-23; vLLM 0.10.2 (2025-09-13 [recalled]) predates it [recalled]"},
      {"Qwen3VLMoeForConditionalGeneration", "0.11.0",
       "Qwen3-VL was published on 2025-09-23; vLLM 0.10.2 (2025-09-13 [recalled]) predates it [recalled]"},
      {"KimiK25ForConditionalGeneration", "0.14.0",
       "Kimi K2.5 was published on 2026-01-27 [recalled]; vLLM 0.13.0 (2025-12 [recalled]) predates it"},
      {"GlmMoeDsaForCausalLM", "0.16.0", SERVELAB_GLM5 "vLLM 0.15.1 (2026-02-04 [recalled]) predates it"},
  };
  detail::add_qwen35_release(rows, "0.16.0",
                             SERVELAB_QWEN35 "vLLM 0.15.1 (2026-02-04 [recalled]) predates it");
  return rows;
}

// How bench reads vLLM's Prometheus `/metrics` (V1, 0.8-0.13: vllm/v1/metrics/loggers.py; the older
// gpu_* names of the V0 engine after them). Prefix-cache queries and hits count tokens.
metrics::ServerMetricNames vllm_server_metrics() {
  metrics::ServerMetricNames n;
  n.engine = "vllm";
  n.prefix = "vllm:";
  n.prefix_cache_unit = "tokens";
  n.kv_cache_usage = {"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"};
  n.num_requests_running = {"vllm:num_requests_running"};
  n.num_requests_waiting = {"vllm:num_requests_waiting"};
  n.preemptions_total = {"vllm:num_preemptions_total", "vllm:num_preemptions"};
  n.prefix_cache_queries_total = {"vllm:prefix_cache_queries_total", "vllm:prefix_cache_queries",
                                  "vllm:gpu_prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries"};
  n.prefix_cache_hits_total = {"vllm:prefix_cache_hits_total", "vllm:prefix_cache_hits",
                               "vllm:gpu_prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits"};
  n.spec_decode_num_drafts_total = {"vllm:spec_decode_num_drafts_total"};
  n.spec_decode_draft_tokens_total = {"vllm:spec_decode_num_draft_tokens_total"};
  n.spec_decode_accepted_tokens_total = {"vllm:spec_decode_num_accepted_tokens_total"};
  return n;
}

}  // namespace

EngineModule vllm_module() {
  return {EngineKind::kVllm,
          "vllm",
          "vLLM",
          vllm_releases(),
          kVllmDefaults.version.value,
          {{"vllm serve", "vllm", "serve", false, "", ""},
           {"python3 -m vllm.entrypoints.openai.api_server", "", "", false,
            "vllm.entrypoints.openai.api_server", "--model"}},
          // vllm/vllm-openai's entrypoint is `vllm serve` [recalled: the image's Dockerfile ENTRYPOINT].
          {{"vllm"}, {"vllm-openai"}},
          {"VLLM_"},
          parse_vllm,
          render_vllm,
          render_env_vllm,
          resolve_vllm,
          check_request_vllm,
          heads_indivisible_error_vllm,
          {"--config", &LaunchConfig::config_file, false, true, apply_cli_config_yaml},
          /*dp_attention_within_tp=*/false,
          stated_node_placement_vllm,
          node_launch_vllm,
          /*multi_node_one_job=*/false,
          {2.5, 10.0},
          "",
          "/reset_prefix_cache",
          "vllm",
          vllm_server_metrics(),
          vllm_architecture_releases()};
}

}  // namespace servelab::engines::detail
