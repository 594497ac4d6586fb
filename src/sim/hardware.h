// servelab/sim: GPU datasheet table and the node the twin runs on.
#pragma once

#include <string>

namespace servelab::sim {

/// One GPU model's datasheet numbers. Sources are listed per entry in hardware.cc.
struct Hardware {
  std::string name;                  ///< "H100", "H200", "B200"
  double hbm_bytes = 0;              ///< usable device memory as the driver reports it (bytes)
  double hbm_bandwidth_bps = 0;      ///< bytes/s
  double fp8_dense_flops = 0;        ///< dense (no 2:4 sparsity) FP8 tensor FLOP/s
  double bf16_dense_flops = 0;       ///< dense BF16 tensor FLOP/s
  double nvlink_bandwidth_bps = 0;   ///< per GPU per direction, bytes/s
  int sm_count = 0;
  int compute_capability = 0;        ///< 90 = SM90 (Hopper), 100 = SM100 (Blackwell)
};

/// A node of identical GPUs connected by NVLink/NVSwitch.
struct Cluster {
  Hardware gpu;
  int num_gpus = 8;
};

/// The table entry for "H100", "H200" or "B200" (case-insensitive, "-SXM"/" SXM" suffix allowed).
/// Throws std::invalid_argument listing the known names.
Hardware hardware_by_name(const std::string& name);

/// Parses "8xH200" (also "8*H200", "H200" = 8 GPUs). Throws std::invalid_argument naming the spec.
Cluster parse_cluster(const std::string& spec);

}  // namespace servelab::sim
