// The HTML report (issue 14 §6): summary first, chart specs with hand-computed data, failures marked with
// their class, the trial table, log links, folded bench blocks, redaction. The browser check of the same
// page is tests/tune/report_browser_test.mjs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "test_study.h"
#include "tune/report/html_charts.h"
#include "tune/report/html_markdown.h"
#include "tune/report/study_report.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

/// The small study under the strict rule (a knob that loses on any scenario is dropped), so the recommended
/// command (135) and the best on the objective (148.5, with ctx) differ.
struct Fixture {
  Study study =
      parse_study(std::string(testing::kSmallStudy) + "\n[recommendation]\nrule = \"no_regression\"\n",
                  "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
};

using testing::chart_specs;

size_t pos(const std::string& page, const std::string& what) {
  const size_t p = page.find(what);
  EXPECT_NE(p, std::string::npos) << what;
  return p;
}

TEST(HtmlReport, SummaryComesFirstWithTheCommandsValuesAndGainChain) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string page = render_html(in, render_markdown(in), "/*chartjs*/");
  // Order: summary (recommended command) → charts → trial table → the full Markdown report.
  const size_t summary = pos(page, "<h2>Summary</h2>"), rec = pos(page, "<pre id=\"cmd-recommended\">"),
               charts = pos(page, "<h2>Charts</h2>"), table = pos(page, "id=\"trial-table\""),
               full = pos(page, "<h2>Gains along the greedy path</h2>");
  EXPECT_LT(summary, rec);
  EXPECT_LT(rec, charts);
  EXPECT_LT(charts, table);
  EXPECT_LT(table, full);
  // The rule drops ctx (it loses on s2): recommended b tp4-dp2 = 90 × 1.5 = 135; best with ctx = 148.5.
  EXPECT_NE(page.find("<pre id=\"cmd-recommended\">python3 -m sglang.launch_server --model-path org/model "
                      "--chat-template x.jinja --tp-size 4 --dp-size 2</pre>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>135.00 (predicted; the twin gave no error band for this launch)</b>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>Alternative: best for the objective</b>"), std::string::npos);
  EXPECT_NE(page.find("<pre id=\"cmd-alternative\">python3 -m sglang.launch_server --model-path org/model "
                      "--chat-template "
                      "x.jinja --tp-size 4 --dp-size 2 --context-length=32768</pre>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>148.50 (predicted"), std::string::npos);
  EXPECT_NE(page.find("data-copy=\"cmd-recommended\""), std::string::npos);
  // Gain chain: a baseline 100 → b baseline 90 (-10%) → b tp4-dp2 135 (+50%) → ctx 148.5 (+10%); total
  // +48.5%.
  EXPECT_NE(page.find("<td class=\"n\">-10.00%</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"n\">+50.00%</td>"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"n\">+10.00%</td>"), std::string::npos);
  EXPECT_NE(page.find("<th class=\"n\">+48.50%</th>"), std::string::npos);
  // Generalization on s2: baseline a 50, best b 148.5/2 × 0.95/1.10 = 64.125 (+28.25%).
  EXPECT_NE(
      page.find("<tr><td>s2</td><td class=\"n\">50.00</td><td class=\"n\">64.12</td><td class=\"n pos\">"
                "+28.25%</td></tr>"),
      std::string::npos);
}

// A knob of hundreds of values lists the first 12 and its baseline, then how many more (a table row a
// reader can take in; trials.json keeps every value).
TEST(HtmlReport, AKnobsValuesAreCappedInTheKnobTable) {
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
  Knob& k = study.knobs.front();  // the table is written from the study's knobs
  k.values.clear();
  for (int i = 0; i < 300; ++i) k.values.push_back(KnobValue{"v" + std::to_string(i), {}, false});
  k.baseline = "v250";
  ReportInput in{&study, &outcome, ev.records(), {}};
  const std::string text = render_markdown(in);
  EXPECT_NE(text.find("| " + k.name +
                      " | v0, v1, v2, v3, v4, v5, v6, v7, v8, v9, v10, v11, **v250** … and 287 more |"),
            std::string::npos)
      << text;
}

