#include "sim/physics.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace servelab::sim::detail {
namespace {

using engines::AttentionKernel;
using engines::GemmKernel;
using engines::MoeKernel;
using hardware::Generation;

bool ampere_like(Generation g) {
  return g == Generation::kAmpere || g == Generation::kAda;
}

}  // namespace

KernelEfficiency gemm_efficiency(GemmKernel k, Generation g) {
  const bool amp = ampere_like(g);
  switch (k) {
    case GemmKernel::kCublasBf16:
      return amp ? KernelEfficiency{0.75, 0.80, 64, "cuBLAS BF16 on A100: ~230-250 of 312 TFLOPS [recalled]"}
                 : KernelEfficiency{
                       0.55, 0.80, 64,
                       "cuBLAS BF16 GEMM on H100/H200 in serving: ~600-750 of 989 TFLOPS at boost "
                       "clocks on large shapes (gpu-kernel-facts.md §2.1) [recalled], x ~0.8 for the "
                       "sustained 1.4-1.75 GHz of the 1.98 GHz boost under the 700 W limit "
                       "[recalled] -> ~550"};
    case GemmKernel::kFp8Native:
      return {0.60, 0.75, 64,
              "FP8 GEMM M=4096: 775-1,520 of 1,979 TFLOPS (39-77%) (gpu-kernel-facts.md §2.1)"};
    case GemmKernel::kFp8BlockDeepGemm:
      return {0.65, 0.80, 64,
              "DeepGEMM FP8: grouped contiguous 61-68% of peak; M=64 memory-bound at 1.7-2.7 TB/s (50-80%, "
              "the low end on the small weight shapes) (gpu-kernel-facts.md §2.1)",
              0.50};
    case GemmKernel::kFp8BlockCutlass:
      return {0.50, 0.70, 64,
              "FP8 block-scaled GEMM without DeepGEMM (CUTLASS / Triton w8a8): below DeepGEMM, the same "
              "fall on small shapes (x 0.7 / 0.8) [derived, unverified]",
              0.44};
    case GemmKernel::kFp8BlockTrtllm:
      // TensorRT-LLM's fp8_block_scaling_gemm (FP8BlockScalesLinearMethod on Hopper, each linear preceded
      // by an fp8_quantize_1x128 pass over its activations). No public figure: the FP8 block-scaled CUTLASS
      // row. (A value read off one study's runs was removed: it was chosen on the corpus the validation
      // holds out; the class's fitted kernel_scale carries what the corpus says, refitted per fold.)
      return {0.50, 0.70, 64,
              "TensorRT-LLM fp8_block_scaling_gemm on Hopper: no figure found, the FP8 block-scaled CUTLASS "
              "row [derived, unverified]",
              0.44};
    case GemmKernel::kInt8Native:
      return {amp ? 0.65 : 0.55, 0.80, 64, "CUTLASS INT8 W8A8 [recalled, unverified]"};
    case GemmKernel::kMarlinW8A16:
    case GemmKernel::kMarlinW4A16:
      return {0.55, 0.80, 16,
              "Marlin mixed-precision GEMM: near-ideal memory-bound speed-up to batch 16-32, BF16 MMAs "
              "beyond [recalled: Marlin README]"};
    case GemmKernel::kAwqTrtllm:
      return {0.45, 0.75, 16, "TensorRT-LLM W4A16 AWQ kernels [recalled, unverified]"};
    case GemmKernel::kFp4Native:
      return {0.55, 0.80, 128, "Blackwell FP4 tensor cores [unverified]"};
  }
  return {};
}

