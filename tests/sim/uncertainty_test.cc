// The twin's error bands (uncertainty.h): the class a launch takes its band from, and the separate band of
// a launch on a kernel path the twin has no figure for.
#include <gtest/gtest.h>

#include <string>

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

// The embedded bands (calibration.json): the modelled classes leave the unmodelled runs out, so no modelled
// engine band is wider than the unmodelled one, and the unmodelled entry exists.
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
