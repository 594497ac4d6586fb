// The twin's calibration table: lookup order, the GPU-generation factor of the pooled kernel_scale
// (calibration.h) and calibration.json round trips.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "servelab/sim/calibration.h"
#include "servelab/sim/fit.h"

namespace servelab::sim {
namespace {

ClassFit fit_of(const std::string& engine, const std::string& family, const std::string& gen, double ks,
                int points) {
  ClassFit f;
  f.key = {engine, family, gen};
  f.cal = calibration_prior(engine);
  f.cal.kernel_scale = ks;
  f.points = points;
  f.studies = 1;
  return f;
}

// Exactly additive data in log space, with so many points that the shrinkage towards the prior is
// negligible: release A runs at 0.5 on Hopper and 1.0 on Ampere, release B at 0.4 on Hopper and was never
// measured on Ampere. Whatever the split between a(B) and g(ampere), B on Ampere is 0.4 x (1.0 / 0.5) = 0.8.
TEST(Calibration, AReleaseNeverMeasuredOnAGenerationBorrowsTheGenerationFactor) {
  const auto t = assemble_table({fit_of("vllm", "vllm-A", "hopper", 0.5, 1000000),
                                 fit_of("vllm", "vllm-A", "ampere", 1.0, 1000000),
                                 fit_of("trtllm", "trtllm-B", "hopper", 0.4, 1000000)});
  CalibrationLevel level{};
  EXPECT_NEAR(t.lookup({"trtllm", "trtllm-B", "ampere"}, &level).kernel_scale, 0.8, 0.8e-3);
  EXPECT_EQ(level, CalibrationLevel::kFamily);
  // Its own class wins where it exists; the generation factor is not applied to it.
  EXPECT_DOUBLE_EQ(t.lookup({"trtllm", "trtllm-B", "hopper"}, &level).kernel_scale, 0.4);
  EXPECT_EQ(level, CalibrationLevel::kClass);
  EXPECT_NEAR(t.generations.at("ampere").kernel_scale_factor / t.generations.at("hopper").kernel_scale_factor,
              2.0, 2e-3);
  EXPECT_EQ(t.generations.at("hopper").points, 2000000);
}

// With few points each term is shrunk towards the prior (ln 1 = 0) by kPriorPseudoPoints = 2 points.
// One class, 2 points at ks = e^-1: the alternating means converge to a = g = -1/3 (a = (2/4)(-1 - g),
// g = (2/4)(-1 - a)), so the family's generation-neutral value is e^(-1/3) and a lookup on the same
// generation through the family gives e^(-2/3). Classes need 3 points to be used on their own.
TEST(Calibration, PooledTermsAreShrunkTowardsThePrior) {
  const auto t = assemble_table({fit_of("sglang", "sglang-X", "hopper", std::exp(-1.0), 2)});
  EXPECT_NEAR(t.families.at("sglang-X").cal.kernel_scale, std::exp(-1.0 / 3), 1e-6);
  EXPECT_NEAR(t.generations.at("hopper").kernel_scale_factor, std::exp(-1.0 / 3), 1e-6);
  EXPECT_NEAR(t.lookup({"sglang", "sglang-Y", "hopper"}).kernel_scale, std::exp(-2.0 / 3),
              1e-6);  // engine pool
  // Fitted on 2 points (< 3), the class itself is not used: its own key falls back to the family.
  CalibrationLevel level{};
  EXPECT_NEAR(t.lookup({"sglang", "sglang-X", "hopper"}, &level).kernel_scale, std::exp(-2.0 / 3), 1e-6);
  EXPECT_EQ(level, CalibrationLevel::kFamily);
  EXPECT_EQ(t.classes.count("sglang-X/hopper"), 0u);
  // A generation with no class at all: no factor.
  EXPECT_NEAR(t.lookup({"sglang", "sglang-X", "blackwell"}).kernel_scale, std::exp(-1.0 / 3), 1e-6);
}

TEST(Calibration, JsonRoundTripKeepsTheGenerationFactors) {
  const auto t = assemble_table(
      {fit_of("vllm", "vllm-A", "hopper", 0.5, 10), fit_of("vllm", "vllm-A", "ampere", 1.0, 10)});
  const auto back = calibration_table_from_json(calibration_table_to_json(t, "test"));
  ASSERT_EQ(back.generations.size(), 2u);
  EXPECT_NEAR(back.generations.at("ampere").kernel_scale_factor,
              t.generations.at("ampere").kernel_scale_factor, 1e-4);
  EXPECT_EQ(back.generations.at("ampere").points, 10);
  EXPECT_NEAR(back.lookup({"vllm", "vllm-B", "ampere"}).kernel_scale,
              t.lookup({"vllm", "vllm-B", "ampere"}).kernel_scale, 1e-3);
}

TEST(Calibration, AGenerationFactorOutsideItsBoundsIsRejectedByName) {
  try {
    calibration_table_from_json(R"({"generations": {"ampere": {"kernel_scale_factor": 7.5, "points": 3}}})");
    FAIL() << "accepted a factor of 7.5";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("generations.ampere.kernel_scale_factor = 7.5"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW(calibration_table_from_json(R"({"generations": {"ampere": {"points": 3}}})"),
               std::runtime_error);
}

// The fields of the paths only some launches take (the API server's streamed reasoning chunks, eager kernel
// launches, openai_harmony rendering) are fitted per engine from priors shared by every engine; an entry
// written before they were fitted loads with those priors, one that gives them keeps its values, and the
// older fields stay required.
TEST(Calibration, PathFieldsMayBeAbsentAndThenAreThePrior) {
  for (const char* e : {"vllm", "sglang", "trtllm"}) {
    const Calibration p = calibration_prior(e);
    EXPECT_DOUBLE_EQ(p.api_stream_request_us, 30.0) << e;
    EXPECT_DOUBLE_EQ(p.eager_launch_us, 12.0) << e;
    EXPECT_DOUBLE_EQ(p.harmony_api_share, 0.2) << e;
  }
  const auto t = calibration_table_from_json(
      R"({"engines": {"vllm": {"kernel_scale": 1, "cpu_step_ms": 2.5, "cpu_request_us": 20,
          "api_request_ms": 0.05, "first_token_ms": 10},
          "sglang": {"kernel_scale": 1, "cpu_step_ms": 2.5, "cpu_request_us": 20, "api_request_ms": 0.05,
          "first_token_ms": 10, "api_stream_request_us": 125, "eager_launch_us": 87, "harmony_api_share": 0.07}}})");
  const Calibration v = t.engines.at("vllm").cal, s = t.engines.at("sglang").cal;
  EXPECT_DOUBLE_EQ(v.api_stream_request_us, 30.0);
  EXPECT_DOUBLE_EQ(v.eager_launch_us, 12.0);
  EXPECT_DOUBLE_EQ(v.harmony_api_share, 0.2);
  EXPECT_DOUBLE_EQ(s.api_stream_request_us, 125.0);
  EXPECT_DOUBLE_EQ(s.eager_launch_us, 87.0);
  EXPECT_DOUBLE_EQ(s.harmony_api_share, 0.07);
  EXPECT_THROW(calibration_table_from_json(R"({"engines": {"vllm": {"kernel_scale": 1}}})"),
               std::runtime_error);
  // Out of bounds is rejected like any field.
  EXPECT_THROW(calibration_table_from_json(
                   R"({"engines": {"vllm": {"kernel_scale": 1, "cpu_step_ms": 2.5, "cpu_request_us": 20,
                   "api_request_ms": 0.05, "first_token_ms": 10, "harmony_api_share": 3}}})"),
               std::runtime_error);
}

}  // namespace
}  // namespace servelab::sim