namespace {

/// The weight-unpacking rates of the weight-only MoE kernels on Hopper, bytes of packed weights per second
/// per SM (KernelEfficiency::upcast_Bps_per_sm): the median, over AIConfigurator's moe_perf tables of H100
/// and H200 (shared/data/aic-ops), of R / 132 SMs with R fitted by latency = a + touched x t + weight bytes /
/// R to the balanced-routing rows at 1-64 tokens (ep 1) [derived: scripts/moe_upcast_fit.py]. Both GPUs have
/// 132 SMs and 3.35 vs 4.8 TB/s of HBM; these kernels' latencies differ by 1-12% between them (BF16 / FP8
/// fused_moe: 1.3-1.4x), so their weight read is bound by the SMs, not HBM. Marlin (vLLM 0.14.0 int4 22.8 /
/// 27.0, 0.19.0 int4 5.9 / 7.1, 0.24.0 MXFP4 22.6 / 23.0 GB/s per SM on H100 / H200): 22.7; triton_kernels
/// MXFP4 (vLLM 0.24.0: 19.9 / 20.7): 20.3.
constexpr double kHopperMarlinUpcastBpsPerSm = 22.7e9;
constexpr double kHopperTritonKernelsUpcastBpsPerSm = 20.3e9;

/// KernelEfficiency::slice_s0 of a MoE kernel family on a GPU generation: the median, over the
/// kernel_source labels of that family, of the s0 scripts/moe_slice_fit.py fits to the moe_perf rows of
/// shared/data/aic-ops at 8192 and 16384 tokens (balanced routing, expert parallelism 1) [derived]:
/// fused_moe Triton: A100 50 (sglang); H100/H200 vllm_fused_moe 250, sglang 190, vLLM FP8 Triton experts
/// 445, unquantized Triton experts 355 -> 300; B200/B300 vllm_fused_moe 490, sglang 300 -> 400. Marlin:
/// A100 110; Hopper 50-240 (six labels) -> 140; Blackwell 60-165 (four) -> 155. triton_kernels matmul_ogs
/// (gpt-oss MXFP4) on Hopper 280. FlashInfer / TRT-LLM-gen on Blackwell: ten labels 165-650 -> 400. CUTLASS
/// grouped: Hopper TensorRT-LLM moe_torch_flow(_cutlass) 630 / 815, FlashInfer CUTLASS 120 (SGLang) / 260
/// (vLLM) -> 445; Blackwell 445-1885 (five) -> 1225. DeepGEMM grouped: Blackwell 1210; no Hopper rows (the
/// tables' Hopper FP8-block MoE rows are Triton, FlashInfer CUTLASS and TensorRT-LLM CUTLASS), so on Hopper
/// its Blackwell s0 x the other grouped tensor-core GEMM's Hopper / Blackwell ratio, CUTLASS's 445 / 1225:
/// 440 [derived] (a tile's prologue and epilogue weigh less against Hopper's slower main loop; before, 0: no
/// loss at any slice, which had a Qwen3-235B FP8 expert slice of 384 columns at TP4 run at DeepGEMM's
/// large-shape 62% of the FP8 peak).
/// 0 where no table row measures the family on that generation and no sibling gives a ratio.
double moe_slice_s0(MoeKernel k, Generation g) {
  const bool amp = ampere_like(g), blackwell = g == Generation::kBlackwell;
  switch (k) {
    case MoeKernel::kTritonFused:
      return amp ? 50 : blackwell ? 400 : 300;
    case MoeKernel::kMarlinMoe:
      return amp ? 110 : blackwell ? 155 : 140;
    case MoeKernel::kTritonKernels:
      return amp || blackwell ? 0 : 280;
    case MoeKernel::kFlashInferTrtllm:
      return blackwell ? 400 : 0;
    case MoeKernel::kCutlassGrouped:
      return amp ? 0 : blackwell ? 1225 : 445;
    case MoeKernel::kDeepGemmGrouped:
      return blackwell ? 1210 : g == Generation::kHopper ? 440 : 0;  // see above
  }
  return 0;
}

/// `e` of a weight-only MoE kernel that unpacks its weights in the mainloop, on `g`: on Hopper its weight
/// read is bound by the SMs' unpacking at `upcast_Bps_per_sm` (KernelEfficiency::upcast_Bps_per_sm), and
/// HBM, no longer the bound, is reached up to 0.90 (Marlin's H100 fit in scripts/moe_upcast_fit.py: 0.90 of
/// HBM) [derived]; elsewhere no table measures it and `e` stays as it is.
KernelEfficiency unpacked_on_hopper(KernelEfficiency e, Generation g, double upcast_Bps_per_sm) {
  if (g != Generation::kHopper) return e;
  e.memory = 0.90;
  e.upcast_Bps_per_sm = upcast_Bps_per_sm;
  return e;
}

/// The family's efficiencies at large expert slices (moe_efficiency without slice_s0), each with its source.
KernelEfficiency moe_efficiency_at_large_shapes(MoeKernel k, Generation g) {
  const bool amp = ampere_like(g);
  switch (k) {
    case MoeKernel::kTritonFused: {
      KernelEfficiency e{
          amp ? 0.55 : 0.50, 0.70, 64,
          "vLLM/SGLang fused_moe Triton: within 4% of FlashInfer-CUTLASS on H200 (vLLM PR #44220, "
          "gpu-kernel-facts.md §2.3)"};
      // fused_moe.py get_default_config: BLOCK_SIZE_M 16 when M <= E for 16-bit weights (block-scaled FP8:
      // 64) [recalled; vLLM 0.10-0.13 and SGLang's copy]: a decode step pads each touched expert to 16 rows.
      // Padded to 64, Qwen3-235B's TP8 decode at 64 tokens came out compute-bound and the same on H100 and
      // H200, where vLLM 0.14.0's measured moe_perf rows put H200 1.39x faster (the HBM ratio is 1.43).
      e.small_m_rows = 16;
      return e;
    }
    case MoeKernel::kDeepGemmGrouped:
      return {0.62, 0.80, 64,
              "DeepGEMM grouped FP8: contiguous 1,214-1,346 TFLOPS, masked 815-1,233 TFLOPS of 1,979 "
              "(gpu-kernel-facts.md §2.1)"};
    case MoeKernel::kCutlassGrouped:
      return {0.55, 0.75, 64, "CUTLASS grouped GEMM (TensorRT-LLM MoE) [recalled, unverified]"};
    case MoeKernel::kMarlinMoe: {
      // Hopper: Marlin is an Ampere kernel (mma.sync, cp.async; no wgmma or TMA), so its MMAs run well
      // below the SM90 peak the roofline divides by [recalled]. Scaled as the other mma.sync kernel with
      // figures on both GPUs: FlashAttention-2 reaches ~35% of peak on H100 (gpu-kernel-facts.md §2.2) and
      // ~60% on A100 (FA2 paper: 50-73%), so Marlin's Ampere 0.45 x 0.35 / 0.60 = 0.26 on Hopper [derived].
      if (amp) return {0.45, 0.75, 16, "Marlin MoE weight-only [recalled, unverified]"};
      return unpacked_on_hopper({0.26, 0.75, 16,
                                 "Marlin MoE on Hopper (mma.sync, no wgmma): its Ampere efficiency x "
                                 "FlashAttention-2's H100 / A100 ratio (0.35 / 0.60, gpu-kernel-facts.md "
                                 "§2.2) [derived]"},
                                g, kHopperMarlinUpcastBpsPerSm);
    }
    case MoeKernel::kTritonKernels: {
      // Hopper: the MXFP4 values and E8M0 scales are upcast to BF16 inside the mainloop (no FP4 MMA on
      // SM90). No public matmul_ogs Hopper compute figure was found; the value is Marlin's on Hopper (the
      // kMarlinMoe row). [unverified]
      // Rows: matmul_ogs picks BLOCK_M = clamp(next_pow2(rows per expert), 16, 128) (triton_kernels
      // opt_flags [recalled]), so a decode step pads each touched expert to 16 rows, not 64.
      if (amp)
        return {0.45, 0.70, 16, "OpenAI triton_kernels matmul_ogs, MXFP4 weights on BF16 MMAs [unverified]"};
      return unpacked_on_hopper({moe_efficiency(MoeKernel::kMarlinMoe, g).compute, 0.70, 16,
                                 "OpenAI triton_kernels matmul_ogs on Hopper, MXFP4 upcast to BF16 wgmma: no "
                                 "figure found, Marlin MoE's on Hopper (gpt-oss-120b on H100, vLLM 0.10.2) "
                                 "[unverified]"},
                                g, kHopperTritonKernelsUpcastBpsPerSm);
    }
    case MoeKernel::kFlashInferTrtllm:
      // Rows: the TRT-LLM-gen MoE runner tiles each expert's rows by tile_tokens_dim = next_pow2(tokens x
      // top_k / experts) clamped to [8, 64] (FlashInfer fused_moe get_tile_tokens_dim [recalled]), so a
      // decode step pads each touched expert to 8 rows, not to a 128-row tile.
      // Memory: scripts/moe_overhead_fit.py's fit to vLLM 0.19.0's B200 FlashInfer TRT-LLM NVFP4 rows: 0.94
      // of HBM [derived].
      return {0.55, 0.94, 8,
              "FlashInfer / TRT-LLM-gen MoE on Blackwell [unverified]; weight read 0.94 of HBM "
              "(scripts/moe_overhead_fit.py) [derived]; expert rows padded to an 8-64 token "
              "tile (FlashInfer get_tile_tokens_dim) [recalled]"};
  }
  return {};
}

}  // namespace

