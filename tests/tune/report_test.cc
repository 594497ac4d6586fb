#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "test_study.h"
#include "tune/report/study_report.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {
namespace {

struct Fixture {
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
};

TEST(Report, GainTableMatchesHandComputedValues) {
  Fixture f;
  GainTable g = gain_table(f.outcome);
  ASSERT_EQ(g.rows.size(), 3u);
  // a baseline 100 → b baseline 90: -10% (the engine change, its own row); b baseline 90 → tp4-dp2 135:
  // +50%; then ctx 135 → 148.5: +10%; total 148.5/100: +48.5% (0.9 x 1.5 x 1.1).
  EXPECT_EQ(g.rows[0].optimization, "engine (a baseline → b baseline)");
  EXPECT_NEAR(g.rows[0].gain_pct, -10.0, 1e-9);
  EXPECT_EQ(g.rows[1].optimization, "layout=tp4-dp2");
  EXPECT_NEAR(g.rows[1].gain_pct, 50.0, 1e-9);
  EXPECT_EQ(g.rows[2].optimization, "ctx=32768");
  EXPECT_NEAR(g.rows[2].gain_pct, 10.0, 1e-9);
  EXPECT_EQ(g.no_gain, (std::vector<std::string>{"flag"}));
  EXPECT_NEAR(g.total_pct, 48.5, 1e-9);
}

// The path's engine's baseline failed: its first kept step is measured from the best baseline and says so.
TEST(Report, GainTableNamesTheEngineChangeWhenThatEnginesBaselineFailed) {
  Fixture f;
  SearchOutcome o = f.outcome;
  for (auto& p : o.engines)
    if (p.engine == "b") p.baseline.feasible = false;
  GainTable g = gain_table(o);
  ASSERT_EQ(g.rows.size(), 2u);
  EXPECT_EQ(g.rows[0].optimization, "layout=tp4-dp2 (a baseline → b layout=tp4-dp2; the b baseline failed)");
  EXPECT_NEAR(g.rows[0].gain_pct, 35.0, 1e-9);
  EXPECT_EQ(g.rows[1].optimization, "ctx=32768");
}

// Issue 29: a prediction the twin cannot support never wins a ranking. Engine a's baseline (100) runs on a
// kernel path the twin has no figure for; b's (90) does not: b's is the reference of every gain.
TEST(Report, BestBaselineIsNotOnAnUnmodelledPathWhenAnotherIsFeasible) {
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  TrialRunner unmodelled_a = [](const TrialRequest& req) {
    TrialOutcome out = testing::fake_runner()(req);
    if (req.config_key.rfind("a{", 0) == 0)
      for (auto& r : out.scenarios) r.metrics[kTwinUnmodelledMetric] = 1;
    return out;
  };
  Evaluator ev{study, unmodelled_a, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome o = run_search(study, ev, nullptr);
  EXPECT_EQ(o.best_baseline.config.engine, "b");
  EXPECT_NEAR(o.best_baseline.objective.mean, 90.0, 1e-9);
  const GainTable g = gain_table(o);
  ASSERT_FALSE(g.rows.empty());
  EXPECT_EQ(g.rows[0].optimization, "layout=tp4-dp2");  // no engine change: b is the reference
  EXPECT_NEAR(g.total_pct, 65.0, 1e-9);                 // 148.5 / 90
}

// The grid check found better than greedy (the search's best is then the grid's): the table still shows
// greedy's path, then the grid check's step from greedy's best to the grid's.
TEST(Report, GainTableShowsTheGreedyPathThenTheGridCheck) {
  Fixture f;
  SearchOutcome o = f.outcome;
  Evaluation grid = o.best;
  grid.key = "b{grid}";
  grid.label = "grid pick";
  grid.objective.mean = 163.35;  // 148.5 x 1.1
  o.grid_check = GridCheck{};
  o.best = grid;
  GainTable g = gain_table(o);
  ASSERT_EQ(g.rows.size(), 4u);
  EXPECT_EQ(g.rows[0].optimization, "engine (a baseline → b baseline)");
  EXPECT_EQ(g.rows[1].optimization, "layout=tp4-dp2");
  EXPECT_EQ(g.rows[2].optimization, "ctx=32768");
  EXPECT_EQ(g.rows[3].optimization, "grid check: b " + f.outcome.best.label + " → b grid pick");
  EXPECT_NEAR(g.rows[3].gain_pct, 10.0, 1e-9);
  EXPECT_NEAR(g.total_pct, 63.35, 1e-9);
}

TEST(Report, MarkdownHasTheStudyShape) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {{"data", "fake"}}};
  const std::string md = render_markdown(in);
  for (const char* s :
       {"## Goal", "## Setup", "### Workload scenarios", "## Baselines", "## Optimizations tried",
        "## Gains along the greedy path", "## Generalization", "## Recommended launch command",
        "| engine (a baseline → b baseline) | -10.00% |", "| layout=tp4-dp2 | +50.00% |",
        "| ctx=32768 | +10.00% |", "| flag | no gain |", "| total over the baseline | +48.50% |",
        "| s2 | 50.00 (predicted) | 64.12 (predicted) | +28.25% |", "predicted", "rejected",
        "python3 -m sglang.launch_server --model-path org/model --chat-template x.jinja --tp-size 4 "
        "--dp-size 2\n"})
    EXPECT_NE(md.find(s), std::string::npos) << s << "\n" << md;
  const std::string html = render_html(in, md, "/*chartjs*/");
  EXPECT_NE(html.find("/*chartjs*/"), std::string::npos);
  EXPECT_NE(html.find("<h2>Gains along the greedy path</h2>"), std::string::npos);
  EXPECT_NE(html.find("PREDICTED"), std::string::npos);
  EXPECT_NE(html.find("new Chart("), std::string::npos);
  const std::string csv = trials_csv(in.trials);
  EXPECT_EQ(csv.rfind("trial_key,engine,config,phase", 0), 0u);
  EXPECT_NE(
      csv.find("\"twin|b{layout=tp4-dp2,ctx=32768}|s1|r0\",b,layout=tp4-dp2 + ctx=32768,greedy,0,ok,,1,"),
      std::string::npos)
      << csv;
  EXPECT_NE(trials_json(in.trials).find("\"status\": \"rejected\""), std::string::npos);
}

