// The shipped study renders the reference study's own commands: each knob fragment and the recommended
// command of seed-study.md, compared as words; and it prunes what the engines cannot express.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/study/study.h"

namespace servelab::tune {
namespace {

Study shipped() {
  return load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", "/data");
}

TEST(ShippedStudy, ParsesWithTheStudysSixScenarios) {
  Study s = shipped();
  EXPECT_EQ(s.name, "deepseek-v3.2-h200x8");
  EXPECT_EQ(s.scenarios.size(), 6u);
  EXPECT_EQ(s.engines.size(), 3u);
  EXPECT_EQ(s.objective.scenarios, (std::vector<std::string>{"sharegpt-1000"}));
  EXPECT_EQ(s.scenarios[4].args[3], "32000");
}

// The reference study's own text (../shared/reference/seed-study.md): the knob fragments it lists and its
// recommended command are compared, token for token, with what servelab renders — no engine parser on either
// side (issue 12: running both through parse_launch_command could hide a renderer and parser that agree on
// something the study never ran).
std::string seed_study_md() {
  return common::read_file(common::source_dir() / ".." / "shared" / "reference" / "seed-study.md");
}

// The backticked fragment of seed-study.md that starts with `prefix` (shell words), or a failure.
std::vector<std::string> fragment(const std::string& md, const std::string& prefix) {
  const std::size_t at = md.find("`" + prefix);
  if (at == std::string::npos) {
    ADD_FAILURE() << "seed-study.md has no `" << prefix << "...`";
    return {};
  }
  const std::size_t end = md.find('`', at + 1);
  return engines::split_command_line(md.substr(at + 1, end - at - 1));
}

// True when `words` stand in `argv` one after the other.
bool contains_run(const std::vector<std::string>& argv, const std::vector<std::string>& words) {
  return !words.empty() && std::search(argv.begin(), argv.end(), words.begin(), words.end()) != argv.end();
}

// A command as its flag groups (a flag and the values up to the next flag), program words dropped.
std::multiset<std::string> flag_groups(const std::vector<std::string>& argv,
                                       const std::set<std::string>& drop) {
  std::multiset<std::string> out;
  std::string group;
  auto flush = [&] {
    if (!group.empty() && !drop.contains(group.substr(0, group.find(' ')))) out.insert(group);
    group.clear();
  };
  for (const auto& w : argv) {
    if (w.rfind("--", 0) == 0 ||
        (w.size() > 1 && w[0] == '-' && !std::isdigit(static_cast<unsigned char>(w[1])))) {
      flush();
      group = w;
    } else if (!group.empty()) {
      group += " " + w;
    }
  }
  flush();
  return out;
}

TEST(ShippedStudy, RendersTheReferenceCommands) {
  Study s = shipped();
  const std::string md = seed_study_md();
  struct Case {
    CandidateConfig config;
    std::string literal;  // the start of the study's fragment
  };
  const std::vector<Case> cases = {
      {{"vllm", {{"parallelism", "tp1-dp8-ep8"}, {"context_length", "81920"}}},
       "-tp 1 -dp 8 --enable-expert-parallel"},
      {{"vllm", {{"parallelism", "tp1-dp8-ep8"}, {"context_length", "81920"}}}, "--max-model-len 81920"},
      {{"vllm", {{"mtp", "mtp1"}}}, "--speculative-config"},
      {{"sglang", {{"mtp", "mtp1"}}}, "--speculative-algorithm EAGLE"},
      {{"vllm", {{"parsers", "deepseek-v32"}}}, "--tool-call-parser deepseek_v32"},
      {{"sglang", {{"parsers", "deepseek-v32"}}}, "--reasoning-parser deepseek-v3 --tool-call-parser"},
      {{"vllm", {{"context_length", "32768"}}}, "--max-model-len 32768"},
      {{"sglang", {{"context_length", "32768"}}}, "--context-length=32768"},
      {{"sglang", {{"kv_cache_dtype", "fp8_e4m3"}}}, "--kv-cache-dtype fp8_e4m3"},
      {{"sglang", {{"attention_backend", "nsa-fa3"}}}, "--attention-backend nsa"},
      {{"sglang", {{"parallelism", "tp8-dp8-dpattn"}}}, "--enable-dp-attention"},
      {{"trtllm", {{"parallelism", "tp8-ep8"}}}, "--ep_size 8 --pp_size 1"},
  };
  for (const auto& c : cases) {
    const std::vector<std::string> want = fragment(md, c.literal);
    const Rendered r = render(s, c.config);
    EXPECT_TRUE(contains_run(r.argv, want)) << "`" << c.literal << "...` not in: " << r.shell();
  }
  // The fragment for vLLM MTP is the study's JSON, byte for byte.
  EXPECT_EQ(
      fragment(md, "--speculative-config"),
      (std::vector<std::string>{"--speculative-config", R"({"method":"mtp","num_speculative_tokens":1})"}));
  // DeepGEMM off: the study's environment assignments, one per engine.
  const std::map<std::string, std::string> dg = {{"vllm", "VLLM_USE_DEEP_GEMM=0"},
                                                 {"sglang", "SGLANG_ENABLE_JIT_DEEPGEMM=0"},
                                                 {"trtllm", "TRTLLM_DG_ENABLED=0"}};
  for (const auto& [engine, assignment] : dg) {
    ASSERT_NE(md.find("`" + assignment + "`"), std::string::npos) << assignment;
    const Rendered r = render(s, {engine, {{"deep_gemm", "false"}}});
    const std::string name = assignment.substr(0, assignment.find('='));
    ASSERT_TRUE(r.env.contains(name)) << engine;
    EXPECT_EQ(name + "=" + r.env.at(name), assignment);
  }
  // The baselines: the engine with TP=8 and nothing else of a knob.
  EXPECT_EQ(render(s, {"vllm", {}}).shell(),
            "vllm serve deepseek-ai/DeepSeek-V3.2 --host 127.0.0.1 --port 8000 "
            "--tokenizer-mode deepseek_v32 --reasoning-parser deepseek_v3 -tp 8");
  EXPECT_EQ(render(s, {"trtllm", {}}).shell(),
            "trtllm-serve deepseek-ai/DeepSeek-V3.2 --host 127.0.0.1 --port 8000 --tp_size 8");
  // The study's recommended command, flag for flag (order free; the model, host and port are where the
  // study file puts them: --model-path is SGLang's name of the study's --model).
  const std::vector<std::string> recommended = fragment(md, "python3 -m sglang.launch_server --model");
  const Rendered best =
      render(s, {"sglang", {{"parallelism", "tp8-dp8-dpattn"}, {"parsers", "deepseek-v32"}}});
  EXPECT_EQ(flag_groups(best.argv, {"--model-path", "--host", "--port"}),
            flag_groups(recommended, {"--model"}))
      << best.shell();
}

TEST(ShippedStudy, PrunesWhatTheEnginesCannotExpress) {
  Study s = shipped();
  EXPECT_EQ(*check_config(s, {"vllm", {{"parallelism", "tp8-dpattn"}}}),
            "vllm rejects parallelism=tp8-dpattn: vLLM has no DP-attention switch (use -dp with "
            "--enable-expert-parallel)");
  EXPECT_EQ(*check_config(s, {"sglang", {{"attention_backend", "FLASHMLA"}}}),
            "sglang rejects attention_backend=FLASHMLA: not an SGLang attention backend");
  EXPECT_EQ(*check_config(s, {"trtllm", {{"mtp", "mtp1"}}}),
            "trtllm has no setting for knob mtp (value mtp1)");
  EXPECT_FALSE(check_config(s, {"vllm", {{"dcp", "8"}}}));  // valid launch; fails at run time (twin/engine)
  for (const auto& e : s.engines) EXPECT_FALSE(check_config(s, {e.name, {}})) << e.name;
}

}  // namespace
}  // namespace servelab::tune