KernelEfficiency moe_efficiency(MoeKernel k, Generation g) {
  KernelEfficiency e = moe_efficiency_at_large_shapes(k, g);
  e.slice_s0 = moe_slice_s0(k, g);
  return e;
}

KernelEfficiency attention_efficiency(AttentionKernel k, Generation g) {
  const bool amp = ampere_like(g);
  switch (k) {
    case AttentionKernel::kFlashAttn3:
      return {
          0.60, 0.80, 64,
          "FlashAttention-3 BF16 forward up to 740 TFLOPS (75%) on H100, causal lower (gpu-kernel-facts.md "
          "§2.2)"};
    case AttentionKernel::kFlashAttn2:
      return amp ? KernelEfficiency{0.60, 0.75, 64,
                                    "FlashAttention-2 on A100: 50-73% of peak [recalled, FA2 paper]"}
                 : KernelEfficiency{0.35, 0.75, 64,
                                    "FlashAttention-2 on H100: ~35% of peak (gpu-kernel-facts.md §2.2)"};
    case AttentionKernel::kFlashInfer:
      return {amp ? 0.55 : 0.50, 0.80, 64,
              "FlashInfer (FA2-style prefill, split-KV decode) [recalled, unverified]"};
    case AttentionKernel::kTriton:
      // Ampere: vLLM's TRITON_ATTN (triton_unified_attention, the only backend with attention sinks on
      // SM80) walks the paged KV cache in tiles of one KV block (16 keys) per iteration, so long prefills
      // run below FlashAttention-2 [recalled, unverified]. No public figure: the same value as on Hopper.
      // (A value read off one study's runs was removed: it was chosen on the corpus the validation holds
      // out.)
      return KernelEfficiency{0.30, 0.60, 64,
                              "Triton attention: below FlashAttention-2 [derived, unverified]"};
    case AttentionKernel::kTrtllmGen:
      return {amp ? 0.50 : 0.60, 0.80, 64, "TensorRT-LLM fmha / XQA [recalled, unverified]"};
    case AttentionKernel::kXformers:
      return {0.35, 0.70, 64, "xFormers memory-efficient attention [recalled, unverified]"};
    case AttentionKernel::kFlexAttention:
      return {0.30, 0.60, 64, "FlexAttention [unverified]"};
    case AttentionKernel::kFlashMla:
      return {0.67, 0.90, 64,
              "FlashMLA dense decode: 3,000 GB/s memory-bound, 660 TFLOPS compute-bound on H800 "
              "(gpu-kernel-facts.md §2.2)"};
    case AttentionKernel::kFlashMlaSparse:
      return {0.65, 0.85, 64,
              "FlashMLA sparse prefill 640 TFLOPS, sparse FP8 decode 410 TFLOPS (gpu-kernel-facts.md §2.2)"};
    case AttentionKernel::kCutlassMla:
      return {0.60, 0.85, 128, "CUTLASS MLA (Blackwell) [unverified]"};
    case AttentionKernel::kFlashInferMla:
      return {0.50, 0.80, 64, "FlashInfer MLA [unverified]"};
    case AttentionKernel::kTritonMla:
      return {0.25, 0.60, 64, "Triton MLA [unverified]"};
    case AttentionKernel::kTrtllmMla:
      return {0.55, 0.85, 64, "TensorRT-LLM MLA kernels [unverified]"};
  }
  return {};
}

