// servelab/ops: one memory-mapped operator table (format SLOPS01 of scripts/import_ops.mjs) and its lookup:
// binary search over the sorted key columns, then a recursive walk of the axes that interpolates between
// the measured points bracketing the query (each sub-grid on its own: the grids are sparse at the edges).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "servelab/ops/op_store.h"

namespace servelab::ops {

struct OpTable::Column {
  enum class Type { kDict, kI32, kF32, kF64 };
  std::string name;
  Type type = Type::kF64;
  std::vector<std::string> dict;  ///< sorted; kDict cells index it
  const unsigned char* data = nullptr;

  /// The cell value of `text` in this dictionary column; -1 when it was never measured.
  double code(const std::string& text) const {
    auto pos = std::find(dict.begin(), dict.end(), text);
    return pos == dict.end() ? -1 : static_cast<double>(pos - dict.begin());
  }
};

double OpAxis::between(double y0, double y1, double t) const {
  if (space == Space::kSqrt) {
    const double s = std::sqrt(y0) + t * (std::sqrt(y1) - std::sqrt(y0));
    return s * s;
  }
  return y0 + t * (y1 - y0);
}

double OpAxis::beyond(double y_max, double q, double max) const {
  return max > 0 ? y_max * std::pow(q / max, exponent) : y_max;
}

namespace {

constexpr char kMagic[8] = {'S', 'L', 'O', 'P', 'S', '0', '1', '\n'};
constexpr std::size_t kMaxHeaderBytes = 64u << 20;

std::size_t pad8(std::size_t n) {
  return (n + 7) & ~std::size_t{7};
}

std::string number_text(double v) {
  if (std::isnan(v)) return "(missing)";
  return fmt::format("{}", v);
}

/// Up to 12 values joined by ", " (and how many more).
std::string join_some(const std::vector<std::string>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size() && i < 12; ++i) out += (i ? ", " : "") + v[i];
  if (v.size() > 12) out += fmt::format(", ... ({} in all)", v.size());
  return out;
}

}  // namespace

std::shared_ptr<const OpTable> OpTable::open(const std::filesystem::path& file) {
  const std::string where = file.string();
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(fmt::format("{}: cannot open: {}", where, std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(where + ": not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size < 12) {
    ::close(fd);
    throw std::runtime_error(fmt::format("{}: {} bytes, too short for an op table", where, size));
  }
  void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (m == MAP_FAILED)
    throw std::runtime_error(fmt::format("{}: mmap failed: {}", where, std::strerror(errno)));
  std::shared_ptr<OpTable> t(new OpTable());
  t->map_ = static_cast<const unsigned char*>(m);
  t->map_size_ = size;
  auto bad = [&](const std::string& why) {
    return std::runtime_error(where + ": not a valid op table: " + why);
  };
  if (std::memcmp(t->map_, kMagic, sizeof kMagic) != 0)
    throw bad("bad magic (expected SLOPS01; re-run make deps)");
  std::uint32_t hlen = 0;
  std::memcpy(&hlen, t->map_ + 8, 4);
  if (hlen > kMaxHeaderBytes || 12 + std::size_t{hlen} > size)
    throw bad(fmt::format("header of {} bytes", hlen));
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(t->map_ + 12, t->map_ + 12 + hlen);
    t->table_ = h.at("table").get<std::string>();
    t->gpu_ = h.at("gpu").get<std::string>();
    t->backend_ = h.at("backend").get<std::string>();
    t->version_ = h.at("version").get<std::string>();
    if (h.contains("device") && h["device"].is_string()) t->device_ = h["device"].get<std::string>();
    t->rows_ = h.at("rows").get<std::size_t>();
    for (const auto& c : h.at("columns")) {
      Column col;
      col.name = c.at("name").get<std::string>();
      const auto type = c.at("type").get<std::string>();
      if (type == "dict") {
        col.type = Column::Type::kDict;
        col.dict = c.at("dict").get<std::vector<std::string>>();
      } else if (type == "i32") {
        col.type = Column::Type::kI32;
      } else if (type == "f32") {
        col.type = Column::Type::kF32;
      } else if (type == "f64") {
        col.type = Column::Type::kF64;
      } else {
        throw bad("column " + col.name + " has unknown type " + type);
      }
      t->columns_.push_back(std::move(col));
    }
    t->keys_ = h.at("keys").get<std::vector<std::string>>();
    for (const auto& a : h.at("axes")) {
      OpAxis ax;
      ax.name = a.at("name").get<std::string>();
      const auto space = a.at("space").get<std::string>();
      if (space != "linear" && space != "sqrt") throw bad("axis " + ax.name + " has unknown space " + space);
      ax.space = space == "sqrt" ? OpAxis::Space::kSqrt : OpAxis::Space::kLinear;
      ax.exponent = a.at("exponent").get<double>();
      t->axes_.push_back(std::move(ax));
    }
    if (!h.at("value").is_null()) t->value_column_ = t->column_index(h["value"].get<std::string>());
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header: ") + e.what());
  }
  if (t->rows_ > size) throw bad(fmt::format("{} rows in {} bytes", t->rows_, size));
  std::size_t off = pad8(12 + std::size_t{hlen});
  for (auto& c : t->columns_) {
    const std::size_t width = c.type == Column::Type::kDict ? 2 : c.type == Column::Type::kF64 ? 8 : 4;
    const std::size_t bytes = pad8(width * t->rows_);
    if (off > size || bytes > size - off) throw bad("truncated at column " + c.name);
    c.data = t->map_ + off;
    off += bytes;
    if (c.type != Column::Type::kDict) continue;
    for (std::size_t r = 0; r < t->rows_; ++r) {
      std::uint16_t i = 0;
      std::memcpy(&i, c.data + 2 * r, 2);
      if (i >= c.dict.size())
        throw bad(fmt::format("column {} row {}: index {} outside its dictionary", c.name, r, i));
    }
  }
  for (const auto& k : t->keys_) {
    if (t->column_index(k) < 0) throw bad("key " + k + " is not a column");
  }
  for (const auto& a : t->axes_) {
    const int i = t->column_index(a.name);
    if (i < 0 || t->columns_[i].type == Column::Type::kDict)
      throw bad("axis " + a.name + " is not a numeric column");
  }
  return t;
}

OpTable::~OpTable() {
  if (map_) ::munmap(const_cast<unsigned char*>(map_), map_size_);
}

int OpTable::column_index(std::string_view name) const {
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].name == name) return static_cast<int>(i);
  }
  return -1;
}

