// The twin runner against the real engine twin (src/sim): predicted metrics in bench's shape, and the
// study's start-up refusal reproduced as a failure result.
#include <gtest/gtest.h>

#include <filesystem>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/tokenizer/tokenizer.h"
#include "servelab/tune/space.h"
#include "tune/twin_runner.h"

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
  TrialOutcome o = make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out", "random-2000in-100out"}));
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

// Issue 29 §4: a launch on a kernel path the twin has no figure for says so in its metrics (count and name):
// TensorRT-LLM's DeepSeek Sparse Attention before Blackwell (engines/trtllm_launch.cc), so the report widens
// its band (tune/twin_verdict.h). SGLang's path is modelled: 0 and no name.
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
  TrialOutcome sglang = make_twin_runner(s)(request(s, {"sglang", {}}, {"random-128in-4out"}));
  ASSERT_EQ(sglang.status, TrialStatus::kOk) << sglang.reason;
  EXPECT_EQ(sglang.scenarios.at(0).metrics.at(kTwinUnmodelledMetric), 0);
  for (const auto& [key, value] : sglang.scenarios.at(0).metrics)
    EXPECT_NE(key.rfind(kTwinUnmodelledPathPrefix, 0), 0u) << key;
}

TEST(TwinRunner, StartupRefusalIsAFailureResult) {
  Study s = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  TrialOutcome o = make_twin_runner(s)(request(s, {"vllm", {{"attention_backend", "FLASHMLA"}}}, {"random-128in-4out"}));
  EXPECT_NE(o.status, TrialStatus::kOk);
  EXPECT_NE(o.reason.find("FLASHMLA"), std::string::npos) << o.reason;
  EXPECT_TRUE(o.scenarios.empty());
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
  for (const auto& r : dataset::sample_requests(d, tokenizer::load_tokenizer(real.model))) input += r.prompt_len;
  EXPECT_EQ(o.scenarios[0].metrics.at("Total input tokens"), static_cast<double>(input));
  std::filesystem::remove_all(dir);

  Study builtin = load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8.toml", common::data_dir());
  if (!std::filesystem::exists(common::data_dir() / "ShareGPT_V3_unfiltered_cleaned_split.json") &&
      !std::filesystem::exists(common::cache_dir() / "data" / "ShareGPT_V3_unfiltered_cleaned_split.json")) {
    EXPECT_NE(twin_data_note(builtin).find("sharegpt-1000: the twin's ShareGPT-1000 workload"), std::string::npos)
        << twin_data_note(builtin);
    TrialOutcome b = make_twin_runner(builtin)(request(builtin, {"sglang", {}}, {"sharegpt-1000"}));
    ASSERT_EQ(b.status, TrialStatus::kOk) << b.reason;
    EXPECT_EQ(b.scenarios[0].metrics.at("Total input tokens"), 219111);
  }
}

}  // namespace
}  // namespace servelab::tune