// The study's goal and model are the user's text: in report.md a '<' would open an HTML tag (hiding the
// text in a renderer) and a '|' or newline would break the layout (new-user trial, session 17).
TEST(Report, TheGoalIsEscapedInTheMarkdown) {
  Fixture f;
  f.study.goal = "Beat <SXM> | a & b\nsecond line";
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("## Goal\n\nBeat &lt;SXM&gt; \\| a & b second line\n"), std::string::npos) << md;
  // A comparison stays readable in the Markdown source; what could open raw HTML does not (new-user trial:
  // "p99 TTFT &lt;= 2 s" in the Goal).
  EXPECT_EQ(md_escape("p99 TTFT <= 2 s, x > 3, y >= 4, <b>b</b> <!-- <?x <2"),
            "p99 TTFT <= 2 s, x > 3, y >= 4, &lt;b&gt;b&lt;/b&gt; &lt;!-- &lt;?x <2");
  EXPECT_EQ(md_escape("> quote"), "&gt; quote");
  EXPECT_EQ(md.find("<SXM>"), std::string::npos);
}

// On the twin the knob table's "significant" is the one-run threshold, and the report says so (a new-user
// trial read +2.49% "significant: yes" as a finding beside a ±14% band).
TEST(Report, OnTheTwinSignificantIsTheThresholdAndSaysSo) {
  Fixture f;
  ASSERT_FALSE(f.outcome.verdicts.empty());
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("On the twin a knob's gain is \"significant\" when the predicted gain exceeds "
                    "`search.min_gain_pct` (0.5%)"),
            std::string::npos)
      << md;
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
  const size_t finalists = md.find("Finalists (best first among each engine's search path");
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
  // The report names a log only where one was written (issue 30 §3: twin reports named logs/<trial>.log).
  const std::filesystem::path logs =
      std::filesystem::temp_directory_path() / ("servelab_report_logs_" + std::to_string(::getpid()));
  std::filesystem::create_directories(logs);
  std::ofstream(logs / "x.log") << failed.outcome.log_tail;
  failed.log_path = (logs / "x.log").string();
  trials.push_back(failed);
  TrialRecord unlogged = failed;  // the same failure on another config, its log never written
  unlogged.config_label = "layout=tp8";
  unlogged.config_key = "b{layout=tp8}";
  unlogged.log_path = (logs / "never-written.log").string();
  trials.push_back(unlogged);
  trials.front().outcome.scenarios.at(0).metrics[kTimeScaleMetric] = 20;
  ReportInput in{&f.study, &f.outcome, trials, {{"engine.a.reported", "1.0 (servelab stand-in)"}}};
  const std::string md = render_markdown(in);
  std::filesystem::remove_all(logs);
  EXPECT_NE(
      md.find("| b | layout=tp8 | startup_refused | ValueError: Selected backend is not valid | 1 |  |"),
      std::string::npos)
      << md;
  EXPECT_EQ(md.find("never-written.log"), std::string::npos);
  const std::string logged = "| startup_refused | ValueError: Selected backend is not valid | 1 | `" +
                             (logs / "x.log").string() + "` |";
  EXPECT_NE(md.find(logged), std::string::npos) << logged;
  for (const char* s :
       {"last lines of the engine log</summary>\n\n```\nline 1\nline 2\nValueError: Selected backend "
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
      if (e != &f.outcome.best)
        r.result_block += std::string(kTwinNotePrefix) + "warning: H100-PCIE was never measured | x\n" +
                          kTwinNotePrefix + "warning: not modelled: y\n" + kTwinNotePrefix +
                          "assumed draft acceptance 0.85 per draft token\n";
    }
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string md = render_markdown(in);
  const std::string band =
      "Twin error band (leave-one-study-out residuals of this launch's class): ±32% total "
      "tok/s, ±30% mean TTFT, ±50% mean TPOT.";
  const auto first = md.find(band);
  ASSERT_NE(first, std::string::npos) << md;
  EXPECT_NE(md.find(band, first + 1), std::string::npos) << "the recommended command's band";
  // The warnings themselves, listed (new-user trial: "`servelab sim run` on the command prints them").
  EXPECT_NE(md.find("**The twin gave 2 warning(s) for this launch** (outside its validation corpus or on a "
                    "kernel path it has no figure for):\n\n- warning: H100-PCIE was never measured \\| x\n"
                    "- warning: not modelled: y\n\nThe twin assumed:\n\n- assumed draft acceptance 0.85 per "
                    "draft token\n"),
            std::string::npos)
      << md;
  // A store of an older build has no notes under its blocks: the count says where to read them.
  for (auto& [id, r] : f.outcome.recommended_eval.first) r.result_block.clear();
  EXPECT_NE(
      render_markdown(in).find("**The twin gave 2 warning(s) for this launch** (outside its validation "
                               "corpus or on a kernel path it has no figure for): `servelab sim run` on "
                               "the command prints them."),
      std::string::npos);
  // Without band metrics (a measured study) there is no band line.
  Fixture measured;
  EXPECT_EQ(render_markdown({&measured.study, &measured.outcome, measured.ev.records(), {}})
                .find("Twin error band"),
            std::string::npos);
}

