#include "servelab/tune/search/stats.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace servelab::tune {

Estimate estimate(const std::vector<double>& xs) {
  Estimate e;
  e.n = static_cast<int>(xs.size());
  if (xs.empty()) return e;
  e.mean = std::accumulate(xs.begin(), xs.end(), 0.0) / e.n;
  if (e.n < 2) return e;
  double ss = 0;
  for (double x : xs) ss += (x - e.mean) * (x - e.mean);
  e.stddev = std::sqrt(ss / (e.n - 1));
  e.ci95_half = t_quantile_975(e.n - 1) * e.stddev / std::sqrt(static_cast<double>(e.n));
  return e;
}

double t_quantile_975(double df) {
  static const double kTable[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365,
                                  2.306, 2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
                                  2.120, 2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069,
                                  2.064, 2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
  int d = static_cast<int>(std::floor(df));
  if (d < 1) d = 1;
  if (d <= 30) return kTable[d];
  if (d <= 40) return 2.021;
  if (d <= 60) return 2.000;
  if (d <= 120) return 1.980;
  return 1.960;
}

bool welch_significant(const Estimate& a, const Estimate& b) {
  if (a.n < 2 || b.n < 2) return false;
  const double va = a.stddev * a.stddev / a.n, vb = b.stddev * b.stddev / b.n;
  const double se = std::sqrt(va + vb);
  if (se == 0) return a.mean != b.mean;
  const double t = (b.mean - a.mean) / se;
  const double df = (va + vb) * (va + vb) / ((va * va) / (a.n - 1) + (vb * vb) / (b.n - 1));
  return std::fabs(t) > t_quantile_975(df);
}

namespace {
std::vector<double> ranks(const std::vector<double>& v) {
  std::vector<size_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    const double avg = (i + j) / 2.0 + 1.0;
    for (size_t k = i; k <= j; ++k) r[idx[k]] = avg;
    i = j + 1;
  }
  return r;
}
}  // namespace

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2 || x.size() != y.size()) return 0.0;
  auto rx = ranks(x), ry = ranks(y);
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(rx.begin(), rx.end(), 0.0) / n;
  const double my = std::accumulate(ry.begin(), ry.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < rx.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  if (sxx == 0 || syy == 0) return 0.0;
  return sxy / std::sqrt(sxx * syy);
}

double kendall_tau(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() < 2 || x.size() != y.size()) return 0.0;
  double concordant = 0, discordant = 0, tx = 0, ty = 0;
  for (size_t i = 0; i < x.size(); ++i)
    for (size_t j = i + 1; j < x.size(); ++j) {
      const double dx = x[i] - x[j], dy = y[i] - y[j];
      if (dx == 0 && dy == 0) continue;
      if (dx == 0) {
        ++tx;
        continue;
      }
      if (dy == 0) {
        ++ty;
        continue;
      }
      (dx * dy > 0 ? concordant : discordant) += 1;
    }
  const double denom = std::sqrt((concordant + discordant + tx) * (concordant + discordant + ty));
  return denom == 0 ? 0.0 : (concordant - discordant) / denom;
}

}  // namespace servelab::tune
