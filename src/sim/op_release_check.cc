// servelab/sim: the data check of measured operator tables. A release's table that is inconsistent with
// the other releases of the same GPU and engine, and with the same release on sibling GPUs, is left out of
// the lookup (the next nearest release is used) and the twin's notes say so. The rule and its bound:
// measured_ops.h (kReleaseSpread).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "sim/measured_ops.h"

namespace servelab::sim::detail {

namespace {

/// Median of the finite positive values of `v`; 0 when there are none.
double median_of(std::vector<double> v) {
  std::erase_if(v, [](double x) { return !(std::isfinite(x) && x > 0); });
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : std::sqrt(v[n / 2 - 1] * v[n / 2]);  // geometric midpoint: ratios
}

bool off(double ratio) {
  return ratio > 0 && (ratio > kReleaseSpread || ratio < 1 / kReleaseSpread);
}

/// The key and axis columns of `a` that `b` has as a key or axis too.
std::vector<std::string> shared_columns(const ops::OpTable& a, const ops::OpTable& b) {
  auto of = [](const ops::OpTable& t) {
    std::vector<std::string> c(t.keys());
    for (const auto& x : t.axes()) c.push_back(x.name);
    return c;
  };
  const auto cb = of(b);
  std::vector<std::string> out;
  for (const auto& c : of(a))
    if (std::find(cb.begin(), cb.end(), c) != cb.end()) out.push_back(c);
  return out;
}

using RowLatencies = std::unordered_map<std::uint64_t, std::pair<double, int>>;

/// Mean latency per row signature (a hash of the `columns` values: text for dictionary columns).
RowLatencies latency_by_row(const ops::OpTable& t, const std::vector<std::string>& columns) {
  std::vector<std::size_t> idx;
  for (const auto& c : columns) idx.push_back(static_cast<std::size_t>(t.column_index(c)));
  RowLatencies out;
  if (t.value_column() < 0) return out;
  out.reserve(t.rows());
  for (std::size_t row = 0; row < t.rows(); ++row) {
    const double y = t.number(static_cast<std::size_t>(t.value_column()), row);
    if (!(std::isfinite(y) && y > 0)) continue;
    std::uint64_t h = 1469598103934665603ull;
    for (const std::size_t c : idx) {
      const std::string_view s = t.text(c, row);
      const std::uint64_t v =
          s.empty() ? std::hash<double>{}(t.number(c, row)) : std::hash<std::string_view>{}(s);
      h = (h ^ v) * 1099511628211ull + 0x9e3779b97f4a7c15ull;
    }
    auto& cell = out[h];
    cell.first += y;
    ++cell.second;
  }
  return out;
}

/// A store GPU's datasheet row (through the first device name its tables recorded that the twin knows);
/// nullptr when the twin has no row for it.
const hardware::GpuSpec* spec_of(const ops::OpStore& store, const std::string& gpu) {
  std::vector<std::string> tried;
  for (const auto& e : store.entries()) {
    if (e.gpu != gpu || e.device.empty() || std::find(tried.begin(), tried.end(), e.device) != tried.end())
      continue;
    tried.push_back(e.device);
    try {
      return &hardware::gpu_by_name(e.device);
    } catch (const std::invalid_argument&) {
      // A device name the twin has no row for ("NVIDIA H100": which H100?): try the table's others.
    }
  }
  return nullptr;
}

/// Rows hashed once per table and column set within one check (a table meets several peers).
class RowCache {
 public:
  const RowLatencies& rows(const ops::OpTable& t, const std::vector<std::string>& columns) {
    std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(&t));
    for (const auto& c : columns) key += "|" + c;
    auto it = cache_.find(key);
    if (it == cache_.end()) it = cache_.emplace(key, latency_by_row(t, columns)).first;
    return it->second;
  }

