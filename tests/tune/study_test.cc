#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "servelab/common/paths.h"
#include "servelab/common/redact.h"
#include "servelab/tune/search/search.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/study/study.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

Study small() {
  return parse_study(testing::kSmallStudy, "small.toml", "/data");
}

TEST(Study, ParsesEnginesKnobsScenarios) {
  Study s = small();
  EXPECT_EQ(s.name, "small");
  ASSERT_EQ(s.engines.size(), 2u);
  EXPECT_EQ(s.engines[1].base_flags, (std::vector<std::string>{"--chat-template", "x.jinja"}));
  ASSERT_EQ(s.knobs.size(), 3u);
  EXPECT_EQ(s.knobs[0].values[0].label, "tp8");
  EXPECT_EQ(s.knobs[0].values[1].label, "tp4-dp2");
  EXPECT_EQ(s.knobs[0].baseline, "tp8");
  EXPECT_TRUE(s.knobs[1].values[0].is_default);
  EXPECT_EQ(s.knobs[2].values[1].label, "true");
  EXPECT_EQ(s.objective.metric, "Total Token throughput (tok/s)");
  EXPECT_EQ(s.search.knob_order, (std::vector<std::string>{"layout", "ctx", "flag"}));
}

// `baseline = 32768` on an int knob names its value as the docs write it (new-user trial: "baseline: must be
// a string"); a number that is no value of the knob is refused like a label; true on a bool knob likewise.
TEST(Study, AScalarBaselineNamesTheValueOfItsKnob) {
  std::string text = testing::kSmallStudy;
  text.replace(text.find("values = [\"default\", 32768]"), 27,
               "values = [\"default\", 32768]\nbaseline = 32768");
  text.replace(text.find("values = [false, true]"), 22, "values = [false, true]\nbaseline = true");
  const Study s = parse_study(text, "b.toml", "/data");
  EXPECT_EQ(s.knobs[1].baseline, "32768");
  EXPECT_EQ(s.knobs[2].baseline, "true");
  // A float knob's baseline written as an integer names its value the same way the value is labelled.
  std::string f = testing::kSmallStudy;
  f.insert(f.find("[[scenarios]]"),
           "[[knobs]]\nname = \"frac\"\ntype = \"float\"\nvalues = [0.9, 1]\n"
           "baseline = 1\n\n");
  EXPECT_EQ(parse_study(f, "f.toml", "/data").knobs[3].baseline, "1");
  text.replace(text.find("baseline = 32768"), 16, "baseline = 4096");
  try {
    parse_study(text, "b.toml", "/data");
    FAIL() << "expected StudyError";
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("knobs[1] (ctx).baseline: names no value of this knob: '4096'"),
              std::string::npos)
        << e.what();
  }
}

// flag_refusals: each engine's baseline and each knob value on top of it, through the engine's own CLI rules.
// A refused base flag is reported once, for the baseline (every configuration of the engine carries it); a
// mistyped flag in one knob's rendering, once per value that renders it; an engine with check_flags = false
// is not checked.
TEST(Space, FlagRefusalsNameTheBaselineOrTheKnobValue) {
  std::string text = testing::kSmallStudy;
  EXPECT_TRUE(flag_refusals(parse_study(text, "f.toml", "/data")).empty());
  std::string typo = text;
  typo.replace(typo.find("\"--max-model-len\""), 17, "\"--max-model-lenn\"");
  auto r = flag_refusals(parse_study(typo, "f.toml", "/data"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].engine, "a");
  EXPECT_EQ(r[0].knob, "ctx");
  EXPECT_EQ(r[0].value, "32768");
  EXPECT_NE(r[0].message.find("--max-model-lenn"), std::string::npos) << r[0].message;
  std::string base = text;
  base.replace(base.find("\"--chat-template\""), 17, "\"--chat-templatee\"");
  r = flag_refusals(parse_study(base, "f.toml", "/data"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].engine, "b");
  EXPECT_TRUE(r[0].knob.empty());
  base.replace(base.find("base_flags"), 0, "check_flags = false\n");
  EXPECT_TRUE(flag_refusals(parse_study(base, "f.toml", "/data")).empty());
  // A knob's baseline value refused: that knob is named, not command and base_flags (review), and its
  // other values are not checked on top of a refused baseline.
  std::string knob = text;
  knob.replace(knob.find("values = [\"default\", 32768]"), 27, "values = [32768, 4096]");
  knob.replace(knob.find("\"--max-model-len\""), 17, "\"--max-model-lenn\"");
  r = flag_refusals(parse_study(knob, "f.toml", "/data"));
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].engine, "a");
  EXPECT_EQ(r[0].knob, "ctx");
  EXPECT_EQ(r[0].value, "32768");
  EXPECT_TRUE(r[0].baseline);
}

