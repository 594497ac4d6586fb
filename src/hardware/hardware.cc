#include "servelab/hardware/hardware.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace servelab::hardware {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double T = 1e12;  // TFLOP/s, TB/s
constexpr double G = 1e9;   // GB/s

// Sources: shared/reference/gpu-kernel-facts.md §1 (datasheet table, interconnect table) and §2.5 (NCCL).
// Memory sizes are the totals nvidia-smi prints (MiB) [recalled]; vLLM's gpu_memory_utilization and
// SGLang's tiers apply to this figure.
const char* const kFactsDatasheet = "gpu-kernel-facts.md §1.1";
const char* const kFactsLinks = "gpu-kernel-facts.md §1.2";

std::vector<GpuSpec> build_table() {
  std::vector<GpuSpec> t;
  auto common_sources = [](GpuSpec& g, const std::string& peaks, const std::string& memory,
                           const std::string& link, const std::string& nccl) {
    g.sources = {{"bf16_flops/fp8_flops/int8_ops/hbm_bandwidth_Bps", peaks},
                 {"memory_bytes", memory},
                 {"link_Bps", link},
                 {"allreduce_busbw_Bps", nccl}};
  };
  {
    GpuSpec g;
    g.name = "A100-SXM-40GB";
    g.aliases = {"A100-40GB", "A100-SXM4-40GB", "A100 40GB"};
    g.vendor = "NVIDIA";
    g.generation = Generation::kAmpere;
    g.compute_capability = 80;
    g.sm_count = 108;
    g.memory_bytes = 40960 * kMiB;
    g.hbm_bandwidth_Bps = 1.555 * T;
    g.l2_bytes = 40 * kMiB;
    g.bf16_flops = 312 * T;
    g.int8_ops = 624 * T;
    g.intra_node_link = LinkKind::kNvSwitch;
    g.link_Bps = 300 * G;
    g.allreduce_busbw_Bps = 200 * G;
    g.pcie_Bps = 32 * G;
    g.tdp_watts = 400;
    common_sources(g, std::string(kFactsDatasheet) + " A100 SXM 40GB [recalled, NVIDIA A100 datasheet]",
                   "nvidia-smi 40960 MiB [recalled]", std::string(kFactsLinks) + " NVLink 3, 600 GB/s bidir",
                   "gpu-kernel-facts.md §2.5: A100 8-GPU all-reduce ~200 GB/s [src: nccl-tests #149]");
    t.push_back(g);
  }
  {
    GpuSpec g = t.back();
    g.name = "A100-SXM-80GB";
    g.aliases = {"A100", "A100-80GB", "A100-SXM4-80GB", "A100 80GB", "A100-SXM"};
    g.memory_bytes = 81920 * kMiB;
    g.hbm_bandwidth_Bps = 2.039 * T;
    common_sources(g, std::string(kFactsDatasheet) + " A100 SXM 80GB [recalled]", "nvidia-smi 81920 MiB [recalled]",
                   std::string(kFactsLinks) + " NVLink 3, 600 GB/s bidir",
                   "gpu-kernel-facts.md §2.5: A100-SXM4-80GB 8-GPU all-reduce ~200 GB/s [src: nccl-tests #149]");
    t.push_back(g);
  }
  {
    GpuSpec g = t.back();
    g.name = "A100-PCIE-80GB";
    g.aliases = {"A100-PCIE", "A100 PCIe", "A100-PCIe-80GB"};
    g.hbm_bandwidth_Bps = 1.935 * T;
    g.intra_node_link = LinkKind::kNvLinkBridge;  // pairs bridged; beyond a pair traffic goes over PCIe
    g.link_Bps = 300 * G;
    g.allreduce_busbw_Bps = 0;
    g.tdp_watts = 300;
    common_sources(g, "NVIDIA A100 PCIe datasheet: 312 TF BF16, 1,935 GB/s [recalled]",
                   "nvidia-smi 81920 MiB [recalled]", "NVLink bridge 600 GB/s bidir per pair [recalled]",
                   "not found");
    t.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "H100-SXM";
    g.aliases = {"H100", "H100-SXM5", "H100-80GB", "H100 SXM"};
    g.vendor = "NVIDIA";
    g.generation = Generation::kHopper;
    g.compute_capability = 90;
    g.sm_count = 132;
    g.memory_bytes = 81559 * kMiB;
    g.hbm_bandwidth_Bps = 3.35 * T;
    g.l2_bytes = 50 * kMiB;
    g.bf16_flops = 989 * T;
    g.fp8_flops = 1979 * T;
    g.int8_ops = 1979 * T;
    g.intra_node_link = LinkKind::kNvSwitch;
    g.link_Bps = 450 * G;
    g.allreduce_busbw_Bps = 480 * G;
    g.pcie_Bps = 64 * G;
    g.tdp_watts = 700;
    common_sources(g,
                   std::string(kFactsDatasheet) +
                       " H100 SXM [src: glennklockwood.com/garden/processors/h100; hpctech.co.jp]",
                   "nvidia-smi 81559 MiB [recalled]", std::string(kFactsLinks) + " NVLink 4, 900 GB/s bidir [src]",
                   "gpu-kernel-facts.md §2.5: H100 8-GPU all-reduce NVLS ~480 GB/s [src: nccl-tests #212]");
    t.push_back(g);
  }
  {
    GpuSpec g = t.back();
    g.name = "H100-PCIE";
    g.aliases = {"H100 PCIe", "H100-PCIe"};
    g.sm_count = 114;
    g.hbm_bandwidth_Bps = 2.0 * T;
    g.bf16_flops = 756 * T;
    g.fp8_flops = 1513 * T;
    g.int8_ops = 1513 * T;
    g.intra_node_link = LinkKind::kNvLinkBridge;
    g.link_Bps = 300 * G;
    g.allreduce_busbw_Bps = 116 * G;
    g.tdp_watts = 350;
    common_sources(g, std::string(kFactsDatasheet) + " H100 PCIe [src: archive-lib.hpctech.co.jp]",
                   "nvidia-smi 81559 MiB [recalled]", std::string(kFactsLinks) + " NVLink bridge 600 GB/s (pairs) [src]",
                   "gpu-kernel-facts.md §2.5: H100 PCIe pair ~116 GB/s [src: nccl-tests #194]");
    t.push_back(g);
  }
  {
    GpuSpec g = t[3];  // H100-SXM layout
    g.name = "H20";
    g.aliases = {"H20-96GB"};
    g.sm_count = 78;
    g.memory_bytes = 97871 * kMiB;
    g.hbm_bandwidth_Bps = 4.0 * T;
    g.l2_bytes = 60 * kMiB;
    g.bf16_flops = 148 * T;
    g.fp8_flops = 296 * T;
    g.int8_ops = 296 * T;
    g.allreduce_busbw_Bps = 0;
    g.tdp_watts = 400;
    common_sources(g, std::string(kFactsDatasheet) + " H20 [src: willitrunai.com/gpus/h20-96gb; zangshuxian.com]",
                   "nvidia-smi 97871 MiB [recalled]", std::string(kFactsLinks) + " keeps NVLink 900 GB/s [src]",
                   "not found");
    t.push_back(g);
  }
  {
    GpuSpec g = t[3];
    g.name = "H200";
    g.aliases = {"H200-SXM", "H200 SXM", "H200-141GB"};
    g.memory_bytes = 143771 * kMiB;
    g.hbm_bandwidth_Bps = 4.8 * T;
    g.allreduce_busbw_Bps = 475 * G;
    common_sources(g, std::string(kFactsDatasheet) + " H200 SXM [src: lzwjava.github.io nvidia-h200; saulelectric.com]",
                   "nvidia-smi 143771 MiB [recalled; deepseek-v32-perf-facts.md §2 unverified]",
                   std::string(kFactsLinks) + " NVLink 4, 900 GB/s bidir [src]",
                   "gpu-kernel-facts.md §2.5: H200 8-GPU all-reduce 475 GB/s [src: nccl-tests #272]");
    t.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "B200";
    g.aliases = {"B200-SXM", "HGX-B200"};
    g.vendor = "NVIDIA";
    g.generation = Generation::kBlackwell;
    g.compute_capability = 100;
    g.sm_count = 148;
    g.memory_bytes = 183359 * kMiB;
    g.hbm_bandwidth_Bps = 8.0 * T;
    g.l2_bytes = 126 * kMiB;
    g.bf16_flops = 2250 * T;
    g.fp8_flops = 4500 * T;
    g.fp4_flops = 9000 * T;
    g.int8_ops = 4500 * T;
    g.intra_node_link = LinkKind::kNvSwitch;
    g.link_Bps = 900 * G;
    g.allreduce_busbw_Bps = 0;
    g.pcie_Bps = 64 * G;
    g.tdp_watts = 1000;
    common_sources(g, std::string(kFactsDatasheet) + " B200 HGX [src: glennklockwood.com/garden/processors/B200]",
                   "179 GB visible (nvidia-smi 183359 MiB) [src: docs.vultr.com hardware-overview]",
                   std::string(kFactsLinks) + " NVLink 5, 1.8 TB/s bidir [src: docs.vultr.com]", "not found");
    t.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "L40S";
    g.aliases = {"L40S-48GB"};
    g.vendor = "NVIDIA";
    g.generation = Generation::kAda;
    g.compute_capability = 89;
    g.sm_count = 142;
    g.memory_bytes = 46068 * kMiB;
    g.hbm_bandwidth_Bps = 0.864 * T;
    g.l2_bytes = 96 * kMiB;
    g.bf16_flops = 362 * T;
    g.fp8_flops = 733 * T;
    g.int8_ops = 733 * T;
    g.intra_node_link = LinkKind::kPcie;  // no NVLink: TP traffic goes over PCIe Gen4 x16
    g.link_Bps = 32 * G;
    g.allreduce_busbw_Bps = 0;
    g.pcie_Bps = 32 * G;
    g.tdp_watts = 350;
    common_sources(g, std::string(kFactsDatasheet) + " L40S [src: mullet.se; itcreations.com]",
                   "nvidia-smi 46068 MiB [recalled]", std::string(kFactsLinks) + " no NVLink, PCIe Gen4 x16 [src]",
                   "not found");
    t.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "MI300X";
    g.vendor = "AMD";
    g.generation = Generation::kCdna3;
    g.sm_count = 304;
    g.memory_bytes = 196592 * kMiB;
    g.hbm_bandwidth_Bps = 5.3 * T;
    g.bf16_flops = 1307 * T;
    g.fp8_flops = 2615 * T;
    g.int8_ops = 2615 * T;
    g.intra_node_link = LinkKind::kInfinityFabric;
    g.link_Bps = 448 * G;
    g.pcie_Bps = 64 * G;
    g.tdp_watts = 750;
    g.modelled = false;
    g.unsupported_reason =
        "the twin models the engines' CUDA kernels only; ROCm kernel efficiencies (hipBLASLt, AITER, CK "
        "attention) are not in its tables or its validation corpus";
    common_sources(g, std::string(kFactsDatasheet) + " MI300X [src: jaredwatkins.com; awesomeagents.ai]",
                   "192 GB HBM3 [src]", std::string(kFactsLinks) + " xGMI 896 GB/s aggregate [src: gpu.blog]",
                   "not found");
    t.push_back(g);
  }
  {
    GpuSpec g;
    g.name = "Ascend-910B";
    g.aliases = {"910B", "Ascend910B", "Ascend 910B"};
    g.vendor = "Huawei";
    g.generation = Generation::kAscend;
    g.memory_bytes = 65536 * kMiB;
    g.hbm_bandwidth_Bps = 1.6 * T;
    g.bf16_flops = 320 * T;
    g.int8_ops = 640 * T;
    g.intra_node_link = LinkKind::kHccs;
    g.modelled = false;
    g.unsupported_reason =
        "Ascend 910B NPUs run CANN kernels (vllm-ascend, MindIE) whose efficiencies are not known to the twin; "
        "its bandwidth figure is low-confidence and its HCCS bandwidth was not found (gpu-kernel-facts.md §1)";
    common_sources(g, "gpu-kernel-facts.md §1.1 Ascend 910B (low confidence)", "64 GB HBM2e [src: boardor.com]",
                   "not found", "not found");
    t.push_back(g);
  }
  return t;
}

