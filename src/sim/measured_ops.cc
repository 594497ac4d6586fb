// servelab/sim: the measured-operator switch and the matching of a launch to measured tables.
#include "sim/measured_ops.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <map>
#include <mutex>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/sim/sim.h"

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

/// The store's GPU (systems name) whose recorded device names resolve to `gpu`'s row.
std::optional<std::string> store_gpu(const ops::OpStore& store, const hardware::GpuSpec& gpu) {
  std::map<std::string, bool> tried;
  for (const auto& e : store.entries()) {
    if (e.device.empty() || tried[e.gpu + "|" + e.device]) continue;
    tried[e.gpu + "|" + e.device] = true;
    try {
      if (hardware::gpu_by_name(e.device).name == gpu.name) return e.gpu;
    } catch (const std::invalid_argument&) {
      // A GPU the twin has no row for (B300, ...): not this one.
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<OpSource> op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                  const hardware::GpuSpec& gpu) {
  const auto sys = store_gpu(store, gpu);
  if (!sys) return std::nullopt;
  OpSource src;
  src.gpu = *sys;
  src.backend = engines::engine_kind_name(launch.config.kind);
  auto releases = store.versions(src.gpu, src.backend, "gemm_perf");
  if (releases.empty()) return std::nullopt;
  std::sort(releases.begin(), releases.end(),
            [](const std::string& a, const std::string& b) { return release_numbers(a) < release_numbers(b); });
  const auto want = release_numbers(launch.version);
  src.release = releases.front();
  for (const auto& r : releases) {
    if (release_numbers(r) <= want) src.release = r;
  }
  src.exact_release = src.release == launch.version;
  return src;
}

const char* measured_gemm_dtype(engines::GemmKernel k) {
  using engines::GemmKernel;
  switch (k) {
    case GemmKernel::kCublasBf16: return "bfloat16";
    case GemmKernel::kFp8Native: return "fp8";
    case GemmKernel::kFp8BlockDeepGemm:
    case GemmKernel::kFp8BlockCutlass:
    case GemmKernel::kFp8BlockTrtllm: return "fp8_block";
    case GemmKernel::kMarlinW4A16:
    case GemmKernel::kAwqTrtllm: return "int4_wo";
    case GemmKernel::kMarlinW8A16:
    case GemmKernel::kInt8Native:
    case GemmKernel::kFp4Native: return nullptr;
  }
  return nullptr;
}

std::shared_ptr<const ops::OpCurve> measured_gemm_curve(const ops::OpStore& store, const OpSource& src,
                                                        const char* dtype, double n, double k) {
  if (!dtype || n <= 0 || k <= 0) return nullptr;
  const auto table = store.table(src.gpu, src.backend, src.release, "gemm_perf");
  if (!table) return nullptr;
  // Memoised per (table, dtype, shape): a fit builds the same step model many times.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const ops::OpCurve>> memo;
  const std::string key = src.gpu + "|" + src.backend + "|" + src.release + "|" + dtype + "|" +
                          std::to_string(n) + "|" + std::to_string(k);
  {
    std::lock_guard lock(mu);
    if (auto it = memo.find(key); it != memo.end()) return it->second;
  }
  auto curve = std::make_shared<ops::OpCurve>();
  const auto r = table->curve({{"gemm_dtype", std::string(dtype)}, {"n", n}, {"k", k}}, "m", *curve);
  std::shared_ptr<const ops::OpCurve> out = r.ok ? std::shared_ptr<const ops::OpCurve>(curve) : nullptr;
  std::lock_guard lock(mu);
  memo.emplace(key, out);
  return out;
}

}  // namespace detail
}  // namespace servelab::sim
