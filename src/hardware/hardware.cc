#include "servelab/hardware/hardware.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <stdexcept>

#include "hardware_generated/gpus_json.h"

namespace servelab::hardware {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double T = 1e12;  // TFLOP/s, TB/s
constexpr double G = 1e9;   // GB/s

template <typename E, std::size_t N>
E enum_by_name(const std::string& name, const E (&values)[N], const char* (*name_of)(E),
               const std::string& where) {
  std::string known;
  for (E v : values) {
    if (name == name_of(v)) return v;
    known += std::string(known.empty() ? "" : ", ") + name_of(v);
  }
  throw std::invalid_argument(where + ": unknown value '" + name + "' (known: " + known + ")");
}

// One row of gpus.json (see parse_gpu_table for the rules it must follow).
GpuSpec parse_row(const nlohmann::json& r, std::size_t index) {
  const std::string where =
      fmt::format("gpus.json row {} ({})", index,
                  r.contains("name") && r["name"].is_string() ? r["name"].get<std::string>() : "?");
  GpuSpec g;
  static const Generation kGenerations[] = {Generation::kAmpere,    Generation::kAda,   Generation::kHopper,
                                            Generation::kBlackwell, Generation::kCdna3, Generation::kAscend};
  static const LinkKind kLinks[] = {LinkKind::kNvSwitch, LinkKind::kNvLinkBridge, LinkKind::kPcie,
                                    LinkKind::kInfinityFabric, LinkKind::kHccs};
  const nlohmann::json& sources = r.at("sources");
  if (!sources.is_object())
    throw std::invalid_argument(where + ": sources must be an object (field -> citation)");
  // A number of the row: non-negative, finite; a non-zero one must cite its source.
  auto number = [&](const char* field) {
    if (!r.contains(field) || !r[field].is_number())
      throw std::invalid_argument(where + ": field " + field + " missing or not a number");
    const double v = r[field].get<double>();
    if (!(v >= 0) || !std::isfinite(v))
      throw std::invalid_argument(where + ": field " + field + " must be >= 0");
    if (v > 0 && (!sources.contains(field) || !sources[field].is_string() ||
                  sources[field].get<std::string>().empty()))
      throw std::invalid_argument(where + ": field " + field + " has no source");
    return v;
  };
  g.name = r.at("name").get<std::string>();
  g.aliases = r.at("aliases").get<std::vector<std::string>>();
  g.vendor = r.at("vendor").get<std::string>();
  g.generation = enum_by_name(r.at("generation").get<std::string>(), kGenerations, generation_name, where);
  g.compute_capability = static_cast<int>(number("compute_capability"));
  g.sm_count = static_cast<int>(number("sm_count"));
  g.memory_bytes = number("memory_mib") * kMiB;
  g.hbm_bandwidth_Bps = number("hbm_bandwidth_TBps") * T;
  g.l2_bytes = number("l2_mib") * kMiB;
  g.bf16_flops = number("bf16_tflops") * T;
  g.fp8_flops = number("fp8_tflops") * T;
  g.fp4_flops = number("fp4_tflops") * T;
  g.int8_ops = number("int8_tops") * T;
  g.intra_node_link = enum_by_name(r.at("intra_node_link").get<std::string>(), kLinks, link_kind_name, where);
  g.link_Bps = number("link_GBps") * G;
  g.allreduce_busbw_Bps = number("allreduce_busbw_GBps") * G;
  g.pcie_Bps = number("pcie_GBps") * G;
  g.max_gpus_per_node = static_cast<int>(number("max_gpus_per_node"));
  g.tdp_watts = number("tdp_watts");
  g.modelled = r.at("modelled").get<bool>();
  if (r.contains("unsupported_reason")) g.unsupported_reason = r["unsupported_reason"].get<std::string>();
  if (!g.modelled && g.unsupported_reason.empty())
    throw std::invalid_argument(where + ": a row that is not modelled must say why (unsupported_reason)");
  if (g.memory_bytes <= 0 || g.hbm_bandwidth_Bps <= 0 || g.bf16_flops <= 0 || g.max_gpus_per_node < 1)
    throw std::invalid_argument(where + ": memory, bandwidth, BF16 peak and max_gpus_per_node must be > 0");
  for (auto it = sources.begin(); it != sources.end(); ++it)
    g.sources.emplace_back(it.key(), it.value().get<std::string>());
  return g;
}

std::string normalize(std::string s);

}  // namespace

std::vector<GpuSpec> parse_gpu_table(const std::string& json_text) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::invalid_argument(std::string("gpus.json: invalid JSON: ") + e.what());
  }
  std::vector<GpuSpec> t;
  std::map<std::string, std::string>
      names;  // normalized name or alias -> row (spellings may repeat in a row)
  try {
    const auto& rows = doc.at("gpus");
    for (std::size_t i = 0; i < rows.size(); ++i) {
      GpuSpec g = parse_row(rows[i], i);
      std::vector<std::string> all = g.aliases;
      all.push_back(g.name);
      for (const auto& n : all) {
        auto [it, fresh] = names.emplace(normalize(n), g.name);
        if (!fresh && it->second != g.name)
          throw std::invalid_argument(
              fmt::format("gpus.json: '{}' of {} is already a name of {}", n, g.name, it->second));
      }
      t.push_back(std::move(g));
    }
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(std::string("gpus.json: ") + e.what());
  }
  if (t.empty()) throw std::invalid_argument("gpus.json: no GPU rows");
  return t;
}

namespace {

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
    case Generation::kAmpere:
      return "ampere";
    case Generation::kAda:
      return "ada";
    case Generation::kHopper:
      return "hopper";
    case Generation::kBlackwell:
      return "blackwell";
    case Generation::kCdna3:
      return "cdna3";
    case Generation::kAscend:
      return "ascend";
  }
  return "?";
}

const char* link_kind_name(LinkKind k) {
  switch (k) {
    case LinkKind::kNvSwitch:
      return "NVSwitch";
    case LinkKind::kNvLinkBridge:
      return "NVLink bridge";
    case LinkKind::kPcie:
      return "PCIe";
    case LinkKind::kInfinityFabric:
      return "Infinity Fabric";
    case LinkKind::kHccs:
      return "HCCS";
  }
  return "?";
}

const std::vector<GpuSpec>& gpu_table() {
  static const std::vector<GpuSpec> table = parse_gpu_table(detail::kGpusJson);
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
  // An AMD Instinct name ("MI355X", "AMD Instinct MI325X") with no row of its own: refused for the reason
  // the AMD rows give, not as a typo.
  const std::string u = normalize(name);
  const bool instinct =
      u.find("INSTINCT") != std::string::npos || u.rfind("AMD-", 0) == 0 ||
      (u.size() > 2 && u.compare(0, 2, "MI") == 0 && std::isdigit(static_cast<unsigned char>(u[2])));
  if (instinct)
    for (const auto& g : gpu_table())
      if (g.vendor == "AMD" && !g.modelled)
        throw std::invalid_argument(
            fmt::format("GPU \"{}\" is an AMD Instinct GPU, which the twin does not model: {}", name,
                        g.unsupported_reason));
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
  // A signed count ("-1xH100") is a count, refused as such below, not part of a GPU name.
  auto is_count = [](const std::string& s) {
    return all_digits(s) || (s.size() > 1 && (s[0] == '-' || s[0] == '+') && all_digits(s.substr(1)));
  };
  std::vector<std::string> counts;
  std::size_t i = 0;
  while (i + 1 < parts.size() && is_count(parts[i])) counts.push_back(parts[i++]);
  // The name as typed ("8xmi355x" -> "mi355x"): everything after the counts and their separators.
  std::size_t at = 0;
  for (std::size_t k = 0; k < i; ++k) at += parts[k].size() + 1;
  std::string name = spec.substr(at);
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
      // An exact split (the largest node size up to the maximum that divides n) and the whole nodes
      // that hold n.
      int per = per_node_max;
      while (per > 1 && n % per != 0) --per;
      const int whole = (n + per_node_max - 1) / per_node_max;
      throw std::invalid_argument(fmt::format(
          "hardware \"{}\": {} GPUs do not split into nodes of {}; say how they are split, e.g. \"{}x{}x{}\" "
          "({} nodes of {}) or \"{}x{}x{}\" ({} GPUs)",
          spec, n, per_node_max, n / per, per, c.gpu.name, n / per, per, whole, per_node_max, c.gpu.name,
          whole * per_node_max));
    }
  } else if (counts.size() == 2) {
    c.nodes = to_count(counts[0]);
    c.gpus_per_node = to_count(counts[1]);
    if (c.gpus_per_node > per_node_max)
      throw std::invalid_argument(
          fmt::format("hardware \"{}\": a {} node holds at most {} GPUs", spec, c.gpu.name, per_node_max));
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
    if (k == "IB" || k == "INFINIBAND")
      n.kind = "InfiniBand";
    else if (k == "ROCE")
      n.kind = "RoCE";
    else if (k == "ETH" || k == "ETHERNET")
      n.kind = "Ethernet", n.efficiency = 0.7;
    else
      throw std::invalid_argument(fmt::format("network \"{}\": kind must be IB, RoCE or Ethernet", spec));
  }
  return n;
}

std::string cluster_name(const ClusterSpec& c) {
  if (c.nodes == 1) return fmt::format("{}x{}", c.gpus_per_node, c.gpu.name);
  return fmt::format("{}x{}x{}", c.nodes, c.gpus_per_node, c.gpu.name);
}

}  // namespace servelab::hardware
