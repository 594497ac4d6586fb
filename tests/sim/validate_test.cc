// `sim validate` meets the accuracy targets on the released ShareGPT measurements, with the
// embedded calibration (fitted by `servelab sim calibrate` on those released runs only).
#include <gtest/gtest.h>

#include "common/paths.h"
#include "sim/validate.h"

namespace servelab::sim {
namespace {

const ValidationReport& report() {
  static const ValidationReport r =
      validate(common::source_dir().parent_path() / "shared/reference/seed-measurements.json", parse_cluster("8xH200"));
  return r;
}

double predicted(const std::string& engine, const std::string& config) {
  for (const auto& row : report().rows)
    if (row.engine == engine && row.config == config && row.scenario == "sharegpt-1000" && row.predicted)
      return row.predicted->total_tok_s;
  ADD_FAILURE() << "no prediction for " << engine << "/" << config;
  return 0;
}

TEST(Validate, MapeTargetsOnReleasedShareGpt) {
  const auto& r = report();
  EXPECT_EQ(r.compared, 15);
  EXPECT_LE(r.mape_total_tok_s, 10.0);
  EXPECT_LE(r.mape_ttft, 25.0);
  EXPECT_LE(r.mape_tpot, 25.0);
}

TEST(Validate, EveryReleasedFailureReproducedWithItsReason) {
  const auto& r = report();
  EXPECT_EQ(r.failures_released, 5);
  EXPECT_EQ(r.failures_reproduced, 5);
  EXPECT_EQ(r.failures_same_reason, 5);
}

TEST(Validate, SameWinnerAndEngineOrder) {
  const auto& r = report();
  EXPECT_TRUE(r.same_winner) << r.measured_winner << " vs " << r.predicted_winner;
  EXPECT_EQ(r.predicted_engine_order, "sglang > vllm > trtllm");
}

TEST(Validate, ConfigOrderWherePhysical) {
  // DP attention / expert parallelism beat TP8 (replicated latent KV, padded heads, all-reduce):
  EXPECT_GT(predicted("vllm", "dp8-ep-maxlen81920"), predicted("vllm", "baseline-tp8"));
  EXPECT_GT(predicted("sglang", "tp8-dp8-dp-attn"), predicted("sglang", "baseline-tp8"));
  EXPECT_GT(predicted("trtllm", "tp8-ep8"), predicted("trtllm", "baseline-tp8"));
  // FA3 on the selected keys beats FlashMLA's padded 2048-slot loop with 64 padded heads:
  EXPECT_GT(predicted("sglang", "dp8-dp-attn-parsers-ctx32k-nsa-fa3"), predicted("sglang", "dp8-dp-attn-parsers-ctx32k"));
  // SGLang's 48-request cap with speculative decoding makes MTP the slowest SGLang config:
  EXPECT_LT(predicted("sglang", "mtp-eagle-1step"), predicted("sglang", "baseline-tp8"));
  // Parsers and the context length have no physical cost in the twin (the study's +13.94% and +4.47%
  // are not explained): identical predictions.
  EXPECT_EQ(predicted("sglang", "dp8-dp-attn-parsers"), predicted("sglang", "tp8-dp8-dp-attn"));
  EXPECT_EQ(predicted("vllm", "tool-call-parser"), predicted("vllm", "baseline-tp8"));
}

}  // namespace
}  // namespace servelab::sim
