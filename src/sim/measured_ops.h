// servelab/sim (private): where the step model takes kernel times from measured operator tables (the ops
// module: NVIDIA AIConfigurator's silicon data) instead of the roofline — the GPU, engine and release of a
// launch matched to a measured table, and one latency-vs-tokens curve per GEMM shape.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/ops/op_store.h"

namespace servelab::sim::detail {

/// The store set by use_measured_operators (sim.h), or nullptr: roofline only.
std::shared_ptr<const ops::OpStore> measured_op_store();

/// Where a launch's kernels were measured: the store's GPU (systems name, matched through the GPU names
/// the collector recorded, hardware::gpu_by_name), the engine and the release used.
struct OpSource {
  std::string gpu;        ///< "h100_sxm"
  std::string backend;    ///< "vllm", "sglang", "trtllm"
  std::string release;    ///< measured release used for the launch's GEMMs
  bool exact_release = false;  ///< the launch's own release was measured
};

/// The source of `launch` on `gpu` in `store`: the newest measured release not newer than the launch's,
/// else the oldest measured one (kernel libraries change slowly between releases; the difference is
/// recorded). nullopt when the store has no GEMM table for this GPU and engine.
std::optional<OpSource> op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                  const hardware::GpuSpec& gpu);

/// The gemm_perf `gemm_dtype` a GEMM kernel family was measured as: bfloat16 (cuBLAS BF16), fp8 (per-tensor
/// W8A8), fp8_block (DeepGEMM / CUTLASS / TensorRT-LLM block-scaled), int4_wo (AWQ/GPTQ weight-only);
/// nullptr for the families no table measures (Marlin W8A16, INT8 W8A8, native FP4).
const char* measured_gemm_dtype(engines::GemmKernel k);

/// Latency (ms) of an [M x k] x [k x n] GEMM of `dtype` along M from the source's gemm_perf table, the
/// shape (n, k) interpolated once; nullptr when the table or the dtype is missing or the lookup fails.
std::shared_ptr<const ops::OpCurve> measured_gemm_curve(const ops::OpStore& store, const OpSource& src,
                                                        const char* dtype, double n, double k);

}  // namespace servelab::sim::detail