TEST(Report, ParetoFront) {
  // (tpot, throughput): (10,100) (20,150) (15,90) (30,140) (5,50) → front by TPOT: 5/50, 10/100, 20/150.
  auto f = pareto_front({{10, 100}, {20, 150}, {15, 90}, {30, 140}, {5, 50}});
  EXPECT_EQ(f, (std::vector<size_t>{4, 0, 1}));
}

// Issue 29 §4: the rule on its own. Higher is better: 148.50 × (1 − 10%) = 133.65 ≤ 135 × 1.10 = 148.50
// (inside); 120 × 1.10 = 132 < 133.65 (clear). Lower is better (TPOT): 10 × 1.20 = 12 ≥ 14 × 0.80 = 11.2
// (inside), < 16 × 0.80 = 12.8 (clear).
TEST(TwinVerdict, AdvantageInsideBandsBothDirections) {
  EXPECT_TRUE(advantage_inside_bands(148.5, 10, 135, 10, true));
  EXPECT_FALSE(advantage_inside_bands(148.5, 10, 120, 10, true));
  EXPECT_TRUE(advantage_inside_bands(148.5, 10, 150, 0, true));  // predicted better than the top pick
  EXPECT_TRUE(advantage_inside_bands(10, 20, 14, 20, false));
  EXPECT_FALSE(advantage_inside_bands(10, 20, 16, 20, false));
  EXPECT_STREQ(twin_band_key("Mean TPOT (ms)"), kBandTpotMetric);
  EXPECT_STREQ(twin_band_key("Total Token throughput (tok/s)"), kBandTokSMetric);
}

// Issue 30 §2: the goodput objective takes the band its SLO search propagated, with its own two sides. The
// symmetric rule would widen the top pick's low end by its larger (upper) side: 3.20 × (1 − 77%) = 0.73 and
// tie with 1.41 × 1.2 = 1.70; its real low end, 2.19, clears it.
TEST(TwinVerdict, APropagatedGoodputBandKeepsItsTwoSides) {
  EXPECT_STREQ(twin_band_key("Request goodput under the SLOs (req/s)"), kBandGoodputKey);
  auto predicted = [](double g, double lo, double hi) {
    Evaluation e;
    e.predicted = e.feasible = true;
    e.objective = Estimate{1, g, 0, 0};
    e.first["s"].metrics[kBandTokSMetric] = 36;
    SloResult r;
    r.goodput_found = true;
    r.request_goodput_req_s = g, r.goodput_low_req_s = lo, r.goodput_high_req_s = hi;
    r.goodput_band_pct = std::max(g - lo, hi - g) / g * 100;
    e.slo = r;
    return e;
  };
  const Evaluation top = predicted(3.20, 2.19, 5.67), other = predicted(1.41, 1.23, 1.70);
  const TwinBand b = prediction_band(top, kBandGoodputKey, 0);
  ASSERT_TRUE(b.pct.has_value());
  EXPECT_NEAR(*b.pct, (5.67 / 3.20 - 1) * 100, 1e-9);
  EXPECT_NEAR(b.low(3.20), 2.19, 1e-9);
  EXPECT_NEAR(b.high(3.20), 5.67, 1e-9);
  EXPECT_EQ(b.text(), "−32%/+77%");
  EXPECT_GT(b.low(3.20), prediction_band(other, kBandGoodputKey, 0).high(1.41));
  // Without a propagated band (a goodput read from a trial metric), the tok/s band as before.
  Evaluation plain = top;
  plain.slo.reset();
  EXPECT_EQ(prediction_band(plain, kBandGoodputKey, 0).text(), "±36%");
  // On a kernel path the twin has no figure for: at least ±100% either way, in the SLO table as in the
  // Summary (new-user trial: "±100% (unmodelled path)" beside "−56%/+27%" for the same goodput).
  SloResult unmodelled = *predicted(53.26, 23.30, 67.64).slo;
  unmodelled.metrics[kTwinUnmodelledMetric] = 1;
  const TwinBand u = goodput_band(unmodelled);
  EXPECT_EQ(u.text(), "±100%");
  EXPECT_EQ(u.unmodelled_count, 1);
  EXPECT_EQ(goodput_cell(unmodelled), "53.26 (0.00 to 106.52, twin band ±100%)");
  unmodelled.metrics.erase(kTwinUnmodelledMetric);
  EXPECT_EQ(goodput_cell(unmodelled), "53.26 (23.30 to 67.64, twin band −56%/+27%)");
}

// The member of "Measure these" with the highest low end is named when it is not the top pick (new-user
// trial: the provisional command went to 27,992 ±99% over 26,550 ±13%): 26550 × (1 − 13%) = 23098.50
// against the top pick's 27992 × (1 − 99%) = 279.92. When the top pick's low end is the highest, or a member
// has no band, nothing is said.
TEST(TwinVerdict, TheHighestLowEndIsNamedWhenItIsNotTheTopPick) {
  Evaluation top, steady;
  top.config.engine = "sglang", top.label = "dpattn", top.objective = Estimate{1, 27992, 0, 0};
  steady.config.engine = "vllm", steady.label = "tp1-dp8-ep8", steady.objective = Estimate{1, 26550, 0, 0};
  TwinBand wide, narrow;
  wide.pct = 99, narrow.pct = 13;
  TwinVerdict v;
  v.kind = TwinVerdict::Kind::kTie;
  v.measure = {{&top, wide, "the twin's top pick", {}}, {&steady, narrow, "inside the bands", {}}};
  EXPECT_EQ(v.safest_text(),
            "Highest low end: #2 (vllm tp1-dp8-ep8) at least 23098.50 (26550.00 × (1 − 13%)); the top pick's "
            "band reaches down to 279.92.");
  v.measure[0].band.pct = 5;  // 26592.40: the top pick's own low end is the highest
  EXPECT_EQ(v.safest_text(), "");
  v.measure[0].band.pct.reset();
  EXPECT_EQ(v.safest_text(), "");
}

