// `tune --target local` with an engine registered by the test (tests/engines/vllm_clone.h): the study names
// it by its module's name and launches `vllm-clone serve ...`, a two-line script that runs the vLLM stand-in
// (tools/standins/bin/vllm: `servelab sim serve` with this build's binary, serving through the engine twin).
// tune renders the clone's command from its module, launches it, waits for it to be ready, benchmarks it with
// bench's library (its /metrics read by the table's names), records each trial and stops the engine. Own
// test binary: the registration is global to the process. 2 trials of 16 short requests, ~5-15 s: the
// stand-in runs at time scale 0.1 (ten times slower than real time), so that a busy host's scheduling
// delays stay far inside bench's trust bounds on the twin's timing (at scale 1 three CPU hogs on two cores
// made the trials "invalid timing": the last token 3-7 ms late in a 0.2 s run). At 0.1 a clean-clone
// `make test` still saw it once (4.3 ms late in a 279 ms run), hence the reruns in the test below.
#include <gtest/gtest.h>

#include <unistd.h>
#include <algorithm>

#include <filesystem>
#include <fstream>
#include <string>

#include "../engines/vllm_clone.h"
#include "servelab/common/paths.h"
#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/preflight.h"
#include "servelab/tune/tune.h"
#include "test_ports.h"
#include "tune/targets/local_runner.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

// The study: one clone engine, one knob of two values (two launches), one tiny random scenario. The
// tokenizer is GPT-2's from the data directory (no network for Qwen's).
std::string clone_study(const fs::path& clone, int port) {
  const std::string tokenizer = (common::data_dir() / "gpt2-tokenizer.json").string();
  return R"toml(
[study]
name = "clone-local"
target = "local"
host = "127.0.0.1"
port = )toml" +
         std::to_string(port) +
         R"toml(

[model]
id = "Qwen/Qwen3-8B"

[hardware]
gpu = "H100"
gpu_count = 1

[bench]
common_args = ["--tokenizer", ")toml" +
         tokenizer + R"toml("]

[[engines]]
name = "clone"
kind = "vllmclone"
version = "0.13.0"
command = [")toml" +
         clone.string() + R"toml(", "serve", "{model}", "--host", "{host}", "--port", "{port}"]
ready_timeout_s = 120
stop_grace_s = 10

[[knobs]]
name = "max-num-seqs"
type = "int"
values = [8, 16]
render.clone = [{flags = ["--max-num-seqs", "{value}"]}]

[[scenarios]]
id = "random-tiny"
args = ["--dataset-name", "random", "--random-input-len", "64", "--random-output-len", "8", "--num-prompts", "16", "--seed", "1"]

[objective]
scenarios = ["random-tiny"]

[search]
strategy = "grid"
)toml";
}

struct FakeEngineLocal : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("servelab_clone_local_" + std::to_string(::getpid()));
  int port = testing::free_port();
  fs::path clone = dir / "bin" / "vllm-clone";

  void SetUp() override {
    engines::testing::register_vllm_clone();
    fs::remove_all(dir);
    fs::create_directories(dir / "bin");
    // The stand-in's twin counts prompts with Qwen3-8B's tokenizer: GPT-2's stands in for it, in a Hugging
    // Face cache of its own (offline).
    const fs::path snapshot = dir / "hf" / "models--Qwen--Qwen3-8B" / "snapshots" / "gpt2";
    fs::create_directories(snapshot);
    fs::copy_file(common::data_dir() / "gpt2-tokenizer.json", snapshot / "tokenizer.json");
    // `vllm-clone ARGS` is the vLLM stand-in's `vllm ARGS`, served by this build's servelab.
    std::ofstream(clone)
        << "#!/bin/sh\nexport SERVELAB_BIN='" SERVELAB_BINARY "' SERVELAB_DATA_DIR='"
        << common::data_dir().string() << "' HF_HUB_CACHE='" << (dir / "hf").string()
        << "' HF_HUB_OFFLINE=1 SERVELAB_STANDIN_TIME_SCALE=0.1 SERVELAB_STANDIN_STARTUP_S=0.2 "
           "SERVELAB_STANDIN_HARDWARE=1xH100\nexec '"
        << SERVELAB_STANDINS_DIR "/bin/vllm' \"$@\"\n";
    fs::permissions(clone, fs::perms::owner_all);
  }
  void TearDown() override { fs::remove_all(dir); }
};

TEST_F(FakeEngineLocal, PreflightAsksTheEnginesVersionAsItsModuleSays) {
  const Study study = parse_study(clone_study(clone, port), "clone.toml", common::data_dir());
  const PreflightReport r = run_preflight(study, PreflightOptions::from_process());
  ASSERT_EQ(r.engine_versions.count("clone"), 1u) << r.text();
  EXPECT_EQ(r.engine_versions.at("clone"), "0.13.0");  // `vllm-clone --version`: the stand-in's vLLM 0.13.0
  EXPECT_TRUE(r.standins) << r.text();
  for (const auto& c : r.checks)
    if (c.name == "engine clone") {
      EXPECT_EQ(c.result, PreflightCheck::Result::kOk) << c.detail;
      EXPECT_NE(c.detail.find("servelab stand-in"), std::string::npos) << c.detail;
    }
}

TEST_F(FakeEngineLocal, ALocalStudyLaunchesBenchmarksRecordsAndStopsIt) {
  const Study study = parse_study(clone_study(clone, port), "clone.toml", common::data_dir());
  ASSERT_EQ(study.engines.size(), 1u);
  EXPECT_EQ(study.engines[0].kind, engines::testing::kVllmClone);
  // A busy host can make bench refuse a run's timing (TrialStatus::kInvalid, "the host is too busy for this
  // scale"): that is bench doing its job, not the engine path under test, so the study is run again, up to
  // three times in all, in a fresh directory; every assertion below is on a run whose timing was trusted.
  TuneOptions options;
  TuneResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    options.out_dir = dir / ("out" + std::to_string(attempt));
    r = run_study(study, options);
    const bool busy = std::any_of(r.outcome.ranked.begin(), r.outcome.ranked.end(),
                                  [](const auto& e) { return e.status == TrialStatus::kInvalid; });
    if (!busy) break;
  }
  ASSERT_EQ(r.outcome.ranked.size(), 2u);  // the two knob values
  for (const auto& e : r.outcome.ranked) {
    EXPECT_EQ(e.status, TrialStatus::kOk) << e.label << ": " << e.reason;
    EXPECT_FALSE(e.predicted) << e.label;  // measured on the launched engine, not the twin's in-process play
    EXPECT_GT(e.objective.mean, 0.0) << e.label;
    EXPECT_EQ(e.shell.rfind(
                  clone.string() + " serve Qwen/Qwen3-8B --host 127.0.0.1 --port " + std::to_string(port), 0),
              0u)
        << e.shell;
    ASSERT_EQ(e.first.count("random-tiny"), 1u) << e.label;
    const ScenarioResult& s = e.first.at("random-tiny");
    EXPECT_EQ(s.metrics.at("Successful requests"), 16.0) << e.label;
    // bench scraped the stand-in's /metrics (vLLM's names: the clone's module copies vLLM's).
    EXPECT_NE(s.result_block.find("engine names: vllm)"), std::string::npos) << s.result_block;
  }
  // Both knob values reached the engine's command line, each its own launch.
  int with_8 = 0, with_16 = 0;
  for (const auto& e : r.outcome.ranked) {
    with_8 += e.shell.find(" --max-num-seqs 8") != std::string::npos;
    with_16 += e.shell.find(" --max-num-seqs 16") != std::string::npos;
  }
  EXPECT_EQ(with_8, 1);
  EXPECT_EQ(with_16, 1);
  EXPECT_EQ(r.tally.launches, 2);
  EXPECT_EQ(r.tally.trials, 2);
  EXPECT_EQ(r.tally.refused + r.tally.invalid + r.tally.errors, 0);
  EXPECT_TRUE(fs::exists(options.out_dir / "results.sqlite"));
  EXPECT_TRUE(fs::exists(options.out_dir / "report.md"));
  // The engine is stopped when its trial ends: nothing answers on the port.
  EXPECT_EQ(http_get_status("127.0.0.1", port, "/health", 2.0), 0);
}

}  // namespace
}  // namespace servelab::tune