double OpTable::number(std::size_t column, std::size_t row) const {
  const Column& c = columns_[column];
  switch (c.type) {
    case Column::Type::kDict: {
      std::uint16_t i = 0;
      std::memcpy(&i, c.data + 2 * row, 2);
      return i;
    }
    case Column::Type::kI32: {
      std::int32_t v = 0;
      std::memcpy(&v, c.data + 4 * row, 4);
      return v;
    }
    case Column::Type::kF32: {
      float v = 0;
      std::memcpy(&v, c.data + 4 * row, 4);
      return v;
    }
    case Column::Type::kF64: {
      double v = 0;
      std::memcpy(&v, c.data + 8 * row, 8);
      return v;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

std::string_view OpTable::text(std::size_t column, std::size_t row) const {
  const Column& c = columns_[column];
  if (c.type != Column::Type::kDict) return {};
  return c.dict[static_cast<std::size_t>(number(column, row))];
}

OpTable::Range OpTable::equal_range(int column, double value, Range r) const {
  // Rows of `r` are sorted ascending in `column` (the columns before it are fixed inside r). NaN sorts
  // last in the importer's order and never equals a query.
  auto less = [&](std::size_t row, double v) { return number(column, row) < v; };
  std::size_t lo = r.lo, hi = r.hi;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (less(mid, value))
      lo = mid + 1;
    else
      hi = mid;
  }
  const std::size_t first = lo;
  hi = r.hi;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (number(column, mid) <= value)
      lo = mid + 1;
    else
      hi = mid;
  }
  return {first, lo};
}

std::vector<std::string> OpTable::distinct(std::string_view column, const OpQuery& where) const {
  const int c = column_index(column);
  if (c < 0) return {};
  // A linear scan (not a hot path): `where` may name any subset of the keys.
  std::vector<std::pair<int, double>> match;
  for (const auto& k : keys_) {
    auto it = where.find(k);
    if (it == where.end()) continue;
    const int kc = column_index(k);
    if (const auto* s = std::get_if<std::string>(&it->second)) {
      const double code = columns_[kc].code(*s);
      if (code < 0) return {};
      match.emplace_back(kc, code);
    } else {
      match.emplace_back(kc, std::get<double>(it->second));
    }
  }
  std::vector<double> seen;
  for (std::size_t i = 0; i < rows_; ++i) {
    bool ok = true;
    for (const auto& [kc, v] : match) ok = ok && number(kc, i) == v;
    if (ok) seen.push_back(number(c, i));
  }
  std::sort(seen.begin(), seen.end());
  seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
  std::vector<std::string> out;
  for (double v : seen) {
    if (columns_[c].type == Column::Type::kDict)
      out.push_back(columns_[c].dict[static_cast<std::size_t>(v)]);
    else
      out.push_back(number_text(v));
  }
  return out;
}

bool OpTable::narrow_keys(const OpQuery& query, std::size_t from, Range& r, std::string& why) const {
  for (std::size_t ki = from; ki < keys_.size(); ++ki) {
    const std::string& k = keys_[ki];
    const int c = column_index(k);
    const Column& col = columns_[c];
    auto values_here = [&] {
      std::vector<std::string> v;
      double last = std::numeric_limits<double>::quiet_NaN();
      for (std::size_t i = r.lo; i < r.hi; ++i) {
        const double x = number(c, i);
        if (x == last) continue;
        last = x;
        v.push_back(col.type == Column::Type::kDict ? std::string(text(c, i)) : number_text(x));
      }
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      return v;
    };
    auto it = query.find(k);
    if (it == query.end()) {
      if (r.hi == r.lo || number(c, r.lo) == number(c, r.hi - 1)) continue;
      // Omitted and not unique here: keep the values under which the keys still to come match. One such
      // value is the answer (kernel_source follows from the dtype); several are ambiguous.
      std::vector<std::pair<std::string, Range>> matches;
      std::string first_why, ambiguous_why;
      for (std::size_t lo = r.lo; lo < r.hi;) {
        const double v = number(c, lo);
        Range sub = equal_range(c, v, {lo, r.hi});
        lo = sub.hi;
        std::string w;
        if (narrow_keys(query, ki + 1, sub, w)) {
          matches.emplace_back(
              col.type == Column::Type::kDict ? std::string(text(c, sub.lo)) : number_text(v), sub);
        } else if (w.find("ambiguous") != std::string::npos) {
          if (ambiguous_why.empty()) ambiguous_why = w;
        } else if (first_why.empty()) {
          first_why = w;
        }
      }
      if (matches.size() == 1) {
        r = matches.front().second;
        return true;
      }
      if (matches.empty()) {
        why = !ambiguous_why.empty() ? ambiguous_why : first_why;
        return false;
      }
      std::vector<std::string> names;
      for (const auto& m : matches) names.push_back(m.first);
      why = fmt::format("{}: ambiguous: {} has several values here ({}); give one", table_, k,
                        join_some(names));
      return false;
    }
    double v = 0;
    if (col.type == Column::Type::kDict) {
      const auto* s = std::get_if<std::string>(&it->second);
      if (!s) {
        why = fmt::format("{}: {} is text, the query gave a number", table_, k);
        return false;
      }
      v = col.code(*s);
    } else {
      const auto* d = std::get_if<double>(&it->second);
      if (!d) {
        why = fmt::format("{}: {} is a number, the query gave text", table_, k);
        return false;
      }
      v = *d;
    }
    const Range n = v < 0 ? Range{r.lo, r.lo} : equal_range(c, v, r);
    if (n.lo == n.hi) {
      const std::string asked = std::holds_alternative<std::string>(it->second)
                                    ? std::get<std::string>(it->second)
                                    : number_text(std::get<double>(it->second));
      why = fmt::format("{} ({} {} {}): no rows with {} = {} (measured: {})", table_, gpu_, backend_,
                        version_, k, asked, join_some(values_here()));
      return false;
    }
    r = n;
  }
  return true;
}

double OpTable::leaf_latency(Range r) const {
  double sum = 0;
  int n = 0;
  for (std::size_t i = r.lo; i < r.hi; ++i) {
    const double v = number(static_cast<std::size_t>(value_column_), i);
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  return n ? sum / n : std::numeric_limits<double>::quiet_NaN();
}

bool OpTable::interpolate(const OpQuery& query, std::size_t axis, Range r, double& out,
                          OpLookup& info) const {
  if (axis == axes_.size()) {
    out = leaf_latency(r);
    if (!std::isfinite(out)) {
      info.detail = fmt::format("{}: no finite latency at this point", table_);
      return false;
    }
    return true;
  }
  const OpAxis& ax = axes_[axis];
  const int c = column_index(ax.name);
  const double first = number(c, r.lo), last = number(c, r.hi - 1);
  double q = 0;
  auto it = query.find(ax.name);
  if (it == query.end()) {
    if (first != last) {
      info.detail = fmt::format("{}: the query needs {} (measured {} .. {})", table_, ax.name,
                                number_text(first), number_text(last));
      return false;
    }
    q = first;
  } else if (const auto* d = std::get_if<double>(&it->second)) {
    q = *d;
  } else {
    info.detail = fmt::format("{}: {} is a number, the query gave text", table_, ax.name);
    return false;
  }
  if (!std::isfinite(q)) {
    info.detail = fmt::format("{}: {} must be a finite number", table_, ax.name);
    return false;
  }
  auto note = [&](const std::string& s) { info.detail += (info.detail.empty() ? "" : "; ") + s; };
  if (q <= first) {
    if (!interpolate(query, axis + 1, equal_range(c, first, r), out, info)) return false;
    if (q < first) {
      info.extrapolated = true;
      note(fmt::format("{}={} below the measured minimum {}: its latency", ax.name, number_text(q),
                       number_text(first)));
    }
    return true;
  }
  if (q >= last) {
    if (!interpolate(query, axis + 1, equal_range(c, last, r), out, info)) return false;
    if (q > last) {
      const double at_last = out;
      out = ax.beyond(at_last, q, last);
      info.extrapolated = true;
      note(fmt::format("{}={} above the measured maximum {}: x{:.3g}", ax.name, number_text(q),
                       number_text(last), at_last > 0 ? out / at_last : 1.0));
    }
    return true;
  }
  const Range upper = equal_range(c, q, r);
  if (upper.lo != upper.hi) return interpolate(query, axis + 1, upper, out, info);  // on the grid
  // upper.lo is the first row above q; the row before it holds the value below.
  const double v1 = number(c, upper.lo), v0 = number(c, upper.lo - 1);
  double y0 = 0, y1 = 0;
  if (!interpolate(query, axis + 1, equal_range(c, v0, r), y0, info)) return false;
  if (!interpolate(query, axis + 1, equal_range(c, v1, r), y1, info)) return false;
  out = ax.between(y0, y1, (q - v0) / (v1 - v0));
  return true;
}

OpLookup OpTable::curve(const OpQuery& query, std::string_view axis, OpCurve& out) const {
  OpLookup res;
  out = OpCurve{};
  auto ax = std::find_if(axes_.begin(), axes_.end(), [&](const OpAxis& a) { return a.name == axis; });
  if (ax == axes_.end()) {
    res.detail = fmt::format("{}: {} is not an interpolation axis", table_, axis);
    return res;
  }
  if (value_column_ < 0 || rows_ == 0) {
    res.detail = table_ + ": has no latency to look up";
    return res;
  }
  Range r{0, rows_};
  if (!narrow_keys(query, 0, r, res.detail)) return res;
  const int c = column_index(ax->name);
  std::vector<double> xs;
  for (std::size_t i = r.lo; i < r.hi; ++i) xs.push_back(number(c, i));
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  OpQuery q = query;
  for (double x : xs) {
    if (!std::isfinite(x)) continue;
    q[ax->name] = x;
    const OpLookup p = lookup(q);
    if (!p.ok) return p;
    out.x.push_back(x);
    out.y_ms.push_back(p.latency_ms);
    if (p.extrapolated && !out.extrapolated) {
      out.extrapolated = true;
      out.detail = p.detail;
    }
  }
  if (out.x.empty()) {
    res.detail = fmt::format("{}: no measured {} for these keys", table_, ax->name);
    return res;
  }
  out.axis = *ax;
  res.ok = true;
  res.latency_ms = out.y_ms.front();
  res.extrapolated = out.extrapolated;
  res.detail = out.detail;
  return res;
}

double OpCurve::at(double q, bool* outside) const {
  if (outside) *outside = q < x.front() || q > x.back();
  if (q <= x.front()) return y_ms.front();
  if (q >= x.back()) return axis.beyond(y_ms.back(), q, x.back());
  const auto hi = static_cast<std::size_t>(std::upper_bound(x.begin(), x.end(), q) - x.begin());
  const std::size_t lo = hi - 1;
  return axis.between(y_ms[lo], y_ms[hi], (q - x[lo]) / (x[hi] - x[lo]));
}

OpLookup OpTable::lookup(const OpQuery& query) const {
  OpLookup res;
  if (value_column_ < 0) {
    res.detail = table_ + ": has no latency column to look up";
    return res;
  }
  Range r{0, rows_};
  if (rows_ == 0) {
    res.detail = table_ + ": empty table";
    return res;
  }
  if (!narrow_keys(query, 0, r, res.detail)) return res;
  double v = 0;
  if (!interpolate(query, 0, r, v, res)) return res;
  res.ok = true;
  res.latency_ms = v;
  return res;
}

}  // namespace servelab::ops