/// The small twin study (greedy; predictions) run through the search with the shared fake twin, each
/// prediction given `band_pct` (< 0: none) and, for engine `unmodelled_engine`'s configurations, one kernel
/// path the twin has no figure for.
struct BandFixture {
  Study study;
  Evaluator ev;
  SearchOutcome outcome;
  BandFixture(double band_pct, const std::string& unmodelled_engine = "", double twin_band_pct = 0)
      : study(small_study(twin_band_pct)),
        ev{study, runner(band_pct, unmodelled_engine), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}},
        outcome(run_search(study, ev, nullptr)) {}
  static Study small_study(double twin_band_pct) {
    Study s = parse_study(testing::kSmallStudy, "small.toml", "/data");
    s.search.twin_band_pct = twin_band_pct;
    return s;
  }
  static TrialRunner runner(double band_pct, const std::string& unmodelled_engine) {
    return [=, fake = testing::fake_runner()](const TrialRequest& req) {
      TrialOutcome out = fake(req);
      for (auto& r : out.scenarios) {
        if (band_pct >= 0) r.metrics[kBandTokSMetric] = band_pct;
        if (req.engine == unmodelled_engine) {
          r.metrics[kTwinUnmodelledMetric] = 1;
          r.metrics[std::string(kTwinUnmodelledPathPrefix) + "MXFP4 MoE on Hopper through | CUTLASS"] = 1;
        }
      }
      return out;
    };
  }
  std::string md() const { return render_markdown({&study, &outcome, ev.records(), {}}); }
  std::string html() const {
    ReportInput in{&study, &outcome, ev.records(), {}};
    return render_html(in, render_markdown(in), "/*chartjs*/");
  }
};

std::vector<std::string> tie_labels(const TwinVerdict& v) {
  std::vector<std::string> out;
  for (const auto& t : v.measure) out.push_back(t.eval->config.engine + " " + t.eval->label);
  return out;
}

// ±8%: the top pick b tp4-dp2 + ctx (148.50) has its low end at 148.50 × 0.92 = 136.62; b tp4-dp2 (135,
// high end 145.80) and b tp4-dp2 + ctx + flag (148.50 × 0.9 = 133.65, high end 144.34) reach it; b tp4-dp2 +
// flag (121.50 → 131.22) and every a configuration (at most 120.36 → 129.99) do not.
TEST(TwinVerdict, AdvantageInsideTheBandSaysMeasureTheseAndNamesNoWinner) {
  BandFixture f(8);
  const TwinVerdict v = twin_verdict(f.study, f.outcome);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  EXPECT_EQ(tie_labels(v), (std::vector<std::string>{"b layout=tp4-dp2 + ctx=32768", "b layout=tp4-dp2",
                                                     "b layout=tp4-dp2 + ctx=32768 + flag=true"}));
  EXPECT_FALSE(v.any_unknown);
  EXPECT_FALSE(v.any_unmodelled);
  EXPECT_EQ(v.measure[1].why, "inside the bands: 135.00 × (1 + 8%) = 145.80 ≥ 148.50 × (1 − 8%) = 136.62");
  const std::string md = f.md();
  for (
      const char* want :
      {"**No single winner**: the twin cannot tell 3 configurations apart (\"Measure these\" below). "
       "Provisional "
       "launch command, the twin's top pick until they are measured (rule `trade_off`):",
       "**Provisional (the twin's top pick): b layout=tp4-dp2 + ctx=32768**",
       "**Measure these**: b layout=tp4-dp2 + ctx=32768, b layout=tp4-dp2, b layout=tp4-dp2 + ctx=32768 + "
       "flag=true — their predicted advantages are inside the twin's error band. The twin cannot tell them "
       "apart",
       "| 1 | b | layout=tp4-dp2 + ctx=32768 | 148.50 (predicted) | ±8% | the twin's top pick |",
       "| 2 | b | layout=tp4-dp2 | 135.00 (predicted) | ±8% | inside the bands: 135.00 × (1 + 8%) = 145.80 ≥ "
       "148.50 × (1 − 8%) = 136.62 |",
       "| 3 | b | layout=tp4-dp2 + ctx=32768 + flag=true | 133.65 (predicted) | ±8% | inside the bands: "
       "133.65 × (1 "
       "+ 8%) = 144.34 ≥ 148.50 × (1 − 8%) = 136.62 |",
       "**The twin's top pick, not a winner**: its advantage over 2 other configuration(s)",
       "**Provisional until measured**: the twin cannot tell its top pick (b layout=tp4-dp2 + ctx=32768) "
       "from b "
       "layout=tp4-dp2, b layout=tp4-dp2 + ctx=32768 + flag=true (Summary: \"Measure these\"); the command "
       "below "
       "is the twin's top pick after the rule, not a winner.",
       "**Recommended (trade_off), provisional: the twin's top pick after the rule**: Total Token throughput "
       "(tok/s) **148.50 (predicted)**"})
    EXPECT_NE(md.find(want), std::string::npos) << want << "\n" << md;
  EXPECT_EQ(md.find("**Recommended: "), std::string::npos) << "no single winner";
  EXPECT_EQ(md.find("Recommended launch command (rule `"), std::string::npos);
  EXPECT_EQ(md.find("a baseline, "), std::string::npos) << "a is clear of the band";
  const std::string html = f.html();
  EXPECT_NE(html.find("<b>No single winner: measure these</b> — the twin cannot tell 3 configurations apart"),
            std::string::npos);
  EXPECT_NE(
      html.find(
          "<tr><td class=\"n\">2</td><td>b</td><td>layout=tp4-dp2</td><td class=\"n\">135.00</td><td>±8%"
          "</td><td>inside the bands: 135.00 × (1 + 8%) = 145.80 ≥ 148.50 × (1 − 8%) = 136.62</td></tr>"),
      std::string::npos)
      << "the # column: the number a row's why cites (\"the same prediction as #1\"), as in report.md";
}