// Study text is escaped once: the goal's "<script>" reads as typed in the HTML (the Markdown writes it
// "&lt;script&gt;", which the HTML kept as "&amp;lt;script&amp;gt;", shown literally), never as markup; each
// knob's description is shown (study.md: "shown in the report").
TEST(HtmlReport, StudyTextIsEscapedOnceAndKnobDescriptionsAreShown) {
  std::string text = testing::kSmallStudy;
  text.replace(text.find("goal = \"test study\""), 19,
               "goal = \"Qwen3 on 4xH100: <script>alert('x')</script> & \\\"quotes\\\"\"");
  text.replace(text.find("name = \"layout\"\n"), 16,
               "name = \"layout\"\ndescription = \"TP/DP <b>layout</b> | split\"\n");
  Study study = parse_study(text, "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
  ReportInput in{&study, &outcome, ev.records(), {}};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("| layout | **tp8**, tp4-dp2, tp3 | TP/DP &lt;b&gt;layout&lt;/b&gt; \\| split |"),
            std::string::npos)
      << md;
  const std::string page = render_html(in, md, "/*chartjs*/");
  EXPECT_NE(page.find("Qwen3 on 4xH100: &lt;script&gt;alert('x')&lt;/script&gt; &amp; &quot;quotes&quot;"),
            std::string::npos)
      << page.substr(page.find("Qwen3 on 4xH100"), 200);
  EXPECT_EQ(page.find("&amp;lt;"), std::string::npos);
  EXPECT_EQ(page.find("<script>alert"), std::string::npos);
  EXPECT_NE(page.find("TP/DP &lt;b&gt;layout&lt;/b&gt; | split"), std::string::npos);
}

TEST(HtmlReport, TheDefaultRuleKeepsTheLargeGainAndShowsTheCommandThatLosesNowhere) {
  // trade_off (default): ctx gains +10% on the objective (above the 5% threshold) and loses on s2, so it is
  // kept (148.5) and the command without it (135) is the alternative.
  Study study = parse_study(testing::kSmallStudy, "small.toml", "/data");
  Evaluator ev{study, testing::fake_runner(), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {}};
  SearchOutcome outcome = run_search(study, ev, nullptr);
  ReportInput in{&study, &outcome, ev.records(), {}};
  const std::string page = render_html(in, render_markdown(in), "/*chartjs*/");
  EXPECT_NE(page.find("<b>Recommended launch command (rule: trade_off)</b>"), std::string::npos);
  EXPECT_NE(page.find("<pre id=\"cmd-recommended\">python3 -m sglang.launch_server --model-path org/model "
                      "--chat-template x.jinja --tp-size 4 --dp-size 2 --context-length=32768</pre>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>148.50 (predicted"), std::string::npos);
  EXPECT_NE(page.find("<b>Alternative: best that loses on no scenario</b>"), std::string::npos);
  EXPECT_NE(page.find("<pre id=\"cmd-alternative\">python3 -m sglang.launch_server --model-path org/model "
                      "--chat-template x.jinja --tp-size 4 --dp-size 2</pre>"),
            std::string::npos);
  EXPECT_NE(page.find("<b>135.00 (predicted"), std::string::npos);
  EXPECT_EQ(page.find("id=\"cmd-best\""), std::string::npos);  // best = recommended: no third card
}

