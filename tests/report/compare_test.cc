// `servelab compare` (include/servelab/report/compare.h): reading result files back (a real vLLM JSON Lines
// file from
// ../shared/data, hand-built --save-detailed objects), the Mann-Whitney U test against hand-computed values
// (scipy.stats.mannwhitneyu(method="asymptotic") gives the same), and the side-by-side text.
#include "servelab/report/compare.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "servelab/common/paths.h"

namespace servelab::report {
namespace {

namespace fs = std::filesystem;

TEST(MannWhitney, SeparatedSamplesWithoutTies) {
  // U1 = 0; mu = 4.5; sigma^2 = 3*3/12 * 7 = 5.25; z = -(4.5 - 0.5)/sqrt(5.25) = -1.745743;
  // p = erfc(1.745743/sqrt 2) = 0.0808556 (scipy: 0.08085559837).
  const std::vector<double> a = {1, 2, 3}, b = {4, 5, 6};
  const MannWhitney t = mann_whitney_u(a, b);
  EXPECT_EQ(t.n1, 3u);
  EXPECT_EQ(t.n2, 3u);
  EXPECT_DOUBLE_EQ(t.u1, 0.0);
  EXPECT_NEAR(t.z, -1.7457431218879391, 1e-12);
  EXPECT_NEAR(t.p_value, 0.0808555983700523, 1e-12);
  EXPECT_NEAR(mann_whitney_u(b, a).p_value, 0.0808555983700523, 1e-12);  // symmetric
  EXPECT_DOUBLE_EQ(mann_whitney_u(b, a).u1, 9.0);
}

TEST(MannWhitney, TiesAreAveragedAndCorrected) {
  // Combined sorted: 1a 2a 2a 2b 3a 3b 4b 5b → ranks 1, 3, 3, 3, 5.5, 5.5, 7, 8; R1 = 1+3+3+5.5 = 12.5;
  // U1 = 12.5 - 10 = 2.5 (pairs: a>b count + ½ ties = 0 + 1 + 1.5). Ties: 3 twos (24), 2 threes (6);
  // sigma^2 = 16/12 * (9 - 30/56) = 11.285714; z = -(5.5 - 0.5)/3.359421 = -1.488351; p = 0.1366582.
  const std::vector<double> a = {1, 2, 2, 3}, b = {2, 3, 4, 5};
  const MannWhitney t = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(t.u1, 2.5);
  EXPECT_NEAR(t.z, -1.4883513944689681, 1e-12);
  EXPECT_NEAR(t.p_value, 0.13665824773814753, 1e-12);
}

TEST(MannWhitney, DegenerateInputsAreNotSignificant) {
  const std::vector<double> same = {7, 7, 7}, empty;
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, same).p_value, 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_u(same, empty).p_value, 1.0);
  const std::vector<double> a = {1, 2, 3}, b = {1, 2, 3};  // U1 = mu: p clipped to 1
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).p_value, 1.0);
}

nlohmann::json detailed_run() {
  // Three requests: two succeed, the third failed (error text, ttft 0, no ITL).
  return nlohmann::json::parse(R"({
    "date": "20260101-000000", "backend": "openai-chat", "model_id": "org/model", "num_prompts": 3,
    "request_rate": "inf", "max_concurrency": null, "duration": 2.0, "completed": 2, "failed": 1,
    "request_throughput": 1.0, "request_goodput:": null, "output_throughput": 2.5,
    "total_token_throughput": 10.0, "mean_ttft_ms": 150.0, "p99.9_ttft_ms": 199.9,
    "ttfts": [0.1, 0.2, 0.0], "itls": [[0.01, 0.03], [0.02], []], "output_lens": [3, 2, 0],
    "errors": ["", "", "timeout"], "generated_texts": ["a b c", "d e", ""], "gpu": "8xH200"})");
}

TEST(CompareRead, DetailedSamplesOfSuccessfulRequests) {
  const SavedRun r = parse_saved_run(detailed_run(), "a.json");
  EXPECT_TRUE(r.detailed);
  EXPECT_EQ(r.ttft_ms, (std::vector<double>{100.0, 200.0}));
  // TPOT = (latency − TTFT)/(output_len − 1) = Σ ITL/(output_len − 1): 40 ms/2 = 20, 20 ms/1 = 20.
  ASSERT_EQ(r.tpot_ms.size(), 2u);
  EXPECT_NEAR(r.tpot_ms[0], 20.0, 1e-9);
  EXPECT_NEAR(r.tpot_ms[1], 20.0, 1e-9);
  ASSERT_EQ(r.itl_ms.size(), 3u);
  EXPECT_NEAR(r.itl_ms[1], 30.0, 1e-9);
  EXPECT_FALSE(r.numbers.at("request_goodput").has_value());  // the misspelt key, null
  EXPECT_DOUBLE_EQ(*r.numbers.at("p99.9_ttft_ms"), 199.9);
  EXPECT_EQ(r.texts.at("request_rate"), "inf");
  EXPECT_EQ(r.texts.at("max_concurrency"), "-");
  EXPECT_EQ(r.numbers.count("gpu"), 0u);  // metadata is not a metric
  // With `latencies` (newest vLLM) TPOT uses them: (0.16 − 0.1)/2 = 30 ms, (0.25 − 0.2)/1 = 50 ms.
  nlohmann::json j = detailed_run();
  j["latencies"] = {0.16, 0.25, 0.0};
  const SavedRun l = parse_saved_run(j, "b.json");
  EXPECT_NEAR(l.tpot_ms[0], 30.0, 1e-9);
  EXPECT_NEAR(l.tpot_ms[1], 50.0, 1e-9);
}

// A twin prediction (sim run --save-result) and a run bench marked INVALID are not plain measurements: the
// comparison says so before its table.
TEST(CompareRead, PredictionsAndInvalidRunsAreNamedBeforeTheTable) {
  nlohmann::json predicted = detailed_run();
  predicted["servelab_engine_twin_prediction"] = true;
  nlohmann::json invalid = detailed_run();
  invalid["servelab"] = {{"server_time_scale", 10}, {"invalid", "INVALID RUN: the twin ran 40 ms late"}};
  nlohmann::json clean = detailed_run();
  clean["servelab"] = {{"invalid", nullptr}};
  const SavedRun p = parse_saved_run(predicted, "p.json"), i = parse_saved_run(invalid, "i.json"),
                 c = parse_saved_run(clean, "c.json");
  EXPECT_EQ(p.caveats, std::vector<std::string>{"a prediction of the servelab engine twin (sim run), not a "
                                                "measurement"});
  EXPECT_EQ(i.caveats,
            std::vector<std::string>{"marked INVALID by bench serve: INVALID RUN: the twin ran 40 ms late"});
  EXPECT_TRUE(c.caveats.empty());
  const std::string text = format_comparison({c, p, i});
  EXPECT_EQ(text.rfind("WARNING: p.json is a prediction of the servelab engine twin (sim run), not a "
                       "measurement\nWARNING: i.json is marked INVALID by bench serve: ",
                       0),
            0u)
      << text;
  EXPECT_EQ(format_comparison({c, c}).find("WARNING"), std::string::npos);
}

// A run stopped by Ctrl-C is saved with servelab.interrupted (vLLM writes no file then): compare says so
// before the table and does not test its early-schedule samples against a whole run (new-user trial: a
// 7-of-100 interrupted run was compared, ITL "significant", with no word of the interruption).
TEST(CompareRead, AnInterruptedRunIsNamedAndNotTested) {
  nlohmann::json cut = detailed_run();
  cut["servelab"] = {{"interrupted", true}};
  cut["num_prompts"] = 100;
  nlohmann::json whole = detailed_run();
  whole["servelab"] = {{"interrupted", false}};
  const SavedRun x = parse_saved_run(cut, "cut.json"), w = parse_saved_run(whole, "whole.json");
  EXPECT_TRUE(x.interrupted);
  EXPECT_FALSE(w.interrupted);
  EXPECT_TRUE(w.caveats.empty());
  ASSERT_EQ(x.caveats.size(), 1u);
  EXPECT_EQ(x.caveats[0],
            fmt::format("an interrupted run (stopped by a signal before its schedule ended; {:g} "
                        "of 100 prompts completed): its figures cover only the part that ran",
                        whole["completed"].get<double>()));
  const std::string text = format_comparison({w, x});
  EXPECT_EQ(text.rfind("WARNING: cut.json is an interrupted run", 0), 0u) << text;
  EXPECT_NE(text.find("  cut.json: not tested: cut.json was interrupted"), std::string::npos) << text;
}