// Rendering conditions are evaluated when the file is read, as render and check_config would: on every value
// a part applies to. A value a reject part excludes is never rendered, so a condition on a field only the
// other values have is valid (review); an unknown field names the file, line, key and the fields there are.
TEST(Study, RenderingConditionsAreCheckedOnTheValuesTheyApplyTo) {
  const std::string knob = R"(
[[knobs]]
name = "spec"
type = "string"
values = ["off", {value = "ngram", n = 3}]
render.a = [{when = "value == off", reject = "x"}, {when = "n > 1", flags = ["--spec", "{n}"]}]
)";
  std::string text = testing::kSmallStudy;
  text.insert(text.find("[[scenarios]]"), knob + "\n");
  EXPECT_NO_THROW(parse_study(text, "w.toml", "/data"));
  std::string bad = text;
  bad.replace(bad.find("when = \"n > 1\""), 14, "when = \"nn > 1\"");
  try {
    parse_study(bad, "w.toml", "/data");
    FAIL() << "expected StudyError";
  } catch (const StudyError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("w.toml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("knobs[3] (spec).render.a[1].when: condition 'nn > 1' uses unknown field 'nn' (value "
                       "ngram; the fields a condition may use: n, value"),
              std::string::npos)
        << msg;
  }
}

// Engine names and scenario ids key the trials and stand in reports as code: identifiers only (new-user
// trial: an engine `vllm<i>` and a scenario `s<1>&` reached report.md as markup).
TEST(Study, EngineNamesAndScenarioIdsAreIdentifiers) {
  auto error = [](std::string text, const char* from, const char* to) {
    text.replace(text.find(from), std::string(from).size(), to);
    try {
      parse_study(text, "i.toml", "/data");
    } catch (const StudyError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string base = testing::kSmallStudy;
  base.replace(base.find("render.a"), 8, "render.\"v<i>\"");
  base.replace(base.find("render.a"), 8, "render.\"v<i>\"");
  EXPECT_NE(
      error(base, "name = \"a\"", "name = \"v<i>\"").find("engines[0].name: \"v<i>\" is not an engine name"),
      std::string::npos)
      << error(base, "name = \"a\"", "name = \"v<i>\"");
  EXPECT_NE(error(testing::kSmallStudy, "id = \"s2\"", "id = \"s<1>&\"")
                .find("scenarios[1].id: \"s<1>&\" is not a scenario id"),
            std::string::npos)
      << error(testing::kSmallStudy, "id = \"s2\"", "id = \"s<1>&\"");
  EXPECT_EQ(error(testing::kSmallStudy, "id = \"s2\"", "id = \"sharegpt-1000.v2_b\""), "no error");
}

TEST(Study, ErrorsNameTomlPathAndLine) {
  std::string bad = testing::kSmallStudy;
  bad.replace(bad.find("values = [\"default\", 32768]"), 27, "values = [\"default\", \"x\"]");
  try {
    parse_study(bad, "bad.toml", "/data");
    FAIL() << "expected StudyError";
  } catch (const StudyError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.toml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("knobs[1] (ctx).values[1]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("wrong type"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_study("[study]\nname = \"x\"\n[model]\nid = \"m\"\n", "t.toml", "/d"), StudyError);
  try {
    parse_study(std::string(testing::kSmallStudy) + "\n[search]\nstrategy = \"random\"\n", "s.toml", "/d");
    FAIL();
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("search.strategy"), std::string::npos) << e.what();
  }
  try {
    parse_study("[study\n", "syn.toml", "/d");
    FAIL();
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("syn.toml:1:"), std::string::npos) << e.what();
  }
}