std::string normalize(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  for (const char* prefix : {"NVIDIA ", "NVIDIA-"}) {
    const std::string p(prefix);
    if (s.rfind(p, 0) == 0) s = s.substr(p.size());
  }
  std::replace(s.begin(), s.end(), ' ', '-');
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

std::string known_names() {
  std::string out;
  for (const auto& g : gpu_table()) out += (out.empty() ? "" : ", ") + g.name;
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

}  // namespace

const char* generation_name(Generation g) {
  switch (g) {
    case Generation::kAmpere: return "ampere";
    case Generation::kAda: return "ada";
    case Generation::kHopper: return "hopper";
    case Generation::kBlackwell: return "blackwell";
    case Generation::kCdna3: return "cdna3";
    case Generation::kAscend: return "ascend";
  }
  return "?";
}

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::kNvSwitch: return "NVSwitch";
    case LinkKind::kNvLinkBridge: return "NVLink bridge";
    case LinkKind::kPcie: return "PCIe";
    case LinkKind::kInfinityFabric: return "Infinity Fabric";
    case LinkKind::kHccs: return "HCCS";
  }
  return "?";
}

const std::vector<GpuSpec>& gpu_table() {
  static const std::vector<GpuSpec> table = build_table();
  return table;
}

const GpuSpec& gpu_by_name(const std::string& name) {
  std::string n = normalize(name);
  auto matches = [](const std::string& candidate, const std::string& wanted) {
    return normalize(candidate) == wanted;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& g : gpu_table()) {
      if (matches(g.name, n)) return g;
      for (const auto& a : g.aliases)
        if (matches(a, n)) return g;
    }
    // Second pass: drop a form-factor suffix ("H100-SXM5" -> "H100").
    bool stripped = false;
    for (const char* suffix : {"-SXM5", "-SXM4", "-SXM"}) {
      const std::string s(suffix);
      if (n.size() > s.size() && n.compare(n.size() - s.size(), s.size(), s) == 0) {
        n.resize(n.size() - s.size());
        stripped = true;
        break;
      }
    }
    if (!stripped) break;
  }
  throw std::invalid_argument(fmt::format("unknown GPU \"{}\" (known: {})", name, known_names()));
}

