#include "servelab/metrics/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace servelab::metrics {
namespace {

constexpr std::size_t kPairwiseBlock = 128;  // numpy PW_BLOCKSIZE
constexpr std::size_t kReduceBuffer = 8192;  // numpy NPY_BUFSIZE: reduction inner-loop chunk

// numpy DOUBLE_pairwise_sum, unit stride.
double pairwise_sum(const double* a, std::size_t n) {
  if (n < 8) {
    double res = 0.0;
    for (std::size_t i = 0; i < n; ++i) res += a[i];
    return res;
  }
  if (n <= kPairwiseBlock) {
    double r[8];
    for (std::size_t j = 0; j < 8; ++j) r[j] = a[j];
    std::size_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (std::size_t j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  std::size_t n2 = n / 2;
  n2 -= n2 % 8;
  return pairwise_sum(a, n2) + pairwise_sum(a + n2, n - n2);
}

}  // namespace

double numpy_sum(std::span<const double> values) {
  // np.add.reduce starts from the identity 0.0; its iterator hands the inner loop at most one buffer
  // (8192 elements) at a time, and each call adds the pairwise sum of its block to the running result.
  double res = 0.0;
  for (std::size_t i = 0; i < values.size(); i += kReduceBuffer) {
    res += pairwise_sum(values.data() + i, std::min(kReduceBuffer, values.size() - i));
  }
  return res;
}

double numpy_mean(std::span<const double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  return numpy_sum(values) / static_cast<double>(values.size());
}

double numpy_std(std::span<const double> values) {
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  const double mean = numpy_mean(values);
  std::vector<double> sq(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    const double d = values[i] - mean;
    sq[i] = d * d;
  }
  return std::sqrt(numpy_sum(sq) / static_cast<double>(values.size()));
}

double numpy_median_sorted(std::span<const double> sorted) {
  const std::size_t n = sorted.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  if (n % 2 == 1) return sorted[n / 2];
  // np.mean of the two middle elements: (0.0 + a + b) / 2.
  const double pair[2] = {sorted[n / 2 - 1], sorted[n / 2]};
  return numpy_sum(pair) / 2.0;
}

double numpy_percentile_sorted(std::span<const double> sorted, double p) {
  if (!(p >= 0.0 && p <= 100.0)) {
    throw std::invalid_argument("percentile " + std::to_string(p) + " is outside [0, 100]");
  }
  const std::size_t n = sorted.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double q = p / 100.0;
  const double virtual_index = static_cast<double>(n - 1) * q;
  double previous_index = std::floor(virtual_index);
  std::size_t lo = static_cast<std::size_t>(previous_index);
  std::size_t hi = lo + 1;
  if (virtual_index >= static_cast<double>(n - 1)) {
    // numpy sets both indexes to -1 (the last element); gamma is then computed against -1.
    lo = hi = n - 1;
    previous_index = -1.0;
  }
  const double gamma = virtual_index - previous_index;
  const double a = sorted[lo];
  const double b = sorted[hi];
  const double diff_b_a = b - a;
  if (gamma >= 0.5) return b - diff_b_a * (1.0 - gamma);
  return a + diff_b_a * gamma;
}

}  // namespace servelab::metrics
