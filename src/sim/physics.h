// servelab/sim (private): the physics of one GPU — kernel efficiencies by kernel family and GPU
// generation (from public kernel benchmarks, each with its source), the roofline time of a GEMM or an
// attention core, and the time of collectives inside a node and across nodes.
//
// Every time is  max(FLOPs / (peak x compute efficiency), bytes / (bandwidth x memory efficiency)),
// divided by the fitted kernel scale of the (engine, version family, GPU generation) class, plus a fixed
// per-kernel floor. Sources: shared/reference/gpu-kernel-facts.md §2 (cited per table row).
#pragma once

#include <string>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/calibration.h"

namespace servelab::sim::detail {

/// How well a kernel family uses one GPU generation.
struct KernelEfficiency {
  double compute = 0.5;  ///< fraction of the tensor peak reached at large shapes
  double memory = 0.8;   ///< fraction of HBM bandwidth reached when memory-bound
  int min_rows = 64;     ///< rows (M) are padded to this tile (wgmma m64 on Hopper, 16 on Ampere mma); a
                         ///< GEMM of fewer rows pads to 8 (swap-AB small-M kernels; gemm_time_s)
  const char* source = "";
  /// Memory-bound efficiency of a small weight matrix: reached at <= kSmallGemmWeightBytes, rising
  /// log-linearly to `memory` at >= kLargeGemmWeightBytes (gemm_memory_efficiency); 0 = `memory` at any size.
  double memory_small = 0;
  /// MoE kernels: the expert slice (intermediate columns per GPU) at which the compute efficiency is half
  /// of `compute`; at slice s it is compute x s / (s + slice_s0) (moe_time_s). 0 = no loss (no figure).
  double slice_s0 = 0;
  /// Weight-only kernels that dequantise the weights inside the GEMM mainloop (Marlin, triton_kernels
  /// MXFP4 on Hopper): the weight read is bound by the SMs' unpacking at this many bytes per second per SM
  /// as well as by HBM (moe_time_s). 0 = HBM-bound only (no figure, or a kernel that reads its MMA format).
  double upcast_Bps_per_sm = 0;
  /// MoE kernels whose row tile shrinks when the step's tokens are no more than the experts (vLLM / SGLang
  /// fused_moe Triton's default config for 16-bit weights: BLOCK_SIZE_M 16 when M <= E, else 64; block-scaled
  /// FP8 keeps 64 [recalled]): the rows each touched 16-bit expert is padded to then. 0 = `min_rows` always.
  int small_m_rows = 0;
};

/// Share of a GPU's PCIe link (GpuSpec::pcie_Bps, per direction) a sustained transfer achieves: the 80%
/// the PCIe collectives use (link_of) [estimate: Gen4/Gen5 x16 TLP and flow-control overhead, ~80-85%].
inline constexpr double kHostLinkFraction = 0.8;

/// The weight sizes between which a block-scaled FP8 GEMM's memory-bound bandwidth rises from its low to
/// its high end. DeepGEMM's M = 64 rows (gpu-kernel-facts.md §2.1: 1.7-2.7 TB/s, 50-80% of HBM) span
/// N x K = 2112 x 7168 (15 MB of FP8 weights, ~1.7 TB/s) to 7168 x 16384 (117 MB, ~2.7 TB/s) [recalled:
/// the rows of DeepGEMM's README table at commit a77009c]: a small GEMM is too short to hide its prologue,
/// scale loads and tail wave.
inline constexpr double kSmallGemmWeightBytes = 15e6;
inline constexpr double kLargeGemmWeightBytes = 117e6;

/// The routed experts' fixed costs beside their weight read (the roofline MoE; a measured moe_perf curve
/// carries its own): one fused-MoE call takes kMoeCallLatencyS more than its kernels' floors, and each
/// touched expert kMoeExpertOverheadS more than its slice's bytes at the kernel's bandwidth, seconds. So a
/// small expert slice (a wide MoE TP) streams below the bandwidth a large one reaches. Fitted by least
/// squares, latency = a + touched x t + bytes / (HBM x e), to the balanced-routing rows at 1-64 tokens (ep 1,
/// >= 32 experts) of AIConfigurator's moe_perf (shared/data/aic-ops): vLLM 0.14.0 H100 Marlin int4 a 41.7 us,
/// t 0.09 us; fused_moe BF16 23.8 / 0.24; fused_moe FP8 32.8 / 0.29; H200 Marlin int4 30.1 / 0.18; fused_moe
/// BF16 28.7 / 0.32; vLLM 0.19.0 B200 FlashInfer TRT-LLM NVFP4 22.7 / 0.09 (e 0.74-0.94, rms 6-19%). The
/// medians: a 29.4 us less the 6 MoE kernels' Hopper floors (kernel_floor_s, 6 x 2.5 us) = 14 us [derived];
/// t 0.21 us [derived]. (Reproduce: scripts/moe_overhead_fit.py.)
inline constexpr double kMoeCallLatencyS = 14e-6;
inline constexpr double kMoeExpertOverheadS = 0.21e-6;

/// Expected number of this rank's routed experts whose weights a step of `tokens` tokens reads, each token
/// routed to `top_k` of `experts` (the rank holds `experts_local` of them). Routing is skewed, not uniform:
/// uniform random routing's count, experts_local x (1 - (1 - top_k / experts)^tokens), times the ratio
/// AIConfigurator's moe_perf tables measure for their default power_law_1.01 workload against it at the load
/// lambda = tokens x top_k / experts (physics.cc kSkewedTouchedRatio: 0.78 at lambda 1, 1 below 0.35 and
/// from 8 up). 0 for no tokens or no experts.
double routed_experts_touched(double tokens, double top_k, double experts, double experts_local);

/// Roofline time of one MoE layer's routed experts, seconds before the kernel scale:
/// max(flops / (peak x eff.compute x slice / (slice + eff.slice_s0)), bytes / (HBM x eff.memory),
/// weight_bytes / (SMs x eff.upcast_Bps_per_sm)) + kMoeCallLatencyS + touched x kMoeExpertOverheadS, with
/// `bytes` the weights and activations the step moves, `weight_bytes` the expert weights it reads (their
/// share of `bytes`), `touched` the experts whose weights the step reads on this rank and `slice` the
/// intermediate columns of one expert on this GPU (intermediate / MoE TP). When the weight read bounds it,
/// the whole time is also added to `*memory_bound_s` (if given): the read's rate and the fixed costs are the
/// measured tables' (kMoeCallLatencyS, upcast_Bps_per_sm), not divided by the kernel scale (roofline_s).
double moe_time_s(double flops, double bytes, double weight_bytes, double touched, double slice,
                  double peak_flops, const KernelEfficiency& eff, const hardware::GpuSpec& gpu,
                  double* memory_bound_s = nullptr);

/// The memory-bound efficiency of `e` on a GEMM of `weight_bytes` (see KernelEfficiency::memory_small).
double gemm_memory_efficiency(const KernelEfficiency& e, double weight_bytes);

/// The efficiency of a dense-GEMM kernel family on `gen`.
KernelEfficiency gemm_efficiency(engines::GemmKernel k, hardware::Generation gen);
/// The efficiency of a fused-MoE kernel family on `gen` (grouped GEMM over the routed experts).
KernelEfficiency moe_efficiency(engines::MoeKernel k, hardware::Generation gen);
/// The efficiency of an attention kernel family on `gen`: compute for prefill (dense or absorbed MLA),
/// memory for decode (KV reads).
KernelEfficiency attention_efficiency(engines::AttentionKernel k, hardware::Generation gen);

/// The efficiency of the gated-DeltaNet linear-attention kernels (Qwen3-Next / Qwen3.5) on `gen`: vLLM and
/// SGLang both run flash-linear-attention's Triton kernels for these layers (chunk_gated_delta_rule for
/// prefill, fused_recurrent_gated_delta_rule / fused_sigmoid_gating_delta_rule_update for decode) whatever
/// the attention backend of the full-attention layers is [recalled: vllm/model_executor/layers/fla/ops,
/// sglang/srt/layers/attention/fla; unverified]. compute: the chunked prefill's share of the BF16 peak;
/// memory: the fraction of HBM bandwidth of the decode kernel's recurrent-state read + write. Both are
/// derived from the measured gdn_perf rows of shared/data/aic-ops (physics.cc gives the figures per GPU).
KernelEfficiency linear_attention_efficiency(hardware::Generation gen);

/// The tensor peak (FLOP/s) a GEMM kernel runs at: the FP8 peak for FP8 W8A8 kernels, INT8 for INT8,
/// FP4 for native FP4, else BF16 (weight-only kernels dequantise to BF16 and run BF16 MMAs).
double gemm_peak_flops(engines::GemmKernel k, const hardware::GpuSpec& gpu);

/// Roofline time max(compute_s, memory_s) of one kernel, seconds; when the kernel is memory-bound its time
/// is also added to `*memory_bound_s` (if given): that part runs at the measured bandwidth fraction and is
/// not divided by the kernel scale (calibration.h), the rest is compute time that is.
inline double roofline_s(double compute_s, double memory_s, double* memory_bound_s) {
  if (memory_s >= compute_s) {
    if (memory_bound_s) *memory_bound_s += memory_s;
    return memory_s;
  }
  return compute_s;
}

/// Roofline time of a GEMM [M x K] x [K x N] with `weight_bytes` of weights and BF16 activations in and out,
/// rows padded to the kernel's tile. Seconds, before the kernel scale; the memory-bound part is added to
/// `*memory_bound_s` (see roofline_s).
double gemm_time_s(double m, double n, double k, double weight_bytes, double peak_flops,
                   const KernelEfficiency& eff, const hardware::GpuSpec& gpu,
                   double* memory_bound_s = nullptr);

/// Fixed time of one dependent kernel inside a CUDA graph (launch-to-launch gap plus tail), seconds:
/// 2.5 us on Hopper/Blackwell, 3.5 us on Ampere/Ada [derived: typical kernel-to-kernel gaps in graph
/// replays on nsys traces of vLLM decode, recalled, unverified].
double kernel_floor_s(hardware::Generation gen);

/// The share of Calibration::api_request_ms (the fitted serial API-server work per request, measured on
/// the Jinja chat-template path: HTTP, request validation, template render, tokenisation, hand-off) that a
/// launch's API server spends per request: 1, or the fitted Calibration::harmony_api_share when chat
/// requests are rendered by openai_harmony (ExecutionPolicy::harmony_chat), which replaces the Python Jinja
/// render and the tokenizer call with one Rust call returning token ids; HTTP, validation and the hand-off
/// remain. (The CPU time per eagerly launched kernel is Calibration::eager_launch_us, fitted per engine.)
double api_work_share(const engines::ExecutionPolicy& ex, const Calibration& cal);

/// Where a collective runs.
struct CollectiveLink {
  double bandwidth_Bps = 0;  ///< achieved algorithm-independent bus bandwidth per GPU, bytes/s
  double latency_s = 0;      ///< fixed time per collective call
};

/// The link a group of `group` GPUs uses: NVSwitch / bridge / PCIe inside one node, the network when
/// `crosses_nodes`. All-reduce on a full HGX node uses the NCCL busbw of the GPU's row where known.
CollectiveLink collective_link(const hardware::ClusterSpec& cluster, int group, bool crosses_nodes);

/// Ring all-reduce of `bytes` per GPU over `n` GPUs: 2 (n-1)/n bytes / busbw + latency. Seconds; 0 for n<=1.
double allreduce_s(double bytes, int n, const CollectiveLink& link);
/// All-gather or reduce-scatter producing/consuming `bytes` per GPU in total: (n-1)/n bytes / busbw +
/// latency.
double allgather_s(double bytes, int n, const CollectiveLink& link);
/// Point-to-point send of `bytes` (pipeline stage boundary).
double p2p_s(double bytes, const CollectiveLink& link);

/// DeepEP dispatch + combine of one MoE layer for `tokens` tokens of one rank with `top_k` experts over
/// `ep` GPUs of `hidden` elements (dispatch FP8, combine BF16). Normal kernels: tokens deduplicated per
/// destination GPU, 153/158 GB/s intranode; low-latency: one copy per expert, 95/129 GB/s effective
/// [derived from DeepEP docs/legacy.md: 128 tokens x 8 x 7168 B in 77 us dispatch, x2 B in 114 us
/// combine; gpu-kernel-facts.md §2.6]. Seconds.
double deepep_s(double tokens, int top_k, int ep, double hidden, bool low_latency, bool crosses_nodes,
                const hardware::ClusterSpec& cluster);

}  // namespace servelab::sim::detail
