// servelab/sim: the measured-operator switch and the matching of a launch to measured tables.
#include "sim/measured_ops.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <mutex>
#include <optional>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/engine_module.h"
#include "servelab/sim/sim.h"
#include "sim/op_memo.h"

namespace servelab::sim {

namespace {
std::mutex g_store_mu;
std::shared_ptr<const ops::OpStore> g_store;  // guarded by g_store_mu
}  // namespace

void use_measured_operators(const std::filesystem::path& store_dir) {
  auto s = store_dir.empty() ? nullptr : std::make_shared<const ops::OpStore>(ops::OpStore::open(store_dir));
  std::lock_guard lock(g_store_mu);
  g_store = std::move(s);
}

namespace detail {

std::shared_ptr<const ops::OpStore> measured_op_store() {
  std::lock_guard lock(g_store_mu);
  return g_store;
}

namespace {

/// The leading numbers of a release ("0.5.6.post2" -> 0, 5, 6, 2; "1.3.0rc10" -> 1, 3, 0, 10): enough to
/// order releases of one engine (a pre-release suffix sorts as its number, after the plain release).
std::vector<long> release_numbers(const std::string& v) {
  std::vector<long> out;
  long cur = -1;
  for (char ch : v) {
    if (std::isdigit(static_cast<unsigned char>(ch))) {
      cur = (cur < 0 ? 0 : cur * 10) + (ch - '0');
      if (cur > 1000000) cur = 1000000;
    } else if (cur >= 0) {
      out.push_back(cur);
      cur = -1;
    }
  }
  if (cur >= 0) out.push_back(cur);
  return out;
}

/// The store's GPUs whose recorded device names resolve to a datasheet row: (systems name, row), once per
/// (GPU, device name) pair, in the store's order. A device the twin has no row for (B300, ...) is left out.
std::vector<std::pair<std::string, hardware::GpuSpec>> store_gpus(const ops::OpStore& store) {
  std::vector<std::pair<std::string, hardware::GpuSpec>> out;
  std::map<std::string, bool> tried;
  for (const auto& e : store.entries()) {
    if (e.device.empty() || tried[e.gpu + "|" + e.device]) continue;
    tried[e.gpu + "|" + e.device] = true;
    try {
      out.emplace_back(e.gpu, hardware::gpu_by_name(e.device));
    } catch (const std::invalid_argument&) {
    }
  }
  return out;
}

/// The store's GPU (systems name) whose recorded device names resolve to `gpu`'s row.
std::optional<std::string> store_gpu(const ops::OpStore& store, const hardware::GpuSpec& gpu) {
  for (const auto& [name, row] : store_gpus(store))
    if (row.name == gpu.name) return name;
  return std::nullopt;
}

}  // namespace

namespace {

/// The release line of `v`: its first two numbers ("0.5" of SGLang 0.5.6.post2), else `v` itself.
std::string release_line(const std::string& v) {
  const auto n = release_numbers(v);
  return n.size() >= 2 ? fmt::format("{}.{}", n[0], n[1]) : v;
}

/// Whether releases `a` and `b` are of one release line: the same first two numbers (vLLM 0.11.0 and
/// 0.11.2, SGLang 0.5.3 and 0.5.6.post2, TensorRT-LLM 1.2.0rc1 and 1.2.0rc5).
bool same_release_line(const std::string& a, const std::string& b) {
  const auto x = release_numbers(a), y = release_numbers(b);
  return x.size() >= 2 && y.size() >= 2 && x[0] == y[0] && x[1] == y[1];
}

/// The newest of `releases` not newer than `want`; for a launch older than every measured release, the
/// oldest when it is of the launch's release line, else none: a later release line's kernels are not
/// evidence about this one's (engines change default kernels between lines, e.g. vLLM 0.11 -> 0.14),
/// and the roofline with its fitted kernel scale stays. Empty when there is none.
std::string nearest_release(std::vector<std::string> releases, const std::string& want) {
  if (releases.empty()) return {};
  std::sort(releases.begin(), releases.end(), [](const std::string& a, const std::string& b) {
    return release_numbers(a) < release_numbers(b);
  });
  const auto w = release_numbers(want);
  std::string out = same_release_line(releases.front(), want) ? releases.front() : std::string();
  for (const auto& r : releases) {
    if (release_numbers(r) <= w) out = r;
  }
  return out;
}

}  // namespace

std::optional<OpSource> op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                  const hardware::GpuSpec& gpu) {
  const auto sys = store_gpu(store, gpu);
  if (!sys) return std::nullopt;
  // The tables of the engine's own kernels: its module names their backend (a fork names its parent's).
  const std::string backend = engines::engine_module(launch.config.kind).op_tables;
  if (backend.empty()) return std::nullopt;
  OpSource src;
  src.gpu = *sys;
  src.backend = backend;
  src.launch_release = launch.version;
  src.release = table_release(store, src, "gemm_perf");
  if (src.release.empty()) return std::nullopt;
  src.exact_release = src.release == launch.version;
  return src;
}

namespace {

/// Of the store's GPUs other than `gpu` that `accept` takes and whose tables serve `launch` (op_source), the
/// nearest to `gpu` in HBM bandwidth, then by name (the store's order must not decide); `found` receives its
/// row. nullopt when there is none.
template <class Accept>
std::optional<OpSource> nearest_other_gpu_source(const ops::OpStore& store,
                                                 const engines::ResolvedLaunch& launch,
                                                 const hardware::GpuSpec& gpu, Accept accept,
                                                 hardware::GpuSpec* found) {
  std::optional<OpSource> best;
  hardware::GpuSpec best_gpu;
  auto distance = [&](const hardware::GpuSpec& g) {
    return std::fabs(std::log(g.hbm_bandwidth_Bps / gpu.hbm_bandwidth_Bps));
  };
  for (const auto& [name, other] : store_gpus(store)) {
    if (other.name == gpu.name || !accept(other)) continue;
    auto src = op_source(store, launch, other);
    if (!src) continue;
    const double d = distance(other), best_d = best ? distance(best_gpu) : 0;
    if (!best || d < best_d - 1e-12 || (d < best_d + 1e-12 && other.name < best_gpu.name))
      best = std::move(src), best_gpu = other;
  }
  if (best && found) *found = best_gpu;
  return best;
}

}  // namespace

std::optional<OpSource> sibling_op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                          const hardware::GpuSpec& gpu, hardware::GpuSpec* sibling) {
  // The same chip at the same power: only the memory differs (an H100 SXM and an H200, not a PCIe card).
  return nearest_other_gpu_source(
      store, launch, gpu,
      [&](const hardware::GpuSpec& other) {
        return other.generation == gpu.generation && other.compute_capability == gpu.compute_capability &&
               other.sm_count == gpu.sm_count && other.bf16_flops == gpu.bf16_flops &&
               other.fp8_flops == gpu.fp8_flops && other.fp4_flops == gpu.fp4_flops &&
               other.tdp_watts == gpu.tdp_watts;
      },
      sibling);
}

std::optional<OpSource> stand_in_op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                           const hardware::GpuSpec& gpu, hardware::GpuSpec* stand_in) {
  const double reach = std::log1p(kStandInBandwidthReach) + 1e-12;
  return nearest_other_gpu_source(
      store, launch, gpu,
      [&](const hardware::GpuSpec& other) {
        return other.generation == gpu.generation && other.sm_count == gpu.sm_count &&
               other.bf16_flops == gpu.bf16_flops && other.fp8_flops == gpu.fp8_flops &&
               std::fabs(std::log(other.hbm_bandwidth_Bps / gpu.hbm_bandwidth_Bps)) <= reach &&
               other.intra_node_link == gpu.intra_node_link && other.link_Bps == gpu.link_Bps;
      },
      stand_in);
}

std::string missing_source_note(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                const hardware::GpuSpec& gpu) {
  const auto& module = engines::engine_module(launch.config.kind);
  const std::string engine = module.op_tables;
  if (engine.empty())
    return fmt::format(
        "no measured operator tables for {} (its engine module names none): every operator is "
        "the roofline",
        module.product_name);
  const auto sys = store_gpu(store, gpu);
  const auto releases = sys ? store.versions(*sys, engine, "gemm_perf") : std::vector<std::string>{};
  if (releases.empty())
    return fmt::format("no measured tables for {} on {}: every operator is the roofline", engine, gpu.name);
  return fmt::format(
      "no measured {} release on {} at or before the launch's {} or in its release line (measured: {}): a "
      "later line's kernels are not evidence about this one's, so every operator is the roofline",
      engine, *sys, launch.version, fmt::join(releases, ", "));
}

std::string table_release(const ops::OpStore& store, const OpSource& src, std::string_view table) {
  auto releases = store.versions(src.gpu, src.backend, table);
  const auto skipped = skipped_releases(store, src.gpu, src.backend, std::string(table));
  std::erase_if(releases, [&](const std::string& r) { return skipped.count(r) > 0; });
  return nearest_release(std::move(releases), src.launch_release);
}

std::optional<std::pair<std::string, std::string>> skipped_release(const ops::OpStore& store,
                                                                   const OpSource& src,
                                                                   std::string_view table) {
  const std::string unchecked =
      nearest_release(store.versions(src.gpu, src.backend, table), src.launch_release);
  const auto skipped = skipped_releases(store, src.gpu, src.backend, std::string(table));
  if (const auto it = skipped.find(unchecked); it != skipped.end()) return *it;
  return std::nullopt;
}

std::string table_note(const ops::OpStore& store, const OpSource& src, std::string_view table) {
  const std::string r = table_release(store, src, table);
  const auto skipped = skipped_release(store, src, table);
  const std::string not_used =
      skipped ? fmt::format("{} {} not used: {}", table, skipped->first, skipped->second) : std::string();
  if (r.empty()) {
    const auto measured = store.versions(src.gpu, src.backend, table);
    if (measured.empty() || (skipped && measured.size() == 1))
      return fmt::format("{} (none for {} {}{}{})", table, src.gpu, src.backend, skipped ? "; " : "",
                         not_used);
    return fmt::format(
        "{} (none of {} {} at or before the launch's {} or in its release line; measured: {}{}{})", table,
        src.gpu, src.backend, src.launch_release, fmt::join(measured, ", "), skipped ? "; " : "", not_used);
  }
  std::string which;
  if (r != src.launch_release)
    which =
        release_numbers(r) <= release_numbers(src.launch_release)
            ? fmt::format(", the newest measured release at or before the launch's {}", src.launch_release)
            : fmt::format(
                  ", a later release of the launch's line: none at or before its {} was measured, this is "
                  "the oldest of its {} line",
                  src.launch_release, release_line(src.launch_release));
  // A release directory that declares (reuse.yaml) another's rows: say whose rows they are.
  const auto t = store.table(src.gpu, src.backend, r, table);
  std::string reuse = t && t->version() != r ? fmt::format(" (reusing {}'s rows)", t->version()) : "";
  for (const auto& e : store.entries())  // its own rows and, where it measured none of their group, a donor's
    if (e.gpu == src.gpu && e.backend == src.backend && e.version == r && e.table == table &&
        e.inherited_rows > 0)
      reuse = fmt::format(" (with {} rows of {} where it measured none: its reuse.yaml)", e.inherited_rows,
                          e.inherited_from);
  return fmt::format("{} of {} {} {}{}{}{}", table, src.gpu, src.backend, r, reuse, which,
                     skipped ? fmt::format(" ({})", not_used) : "");
}

const char* measured_gemm_dtype(engines::GemmKernel k) {
  using engines::GemmKernel;
  switch (k) {
    case GemmKernel::kCublasBf16:
      return "bfloat16";
    case GemmKernel::kFp8Native:
      return "fp8";
    case GemmKernel::kFp8BlockDeepGemm:
    case GemmKernel::kFp8BlockCutlass:
    case GemmKernel::kFp8BlockTrtllm:
      return "fp8_block";
    case GemmKernel::kMarlinW4A16:
    case GemmKernel::kAwqTrtllm:
      return "int4_wo";
    case GemmKernel::kMarlinW8A16:
    case GemmKernel::kInt8Native:
    case GemmKernel::kFp4Native:
      return nullptr;
  }
  return nullptr;
}