ClusterSpec parse_cluster(const std::string& spec) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : spec) {
    if (c == 'x' || c == 'X' || c == '*') {
      parts.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  parts.push_back(cur);
  // "H100X" style names never occur; but a GPU name may itself hold an 'x' (e.g. "MI300X"): re-join the
  // trailing parts that are not all digits into the name.
  std::vector<std::string> counts;
  std::size_t i = 0;
  while (i + 1 < parts.size() && all_digits(parts[i])) counts.push_back(parts[i++]);
  std::string name = parts[i];
  for (std::size_t k = i + 1; k < parts.size(); ++k) name += "X" + parts[k];
  if (name.empty()) throw std::invalid_argument(fmt::format("hardware \"{}\": no GPU name", spec));
  ClusterSpec c;
  c.gpu = gpu_by_name(name);
  const int per_node_max = c.gpu.max_gpus_per_node;
  auto to_count = [&](const std::string& s) {
    long v = 0;
    try {
      v = std::stol(s);
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("hardware \"{}\": \"{}\" is not a GPU count", spec, s));
    }
    if (v < 1 || v > 1024)
      throw std::invalid_argument(fmt::format("hardware \"{}\": counts must be 1..1024 (got {})", spec, v));
    return static_cast<int>(v);
  };
  if (counts.empty()) {
    c.nodes = 1;
    c.gpus_per_node = per_node_max;
  } else if (counts.size() == 1) {
    const int n = to_count(counts[0]);
    if (n <= per_node_max) {
      c.nodes = 1;
      c.gpus_per_node = n;
    } else if (n % per_node_max == 0) {
      c.nodes = n / per_node_max;
      c.gpus_per_node = per_node_max;
    } else {
      throw std::invalid_argument(fmt::format(
          "hardware \"{}\": {} GPUs do not split into nodes of {}; say how they are split, e.g. \"{}x{}x{}\"",
          spec, n, per_node_max, (n + per_node_max - 1) / per_node_max, n / ((n + per_node_max - 1) / per_node_max),
          c.gpu.name));
    }
  } else if (counts.size() == 2) {
    c.nodes = to_count(counts[0]);
    c.gpus_per_node = to_count(counts[1]);
    if (c.gpus_per_node > per_node_max)
      throw std::invalid_argument(fmt::format("hardware \"{}\": a {} node holds at most {} GPUs", spec,
                                              c.gpu.name, per_node_max));
  } else {
    throw std::invalid_argument(
        fmt::format("hardware \"{}\": expected GPU, NxGPU or NODESxNxGPU (e.g. 8xH200, 2x8xH100)", spec));
  }
  if (c.total_gpus() > 1024)
    throw std::invalid_argument(fmt::format("hardware \"{}\": more than 1024 GPUs", spec));
  if (c.gpu.generation == Generation::kAmpere) c.network.nic_Bps = 25e9;  // HDR 200 Gb/s in A100 clusters
  return c;
}

NetworkSpec parse_network(const std::string& spec) {
  NetworkSpec n;
  std::string s = spec;
  std::string kind;
  if (auto sp = s.find(' '); sp != std::string::npos) {
    kind = s.substr(sp + 1);
    s = s.substr(0, sp);
  }
  const auto x = s.find_first_of("xX*");
  if (x == std::string::npos)
    throw std::invalid_argument(fmt::format("network \"{}\": expected NICSxRATE, e.g. 8x400G", spec));
  std::string count = s.substr(0, x), rate = s.substr(x + 1);
  for (const char* suffix : {"Gb/s", "GB/s", "Gbps", "G", "g"}) {
    const std::string suf(suffix);
    if (rate.size() > suf.size() && rate.compare(rate.size() - suf.size(), suf.size(), suf) == 0) {
      if (suf == "GB/s")
        throw std::invalid_argument(
            fmt::format("network \"{}\": give NIC rates in Gb/s (bits), as NICs are sold: 400G", spec));
      rate.resize(rate.size() - suf.size());
      break;
    }
  }
  if (!all_digits(count) || !all_digits(rate))
    throw std::invalid_argument(fmt::format("network \"{}\": expected NICSxRATE, e.g. 8x400G", spec));
  n.nics_per_node = std::stoi(count);
  const double gbps = std::stod(rate);
  if (n.nics_per_node < 1 || n.nics_per_node > 64 || gbps < 1 || gbps > 3200)
    throw std::invalid_argument(fmt::format("network \"{}\": NICs 1..64, rate 1..3200 Gb/s", spec));
  n.nic_Bps = gbps * 1e9 / 8;
  if (!kind.empty()) {
    std::string k = normalize(kind);
    if (k == "IB" || k == "INFINIBAND") n.kind = "InfiniBand";
    else if (k == "ROCE") n.kind = "RoCE";
    else if (k == "ETH" || k == "ETHERNET") n.kind = "Ethernet", n.efficiency = 0.7;
    else throw std::invalid_argument(fmt::format("network \"{}\": kind must be IB, RoCE or Ethernet", spec));
  }
  return n;
}

std::string cluster_name(const ClusterSpec& c) {
  if (c.nodes == 1) return fmt::format("{}x{}", c.gpus_per_node, c.gpu.name);
  return fmt::format("{}x{}x{}", c.nodes, c.gpus_per_node, c.gpu.name);
}

}  // namespace servelab::hardware