// A configuration only the grid check predicted (twin-guided / greedy's grid check) is a candidate too:
// inside the band, it is in "Measure these" (a trial user found two such, above listed ones, left out).
TEST(TwinVerdict, AGridCheckPredictionInsideTheBandIsMeasuredToo) {
  BandFixture f(8);
  SearchOutcome o = f.outcome;
  Evaluation grid_only = o.best;
  grid_only.key = "b{grid-only}";
  grid_only.label = "grid only";
  grid_only.objective.mean = 140;  // 140 x 1.08 = 151.2 >= 148.5 x 0.92
  o.grid_check = GridCheck{};
  o.grid_check->ranked = {o.best, grid_only};
  const TwinVerdict v = twin_verdict(f.study, o);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  const auto labels = tie_labels(v);
  ASSERT_EQ(labels.size(), 4u);
  EXPECT_EQ(labels[1], "b grid only");  // sorted by prediction: 140 after the top pick's 148.5
  // Passed over for breaking a bound on another scenario: no candidate, wherever it was evaluated.
  Evaluation broke = grid_only;
  broke.feasible = false;
  o.passed_over = {broke};
  EXPECT_EQ(tie_labels(twin_verdict(f.study, o)).size(), 3u);
}

// A knob the twin models no effect of (here `flag`, ignored by the runner) gives a launch whose prediction
// equals another's to the last digit; "Measure these" says so instead of an inside-the-band comparison of
// two equal numbers (new-user trial: a running-request cap above the prompts sent).
TEST(TwinVerdict, AnIdenticalPredictionIsNamedAsSuch) {
  Study study = BandFixture::small_study(0);
  TrialRunner ignore_flag = [fake = testing::fake_runner()](const TrialRequest& req) {
    TrialRequest r = req;
    for (const std::string f : {" + flag=true", ",flag=true", "flag=true,", "flag=true"})
      if (auto at = r.config_key.find(f); at != std::string::npos) r.config_key.erase(at, f.size());
    TrialOutcome out = fake(r);
    for (auto& sc : out.scenarios) sc.metrics[kBandTokSMetric] = 8;
    return out;
  };
  Evaluator ev{study, ignore_flag, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome outcome = run_search(study, ev, nullptr);
  const TwinVerdict v = twin_verdict(study, outcome);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  const TwinTie* same = nullptr;
  for (const auto& t : v.measure)
    if (t.eval->label == "layout=tp4-dp2 + ctx=32768 + flag=true") same = &t;
  ASSERT_NE(same, nullptr) << ::testing::PrintToString(tie_labels(v));
  EXPECT_EQ(same->eval->objective.mean, v.measure[0].eval->objective.mean);
  // Scored on the objective's scenario s1 only: the scenario is named, and s2 said unchecked (new-user trial:
  // "on every scenario" of a launch the twin never predicted on the study's 32k-token scenario).
  EXPECT_EQ(same->why, "the same prediction as #1 (" + v.measure[0].eval->label +
                           ") on s1: the twin models no effect of what differs there");
  EXPECT_EQ(same->unseen, std::vector<std::string>{"s2"});
  EXPECT_TRUE(v.measure[0].unseen.empty());  // the top pick runs every scenario
  EXPECT_NE(v.unseen_text().find("were not predicted on s2 (the search predicts a configuration on the "
                                 "objective's scenarios; only the top pick and the baselines run every "
                                 "scenario)"),
            std::string::npos)
      << v.unseen_text();
  const std::string md = render_markdown({&study, &outcome, ev.records(), {}});
  EXPECT_NE(md.find("\nNot checked everywhere: #2–#4 were not predicted on s2"), std::string::npos) << md;
  // Different numbers are compared as before (b layout=tp4-dp2: 135 against 148.50).
  const auto lower = std::find_if(v.measure.begin(), v.measure.end(),
                                  [](const TwinTie& t) { return t.eval->label == "layout=tp4-dp2"; });
  ASSERT_NE(lower, v.measure.end());
  EXPECT_EQ(lower->why, "inside the bands: 135.00 × (1 + 8%) = 145.80 ≥ 148.50 × (1 − 8%) = 136.62");
}

// [[constraints]] against the band (new-user trial: a configuration 0.5% below the top pick, predicted P99
// TTFT 5658 ms against a 5000 ms bound with a ±43% TTFT band, was dropped from "Measure these" as
// infeasible, and a top pick at 4643 ms was called clear). Mean TPOT = 10000 / tok/s: the top pick b
// tp4-dp2 + ctx (148.50) has 67.34 ms on s1, b tp4-dp2 (135) 74.07, a tp4-dp2 (120) 83.33; s2's TPOT is set
// to 10 ms so that the bound binds on s1 only. Bound ≤ 70, TPOT band ±10%, tok/s band ±8%.
TEST(TwinVerdict, ConstraintsInsideTheBandAreNotCertain) {
  Study s = parse_study(
      std::string(testing::kSmallStudy) + "\n[[constraints]]\nmetric = \"Mean TPOT (ms)\"\nmax = 70\n",
      "small.toml", "/data");
  const TrialRunner runner = [fake = testing::fake_runner()](const TrialRequest& req) {
    TrialOutcome out = fake(req);
    for (auto& r : out.scenarios) {
      r.metrics[kBandTokSMetric] = 8, r.metrics[kBandTpotMetric] = 10;
      if (r.scenario_id == "s2") r.metrics["Mean TPOT (ms)"] = 10;  // the bound binds on s1 only
    }
    return out;
  };
  Evaluator ev{s, runner, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome o = run_search(s, ev, nullptr);
  ASSERT_EQ(o.best.label, "layout=tp4-dp2 + ctx=32768");
  const TwinVerdict v = twin_verdict(s, o);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie) << ::testing::PrintToString(tie_labels(v));
  // b tp4-dp2: 74.07 × 0.9 = 66.67 reaches the bound and 135 is inside the bands; so does the grid check's
  // b tp4-dp2 + ctx + flag (133.65: 74.82 × 0.9 = 67.34). The others break it by more than the band (a
  // tp4-dp2: 83.33 × 0.9 = 75.00 > 70).
  EXPECT_EQ(tie_labels(v), (std::vector<std::string>{"b layout=tp4-dp2 + ctx=32768", "b layout=tp4-dp2",
                                                     "b layout=tp4-dp2 + ctx=32768 + flag=true"}));
  ASSERT_FALSE(v.top_bound_doubts.empty());
  EXPECT_NE(v.top_bound_doubts[0].find("Mean TPOT (ms) on "), std::string::npos);
  EXPECT_NE(
      v.top_bound_doubts[0].find(" = 67.34 meets ≤ 70 on the prediction, but its ±10% band reaches past it: "
                                 "67.34 × (1 + 10%) = 74.07"),
      std::string::npos)
      << v.top_bound_doubts[0];
  EXPECT_NE(
      v.measure[1].why.find(" = 74.07 breaks ≤ 70 on the prediction, inside its ±10% band: 74.07 × (1 − "
                            "10%) = 66.67 ≤ 70; inside the bands: 135.00 × (1 + 8%) = 145.80 ≥ 148.50 × "
                            "(1 − 8%) = 136.62"),
      std::string::npos)
      << v.measure[1].why;
  const std::string md = render_markdown({&s, &o, ev.records(), {}});
  EXPECT_NE(
      md.find("**A bound the twin cannot vouch for**: the top pick meets every `[[constraints]]` bound"),
      std::string::npos)
      << md;
  const auto j = nlohmann::json::parse(summary_json({&s, &o, ev.records(), {}}));
  EXPECT_EQ(j["verdict"]["kind"], "measure_these");
  EXPECT_EQ(j["verdict"]["bound_doubts"].size(), v.top_bound_doubts.size());
  // Without the TPOT band the bound is taken as predicted: b tp4-dp2 and its flag variant are out.
  const TrialRunner no_tpot_band = [fake = testing::fake_runner()](const TrialRequest& req) {
    TrialOutcome out = fake(req);
    for (auto& r : out.scenarios) {
      r.metrics[kBandTokSMetric] = 8;
      if (r.scenario_id == "s2") r.metrics["Mean TPOT (ms)"] = 10;
    }
    return out;
  };
  Evaluator ev2{s, no_tpot_band, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome o2 = run_search(s, ev2, nullptr);
  const TwinVerdict v2 = twin_verdict(s, o2);
  EXPECT_TRUE(v2.top_bound_doubts.empty());
  EXPECT_EQ(v2.kind, TwinVerdict::Kind::kClear) << ::testing::PrintToString(tie_labels(v2));
}

// The top pick meets a bound only inside its band while the runner-up is clear of it on the objective: the
// runner-up stays in the set as the fallback, and the wording says a bound did it (review). TPOT band ±20%,
// bound ≤ 75: the top pick's 67.34 × 1.2 = 80.81 > 75; b tp4-dp2 (74.07) meets it; tok/s band ±3% (the top
// pick clear on the objective). A bound on a count (Successful requests) has no band: taken as predicted.
TEST(TwinVerdict, ABoundInsideTheTopPicksBandKeepsTheRunnerUpAndSaysWhy) {
  auto runner = [](double tpot_band) {
    return [tpot_band, fake = testing::fake_runner()](const TrialRequest& req) {
      TrialOutcome out = fake(req);
      for (auto& r : out.scenarios) {
        r.metrics[kBandTokSMetric] = 3;
        if (tpot_band > 0) r.metrics[kBandTpotMetric] = tpot_band;
        if (r.scenario_id == "s2") r.metrics["Mean TPOT (ms)"] = 10;
      }
      return out;
    };
  };
  Study s = parse_study(std::string(testing::kSmallStudy) +
                            "\n[[constraints]]\nmetric = \"Mean TPOT (ms)\"\nmax = 75\n"
                            "\n[[constraints]]\nmetric = \"Successful requests\"\nmin = 10\n",
                        "small.toml", "/data");
  Evaluator ev{s, runner(20), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome o = run_search(s, ev, nullptr);
  ASSERT_EQ(o.best.label, "layout=tp4-dp2 + ctx=32768");
  const TwinVerdict v = twin_verdict(s, o);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie) << ::testing::PrintToString(tie_labels(v));
  EXPECT_TRUE(v.any_bound_doubt);
  EXPECT_EQ(tie_labels(v), (std::vector<std::string>{"b layout=tp4-dp2 + ctx=32768", "b layout=tp4-dp2"}));
  EXPECT_EQ(v.measure[1].why, "the best after the top pick, should the top pick break its bound");
  ASSERT_EQ(v.top_bound_doubts.size(), 1u);  // TPOT only: the request count has no band
  const std::string md = render_markdown({&s, &o, ev.records(), {}});
  EXPECT_NE(md.find("or the band reaches across a `[[constraints]]` bound (the why column)"),
            std::string::npos)
      << md;
  // Without the TPOT band neither bound is in doubt: the single winner again.
  Evaluator ev2{s, runner(0), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  const SearchOutcome o2 = run_search(s, ev2, nullptr);
  const TwinVerdict v2 = twin_verdict(s, o2);
  EXPECT_EQ(v2.kind, TwinVerdict::Kind::kClear) << ::testing::PrintToString(tie_labels(v2));
  EXPECT_TRUE(v2.top_bound_doubts.empty());
  EXPECT_FALSE(v2.any_bound_doubt);
}

// A band that is not a whole percent: the why prints the width the rule used, so its products can be redone
// (new-user trial: "3045.60 × (1 + 14%) = 3484.16" where the band was 14.4%); the band column rounds it.
// 135 × 1.084 = 146.34 ≥ 148.50 × 0.916 = 136.03.
TEST(TwinVerdict, AFractionalBandIsPrintedAsTheRuleUsedIt) {
  BandFixture f(8.4);
  const TwinVerdict v = twin_verdict(f.study, f.outcome);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  ASSERT_GE(v.measure.size(), 2u);
  EXPECT_EQ(v.measure[1].why,
            "inside the bands: 135.00 × (1 + 8.4%) = 146.34 ≥ 148.50 × (1 − 8.4%) = 136.03");
  EXPECT_EQ(v.measure[1].band.text(), "±8%");
}

// ±3%: 148.50 × 0.97 = 144.045 > 135 × 1.03 = 139.05 (the runner-up): the top pick is clear, and the report
// reads as before.
TEST(TwinVerdict, ABestClearOfEveryBandKeepsTheSingleWinner) {
  BandFixture f(3);
  EXPECT_EQ(twin_verdict(f.study, f.outcome).kind, TwinVerdict::Kind::kClear);
  const std::string md = f.md();
  EXPECT_NE(
      md.find("Recommended launch command (rule `trade_off`; why each knob is kept: \"Recommended launch "
              "command\" below):\n\n**Recommended: b layout=tp4-dp2 + ctx=32768**: Total Token throughput "
              "(tok/s) **148.50 (predicted)**"),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | b | layout=tp4-dp2 + ctx=32768 | 148.50 (predicted) | recommended |"),
            std::string::npos);
  for (const char* absent : {"Measure these", "No single winner", "Provisional", "not a winner"})
    EXPECT_EQ(md.find(absent), std::string::npos) << absent;
  EXPECT_EQ(f.html().find("measure these"), std::string::npos);
}

// A study stopped before its search finished (Ctrl-C; `servelab report DIR` on it): its best so far is no
// answer (new-user trial: summary.json said "winner" from 9 of 77 trials, report.md "Recommended: ...
// not run" above a "recommended" finalist).
TEST(TwinVerdict, APartialStudyHasNoRecommendationYet) {
  BandFixture f(3);
  f.outcome.complete = false;
  const std::string md = f.md();
  EXPECT_NE(md.find("**Partial study**: the search stopped before it finished, so there is no recommendation "
                    "yet (`servelab tune --resume` finishes it). The best so far: b layout=tp4-dp2 + "
                    "ctx=32768, **148.50 (predicted)** Total Token throughput (tok/s)."),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | b | layout=tp4-dp2 + ctx=32768 | 148.50 (predicted) | best so far |"),
            std::string::npos)
      << md;
  EXPECT_EQ(md.find("**Recommended: "), std::string::npos) << md;
  EXPECT_EQ(md.find("| recommended |"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(summary_json({&f.study, &f.outcome, f.ev.records(), {}}));
  EXPECT_EQ(j["verdict"]["kind"], "incomplete");
  EXPECT_FALSE(j["complete"]);
  EXPECT_NE(f.html().find("<b>Partial study</b>"), std::string::npos);
}

// Stopped before any configuration succeeded (Ctrl-C on the first trials): "incomplete", not "none" (new-user
// trial: `servelab report` on such a directory said "No configuration succeeded: there is no recommendation
// (see the failures below)" with no failure below).
TEST(TwinVerdict, APartialStudyWithNothingFinishedIsIncompleteNotNone) {
  BandFixture f(3);
  const Evaluation ran = f.outcome.best;
  f.outcome.complete = false;
  f.outcome.best = Evaluation{};  // a search with no best yet: no configuration (no key), status kOk
  const std::string md = f.md();
  EXPECT_NE(
      md.find("**Partial study**: the search stopped before any configuration succeeded, so there is no "
              "recommendation yet (`servelab tune --resume` continues it)."),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("## Best configuration\n\nNone yet: the search stopped before any configuration "
                    "succeeded."),
            std::string::npos)
      << md;
  for (const char* absent : {"No configuration succeeded", "meets every `[[constraints]]` bound"})
    EXPECT_EQ(md.find(absent), std::string::npos) << absent << "\n" << md;
  const auto j = nlohmann::json::parse(summary_json({&f.study, &f.outcome, f.ev.records(), {}}));
  EXPECT_EQ(j["verdict"]["kind"], "incomplete");
  EXPECT_FALSE(j["complete"]);
  const std::string html = f.html();
  EXPECT_NE(html.find("the search stopped before any configuration succeeded"), std::string::npos);
  EXPECT_EQ(html.find("No configuration succeeded"), std::string::npos);
  f.outcome.complete = true;  // a finished search with nothing feasible is "none"
  EXPECT_EQ(
      nlohmann::json::parse(summary_json({&f.study, &f.outcome, f.ev.records(), {}}))["verdict"]["kind"],
      "none");
  // Stopped after configurations ran but broke a bound (review: it said "before any configuration
  // succeeded"): the constraint wording, marked partial.
  f.outcome.complete = false;
  f.outcome.best = ran;
  f.outcome.best.feasible = false;
  f.outcome.best.reason = "constraint violated: P99 TTFT (ms) = 13854.91 (bound <= 1)";
  const std::string bound = f.md();
  EXPECT_NE(
      bound.find("**Partial study**: the search stopped before it finished, and no configuration tried so "
                 "far meets every `[[constraints]]` bound: there is no recommendation yet"),
      std::string::npos)
      << bound;
  EXPECT_NE(bound.find("## Best configuration\n\nNone so far: no configuration tried meets every "
                       "`[[constraints]]` bound"),
            std::string::npos)
      << bound;
  EXPECT_EQ(bound.find("before any configuration succeeded"), std::string::npos) << bound;
  EXPECT_NE(
      f.html().find("<b>Partial study</b>: the search stopped before it finished. No configuration tried "
                    "so far meets every [[constraints]] bound"),
      std::string::npos);
}

// No band anywhere (the twin gave none, search.twin_band_pct unset): every advantage is unknown, so every
// other prediction is in the set; with search.twin_band_pct = 3 the same study is clear.
TEST(TwinVerdict, APredictionWithoutABandIsUnknownNotCertain) {
  BandFixture f(-1);
  const TwinVerdict v = twin_verdict(f.study, f.outcome);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  EXPECT_TRUE(v.any_unknown);
  ASSERT_GE(v.measure.size(), 6u);
  EXPECT_EQ(v.measure[0].why, "the twin's top pick (no error band: unknown, not certain)");
  EXPECT_EQ(v.measure[1].why, "the top pick has no error band: its advantage is unknown");
  const std::string md = f.md();
  for (const char* want :
       {"— their predicted advantages are inside the twin's error band or unknown (no band).",
        "| 1 | b | layout=tp4-dp2 + ctx=32768 | 148.50 (predicted) | none (unknown) | the twin's top pick "
        "(no error "
        "band: unknown, not certain) |",
        "A prediction without an error band (the twin gave none and `search.twin_band_pct` is not set) "
        "counts as "
        "unknown, never as certain."})
    EXPECT_NE(md.find(want), std::string::npos) << want << "\n" << md;
  BandFixture stated(-1, "", 3);
  EXPECT_EQ(twin_verdict(stated.study, stated.outcome).kind, TwinVerdict::Kind::kClear);
}

// A long set reads as runs, not 200 numbers (the reference study's demo listed "#2, #3, … #214").
TEST(TwinVerdict, UnseenTextWritesRunsOfThreeOrMoreAsRanges) {
  TwinVerdict v;
  v.measure.resize(10);
  for (std::size_t i : {1, 2, 3, 4, 5, 7, 9}) v.measure[i].unseen = {"s2"};
  EXPECT_EQ(v.unseen_text().rfind("Not checked everywhere: #2–#6, #8, #10 (7 configurations) were not "
                                  "predicted on s2 (",
                                  0),
            0u)
      << v.unseen_text();
}

// ±3% would clear every a configuration, but a runs on an unmodelled kernel path: its band is ±100%, so a's
// best (a tp4-dp2 + ctx, 100 × 1.2 × 1.003 = 120.36) reaches 240.72 ≥ 144.045 (printed 144.04) and must be
// measured; the report names the path (its '|' escaped).
TEST(TwinVerdict, AnUnmodelledKernelPathGetsABandOfAtLeast100Percent) {
  BandFixture f(3, "a");
  const TwinVerdict v = twin_verdict(f.study, f.outcome);
  ASSERT_EQ(v.kind, TwinVerdict::Kind::kTie);
  EXPECT_TRUE(v.any_unmodelled);
  ASSERT_GE(v.measure.size(), 2u);
  EXPECT_EQ(v.measure[0].eval->config.engine, "b");
  EXPECT_EQ(v.measure[1].eval->config.engine + " " + v.measure[1].eval->label,
            "a layout=tp4-dp2 + ctx=32768");
  ASSERT_TRUE(v.measure[1].band.pct);
  EXPECT_EQ(*v.measure[1].band.pct, 100.0);
  EXPECT_EQ(v.measure[1].why,
            "inside the bands: 120.36 × (1 + 100%) = 240.72 ≥ 148.50 × (1 − 3%) = 144.04; "
            "unmodelled kernel path: band at least ±100%");
  for (const auto& t : v.measure) EXPECT_TRUE(t.eval->config.engine == "a" || &t == &v.measure[0]);
  const std::string md = f.md();
  for (const char* want :
       {"| 2 | a | layout=tp4-dp2 + ctx=32768 | 120.36 (predicted) | ±100% (unmodelled path) |",
        "A prediction on a kernel path the twin has no figure for gets a band of at least ±100%",
        "4–20× off): MXFP4 MoE on Hopper through \\| CUTLASS: a layout=tp4-dp2 + ctx=32768, a "
        "layout=tp4-dp2, "
        "a ctx=32768, a baseline.\n"})
    EXPECT_NE(md.find(want), std::string::npos) << want << "\n" << md;
}

}  // namespace
}  // namespace servelab::tune