KernelEfficiency linear_attention_efficiency(Generation g) {
  // Derived from NVIDIA's measured gated-DeltaNet rows (shared/data/aic-ops linear_attention/gdn_perf,
  // Qwen3.5 0.8B-397B shapes), as shares of this model's counts: compute = 6 x value heads x dk x dv FLOPs
  // per prefill token over the chunked kernel's time (chunk_gated_delta_rule, FLA Triton, 8-32k tokens per
  // call); memory = the BF16 recurrent state (+ conv state) read and written per request over the decode
  // kernel's time (fused_recurrent_gated_delta_rule, 256-1024 requests). The chunked prefill is far below the
  // tensor peak: its intra-chunk triangular solves and cumulative sums are small, serial and not on wgmma.
  if (ampere_like(g))
    // A100: SGLang 0.5.10 decode rows 0.53-0.54. No chunked-prefill rows on A100: Hopper's ~40 TFLOP/s
    // scaled by SMs x clock (108 x 1.41 GHz vs 132 x 1.98 GHz) = ~23 TFLOP/s of 312 [derived].
    return {0.075, 0.54, 16, "FLA Triton gated DeltaNet on Ampere [derived from aic-ops A100/H100 rows]"};
  if (g == Generation::kBlackwell)
    // B200: prefill 0.024-0.027 (TRT-LLM 1.3, SGLang 0.5.14, vLLM 0.22 medians); decode 0.31-0.51 (median
    // of the engines' medians ~0.39).
    return {0.025, 0.39, 64, "FLA Triton gated DeltaNet on Blackwell [derived from aic-ops B200 rows]"};
  // H100/H200: prefill 0.024-0.058 by engine (SGLang 0.5.14 0.024-0.026, TRT-LLM 1.3 0.04-0.058, vLLM 0.22
  // 0.046; median ~0.04); decode 0.35-0.61 (median ~0.45). vLLM's FlashInfer GDN prefill (0.24 rows, median
  // 0.07-0.10) is not this kernel.
  return {0.04, 0.45, 64, "FLA Triton gated DeltaNet on Hopper [derived from aic-ops H100/H200 rows]"};
}