TEST(HtmlReport, ObjectiveValueShowsTheTwinBandOrTheConfidenceInterval) {
  Fixture f;
  for (auto& [id, r] : f.outcome.recommended_eval.first) r.metrics[kBandTokSMetric] = 30.0;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  // 135 ± 30% = ± 40.5 → "± 40" (no decimals on a band).
  EXPECT_NE(render_html(in, "", "x").find("<b>135.00 ± 40 (±30%: the twin's error band of total tok/s"),
            std::string::npos);
  // Measured, 3 runs: mean ± Student-t half-width.
  f.outcome.recommended_eval.predicted = false;
  f.outcome.recommended_eval.objective = estimate({130, 135, 140});  // s = 5, t(2) = 4.303 → 12.42
  EXPECT_NE(render_html(in, "", "x").find("<b>135.00 ± 12.42 (95% CI, Student t, 3 runs)</b>"),
            std::string::npos);
}

TEST(HtmlReport, AFailedRecommendedCommandSaysWhyAndIsNotCharted) {
  Fixture f;
  f.outcome.recommended_eval.feasible = false;
  f.outcome.recommended_eval.status = TrialStatus::kOutOfMemory;
  f.outcome.recommended_eval.reason = "CUDA out of memory";
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string page = render_html(in, "", "/*chartjs*/");
  EXPECT_NE(page.find("Total Token throughput (tok/s): <b>oom: CUDA out of memory</b>"), std::string::npos);
  const nlohmann::json specs = chart_specs(page);
  ASSERT_EQ(specs.size(), 4u);
  EXPECT_TRUE(specs[1]["marked"].is_null());  // no recommended point
  for (const auto& s : specs[2]["series"])
    EXPECT_EQ(s["name"].get<std::string>().rfind("recommended", 0), std::string::npos) << s["name"];
}

// An alternative command whose runs completed but broke a [[constraints]] bound is "infeasible", as in the
// Markdown and summary.json, not "ok" (its trial status).
TEST(HtmlReport, AnInfeasibleAlternativeSaysInfeasible) {
  Fixture f;
  f.outcome.alternative = AlternativeCommand{};
  f.outcome.alternative->title = "best that loses on no scenario";
  f.outcome.alternative->eval.feasible = false;
  f.outcome.alternative->eval.status = TrialStatus::kOk;
  f.outcome.alternative->eval.reason = "constraint violated on s2: P99 TTFT (ms) = 5000.00 (bound ≤ 3000)";
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string page = render_html(in, "", "/*chartjs*/");
  EXPECT_NE(page.find("<b>infeasible: constraint violated on s2: P99 TTFT (ms) = 5000.00 (bound ≤ 3000)</b>"),
            std::string::npos);
  EXPECT_EQ(page.find("<b>ok: constraint violated"), std::string::npos);
}

TEST(HtmlReport, ChartsCarryTheTrialsFailuresAndDistributions) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const nlohmann::json specs = chart_specs(render_html(in, "", "/*chartjs*/"));
  ASSERT_EQ(specs.size(), 4u) << specs.dump(1);
  EXPECT_EQ(specs[0]["kind"], "bar");
  EXPECT_EQ(specs[1]["kind"], "scatter");
  EXPECT_EQ(specs[2]["kind"], "line");
  EXPECT_EQ(specs[3]["kind"], "line");
  for (const auto& s : specs) {
    EXPECT_FALSE(s["x_title"].get<std::string>().empty()) << s["title"];
    EXPECT_FALSE(s["y_title"].get<std::string>().empty()) << s["title"];
  }
  // One bar per successful trial of s1 and one marked bar per failed trial, with its class.
  size_t ok_s1 = 0, failed = 0;
  for (const auto& t : in.trials) {
    if (t.outcome.status != TrialStatus::kOk)
      ++failed;
    else
      for (const auto& r : t.outcome.scenarios) ok_s1 += r.scenario_id == "s1";
  }
  ASSERT_GT(failed, 0u);
  size_t bars = 0, marked = 0;
  for (const auto& b : specs[0]["bars"]) {
    ++bars;
    if (b["value"].is_null()) {
      ++marked;
      EXPECT_EQ(b["failure"], "rejected");
      EXPECT_NE(b["label"].get<std::string>().find(" rejected"), std::string::npos);
    }
  }
  EXPECT_EQ(marked, failed);
  EXPECT_EQ(bars, ok_s1 + failed);
  EXPECT_EQ(specs[0]["bars"][0]["value"], 100.0);  // trial #1: a baseline on s1
  // The recommended point (b tp4-dp2: 135 tok/s, TPOT 10000/135 ms) is marked on the scatter.
  EXPECT_NEAR(specs[1]["marked"]["y"].get<double>(), 135.0, 1e-9);
  EXPECT_NEAR(specs[1]["marked"]["x"].get<double>(), 10000.0 / 135.0, 1e-9);
  // TTFT CDF of the baseline (a, fake TTFT samples {100, 101} ms): (100, 50%), (101, 100%).
  const auto& base = specs[2]["series"][0];
  EXPECT_EQ(base["name"], "baseline: a baseline");
  ASSERT_EQ(base["points"].size(), 2u);
  EXPECT_EQ(base["points"][0]["x"], 100.0);
  EXPECT_EQ(base["points"][0]["y"], 50.0);
  EXPECT_EQ(base["points"][1]["x"], 101.0);
  EXPECT_EQ(base["points"][1]["y"], 100.0);
  EXPECT_EQ(specs[2]["series"].size(), 3u);  // baseline, recommended, best (different configs)
}

TEST(HtmlReport, TrialTableLinksLogsAndRedactsReasons) {
  Fixture f;
  const fs::path dir = fs::temp_directory_path() / ("servelab-html-" + std::to_string(getpid()));
  fs::create_directories(dir / "logs");
  std::ofstream(dir / "logs" / "x.log") << "engine log\n";
  std::vector<TrialRecord> trials = f.ev.records();
  TrialRecord failed = trials.back();
  failed.outcome.status = TrialStatus::kOutOfMemory;
  failed.outcome.reason = "CUDA out of memory --api-key SECRET9";
  failed.log_path = (dir / "logs" / "x.log").string();
  trials.push_back(failed);
  trials.back().trial_key += "-2";
  TrialRecord twin = trials.front();
  twin.log_path = (dir / "logs" / "never-written.log").string();
  trials.push_back(twin);
  ReportInput in{&f.study, &f.outcome, trials, {}};
  const std::string page = render_html(in, "", "/*chartjs*/", dir);
  EXPECT_NE(page.find("<a href=\"logs/x.log\">x.log</a>"), std::string::npos);
  EXPECT_EQ(page.find("never-written.log"), std::string::npos);  // no link to a log that does not exist
  EXPECT_EQ(page.find("SECRET9"), std::string::npos);
  EXPECT_NE(page.find("<td>oom</td><td>CUDA out of memory --api-key <redacted></td>"), std::string::npos);
  // Numeric cells carry their value for sorting.
  EXPECT_NE(page.find("<td class=\"n\" data-v=\"100\">100.00</td>"), std::string::npos);
  fs::remove_all(dir);
}

// Issue 31: an engine that printed invalid UTF-8 into its log (quoted in a failure reason) made
// nlohmann::json throw: report.html, trials.csv and trials.json were never written.
TEST(HtmlReport, InvalidUtf8InAReasonIsReplacedAndEveryFileWritten) {
  Fixture f;
  std::vector<TrialRecord> trials = f.ev.records();
  TrialRecord failed = trials.back();
  failed.trial_key += "-bad-bytes";
  failed.outcome.status = TrialStatus::kCrashed;
  failed.outcome.reason = "engine log: caf\xc3 \xff\xfe end";
  failed.outcome.scenarios.clear();
  trials.push_back(failed);
  ReportInput in{&f.study, &f.outcome, trials, {}};
  const fs::path dir = fs::temp_directory_path() / ("servelab-utf8-report-" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_NO_THROW(write_report_files(in, dir));
  auto read = [&](const std::string& name) {
    std::ifstream in_file(dir / name, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in_file)), std::istreambuf_iterator<char>());
  };
  // Python's bytes.decode("utf-8", errors="replace") of the reason: one U+FFFD per maximal subpart.
  const std::string want = "engine log: caf\xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd end";
  const nlohmann::json json = nlohmann::json::parse(read("trials.json"));
  ASSERT_EQ(json.size(), trials.size());
  EXPECT_EQ(json.back()["reason"], want);
  EXPECT_NE(read("trials.csv").find(want), std::string::npos);
  const std::string page = read("report.html");
  EXPECT_NE(page.find("</html>"), std::string::npos);
  EXPECT_EQ(page.find("\xff"), std::string::npos);
  EXPECT_NE(read("report.md").size(), 0u);
  fs::remove_all(dir);
}

TEST(HtmlReport, WithoutChartJsThePageSaysSoAndDrawsNothing) {
  Fixture f;
  ReportInput in{&f.study, &f.outcome, f.ev.records(), {}};
  const std::string page = render_html(in, "", "");
  EXPECT_NE(page.find("Charts unavailable: Chart.js was not found"), std::string::npos);
  EXPECT_EQ(page.find("SL_CHARTS"), std::string::npos);
  EXPECT_NE(page.find("table.sortable"), std::string::npos);  // the table still sorts
}

TEST(HtmlReport, MarkdownFoldsLongBlocksOnly) {
  const std::string h = html::markdown_to_html(
      "## A\n\n```\nvllm serve m\n```\n\n```\n==== Serving Benchmark Result ====\nx: 1\ny: 2\nz: 3\n```\n"
      "\n```\n1\n2\n3\n4\n```\n<details><summary>log & tail</summary>\n\n```\na\nb\nc\nd\n```\n</details>\n");
  EXPECT_NE(h.find("<h2>A</h2>\n<pre>vllm serve m\n</pre>"), std::string::npos) << h;
  EXPECT_NE(h.find("<details class=\"raw\"><summary>bench result block (4 lines)</summary><pre>==== Serving"),
            std::string::npos)
      << h;
  EXPECT_NE(
      h.find("<details class=\"raw\"><summary>output (4 lines)</summary><pre>1\n2\n3\n4\n</pre></details>"),
      std::string::npos)
      << h;
  // Already inside the Markdown's own <details>: not folded twice; its summary is escaped.
  EXPECT_NE(h.find("<details><summary>log &amp; tail</summary>\n<pre>a\nb\nc\nd\n</pre>\n</details>"),
            std::string::npos)
      << h;
}

TEST(HtmlCharts, BuildersWriteSpecsAndKeepScriptsClosed) {
  html::ChartSet set;
  html::LineChart line;
  line.title = "P99 TTFT against concurrency </script><b> <!--<script>";
  line.x_title = "concurrency";
  line.y_title = "P99 TTFT (ms)";
  line.log_x = true;
  line.series = {{"vllm tp8", {{1, 80.5, ""}, {4, 95.0, ""}, {16, std::nan(""), ""}}}};
  const std::string canvas = set.add(line);
  EXPECT_EQ(canvas,
            "<div class=\"chart\"><canvas id=\"chart-0\" role=\"img\" aria-label=\"P99 TTFT against "
            "concurrency &lt;/script&gt;&lt;b&gt; &lt;!--&lt;script&gt;\"></canvas></div>\n");
  html::ScatterChart sc;
  sc.title = "Pareto";
  sc.x_title = "tok/s per user";
  sc.y_title = "tok/s per GPU";
  sc.series = {{"sglang", {{30, 900, "a"}, {50, 700, "b"}}}};
  sc.marked = html::Point{30, 900, "recommended"};
  EXPECT_NE(set.add(sc).find("id=\"chart-1\""), std::string::npos);
  EXPECT_EQ(set.size(), 2u);
  const std::string script = set.script("/*lib*/");
  EXPECT_EQ(script.find("</script><b>"), std::string::npos);  // the title cannot close the element
  // Issue 31: "<!--<script>" in a text put the HTML parser in its escaped state and blanked the charts.
  EXPECT_EQ(script.find("<!--"), std::string::npos);
  const auto specs = chart_specs(script);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[0]["title"], "P99 TTFT against concurrency </script><b> <!--<script>");
  EXPECT_EQ(specs[0]["series"][0]["points"].size(), 2u);  // the NaN point is dropped
  EXPECT_EQ(specs[0]["log_x"], true);
  EXPECT_EQ(specs[1]["marked"]["label"], "recommended");
  EXPECT_EQ(html::ChartSet().script("/*lib*/"), "");
}

