// numpy-exact statistics: hand-computed values and numpy's summation order.
#include "servelab/metrics/stats.h"

#include <cmath>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

namespace servelab::metrics {
namespace {

TEST(NumpyStats, SmallHandComputed) {
  const std::vector<double> x = {0.25, 0.5, 1.0};
  EXPECT_EQ(numpy_sum(x), 1.75);
  EXPECT_EQ(numpy_mean(x), 1.75 / 3);
  // deviations from 0.58333..: population variance 0.0972222.. -> std 0.311804782..
  EXPECT_NEAR(numpy_std(x), 0.31180478223116176, 1e-16);
  EXPECT_EQ(numpy_median_sorted(x), 0.5);
  // p99: v = 2 * 0.99 = 1.98, lo = 1, g = 0.98 >= 0.5 -> b - (b - a) * (1 - g) = 1 - 0.5 * 0.02
  EXPECT_DOUBLE_EQ(numpy_percentile_sorted(x, 99), 0.99);
  EXPECT_EQ(numpy_percentile_sorted(x, 50), 0.5);
  EXPECT_EQ(numpy_percentile_sorted(x, 0), 0.25);
  EXPECT_EQ(numpy_percentile_sorted(x, 100), 1.0);
  // p25: v = 0.5, g = 0.5 -> b - (b - a) * 0.5 = 0.375
  EXPECT_EQ(numpy_percentile_sorted(x, 25), 0.375);
}

TEST(NumpyStats, EvenMedianIsMeanOfMiddlePair) {
  const std::vector<double> x = {1.0, 2.0, 4.0, 8.0};
  EXPECT_EQ(numpy_median_sorted(x), 3.0);
}

TEST(NumpyStats, SingleValue) {
  const std::vector<double> x = {0.042};
  EXPECT_EQ(numpy_mean(x), 0.042);
  EXPECT_EQ(numpy_std(x), 0.0);
  EXPECT_EQ(numpy_median_sorted(x), 0.042);
  EXPECT_EQ(numpy_percentile_sorted(x, 99.9), 0.042);
}

TEST(NumpyStats, EmptyIsNaNAsNumpy) {
  const std::vector<double> x;
  EXPECT_TRUE(std::isnan(numpy_mean(x)));
  EXPECT_TRUE(std::isnan(numpy_std(x)));
  EXPECT_TRUE(std::isnan(numpy_median_sorted(x)));
  EXPECT_TRUE(std::isnan(numpy_percentile_sorted(x, 50)));
  EXPECT_EQ(numpy_sum(x), 0.0);
}

TEST(NumpyStats, PercentileOutOfRangeThrows) {
  const std::vector<double> x = {1.0};
  EXPECT_THROW(numpy_percentile_sorted(x, 100.5), std::invalid_argument);
  EXPECT_THROW(numpy_percentile_sorted(x, -1), std::invalid_argument);
  EXPECT_THROW(numpy_percentile_sorted(x, std::nan("")), std::invalid_argument);
}

// numpy sums 8..128 elements with 8 interleaved accumulators, which differs from a left-to-right sum.
// 1e16 + 1 + ... : sequential summation loses every 1.0; numpy's blocks keep some of them.
TEST(NumpyStats, PairwiseOrderDiffersFromSequential) {
  std::vector<double> x(16, 1.0);
  x[0] = 1e16;
  double sequential = 0.0;
  for (double v : x) sequential += v;
  EXPECT_EQ(sequential, 1e16);  // each +1 rounds away (ulp(1e16) == 2)
  // r0 = 1e16 + 1 -> 1e16; r1..r7 = 2 each; ((1e16 + 2) + 4) + (4 + 4) = 1e16 + 14
  EXPECT_EQ(numpy_sum(x), 1e16 + 14);
}

}  // namespace
}  // namespace servelab::metrics
