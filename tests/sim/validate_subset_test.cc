// Leave-one-study-out on two studies of the released corpus (38 points): small enough for the sanitizer
// run, so the fit, the folds, the bands and the report run under ASan too (the whole corpus is
// validate_test.cc, label `corpus`). Values are this subset's own, held out: each study predicted by a
// fit on the other alone.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>

#include "servelab/common/paths.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/validate.h"
#include "test_corpus.h"

namespace sim = servelab::sim;

namespace {

TEST(CorpusValidationSubset, TwoStudiesEachHeldOut) {
  const auto corpus = sim::testing::corpus_subset({"qwen3-32b__h100", "qwen3-8b__h100-latency"});
  ASSERT_EQ(corpus.points.size(), 38u);
  const auto v = sim::validate_corpus(corpus, 2);
  const auto& h = v.held_out;
  EXPECT_EQ(h.points, 38);
  EXPECT_EQ(h.refused, 0);
  EXPECT_EQ(h.predicted, 38);
  ASSERT_EQ(v.studies.size(), 2u);
  // Each study is predicted by a fit that never saw it: worse than in-sample, still a prediction.
  EXPECT_GT(h.mape_total_tok_s, 0.0);
  EXPECT_LT(h.mape_total_tok_s, 60.0);
  EXPECT_LE(v.in_sample.mape_total_tok_s, h.mape_total_tok_s + 1e-9);
  EXPECT_TRUE(v.full_fit.on_bound.empty());
  // Every row is scored against a class and has its held-out error when it has a measured throughput.
  for (const auto& r : v.rows) {
    EXPECT_FALSE(r.calibration_class.empty()) << r.point->id;
    if (r.point->measured.total_tok_s && r.predicted) {
      EXPECT_TRUE(r.err_total_tok_s) << r.point->id;
    }
  }
  const std::string report = sim::format_corpus_validation(v, true);
  EXPECT_NE(report.find("qwen3-32b__h100"), std::string::npos);
  EXPECT_NE(report.find("NOT a held-out figure"), std::string::npos);
}

// `sim validate` without --in-sample: the fit's second round and the in-sample predictions are skipped, and
// every held-out figure is the one the full validation gives (folds fit on the priors' traces and the first
// round's classes, which both have); the report says the in-sample figures were not computed.
TEST(CorpusValidationSubset, WithoutInSampleTheHeldOutFiguresAreTheSame) {
  const auto corpus = sim::testing::corpus_subset({"qwen3-32b__h100", "qwen3-8b__h100-latency"});
  const auto full = sim::validate_corpus(corpus, 2);
  const auto quick = sim::validate_corpus(corpus, 2, {}, {}, false);
  ASSERT_TRUE(full.in_sample_computed);
  ASSERT_FALSE(quick.in_sample_computed);
  EXPECT_EQ(quick.in_sample.predicted, 0);
  EXPECT_GT(full.in_sample.predicted, 30);
  EXPECT_TRUE(quick.full_fit.traces.empty());
  EXPECT_FALSE(full.full_fit.traces.empty());
  ASSERT_EQ(quick.rows.size(), full.rows.size());
  for (std::size_t i = 0; i < full.rows.size(); ++i) {
    const auto &a = full.rows[i], &b = quick.rows[i];
    ASSERT_EQ(a.predicted.has_value(), b.predicted.has_value()) << a.point->id;
    EXPECT_FALSE(b.in_sample) << b.point->id;
    EXPECT_EQ(a.predicted_failure.has_value(), b.predicted_failure.has_value()) << a.point->id;
    if (!a.predicted) continue;
    EXPECT_EQ(a.predicted->total_tok_s, b.predicted->total_tok_s) << a.point->id;
    EXPECT_EQ(a.predicted->mean_ttft_ms, b.predicted->mean_ttft_ms) << a.point->id;
    EXPECT_EQ(a.predicted->mean_tpot_ms, b.predicted->mean_tpot_ms) << a.point->id;
  }
  EXPECT_EQ(quick.held_out.mape_total_tok_s, full.held_out.mape_total_tok_s);
  EXPECT_EQ(quick.held_out.mape_ttft, full.held_out.mape_ttft);
  EXPECT_EQ(quick.held_out.mape_tpot, full.held_out.mape_tpot);
  EXPECT_EQ(quick.held_out.groups_same_winner, full.held_out.groups_same_winner);
  const std::string report = sim::format_corpus_validation(quick, false);
  EXPECT_NE(report.find("In-sample figures not computed"), std::string::npos);
  EXPECT_EQ(report.find("NOT a held-out figure"), std::string::npos);
  EXPECT_THROW(sim::calibration_json_of(quick, ""), std::logic_error);
}

// A study with a point on a kernel path the twin has no figure for gets its held-out figures without that
// point too (on the row below it in the report): gpt-oss-20b on A100 has one (TensorRT-LLM's MXFP4 MoE).
TEST(CorpusValidationSubset, AStudyIsAlsoSummarizedWithoutItsUnmodelledPoints) {
  const auto corpus = sim::testing::corpus_subset({"gpt-oss-20b__a100", "qwen3-14b__a100"});
  const auto v = sim::validate_corpus(corpus, 2, {}, {}, false);
  ASSERT_EQ(v.studies.size(), 2u);
  for (const auto& st : v.studies) {
    int unmodelled = 0, unmodelled_scored = 0;
    for (const auto& r : v.rows) {
      if (r.point->study != st.study || r.unmodelled.empty()) continue;
      ++unmodelled;
      unmodelled_scored += r.err_total_tok_s.has_value();
    }
    EXPECT_EQ(st.unmodelled_points, unmodelled) << st.study;
    if (unmodelled == 0) continue;
    EXPECT_EQ(st.held_out_modelled.compared_tok_s, st.held_out.compared_tok_s - unmodelled_scored)
        << st.study;
    const std::string report = sim::format_corpus_validation(v, false);
    EXPECT_NE(report.find(fmt::format("without its {} point", unmodelled)), std::string::npos) << report;
  }
  EXPECT_GT(v.studies[0].unmodelled_points + v.studies[1].unmodelled_points, 0);
}

// --per-point never shows an error it did not score: glm-4.5-air__h100#008 is suspect (its block repeats
// another study's), so its figures print "(not scored)" with the reason, not "+0%", and it is listed among
// the figures not scored; a partial run (qwen3-235b-a22b__h100's) is scored, under "Scored with a caveat",
// not among the figures not scored.
TEST(CorpusValidationSubset, PerPointSaysWhatWasNotScored) {
  const auto corpus = sim::testing::corpus_subset({"glm-4.5-air__h100", "qwen3-235b-a22b__h100"});
  const auto v = sim::validate_corpus(corpus, 2, {}, {}, false);
  const std::string report = sim::format_corpus_validation(v, true);
  const std::string suspect = "glm-4.5-air__h100#008";
  const auto row = report.find("\n  " + suspect + " ", report.find("Every point"));
  ASSERT_NE(row, std::string::npos) << report;
  const std::string line = report.substr(row + 1, report.find('\n', row + 1) - row - 1);
  EXPECT_NE(line.find("(not scored)"), std::string::npos) << line;
  EXPECT_EQ(line.find("+0%"), std::string::npos) << line;
  EXPECT_NE(report.find("suspect: the study's block repeats another study's", row), std::string::npos);
  const auto not_scored = report.find("Measured figures not scored");
  const auto caveat = report.find("Scored with a caveat:");
  ASSERT_NE(not_scored, std::string::npos);
  ASSERT_NE(caveat, std::string::npos);
  const std::string section = report.substr(not_scored, caveat - not_scored);
  const auto listed = section.find("  " + suspect + " ");
  ASSERT_NE(listed, std::string::npos) << section;
  EXPECT_NE(section.substr(listed, section.find('\n', listed) - listed)
                .find("every figure: the study's block repeats another study's (suspect)"),
            std::string::npos)
      << section;
  int partial_scored = 0;
  for (const auto& r : v.rows)
    if (r.point->status == sim::CorpusPoint::Status::kPartial && r.err_total_tok_s) {
      ++partial_scored;
      EXPECT_EQ(section.find(r.point->id + " "), std::string::npos) << r.point->id;
      EXPECT_NE(report.substr(caveat, report.find("\nPoints outside the band", caveat) - caveat)
                    .find(r.point->id + " "),
                std::string::npos)
          << r.point->id;
    }
  EXPECT_GT(partial_scored, 0);
}

// A median TTFT of 0 ms is no TTFT: qwen3.5-9b__h100#003 (guidellm, a partial MTP run) reports mean 268.95 ms
// and median 0 ms; its TTFT is left out of the scoring and the fit, with the reason, its tok/s is kept.
TEST(CorpusLoad, ZeroMedianTtftIsNotComparable) {
  const auto all = sim::load_corpus(servelab::common::data_dir().parent_path() / "reference");
  int seen = 0;
  for (const auto& p : all.points) {
    if (p.id != "qwen3.5-9b__h100#003") {
      continue;
    }
    ++seen;
    EXPECT_FALSE(p.measured.mean_ttft_ms) << *p.measured.mean_ttft_ms;
    EXPECT_TRUE(p.measured.total_tok_s);
    bool noted = false;
    for (const auto& n : p.not_comparable) noted |= n.find("median TTFT of 0 ms") != std::string::npos;
    EXPECT_TRUE(noted);
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace

// A group's objective comes from its runs, never a study's name: a client capped at 16 streams or fewer
// measures latency (lowest TPOT); so does a finite request rate that every configuration served (>= 90% of
// it completed per second: the throughput only restates the arrivals); a burst (rate inf) or a rate some
// configuration could not keep up with measures throughput.
TEST(CorpusValidationObjective, LatencyOrThroughputFromTheRuns) {
  auto point = [](std::optional<int> cap, double rate, int done, double seconds) {
    sim::CorpusPoint p;
    p.id = "a-study-named-latency#1";
    p.workload.max_concurrency = cap;
    p.workload.request_rate = rate;
    p.measured.successful = done;
    p.measured.duration_s = seconds;
    return p;
  };
  const double inf = std::numeric_limits<double>::infinity();
  auto a = point(4, inf, 100, 50), b = point(4, inf, 100, 80);
  EXPECT_TRUE(sim::latency_objective({&a, &b}));
  a = point(std::nullopt, inf, 1000, 50), b = point(std::nullopt, inf, 1000, 60);
  EXPECT_FALSE(sim::latency_objective({&a, &b}));  // the name says latency, the runs say throughput
  a = point(std::nullopt, 1.0, 200, 205), b = point(std::nullopt, 1.0, 200, 215);  // 0.98 and 0.93 req/s
  EXPECT_TRUE(sim::latency_objective({&a, &b}));
  b = point(std::nullopt, 1.0, 200, 250);  // 0.8 req/s: this one fell behind
  EXPECT_FALSE(sim::latency_objective({&a, &b}));
  a = point(32, inf, 100, 10), b = point(32, inf, 100, 11);
  EXPECT_FALSE(sim::latency_objective({&a, &b}));
}
