// `servelab report DIR` replays a study from its results.sqlite: on the twin target its report must show
// what the run's own report showed, the twin's goodput band (issue 30 §2) included, although the band's two
// extra SLO searches are not stored trials and a replay runs nothing.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/tune.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

/// A twin-like runner (as in load_test's TwinGoodputBandIsPropagatedFromTheLatencyBands): P99 TTFT =
/// 100 ms × rate on engine a, 125 ms × rate on b, ±20% TTFT band; every request meets the run's own
/// --goodput TTFT bound when the P99 does, half of them otherwise. A run without --request-rate runs at 1.
TrialOutcome replay_twin_like(const TrialRequest& req) {
  TrialOutcome out;
  const double ms_per_req_s = req.config_key.rfind("b{", 0) == 0 ? 125 : 100;
  for (const auto& sc : req.scenarios) {
    const double x = testing::arg_value(sc.args, "--request-rate");
    out.scenarios.push_back(testing::twin_like_slo_result(sc, x == 0 ? 1 : x, ms_per_req_s));
  }
  return out;
}

// The bug: the replay's band searches had no twin to run on (the replaying evaluator has no runner), so
// every band came back 0 to the goodput (−100%/+0%) and "Measure these" listed every configuration.
TEST(ReportReplay, TwinGoodputBandIsTheRunsBand) {
  const Study s = parse_study(std::string(testing::kSmallStudy) +
                                  "\n[slo]\np99_ttft_ms = 2000\ntolerance_pct = 2\nmax_runs = 20\n"
                                  "\n[[objectives]]\nkind = \"slo_goodput\"\n"
                                  "\n[search]\nstrategy = \"grid\"\nablation = false\n",
                              "small.toml", "/data");
  ASSERT_EQ(s.target, Target::kTwin);
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_report_replay_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  opt.runner = replay_twin_like;
  const TuneResult run = run_study(s, opt);
  const std::string run_md = common::read_file(dir / "report.md");

  const SearchOutcome replay = report_study_dir(dir, nullptr);
  ASSERT_GE(run.outcome.load.slo.size(), 2u);
  ASSERT_EQ(replay.load.slo.size(), run.outcome.load.slo.size());
  for (size_t i = 0; i < run.outcome.load.slo.size(); ++i) {
    const SloResult& a = run.outcome.load.slo[i];
    const SloResult& b = replay.load.slo[i];
    EXPECT_EQ(b.config_key, a.config_key);
    ASSERT_TRUE(a.goodput_found) << a.label << ": " << a.note;
    ASSERT_TRUE(a.goodput_band_pct) << a.label;
    EXPECT_EQ(b.request_goodput_req_s, a.request_goodput_req_s) << a.label;
    // On engine a the band's low end is where P99 TTFT × 1.2 reaches 2000 ms (≈ 16.7 req/s, below the
    // goodput ≈ 20), its high end where × 0.8 does (≈ 25): a real band, not 0 to the goodput.
    EXPECT_GT(a.goodput_low_req_s, 0.5 * a.request_goodput_req_s) << a.label;
    EXPECT_GT(a.goodput_high_req_s, a.request_goodput_req_s) << a.label;
    ASSERT_TRUE(b.goodput_band_pct) << b.label;
    EXPECT_EQ(b.goodput_low_req_s, a.goodput_low_req_s) << a.label;
    EXPECT_EQ(b.goodput_high_req_s, a.goodput_high_req_s) << a.label;
    EXPECT_EQ(*b.goodput_band_pct, *a.goodput_band_pct) << a.label;
  }
  // The whole report ("Measure these" included) is the run's.
  EXPECT_EQ(common::read_file(dir / "report.md"), run_md);

  std::filesystem::remove_all(dir);
}

// A rehearsal (--prompts-scale) replayed: the store keeps the study file as written and the scale in its
// environment; the replay's report is the run's, banner and scaled --num-prompts included (new-user trial:
// it showed the full-size commands and no "Reduced workload" banner).
TEST(ReportReplay, ARehearsalKeepsItsScale) {
  const Study s = scale_prompts(parse_study(testing::kSmallStudy, "small.toml", "/data"), 0.5);
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_report_replay_scale_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  opt.runner = testing::fake_runner();
  run_study(s, opt);
  const std::string run_md = common::read_file(dir / "report.md");
  ASSERT_NE(run_md.find("> **Reduced workload**: every scenario's --num-prompts × 0.5"), std::string::npos)
      << run_md;
  report_study_dir(dir, nullptr);
  EXPECT_EQ(common::read_file(dir / "report.md"), run_md);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune
