// The load dimension, continued: several objectives over one study (each searched and charted), the
// progress lines, the parse errors of the load sections, the shipped SLO study and --target local's SLO
// searches guided by the twin.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <unistd.h>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>

#include "servelab/common/paths.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/tune.h"
#include "test_study.h"
#include "tune/report/study_report.h"

#include "load_test_support.h"

namespace servelab::tune {
namespace {

using testing::curve_runner;
using testing::kSlo;
using testing::probe_values;
using testing::small;

const char* kObjectives = R"toml(
[load]
concurrency = [1, 4, 16]

[slo]
p99_ttft_ms = 2000

[cost]
usd_per_gpu_hour = 2.5

[[objectives]]
kind = "slo_goodput"

[[objectives]]
kind = "tokens_per_gpu"
min_tokens_per_s_per_user = 10

[[objectives]]
kind = "min_latency"
metric = "ttft_p99_ms"
max_concurrency = 8

[[objectives]]
kind = "cost"
)toml";

TEST(Objectives, TheSearchMaximisesThePrimaryAndTheReportShowsEach) {
  // Engine b's TTFT slope is half of a's: it meets the SLO up to twice the rate, so the goodput objective
  // ranks b first although both engines have the same throughput at the scenario as written.
  Study s = small(std::string(kObjectives) + "\n[search]\nstrategy = \"grid\"\nablation = false\n");
  s.knobs.clear();  // one config per engine
  s.search.knob_order.clear();
  int launches = 0;
  auto slope = [](const std::string& key, double load) {
    return (key.rfind("b{", 0) == 0 ? 50 : 100) * load;
  };
  Evaluator ev(s, curve_runner(slope, &launches), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  SearchOutcome o = run_search(s, ev, nullptr);
  analyze_load(s, ev, o);
  EXPECT_EQ(o.best.key, "b{}");
  EXPECT_DOUBLE_EQ(o.best.objective.mean, 0.9 * 40);  // b meets 2000 ms up to 40 req/s
  EXPECT_EQ(primary_objective_label(s), "Request goodput under the SLOs (req/s)");
  const LoadOutcome& L = o.load;
  ASSERT_TRUE(L.enabled);
  ASSERT_EQ(L.curves.size(), 2u);
  ASSERT_EQ(L.slo.size(), 2u);
  EXPECT_EQ(L.curves[0].config_key, "b{}");
  EXPECT_DOUBLE_EQ(L.slo[0].max_passing, 40);
  EXPECT_DOUBLE_EQ(L.slo[1].max_passing, 20);
  ASSERT_EQ(L.objectives.size(), 4u);
  EXPECT_EQ(L.objectives[0].best, 0);
  // tokens_per_gpu at ≥ 10 tok/s/user: 10 × c / c = 10 per user at every c, best c = 16 → 160/8 = 20.
  EXPECT_DOUBLE_EQ(L.objectives[1].values[0].value, 20);
  EXPECT_EQ(L.objectives[1].values[0].at, "concurrency 16");
  // min_latency at concurrency ≤ 8 reads c = 4: a 400 ms, b 200 ms; b wins (minimised).
  EXPECT_DOUBLE_EQ(L.objectives[2].values[1].value, 400);
  EXPECT_EQ(L.objectives[2].best, 0);
  // Cost at the highest-throughput point (c = 16: 160 output tok/s): 2.5 × 8 / 3600 / 160 × 1e6 = 34.72 $.
  ASSERT_EQ(L.cost.size(), 2u);
  EXPECT_NEAR(L.cost[0].usd_per_1m_output_tokens, 2.5 * 8 / 3600.0 / 160 * 1e6, 1e-9);
  EXPECT_EQ(L.cost[0].at, "concurrency 16");
  // Pareto: every point has 10 tok/s per user, so only c = 16 (20 tok/s/GPU) of each engine is on the front.
  EXPECT_EQ(L.pareto.size(), 6u);
  EXPECT_EQ(std::count_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.on_front; }),
            2);
  EXPECT_EQ(
      std::count_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.recommended; }), 1);
  ReportInput in{&s, &o, ev.records(), {}};
  const std::string md = render_markdown(in);
  for (const char* section :
       {"## Load curves", "## SLO search", "## Pareto front", "## Objectives", "## Cost per 1M tokens",
        "| rank | engine | config | Request goodput under the SLOs (req/s) |"})
    EXPECT_NE(md.find(section), std::string::npos) << section;
  // Issue 30 item 4: the summaries name what was measured, by the objective's own name and unit, not the
  // [objective] metric (Total Token throughput) beside a goodput value.
  EXPECT_EQ(md.find("## Summary\n\nObjective: maximise **Request goodput under the SLOs (req/s)**."),
            md.find("## Summary"))
      << md;
  EXPECT_NE(md.find("## Goal"), std::string::npos);
  EXPECT_NE(
      md.find("Objective: maximise **Request goodput under the SLOs (req/s)** (SLOs: P99 TTFT ≤ 2000 ms) "
              "on scenario `s1`."),
      std::string::npos)
      << md;
  EXPECT_NE(md.find("| 1 | b | baseline | 36.00"), std::string::npos) << md;
  const std::string html = render_html(in, md, "");
  EXPECT_NE(html.find("Objective: maximise <b>Request goodput under the SLOs (req/s)</b> on s1"),
            std::string::npos)
      << html.substr(0, 3000);
  EXPECT_NE(html.find("Request goodput under the SLOs (req/s): <b>36.00"), std::string::npos)
      << html.substr(0, 3000);
  EXPECT_EQ(html.find("Total Token throughput (tok/s): <b>"), std::string::npos);
  EXPECT_EQ(html.find("maximise <b>Total Token throughput"), std::string::npos);
}

// Issue 30 (review): every configuration the ranking values on goodput has its SLO search in the report and
// summary.json, not only the (at most 8) configurations the load analysis covers.
TEST(Objectives, EveryGoodputTheRankingUsesHasItsSloRow) {
  Study s = small(std::string(kObjectives) + "\n[search]\nstrategy = \"grid\"\nablation = false\n");
  int launches = 0;
  auto slope = [](const std::string& key, double load) { return (50 + key.size() % 7 * 10) * load; };
  Evaluator ev(s, curve_runner(slope, &launches), RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  SearchOutcome o = run_search(s, ev, nullptr);
  analyze_load(s, ev, o);
  size_t valued = 0;
  for (const Evaluation& e : o.ranked) valued += e.slo.has_value();
  ASSERT_GT(valued, 8u);  // more than the analysis covers
  const LoadOutcome& L = o.load;
  EXPECT_LE(L.curves.size(), 8u);
  ASSERT_EQ(L.slo.size(), valued);
  ASSERT_EQ(L.objectives[0].values.size(), valued);
  for (const Evaluation& e : o.ranked) {
    if (!e.slo) continue;
    const auto row =
        std::find_if(L.slo.begin(), L.slo.end(), [&](const SloResult& r) { return r.config_key == e.key; });
    ASSERT_NE(row, L.slo.end()) << e.key;
    const auto v = std::find_if(L.objectives[0].values.begin(), L.objectives[0].values.end(),
                                [&](const ObjectiveValue& x) { return x.config_key == e.key; });
    ASSERT_NE(v, L.objectives[0].values.end()) << e.key;
    EXPECT_EQ(v->feasible, e.feasible) << e.key;
    if (e.feasible) {
      EXPECT_DOUBLE_EQ(v->value, e.objective.mean) << e.key;
    }
  }
  // The winner of the objective is the search's best.
  EXPECT_EQ(L.objectives[0].values[L.objectives[0].best].config_key, o.best.key);
  ReportInput in{&s, &o, ev.records(), {}};
  const nlohmann::json summary = nlohmann::json::parse(summary_json(in));
  // The Objectives section lists the primary objective best first, two decimals, as the ranking does.
  const std::string md = render_markdown(in);
  std::istringstream section(md.substr(md.find("### Primary: ")));
  std::vector<double> listed;
  std::string line;
  std::getline(section, line);  // the heading
  while (std::getline(section, line) && line.rfind("### ", 0) != 0) {
    if (line.rfind("| ", 0) != 0 || line.find(" | — (") != std::string::npos ||
        line.rfind("| config", 0) == 0)
      continue;
    const size_t a = line.find(" | ") + 3;
    listed.push_back(std::stod(line.substr(a, line.find(" | ", a) - a)));
  }
  ASSERT_EQ(listed.size(), valued - std::count_if(o.ranked.begin(), o.ranked.end(),
                                                  [](const Evaluation& e) { return e.slo && !e.feasible; }));
  EXPECT_TRUE(std::is_sorted(listed.rbegin(), listed.rend())) << md.substr(md.find("### Primary: "), 2000);
  // Every configuration of the ranking, the ones that failed before any SLO run with their failure.
  size_t failed = 0;
  for (const Evaluation& e : o.ranked) failed += !e.slo && !e.feasible;
  ASSERT_GT(failed, 0u);  // the layout tp3 on 8 GPUs is refused
  EXPECT_EQ(summary["per_configuration"].size(), valued + failed);
  EXPECT_TRUE(summary["per_configuration"].back()["value"].is_null());
  EXPECT_NE(summary["per_configuration"].back()["why"].get<std::string>(), "");
  // The fake twin's predictions carry no band: unknown, never a certain winner.
  EXPECT_EQ(summary["verdict"]["kind"], "measure_these");
  EXPECT_TRUE(summary["best"]["band"].is_null());
}

// Issue 30 (review): the progress line's total is a plan that does not follow its count ("[454/454]"), the
// twin guiding a local study counts apart, and an SLO run shows its goodput and the bounded values, not the
// trial's tok/s.
TEST(Progress, PlannedTotalTwinGuideAndSloRunLines) {
  Study s = small(kSlo);
  int launches = 0;
  std::ostringstream out;
  Evaluator ev(s, curve_runner([](const std::string&, double load) { return 100 * load; }, &launches),
               RunnerKind::kTwin, nullptr, {}, &out, nullptr, {});
  ev.set_planned(2);
  const CandidateConfig base{"a", {}};
  ev.evaluate(base, {"s1"}, "baseline");
  ev.evaluate(base, {load_scenario_id("s1", LoadPoint{LoadKind::kRequestRate, 4})}, "slo");
  ev.evaluate(base, {"s2"}, "baseline");
  const std::string text = out.str();
  EXPECT_NE(text.find("[1/~2] a baseline (baseline, r0): 30.00 Total Token throughput (tok/s)"),
            std::string::npos)
      << text;
  // The load probed (new-user trial: missing), P99 TTFT = 100 ms × 4; Mean TPOT 10 ms; goodput 0.9 × 4.
  EXPECT_NE(text.find("[2/~2] a baseline (slo, r0): at 4 req/s: goodput 3.60 req/s; Mean TPOT 10.0 ms, P99 "
                      "TTFT 400.0 ms"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[3, past the ~2 planned] a baseline"), std::string::npos) << text;
  s.target = Target::kLocal;
  std::ostringstream guide_out;
  Evaluator guide(s, curve_runner([](const std::string&, double load) { return 100 * load; }, &launches),
                  RunnerKind::kTwin, nullptr, {}, &guide_out, nullptr, {});
  guide.evaluate(base, {"s1"}, "slo-guide");
  EXPECT_EQ(guide_out.str().rfind("[twin 1] a baseline", 0), 0u) << guide_out.str();
  EXPECT_EQ(guide_out.str().find("left"), std::string::npos) << guide_out.str();
}

// Issue 30 §3: a goodput study's page charts goodput per configuration by its own name and unit, draws its
// SLO thresholds on the latency-against-load charts with the statistic each bounds (mean TPOT), keeps one
// colour per configuration across charts, and the console's "best" names the objective, not the trial's
// tok/s.
TEST(Objectives, TheGoodputStudyChartsItsObjectiveAndThresholds) {
  std::string objectives = kObjectives;
  objectives.replace(objectives.find("p99_ttft_ms = 2000\n"), 19, "p99_ttft_ms = 2000\nmean_tpot_ms = 50\n");
  Study s = small(objectives + "\n[search]\nstrategy = \"grid\"\nablation = false\n");
  s.knobs.clear();
  s.search.knob_order.clear();
  int launches = 0;
  auto slope = [](const std::string& key, double load) {
    return (key.rfind("b{", 0) == 0 ? 50 : 100) * load;
  };
  std::ostringstream progress;
  Evaluator ev(s, curve_runner(slope, &launches), RunnerKind::kTwin, nullptr, {}, &progress, nullptr, {});
  SearchOutcome o = run_search(s, ev, nullptr);
  analyze_load(s, ev, o);
  EXPECT_NE(progress.str().find("| best 36.00 Request goodput under the SLOs (req/s) (b baseline)"),
            std::string::npos)
      << progress.str();
  ReportInput in{&s, &o, ev.records(), {}};
  const nlohmann::json specs = testing::chart_specs(render_html(in, render_markdown(in), "/*chartjs*/"));
  auto chart = [&](const std::string& title) {
    for (const auto& c : specs)
      if (c["title"].get<std::string>().rfind(title, 0) == 0) return c;
    ADD_FAILURE() << "no chart " << title << " in " << specs.dump(1);
    return nlohmann::json();
  };
  // Goodput per configuration: b 0.9 × 40 req/s, a 0.9 × 20 req/s (the SLO search's maxima).
  const auto goodput = chart("Request goodput under the SLOs (req/s) (predicted) per configuration on s1");
  EXPECT_EQ(goodput["y_title"], "Request goodput under the SLOs (req/s)");
  ASSERT_EQ(goodput["bars"].size(), 2u);
  EXPECT_EQ(goodput["bars"][0]["label"], "b baseline");
  EXPECT_DOUBLE_EQ(goodput["bars"][0]["value"].get<double>(), 36);
  EXPECT_EQ(goodput["bars"][1]["label"], "a baseline");
  EXPECT_DOUBLE_EQ(goodput["bars"][1]["value"].get<double>(), 18);
  // P99 TTFT against concurrency: the SLO at 2000 ms; each configuration in its goodput bar's colour.
  const auto ttft = chart("TTFT (predicted) against concurrency on s1");
  EXPECT_EQ(
      ttft["thresholds"],
      nlohmann::json::parse(R"([{"value": 2000.0, "label": "SLO: P99 TTFT ≤ 2000 ms", "vertical": false}])"));
  ASSERT_EQ(ttft["series"].size(), 2u);  // the fake engine reports P99 TTFT only
  EXPECT_EQ(ttft["series"][0]["name"], "b baseline p99");
  EXPECT_EQ(ttft["series"][0]["colour"], goodput["bars"][0]["colour"]);
  EXPECT_EQ(ttft["series"][1]["colour"], goodput["bars"][1]["colour"]);
  EXPECT_NE(ttft["series"][0]["colour"], ttft["series"][1]["colour"]);
  EXPECT_DOUBLE_EQ(ttft["series"][1]["points"][2]["y"].get<double>(), 100 * 16);  // a at concurrency 16
  // TPOT: the SLO bounds the mean, so the mean is drawn (dotted) beside the threshold at 50 ms.
  const auto tpot = chart("TPOT (predicted) against concurrency on s1");
  EXPECT_EQ(tpot["thresholds"][0]["label"], "SLO: Mean TPOT ≤ 50 ms");
  EXPECT_DOUBLE_EQ(tpot["thresholds"][0]["value"].get<double>(), 50);
  ASSERT_EQ(tpot["series"].size(), 2u);
  EXPECT_EQ(tpot["series"][0]["name"], "b baseline mean");
  EXPECT_EQ(tpot["series"][0]["dash"], "dotted");
  EXPECT_DOUBLE_EQ(tpot["series"][0]["points"][0]["y"].get<double>(), 10);
  EXPECT_TRUE(chart("Output token throughput (predicted) against concurrency on s1")["thresholds"].empty());
  // summary.json names the objective and carries its values (not the trials' Total Token throughput).
  const nlohmann::json sum = nlohmann::json::parse(summary_json(in));
  EXPECT_EQ(sum["objective"]["name"], "Request goodput under the SLOs (req/s)");
  EXPECT_EQ(sum["objective"]["unit"], "req/s");
  EXPECT_EQ(sum["best"]["engine"], "b");
  EXPECT_DOUBLE_EQ(sum["best"]["value"].get<double>(), 36);
  EXPECT_DOUBLE_EQ(sum["recommended"]["value"].get<double>(), 36);
  ASSERT_EQ(sum["per_configuration"].size(), 2u);
  EXPECT_EQ(sum["per_configuration"][1]["engine"], "a");
  EXPECT_DOUBLE_EQ(sum["per_configuration"][1]["value"].get<double>(), 18);
}

/// The message of the StudyError parsing `extra` after the small study, with the line made relative to
/// `extra`.
std::string parse_error(const std::string& extra) {
  const int base = static_cast<int>(
      std::count(testing::kSmallStudy, testing::kSmallStudy + std::strlen(testing::kSmallStudy), '\n'));
  try {
    small(extra);
  } catch (const StudyError& e) {
    std::string m = e.what();
    const auto colon = m.find(':', std::string("small.toml:").size());
    if (m.rfind("small.toml:", 0) == 0 && colon != std::string::npos) {
      const int line = std::stoi(m.substr(11, colon - 11));
      return fmt::format("+{}{}", line - base, m.substr(colon));
    }
    return m;
  }
  return "no error";
}

TEST(LoadSections, ParseErrorsNameTheLineAndKey) {
  EXPECT_EQ(parse_error("[load]\nconcurrency = [1, 0]\n"),
            "+2: load.concurrency[1]: a concurrency must be an integer in 1..1000000");
  EXPECT_EQ(parse_error("[load]\nrequest_rate = [1, 1]\n"),
            "+2: load.request_rate[1]: duplicate request rate 1");
  EXPECT_EQ(parse_error("[load]\nqps = [1]\n"),
            "+2: unknown key load.qps (allowed: concurrency, request_rate)");
  EXPECT_EQ(parse_error("[slo]\np99_tfft_ms = 2000\n").substr(0, 40),
            "+2: slo.p99_tfft_ms: unknown key: an SLO");
  EXPECT_EQ(parse_error("[slo]\np99_ttft_ms = -1\n"), "+2: slo.p99_ttft_ms: -1 must be > 0");
  EXPECT_EQ(parse_error("[slo]\np99_ttft_ms = 1\nsearch = \"qps\"\n"),
            "+3: slo.search: must be \"request_rate\" or \"concurrency\"");
  EXPECT_EQ(parse_error("[slo]\np99_ttft_ms = 1\nscenario = \"s9\"\n"),
            "+3: slo.scenario: no scenario with id 's9'");
  // Issue 30 (review): a max_prompts below the scenario's own --num-prompts (s1: 10) was raised silently.
  EXPECT_EQ(parse_error("[slo]\np99_ttft_ms = 1\nmax_prompts = 5\n"),
            "+3: slo.max_prompts: 5 is below the --num-prompts 10 of scenario 's1': the SLO search runs at "
            "least the scenario's prompts, so raise max_prompts or lower --num-prompts");
  EXPECT_EQ(parse_error("[slo]\np99_ttft_ms = 1\nmax_prompts = 10\n"), "no error");
  EXPECT_EQ(parse_error("[slo]\np99.9_tpot_ms = 50\n"),
            "+2: slo.p99: TOML reads the dot of a fractional percentile as a table: quote the key, e.g. "
            "\"p99.9_ttft_ms\" = 2000");
  // A percentile bench does not print failed every run of every configuration, then the study.
  EXPECT_EQ(
      parse_error("[slo]\np95_ttft_ms = 1\n"),
      "+2: slo.p95_ttft_ms: scenario 's1' does not report the 95 percentile: bench serve prints only P99 "
      "by default; add \"--metric-percentiles\", \"95,99\" to its args (or [bench] common_args)");
  EXPECT_EQ(parse_error("[cost]\nusd_per_gpu_hour = \"3\"\n"), "+2: cost.usd_per_gpu_hour: must be a number");
  EXPECT_EQ(parse_error("[[objectives]]\nkind = \"slo_goodput\"\n"),
            "+1: objectives[0]: slo_goodput needs an [slo] table with targets (e.g. p99_ttft_ms = 2000)");
  EXPECT_EQ(parse_error("[[objectives]]\nkind = \"fastest\"\n"),
            "+2: objectives[0].kind: must be throughput, slo_goodput, tokens_per_gpu, min_latency or cost");
  EXPECT_EQ(
      parse_error("[load]\nconcurrency = [1]\n[[objectives]]\nkind = \"min_latency\"\nmax_concurrency = 4\n")
          .substr(0, 63),
      "+3: objectives[0]: 'min_latency' is minimised and cannot be the");
  EXPECT_EQ(parse_error("[[objectives]]\nkind = \"throughput\"\n[[objectives]]\nkind = \"tokens_per_gpu\"\n"
                        "min_tokens_per_s_per_user = 30\n"),
            "+3: objectives[1]: 'tokens_per_gpu' needs concurrency load points ([load] concurrency = [...])");
}

TEST(LoadSections, ScenarioOverrideAndValues) {
  std::string reports_p90 = testing::kSmallStudy;  // a p90 SLO needs bench to print P90
  reports_p90.replace(reports_p90.find("\"openai-chat\"]"), 14,
                      "\"openai-chat\", \"--metric-percentiles\", \"90,99\"]");
  Study s = parse_study(reports_p90 + "\n[load]\nconcurrency = [1, 64]\n" +
                            "\n[slo]\np90_e2el_ms = 900\nmedian_itl_ms = 20\nstart = 4\n",
                        "x.toml", "/d");
  EXPECT_EQ(s.load.concurrency, (std::vector<int>{1, 64}));
  ASSERT_EQ(s.slo.targets.size(), 2u);
  EXPECT_EQ(s.slo.targets[0].label, "Median ITL (ms)");  // in key order
  EXPECT_EQ(s.slo.targets[1].label, "P90 E2EL (ms)");
  EXPECT_DOUBLE_EQ(*s.slo.start, 4);
  EXPECT_EQ(s.slo.scenario, "s1");
  // --goodput gets the per-request targets vLLM knows (e2el here; ITL has none).
  const Scenario p = load_scenario(s, "s1@r3");
  EXPECT_EQ(std::vector<std::string>(p.args.end() - 4, p.args.end()),
            (std::vector<std::string>{"--request-rate", "3", "--goodput", "e2el:900"}));
  std::string with_override = testing::kSmallStudy;
  with_override.replace(with_override.find("id = \"s2\""), 9, "id = \"s2\"\nload = {request_rate = [8]}");
  Study o = parse_study(with_override + "\n[load]\nconcurrency = [2]\n", "x.toml", "/d");
  EXPECT_EQ(load_points(o, o.scenario("s1")).size(), 1u);
  ASSERT_EQ(load_points(o, o.scenario("s2")).size(), 1u);
  EXPECT_EQ(load_points(o, o.scenario("s2"))[0].tag(), "r8");
  EXPECT_THROW(
      parse_study(std::string(testing::kSmallStudy) + "\n[[scenarios]]\nid = \"a@b\"\n", "x.toml", "/d"),
      StudyError);
}

// b wins the primary objective (goodput), a a secondary tokens_per_gpu objective (twice b's output): the
// Pareto table's "recommended" mark is on b, the recommended configuration, not on a's tokens_per_gpu pick
// (new-user trial), and off the front it says so.
TEST(Objectives, TheRecommendedParetoPointIsOnTheRecommendedConfiguration) {
  Study s = small(std::string(kObjectives) + "\n[search]\nstrategy = \"grid\"\nablation = false\n");
  s.knobs.clear();
  s.search.knob_order.clear();
  int launches = 0;
  const TrialRunner base = curve_runner(
      [](const std::string& key, double load) { return (key.rfind("b{", 0) == 0 ? 50 : 100) * load; },
      &launches);
  const TrialRunner runner = [base](const TrialRequest& req) {
    TrialOutcome out = base(req);
    if (req.config_key.rfind("a{", 0) == 0)
      for (auto& sc : out.scenarios) sc.metrics["Output token throughput (tok/s)"] *= 2;
    return out;
  };
  Evaluator ev(s, runner, RunnerKind::kTwin, nullptr, {}, nullptr, nullptr, {});
  SearchOutcome o = run_search(s, ev, nullptr);
  analyze_load(s, ev, o);
  ASSERT_EQ(o.best.key, "b{}");
  ASSERT_EQ(o.recommended_eval.key, "b{}");
  const LoadOutcome& L = o.load;
  ASSERT_EQ(L.objectives.size(), 4u);
  ASSERT_GE(L.objectives[1].best, 0);
  EXPECT_EQ(L.objectives[1].values[L.objectives[1].best].config_key, "a{}");
  const auto mark =
      std::find_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.recommended; });
  ASSERT_NE(mark, L.pareto.end());
  EXPECT_EQ(mark->config_key, "b{}");
  EXPECT_FALSE(mark->on_front);  // a's points are higher on both axes
  EXPECT_EQ(
      std::count_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.recommended; }), 1);
  ReportInput in{&s, &o, ev.records(), {}};
  const std::string md = render_markdown(in);
  EXPECT_NE(md.find("| no (recommended) |"), std::string::npos) << md;
  // The front and the objectives cover the configurations with load curves, and say so (new-user trial:
  // "Every concurrency point of every configuration" over 8 of 23, and a cost "Best" that was not the
  // cheapest the study ran).
  EXPECT_NE(md.find("Every concurrency point of the 2 configuration(s) with load curves"), std::string::npos);
  EXPECT_NE(md.find("Best of those: **"), std::string::npos);
  EXPECT_EQ(md.find("**yes (recommended)**"), std::string::npos) << md;
}

}  // namespace
}  // namespace servelab::tune

namespace servelab::tune {
namespace {

TEST(ShippedSloStudy, RunsOnTheTwinWithCurvesSloSearchAndAFront) {
  // studies/deepseek-v3.2-h200x8-slo.toml as `make demo` runs it (a few hundred twin predictions).
  const Study s =
      load_study(common::source_dir() / "studies" / "deepseek-v3.2-h200x8-slo.toml", common::data_dir());
  EXPECT_EQ(s.load.concurrency, (std::vector<int>{1, 4, 16, 64, 256}));
  ASSERT_EQ(s.objectives.size(), 5u);
  EXPECT_EQ(s.objectives[0].kind, ObjectiveSpec::Kind::kSloGoodput);
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_slo_study_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  const TuneResult r = run_study(s, opt);
  const LoadOutcome& L = r.outcome.load;
  ASSERT_TRUE(L.enabled);
  ASSERT_GE(L.curves.size(), 4u);
  EXPECT_EQ(L.curves[0].points.size(), 8u);  // 5 concurrencies + 3 rates
  ASSERT_EQ(L.slo.size(), L.curves.size());
  for (const auto& slo : L.slo) {
    EXPECT_TRUE(slo.found) << slo.label << ": " << slo.note;
    EXPECT_LE(slo.runs, s.slo.max_runs);
    ASSERT_TRUE(slo.min_failing) << slo.label;
    EXPECT_LE(*slo.min_failing / slo.max_passing, 1.05 + 1e-9) << slo.label;
  }
  EXPECT_GT(std::count_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.on_front; }),
            1);
  EXPECT_EQ(
      std::count_if(L.pareto.begin(), L.pareto.end(), [](const ParetoPoint& p) { return p.recommended; }), 1);
  EXPECT_GE(r.outcome.load.objectives[0].best, 0);
  const std::string md = common::read_file(dir / "report.md");
  for (const char* section : {"## Load curves", "## SLO search", "## Pareto front", "**yes (recommended)**",
                              "## Cost per 1M tokens"})
    EXPECT_NE(md.find(section), std::string::npos) << section;
  EXPECT_EQ(r.tally.launches, 0);  // the twin target starts no engine
  EXPECT_LT(r.tally.trials, 300);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune

namespace servelab::tune {
namespace {

TEST(RunStudy, LocalSloSearchesStartFromTheTwin) {
  // run_study wires the twin in as the guide of --target local's SLO searches: the real search of each
  // configuration starts at the twin's answer (20 req/s) and takes 3 runs (see
  // LocalSearchStartsAtTheTwinsAnswer).
  Study s = small(std::string(kSlo) + "\n[search]\nstrategy = \"grid\"\nablation = false\n");
  s.target = Target::kLocal;
  s.knobs.clear();
  s.search.knob_order.clear();
  int twin_launches = 0, real_launches = 0;
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_local_slo_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  opt.runner = curve_runner([](const std::string&, double r) { return 125 * r; }, &real_launches);
  opt.twin_runner = curve_runner([](const std::string&, double r) { return 100 * r; }, &twin_launches);
  const TuneResult r = run_study(s, opt);
  ASSERT_EQ(r.outcome.load.slo.size(), 2u);
  for (const auto& slo : r.outcome.load.slo) {
    ASSERT_TRUE(slo.twin_start) << slo.label;
    EXPECT_DOUBLE_EQ(*slo.twin_start, 20);
    EXPECT_EQ(probe_values(slo), (std::vector<double>{20, 16, 16.8}));
    EXPECT_DOUBLE_EQ(slo.max_passing, 16);
  }
  EXPECT_EQ(twin_launches, 2 * 8);  // the twin's searches, one per engine
  // Engine logs only where engines run: the local trials name one under logs/, the twin's none.
  size_t local = 0, twin = 0;
  for (const TrialRecord& t : Store(dir / "results.sqlite").trials()) {
    if (t.outcome.predicted) {
      ++twin;
      EXPECT_EQ(t.log_path, "") << t.trial_key;
    } else {
      ++local;
      EXPECT_EQ(std::filesystem::path(t.log_path).parent_path(), dir / "logs") << t.trial_key;
    }
  }
  EXPECT_GT(local, 0u);
  EXPECT_GT(twin, 0u);
  std::filesystem::remove_all(dir);
}

// Issue 30 §3: a twin study's report named engine logs (logs/<trial>.log) that the twin never writes.
TEST(RunStudy, TwinTrialsNameNoEngineLog) {
  Study s = small("");
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_twin_logs_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  TuneOptions opt;
  opt.out_dir = dir;
  opt.runner = testing::fake_runner();
  run_study(s, opt);
  const std::vector<TrialRecord> trials = Store(dir / "results.sqlite").trials();
  ASSERT_GT(trials.size(), 5u);
  size_t failed = 0;
  for (const TrialRecord& t : trials) {
    EXPECT_EQ(t.log_path, "") << t.trial_key;
    failed += t.outcome.status != TrialStatus::kOk;
  }
  EXPECT_GT(failed, 0u);  // the failures table has rows, and no log column entry
  std::ifstream md(dir / "report.md");
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("## Failures"), std::string::npos);
  EXPECT_EQ(text.find("logs/"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "logs"));
  std::ifstream summary(dir / "summary.json");
  const nlohmann::json sum = nlohmann::json::parse(summary);
  EXPECT_EQ(sum["objective"]["name"], "Total Token throughput (tok/s)");
  EXPECT_EQ(sum["objective"]["unit"], "tok/s");
  EXPECT_EQ(sum["target"], "twin");
  EXPECT_EQ(sum.count("per_configuration"), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune
