// Resume after a kill: a child process runs a study and is SIGKILLed mid-way; --resume finishes it
// without re-running any finished trial, with the same outcome as an uninterrupted run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "servelab/tune/store/store.h"
#include "servelab/tune/tune.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

TEST(Resume, AfterSigkillSkipsFinishedTrials) {
  const fs::path dir = fs::temp_directory_path() / ("servelab-tune-resume-" + std::to_string(getpid()));
  fs::remove_all(dir);
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    TuneOptions opt;
    opt.out_dir = dir;
    opt.runner = [](const TrialRequest& r) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      return testing::fake_runner()(r);
    };
    try {
      run_study(study, opt);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child: %s\n", e.what());
      _exit(2);
    }
    _exit(0);
  }
  // Wait until a few trials are in the database, then kill the child mid-study.
  size_t seen = 0;
  for (int i = 0; i < 200 && seen < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (fs::exists(dir / "results.sqlite")) {
      try {
        seen = Store(dir / "results.sqlite").trials().size();
      } catch (const std::exception&) {
      }
    }
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the study ended before it could be killed: exit "
                                   << WEXITSTATUS(status) << ", " << seen << " trials seen";
  int done = 0;
  for (const auto& t : Store(dir / "results.sqlite").trials())
    if (t.outcome.status != TrialStatus::kRejected) ++done;
  ASSERT_GE(done, 2);
  ASSERT_LT(done, 11);

  int launches = 0;
  TuneOptions opt;
  opt.out_dir = dir;
  opt.resume = true;
  opt.runner = testing::fake_runner(&launches);
  TuneResult r = run_study(study, opt);
  // 16 launches in a full run (search_test: 11, then 5 for the grid check on the twin), none repeated.
  EXPECT_EQ(launches, 16 - done);
  EXPECT_EQ(r.outcome.best.key, "b{layout=tp4-dp2,ctx=32768}");
  EXPECT_EQ(r.outcome.recommended.knobs.size(), 2u);
  EXPECT_TRUE(fs::exists(dir / "report.md"));
  EXPECT_TRUE(fs::exists(dir / "report.html"));

  // `servelab report DIR` replays the stored study into the same outcome.
  SearchOutcome replay = report_study_dir(dir, nullptr);
  EXPECT_TRUE(replay.complete);
  EXPECT_EQ(replay.best.key, r.outcome.best.key);
  EXPECT_NEAR(replay.best.objective.mean, 148.5, 1e-9);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune
