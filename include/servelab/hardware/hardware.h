// servelab/hardware: the GPU table (datasheet peaks, memory, interconnect, with the source of every value)
// and the cluster a launch runs on (nodes x GPUs per node, the network between nodes).
//
// A new GPU is one row of src/hardware/gpus.json (embedded at build time, validated at start-up; units in
// the field names, one source per field). Values are dense (no 2:4 sparsity) peaks; the engine twin applies
// kernel efficiencies on top (src/sim). Thread-safety: every function is pure.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace servelab::hardware {

/// GPU architecture generation: decides which kernels exist (FP8 tensor cores from SM89/SM90, FP4 from
/// SM100) and keys the twin's fitted parameters.
enum class Generation { kAmpere, kAda, kHopper, kBlackwell, kCdna3, kAscend };

/// "ampere", "ada", "hopper", "blackwell", "cdna3", "ascend".
const char* generation_name(Generation g);

/// How the GPUs of one node talk to each other.
enum class LinkKind { kNvSwitch, kNvLinkBridge, kPcie, kInfinityFabric, kHccs };

/// "NVSwitch", "NVLink bridge", "PCIe", "Infinity Fabric", "HCCS".
const char* link_kind_name(LinkKind k);

/// One GPU model. Bandwidths are per GPU and per direction unless said otherwise. Every number carries
/// its source in `sources` (field name -> citation, tagged [src]/[recalled]/[derived] as in
/// shared/reference/gpu-kernel-facts.md).
struct GpuSpec {
  std::string name;                  ///< canonical: "A100-SXM-80GB", "H100-SXM", "H200", "B200", ...
  std::vector<std::string> aliases;  ///< accepted spellings (case-insensitive): "A100", "A100-80GB", ...
  std::string vendor;                ///< "NVIDIA", "AMD", "Huawei"
  Generation generation = Generation::kHopper;
  int compute_capability = 0;    ///< 80, 89, 90, 100 (NVIDIA); 0 elsewhere
  int sm_count = 0;              ///< streaming multiprocessors (CUs on AMD)
  double memory_bytes = 0;       ///< device memory as nvidia-smi / torch.cuda.mem_get_info reports it
  double hbm_bandwidth_Bps = 0;  ///< datasheet memory bandwidth, bytes/s
  double l2_bytes = 0;           ///< last-level cache, bytes
  double bf16_flops = 0;         ///< dense BF16/FP16 tensor FLOP/s
  double fp8_flops = 0;          ///< dense FP8 tensor FLOP/s; 0 = no FP8 tensor cores
  double fp4_flops = 0;          ///< dense FP4 (NVFP4/MXFP4) tensor FLOP/s; 0 = none
  double int8_ops = 0;           ///< dense INT8 tensor OP/s
  LinkKind intra_node_link = LinkKind::kNvSwitch;
  double link_Bps = 0;  ///< GPU-GPU bandwidth inside a node, per GPU per direction, bytes/s
  /// NCCL all-reduce bus bandwidth measured on a full node of this GPU (nccl-tests busbw, large messages),
  /// bytes/s; the twin's all-reduce uses it instead of the line rate when known (0 = unknown).
  double allreduce_busbw_Bps = 0;
  double pcie_Bps = 0;        ///< host link per direction, bytes/s
  int max_gpus_per_node = 8;  ///< largest single-node layout (HGX: 8)
  double tdp_watts = 0;
  /// True when the twin models this GPU's kernels; false rows are kept so that a launch on them is refused
  /// with `unsupported_reason` instead of "unknown GPU".
  bool modelled = true;
  std::string unsupported_reason;
  std::vector<std::pair<std::string, std::string>> sources;  ///< field -> source
};

/// The network between nodes (one NIC per GPU is the HGX norm).
struct NetworkSpec {
  std::string kind = "InfiniBand";  ///< "InfiniBand", "RoCE", "Ethernet"
  int nics_per_node = 8;
  double nic_Bps = 50e9;  ///< line rate per NIC per direction, bytes/s (400 Gb/s = 50 GB/s)
  /// Achieved fraction of the line rate for NCCL collectives across nodes. 0.85 [recalled, unverified:
  /// gpu-kernel-facts.md §2.5 "expect roughly 40-48 GB/s per GPU-NIC pair" on 400 Gb/s].
  double efficiency = 0.85;
  double latency_us = 5.0;  ///< per collective hop across the network [recalled]
};

/// The GPUs a launch runs on: `nodes` identical nodes of `gpus_per_node` GPUs.
struct ClusterSpec {
  GpuSpec gpu;
  int nodes = 1;
  int gpus_per_node = 8;
  NetworkSpec network;
  int total_gpus() const { return nodes * gpus_per_node; }
};

/// Parses and validates a GPU table in the form of src/hardware/gpus.json: {"gpus": [row, ...]}, each row
/// with name, aliases, vendor, generation (generation_name), compute_capability, sm_count, memory_mib,
/// hbm_bandwidth_TBps, l2_mib, bf16_tflops, fp8_tflops, fp4_tflops, int8_tops, intra_node_link
/// (link_kind_name), link_GBps, allreduce_busbw_GBps, pcie_GBps, max_gpus_per_node, tdp_watts, modelled,
/// unsupported_reason (required when not modelled) and sources (field -> citation, required for every
/// non-zero number). No row inherits from another. Throws std::invalid_argument naming the row and field
/// (a missing or negative number, a number without a source, an unknown generation or link, a name or alias
/// used twice).
std::vector<GpuSpec> parse_gpu_table(const std::string& json_text);

/// All rows of the table (the embedded gpus.json), in table order.
const std::vector<GpuSpec>& gpu_table();

/// The row whose name or alias matches `name` (case-insensitive; "-SXM", "SXM5", " SXM" suffixes and a
/// "NVIDIA " prefix ignored). Throws std::invalid_argument listing the known names, or, for an AMD Instinct
/// name without a row ("MI355X"), giving the AMD rows' unsupported_reason.
const GpuSpec& gpu_by_name(const std::string& name);

/// Parses a hardware spec:
///   "H100"        one node of H100 with the GPU's usual node size (8)
///   "4xH100"      one node of 4 GPUs
///   "16xH100"     two nodes of eight (a count above the node size must be a multiple of it)
///   "2x8xH100"    explicit nodes x GPUs per node
/// '*' may replace 'x'. Throws std::invalid_argument naming the spec and what is wrong (unknown GPU,
/// count 0, a count that does not split into whole nodes, more than 1024 GPUs).
ClusterSpec parse_cluster(const std::string& spec);

/// Parses a network spec "8x400G" / "8x400Gb/s IB" / "4x200G RoCE" (NICs per node x line rate in Gb/s,
/// optional kind). Throws std::invalid_argument naming the spec.
NetworkSpec parse_network(const std::string& spec);

/// "2x8xH100-SXM" style name of a cluster.
std::string cluster_name(const ClusterSpec& cluster);

}  // namespace servelab::hardware
