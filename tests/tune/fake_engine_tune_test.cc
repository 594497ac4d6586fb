// `tune --target twin` with an engine registered by the test (tests/engines/vllm_clone.h): the study names
// it by its module's name, tune renders its program, and the twin predicts every trial. Own test binary: the
// registration is global to the process.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>

#include "../engines/vllm_clone.h"
#include "servelab/common/paths.h"
#include "servelab/tune/study/study.h"
#include "servelab/tune/tune.h"

namespace servelab::tune {
namespace {

const char* kStudy = R"toml(
[study]
name = "clone"
target = "twin"

[model]
id = "Qwen/Qwen3-8B"

[hardware]
gpu = "H100"
gpu_count = 1

[[engines]]
name = "clone"
kind = "vllmclone"
version = "0.13.0"
command = ["vllm-clone", "serve", "{model}", "--host", "{host}", "--port", "{port}"]

[[knobs]]
name = "max-num-seqs"
type = "int"
values = [64, 256]
render.clone = [{flags = ["--max-num-seqs", "{value}"]}]

[[scenarios]]
id = "random-1k"
args = ["--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128", "--num-prompts", "100"]

[objective]
scenarios = ["random-1k"]

[search]
strategy = "grid"
)toml";

TEST(FakeEngineTune, ATwinStudyRunsAnEngineRegisteredByItsModule) {
  engines::testing::register_vllm_clone();
  const Study study = parse_study(kStudy, "clone.toml", common::data_dir());
  ASSERT_EQ(study.engines.size(), 1u);
  EXPECT_EQ(study.engines[0].kind, engines::testing::kVllmClone);
  const auto dir = std::filesystem::temp_directory_path() / ("servelab_clone_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions options;
  options.out_dir = dir;
  const TuneResult r = run_study(study, options);
  ASSERT_EQ(r.outcome.ranked.size(), 2u);  // the two knob values
  for (const auto& e : r.outcome.ranked) {
    EXPECT_EQ(e.status, TrialStatus::kOk) << e.label << ": " << e.reason;
    EXPECT_TRUE(e.predicted) << e.label;
    EXPECT_GT(e.objective.mean, 0.0) << e.label;
    EXPECT_EQ(e.shell.rfind("vllm-clone serve Qwen/Qwen3-8B", 0), 0u) << e.shell;
  }
  EXPECT_TRUE(std::filesystem::exists(dir / "report.md"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune
