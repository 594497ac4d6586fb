#include <gtest/gtest.h>

#include <algorithm>

#include "test_study.h"
#include "tune/study_report.h"

namespace servelab::tune {
namespace {

struct Fixture {
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), "twin", nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
};

TEST(Report, GainTableMatchesHandComputedValues) {
  Fixture f;
  GainTable g = gain_table(f.outcome);
  ASSERT_EQ(g.rows.size(), 2u);
  // a baseline 100 → b tp4-dp2 135: +35%; then ctx 135 → 148.5: +10%; total 148.5/100: +48.5%.
  EXPECT_EQ(g.rows[0].optimization, "layout=tp4-dp2 (a baseline → b layout=tp4-dp2)");
  EXPECT_NEAR(g.rows[0].gain_pct, 35.0, 1e-9);
  EXPECT_EQ(g.rows[1].optimization, "ctx=32768");
  EXPECT_NEAR(g.rows[1].gain_pct, 10.0, 1e-9);
  EXPECT_EQ(g.no_gain, (std::vector<std::string>{"flag"}));
  EXPECT_NEAR(g.total_pct, 48.5, 1e-9);
}

TEST(Report, MarkdownHasTheStudyShape) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {{"data", "fake"}}};
  const std::string md = render_markdown(in);
  for (const char* s : {"## Goal", "## Setup", "### Workload scenarios", "## Baselines", "## Optimizations tried",
                        "## Gains along the greedy path", "## Generalization", "## Recommended launch command",
                        "| layout=tp4-dp2 (a baseline → b layout=tp4-dp2) | +35.00% |", "| ctx=32768 | +10.00% |",
                        "| flag | no gain |", "| total over the baseline | +48.50% |", "| s2 | 50.00 (predicted) | 64.12 (predicted) | +28.25% |",
                        "predicted", "rejected", "python3 -m sglang.launch_server --model-path org/model --chat-template x.jinja --tp-size 4 --dp-size 2\n"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
  const std::string html = render_html(in, md, "/*chartjs*/");
  EXPECT_NE(html.find("/*chartjs*/"), std::string::npos);
  EXPECT_NE(html.find("<h2>Gains along the greedy path</h2>"), std::string::npos);
  EXPECT_NE(html.find("PREDICTED"), std::string::npos);
  EXPECT_NE(html.find("new Chart("), std::string::npos);
  const std::string csv = trials_csv(in.trials);
  EXPECT_EQ(csv.rfind("trial_key,engine,config,phase", 0), 0u);
  EXPECT_NE(csv.find("\"twin|b{layout=tp4-dp2,ctx=32768}|s1|r0\",b,layout=tp4-dp2 + ctx=32768,greedy,0,ok,,1,"), std::string::npos) << csv;
  EXPECT_NE(trials_json(in.trials).find("\"status\": \"rejected\""), std::string::npos);
}

// Issue 30 item 4: report.md opens with the answer: the recommended command and its value, then the
// finalists; the goal, setup, baselines and search come after it (the command sat ~40 lines from the end).
TEST(Report, SummaryComesFirstWithTheRecommendedCommandAndTheFinalists) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string md = render_markdown(in);
  const size_t summary = md.find("## Summary\n\nObjective: maximise **Total Token throughput (tok/s)**.");
  const size_t goal = md.find("## Goal"), baselines = md.find("## Baselines");
  ASSERT_NE(summary, std::string::npos) << md;
  ASSERT_NE(goal, std::string::npos);
  EXPECT_EQ(md.find("## "), summary) << "the first section";
  EXPECT_LT(goal, baselines);
  const std::string cmd = f.outcome.recommended_command.shell();
  EXPECT_GT(md.find(cmd), summary);
  EXPECT_LT(md.find(cmd), goal) << cmd;
  const size_t finalists = md.find("Finalists (best first):");
  EXPECT_GT(finalists, md.find(cmd));
  EXPECT_LT(finalists, goal);
  // Best first: b tp4-dp2 + ctx 32768 at 148.5 (a baseline 100 × 1.35 × 1.1), then b tp4-dp2 at 135.
  EXPECT_NE(md.find("| 1 | b | layout=tp4-dp2 + ctx=32768 | 148.50 (predicted) |"), std::string::npos) << md;
  EXPECT_NE(md.find("| 2 | b | layout=tp4-dp2 | 135.00 (predicted) |"), std::string::npos) << md;
  EXPECT_LT(md.find("| 1 | b | layout=tp4-dp2 + ctx=32768"), goal);
  // The summary is short: the command within the first 20 lines.
  EXPECT_LT(std::count(md.begin(), md.begin() + static_cast<long>(md.find(cmd)), '\n'), 20);
}

