// servelab/tune: the statistics of a study: means with Student-t confidence intervals, Welch's test for
// "is this gain bigger than the noise", and rank correlations for "did the twin's ranking hold".
#pragma once

#include <vector>

namespace servelab::tune {

/// Mean and 95% confidence interval of repeated measurements.
struct Estimate {
  int n = 0;
  double mean = 0.0;
  double stddev = 0.0;     ///< sample standard deviation (n-1); 0 when n < 2
  double ci95_half = 0.0;  ///< t_{0.975, n-1} · s/√n; 0 when n < 2 (no noise estimate)
};

/// Estimate of `xs`. Empty input gives n = 0.
Estimate estimate(const std::vector<double>& xs);

/// Two-sided 97.5% quantile of Student's t with `df` degrees of freedom (df ≥ 1; fractional df rounds
/// down). Table values from any statistics text (e.g. NIST/SEMATECH e-Handbook, table 1.3.6.7.2).
double t_quantile_975(double df);

/// Welch's two-sample t-test at the 5% level: is mean(b) − mean(a) different from zero? Needs n ≥ 2 in
/// both; otherwise returns false.
bool welch_significant(const Estimate& a, const Estimate& b);

/// Spearman's rank correlation of two equally long series (average ranks for ties). Returns 0 for fewer
/// than 2 points or a constant series.
double spearman(const std::vector<double>& x, const std::vector<double>& y);

/// Kendall's tau-b of two equally long series. Returns 0 for fewer than 2 points.
double kendall_tau(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace servelab::tune