namespace {

/// The `kernel_source` values of `table`'s rows matching `q` that match one of `patterns` (shell
/// wildcards, fnmatch), in the order of the patterns: the kernels an engine module lists for a launch.
std::vector<std::string> matching_kernels(const ops::OpTable& table, const ops::OpQuery& q,
                                          const std::vector<std::string>& patterns) {
  ops::OpQuery without = q;
  without.erase("kernel_source");
  const auto labels = table.distinct("kernel_source", without);
  std::vector<std::string> out;
  for (const auto& p : patterns)
    for (const auto& l : labels)
      if (fnmatch(p.c_str(), l.c_str(), 0) == 0 && std::find(out.begin(), out.end(), l) == out.end())
        out.push_back(l);
  return out;
}

/// `lookup()` on the rows of the launch's kernel: on every row when `sources` is unset, else with
/// q["kernel_source"] set to each label matching_kernels finds, the first non-null answer; nullptr when
/// none (an empty `sources` included).
template <class Lookup>
auto of_launch_kernel(const ops::OpTable& table, ops::OpQuery& q,
                      const std::optional<std::vector<std::string>>& sources, Lookup lookup)
    -> decltype(lookup()) {
  if (!sources) return lookup();
  for (const auto& kernel : matching_kernels(table, q, *sources)) {
    q["kernel_source"] = kernel;
    if (auto found = lookup()) return found;
  }
  return nullptr;
}

/// Memo key part of a kernel_sources filter: "*" = every row, else the labels.
std::string sources_key(const std::optional<std::vector<std::string>>& sources) {
  if (!sources) return "*";
  std::string k = "[";
  for (const auto& s : *sources) k += s + ",";
  return k + "]";
}

}  // namespace

std::shared_ptr<const ops::OpCurve> measured_gemm_curve(
    const ops::OpStore& store, const OpSource& src, const char* dtype, double n, double k,
    const std::optional<std::vector<std::string>>& kernel_sources) {
  if (!dtype || n <= 0 || k <= 0) return nullptr;
  static Memo<ops::OpCurve> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + src.release + "|" + dtype + "|" +
                          number_key(n) + "|" + number_key(k) + "|" + sources_key(kernel_sources);
  return memo.get(key, [&]() -> std::shared_ptr<const ops::OpCurve> {
    const auto table = store.table(src.gpu, src.backend, src.release, "gemm_perf");
    if (!table) return nullptr;
    ops::OpQuery q{{"gemm_dtype", std::string(dtype)}, {"n", n}, {"k", k}};
    return of_launch_kernel(*table, q, kernel_sources, [&]() -> std::shared_ptr<const ops::OpCurve> {
      auto curve = std::make_shared<ops::OpCurve>();
      if (!table->curve(q, "m", *curve).ok) return nullptr;
      return curve;
    });
  });
}

double OpSurface::at(double o, double i, bool* outside) const {
  if (outside) *outside = false;
  if (outer.empty()) return 0;
  auto curve_at = [&](std::size_t k, bool* out) {
    const ops::OpCurve& c = curves[k];
    // A module's block past its last length: only its work grows, linearly (DSA prefill rows: 2.93 ms at
    // 4,096 tokens, 5.91 at 8,192), not the whole latency along the axis' own rule.
    if (fixed_ms > 0 && i > c.x.back()) {
      if (out) *out = true;
      return fixed_ms + (c.y_ms.back() - fixed_ms) * i / c.x.back();
    }
    const double y = c.at(i, out);
    if (out && !measured_end.empty() && i > measured_end[k]) *out = true;
    return y;
  };
  if (o <= outer.front() || o >= outer.back()) {
    const bool below = o <= outer.front();
    const double y = curve_at(below ? 0 : outer.size() - 1, outside);
    if (outside && (o < outer.front() || o > outer.back())) *outside = true;
    return below ? y : fixed_ms + (y - fixed_ms) * o / outer.back();
  }
  const auto hi = static_cast<std::size_t>(std::upper_bound(outer.begin(), outer.end(), o) - outer.begin());
  const double t = (o - outer[hi - 1]) / (outer[hi] - outer[hi - 1]);
  bool out_lo = false, out_hi = false;
  const double y = curve_at(hi - 1, &out_lo) * (1 - t) + curve_at(hi, &out_hi) * t;
  if (outside) *outside = out_lo || out_hi;
  return y;
}

