// servelab/ops: measured operator latencies. NVIDIA AIConfigurator's silicon tables (GEMM, attention, MLA,
// MoE, collectives, ... per GPU, engine and release; $SERVELAB_DATA_DIR/aic-ops, Apache-2.0) are imported
// by scripts/import_ops.mjs (make deps) into a store of sorted column files; this module memory-maps them
// and answers "how long does this operator take" by exact match on its key columns and interpolation
// along its axes. The twin's step model builds on it (sim v3).
#pragma once

#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace servelab::ops {

/// A cell of a query: text for a dictionary column (kernel_source, gemm_dtype, ...), a number otherwise.
using OpValue = std::variant<std::string, double>;

/// A lookup: column name -> value. Key columns are matched exactly; axis columns are interpolated. A key
/// column the query omits matches when one of its values is left once the other keys are matched (the
/// kernel_source of a dtype), else the lookup is ambiguous; a query column the table does not have is
/// ignored (older tables lack window_size, ...). Rows measured more than once are averaged.
using OpQuery = std::map<std::string, OpValue, std::less<>>;

/// How a lookup was answered. An error value, not an exception: lookups run inside the step model.
struct OpLookup {
  bool ok = false;
  double latency_ms = 0;      ///< one call of the operator for one layer, ms (the table's `latency`)
  bool extrapolated = false;  ///< some axis lay outside the measured range (see OpAxis)
  std::string detail;         ///< on error: what did not match and what was measured; else the extrapolations
};

/// An interpolation axis of a table (the importer's spec: scripts/import_ops.mjs SPECS).
struct OpAxis {
  enum class Space {
    kLinear,  ///< latency linear in the axis between measured points
    kSqrt,    ///< sqrt(latency) linear in the axis (AIConfigurator's rule along prefill length)
  };
  std::string name;
  Space space = Space::kLinear;
  /// Beyond the largest measured value, latency = latency(max) x (q / max)^exponent (1: linear in tokens or
  /// bytes; 2: prefill attention, quadratic in length). Below the smallest, the smallest's latency (a kernel
  /// does not get faster than its smallest measured shape). Either way the lookup is marked extrapolated.
  double exponent = 1;

  /// Latency at fraction t (0..1) of the way from a measured point of latency y0 to the next, y1 (ms), in
  /// this axis' space.
  double between(double y0, double y1, double t) const;
  /// Latency at q beyond the largest measured value `max`, whose latency is y_max (ms).
  double beyond(double y_max, double q, double max) const;
};

/// Latency along one axis with every other column fixed: the measured values of the axis, each with the
/// table's latency there (the other axes interpolated once). Built once per operator shape, evaluated per
/// step: a binary search and one interpolation, no allocation.
/// Thread-safety: immutable; safe to evaluate concurrently.
struct OpCurve {
  OpAxis axis;                ///< the free axis, its interpolation space and extrapolation exponent
  std::vector<double> x;      ///< measured values of the axis, ascending (at least one)
  std::vector<double> y_ms;   ///< latency at each x, ms
  bool extrapolated = false;  ///< the fixed axes lay outside their measured range
  std::string detail;         ///< their extrapolations, as OpLookup::detail

  /// Latency at `q` (ms): interpolated between measured points in the axis' space, scaled by
  /// (q / max)^exponent above the largest, the smallest's latency below it. `*outside` (if given) is set
  /// when q lies outside [x.front(), x.back()].
  double at(double q, bool* outside = nullptr) const;
};

/// One imported table (one parquet file), memory-mapped read-only.
/// Thread-safety: immutable after open; any number of threads may look up concurrently.
class OpTable {
 public:
  /// Opens a store file (format SLOPS01, scripts/import_ops.mjs). Throws std::runtime_error naming the file
  /// when it cannot be read or is not a valid table (bad magic, truncated, inconsistent header).
  static std::shared_ptr<const OpTable> open(const std::filesystem::path& file);
  ~OpTable();
  OpTable(const OpTable&) = delete;
  OpTable& operator=(const OpTable&) = delete;