 private:
  std::map<std::string, RowLatencies> cache_;
};

/// table_ratio with the rows of both tables from `cache`.
double cached_ratio(const ops::OpTable& a, const ops::OpTable& b, RowCache& cache) {
  const auto columns = shared_columns(a, b);
  if (columns.empty()) return 0;
  const auto& la = cache.rows(a, columns);
  const auto& lb = cache.rows(b, columns);
  std::vector<double> ratios;
  for (const auto& [h, ya] : la) {
    const auto it = lb.find(h);
    if (it == lb.end()) continue;
    ratios.push_back((ya.first / ya.second) / (it->second.first / it->second.second));
  }
  if (ratios.size() < 3) return 0;
  return median_of(std::move(ratios));
}

std::map<std::string, std::string> check_table(const ops::OpStore& store, const std::string& gpu,
                                               const std::string& backend, const std::string& table) {
  std::map<std::string, std::string> out;
  const auto releases = store.versions(gpu, backend, table);
  if (releases.size() < 2) return out;
  // One table per file: a release that reuses another's measurements is the same table, not a second voice.
  std::vector<std::pair<std::string, std::shared_ptr<const ops::OpTable>>> own;
  for (const auto& r : releases) {
    auto t = store.table(gpu, backend, r, table);
    if (t) own.emplace_back(r, std::move(t));
  }
  std::vector<std::string> gpus;
  for (const auto& e : store.entries())
    if (e.gpu != gpu && e.backend == backend && e.table == table &&
        std::find(gpus.begin(), gpus.end(), e.gpu) == gpus.end())
      gpus.push_back(e.gpu);
  const hardware::GpuSpec* self = spec_of(store, gpu);
  RowCache cache;
  for (const auto& [release, t] : own) {
    std::vector<double> same;
    std::vector<const ops::OpTable*> seen{t.get()};
    for (const auto& [other, u] : own) {
      if (std::find(seen.begin(), seen.end(), u.get()) != seen.end()) continue;
      seen.push_back(u.get());
      if (const double q = cached_ratio(*t, *u, cache); q > 0) same.push_back(q);
    }
    std::vector<double> sibling;
    std::vector<std::string> sibling_names;
    // Consistent with its own GPU's releases: kept whatever the siblings say (judge_release), so they
    // are not read (most tables; the sibling GPUs' tables are the bulk of the work).
    const double own_median = median_of(same);
    const bool consistent = own_median > 0 && !off(own_median);
    for (const auto& g : consistent ? std::vector<std::string>{} : gpus) {
      const hardware::GpuSpec* spec = self ? spec_of(store, g) : nullptr;
      const auto u = spec ? store.table(g, backend, release, table) : nullptr;
      if (!u) continue;
      if (const double q = cached_ratio(*t, *u, cache); q > 0) {
        sibling.push_back(sibling_excess_of(q, *self, *spec));
        sibling_names.push_back(g);
      }
    }
    const ReleaseVerdict v = judge_release(same, sibling);
    if (!v.outlier) continue;
    std::string why = fmt::format("its latencies are {:.3g}x the median of {} other release{} of {} {}",
                                  v.same_gpu, same.size(), same.size() == 1 ? "" : "s", gpu, backend);
    if (v.sibling > 0)
      why += fmt::format(" and {:.3g}x the same release on {} beyond the datasheet ratio", v.sibling,
                         fmt::join(sibling_names, ", "));
    if (v.same_gpu == 0)
      why = fmt::format("its latencies are {:.3g}x the same release on {} beyond the datasheet ratio",
                        v.sibling, fmt::join(sibling_names, ", "));
    out[release] = why + fmt::format(" (more than {:g}x apart: a faulty measurement)", kReleaseSpread);
  }
  return out;
}

}  // namespace

ReleaseVerdict judge_release(std::vector<double> same_gpu, std::vector<double> sibling_excess) {
  auto valid = [](std::vector<double>& v) {
    std::erase_if(v, [](double x) { return !(std::isfinite(x) && x > 0); });
    return v.size();
  };
  const std::size_t ns = valid(same_gpu), nc = valid(sibling_excess);
  ReleaseVerdict v;
  v.same_gpu = median_of(same_gpu);
  v.sibling = median_of(sibling_excess);
  // Off against every kind of peer that was measured, with at least two peer tables in all.
  v.outlier = ns + nc >= 2 && (ns == 0 || off(v.same_gpu)) && (nc == 0 || off(v.sibling));
  return v;
}

double sibling_excess_of(double ratio, const hardware::GpuSpec& self, const hardware::GpuSpec& sibling) {
  if (!(std::isfinite(ratio) && ratio > 0)) return 0;
  double lo = 1, hi = 1;
  for (const double r :
       {sibling.hbm_bandwidth_Bps / self.hbm_bandwidth_Bps, sibling.bf16_flops / self.bf16_flops}) {
    if (!(std::isfinite(r) && r > 0)) continue;
    lo = std::min(lo, r), hi = std::max(hi, r);
  }
  return ratio > hi ? ratio / hi : ratio < lo ? ratio / lo : 1.0;
}

double table_ratio(const ops::OpTable& a, const ops::OpTable& b) {
  RowCache cache;
  return cached_ratio(a, b, cache);
}

std::map<std::string, std::string> skipped_releases(const ops::OpStore& store, const std::string& gpu,
                                                    const std::string& backend, const std::string& table) {
  static std::mutex mu;
  static std::map<std::string, std::map<std::string, std::string>> memo;
  const std::string key = store.dir().string() + "|" + gpu + "|" + backend + "|" + table;
  {
    std::lock_guard lock(mu);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto out = check_table(store, gpu, backend, table);
  std::lock_guard lock(mu);
  return memo.emplace(key, std::move(out)).first->second;
}

}  // namespace servelab::sim::detail