const char* measured_kv_dtype(model::DType kv) {
  return kv == model::DType::kFp8 ? "fp8" : "bfloat16";
}

std::shared_ptr<const OpSurface> batch_surface(const ops::OpTable& table, ops::OpQuery q, const char* inner) {
  // distinct() lists values as text: order the measured batch sizes numerically first.
  std::vector<double> batches;
  for (const auto& b : table.distinct("batch_size", q)) batches.push_back(std::stod(b));
  std::sort(batches.begin(), batches.end());
  auto surface = std::make_shared<OpSurface>();
  for (double batch : batches) {
    q["batch_size"] = batch;
    ops::OpCurve c;
    if (!table.curve(q, inner, c).ok) continue;
    surface->outer.push_back(batch);
    surface->curves.push_back(std::move(c));
  }
  if (surface->outer.empty()) return nullptr;
  return surface;
}

std::shared_ptr<const OpSurface> measured_attention(const ops::OpStore& store, const OpSource& src,
                                                    bool decode, const AttentionShape& shape) {
  const char* name = decode ? "generation_attention_perf" : "context_attention_perf";
  const std::string release = table_release(store, src, name);
  if (release.empty() || shape.heads <= 0 || shape.head_dim <= 0) return nullptr;
  static Memo<OpSurface> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + release + "|" + name + "|" +
                          number_key(shape.heads) + "|" + number_key(shape.kv_heads) + "|" +
                          number_key(shape.head_dim) + "|" + number_key(shape.window) + "|" +
                          measured_kv_dtype(shape.kv_dtype) + (shape.fp8_math ? "|fp8" : "|bf16");
  return memo.get(key, [&]() -> std::shared_ptr<const OpSurface> {
    const auto table = store.table(src.gpu, src.backend, release, name);
    if (!table) return nullptr;
    ops::OpQuery q{{"kv_cache_dtype", std::string(measured_kv_dtype(shape.kv_dtype))},
                   {"head_dim", shape.head_dim},
                   {"window_size", shape.window},
                   {"beam_width", 1.0},
                   {"num_key_value_heads", std::max(1.0, shape.kv_heads)},
                   {"num_heads", shape.heads}};
    if (decode)
      q["isl"] = 1.0;
    else
      q["step"] = 0.0;
    // A table that times both maths for this KV dtype (an FP8 cache read by BF16 or by FP8 FMHA kernels):
    // the launch's. A table with one math times what the engine runs with this cache, whatever it is.
    if (table->distinct("attn_dtype", q).size() > 1) q["attn_dtype"] = shape.fp8_math ? "fp8" : "bfloat16";
    return batch_surface(*table, q, decode ? "step" : "isl");
  });
}

std::shared_ptr<const OpSurface> measured_mla(const ops::OpStore& store, const OpSource& src, bool decode,
                                              const MlaShape& shape) {
  const char* name = decode ? "generation_mla_perf" : "context_mla_perf";
  const std::string release = table_release(store, src, name);
  if (release.empty() || shape.heads <= 0) return nullptr;
  static Memo<OpSurface> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + release + "|" + name + "|" +
                          number_key(shape.heads) + "|" + std::to_string(shape.tp) + "|" +
                          measured_kv_dtype(shape.kv_dtype) + "|" + sources_key(shape.kernel_sources);
  return memo.get(key, [&]() -> std::shared_ptr<const OpSurface> {
    const auto table = store.table(src.gpu, src.backend, release, name);
    if (!table) return nullptr;
    ops::OpQuery q{{"kv_cache_dtype", std::string(measured_kv_dtype(shape.kv_dtype))},
                   {"num_heads", shape.heads},
                   {"tp_size", double(shape.tp)}};
    if (decode)
      q["isl"] = 1.0;
    else
      q["step"] = 0.0;
    return of_launch_kernel(*table, q, shape.kernel_sources,
                            [&] { return batch_surface(*table, q, decode ? "step" : "isl"); });
  });
}

std::shared_ptr<const GdnKernels> measured_gdn(const ops::OpStore& store, const OpSource& src,
                                               const GdnShape& shape) {
  const char* name = "gdn_perf";
  const std::string release = table_release(store, src, name);
  if (release.empty() || shape.key_heads <= 0 || shape.value_heads <= 0) return nullptr;
  static Memo<GdnKernels> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + release + "|" + number_key(shape.key_heads) +
                          "|" + number_key(shape.value_heads) + "|" + number_key(shape.head_k_dim) + "|" +
                          number_key(shape.head_v_dim);
  return memo.get(key, [&]() -> std::shared_ptr<const GdnKernels> {
    const auto table = store.table(src.gpu, src.backend, release, name);
    if (!table) return nullptr;
    auto out = std::make_shared<GdnKernels>();
    for (const bool decode : {true, false}) {
      ops::OpQuery q{{"phase", std::string(decode ? "generation" : "context")},
                     {"head_k_dim", shape.head_k_dim},
                     {"head_v_dim", shape.head_v_dim},
                     {"num_k_heads", shape.key_heads},
                     {"num_v_heads", shape.value_heads}};
      auto labels = table->distinct("kernel_source", q);
      std::sort(labels.begin(), labels.end());
      const char* main = decode ? "fused_recurrent" : "chunk";
      const auto primary = std::find_if(labels.begin(), labels.end(),
                                        [&](const std::string& l) { return l.rfind(main, 0) == 0; });
      if (primary == labels.end()) continue;
      std::vector<std::string> kernels{*primary};
      for (const auto& l : labels)
        if (l.rfind("causal_conv1d", 0) == 0) kernels.push_back(l);
      std::vector<ops::OpCurve> curves;
      std::vector<OpSurface> surfaces;
      std::vector<std::string> used;
      for (const auto& k : kernels) {
        q["kernel_source"] = k;
        bool ok = false;
        if (decode) {
          q["seq_len"] = 1.0;
          ops::OpCurve c;
          if ((ok = table->curve(q, "batch_size", c).ok)) curves.push_back(std::move(c));
        } else if (auto sfc = batch_surface(*table, q, "seq_len")) {
          surfaces.push_back(*sfc);
          ok = true;
        }
        if (ok) used.push_back(k);
        if (!ok && k == kernels.front()) break;  // the main kernel unusable: the phase stays the roofline
      }
      if (used.empty() || used.front() != kernels.front()) continue;
      (decode ? out->decode_kernels : out->prefill_kernels) = used;
      if (decode)
        out->decode = std::move(curves);
      else
        out->prefill = std::move(surfaces);
    }
    if (out->decode.empty() && out->prefill.empty()) return nullptr;
    return out;
  });
}

const char* measured_moe_dtype(const model::WeightFormat& experts, bool mxfp8_activations) {
  switch (experts.dtype) {
    case model::DType::kBf16:
    case model::DType::kFp16:
      return "bfloat16";
    case model::DType::kFp8:
      return experts.block_scaled ? "fp8_block" : "fp8";
    case model::DType::kMxfp4:
      return mxfp8_activations ? "w4a8_mxfp4_mxfp8" : "w4a16_mxfp4";
    case model::DType::kNvfp4:
      return "nvfp4";
    default:
      return nullptr;
  }
}

std::shared_ptr<const ops::OpCurve> measured_moe_curve(const ops::OpStore& store, const OpSource& src,
                                                       const MoeShape& shape) {
  const std::string release = table_release(store, src, "moe_perf");
  if (release.empty() || !shape.dtype) return nullptr;
  static Memo<ops::OpCurve> memo;
  const std::string key =
      src.gpu + "|" + src.backend + "|" + release + "|" + shape.dtype + "|" + number_key(shape.hidden) + "|" +
      number_key(shape.inter) + "|" + number_key(shape.top_k) + "|" + number_key(shape.experts) + "|" +
      std::to_string(shape.tp) + "|" + std::to_string(shape.ep) + "|" + sources_key(shape.kernel_sources);
  return memo.get(key, [&]() -> std::shared_ptr<const ops::OpCurve> {
    const auto table = store.table(src.gpu, src.backend, release, "moe_perf");
    if (!table) return nullptr;
    auto curve = std::make_shared<ops::OpCurve>();
    ops::OpQuery q{{"moe_dtype", std::string(shape.dtype)},
                   {"hidden_size", shape.hidden},
                   {"inter_size", shape.inter},
                   {"topk", shape.top_k},
                   {"num_experts", shape.experts},
                   {"moe_tp_size", double(shape.tp)},
                   {"moe_ep_size", double(shape.ep)}};
    // Balanced routing where measured; some shapes were measured only with skewed routing, of which
    // power_law_1.01 is AIConfigurator's default workload [recalled: aiconfigurator's sdk default].
    return of_launch_kernel(*table, q, shape.kernel_sources, [&]() -> std::shared_ptr<const ops::OpCurve> {
      for (const char* distribution : {"power_law_1.01", "balanced"}) {
        q["distribution"] = std::string(distribution);
        if (table->curve(q, "num_tokens", *curve).ok) return curve;
      }
      return nullptr;
    });
  });
}

std::optional<std::pair<int, int>> nearest_moe_layout(const ops::OpStore& store, const OpSource& src,
                                                      const MoeShape& shape) {
  const std::string release = table_release(store, src, "moe_perf");
  if (release.empty() || !shape.dtype) return std::nullopt;
  const auto table = store.table(src.gpu, src.backend, release, "moe_perf");
  if (!table) return std::nullopt;
  const ops::OpQuery q{{"moe_dtype", std::string(shape.dtype)},
                       {"hidden_size", shape.hidden},
                       {"inter_size", shape.inter},
                       {"topk", shape.top_k},
                       {"num_experts", shape.experts}};
  std::optional<std::pair<int, int>> best;
  double best_d = 0;
  for (const auto& tp_text : table->distinct("moe_tp_size", q)) {
    ops::OpQuery qt = q;
    const int tp = std::atoi(tp_text.c_str());
    qt["moe_tp_size"] = double(tp);
    for (const auto& ep_text : table->distinct("moe_ep_size", qt)) {
      const int ep = std::atoi(ep_text.c_str());
      if (tp < 1 || ep < 1 || (tp == shape.tp && ep == shape.ep)) continue;
      const double d =
          std::fabs(std::log2(double(tp) / shape.tp)) + std::fabs(std::log2(double(ep) / shape.ep));
      if (d > kMoeLayoutReach + 1e-9) continue;
      const bool nearer =
          !best || d < best_d - 1e-9 ||
          (d < best_d + 1e-9 && std::make_pair(ep, tp) > std::make_pair(best->second, best->first));
      if (!nearer) continue;
      MoeShape at = shape;
      at.tp = tp, at.ep = ep;
      if (!measured_moe_curve(store, src, at)) continue;  // not the launch's kernel, or no curve
      best = std::make_pair(tp, ep), best_d = d;
    }
  }
  return best;
}

std::shared_ptr<const ops::OpCurve> measured_allreduce_curve(const ops::OpStore& store, const OpSource& src,
                                                             int gpus) {
  const std::string release = table_release(store, src, "custom_allreduce_perf");
  if (release.empty() || gpus < 2) return nullptr;
  static Memo<ops::OpCurve> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + release + "|" + std::to_string(gpus);
  return memo.get(key, [&]() -> std::shared_ptr<const ops::OpCurve> {
    const auto table = store.table(src.gpu, src.backend, release, "custom_allreduce_perf");
    if (!table) return nullptr;
    ops::OpQuery q{{"allreduce_dtype", std::string("bfloat16")}, {"num_gpus", double(gpus)}};
    // One kernel, or the graphed one of a graphed / eager pair (its kernel_source names it "graph").
    const auto kernels = table->distinct("kernel_source", q);
    if (kernels.empty()) return nullptr;
    if (kernels.size() > 1) {
      const auto graphed = std::find_if(kernels.begin(), kernels.end(), [](const std::string& k) {
        std::string lower = k;
        for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return lower.find("graph") != std::string::npos;
      });
      if (graphed == kernels.end()) return nullptr;
      q["kernel_source"] = *graphed;
    }
    auto curve = std::make_shared<ops::OpCurve>();
    if (!table->curve(q, "message_size", *curve).ok) return nullptr;
    return curve;
  });
}

}  // namespace detail
}  // namespace servelab::sim
