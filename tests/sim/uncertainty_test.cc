// The twin's error bands (uncertainty.h): the class a launch takes its band from, and the separate band of
// a launch on a kernel path the twin has no figure for.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "servelab/sim/uncertainty.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

using testing::corpus_model;
using testing::test_launch;

BandTable table() {
  BandTable t;
  t.classes["vllm/hopper/dense"] = {12.0, 20.0, 8.0, 10};
  t.classes["vllm/hopper"] = {15.0, 25.0, 10.0, 30};
  t.classes["vllm"] = {18.0, 30.0, 12.0, 50};
  t.classes["all"] = {25.0, 35.0, 20.0, 90};
  // Two runs on unmodelled paths that measured 4x and 8x off: RMS tok/s 500%, TTFT 60%, TPOT 90%.
  t.classes[kUnmodelledBandClass] = {500.0, 60.0, 90.0, 2};
  t.gpus = {"H100-SXM"};
  return t;
}

TEST(ErrorBand, AModelledLaunchTakesItsOwnClass) {
  const auto cluster = hardware::parse_cluster("1xH100");
  const auto launch = test_launch(corpus_model("qwen3-8b"), cluster, 1);
  const ErrorBand b = error_band(launch, cluster, table());
  EXPECT_EQ(b.class_name, "vllm/hopper/dense");
  EXPECT_DOUBLE_EQ(b.total_tok_s_pct, 12.0);
  EXPECT_DOUBLE_EQ(b.ttft_pct, 20.0);
  EXPECT_DOUBLE_EQ(b.tpot_pct, 8.0);
  EXPECT_EQ(b.points, 10);
  EXPECT_TRUE(b.warnings.empty());
}

// A launch on a path the twin has no figure for never takes a modelled class's band (they are computed
// without such runs), and its band is at least kUnmodelledBandMinPct on every metric.
TEST(ErrorBand, AnUnmodelledPathHasItsOwnBandOfAtLeastOneHundredPercent) {
  const auto cluster = hardware::parse_cluster("1xH100");
  auto launch = test_launch(corpus_model("qwen3-8b"), cluster, 1);
  launch.unmodelled.push_back("a kernel the twin has no figure for");
  const ErrorBand b = error_band(launch, cluster, table());
  EXPECT_EQ(b.class_name, kUnmodelledBandClass);
  EXPECT_DOUBLE_EQ(b.total_tok_s_pct, 500.0);
  EXPECT_DOUBLE_EQ(b.ttft_pct, kUnmodelledBandMinPct);  // 60% measured, raised to the floor
  EXPECT_DOUBLE_EQ(b.tpot_pct, kUnmodelledBandMinPct);
  EXPECT_EQ(b.points, 2);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("no figure"), std::string::npos) << b.warnings[0];
  // With no such runs in the table the band is the floor, from 0 points.
  BandTable t = table();
  t.classes.erase(kUnmodelledBandClass);
  const ErrorBand floor = error_band(launch, cluster, t);
  EXPECT_EQ(floor.class_name, kUnmodelledBandClass);
  EXPECT_DOUBLE_EQ(floor.total_tok_s_pct, kUnmodelledBandMinPct);
  EXPECT_EQ(floor.points, 0);
}

// A config the resolver assumed is said in the band; a recipe borrowed from a sibling checkpoint widens it
// one step (kExtrapolationWiden), a dated revision's undated config does not (same weights format).
TEST(ErrorBand, AnAssumedConfigIsSaidAndABorrowedRecipeWidensTheBand) {
  const auto cluster = hardware::parse_cluster("1xH100");
  auto launch = test_launch(corpus_model("qwen3-8b"), cluster, 1);
  launch.model.config_assumption = model::ModelSpec::ConfigAssumption::kUndatedRevision;
  launch.model.config_assumption_note = "no config of org/m-0528 was found";
  const ErrorBand revision = error_band(launch, cluster, table());
  EXPECT_DOUBLE_EQ(revision.total_tok_s_pct, 12.0);
  EXPECT_EQ(revision.warnings, std::vector<std::string>{"no config of org/m-0528 was found"});
  launch.model.config_assumption = model::ModelSpec::ConfigAssumption::kBorrowedRecipe;
  const ErrorBand borrowed = error_band(launch, cluster, table());
  EXPECT_DOUBLE_EQ(borrowed.total_tok_s_pct, 12.0 * kExtrapolationWiden);
  EXPECT_DOUBLE_EQ(borrowed.tpot_pct, 8.0 * kExtrapolationWiden);
  EXPECT_EQ(borrowed.warnings.size(), 1u);
}

// The embedded bands (calibration.json): the modelled classes leave the unmodelled runs out, so no modelled
// engine band is wider than the unmodelled one, and the unmodelled entry exists.
// Outside the corpus the residuals say nothing: a GPU the table never measured widens the band 1.5x, and two
// nodes of eight (a scale the corpus never had: more GPUs and more nodes, one extrapolation) 1.5x more.
TEST(ErrorBand, EachExtrapolationWidensTheBand) {
  BandTable t = table();
  t.max_gpus = 8;
  const auto h200 = hardware::parse_cluster("1xH200");
  const ErrorBand one = error_band(test_launch(corpus_model("qwen3-8b"), h200, 1), h200, t);
  EXPECT_EQ(one.class_name, "vllm/hopper/dense");
  EXPECT_DOUBLE_EQ(one.total_tok_s_pct, 12.0 * 1.5);
  EXPECT_DOUBLE_EQ(one.tpot_pct, 8.0 * 1.5);
  ASSERT_EQ(one.warnings.size(), 1u);
  EXPECT_NE(one.warnings[0].find("H200 was never measured"), std::string::npos) << one.warnings[0];
  const auto two_nodes = hardware::parse_cluster("2x8xH100");
  auto launch = test_launch(corpus_model("qwen3-8b"), two_nodes, 16);
  launch.layout.nodes = 2;
  const ErrorBand scaled = error_band(launch, two_nodes, t);
  EXPECT_EQ(scaled.warnings.size(), 2u);  // 16 GPUs, two nodes: one extrapolation of scale
  EXPECT_DOUBLE_EQ(scaled.total_tok_s_pct, 12.0 * 1.5);
}

// vLLM with --enforce-eager decodes on CPU launches the corpus never timed for vLLM (its eager cost per
// kernel is a prior): outside the corpus, one more extrapolation; an engine measured eager keeps its band.
TEST(ErrorBand, AnEagerDecodeOfAnEngineNeverMeasuredEagerWidensTheBand) {
  BandTable t = table();
  t.eager_decode_engines = {"sglang", "trtllm"};
  const auto cluster = hardware::parse_cluster("1xH100");
  auto launch = test_launch(corpus_model("qwen3-8b"), cluster, 1);
  EXPECT_TRUE(error_band(launch, cluster, t).warnings.empty());  // CUDA graphs: inside the corpus
  launch.execution.graphs = engines::GraphMode::kNone;
  const ErrorBand eager = error_band(launch, cluster, t);
  EXPECT_DOUBLE_EQ(eager.total_tok_s_pct, 12.0 * 1.5);
  EXPECT_DOUBLE_EQ(eager.tpot_pct, 8.0 * 1.5);
  ASSERT_EQ(eager.warnings.size(), 1u);
  EXPECT_NE(eager.warnings[0].find("vllm decoding without CUDA graphs was never measured"), std::string::npos)
      << eager.warnings[0];
  t.eager_decode_engines.push_back("vllm");
  const ErrorBand measured = error_band(launch, cluster, t);
  EXPECT_DOUBLE_EQ(measured.tpot_pct, 8.0);
  EXPECT_TRUE(measured.warnings.empty());
}

// The embedded coverage (calibration.json): only SGLang has corpus runs that decode without CUDA graphs
// (--disable-cuda-graph, DeepEP normal); every vLLM and TensorRT-LLM run captured graphs.
TEST(ErrorBand, TheEmbeddedCoverageNamesTheEnginesMeasuredEager) {
  const BandTable& t = embedded_bands();
  EXPECT_EQ(t.eager_decode_engines, (std::vector<std::string>{"sglang"}));
}

// DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5.x) is a band class of its own, apart from MLA
// (DeepSeek-R1): its indexer and sparse core run other kernels and tables.
TEST(ErrorBand, DsaModelsHaveTheirOwnArchitectureClass) {
  EXPECT_EQ(architecture_class(model::deepseek_v32()), "dsa");
  EXPECT_EQ(architecture_class(model::resolve_model("deepseek-ai/DeepSeek-R1")), "mla");
  EXPECT_EQ(architecture_class(corpus_model("qwen3-8b")), "dense");
}

// A band of 100% or more has no lower end: it is printed as how many times off the prediction may be.
TEST(ErrorBand, AWideBandSaysHowManyTimesOff) {
  ErrorBand b;
  b.class_name = "trtllm/hopper";
  b.points = 7;
  b.total_tok_s_pct = 107;
  b.ttft_pct = 44;
  b.tpot_pct = 100;
  EXPECT_EQ(format_band(b),
            "±107% tok/s (measured: from 1/2.1 of the prediction to many times it), ±44% TTFT, ±100% TPOT "
            "(measured: from 1/2.0 of the prediction to many times it) (trtllm/hopper, 7 held-out "
            "points)");
  b.studies = 1;
  EXPECT_NE(format_band(b).find("(trtllm/hopper, 7 held-out points of 1 study)"), std::string::npos);
  b.studies = 2;
  EXPECT_NE(format_band(b).find("(trtllm/hopper, 7 held-out points of 2 studies)"), std::string::npos);
}