// Issue 30 §3: a configuration keeps one colour on every chart of a page, two never share one (up to the
// palette's 16), and neither engines nor configurations take the failure marks' or the thresholds' colour.
TEST(HtmlCharts, OneColourPerConfigurationAcrossChartsAndNoneForFailures) {
  html::ChartSet set;
  EXPECT_EQ(set.colour("vllm"), "#1f77b4");
  EXPECT_EQ(set.colour("sglang"), "#d62728");
  EXPECT_EQ(set.colour("trtllm"), "#2ca02c");
  std::set<std::string> seen = {"#1f77b4", "#d62728", "#2ca02c", html::kFailureColour,
                                html::kThresholdColour};
  for (int i = 0; i < 16; ++i) {
    const std::string c = set.colour("vllm config-" + std::to_string(i));
    EXPECT_TRUE(seen.insert(c).second) << "config-" << i << " reuses " << c;
  }
  EXPECT_EQ(set.colour("vllm config-3"), set.colour("vllm config-3"));

  html::LineChart ttft;
  ttft.title = "TTFT against concurrency";
  ttft.x_title = "concurrency";
  ttft.y_title = "TTFT (ms)";
  ttft.series = {{"vllm config-3 p50", {{1, 80, ""}}, "vllm config-3", html::Dash::kSolid},
                 {"vllm config-3 p99", {{1, 95, ""}}, "vllm config-3", html::Dash::kDashed},
                 {"vllm config-7 mean", {{1, 90, ""}}, "vllm config-7", html::Dash::kDotted}};
  ttft.thresholds = {{2000, "SLO: P99 TTFT ≤ 2000 ms"}};
  set.add(ttft);
  html::BarChart bars;
  bars.title = "goodput per configuration";
  bars.x_title = "configuration";
  bars.y_title = "req/s";
  bars.bars = {{"vllm config-7", "vllm config-7", 2.5, "", ""},
               {"vllm config-3", "vllm config-3", std::nullopt, "no value", "why"}};
  set.add(bars);
  const auto specs = chart_specs(set.script("/*lib*/"));
  ASSERT_EQ(specs.size(), 2u);
  const auto& series = specs[0]["series"];
  EXPECT_EQ(series[0]["colour"], set.colour("vllm config-3"));
  EXPECT_EQ(series[1]["colour"], series[0]["colour"]);  // p50 and p99 of one configuration: one colour,
  EXPECT_EQ(series[0]["dash"], "solid");                // told apart by the dash
  EXPECT_EQ(series[1]["dash"], "dashed");
  EXPECT_EQ(series[2]["dash"], "dotted");
  EXPECT_EQ(series[2]["key"], "vllm config-7");
  EXPECT_EQ(
      specs[0]["thresholds"],
      nlohmann::json::parse(R"([{"value": 2000.0, "label": "SLO: P99 TTFT ≤ 2000 ms", "vertical": false}])"));
  EXPECT_EQ(specs[0]["threshold_colour"], "#666666");
  EXPECT_EQ(specs[1]["bars"][0]["colour"], series[2]["colour"]);  // the same configuration on another chart
  EXPECT_EQ(specs[1]["bars"][1]["colour"], series[0]["colour"]);
  EXPECT_EQ(specs[1]["failure_colour"], "#000000");
  EXPECT_EQ(specs[1]["page_size"], 40);
}

}  // namespace
}  // namespace servelab::tune