  const std::string& table() const { return table_; }      ///< e.g. "gemm_perf"
  const std::string& gpu() const { return gpu_; }          ///< systems name, e.g. "h100_sxm"
  const std::string& backend() const { return backend_; }  ///< "vllm", "sglang", "trtllm", "nccl"
  const std::string& version() const { return version_; }  ///< the release directory it was imported from
  const std::string& device() const { return device_; }    ///< the GPU's own name, as the collector saw it
  std::size_t rows() const { return rows_; }
  const std::vector<std::string>& keys() const { return keys_; }  ///< exact-match columns, in sort order
  const std::vector<OpAxis>& axes() const { return axes_; }       ///< interpolation columns, in sort order
  bool has_column(std::string_view name) const { return column_index(name) >= 0; }
  /// Index of the latency column (ms per call), -1 when the table has none.
  int value_column() const { return value_column_; }

  /// The latency of `query`. Errors (no row with these keys, an ambiguous key, no latency column) come
  /// back as ok = false with the reason and the values that were measured.
  OpLookup lookup(const OpQuery& query) const;

  /// The latency along axis `axis` with the keys and the other axes fixed by `query` (its value for `axis`
  /// is ignored). ok = false with the reason, as lookup, when the keys do not match or `axis` is not an axis.
  OpLookup curve(const OpQuery& query, std::string_view axis, OpCurve& out) const;

  /// The distinct values of `column` among the rows whose keys match `where` (keys `where` omits are not
  /// narrowed), as text (numbers printed shortest). Empty when the column does not exist.
  std::vector<std::string> distinct(std::string_view column, const OpQuery& where = {}) const;

  /// Cell `row` of a numeric column; of a dictionary column, its index. NaN for a missing value.
  /// Precondition: column < number of columns, row < rows().
  double number(std::size_t column, std::size_t row) const;
  /// Cell `row` of a dictionary column as text; empty for a numeric column.
  std::string_view text(std::size_t column, std::size_t row) const;
  /// Index of a column by name; -1 if absent.
  int column_index(std::string_view name) const;

 private:
  struct Column;
  struct Range {
    std::size_t lo = 0, hi = 0;
  };
  OpTable() = default;
  bool narrow_keys(const OpQuery& query, std::size_t from, Range& r, std::string& why) const;
  Range equal_range(int column, double value, Range r) const;
  bool interpolate(const OpQuery& query, std::size_t axis, Range r, double& out, OpLookup& info) const;
  double leaf_latency(Range r) const;

  std::string table_, gpu_, backend_, version_, device_;
  std::size_t rows_ = 0;
  std::vector<std::string> keys_;
  std::vector<OpAxis> axes_;
  std::vector<Column> columns_;
  int value_column_ = -1;
  const unsigned char* map_ = nullptr;
  std::size_t map_size_ = 0;
};

/// One table of a store's index.
struct OpTableEntry {
  std::string gpu, family, backend, version, table;
  std::filesystem::path path;  ///< absolute
  std::size_t rows = 0;        ///< inherited rows included
  std::string device;
  /// The release whose rows this one inherited where it measured none of their group (its reuse.yaml beside
  /// a table of its own; scripts/import_ops.mjs mergeDonor), "" when it inherited none.
  std::string inherited_from;
  std::size_t inherited_rows = 0;  ///< how many of `rows` are inherited
};

/// A store written by scripts/import_ops.mjs: index.json and one file per table.
/// Thread-safety: every const member may be called concurrently (tables open once, under a lock).
class OpStore {
 public:
  /// Reads `dir`/index.json. Throws std::runtime_error naming the directory when it is missing or invalid,
  /// with the command that builds it (make deps).
  static OpStore open(const std::filesystem::path& dir);
  /// The store make deps builds: $SERVELAB_OPS_DIR, else <cache_dir>/ops/aic-ops (common::cache_dir()).
  static std::filesystem::path default_dir();

  const std::filesystem::path& dir() const;
  const std::vector<OpTableEntry>& entries() const;
  /// The releases of `backend` on `gpu` that measured `table` or declare (reuse.yaml) another's, in the
  /// index's order (directory names sorted as text, not as versions).
  std::vector<std::string> versions(std::string_view gpu, std::string_view backend,
                                    std::string_view table) const;
  /// The table measured for exactly this release, following a reuse declaration to its donor release;
  /// nullptr when there is none. Throws std::runtime_error if the file is corrupt.
  std::shared_ptr<const OpTable> table(std::string_view gpu, std::string_view backend,
                                       std::string_view version, std::string_view table) const;

 private:
  struct State;
  std::shared_ptr<State> state_;
};

}  // namespace servelab::ops
