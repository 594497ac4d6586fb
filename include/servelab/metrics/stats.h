// servelab/metrics: numpy-exact descriptive statistics (the numbers vLLM's bench reports come from numpy).
#pragma once

#include <span>
#include <vector>

namespace servelab::metrics {

/// numpy's float64 `np.add.reduce`: blocks of 8192 elements (the reduction's buffer size) added left to
/// right, each block summed pairwise (sequential below 8 elements, 8 interleaved accumulators up to 128,
/// recursive halving at a multiple of 8 above; numpy 1.24 `loops_utils.h.src: DOUBLE_pairwise_sum`).
/// Bit-identical to `np.sum` of a 1-D float64 array (checked against numpy 1.24 up to 10^5 elements).
/// Empty → 0.0. Thread-safety: pure.
double numpy_sum(std::span<const double> values);

/// `np.mean` (= numpy_sum / n). Empty → NaN, as numpy (callers apply vLLM's `x or 0` themselves).
double numpy_mean(std::span<const double> values);

/// `np.std` with ddof = 0 (population): sqrt(numpy_sum((x - mean)^2) / n). Empty → NaN.
double numpy_std(std::span<const double> values);

/// `np.median` of an ascending-sorted span: middle element, or mean of the two middle ones. Empty → NaN.
double numpy_median_sorted(std::span<const double> sorted);

/// `np.percentile(x, p)` with numpy's default method "linear" (numpy >= 1.22 `_lerp`: a + (b-a)*g when
/// g < 0.5, else b - (b-a)*(1-g); virtual index (n-1)*(p/100)) of an ascending-sorted span.
/// `p` in [0, 100]. Empty → NaN. Throws std::invalid_argument when p is outside [0, 100] or NaN.
double numpy_percentile_sorted(std::span<const double> sorted, double p);

}  // namespace servelab::metrics
