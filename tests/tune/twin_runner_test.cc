// The twin runner against the real engine twin (src/sim): predicted metrics in bench's shape, and the
// study's start-up refusal reproduced as a failure result.
#include <gtest/gtest.h>

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/tokenizer/tokenizer.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/targets/targets.h"
#include "servelab/tune/tune.h"
#include "tune/targets/twin_runner.h"

namespace servelab::tune {
namespace {

TrialRequest request(const Study& s, const CandidateConfig& c, const std::vector<std::string>& scenarios) {
  Rendered r = render(s, c);
  TrialRequest req;
  req.trial_key = "t";
  req.engine = c.engine;
  req.argv = r.argv;
  req.env = r.env;
  for (const auto& id : scenarios) req.scenarios.push_back(s.scenario(id));
  return req;
}

TEST(TwinRunner, PredictsTheScenarioInBenchsShape) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  TrialOutcome o =
      make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out", "random-2000in-100out"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  EXPECT_TRUE(o.predicted);
  ASSERT_EQ(o.scenarios.size(), 2u);
  const auto& m = o.scenarios[0].metrics;
  EXPECT_EQ(m.at("Successful requests"), 1000);
  EXPECT_EQ(m.at("Total input tokens"), 128000);  // fixed lengths: 1000 × 128
  EXPECT_GT(m.at("Total Token throughput (tok/s)"), 0);
  EXPECT_NEAR(m.at("Total Token throughput (tok/s)"),
              (m.at("Total input tokens") + m.at("Total generated tokens")) / m.at("Benchmark duration (s)"),
              1e-6 * m.at("Total Token throughput (tok/s)"));
  EXPECT_EQ(o.scenarios[0].result_block.rfind("============ Serving Benchmark Result ============", 0), 0u);
  EXPECT_EQ(o.scenarios[0].ttft_ms.size(), 1000u);
  EXPECT_EQ(o.scenarios[1].metrics.at("Total input tokens"), 500 * 2000);
  // The prediction's error band travels with it (report.md prints it); SGLang on 8xH200 is inside the
  // validation corpus, so no warning.
  EXPECT_GT(m.at(kBandTokSMetric), 1.0);
  EXPECT_GT(m.at(kBandTtftMetric), 1.0);
  EXPECT_GT(m.at(kBandTpotMetric), 1.0);
  EXPECT_EQ(m.at(kTwinWarningsMetric), 0);
}

// A study that names no vLLM release gets what sim run gets: Qwen3.5 moves past the module's default 0.13.0
// (which predates the architecture) to 0.17.1; with 0.13.0 named, the trial is the start-up refusal.
TEST(TwinRunner, AStudyWithoutAReleaseMovesPastTheArchitectureBound) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  s.model = "Qwen/Qwen3.5-9B";
  for (auto& e : s.engines) e.version.clear();
  const CandidateConfig vllm{"vllm", {}};
  TrialOutcome o = make_twin_runner(s)(request(s, vllm, {"random-128in-4out"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  for (auto& e : s.engines)
    if (e.name == "vllm") e.version = "0.13.0";
  o = make_twin_runner(s)(request(s, vllm, {"random-128in-4out"}));
  EXPECT_EQ(o.status, TrialStatus::kStartupRefused) << o.reason;
  EXPECT_NE(o.reason.find("vLLM 0.13.0 predates Qwen3_5ForConditionalGeneration"), std::string::npos)
      << o.reason;
}

// Before anything runs (tune's check_engine_flags): a named release that predates the model's architecture
// cannot start any configuration; an engine without a named release is not checked (the twin takes one that
// can), nor one with check_flags = false; the shipped study's engines can all load DeepSeek-V3.2.
TEST(TwinRunner, ModelRefusalsNameTheEnginesWhoseReleaseCannotLoadTheModel) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  EXPECT_TRUE(model_refusals(s).empty());
  s.model = "Qwen/Qwen3.5-9B";
  for (auto& e : s.engines) e.version = e.name == "vllm" ? "0.13.0" : "";
  auto r = model_refusals(s);
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].engine, "vllm");
  EXPECT_NE(r[0].message.find("vLLM 0.13.0 predates Qwen3_5ForConditionalGeneration"), std::string::npos)
      << r[0].message;
  for (auto& e : s.engines) e.check_flags = e.name != "vllm";
  EXPECT_TRUE(model_refusals(s).empty());
}

