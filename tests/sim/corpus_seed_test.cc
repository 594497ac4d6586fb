// The seed-measurements.json loader: a bare array of one study's runs takes its model, node, engine
// releases and prompt counts from the study record (seed-study.md) beside it, none from code. A fixture
// record with other values than the reference study's shows that; then the real reference files.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "servelab/common/paths.h"
#include "servelab/sim/corpus.h"

namespace sim = servelab::sim;

namespace {

constexpr const char* kRecord = R"J(# A study
## Setup
- Model: Qwen/Qwen3-32B (dense).
- Hardware: 2 × H100 SXM (80 GB each), NVLink.
- Engines: vLLM 0.11.0, SGLang 0.5.3, TensorRT-LLM 1.2.0rc1.

## Workload scenarios
| id | dataset | prompts | input tokens | output tokens |
|---|---|---|---|---|
| sharegpt-1000 | ShareGPT | 1000 | from data | from data |
| random-2000in-100out ("medium") | random | 250 | 2000 | 100 |
)J";

constexpr const char* kRuns = R"J([
 {"engine": "sglang", "config": "tp2", "scenario": "random-2000in-100out",
  "command": "python3 -m sglang.launch_server --model-path Qwen/Qwen3-32B --tp-size 2", "env": [],
  "metrics": {"Successful requests": 250.0, "Total Token throughput (tok/s)": 4000.0,
              "Total input tokens": 500000.0, "Total generated tokens": 25000.0}},
 {"engine": "trtllm", "config": "tp2", "scenario": "sharegpt-1000",
  "command": "trtllm-serve Qwen/Qwen3-32B --tp_size 2", "env": [], "metrics": "withheld"}
])J";

std::filesystem::path fixture_dir(const char* tag, bool with_record) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("servelab_seed_" + std::string(tag) + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "seed-measurements.json") << kRuns;
  if (with_record) std::ofstream(dir / "seed-study.md") << kRecord;
  return dir;
}

}  // namespace

TEST(CorpusSeed, FactsComeFromTheStudyRecord) {
  const auto dir = fixture_dir("record", true);
  const auto c = sim::load_corpus(dir);
  std::filesystem::remove_all(dir);
  ASSERT_EQ(c.points.size(), 2u);
  ASSERT_EQ(c.studies.size(), 1u);
  EXPECT_EQ(c.studies[0], "qwen3-32b__h100");
  const auto& s = c.points[0];
  EXPECT_EQ(s.id, "qwen3-32b__h100#sglang/tp2@random-2000in-100out");
  EXPECT_EQ(s.gpu, "H100");
  EXPECT_EQ(s.gpu_count, 2);
  EXPECT_EQ(s.engine_version, "0.5.3");
  EXPECT_EQ(s.workload.dataset, "random");
  EXPECT_EQ(s.workload.num_prompts, 250);
  EXPECT_EQ(s.workload.input_len, 2000);
  EXPECT_EQ(s.workload.output_len, 100);
  const auto& t = c.points[1];
  EXPECT_EQ(t.engine_version, "1.2.0rc1");
  EXPECT_EQ(t.workload.dataset, "sharegpt");
  EXPECT_EQ(t.workload.num_prompts, 1000);
  EXPECT_EQ(t.status, sim::CorpusPoint::Status::kWithheld);
}

TEST(CorpusSeed, WithoutItsRecordTheArrayIsRefusedByName) {
  const auto dir = fixture_dir("norecord", false);
  try {
    sim::load_corpus(dir);
    ADD_FAILURE() << "loaded a seed array without its study record";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("seed-study.md"), std::string::npos) << e.what();
  }
  // A record that lacks the node line says so.
  std::ofstream(dir / "seed-study.md") << "- Model: a/b\n- Engines: vLLM 0.11.0\n## Workload scenarios\n"
                                          "| id | prompts |\n|---|---|\n| sharegpt-1000 | 10 |\n";
  try {
    sim::load_corpus(dir);
    ADD_FAILURE() << "loaded a record without its hardware line";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("Hardware"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

TEST(CorpusSeed, TheReferenceStudyAsItsRecordStatesIt) {
  const auto ref = servelab::common::data_dir().parent_path() / "reference";
  const auto c = sim::load_corpus(ref / "seed-measurements.json");
  ASSERT_FALSE(c.points.empty());
  EXPECT_EQ(c.studies.size(), 1u);
  EXPECT_EQ(c.studies[0], "deepseek-v3.2__h200");
  int short_prompts = 0;
  for (const auto& p : c.points) {
    EXPECT_EQ(p.gpu, "H200");
    EXPECT_EQ(p.gpu_count, 8);
    if (p.engine == "vllm") EXPECT_EQ(p.engine_version, "0.13.0");
    if (p.engine == "sglang") EXPECT_EQ(p.engine_version, "0.5.6.post2");
    if (p.engine == "trtllm") EXPECT_EQ(p.engine_version, "1.2.0rc5");
    if (p.workload.key == "random-32000in-100out") EXPECT_EQ(p.workload.num_prompts, 100);
    if (p.workload.key == "random-4000in-200out") EXPECT_EQ(p.workload.num_prompts, 500);
    if (p.workload.key == "random-128in-4out") short_prompts = p.workload.num_prompts;
  }
  EXPECT_EQ(short_prompts, 1000);
  // The TTFT tail and median the stall rule reads (sim::mark_ttft_stalls), from "P99 / Median TTFT (ms)";
  // and from a perflab point's metrics (glm-4.5-air__h100#000).
  const auto tp8 = std::find_if(c.points.begin(), c.points.end(), [](const auto& p) {
    return p.id == "deepseek-v3.2__h200#sglang/baseline-tp8@sharegpt-1000";
  });
  ASSERT_NE(tp8, c.points.end());
  EXPECT_DOUBLE_EQ(*tp8->measured.p99_ttft_ms, 22363.9);
  EXPECT_DOUBLE_EQ(*tp8->measured.median_ttft_ms, 11240.35);
  const auto lab = sim::load_corpus(ref / "perflab" / "measurements.json");
  ASSERT_EQ(lab.points.front().id, "glm-4.5-air__h100#000");
  EXPECT_DOUBLE_EQ(*lab.points.front().measured.p99_ttft_ms, 19975.18);
  EXPECT_DOUBLE_EQ(*lab.points.front().measured.median_ttft_ms, 16164.27);
}