// A launch whose architecture its engine never measured on its GPU generation (a dense model where the
// engine/generation class holds only MoE runs) falls back one class (x1.5) and is no narrower than the
// spread of the measured engine/GPU/architecture classes: the RMS of their bands, each class once (the
// ones under 3 points and the unmodelled class left out).
TEST(ErrorBand, AnArchitectureNeverMeasuredOnItsEngineAndGenerationTakesAtLeastTheClassSpread) {
  BandTable t;
  t.classes["vllm/hopper/moe"] = {6.0, 8.0, 4.0, 300, 1};
  t.classes["vllm/hopper"] = {6.0, 8.0, 4.0, 300, 1};
  t.classes["vllm/ampere/dense"] = {30.0, 40.0, 20.0, 5, 2};
  t.classes["sglang/hopper/mla"] = {40.0, -1.0, 28.0, 9, 3};
  t.classes["sglang/hopper/moe-swa"] = {500.0, 500.0, 500.0, 1, 1};  // under 3 points: not a class
  t.classes[kUnmodelledBandClass] = {900.0, 90.0, 90.0, 4, 3};
  const auto cluster = hardware::parse_cluster("1xH100");
  const ErrorBand b = error_band(test_launch(corpus_model("qwen3-8b"), cluster, 1), cluster, t);
  EXPECT_EQ(b.class_name, "vllm/hopper");
  EXPECT_EQ(b.studies, 1);
  EXPECT_NEAR(b.total_tok_s_pct, std::sqrt((6.0 * 6 + 30 * 30 + 40 * 40) / 3), 1e-9);  // 28.9 over 6 x 1.5
  EXPECT_NEAR(b.ttft_pct, std::sqrt((8.0 * 8 + 40 * 40) / 2), 1e-9);                   // no TTFT in one class
  EXPECT_NEAR(b.tpot_pct, std::sqrt((4.0 * 4 + 20 * 20 + 28 * 28) / 3), 1e-9);
  ASSERT_EQ(b.warnings.size(), 1u);
  EXPECT_NE(b.warnings[0].find("no dense launch of vllm/hopper was measured: the band is at least the spread "
                               "of the 3 measured"),
            std::string::npos)
      << b.warnings[0];
  // Its own class with too few points to lend a band: the same, said as such.
  t.classes["vllm/hopper/dense"] = {5.0, 7.0, 3.0, 2, 2};
  const ErrorBand few = error_band(test_launch(corpus_model("qwen3-8b"), cluster, 1), cluster, t);
  EXPECT_DOUBLE_EQ(few.total_tok_s_pct, b.total_tok_s_pct);
  ASSERT_EQ(few.warnings.size(), 1u);
  EXPECT_NE(few.warnings[0].find("only 2 held-out points of dense launches of vllm/hopper (fewer than 3)"),
            std::string::npos)
      << few.warnings[0];
  // Its own class of one study: one sample of how the twin fares from study to study, floored at the
  // spread (now of 4 classes: 5% joins).
  t.classes["vllm/hopper/dense"] = {5.0, 7.0, 3.0, 10, 1};
  const ErrorBand one = error_band(test_launch(corpus_model("qwen3-8b"), cluster, 1), cluster, t);
  EXPECT_EQ(one.class_name, "vllm/hopper/dense");
  EXPECT_NEAR(one.total_tok_s_pct, std::sqrt((6.0 * 6 + 5 * 5 + 30 * 30 + 40 * 40) / 4), 1e-9);
  ASSERT_EQ(one.warnings.size(), 1u);
  EXPECT_NE(one.warnings[0].find("the vllm/hopper/dense band comes from one study: the band is at least the "
                                 "spread of the 4 measured"),
            std::string::npos)
      << one.warnings[0];
  // Its own class measured in two studies: the class's band, no warning.
  t.classes["vllm/hopper/dense"] = {5.0, 7.0, 3.0, 10, 2};
  const ErrorBand own = error_band(test_launch(corpus_model("qwen3-8b"), cluster, 1), cluster, t);
  EXPECT_EQ(own.class_name, "vllm/hopper/dense");
  EXPECT_DOUBLE_EQ(own.total_tok_s_pct, 5.0);
  EXPECT_TRUE(own.warnings.empty());
}

TEST(ErrorBand, TheEmbeddedModelledBandsLeaveTheUnmodelledRunsOut) {
  const BandTable& t = embedded_bands();
  ASSERT_TRUE(t.classes.count(kUnmodelledBandClass));
  const double unmodelled = t.classes.at(kUnmodelledBandClass).total_tok_s_pct;
  for (const char* engine : {"vllm", "sglang", "trtllm", "all"}) {
    ASSERT_TRUE(t.classes.count(engine)) << engine;
    EXPECT_LT(t.classes.at(engine).total_tok_s_pct, unmodelled) << engine;
  }
}

}  // namespace
}  // namespace servelab::sim