// Issue 29 §4: a launch on a kernel path the twin has no figure for says so in its metrics (count and name):
// TensorRT-LLM's DeepSeek Sparse Attention before Blackwell (engines/trtllm/trtllm_launch.cc), so the report
// widens its band (tune/twin_verdict.h). SGLang's path is modelled: 0 and no name.
TEST(TwinRunner, UnmodelledKernelPathsTravelWithThePrediction) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  TrialOutcome o = make_twin_runner(s)(request(s, {"trtllm", {}}, {"random-128in-4out"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  const auto& m = o.scenarios.at(0).metrics;
  EXPECT_EQ(m.at(kTwinUnmodelledMetric), 1);
  EXPECT_EQ(m.at(std::string(kTwinUnmodelledPathPrefix) +
                 "DeepSeek Sparse Attention through TensorRT-LLM before Blackwell"),
            1);
  EXPECT_GE(m.at(kTwinWarningsMetric), 1);
  // The warning's text under the result block, as `sim run` prints it.
  EXPECT_NE(
      o.scenarios.at(0).result_block.find(std::string(kTwinNotePrefix) +
                                          "warning: not modelled, this prediction can be far off: DeepSeek "
                                          "Sparse Attention through TensorRT-LLM before Blackwell"),
      std::string::npos)
      << o.scenarios.at(0).result_block;
  TrialOutcome sglang = make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out"}));
  ASSERT_EQ(sglang.status, TrialStatus::kOk) << sglang.reason;
  EXPECT_EQ(sglang.scenarios.at(0).metrics.at(kTwinUnmodelledMetric), 0);
  for (const auto& [key, value] : sglang.scenarios.at(0).metrics)
    EXPECT_NE(key.rfind(kTwinUnmodelledPathPrefix, 0), 0u) << key;
}

TEST(TwinRunner, StartupRefusalIsAFailureResult) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  TrialOutcome o =
      make_twin_runner(s)(request(s, {"vllm", {{"attention_backend", "FLASHMLA"}}}, {"random-128in-4out"}));
  EXPECT_NE(o.status, TrialStatus::kOk);
  EXPECT_NE(o.reason.find("FLASHMLA"), std::string::npos) << o.reason;
  EXPECT_TRUE(o.scenarios.empty());
}

// A start-up refusal whose text names memory is a refusal, not out of memory (new-user trial: a memory
// fraction of 1.5 read as "oom" and was retried "to save memory"); a memory plan that does not fit is.
TEST(TwinRunner, ARefusalNamingMemoryIsNotOutOfMemory) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  for (auto& e : s.engines)
    if (e.name == "vllm") e.base_flags.insert(e.base_flags.end(), {"--gpu-memory-utilization", "1.5"});
  TrialOutcome o = make_twin_runner(s)(request(s, {"vllm", {}}, {"random-128in-4out"}));
  EXPECT_EQ(o.status, TrialStatus::kStartupRefused) << o.reason;
  EXPECT_NE(o.reason.find("GPU memory fraction 1.5 is outside (0, 1]"), std::string::npos) << o.reason;
  // vLLM TP1 + DP8 + EP8 at its full 163,840-token context does not fit (the reference study's OOM).
  Study full = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  o = make_twin_runner(full)(
      request(full, {"vllm", {{"parallelism", "tp1-dp8-ep8"}}}, {"random-128in-4out"}));
  EXPECT_EQ(o.status, TrialStatus::kOutOfMemory) << o.reason;
}