// Issue 9 §3: out-of-range values are rejected at load with the file, line and key (they used to be
// accepted and fail only after launching an engine).
std::string load_error(const std::string& toml) {
  try {
    parse_study(toml, "range.toml", "/data");
  } catch (const StudyError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = testing::kSmallStudy;
  const auto at = s.find(from);
  if (at == std::string::npos) throw std::logic_error("fixture lacks " + from);
  return s.replace(at, from.size(), to);
}

/// 1-based line of the first occurrence of `needle` in `text`.
int line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  if (at == std::string::npos) throw std::logic_error("no " + needle);
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

/// The error for the study with `from` replaced by `to`, expected as "range.toml:<line of marker>: <rest>".
void expect_error(const std::string& from, const std::string& to, const std::string& marker,
                  const std::string& rest) {
  const std::string toml = with(from, to);
  EXPECT_EQ(load_error(toml), fmt::format("range.toml:{}: {}", line_of(toml, marker), rest)) << to;
}

TEST(Study, OutOfRangeValuesNameFileLineAndKey) {
  const std::string v = "version = \"1.0\"\n", t = "target = \"twin\"\n";
  expect_error(v, v + "stop_grace_s = 1e308\n", "stop_grace_s",
               "engines[0].stop_grace_s: 1e+308 is out of range (must be in 0..3600)");
  expect_error(v, v + "ready_timeout_s = -5\n", "ready_timeout_s",
               "engines[0].ready_timeout_s: -5 is out of range (must be > 0 and ≤ 86400)");
  expect_error(v, v + "ready_timeout_s = nan\n", "ready_timeout_s",
               "engines[0].ready_timeout_s: must be a finite number");
  expect_error(t, t + "port = 99999\n", "port =", "study.port: 99999 is out of range (must be in 1..65535)");
  expect_error(t, t + "port = 0\n", "port =", "study.port: 0 is out of range (must be in 1..65535)");
  expect_error(t, t + "repeats = 5000000000\n", "repeats",
               "study.repeats: 5000000000 is out of range (must be in 1..100)");
  expect_error("gpu_count = 8\n", "gpu_count = 8\ngpu_memory_gb = 0\n", "gpu_memory_gb",
               "hardware.gpu_memory_gb: 0 is out of range (must be > 0 and ≤ 10000)");
  expect_error("gpu_count = 8\n", "gpu_count = 8\n[search]\nmin_gain_pct = -1\n", "min_gain_pct",
               "search.min_gain_pct: -1 is out of range (must be in 0..100)");
  expect_error("[objective]\n", "[objective]\nkind = \"goodput\"\nslo_ms = { ttft = \"x\" }\n", "slo_ms",
               "objective.slo_ms.ttft: must be a number");
  // A latency as the maximised objective would pick the slowest launch (found by a new-user trial).
  {
    const std::string toml = with("[objective]\n", "[objective]\nmetric = \"tpot_mean_ms\"\n");
    const std::string want = fmt::format(
        "range.toml:{}: objective.metric: 'tpot_mean_ms' is a latency (ms, lower is better) and tune "
        "maximises its objective, so it would pick the slowest launch: bound it instead",
        line_of(toml, "metric"));
    EXPECT_EQ(load_error(toml).substr(0, want.size()), want);
  }
  expect_error("[objective]\n", "[objective]\nkind = \"goodput\"\nslo_ms = { ttft = -3 }\n", "slo_ms",
               "objective.slo_ms.ttft: -3 is out of range (must be > 0 and ≤ 1000000000)");
  expect_error(v, v + "ready_paths = [\"health\"]\n", "ready_paths",
               "engines[0].ready_paths[0]: must be an HTTP path starting with '/' (e.g. \"/health\")");
}

TEST(Study, GpuMemoryComesFromTheGpuTable) {
  const std::string hw = "gpu = \"H200\"\ngpu_count = 8\n";
  // H200: 143771 MiB (nvidia-smi) = 143771 * 2^20 B = 150.754820096 GB; the datasheet's "141 GB" is 140.4
  // GiB.
  EXPECT_DOUBLE_EQ(parse_study(testing::kSmallStudy, "s.toml", "/d").hardware.gpu_memory_gb, 150.754820096);
  EXPECT_DOUBLE_EQ(parse_study(with(hw, hw + "gpu_memory_gb = 141\n"), "s.toml", "/d").hardware.gpu_memory_gb,
                   150.754820096);
  EXPECT_DOUBLE_EQ(
      parse_study(with(hw, hw + "gpu_memory_gb = 150.8\n"), "s.toml", "/d").hardware.gpu_memory_gb,
      150.754820096);
  expect_error(
      hw, hw + "gpu_memory_gb = 80\n", "gpu_memory_gb",
      "hardware.gpu_memory_gb: 80 contradicts the GPU table: H200 has 143771 MiB = 150.8 GB = 140.4 GiB "
      "(src/hardware); remove the key (the table is the one source) or fix hardware.gpu");
  // A GPU the table lacks needs its memory; with it, the study's value is used.
  const std::string other = "gpu = \"RTX-9999\"\ngpu_count = 8\n";
  EXPECT_NE(load_error(with(hw, other)).find("hardware.gpu: "), std::string::npos);
  EXPECT_NE(load_error(with(hw, other)).find("give hardware.gpu_memory_gb"), std::string::npos);
  EXPECT_DOUBLE_EQ(
      parse_study(with(hw, other + "gpu_memory_gb = 96\n"), "s.toml", "/d").hardware.gpu_memory_gb, 96);
  // No silent H200: [hardware] and its gpu are required.
  EXPECT_NE(load_error(with("[hardware]\n" + hw, "")).find("missing table [hardware]"), std::string::npos);
  EXPECT_NE(load_error(with(hw, "gpu_count = 8\n")).find("missing key 'gpu'"), std::string::npos);
}

TEST(Study, UndefinedPlaceholderIsRejectedAtLoad) {
  expect_error(
      "render.a = [{flags = [\"-tp\", \"{tp}\"]}", "render.a = [{flags = [\"-tp\", \"{tpp}\"]}", "{tpp}",
      "knobs[0] (layout).render.a[0].flags[1]: undefined placeholder {tpp} (defined here: {dcp}, {dp}, "
      "{dp_attention}, {ep}, {host}, {model}, {port}, {pp}, {tp})");
  expect_error("\"--port\", \"{port}\"]", "\"--port\", \"{prot}\"]", "{prot}",
               "engines[0].command[4]: undefined placeholder {prot} (defined here: {host}, {model}, {port})");
  // JSON braces are not placeholders; {value} of a knob is.
  EXPECT_EQ(load_error(with("render.a = [{flags = [\"--max-model-len\", \"{value}\"]}]",
                            "render.a = [{flags = [\"--x\", '{\"n\":{value}}']}]")),
            "(accepted)");
  // Issue 30 (review): a knob listing only "default" still renders {value} for the values it may gain; it
  // was refused as an undefined placeholder.
  EXPECT_EQ(load_error(with("values = [\"default\", 32768]", "values = [\"default\"]")), "(accepted)");
}

// Issue 31: a dotted key or table header of 50,000 parts made toml++ recurse until SIGSEGV; it is refused
// before parsing, naming the file and line.
TEST(Study, DeepTomlIsRefusedBeforeParsing) {
  std::string parts = "a";
  for (int i = 0; i < 50000; ++i) parts += ".a";
  const std::string header = std::string(testing::kSmallStudy) + "\n[" + parts + "]\nx = 1\n";
  EXPECT_EQ(load_error(header),
            fmt::format("range.toml:{}: a dotted key or table header of more than 128 parts: "
                        "refused (a study nests its tables 2 or 3 deep)",
                        line_of(header, "[a.a.a")));
  const std::string key = std::string(testing::kSmallStudy) + "\n[extra]\n" + parts + " = 1\n";
  EXPECT_EQ(load_error(key).rfind(fmt::format("range.toml:{}: a dotted key", line_of(key, "a.a.a")), 0), 0u);
  const std::string arrays = std::string(testing::kSmallStudy) + "\nx = " + std::string(50000, '[') + "\n";
  EXPECT_EQ(load_error(arrays),
            fmt::format("range.toml:{}: arrays or inline tables nested more than 128 deep: "
                        "refused",
                        line_of(arrays, "x = [[")));
  // Dots in strings, comments and numbers are not key parts; 127 parts still reach toml++.
  std::string ok = std::string(testing::kSmallStudy);
  ok.replace(ok.find("goal = \"test study\""), 19,
             "goal = \"" + std::string(300, '.') + "\" # " + std::string(300, '.') + "\nrepeats = 1");
  EXPECT_EQ(load_error(ok), "(accepted)");
  std::string p127 = "a";
  for (int i = 0; i < 126; ++i) p127 += ".a";
  const std::string deep_ok = std::string(testing::kSmallStudy) + "\n[" + p127 + "]\n";
  EXPECT_EQ(load_error(deep_ok),
            "range.toml:" + std::to_string(line_of(deep_ok, "[a.a")) +
                ": unknown key a (allowed: bench, constraints, cost, engines, hardware, k8s, knobs, "
                "load, model, objective, objectives, recommendation, scenarios, search, slo, slurm, study)");
}

// A key named like a credential (bogus_key, api_key): the CLI redacts secrets from study errors
// (common::redact_text), and "study.bogus_key: unknown key" read as a credential and its value, printing
// "study.bogus_key: <redacted> key". The key's path is never followed by a colon.
TEST(StudyLoad, AnUnknownKeyNamedLikeACredentialSurvivesTheRedaction) {
  const std::string toml = with("[study]", "[study]\nbogus_key = 3");
  const std::string e = load_error(toml);
  EXPECT_NE(e.find("unknown key study.bogus_key (allowed: "), std::string::npos) << e;
  EXPECT_EQ(common::redact_text(e), e);
}

// Issue 31: a study named ".." wrote its results into the working directory (out/..); a name holding ESC
// or NUL was printed raw.
TEST(Study, LongNumbersAreNotEchoedWhole) {
  const std::string toml =
      with("target = \"twin\"\n", "target = \"twin\"\nrepeats = " + std::string(100, '9') + "\n");
  EXPECT_EQ(load_error(toml), fmt::format("range.toml:{}:111: TOML syntax error: Error while parsing decimal "
                                          "integer: '999999... (100 digits)' is not representable in 64 bits",
                                          line_of(toml, "repeats")));
}

TEST(Study, NameMustBeOneSafePathComponent) {
  const std::string rule =
      " is not a study name: 1 to 128 letters, digits, '.', '_' or '-', starting with a letter or digit (it "
      "names the output directory out/<name>)";
  const std::string line = std::to_string(line_of(testing::kSmallStudy, "name = \"small\""));
  expect_error("name = \"small\"", "name = \"..\"", "name = ", "study.name: \"..\"" + rule);
  expect_error("name = \"small\"", "name = \".hidden\"", "name = ", "study.name: \".hidden\"" + rule);
  expect_error("name = \"small\"", "name = \"a/../../etc\"", "name = ", "study.name: \"a/../../etc\"" + rule);
  expect_error("name = \"small\"", "name = \"x\\u001b[2J\\u0000y\"",
               "name = ", "study.name: \"x\\x1b[2J\\0y\"" + rule);
  EXPECT_EQ(load_error(with("name = \"small\"", "name = \"" + std::string(5000, 'n') + "\"")),
            "range.toml:" + line + ": study.name: \"" + std::string(60, 'n') + "...\"" + rule);
  EXPECT_EQ(load_error(with("name = \"small\"", "name = \"v1.2_run-3\"")), "(accepted)");
}

/// The small study with `knobs` knobs of `values` int values each, all rendered for engine a.
std::string wide_study(int knobs, int values) {
  std::string t = testing::kSmallStudy;
  std::string extra;
  for (int k = 0; k < knobs; ++k) {
    extra += fmt::format("[[knobs]]\nname = \"k{}\"\ntype = \"int\"\nvalues = [", k);
    for (int v = 0; v < values; ++v) extra += fmt::format("{}{}", v ? ", " : "", v + 1);
    extra += fmt::format("]\nrender.a = [{{flags = [\"--k{}\", \"{{value}}\"]}}]\n\n", k);
  }
  return t.replace(t.find("[[scenarios]]"), 0, extra);
}

// Issue 31: a 9 x 10 knob grid built 10^7 configurations before the "over a million" guard (OOM): the
// product is counted first (saturating, never overflowing) and nothing is built over the limit.
TEST(Space, GridLimitIsCheckedBeforeAnythingIsBuilt) {
  const Study s = parse_study(wide_study(9, 10), "wide.toml", "/d");
  // Engine a: layout 3 x ctx 2 x 10^9; engine b: layout 3 x ctx 2 x flag 2.
  EXPECT_EQ(grid_points(s), 6000000000u + 12u);
  try {
    enumerate_grid(s);
    FAIL() << "built a grid of 6 x 10^9 points";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "the grid has 6000000012 points, over a million: narrow the knob space");
  }
  Study grid = s;
  grid.search.strategy = Strategy::kGrid;
  EXPECT_THROW(planned_trials(grid), std::runtime_error);
  const Study huge = parse_study(wide_study(25, 10), "huge.toml", "/d");  // 10^25 > 2^64
  EXPECT_EQ(grid_points(huge), std::numeric_limits<std::size_t>::max());
  EXPECT_THROW(grid_points_within_limit(huge), std::runtime_error);
  EXPECT_EQ(grid_points(small()), 3u * 2u + 3u * 2u * 2u);
}

// Issue 31: a knob of 30,000 values made planning quadratic (pairwise duplicate check, a scan of every
// value per config): values are indexed; the index answers exactly as the scan did.
TEST(Space, ManyValuesOfOneKnobAreIndexed) {
  const Study s = parse_study(wide_study(1, 30000), "many.toml", "/d");
  const Knob& k = s.knob("k0");
  ASSERT_EQ(k.values.size(), 30000u);
  ASSERT_EQ(k.value_index.size(), 30000u);
  EXPECT_EQ(k.value_index.at("29999"), 29998u);
  EXPECT_EQ(config_key(s, normalize(s, CandidateConfig{"a", {{"k0", "29999"}}})), "a{k0=29999}");
  EXPECT_EQ(render(s, CandidateConfig{"a", {{"k0", "29999"}}}).argv.back(), "29999");
  EXPECT_THROW(normalize(s, CandidateConfig{"a", {{"k0", "30001"}}}), std::out_of_range);
  // A hand-built knob without an index still answers (by a scan).
  Study copy = s;
  copy.knobs.back().value_index.clear();
  EXPECT_EQ(render(copy, CandidateConfig{"a", {{"k0", "17"}}}).argv.back(), "17");
  // The duplicate check, now through the index, still names the value.
  std::string dup = wide_study(1, 3);
  dup.replace(dup.find("values = [1, 2, 3]"), 18, "values = [1, 2, 3, 2]");
  try {
    parse_study(dup, "dup.toml", "/d");
    FAIL();
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate value label '2'"), std::string::npos) << e.what();
  }
}

TEST(Space, RendersCommandAndEnv) {
  Study s = small();
  Rendered r = render(s, CandidateConfig{"b", {{"layout", "tp4-dp2"}, {"ctx", "32768"}, {"flag", "true"}}});
  EXPECT_EQ(r.argv, (std::vector<std::string>{"python3", "-m", "sglang.launch_server", "--model-path",
                                              "org/model", "--chat-template", "x.jinja", "--tp-size", "4",
                                              "--dp-size", "2", "--context-length=32768"}));
  EXPECT_EQ(r.env.at("B_FLAG"), "1");
  EXPECT_EQ(
      r.shell(),
      "B_FLAG=1 python3 -m sglang.launch_server --model-path org/model --chat-template x.jinja --tp-size 4 "
      "--dp-size 2 --context-length=32768");
  Rendered a = render(s, CandidateConfig{"a", {}});
  EXPECT_EQ(a.shell(), "vllm serve org/model --port 8000 -tp 8");
}

TEST(Space, PrunesInvalidCombinations) {
  Study s = small();
  auto why = check_config(s, CandidateConfig{"a", {{"layout", "tp3"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "layout tp3 uses 3 GPUs, which does not divide the node's 8");
  why = check_config(s, CandidateConfig{"a", {{"flag", "true"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "a has no setting for knob flag (value true)");
  EXPECT_FALSE(check_config(s, CandidateConfig{"b", {{"flag", "true"}, {"layout", "tp4-dp2"}}}));
  // Study-level rejection rules.
  std::string t = testing::kSmallStudy;
  t.replace(t.find("render.b = [{flags = [\"--tp-size\""), std::string("render.b = [").size(),
            "render.b = [{when = \"dp > 1\", reject = \"no dp here\"}, ");
  Study s2 = parse_study(t, "r.toml", "/d");
  why = check_config(s2, CandidateConfig{"b", {{"layout", "tp4-dp2"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "b rejects layout=tp4-dp2: no dp here");
  // Layout arithmetic.
  std::string l = testing::kSmallStudy;
  l.replace(l.find("{tp = 3}"), 8,
            "{tp = 8, dp = 2}, {tp = 8, dp = 2, dp_attention = true}, {tp = 4, ep = 3}");
  Study s3 = parse_study(l, "l.toml", "/d");
  EXPECT_EQ(*check_config(s3, CandidateConfig{"a", {{"layout", "tp8-dp2"}}}),
            "layout tp8-dp2 needs 16 GPUs, the node has 8");
  EXPECT_FALSE(check_config(s3, CandidateConfig{"b", {{"layout", "tp8-dp2-dpattn"}}}));
  EXPECT_EQ(*check_config(s3, CandidateConfig{"a", {{"layout", "tp4-ep3"}}}),
            "layout tp4-ep3: ep=3 does not divide the 4 GPUs used");
  // Issue 31: the GPU count of the largest layout the parser accepts (4096 each way) overflowed an int.
  std::string big = testing::kSmallStudy;
  big.replace(big.find("{tp = 3}"), 8, "{tp = 4096, dp = 4096, pp = 4096}");
  const Study s4 = parse_study(big, "big.toml", "/d");
  EXPECT_EQ(*check_config(s4, CandidateConfig{"a", {{"layout", "tp4096-dp4096-pp4096"}}}),
            "layout tp4096-dp4096-pp4096 needs 68719476736 GPUs, the node has 8");
}

TEST(Space, ConditionsAndKeys) {
  EXPECT_TRUE(eval_condition("dp > 1", {{"dp", "2"}}));
  EXPECT_FALSE(eval_condition("dp > 1", {{"dp", "1"}}));
  EXPECT_TRUE(eval_condition("!flag", {{"flag", "false"}}));
  EXPECT_TRUE(eval_condition("engine == 'x'", {{"engine", "x"}}));
  EXPECT_THROW(eval_condition("nope", {{"dp", "1"}}), StudyError);
  Study s = small();
  CandidateConfig c{"b", {{"ctx", "32768"}, {"layout", "tp8"}}};
  EXPECT_EQ(config_key(s, c), "b{ctx=32768}");
  EXPECT_EQ(config_label(s, normalize(s, c)), "ctx=32768");
  EXPECT_EQ(knobs_for_engine(s, "a"), (std::vector<std::string>{"layout", "ctx"}));
  EXPECT_EQ(enumerate_grid(s).size(), 3u * 2u + 3u * 2u * 2u);
}

}  // namespace
}  // namespace servelab::tune

namespace servelab::tune {
namespace {

TEST(Study, ScalePromptsForARehearsal) {
  Study s = scale_prompts(parse_study(testing::kSmallStudy, "small.toml", "/data"), 0.05);
  EXPECT_EQ(s.prompts_scale, 0.05);
  EXPECT_EQ(s.scenarios[0].args,
            (std::vector<std::string>{"--dataset-name", "random", "--num-prompts", "1"}));
  EXPECT_EQ(s.scenarios[1].args,
            (std::vector<std::string>{"--dataset-name", "random", "--num-prompts", "1"}));
  Study ref =
      scale_prompts(load_study(common::source_dir() / "studies/deepseek-v3.2-h200x8.toml", "/data"), 0.05);
  EXPECT_EQ(ref.scenarios[0].args.back(), "50");  // sharegpt-1000: 1000 x 0.05
  EXPECT_EQ(ref.scenarios[4].args[7], "5");       // random-32000in-100out: 100 x 0.05
  EXPECT_THROW(scale_prompts(ref, 0), std::invalid_argument);
  EXPECT_THROW(scale_prompts(ref, 1.5), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::tune
