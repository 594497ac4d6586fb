// `sim validate --corpus ../shared/reference --corpus ../shared/reference/inferencemax --split study`: the
// union of every released corpus, leave one study out, against issue 29 §5's targets (about 100 s on two
// cores in Release, so one TEST, labelled `corpus`). Where a target is met the test asserts the target;
// where it is not (the TTFT sweep shape, the reference study) it asserts today's level and says so. The
// embedded calibration.json must be this corpus's in-sample fit (what `sim calibrate` writes by default).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>

#include "servelab/common/paths.h"
#include "servelab/ops/op_store.h"
#include "servelab/sim/calibration.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/validate.h"

namespace sim = servelab::sim;

namespace {

const sim::StudyValidation* study_named(const sim::CorpusValidation& v, const std::string& name) {
  for (const auto& s : v.studies)
    if (s.study == name) return &s;
  return nullptr;
}

// From the report's per-engine table: column `which` of its MAPEs (0 tok/s, 1 TTFT, 2 TPOT) for `engine`,
// or 1e9 when the row is missing.
double engine_mape(const std::string& report, const std::string& engine, int which) {
  const auto table = report.find("\nPer engine (held out");
  if (table == std::string::npos) return 1e9;
  const auto at = report.find("\n" + engine + " ", table);
  if (at == std::string::npos) return 1e9;
  std::istringstream row(report.substr(at + 1, report.find('\n', at + 1) - at - 1));
  std::string name, pct[3];
  int points = 0, predicted = 0, failures = 0, refused = 0;
  row >> name >> points >> predicted >> failures >> refused >> pct[0] >> pct[1] >> pct[2];
  return pct[which].empty() || pct[which].back() != '%' ? 1e9 : std::stod(pct[which]);
}

// Every field of `got` within 2% of `want` (calibration.json keeps 4 significant digits).
void expect_same_fit(const std::string& where,
                     const std::map<std::string, sim::CalibrationTable::Entry>& want,
                     const std::map<std::string, sim::CalibrationTable::Entry>& got) {
  ASSERT_EQ(want.size(), got.size()) << where;
  for (const auto& [key, entry] : want) {
    ASSERT_TRUE(got.count(key)) << where << " " << key;
    const auto a = sim::calibration_vector(entry.cal), b = sim::calibration_vector(got.at(key).cal);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(b[i], a[i], 0.02 * std::fabs(a[i]) + 1e-9)
          << where << " " << key << " field " << sim::kCalibrationFieldNames[i]
          << ": the embedded calibration.json is not this corpus's fit (run `servelab sim calibrate --write "
             "src/sim/calibration.json` and rebuild)";
    EXPECT_EQ(entry.points, got.at(key).points) << where << " " << key;
  }
}

TEST(UnionValidation, EveryReleasedCorpusAgainstTheTargets) {
  const auto reference = servelab::common::data_dir().parent_path() / "reference";
  const auto corpus = sim::load_corpora({reference, reference / "inferencemax"});
  // The product's default path: operator times from the measured tables `make deps` imports.
  const auto store = servelab::ops::OpStore::default_dir();
  ASSERT_TRUE(std::filesystem::is_regular_file(store / "index.json")) << store << ": run `make deps`";
  sim::use_measured_operators(store);
  const auto v = sim::validate_corpus(corpus, 2);
  sim::use_measured_operators({});
  const auto& h = v.held_out;

  // Coverage: 1,893 points; the refusals are AMD GPUs, multi-node disaggregated serving, Ascend / MindIE and
  // measurements with nothing to score (each with its reason). The 92 points of the NVFP4 DeepSeek-R1
  // checkpoint whose config.json is nowhere here are predicted from its base's config with its publisher's
  // NVFP4 recipe of that architecture (model::resolve_model; they were refused before).
  EXPECT_EQ(h.points, 1893);
  EXPECT_EQ(h.predicted, 1153);
  EXPECT_EQ(h.predicted_failures, 14);
  EXPECT_EQ(h.predicted + h.predicted_failures + h.refused, h.points);

  // §5 targets met today (held out; today's figures in parentheses).
  EXPECT_LE(h.mape_total_tok_s, 15.0) << "target <= 15% (12.1%)";
  EXPECT_LE(h.mape_ttft, 25.0) << "target <= 25% (18.3%)";
  EXPECT_LE(h.mape_tpot, 15.0) << "target <= 15% (10.3%)";
  // The winner (issue 8's >= 80%, not among §5's targets): 102 of 128 (80%); most misses are InferenceMAX
  // H200 latency groups where vLLM 0.11.2 and 0.13.0 at TP8 measure within a few %. (109 of 135 while the
  // stalled runs' throughputs were scored: the 7 groups they alone made up, all right, left with them.)
  EXPECT_GE(h.groups_same_winner, 100) << "the winner regressed (102 of 128 today)";
  EXPECT_GE(h.groups_best_in_top3 * 100, 90 * h.spearman_groups) << "target >= 90% (68 of 71)";
  EXPECT_LE(h.mean_regret, 5.0) << "target <= 5% (2.2%)";
  EXPECT_LE(h.mape_shape_tpot, 8.0) << "target <= 8% (6.2%)";
  // TTFT sweep shape, target <= 15%: met, 11.2% over 230 points. It was 16.2% over 247 while 17 SGLang
  // 0.5.6 B200 1k/8k runs carrying ~70 s stalls were scored: their p99 TTFT (67-79 s) is under their
  // median end-to-end latency (~170 s), which the first stall rule required; sim::mark_ttft_stalls compares
  // it with the tail the same launch shows at its load or below instead (63 runs listed, not scored, on
  // TTFT nor, since their duration holds the stall, on tok/s).
  EXPECT_LE(h.mape_shape_ttft, 15.0) << "target <= 15% (11.2%)";

  // The reference study (target: 10% tok/s, its measured winner first): the winner is right, the tok/s
  // error is not met: 35.4%, from its TensorRT-LLM DSA runs on Hopper (no figure for that path; 13.3%
  // without them) and SGLang TP8. The winner sits on a thin margin: it was lost while a measured MoE time
  // was counted once (015e95a) and H200 took no sibling rows (SGLang DP8 + EP8 predicted 5% above DP8
  // NSA-FA3), and came back with the H100's rows of the EP layouts H200's tables lack.
  const auto* seed = study_named(v, "deepseek-v3.2__h200");
  ASSERT_NE(seed, nullptr);
  EXPECT_EQ(seed->held_out.groups_same_winner, seed->held_out.groups);
  EXPECT_LE(seed->held_out.mape_total_tok_s, 39.0) << "the reference study regressed (target 10%, 35.4%)";

  // Per engine: at or below the best published predictor's figure on public data (AISimulate on
  // InferenceX: vLLM TPOT ~11%, SGLang TPOT ~19%, TensorRT-LLM TTFT ~36%).
  const std::string report = sim::format_corpus_validation(v, false);
  EXPECT_LE(engine_mape(report, "vllm", 2), 11.0) << "vLLM TPOT (9.5% today)";
  EXPECT_LE(engine_mape(report, "sglang", 2), 19.0) << "SGLang TPOT (12.2% today)";
  EXPECT_LE(engine_mape(report, "trtllm", 1), 36.0) << "TensorRT-LLM TTFT (21.2% today)";

  // The embedded calibration.json is this corpus's in-sample fit, and the fit ends inside its bounds.
  ASSERT_TRUE(v.full_fit.on_bound.empty()) << v.full_fit.on_bound.front();
  const sim::CalibrationTable& embedded = sim::embedded_calibration();
  expect_same_fit("engines", embedded.engines, v.full_fit.table.engines);
  expect_same_fit("families", embedded.families, v.full_fit.table.families);
  expect_same_fit("classes", embedded.classes, v.full_fit.table.classes);
}

}  // namespace
