// SGLang's engine module (engine_module.h): how it is started, its releases, its hooks and the
// architectures that need a newer release than some modelled ones.
#include <string>
#include <vector>

#include "engines/architecture_dates.h"
#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/launch_detail.h"
#include "engines/sglang/sglang_defaults.h"
#include "engines/sglang/sglang_detail.h"

namespace servelab::engines::detail {
namespace {

// The modelled releases, oldest first (the reference study's and the perflab corpus' engine_version of
// each point), each with the family of its fitted parameters.
const std::vector<EngineRelease>& sglang_releases() {
  static const std::vector<EngineRelease> kReleases = {
      {"0.5.3rc0", "sglang-0.5.3"},    {"0.5.3", "sglang-0.5.3"},       {"0.5.3.post3", "sglang-0.5.3"},
      {"0.5.4.post2", "sglang-0.5.3"}, {"0.5.5.post1", "sglang-0.5.3"}, {"0.5.6.post2", "sglang-0.5.3"},
      {"0.5.9", "sglang-0.5.9"},       {"0.5.14", "sglang-0.5.9"}};
  return kReleases;
}

// Architecture bounds (ArchitectureRelease): a model published after a release cannot be loaded by it. Only
// bounds whose dates are known are listed; an architecture without one is accepted on every release.
std::vector<ArchitectureRelease> sglang_architecture_releases() {
  std::vector<ArchitectureRelease> rows = {
      {"Qwen3NextForCausalLM", "0.5.2",
       "Qwen3-Next was published on 2025-09-11 with support in SGLang 0.5.2 [recalled: LMSYS blog]"},
      {"KimiK25ForConditionalGeneration", "0.5.7",
       "Kimi K2.5 was published on 2026-01-27 [recalled]; SGLang 0.5.6.post2 (2025-12 [recalled]) predates "
       "it"},
      {"GlmMoeDsaForCausalLM", "0.5.8", SERVELAB_GLM5 "SGLang 0.5.7 (2026-01 [recalled]) predates it"},
  };
  detail::add_qwen35_release(rows, "0.5.8", SERVELAB_QWEN35 "SGLang 0.5.7 (2026-01 [recalled]) predates it");
  return rows;
}

// How bench reads SGLang's Prometheus `/metrics` (srt/metrics/collector.py): a hit-rate gauge and an
// acceptance-length gauge besides the counters; prefix-cache queries and hits count prompt tokens.
metrics::ServerMetricNames sglang_server_metrics() {
  metrics::ServerMetricNames n;
  n.engine = "sglang";
  n.prefix = "sglang:";
  n.prefix_cache_unit = "tokens";
  n.kv_cache_usage = {"sglang:token_usage"};
  n.num_requests_running = {"sglang:num_running_reqs"};
  n.num_requests_waiting = {"sglang:num_queue_reqs"};
  n.prefix_cache_queries_total = {"sglang:prompt_tokens_total"};
  n.prefix_cache_hits_total = {"sglang:cached_tokens_total"};
  n.prefix_cache_hit_rate = {"sglang:cache_hit_rate"};
  n.spec_decode_acceptance_length = {"sglang:spec_accept_length"};
  return n;
}

}  // namespace

EngineModule sglang_module() {
  return {EngineKind::kSglang,
          "sglang",
          "SGLang",
          sglang_releases(),
          kSglangDefaults.version.value,
          {{"python3 -m sglang.launch_server", "", "", false, "sglang.launch_server", "--model-path"},
           {"sglang serve", "sglang", "serve", false, "", "--model-path"}},
          {{"sglang"}, {}},
          {"SGLANG_", "SGL_"},
          parse_sglang,
          render_sglang,
          render_env_sglang,
          resolve_sglang,
          check_request_sglang,
          no_heads_error,
          {"--config", &LaunchConfig::config_file, true, false, apply_cli_config_yaml},
          /*dp_attention_within_tp=*/true,
          stated_node_placement_sglang,
          node_launch_sglang,
          /*multi_node_one_job=*/false,
          {2.0, 5.0},
          "sglang",
          "/flush_cache",
          "sglang",
          sglang_server_metrics(),
          sglang_architecture_releases()};
}

}  // namespace servelab::engines::detail
