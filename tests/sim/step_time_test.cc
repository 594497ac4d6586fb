// Step-time arithmetic vs hand calculations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "sim/step_time.h"

namespace servelab::sim {
namespace {

StepContext tp8_context() {
  StepContext c;
  c.model = deepseek_v32();
  c.gpu = hardware_by_name("H200");
  c.par = Parallelism{8, 1, 8, 8, 8, false};
  c.cal.gemm_efficiency = 0.5;
  c.cal.attention_efficiency = 0.4;
  c.cal.memory_efficiency = 0.8;
  c.cal.comm_efficiency = 0.7;
  c.cal.collective_latency_us = 10;
  c.cal.cpu_step_ms = 2;
  c.cal.cpu_per_request_us = 10;
  c.cal.launch_overhead_ms = 5;
  c.cal.eager_per_request_us = 20;
  return c;
}

// One decode request at context 1000 on TP8, FlashMLA sparse (top-2048 slots, 16 heads padded to 64),
// bf16 latent. HBM 4.8e12*0.8 = 3.84e12 B/s; FP8 1979e12*0.5; BF16 GEMM 989.5e12*0.5; attention
// 989.5e12*0.4; NVLink 450e9*0.7.
RankBatch one_decode() {
  RankBatch b;
  b.decode_requests = 1;
  b.batch_requests = 1;
  b.query_tokens = 1;
  b.sampled_tokens = 1;
  b.sparse_pairs = 2048;
  b.indexer_pairs = 1000;
  b.kv_read_bytes = 1000 * 1152.0 + 1000 * 132.0;  // selected latent (min(1000, 2048) keys) + indexer keys
  b.sparse_head_pad = 64;
  return b;
}

TEST(StepTime, SingleDecodeTp8MatchesHandCalculation) {
  const StepContext c = tp8_context();
  const RankBatch b = one_decode();
  const StepTime t = step_time(c, &b, 1, 1, /*graph=*/true);
  // Projections: (187,105,280/8 + 13,959,168) params = 37,347,328 x 61 layers x 1 B read once:
  //   2,278,187,008 B / 3.84e12 = 593.28 us (memory-bound; compute 4.6 us).
  EXPECT_NEAR(t.attn_proj_s, 0.0005932778666666666, 1e-12);
  // Attention: 61 x 2048 x 2 x 64 heads x 1088 = 1.7398e10 FLOP / 3.958e14 = 43.96 us
  //   (KV read 61 x 1,284,000 B = 20.4 us).
  EXPECT_NEAR(t.attention_s, 4.395647547246084e-05, 1e-12);
  // Indexer: 61 x 1000 x 2 x 64 x 128 = 9.994e8 FLOP / 9.895e14 = 1.01 us.
  EXPECT_NEAR(t.indexer_s, 1.0100293077311774e-06, 1e-12);
  // Dense: weights (58 x 44,040,192 shared + 3 x 396,361,728 dense FFN + 2 x 926,679,040 head bytes)/8
  //   + gates 58 x 1,835,008 x 2 B = 912,457,728 B / 3.84e12 = 237.62 us.
  EXPECT_NEAR(t.dense_s, 0.00023761920000000002, 1e-12);
  // MoE: touched fraction 1 - (1 - 8/256)^1 = 1/32 of 653,908,770,816/8 B = 2,554,336,598 B / 3.84e12
  //   = 665.19 us.
  EXPECT_NEAR(t.moe_s, 0.0006651904, 1e-12);
  // Collectives: 2 x 61 all-reduces of 2 x 7/8 x 14,336 B = 3,060,736 B / 3.15e11 = 9.72 us
  //   + 122 x 10 us latency = 1229.72 us.
  EXPECT_NEAR(t.comm_s, 0.0012297166222222224, 1e-12);
  // CPU 2 ms + 10 us x 1 request, not overlapped; total 4780.77 us.
  EXPECT_NEAR(t.total_s, 0.004780770593669081, 1e-12);
}

TEST(StepTime, EagerStepPaysLaunchAndPerRequestCost) {
  const StepContext c = tp8_context();
  const RankBatch b = one_decode();
  const double graph = step_time(c, &b, 1, 1, true).total_s;
  const double eager = step_time(c, &b, 1, 1, false).total_s;
  EXPECT_NEAR(eager - graph, 5e-3 + 20e-6, 1e-12);  // launch 5 ms + 20 us x 1 request
}

TEST(StepTime, MoeWeightsFullyTouchedAtLargeBatch) {
  // 1024 tokens: 1 - (31/32)^1024 ~ 1 -> every expert slice is read; MoE compute
  // 2 x 8 x 44,040,192 x 58 x 1024 / 8 / 9.895e14 = 5.29 ms < 81.74 GB / 3.84e12 = 21.29 ms.
  const StepContext c = tp8_context();
  RankBatch b = one_decode();
  b.query_tokens = 1024;
  const StepTime t = step_time(c, &b, 1, 1, true);
  EXPECT_NEAR(t.moe_s, 653908770816.0 / 8 / 3.84e12, 1e-9);
}

TEST(StepTime, DpAttentionGathersTokensIntoMoe) {
  // 8 DP ranks with 1 token each: the MoE sees 8 tokens (touch 1 - (31/32)^8); attention is per rank.
  StepContext c = tp8_context();
  c.par = Parallelism{8, 8, 1, 8, 8, true};
  std::vector<RankBatch> ranks(8, one_decode());
  const StepTime t = step_time(c, ranks.data(), 8, 1, true);
  const double touch = 1.0 - std::pow(1.0 - 8.0 / 256.0, 8);
  EXPECT_NEAR(t.moe_s, 653908770816.0 / 8 * touch / 3.84e12, 1e-12);
}

}  // namespace
}  // namespace servelab::sim