TEST(CompareRead, MalformedResultsNameTheProblem) {
  auto message = [](const nlohmann::json& j) {
    try {
      parse_saved_run(j, "x.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message(nlohmann::json::array()),
            "x.json: not a JSON object (a bench serve result is one object)");
  EXPECT_EQ(message({{"a", 1}}),
            "x.json: not a bench serve result (no 'completed' or 'request_throughput' key)");
  EXPECT_EQ(message({{"completed", 3}, {"mean_ttft_ms", "fast"}}),
            "x.json: 'mean_ttft_ms' is not a number: \"fast\"");
  nlohmann::json j = detailed_run();
  j["itls"].erase(0);
  EXPECT_EQ(message(j), "x.json: 'itls' has 2 entries, 'ttfts' has 3");
  j = detailed_run();
  j["ttfts"][1] = "0.2";
  EXPECT_EQ(message(j), "x.json: ttfts[1] is not a number: \"0.2\"");
}

// Issue 31: a 50,000-character metric key overflowed std::regex's recursion (SIGSEGV); negative times
// were averaged as if measured; a long value was echoed whole.
TEST(CompareRead, HostileKeysAndNegativeTimesAreRefusedOrIgnored) {
  auto message = [](const nlohmann::json& j) {
    try {
      parse_saved_run(j, "x.json");
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string long_key = "p" + std::string(50000, '9') + "_ttft_ms";
  const SavedRun r = parse_saved_run({{"completed", 3}, {long_key, 1.0}, {"mean_ttft_ms", 4.0}}, "x.json");
  EXPECT_EQ(r.numbers.count(long_key), 0u);  // not a metric key: ignored like any other unknown key
  EXPECT_DOUBLE_EQ(*r.numbers.at("mean_ttft_ms"), 4.0);
  EXPECT_EQ(message({{"completed", 3}, {"mean_ttft_ms", -5.0}}),
            "x.json: 'mean_ttft_ms' is -5, must be a finite number >= 0");
  EXPECT_EQ(message({{"completed", 3}, {"p99_e2el_ms", -0.5}}),
            "x.json: 'p99_e2el_ms' is -0.5, must be a finite number >= 0");
  nlohmann::json j = detailed_run();
  j["ttfts"][0] = -0.1;
  EXPECT_EQ(message(j), "x.json: ttfts[0] is -0.1, must be a finite number >= 0");
  j = detailed_run();
  j["itls"][0][1] = -0.03;
  EXPECT_EQ(message(j), "x.json: itls[0][1] is -0.03, must be a finite number >= 0");
  j = detailed_run();
  j["latencies"] = {0.05, 0.25, 0.0};  // request 0 ends before its first token
  EXPECT_EQ(message(j), "x.json: latencies[0] (0.05 s) is below ttfts[0] (0.1 s)");
  // A long non-number is shown bounded, not echoed whole.
  const std::string m = message({{"completed", 3}, {"mean_ttft_ms", std::string(100000, 'x')}});
  EXPECT_LT(m.size(), 200u);
  EXPECT_NE(m.find("... (100002 bytes)"), std::string::npos) << m;
}

// vLLM writes --metadata over its own keys: `--metadata num_prompts=abc` is its result as saved, read with a
// caveat; the --metadata keys that tell runs apart are header rows (new-user trial: three deployments had
// identical columns; the num_prompts file was refused).
TEST(CompareFormat, MetadataKeysThatDifferAreShown) {
  SavedRun a = parse_saved_run({{"completed", 3},
                                {"request_throughput", 1.0},
                                {"deployment", "base"},
                                {"tokenizer_id", "t"},
                                {"num_prompts", "abc"}},
                               "a.json");
  SavedRun b = parse_saved_run({{"completed", 3},
                                {"request_throughput", 2.0},
                                {"deployment", "kvcache"},
                                {"tokenizer_id", "t"},
                                {"num_prompts", 3}},
                               "b.json");
  a.name = "a", b.name = "b";
  ASSERT_EQ(a.caveats.size(), 1u);
  EXPECT_EQ(a.caveats[0],
            "a result whose 'num_prompts' is text (\"abc\"), not a number (--metadata overwrote it)");
  const std::string text = format_comparison({a, b});
  EXPECT_NE(text.find("deployment"), std::string::npos) << text;
  EXPECT_NE(text.find("kvcache"), std::string::npos) << text;
  EXPECT_EQ(text.find("tokenizer_id"), std::string::npos) << "the same in both runs: " << text;
  EXPECT_NE(text.find("abc"), std::string::npos) << text;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("servelab-compare-" + std::to_string(getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
  fs::path write(const std::string& name, const std::string& text) const {
    std::ofstream(dir / name) << text;
    return dir / name;
  }
};

std::string load_error(const fs::path& p) {
  try {
    load_saved_runs(p);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

// Python's json writes NaN / Infinity (vLLM's result when no request succeeded: numpy means of empty
// lists): read as missing figures with a caveat, never inside strings, not a "not JSON" error.
TEST(CompareRead, PythonNanAndInfinityAreMissingFigures) {
  TempDir t;
  const auto p = t.write("nan.json",
                         "{\"completed\": 0, \"mean_ttft_ms\": NaN, \"p99_ttft_ms\": -Infinity, "
                         "\"mean_tpot_ms\": Infinity, \"label\": \"NaN run\", \"backend\": \"vllm\"}");
  const auto runs = load_saved_runs(p);
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_FALSE(runs[0].numbers.at("mean_ttft_ms"));
  EXPECT_FALSE(runs[0].numbers.at("p99_ttft_ms"));
  EXPECT_FALSE(runs[0].numbers.at("mean_tpot_ms"));
  EXPECT_DOUBLE_EQ(*runs[0].numbers.at("completed"), 0);
  ASSERT_FALSE(runs[0].caveats.empty());
  EXPECT_NE(runs[0].caveats.back().find("3 NaN / Infinity values"), std::string::npos)
      << runs[0].caveats.back();
}

TEST(CompareRead, FilesJsonLinesAndTheirErrors) {
  TempDir t;
  EXPECT_EQ(load_error(t.dir / "missing.json"),
            "cannot read " + (t.dir / "missing.json").string() + ": no such file");
  EXPECT_EQ(load_error(t.write("empty.json", " \n")), (t.dir / "empty.json").string() + ": empty file");
  const auto bad = t.write("bad.jsonl", "{\"completed\": 1}\n{\"completed\": x}\n");
  EXPECT_EQ(load_error(bad).rfind(bad.string() + ":2: not JSON: ", 0), 0u) << load_error(bad);
  EXPECT_EQ(load_error(t.write("notjson.json", "hello"))
                .rfind((t.dir / "notjson.json").string() + ": not JSON: ", 0),
            0u);
  // Issue 31: nlohmann's own messages (an internal id, the last token echoed whole) never reach the user.
  EXPECT_EQ(load_error(t.write("notjson2.json", "hello")),
            (t.dir / "notjson2.json").string() + ": not JSON: syntax error at line 1, column 1");
  EXPECT_EQ(load_error(bad), bad.string() + ":2: not JSON: syntax error at column 15");
  const auto huge = t.write("huge.json", "{\"completed\": 1" + std::string(400, '0') + "}");
  EXPECT_EQ(load_error(huge), huge.string() + ": not JSON: a number too large for a double");
  // The real vLLM sweep file (9 runs, one per line): the first is rate 10, 300 prompts.
  const auto runs = load_saved_runs(common::data_dir() / "vllm_bench_serve_results_llmd_l40s.jsonl");
  ASSERT_EQ(runs.size(), 9u);
  EXPECT_EQ(runs[0].name, "vllm_bench_serve_results_llmd_l40s.jsonl#1");
  EXPECT_DOUBLE_EQ(*runs[0].numbers.at("completed"), 300);
  EXPECT_DOUBLE_EQ(*runs[0].numbers.at("mean_ttft_ms"), 54.59561144333596);
  EXPECT_EQ(runs[0].texts.at("request_rate"), "10");
  EXPECT_EQ(runs[2].texts.at("request_rate"), "inf");
  EXPECT_FALSE(runs[0].detailed);
}

SavedRun run_of(const std::string& name, double throughput, std::vector<double> ttft_ms) {
  SavedRun r;
  r.name = name;
  r.numbers["completed"] = 100;
  r.numbers["request_throughput"] = throughput;
  r.numbers["mean_ttft_ms"] = 50;
  r.detailed = !ttft_ms.empty();
  r.ttft_ms = r.tpot_ms = r.itl_ms = std::move(ttft_ms);
  return r;
}

std::vector<double> range(double from, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(from + i);
  return v;
}

TEST(CompareFormat, SideBySideWithChangesAndVerdicts) {
  // A: 25 samples 1..25 ms; B: 1001..1025 (U1 = 0: z = -(312.5 - 0.5)/51.539 = -6.05, significant);
  // C: the same samples as A (p = 1); D: 5 samples (too few); E: no samples.
  const std::vector<SavedRun> runs = {run_of("A", 100, range(1, 25)), run_of("B", 110, range(1001, 25)),
                                      run_of("C", 90, range(1, 25)), run_of("D", 100, range(1, 5)),
                                      run_of("E", 100, {})};
  const std::string text = format_comparison(runs);
  EXPECT_NE(
      text.find("metric                        A             B            C            D            E\n"),
      std::string::npos)
      << text;
  EXPECT_NE(
      text.find("Request throughput (req/s)  100  110 (+10.0%)  90 (-10.0%)  100 (+0.0%)  100 (+0.0%)\n"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  B TTFT median 13.00 -> 1013.00 ms (+7692.3%), n = 25 / 25, z = -6.05, p < 0.0001: "
                      "significant\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find(
          "  C TPOT median 13.00 -> 13.00 ms (+0.0%), n = 25 / 25, z = 0.00, p = 1.0000: not significant"),
      std::string::npos)
      << text;
  EXPECT_NE(text.find("  D ITL  not tested: 25 and 5 samples (the test needs 20 on each side)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  E: not tested: no per-request samples"), std::string::npos) << text;
  EXPECT_NE(text.find("Throughput: one value per run, not tested"), std::string::npos);
  EXPECT_THROW(format_comparison({runs[0]}), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::report
