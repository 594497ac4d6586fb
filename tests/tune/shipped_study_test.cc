// The shipped study renders the reference study's own commands: parsed by the engines' CLI rules, each
// config servelab launches equals the command the study ran (seed-measurements.json).
#include <gtest/gtest.h>
#include <fmt/format.h>

#include "common/paths.h"
#include "engines/engines.h"
#include "tune/space.h"
#include "tune/study.h"

namespace servelab::tune {
namespace {

Study shipped() {
  return load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", "/data");
}

/// The modelled fields that matter for the study, as one comparable string.
std::string summary(const engines::EngineConfig& c) {
  std::string env;
  for (const auto& [k, v] : c.env) env += k + "=" + v + ";";
  return fmt::format("kind={} model={} tp={} dp={} ep={} eep={} dpa={} maxlen={} kv={} attn={} nsa={}/{} dg={} spec={}:{} "
                     "tokmode={} reasoning={} tool={} auto_tool={} template={} env={}",
                     engines::engine_kind_name(c.kind), c.model, c.tp, c.dp, c.ep, c.enable_expert_parallel,
                     c.enable_dp_attention, c.max_model_len.value_or(0), c.kv_cache_dtype, c.attention_backend,
                     c.nsa_prefill_backend, c.nsa_decode_backend, c.deep_gemm,
                     c.speculative ? c.speculative->method : "", c.speculative ? c.speculative->num_speculative_tokens : 0,
                     c.tokenizer_mode, c.reasoning_parser, c.tool_call_parser, c.enable_auto_tool_choice,
                     c.chat_template, env);
}

std::string ours(const Study& s, const Config& c) {
  Rendered r = render(s, c);
  return summary(engines::parse_launch_command(r.argv, r.env));
}

std::string seed(const std::string& command, const std::vector<std::string>& env = {}) {
  return summary(engines::parse_launch_command(engines::split_command_line(command),
                                               engines::parse_env_assignments(env)));
}

TEST(ShippedStudy, ParsesWithTheStudysSixScenarios) {
  Study s = shipped();
  EXPECT_EQ(s.name, "deepseek-v3.2-h200x8");
  EXPECT_EQ(s.scenarios.size(), 6u);
  EXPECT_EQ(s.engines.size(), 3u);
  EXPECT_EQ(s.objective.scenarios, (std::vector<std::string>{"sharegpt-1000"}));
  EXPECT_EQ(s.scenarios[4].args[3], "32000");
}

TEST(ShippedStudy, RendersTheReferenceCommands) {
  Study s = shipped();
  const std::string v = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3";
  EXPECT_EQ(ours(s, {"vllm", {}}), seed(v));
  EXPECT_EQ(ours(s, {"vllm", {{"parallelism", "tp1-dp8-ep8"}, {"context_length", "81920"}}}),
            seed("vllm serve deepseek-ai/DeepSeek-V3.2 --tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3 "
                 "-tp 1 -dp 8 --enable-expert-parallel --max-model-len 81920"));
  EXPECT_EQ(ours(s, {"vllm", {{"mtp", "mtp1"}}}),
            seed(v + " --speculative-config '{\"method\":\"mtp\",\"num_speculative_tokens\":1}'"));
  EXPECT_EQ(ours(s, {"vllm", {{"deep_gemm", "false"}}}), seed(v, {"VLLM_USE_DEEP_GEMM=0"}));
  EXPECT_EQ(ours(s, {"vllm", {{"parsers", "deepseek-v32"}}}),
            seed(v + " --tool-call-parser deepseek_v32 --enable-auto-tool-choice"));
  EXPECT_EQ(ours(s, {"vllm", {{"attention_backend", "FLASHMLA"}}}), seed(v, {"VLLM_ATTENTION_BACKEND=\"FLASHMLA\""}));
  const std::string g = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --host 0.0.0.0 --port 8000 "
                        "--chat-template ./tool_chat_template_deepseekv32.jinja --tp-size 8";
  EXPECT_EQ(ours(s, {"sglang", {}}), seed(g));
  EXPECT_EQ(ours(s, {"sglang", {{"parallelism", "tp8-dp8-dpattn"},
                                {"parsers", "deepseek-v32"},
                                {"context_length", "32768"},
                                {"attention_backend", "nsa-fa3"}}}),
            seed(g + " --enable-dp-attention --dp 8 --reasoning-parser deepseek-v3 --tool-call-parser deepseekv32 "
                     "--context-length=32768 --attention-backend nsa --nsa-prefill-backend fa3 --nsa-decode-backend fa3"));
  EXPECT_EQ(ours(s, {"sglang", {{"kv_cache_dtype", "fp8_e4m3"}}}), seed(g + " --kv-cache-dtype fp8_e4m3"));
  EXPECT_EQ(ours(s, {"trtllm", {{"parallelism", "tp8-ep8"}}}),
            seed("trtllm-serve deepseek-ai/DeepSeek-V3.2 --tp_size 8 --ep_size 8 --pp_size 1"));
}

TEST(ShippedStudy, PrunesWhatTheEnginesCannotExpress) {
  Study s = shipped();
  EXPECT_EQ(*check_config(s, {"vllm", {{"parallelism", "tp8-dpattn"}}}),
            "vllm rejects parallelism=tp8-dpattn: vLLM has no DP-attention switch (use -dp with "
            "--enable-expert-parallel)");
  EXPECT_EQ(*check_config(s, {"sglang", {{"attention_backend", "FLASHMLA"}}}),
            "sglang rejects attention_backend=FLASHMLA: not an SGLang attention backend");
  EXPECT_EQ(*check_config(s, {"trtllm", {{"mtp", "mtp1"}}}), "trtllm has no setting for knob mtp (value mtp1)");
  EXPECT_FALSE(check_config(s, {"vllm", {{"dcp", "8"}}}));  // valid launch; fails at run time (twin/engine)
  for (const auto& e : s.engines) EXPECT_FALSE(check_config(s, {e.name, {}})) << e.name;
}

}  // namespace
}  // namespace servelab::tune