double gemm_peak_flops(GemmKernel k, const hardware::GpuSpec& gpu) {
  switch (k) {
    case GemmKernel::kFp8Native:
    case GemmKernel::kFp8BlockDeepGemm:
    case GemmKernel::kFp8BlockCutlass:
    case GemmKernel::kFp8BlockTrtllm:
      return gpu.fp8_flops > 0 ? gpu.fp8_flops : gpu.bf16_flops;
    case GemmKernel::kInt8Native:
      return gpu.int8_ops > 0 ? gpu.int8_ops : gpu.bf16_flops;
    case GemmKernel::kFp4Native:
      return gpu.fp4_flops > 0 ? gpu.fp4_flops : gpu.bf16_flops;
    default:
      return gpu.bf16_flops;
  }
}

double gemm_time_s(double m, double n, double k, double weight_bytes, double peak_flops,
                   const KernelEfficiency& eff, const hardware::GpuSpec& gpu, double* memory_bound_s) {
  if (m <= 0 || n <= 0 || k <= 0) return 0.0;
  // Fewer rows than the tile: small-M kernels swap the operands (the weight's N takes the instruction's M,
  // the tokens its N, in steps of 8) rather than pad the tokens to a full tile [recalled: the swap-AB
  // kernels of TensorRT-LLM, DeepGEMM and CUTLASS for decode]. Only a GPU whose FLOPs are low against its
  // bandwidth (H20: 148 TFLOPS BF16, 4 TB/s) sees it: padded to 64, batch-1 decode of Qwen3-8B came out
  // compute-bound at 2.1x the H100's TPOT (new-user trial).
  const double tile = m < eff.min_rows ? 8.0 : static_cast<double>(eff.min_rows);
  const double rows = std::ceil(m / tile) * tile;
  const double compute = 2.0 * rows * n * k / (peak_flops * eff.compute);
  const double bytes = weight_bytes + 2.0 * m * (n + k);  // BF16 activations in and out
  const double memory = bytes / (gpu.hbm_bandwidth_Bps * gemm_memory_efficiency(eff, weight_bytes));
  return roofline_s(compute, memory, memory_bound_s);
}

