// The study directory: a second tune without --resume refuses (results are never wiped), --fresh moves the
// old directory aside, --resume refuses a changed study file, and two tunes on one directory are refused
// with the holder's PID (issue 10 §4, issue 9 §3).
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "servelab/tune/store/store.h"
#include "servelab/tune/tune.h"
#include "test_study.h"
#include "tune/study_dir.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

struct StudyDirFixture : ::testing::Test {
  fs::path root = fs::temp_directory_path() / ("servelab-studydir-" + std::to_string(getpid()));
  fs::path dir = root / "out";
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  void SetUp() override { fs::remove_all(root); }
  void TearDown() override { fs::remove_all(root); }
  TuneOptions options(TrialRunner runner = testing::fake_runner()) {
    TuneOptions o;
    o.out_dir = dir;
    o.runner = std::move(runner);
    o.write_report = false;
    return o;
  }
  std::int64_t trials() { return Store(dir / "results.sqlite").trial_count(); }
};

TEST_F(StudyDirFixture, RerunWithoutResumeRefusesAndKeepsTheResults) {
  run_study(study, options());
  const std::int64_t before = trials();
  ASSERT_GT(before, 0);
  try {
    run_study(study, options());
    FAIL() << "a second run without --resume was accepted";
  } catch (const TuneSetupError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        (dir / "results.sqlite").string() + " already holds " + std::to_string(before) +
            " trial(s) of study 'small'; refusing to overwrite them. Use --resume to continue that study, "
            "--fresh to move the directory aside (" +
            dir.string() +
            ".<date>) and start over, or --out DIR "
            "for another directory");
  }
  EXPECT_EQ(trials(), before);
  // --resume on the same study file runs nothing again.
  int launches = 0;
  TuneOptions again = options(testing::fake_runner(&launches));
  again.resume = true;
  run_study(study, again);
  EXPECT_EQ(launches, 0);
}

TEST_F(StudyDirFixture, FreshMovesTheOldDirectoryAside) {
  run_study(study, options());
  const std::int64_t before = trials();
  TuneOptions fresh = options();
  fresh.fresh = true;
  run_study(study, fresh);
  std::vector<fs::path> aside;
  for (const auto& e : fs::directory_iterator(root))
    if (e.path() != dir) aside.push_back(e.path());
  ASSERT_EQ(aside.size(), 1u);
  EXPECT_EQ(aside[0].filename().string().rfind("out.", 0), 0u) << aside[0];
  EXPECT_EQ(aside[0].filename().string().size(), std::string("out.YYYYmmdd-HHMMSS").size()) << aside[0];
  EXPECT_EQ(Store(aside[0] / "results.sqlite").trial_count(), before);  // nothing lost
  EXPECT_EQ(trials(), before);                                          // the new run is complete too
}

TEST_F(StudyDirFixture, ResumeRefusesAChangedStudyFile) {
  run_study(study, options());
  std::string changed = testing::kSmallStudy;
  changed.replace(changed.find("goal = \"test study\""), 19, "goal = \"other goal\"");
  Study other = parse_study(changed, "small.toml", "/data");
  TuneOptions o = options();
  o.resume = true;
  try {
    run_study(other, o);
    FAIL() << "resumed with a different study file";
  } catch (const TuneSetupError& e) {
    EXPECT_NE(std::string(e.what()).find("--resume: the study file differs from the one"), std::string::npos)
        << e.what();
  }
}

TEST_F(StudyDirFixture, SecondTuneOnTheDirectoryIsRefusedWithTheHoldersPid) {
  std::string inner_error;
  bool tried = false;
  TrialRunner runner = [&](const TrialRequest& r) {
    if (!tried) {  // while the first tune holds the directory, a second one tries it
      tried = true;
      TuneOptions second = options();
      second.resume = true;
      try {
        run_study(study, second);
      } catch (const TuneSetupError& e) {
        inner_error = e.what();
      }
    }
    return testing::fake_runner()(r);
  };
  run_study(study, options(runner));
  ASSERT_TRUE(tried);
  const std::string pid = std::to_string(getpid());
  EXPECT_EQ(inner_error.rfind(dir.string() + " is in use by another servelab tune (pid " + pid + ": ", 0), 0u)
      << inner_error;
  EXPECT_NE(inner_error.find("Wait for it to finish or stop it (kill -INT " + pid + ")"), std::string::npos)
      << inner_error;
  // The lock goes with the run: the directory is free again.
  TuneOptions after = options();
  after.resume = true;
  EXPECT_NO_THROW(run_study(study, after));
}

// Issue 31: two tunes launching engines on one port recorded each other's bind failures as their
// configurations' start-up refusals. The port is locked as the directory is: the second is refused with
// the holder's PID, and the port is free again once the first lock is gone.
TEST_F(StudyDirFixture, SecondTuneOnThePortIsRefusedWithTheHoldersPid) {
  const int port = 40000 + getpid() % 20000;
  std::optional<detail::DirLock> first(detail::DirLock::port(port));
  try {
    detail::DirLock::port(port);
    FAIL() << "locked port " << port << " twice";
  } catch (const TuneSetupError& e) {
    const std::string pid = std::to_string(getpid());
    EXPECT_EQ(std::string(e.what()).rfind(
                  fmt::format("port {} is used by another servelab tune (pid {}: ", port, pid), 0),
              0u)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("or set [study] port to another port"), std::string::npos)
        << e.what();
  }
  first.reset();
  EXPECT_NO_THROW(detail::DirLock::port(port));
  fs::remove(detail::port_lock_path(port));
}

/// A runner that finds the machine unusable (engine missing, port taken) stops the study at once; the
/// finished trials stay in the database.
TEST_F(StudyDirFixture, StudyAbortStopsTheStudyAndKeepsFinishedTrials) {
  int launches = 0;
  TrialRunner runner = [&](const TrialRequest& r) {
    if (++launches == 3) throw StudyAbort("engine executable 'vllm' not found on PATH (/usr/bin)");
    return testing::fake_runner()(r);
  };
  try {
    run_study(study, options(runner));
    FAIL() << "the study went on";
  } catch (const StudyAbort& e) {
    EXPECT_EQ(std::string(e.what()), "engine executable 'vllm' not found on PATH (/usr/bin)");
  }
  EXPECT_EQ(launches, 3);
  std::int64_t measured = 0;
  for (const auto& t : Store(dir / "results.sqlite").trials())
    if (t.outcome.status == TrialStatus::kOk) ++measured;
  EXPECT_EQ(measured, 2);
}

}  // namespace
}  // namespace servelab::tune
