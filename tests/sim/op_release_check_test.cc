// The data check of measured operator tables (op_release_check.cc): the rule on synthetic ratios, the
// datasheet allowance between GPUs, and the real store of make deps (a faulty H100 SGLang MoE table).
#include <gtest/gtest.h>

#include "servelab/ops/op_store.h"
#include "servelab/sim/sim.h"
#include "sim/measured_ops.h"
#include "sim/sim_detail.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

using detail::judge_release;
using detail::sibling_excess_of;

// A synthetic store of one operator at one shape: four releases on one GPU (H100) at 0.100, 0.110, 0.095
// and 1.000 ms, and the last release on H200 at 0.090 ms. The 1.000 ms release is 9.8x the median of the
// other three (0.100 ms) and 11.1x its H200 twin, whose datasheets allow H100 / H200 between 1 and
// 4.8 / 3.35 = 1.43 (bandwidth; BF16 FLOPs equal): 7.8x beyond. Both over kReleaseSpread (4): skipped.
TEST(OpReleaseCheck, OneOutlierReleaseIsSkipped) {
  const auto& h100 = hardware::gpu_by_name("H100-SXM");
  const auto& h200 = hardware::gpu_by_name("H200");
  const std::vector<double> h100_ms{0.100, 0.110, 0.095, 1.000};
  auto same_gpu = [&](std::size_t i) {
    std::vector<double> r;
    for (std::size_t j = 0; j < h100_ms.size(); ++j)
      if (j != i) r.push_back(h100_ms[i] / h100_ms[j]);
    return r;
  };
  const auto bad = judge_release(same_gpu(3), {sibling_excess_of(1.000 / 0.090, h100, h200)});
  EXPECT_TRUE(bad.outlier);
  EXPECT_NEAR(bad.same_gpu, 10.0, 1e-9);
  EXPECT_NEAR(bad.sibling, 1.000 / 0.090 / (4.8 / 3.35), 1e-9);
  for (std::size_t i = 0; i < 3; ++i) EXPECT_FALSE(judge_release(same_gpu(i), {}).outlier) << i;
  // The same release as slow on H200 too (1.2x the H200 latency: inside the datasheet ratio) is a real
  // change of the engine's kernel, kept.
  EXPECT_FALSE(judge_release(same_gpu(3), {sibling_excess_of(1.2, h100, h200)}).outlier);
  // One peer table alone cannot tell which of the two is wrong; two siblings can.
  EXPECT_FALSE(judge_release({10.0}, {}).outlier);
  EXPECT_FALSE(judge_release({}, {8.0}).outlier);
  EXPECT_TRUE(judge_release({10.0}, {8.0}).outlier);
  EXPECT_TRUE(judge_release({}, {8.0, 0.0, 9.0}).outlier);
  // Too fast is as faulty as too slow; 4x is the bound, not over it.
  EXPECT_TRUE(judge_release({0.1, 0.12}, {}).outlier);
  EXPECT_FALSE(judge_release({4.0, 4.0}, {}).outlier);
}

// The datasheet allowance: H100 over H200 latency may lie between 1 (latency-bound) and 4.8 / 3.35 TB/s
// (bandwidth-bound; their BF16 FLOPs are equal); A100 over H100 up to 989 / 312 TFLOP/s.
TEST(OpReleaseCheck, SiblingExcessBeyondTheDatasheetRatio) {
  const auto& h100 = hardware::gpu_by_name("H100-SXM");
  const auto& h200 = hardware::gpu_by_name("H200");
  const auto& a100 = hardware::gpu_by_name("A100-SXM-80GB");
  EXPECT_DOUBLE_EQ(sibling_excess_of(1.2, h100, h200), 1.0);
  EXPECT_DOUBLE_EQ(sibling_excess_of(0.5, h100, h200), 0.5);
  EXPECT_NEAR(sibling_excess_of(2.0, h100, h200), 2.0 / (4.8 / 3.35), 1e-9);
  EXPECT_DOUBLE_EQ(sibling_excess_of(3.0, a100, h100), 1.0);
  EXPECT_NEAR(sibling_excess_of(1.0 / 3.0, h100, a100), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(sibling_excess_of(0, h100, h200), 0.0);
}

// The real store of make deps: SGLang 0.5.6.post2's moe_perf on H100 is ~10x SGLang 0.5.9 / 0.5.10 / 0.5.14
// on H100 and ~12x the same release on H200 (8.2x beyond the datasheet ratio): the only table of H100 or
// H200 MoE that the check leaves out. An SGLang 0.5.5 launch (older than every measured release) of
// Qwen3-235B-A22B on H100 takes the oldest kept release, 0.5.9, and the note says why; on H200 it keeps
// 0.5.6.post2.
TEST(OpReleaseCheck, RealStoreSkipsTheFaultyH100SglangMoeTable) {
  const ops::OpStore store = ops::OpStore::open(ops::OpStore::default_dir());
  const auto skipped = detail::skipped_releases(store, "h100_sxm", "sglang", "moe_perf");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_EQ(skipped.begin()->first, "0.5.6.post2");
  EXPECT_TRUE(detail::skipped_releases(store, "h200_sxm", "sglang", "moe_perf").empty());
  EXPECT_TRUE(detail::skipped_releases(store, "h100_sxm", "sglang", "gemm_perf").empty());
  EXPECT_TRUE(detail::skipped_releases(store, "h100_sxm", "vllm", "moe_perf").empty());
  const auto bad = store.table("h100_sxm", "sglang", "0.5.6.post2", "moe_perf");
  const auto good = store.table("h100_sxm", "sglang", "0.5.9", "moe_perf");
  const auto twin = store.table("h200_sxm", "sglang", "0.5.6.post2", "moe_perf");
  ASSERT_TRUE(bad && good && twin);
  EXPECT_GT(detail::table_ratio(*bad, *good), 8.0);
  EXPECT_GT(detail::table_ratio(*bad, *twin), 10.0);
  EXPECT_LT(detail::table_ratio(*good, *store.table("h200_sxm", "sglang", "0.5.9", "moe_perf")), 4.8 / 3.35);

  use_measured_operators(store.dir());
  const auto m = testing::corpus_model("qwen3-235b-a22b-instruct-2507");
  const auto c = hardware::parse_cluster("4xH100");
  auto l = testing::test_launch(m, c, 4);
  l.config.kind = engines::EngineKind::kSglang;
  l.version = "0.5.5";
  const auto src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  EXPECT_EQ(detail::table_release(store, *src, "moe_perf"), "0.5.9");
  const detail::StepModel sm(l, c);
  const auto& notes = sm.measured_notes();
  use_measured_operators({});
  ASSERT_EQ(notes.size(), 4u);
  EXPECT_EQ(
      notes[2].rfind(
          "MoE experts: 1 of 1 layer kinds from moe_perf of h100_sxm sglang 0.5.9, a later release of "
          "the launch's line: none at or before its 0.5.5 was measured, this is the oldest of its 0.5 line "
          "(moe_perf 0.5.6.post2 not used: its latencies "
          "are 9.98x the median of 3 other releases of h100_sxm sglang and 8.23x the same release "
          "on h200_sxm beyond the datasheet ratio",
          0),
      0u)
      << notes[2];

  const auto h200 = hardware::parse_cluster("4xH200");
  auto l200 = testing::test_launch(m, h200, 4);
  l200.config.kind = engines::EngineKind::kSglang;
  l200.version = "0.5.5";
  const auto src200 = detail::op_source(store, l200, h200.gpu);
  ASSERT_TRUE(src200);
  EXPECT_EQ(detail::table_release(store, *src200, "moe_perf"), "0.5.6.post2");
  EXPECT_FALSE(detail::skipped_release(store, *src200, "moe_perf"));
}

}  // namespace
}  // namespace servelab::sim