// When the study's ShareGPT file is present, the twin samples it with vLLM's rules and the model's
// tokenizer (the same lengths `bench serve` would send) and the data note names the file; without it the
// built-in sharegpt-1000 workload is used and the note says so.
TEST(TwinRunner, UsesTheRealShareGptFileWhenPresent) {
  const auto dir = std::filesystem::temp_directory_path() / "servelab_twin_sharegpt_test";
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(common::data_dir() / "sharegpt_pairs_sample.json",
                             dir / "ShareGPT_V3_unfiltered_cleaned_split.json",
                             std::filesystem::copy_options::overwrite_existing);
  Study real = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", dir);
  EXPECT_NE(twin_data_note(real).find("real file"), std::string::npos) << twin_data_note(real);
  TrialOutcome o = make_twin_runner(real)(request(real, {"sglang", {}}, {"sharegpt-1000"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  dataset::DatasetOptions d;
  d.dataset_name = "sharegpt";
  d.dataset_path = (dir / "ShareGPT_V3_unfiltered_cleaned_split.json").string();
  d.num_prompts = 1000;
  long long input = 0;
  for (const auto& r : dataset::sample_requests(d, tokenizer::load_tokenizer(real.model)))
    input += r.prompt_len;
  EXPECT_EQ(o.scenarios[0].metrics.at("Total input tokens"), static_cast<double>(input));
  std::filesystem::remove_all(dir);

  Study builtin =
      load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  if (!std::filesystem::exists(common::data_dir() / "ShareGPT_V3_unfiltered_cleaned_split.json") &&
      !std::filesystem::exists(common::cache_dir() / "data" / "ShareGPT_V3_unfiltered_cleaned_split.json")) {
    EXPECT_NE(
        twin_data_note(builtin).find("sharegpt-1000: the twin's built-in ShareGPT lengths (1000 prompts"),
        std::string::npos)
        << twin_data_note(builtin);
    TrialOutcome b = make_twin_runner(builtin)(request(builtin, {"sglang", {}}, {"sharegpt-1000"}));
    ASSERT_EQ(b.status, TrialStatus::kOk) << b.reason;
    EXPECT_EQ(b.scenarios[0].metrics.at("Total input tokens"), 219111);
  }
}

/// The shipped study with its sharegpt-1000 scenario drawing `prompts` prompts of a real ShareGPT file under
/// its own name in the data directory (no file name the twin knows) and `common` added to [bench]
/// common_args.
Study real_sharegpt_study(int prompts, const std::vector<std::string>& common) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  s.bench_common_args.insert(s.bench_common_args.end(), common.begin(), common.end());
  for (auto& sc : s.scenarios)
    if (sc.id == "sharegpt-1000")
      sc.args = {"--dataset-name",
                 "sharegpt",
                 "--dataset-path",
                 "sharegpt_pairs_sample.json",
                 "--num-prompts",
                 std::to_string(prompts),
                 "--seed",
                 "0",
                 "--sharegpt-output-len",
                 "7"};
  return s;
}

// Issue 30 §6: the bench flags of a study reach the twin as they reach `sim run`: the tokenizer given in
// [bench] common_args (tune's twin used the model's), --sharegpt-output-len, and a real ShareGPT file found
// in the data directory under its own name.
TEST(TwinRunner, TheStudysBenchFlagsReachTheTwin) {
  const std::string gpt2 = (common::data_dir() / "gpt2-tokenizer.json").string();
  const Study s = real_sharegpt_study(50, {"--tokenizer", gpt2});
  TrialOutcome o = make_twin_runner(s)(request(s, {"sglang", {}}, {"sharegpt-1000"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  dataset::DatasetOptions d;
  d.dataset_name = "sharegpt";
  d.dataset_path = (common::data_dir() / "sharegpt_pairs_sample.json").string();
  d.num_prompts = 50;
  d.sharegpt_output_len = 7;
  long long gpt2_input = 0, model_input = 0;
  for (const auto& r : dataset::sample_requests(d, tokenizer::load_tokenizer(gpt2)))
    gpt2_input += r.prompt_len;
  for (const auto& r : dataset::sample_requests(d, tokenizer::load_tokenizer(s.model)))
    model_input += r.prompt_len;
  ASSERT_NE(gpt2_input, model_input);  // the two tokenizers count differently: the test tells them apart
  EXPECT_EQ(o.scenarios[0].metrics.at("Total input tokens"), static_cast<double>(gpt2_input));
  EXPECT_EQ(o.scenarios[0].metrics.at("Total generated tokens"), 50.0 * 7);
  EXPECT_EQ(o.scenarios[0].metrics.at("Successful requests"), 50.0);
  EXPECT_NE(twin_data_note(s).find("sharegpt-1000: bench's sharegpt sampling of the real file " +
                                   *d.dataset_path + " (50 prompts, seed 0) with the tokenizer " + gpt2),
            std::string::npos)
      << twin_data_note(s);
}

// Issue 30 §6: a tokenizer the twin cannot load failed all 39 trials one by one, each with the message cut to
// "tried: - file Qw)"; it now stops the study before the first trial, with the loader's whole message and the
// fix.
TEST(TwinRunner, AMissingTokenizerStopsTheStudyOnceWithTheWholeMessage) {
  const Study s = real_sharegpt_study(50, {"--tokenizer", "/nonexistent/Qwen3-tokenizer.json"});
  try {
    make_twin_runner(s);
    FAIL() << "no error";
  } catch (const TuneSetupError& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.rfind("scenario sharegpt-1000: the engine twin cannot load the tokenizer "
                      "\"/nonexistent/Qwen3-tokenizer.json\": ",
                      0),
              0u)
        << m;
    EXPECT_NE(m.find("tried:\n  - file /nonexistent/Qwen3-tokenizer.json (does not exist)"),
              std::string::npos)
        << m;
    // No advice that fails next (new-user trial: "drop --dataset-path" made bench refuse a sharegpt
    // scenario without one): the built-in lengths stand in only for a file not on this machine.
    EXPECT_NE(
        m.find("give --tokenizer FILE or ORG/NAME in the scenario's args or in [bench] common_args. (The "
               "twin's built-in ShareGPT lengths of the model's tokenizer family stand in only for a "
               "--dataset-path that is not on this machine"),
        std::string::npos)
        << m;
    EXPECT_EQ(m.find("drop --dataset-path"), std::string::npos) << m;
  }
  // Where the twin only guides a local study's SLO searches, the study goes on: the twin's predictions fail
  // with the same whole message.
  Study local = s;
  local.target = Target::kLocal;
  local.search.strategy = Strategy::kGrid;
  const TrialOutcome guide = make_twin_runner(local)(request(local, {"sglang", {}}, {"sharegpt-1000"}));
  EXPECT_EQ(guide.status, TrialStatus::kError);
  EXPECT_NE(guide.reason.find("tried:\n  - file /nonexistent/Qwen3-tokenizer.json (does not exist)"),
            std::string::npos)
      << guide.reason;
  // run_study: the setup error, no trial recorded.
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_twin_tok_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  EXPECT_THROW(run_study(s, opt), TuneSetupError);
  if (std::filesystem::exists(dir / "results.sqlite")) {
    EXPECT_EQ(Store(dir / "results.sqlite").trials().size(), 0u);
  }
  std::filesystem::remove_all(dir);
}

// Issue 30 §6: a model the twin cannot resolve failed every trial of a twin study one by one ("engine twin:
// ..."); it stops the study once. A local study the twin only guides still runs (its predictions fail).
TEST(TwinRunner, AModelTheTwinCannotResolveStopsATwinStudyOnce) {
  ::setenv("HF_HUB_OFFLINE", "1", 1);  // no network: the Hub is not asked
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  s.model = "acme/no-such-model";
  try {
    make_twin_runner(s);
    ADD_FAILURE() << "no error";
  } catch (const TuneSetupError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the engine twin cannot resolve the model acme/no-such-model: ", 0),
              0u)
        << e.what();
  }
  s.search.strategy = Strategy::kTwinGuided;
  s.target = Target::kLocal;
  EXPECT_THROW(make_twin_runner(s), TuneSetupError);  // a twin-guided search ranks on the twin
  s.search.strategy = Strategy::kGrid;
  const TrialOutcome o = make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out"}));
  EXPECT_EQ(o.status, TrialStatus::kError);
  EXPECT_EQ(o.reason.rfind("engine twin: ", 0), 0u) << o.reason;
  // The dry-run's plan counts them as not predicted (it printed "benchmark time: 0.00 h predicted").
  s.search.strategy = Strategy::kGreedy;
  const StudyPlan plan = plan_study(s);
  EXPECT_GT(plan.tally.errors, 0);
  EXPECT_EQ(plan.tally.errors, plan.tally.trials - plan.tally.pruned);
  EXPECT_EQ(plan.tally.first_error_reason.rfind("engine twin: ", 0), 0u) << plan.tally.first_error_reason;
  ::unsetenv("HF_HUB_OFFLINE");
}

// Issue 30 §6: the resolver's hint named `--model-config`, a flag tune lacks. A study now gives the config
// itself ([model] config, {data_dir} substituted), with the ModelOpt file beside it read as engines do.
TEST(TwinRunner, AStudyGivesTheModelConfigItself) {
  ::setenv("HF_HUB_OFFLINE", "1", 1);
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  s.model = "acme/no-such-model";
  try {
    make_twin_runner(s);
    ADD_FAILURE() << "no error";
  } catch (const TuneSetupError& e) {
    EXPECT_NE(std::string(e.what()).find("a tune study: [model] config = \"FILE\""), std::string::npos)
        << e.what();
  }
  const std::string text =
      "[study]\nname = \"x\"\ntarget = \"twin\"\n[model]\nid = \"acme/no-such-model\"\n"
      "config = \"{data_dir}/model-configs/aic/nvidia--DeepSeek-V3.2-NVFP4_config.json\"\n"
      "[hardware]\ngpu = \"B200\"\ngpu_count = 8\n[[engines]]\nname = \"sglang\"\nkind = "
      "\"sglang\"\nversion = \"0.5.6.post2\"\ncommand = [\"python3\", \"-m\", "
      "\"sglang.launch_server\", \"--model-path\", \"{model}\", \"--tp-size\", \"8\"]\n"
      "[[scenarios]]\nid = \"r\"\nargs = [\"--dataset-name\", \"random\", \"--random-input-len\", "
      "\"1000\", \"--random-output-len\", \"100\", \"--num-prompts\", \"50\"]\n[objective]\n"
      "scenarios = [\"r\"]\n";
  const Study t = parse_study(text, "x.toml", common::data_dir());
  EXPECT_EQ(t.model_config,
            (common::data_dir() / "model-configs/aic/nvidia--DeepSeek-V3.2-NVFP4_config.json").string());
  const TrialOutcome o = make_twin_runner(t)(request(t, {"sglang", {}}, {"r"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  EXPECT_GT(o.scenarios.at(0).metrics.at("Total Token throughput (tok/s)"), 0);
  ::unsetenv("HF_HUB_OFFLINE");
}

// Issue 30 §1 (found by a review): the SLO search's longer runs ("s@r2n1300") ran the scenario's own prompt
// count on the twin, which drew each scenario's workload once, so a "longer" run was the same short run.
TEST(TwinRunner, ALongerRunOfTheSloSearchRunsItsOwnPrompts) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  TrialRequest req = request(s, {"sglang", {}}, {});
  req.scenarios.push_back(load_scenario(s, "random-128in-4out@r2n1300"));
  req.scenarios.push_back(load_scenario(s, "random-128in-4out@r2"));
  const TrialOutcome o = make_twin_runner(s)(req);
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  ASSERT_EQ(o.scenarios.size(), 2u);
  EXPECT_EQ(o.scenarios[0].metrics.at("Successful requests"), 1300);
  EXPECT_EQ(o.scenarios[1].metrics.at("Successful requests"), 1000);
  EXPECT_GT(o.scenarios[0].metrics.at(kArrivalSpanMetric), o.scenarios[1].metrics.at(kArrivalSpanMetric));
}

// Issue 30 §6: --random-range-ratio reached `sim run` but not tune's twin, which drew every random prompt at
// exactly --random-input-len; the twin now takes bench's own draw with the model's tokenizer.
TEST(TwinRunner, RandomRangeRatioReachesTheTwin) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  for (auto& sc : s.scenarios)
    if (sc.id == "random-128in-4out")
      sc.args = {"--dataset-name",
                 "random",
                 "--random-input-len",
                 "128",
                 "--random-output-len",
                 "4",
                 "--num-prompts",
                 "40",
                 "--seed",
                 "42",
                 "--random-range-ratio",
                 "0.5"};
  TrialOutcome o = make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out"}));
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason;
  dataset::DatasetOptions d;
  d.dataset_name = "random";
  d.num_prompts = 40;
  d.seed = 42;
  d.random_input_len = 128;
  d.random_output_len = 4;
  d.random_range_ratio = {0.5, 0.5};
  long long input = 0, output = 0;
  for (const auto& r : dataset::sample_requests(d, tokenizer::load_tokenizer(s.model))) {
    input += r.prompt_len;
    output += r.output_len;
  }
  ASSERT_NE(input, 40 * 128);  // the range moved the lengths: the test tells the two draws apart
  EXPECT_EQ(o.scenarios[0].metrics.at("Total input tokens"), static_cast<double>(input));
  EXPECT_EQ(o.scenarios[0].metrics.at("Total generated tokens"), static_cast<double>(output));
  EXPECT_NE(
      twin_data_note(s).find("random-128in-4out: bench's random sampling (40 prompts, seed 42) with the "
                             "tokenizer deepseek-ai/DeepSeek-V3.2"),
      std::string::npos)
      << twin_data_note(s);
}

}  // namespace
}  // namespace servelab::tune
