#include "sim/hardware.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace servelab::sim {
namespace {

// Datasheet values. Dense tensor FLOP/s are the datasheet "with sparsity" figures halved.
// H100 SXM5: NVIDIA H100 Tensor Core GPU datasheet (2023): 80 GB HBM3, 3.35 TB/s, FP8 3958 TF (sparse)
//   -> 1979 dense, BF16 1979 (sparse) -> 989.5 dense, NVLink 900 GB/s bidirectional, 132 SMs, SM90.
//   Usable memory as nvidia-smi reports: 81559 MiB.
// H200 SXM: NVIDIA H200 datasheet (2024): 141 GB HBM3e, 4.8 TB/s, FP8 3958 TF sparse -> 1979 dense,
//   BF16 1979 sparse -> 989.5 dense, NVLink 900 GB/s bidirectional, 132 SMs (GH100 die), SM90.
//   Usable memory 143771 MiB (nvidia-smi; perf-facts §2 [unverified] and §5).
// B200 SXM (HGX B200): NVIDIA Blackwell datasheet (2024): 180 GB HBM3e usable (192 GB class), 8 TB/s,
//   FP8 9 PF sparse -> 4.5 PF dense, BF16 4.5 PF sparse -> 2.25 PF dense, NVLink5 1.8 TB/s bidirectional,
//   148 SMs, SM100. Usable memory 183359 MiB (nvidia-smi on HGX B200).
constexpr double kMiB = 1024.0 * 1024.0;

const Hardware kTable[] = {
    {"H100", 81559 * kMiB, 3.35e12, 1979e12, 989.5e12, 450e9, 132, 90},
    {"H200", 143771 * kMiB, 4.8e12, 1979e12, 989.5e12, 450e9, 132, 90},
    {"B200", 183359 * kMiB, 8.0e12, 4500e12, 2250e12, 900e9, 148, 100},
};

std::string upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

}  // namespace

Hardware hardware_by_name(const std::string& name) {
  std::string n = upper(name);
  for (const char* suffix : {"-SXM5", "-SXM", " SXM", "SXM"}) {
    const std::string s(suffix);
    if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) n.resize(n.size() - s.size());
  }
  for (const auto& h : kTable)
    if (h.name == n) return h;
  throw std::invalid_argument("unknown GPU \"" + name + "\" (known: H100, H200, B200)");
}

Cluster parse_cluster(const std::string& spec) {
  Cluster c;
  const auto x = spec.find_first_of("xX*");
  if (x == std::string::npos || x == 0) {
    c.gpu = hardware_by_name(spec);
    c.num_gpus = 8;
    return c;
  }
  const std::string count = spec.substr(0, x);
  if (!std::all_of(count.begin(), count.end(), [](unsigned char ch) { return std::isdigit(ch); }))
    return Cluster{hardware_by_name(spec), 8};
  c.num_gpus = std::stoi(count);
  if (c.num_gpus < 1 || c.num_gpus > 1024)
    throw std::invalid_argument("--hardware \"" + spec + "\": GPU count must be 1..1024");
  c.gpu = hardware_by_name(spec.substr(x + 1));
  return c;
}

}  // namespace servelab::sim