namespace {
/// (lambda = tokens x top-k / experts, distinct experts touched under power_law_1.01 routing / under uniform
/// random routing): the median over the power_law_1.01 rows of AIConfigurator's moe_perf tables (vLLM 0.14.0
/// H100 / H200 Marlin int4, fused_moe BF16 / FP8; vLLM 0.19.0 B200 FlashInfer TRT-LLM NVFP4; ep 1, >= 32
/// experts; 140-520 rows per half-octave bin) of the experts each row's latency implies under its table's
/// balanced-row fit of kMoeCallLatencyS's model, capped at 1 [derived: scripts/moe_routing_fit.py].
/// power_law_1.01 is AIConfigurator's default workload [recalled: aiconfigurator's sdk default]. The dip
/// at lambda 1 is where its generator switches regime (tokens x top-k = experts).
constexpr std::array<std::array<double, 2>, 11> kSkewedTouchedRatio{{{0.25, 1.000},
                                                                     {0.3536, 1.000},
                                                                     {0.5, 0.904},
                                                                     {0.7071, 0.869},
                                                                     {1, 0.783},
                                                                     {1.414, 0.903},
                                                                     {2, 0.851},
                                                                     {2.828, 0.850},
                                                                     {4, 0.874},
                                                                     {5.657, 0.916},
                                                                     {8, 1.000}}};
}  // namespace

double routed_experts_touched(double tokens, double top_k, double experts, double experts_local) {
  if (tokens <= 0 || experts <= 0 || experts_local <= 0 || top_k <= 0) return 0.0;
  const double uniform = experts_local * (1.0 - std::pow(1.0 - std::min(1.0, top_k / experts), tokens));
  const double lambda = tokens * top_k / experts;
  const auto& r = kSkewedTouchedRatio;
  if (lambda <= r.front()[0] || lambda >= r.back()[0]) return uniform;
  std::size_t i = 1;
  while (lambda > r[i][0]) ++i;
  const double w = std::log(lambda / r[i - 1][0]) / std::log(r[i][0] / r[i - 1][0]);
  return uniform * (r[i - 1][1] + w * (r[i][1] - r[i - 1][1]));
}

double moe_time_s(double flops, double bytes, double weight_bytes, double touched, double slice,
                  double peak_flops, const KernelEfficiency& eff, const hardware::GpuSpec& gpu,
                  double* memory_bound_s) {
  if (touched <= 0) return 0.0;
  const double sliced = eff.slice_s0 > 0 && slice > 0 ? slice / (slice + eff.slice_s0) : 1.0;
  double memory = bytes / (gpu.hbm_bandwidth_Bps * eff.memory);
  if (eff.upcast_Bps_per_sm > 0 && gpu.sm_count > 0)
    memory = std::max(memory, weight_bytes / (gpu.sm_count * eff.upcast_Bps_per_sm));
  const double compute = flops / (peak_flops * eff.compute * sliced);
  const double t = std::max(compute, memory) + kMoeCallLatencyS + touched * kMoeExpertOverheadS;
  if (memory_bound_s && memory >= compute) *memory_bound_s += t;
  return t;
}

double gemm_memory_efficiency(const KernelEfficiency& e, double weight_bytes) {
  if (e.memory_small <= 0 || weight_bytes >= kLargeGemmWeightBytes) return e.memory;
  if (weight_bytes <= kSmallGemmWeightBytes) return e.memory_small;
  const double x = std::log(weight_bytes / kSmallGemmWeightBytes) /
                   std::log(kLargeGemmWeightBytes / kSmallGemmWeightBytes);
  return e.memory_small + x * (e.memory - e.memory_small);
}

double kernel_floor_s(Generation gen) {
  return ampere_like(gen) ? 3.5e-6 : 2.5e-6;
}

