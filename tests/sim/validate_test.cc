// `sim validate --corpus` on the released corpus (shared/reference): leave-one-study-out, run once (about a
// minute in a Release build, so one TEST). The thresholds are the levels the twin reaches today, a guard
// against regressions; issue 8's targets (tok/s MAPE <= 15%, TTFT/TPOT <= 30%, winner >= 80%) are NOT met
// and the failure messages say so. The counts are exact: a change to them must be a deliberate one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "servelab/common/paths.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/validate.h"

namespace sim = servelab::sim;

namespace {

TEST(CorpusValidation, LeaveOneStudyOutOnTheReleasedCorpus) {
  const auto corpus = sim::load_corpus(servelab::common::data_dir().parent_path() / "reference");
  ASSERT_EQ(corpus.studies.size(), 13u);
  const auto v = sim::validate_corpus(corpus);
  const auto& h = v.held_out;

  // Coverage: every point on a GPU the twin models is predicted or predicted to fail; the only refusals
  // are the Ascend 910B study (CANN kernels, MindIE), each with its reason.
  EXPECT_EQ(h.points, 271);
  EXPECT_EQ(h.refused, 19);
  for (const auto& r : v.rows)
    if (r.refusal) {
      EXPECT_EQ(r.point->study, "qwen3-8b__910b") << r.point->id << ": " << *r.refusal;
      EXPECT_TRUE(r.refusal->find("Ascend") != std::string::npos ||
                  r.refusal->find("mindie") != std::string::npos)
          << *r.refusal;
    }
  EXPECT_EQ(h.predicted + h.predicted_failures + h.refused, h.points);

  // Measured failures with a modelled cause (OOM, unsupported kernel, refused flag) are reproduced.
  EXPECT_EQ(h.failures_measured, 17);
  EXPECT_GE(h.failures_reproduced, 12);

  // Accuracy, held out (just above the current levels: tok/s 34.0%, TTFT 30.9%, TPOT 22.7%, without the
  // unmodelled points tok/s 20.9%; targets in the comment above). Since issue 29 §3 nothing is tuned on
  // these figures: the constants once chosen by sweeping them (the API stream stage, SGLang's eager launch,
  // the harmony share) are refitted in every fold, corpus-derived kernel efficiencies are gone, and folds
  // refit on traces simulated at the priors; the figures rose from 30.6 / 28.3 / 22.3% (tok/s / TTFT /
  // TPOT) with it: the old ones had partly seen their own studies.
  EXPECT_EQ(h.compared_tok_s, 211);
  EXPECT_LE(h.mape_total_tok_s, 35.0) << "held-out total tok/s MAPE regressed (target 15%)";
  EXPECT_LE(h.mape_ttft, 32.0) << "held-out mean TTFT MAPE regressed (target 30%)";
  // TPOT rose from 22.7 to 23.7% when eager_launch_us stopped absorbing the Qwen3-32B H100 TensorRT-LLM runs
  // the twin does not explain (fit.cc prior_weight; those runs' errors now show, and the union of the
  // released corpora improved: TTFT 26.7 -> 23.3%, TPOT 14.1 -> 13.7%).
  EXPECT_LE(h.mape_tpot, 24.5) << "held-out mean TPOT MAPE regressed (target 30%)";
  EXPECT_EQ(h.groups, 50);
  // 36 of 50 (38 before issue 29 §3's refits; the bound leaves one flip of slack); one of them is near a tie:
  // the twin predicts qwen3.5-9b__h100#018 and #019 (random 1024/128,
  // --performance-mode throughput) within 0.1% of each other, so that group's pick can flip with any change.
  // SGLang's batch_is_full (scheduler.cc) lets qwen3-32b__h100#003 (SGLang FP8, already +31% tok/s) overtake
  // TensorRT-LLM #004 in its ShareGPT group (the twin's SGLang on that study is too fast, not the rule);
  // vLLM's Triton experts below 128 rows win qwen3-235b-a22b's random-4000in-200out group (#010 over #014).
  EXPECT_GE(h.groups_same_winner, 35) << "winner right in fewer groups (target 80%)";
  // Groups of 3+ configurations (what twin-guided search acts on): the measured best in the twin's top 3 in
  // 9 of 12, mean regret 13.2% (8 and 17.2% before issue 29 §3's refits; deepseek-v3.2's ShareGPT group:
  // the unmodelled TRT-LLM DSA pick; gpt-oss-20b's: SGLang on Ampere, unmodelled). Targets 90% and 5%.
  EXPECT_EQ(h.spearman_groups, 12);
  EXPECT_GE(h.groups_best_in_top3, 8);
  EXPECT_LE(h.mean_regret, 18.0);
  const auto& hm = v.held_out_modelled;
  EXPECT_EQ(h.points - hm.points,
            5);  // the unmodelled kernel paths (2 MXFP4 MoE, 3 TRT-LLM DSA), still in `held_out`
  // 22.1% since the MoE slice term (physics.cc moe_slice_s0; the union of the released corpora went
  // 15.1 -> 14.7% tok/s, 23.3 -> 22.1% TTFT, 13.7 -> 13.3% TPOT with it).
  EXPECT_LE(hm.mape_total_tok_s, 22.5);
  EXPECT_LT(hm.mape_total_tok_s, h.mape_total_tok_s);

  // In-sample is computed apart and is better than held out (it saw the points).
  EXPECT_LT(v.in_sample.mape_total_tok_s, h.mape_total_tok_s);

  // The in-sample fit ends inside its bounds (else calibration.json could not be written).
  EXPECT_TRUE(v.full_fit.on_bound.empty()) << v.full_fit.on_bound.front();

  // Bands: every class with held-out points has one, and the overall band reflects the errors.
  ASSERT_TRUE(v.bands.classes.count("all"));
  EXPECT_GT(v.bands.classes.at("all").total_tok_s_pct, 20.0);
  // Each study weighs the same in a band: the "all" tok/s band is the RMS over the studies of each study's
  // RMS held-out error (of the points on modelled kernel paths), not the RMS over the points.
  {
    std::map<std::string, std::pair<double, int>> per_study;
    for (const auto& r : v.rows)
      if (r.err_total_tok_s && r.unmodelled.empty())
        per_study[r.point->study].first += *r.err_total_tok_s * *r.err_total_tok_s,
            ++per_study[r.point->study].second;
    double sum = 0;
    for (const auto& [study, e] : per_study) sum += e.first / e.second;
    const auto& all = v.bands.classes.at("all");
    EXPECT_EQ(all.studies, static_cast<int>(per_study.size()));
    EXPECT_GE(all.studies, 10);
    EXPECT_NEAR(all.total_tok_s_pct, std::sqrt(sum / per_study.size()), 1e-9);
  }
  EXPECT_EQ(v.bands.max_gpus, 8);  // no corpus launch spans two nodes: larger ones warn

  // The report names the unexplained points with their reasons and labels the in-sample figures.
  const std::string report = sim::format_corpus_validation(v, false);
  EXPECT_NE(report.find("NOT a held-out figure"), std::string::npos);
  EXPECT_NE(report.find("Points left out of the fit"), std::string::npos);
  EXPECT_NE(report.find("gpt-oss-120b__h100#002"), std::string::npos);
  // Per engine: one row each, whose predictions add up to the whole corpus's.
  const auto per_engine = report.find("\nPer engine (held out");
  ASSERT_NE(per_engine, std::string::npos);
  int predicted = 0;
  for (const char* engine : {"vllm", "sglang", "trtllm"}) {
    const auto at = report.find(std::string("\n") + engine + " ", per_engine);
    ASSERT_NE(at, std::string::npos) << engine;
    std::istringstream row(report.substr(at + 1, report.find('\n', at + 1) - at - 1));
    std::string name;
    int points = 0, engine_predicted = 0;
    row >> name >> points >> engine_predicted;
    EXPECT_GT(engine_predicted, 0) << engine;
    predicted += engine_predicted;
  }
  EXPECT_EQ(predicted, h.predicted);
}

}  // namespace