// Issue 10 §4-5: a failed trial shows its engine log path and last lines; stand-ins, a time scale and a
// reduced workload are said at the top.
TEST(Report, FailuresShowTheEngineLogAndTheLabelsSayWhatTheNumbersAre) {
  Fixture f;
  f.study.prompts_scale = 0.05;
  std::vector<TrialRecord> trials = f.ev.records();
  TrialRecord failed = trials.back();
  failed.outcome.status = TrialStatus::kStartupRefused;
  failed.outcome.reason = "ValueError: Selected backend is not valid";
  failed.outcome.log_tail = "line 1\nline 2\nValueError: Selected backend is not valid\n";
  failed.log_path = "/out/logs/x.log";
  trials.push_back(failed);
  trials.front().outcome.scenarios.at(0).metrics[kTimeScaleMetric] = 20;
  ReportInput in{&f.study, &f.outcome, trials, {{"engine.a.reported", "1.0 (servelab stand-in)"}}};
  const std::string md = render_markdown(in);
  for (const char* s : {"| startup_refused | ValueError: Selected backend is not valid | 1 | `/out/logs/x.log` |",
                        "last lines of the engine log</summary>\n\n```\nline 1\nline 2\nValueError: Selected backend "
                        "is not valid\n```",
                        "> **Rehearsal on engine stand-ins**", "> **Time scale 20**: the servers ran 20 times faster",
                        "> **Reduced workload**: every scenario's --num-prompts × 0.05"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
}

// Issue 8 §6: the best and the recommended configuration show the twin's error band, and say when the twin
// warned about the launch.
TEST(Report, TwinPredictionsShowTheirErrorBand) {
  Fixture f;
  ASSERT_TRUE(f.outcome.best.feasible);
  for (auto* e : {&f.outcome.best, &f.outcome.recommended_eval})
    for (auto& [id, r] : e->first) {
      r.metrics[kBandTokSMetric] = 32.4;
      r.metrics[kBandTtftMetric] = 30.0;
      r.metrics[kBandTpotMetric] = 49.6;
      r.metrics[kTwinWarningsMetric] = e == &f.outcome.best ? 0 : 2;
    }
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string md = render_markdown(in);
  const std::string band = "Twin error band (leave-one-study-out residuals of this launch's class): ±32% total "
                           "tok/s, ±30% mean TTFT, ±50% mean TPOT.";
  const auto first = md.find(band);
  ASSERT_NE(first, std::string::npos) << md;
  EXPECT_NE(md.find(band, first + 1), std::string::npos) << "the recommended command's band";
  EXPECT_NE(md.find("**The twin gave 2 warning(s) for this launch**"), std::string::npos) << md;
  // Without band metrics (a measured study) there is no band line.
  Fixture measured;
  EXPECT_EQ(render_markdown({&measured.study, &measured.outcome, measured.ev.records(), {}}).find("Twin error band"),
            std::string::npos);
}

TEST(Report, ParetoFront) {
  // (tpot, throughput): (10,100) (20,150) (15,90) (30,140) (5,50) → front by TPOT: 5/50, 10/100, 20/150.
  auto f = pareto_front({{10, 100}, {20, 150}, {15, 90}, {30, 140}, {5, 50}});
  EXPECT_EQ(f, (std::vector<size_t>{4, 0, 1}));
}

}  // namespace
}  // namespace servelab::tune