double api_work_share(const engines::ExecutionPolicy& ex, const Calibration& cal) {
  return ex.harmony_chat ? cal.harmony_api_share : 1.0;
}

CollectiveLink collective_link(const hardware::ClusterSpec& c, int group, bool crosses_nodes) {
  CollectiveLink l;
  if (crosses_nodes) {
    // One NIC per GPU on HGX nodes; fewer NICs share them.
    const double share = std::min(1.0, double(c.network.nics_per_node) / std::max(1, c.gpus_per_node));
    l.bandwidth_Bps = c.network.nic_Bps * c.network.efficiency * share;
    l.latency_s = (c.network.latency_us + 10.0) * 1e-6;
    return l;
  }
  const auto& g = c.gpu;
  switch (g.intra_node_link) {
    case hardware::LinkKind::kNvSwitch:
    case hardware::LinkKind::kInfinityFabric:
      // NCCL's measured all-reduce busbw on a full node where known, else ~80% of the line rate
      // (gpu-kernel-facts.md §2.5: ~370 of 450 GB/s on non-NVLS collectives).
      l.bandwidth_Bps = g.allreduce_busbw_Bps > 0 && group >= 8 ? g.allreduce_busbw_Bps : 0.8 * g.link_Bps;
      l.latency_s = 10e-6;  // small all-reduce latency ~10-20 us (gpu-kernel-facts.md §2.8) [estimate]
      break;
    case hardware::LinkKind::kNvLinkBridge:
      l.bandwidth_Bps = group <= 2 ? (g.allreduce_busbw_Bps > 0 ? g.allreduce_busbw_Bps : 0.8 * g.link_Bps)
                                   : kHostLinkFraction * g.pcie_Bps;
      l.latency_s = group <= 2 ? 12e-6 : 25e-6;
      break;
    case hardware::LinkKind::kPcie:
    case hardware::LinkKind::kHccs:
      l.bandwidth_Bps = kHostLinkFraction * std::max(g.pcie_Bps, g.link_Bps);
      l.latency_s = 25e-6;
      break;
  }
  return l;
}

double allreduce_s(double bytes, int n, const CollectiveLink& link) {
  if (n <= 1 || bytes <= 0) return 0.0;
  return link.latency_s + 2.0 * (n - 1) / n * bytes / link.bandwidth_Bps;
}

double allgather_s(double bytes, int n, const CollectiveLink& link) {
  if (n <= 1 || bytes <= 0) return 0.0;
  return link.latency_s + double(n - 1) / n * bytes / link.bandwidth_Bps;
}

double p2p_s(double bytes, const CollectiveLink& link) {
  if (bytes <= 0) return 0.0;
  return link.latency_s + bytes / link.bandwidth_Bps;
}

double deepep_s(double tokens, int top_k, int ep, double hidden, bool low_latency, bool crosses_nodes,
                const hardware::ClusterSpec& cluster) {
  if (tokens <= 0 || ep <= 1) return 0.0;
  // Copies sent per token: low-latency kernels send one per selected expert; normal kernels one per
  // distinct destination GPU, n (1 - (1 - 1/n)^k) for uniform routing.
  const double copies = low_latency ? top_k : ep * (1.0 - std::pow(1.0 - 1.0 / ep, top_k));
  const double remote = double(ep - 1) / ep;
  const double dispatch_bytes = tokens * copies * remote * hidden * 1.0;  // FP8
  const double combine_bytes = tokens * copies * remote * hidden * 2.0;   // BF16
  double dispatch_bw = low_latency ? 95e9 : 153e9, combine_bw = low_latency ? 129e9 : 158e9;
  if (crosses_nodes) {
    const auto net = collective_link(cluster, ep, true);
    dispatch_bw = std::min(dispatch_bw, net.bandwidth_Bps);
    combine_bw = std::min(combine_bw, net.bandwidth_Bps);
  }
  const double fixed = low_latency ? 2 * 15e-6 : 2 * 40e-6;  // [estimate, unverified]
  return fixed + dispatch_bytes / dispatch_bw + combine_bytes / combine_bw;
}

}  // namespace servelab::sim::detail
