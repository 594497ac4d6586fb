// The MoE and GEMM rows the step model takes (measured_ops.cc): the launch's kernel's rows, one unscaled
// count per layer, rows of the same chip with other memory, the nearest measured layout, FP8 vs BF16 GEMMs,
// MXFP8 activations and TensorRT-LLM-Gen's decode padding on Blackwell; and where no row measures the
// experts, the roofline's row padding (fused_moe Triton) and upcast rate (triton_kernels on Hopper).
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "measured_test_support.h"
#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/model/model.h"
#include "servelab/ops/op_store.h"
#include "servelab/sim/sim.h"
#include "sim/measured_ops.h"
#include "sim/physics.h"
#include "sim/sim_detail.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

using detail::RankLoad;
using detail::StepModel;
using testing::corpus_model;
using testing::decode_one;
using testing::MeasuredOperators;
using testing::sglang_tp8_deepgemm;
using testing::test_launch;

// The MoE rows are the launch's kernel's (ExecutionPolicy::moe_kernel_sources, shell wildcards): the
// DeepSeek-R1 launch of the test above at 1 token takes sglang_fused_moe_triton's 0.06742784023284912 ms a
// layer when its kernel is fused_moe Triton (named, or by a wildcard); a DeepGEMM MoE (SGLang with DeepEP),
// which no SGLang table measured, keeps the roofline, and the note names the kernel.
TEST(StepModel, MoeRowsAreTheLaunchsKernels) {
  const MeasuredOperators measured;
  const auto m = model::resolve_model("deepseek-ai/DeepSeek-R1");
  const auto c = hardware::parse_cluster("8xH200");
  auto l = sglang_tp8_deepgemm(m, c, "0.5.6.post2");
  const RankLoad load = decode_one(1000);
  for (const char* pattern : {"sglang_fused_moe_triton", "sglang_fused_*"}) {
    l.execution.moe_kernel_sources = std::vector<std::string>{"no_such_kernel", pattern};
    const StepModel sm(l, c);
    EXPECT_NEAR(sm.cost({&load, 1}, 1, true, false).moe_s, 58 * 0.06742784023284912e-3, 58 * 2e-6) << pattern;
    EXPECT_EQ(sm.measured_notes()[2].rfind("MoE experts: 1 of 1 layer kinds", 0), 0u)
        << sm.measured_notes()[2];
  }
  l.execution.moe = engines::MoeKernel::kDeepGemmGrouped;
  l.execution.moe_kernel_sources = std::vector<std::string>{};
  const StepModel sm(l, c);
  EXPECT_EQ(
      sm.measured_notes()[2],
      "MoE experts: 0 of 1 layer kinds from moe_perf of h200_sxm sglang 0.5.6.post2; 1 the roofline (no "
      "table row times the deepgemm-grouped MoE kernel)");
  EXPECT_LT(sm.cost({&load, 1}, 1, true, false).moe_s, 58 * 0.06742784023284912e-3);
}

// A measured MoE time is unscaled whole, and nothing else of the MoE is: the DeepSeek-R1 TP8 H200 decode
// step above runs only measured kernels (GEMMs, MLA, MoE), elementwise bytes and a memory-bound router, all
// unscaled, so its unscaled part is its whole kernel time. The roofline's memory-bound MoE time was once
// counted unscaled beside the measured one (memory_s above gpu_s by 58 x the roofline's MoE).
TEST(StepModel, AMeasuredMoeIsCountedUnscaledOnce) {
  const MeasuredOperators measured;
  const auto m = model::resolve_model("deepseek-ai/DeepSeek-R1");
  const auto c = hardware::parse_cluster("8xH200");
  const StepModel sm(sglang_tp8_deepgemm(m, c, "0.5.6.post2"), c);
  const RankLoad load = decode_one(1000);
  const auto cost = sm.cost({&load, 1}, 1, true, false);
  EXPECT_GT(cost.moe_s, 0);
  EXPECT_NEAR(cost.memory_s, cost.gpu_s, 1e-12 + 1e-9 * cost.gpu_s);
}

// Routed experts timed on a sibling GPU: TensorRT-LLM 1.2.0rc5's moe_perf on H100 measured MXFP4 experts
// only, on H200 (the same chip: 132 SMs, 989 / 1,979 dense BF16 / FP8 TFLOPS; 4.8 vs 3.35 TB/s of HBM) also
// FP8 block-scaled ones. Qwen3-235B-A22B-FP8 at TP8 on H100 takes H200's row rescaled by the ratio of the two
// GPUs' MoE rooflines, so its experts are no faster than H200's and at most 4.8 / 3.35 times slower (it was
// the roofline alone, and an H200 predicted slower than an H100).
TEST(StepModel, MoeRowsOfTheSameChipWithOtherMemory) {
  const MeasuredOperators measured;
  const auto m = model::load_config_with_modelopt(common::data_dir() / "model-configs" / "aic" /
                                                  "Qwen--Qwen3-235B-A22B-FP8_config.json");
  auto resolve = [&](const char* gpus) {
    const auto cluster = hardware::parse_cluster(gpus);
    const auto r = engines::resolve_launch(
        engines::parse_launch_command({"trtllm-serve", "Qwen/Qwen3-235B-A22B-FP8", "--tp_size", "8"}, {},
                                      "1.2.0rc5"),
        m, cluster);
    return std::get<engines::ResolvedLaunch>(r);
  };
  const auto h100 = hardware::parse_cluster("8xH100"), h200 = hardware::parse_cluster("8xH200");
  const StepModel on_h100(resolve("8xH100"), h100), on_h200(resolve("8xH200"), h200);
  RankLoad dec;
  dec.requests = dec.decode_requests = dec.query_tokens = dec.sampled_tokens = 16;
  dec.decode_pairs[0] = dec.decode_kv_tokens[0] = 16 * 1000.0;
  const double moe_h100 = on_h100.cost({&dec, 1}, 16, true, false).moe_s;
  const double moe_h200 = on_h200.cost({&dec, 1}, 16, true, false).moe_s;
  // Decoding 16 requests the roofline's fixed costs (a call, each touched expert) weigh as much as the
  // weight read: H100 comes out ~3% slower (without the rescale the two would differ by the routers' BF16
  // roofline only, ~0.1%).
  EXPECT_GT(moe_h100, moe_h200 * 1.02);
  EXPECT_LE(moe_h100, moe_h200 * 4.8 / 3.35 * 1.0001);
  auto moe_note = [](const StepModel& sm) {
    for (const auto& n : sm.measured_notes())
      if (n.rfind("MoE experts:", 0) == 0) return n;
    return std::string();
  };
  EXPECT_EQ(moe_note(on_h200), "MoE experts: 1 of 1 layer kinds from moe_perf of h200_sxm trtllm 1.2.0rc5");
  EXPECT_EQ(moe_note(on_h100),
            "MoE experts: 0 of 1 layer kinds from moe_perf of h100_sxm trtllm 1.2.0rc5; 1 from moe_perf of "
            "h200_sxm trtllm 1.2.0rc5 (the same chip with other memory; extrapolated: its times x the ratio "
            "of the two GPUs' MoE rooflines)");
  // A GPU of other compute has no sibling: an A100's experts stay its own tables' or the roofline.
  hardware::GpuSpec sibling;
  EXPECT_FALSE(detail::sibling_op_source(measured.store, resolve("8xH100"),
                                         hardware::parse_cluster("8xA100").gpu, &sibling));
}

// A MoE layout no row measured takes the nearest measured one of the same kernel within one factor of 2
// in TP or EP (kMoeLayoutReach), rescaled by the two layouts' rooflines. TensorRT-LLM 1.2.0rc5's B200
// moe_perf has DeepGEMM FP8 block-scaled rows of DeepSeek-V3's experts at EP 16 to 256, none at EP 8: at
// EP 8 one token takes the EP 16 row (0.1226240023970604 ms a layer) rescaled, and the note says so. SGLang's
// DeepSeek-R1 at EP 8 on H200 has only TP 1 x EP 1 and TP 8 x EP 1 rows of its kernel, three factors of 2
// away: the roofline.
TEST(StepModel, AnUnmeasuredMoeLayoutTakesTheNearestWithinAFactorOfTwo) {
  const MeasuredOperators measured;
  const auto m = model::resolve_model("deepseek-ai/DeepSeek-V3");
  const auto c = hardware::parse_cluster("8xB200");
  auto resolve = [&](const char* ep) {
    auto config = engines::parse_launch_command(
        {"trtllm-serve", "deepseek-ai/DeepSeek-V3", "--tp_size", "8", "--ep_size", ep}, {}, "1.2.0rc5");
    config.moe_runner_backend = "DEEPGEMM";
    return std::get<engines::ResolvedLaunch>(engines::resolve_launch(config, m, c));
  };
  const RankLoad load = decode_one(1000);
  const double row = 0.1226240023970604e-3;
  const StepModel ep8(resolve("8"), c);
  auto moe_note = [](const StepModel& sm) {
    for (const auto& n : sm.measured_notes())
      if (n.rfind("MoE experts:", 0) == 0) return n;
    return std::string();
  };
  // The roofline of one token's experts is ~22 us a layer; the EP 16 row, rescaled, stays near its 123 us.
  const double at_ep8 = ep8.cost({&load, 1}, 1, true, false).moe_s / 58;
  // EP 8 holds twice EP 16's experts a GPU: its roofline is no smaller, so the row is scaled up, by less
  // than 2 (the fixed costs stay).
  EXPECT_GT(at_ep8, row * 1.01);
  EXPECT_LT(at_ep8, 2.0 * row + 2e-6);
  EXPECT_EQ(
      moe_note(ep8),
      "MoE experts: 1 of 1 layer kinds from moe_perf of b200_sxm trtllm 1.2.0rc5 (1 of them from rows of "
      "MoE TP 1 x EP 16, the nearest measured layout to the launch's MoE TP 1 x EP 8; extrapolated: x the "
      "ratio of the two layouts' rooflines)");

  const auto r1 = model::resolve_model("deepseek-ai/DeepSeek-R1");
  const auto h200 = hardware::parse_cluster("8xH200");
  auto sglang = sglang_tp8_deepgemm(r1, h200, "0.5.6.post2");
  sglang.layout.moe_tp = 1, sglang.layout.moe_ep = 8;
  EXPECT_EQ(moe_note(StepModel(sglang, h200)).rfind("MoE experts: 0 of 1 layer kinds", 0), 0u);
}

// The GEMM rows are the launch's kernel's (ExecutionPolicy::gemm_kernel_sources): DeepSeek-R1 at TP8 on
// B200 under SGLang, decoding one request. With DeepGEMM (its default, whose rows SGLang 0.5.9's table holds
// unnamed) all 15 GEMM shapes come from the table; with FlashInfer's groupwise FP8 GEMM (an InferenceMAX B200
// launch: SGLANG_ENABLE_FLASHINFER_GEMM), which no row times, the 14 FP8 block-scaled shapes keep the
// roofline and only the BF16 LM head is measured. B200's DeepGEMM rows at M = 1 take 18-54 us per GEMM,
// several times the weight read, so the roofline's linears are faster.
TEST(StepModel, GemmRowsAreTheLaunchsKernel) {
  const MeasuredOperators measured;
  const auto m = model::resolve_model("deepseek-ai/DeepSeek-R1");
  const auto c = hardware::parse_cluster("8xB200");
  auto l = sglang_tp8_deepgemm(m, c, "0.5.9");
  l.execution.gemm_kernel_sources = std::vector<std::string>{"sglang_deepgemm*", "sglang"};
  const RankLoad load = decode_one(1000);
  const StepModel deep(l, c);
  EXPECT_EQ(deep.measured_notes()[0], "GEMMs: 15 of 15 shapes from gemm_perf of b200_sxm sglang 0.5.9");
  l.execution.gemm = l.execution.attention_gemm = engines::GemmKernel::kFp8BlockCutlass;
  l.execution.gemm_kernel_sources = std::vector<std::string>{};
  const StepModel flashinfer(l, c);
  EXPECT_EQ(
      flashinfer.measured_notes()[0],
      "GEMMs: 1 of 15 shapes from gemm_perf of b200_sxm sglang 0.5.9; 14 the roofline (no table row times "
      "the fp8-block-cutlass GEMM)");
  EXPECT_LT(flashinfer.cost({&load, 1}, 1, true, false).linear_s,
            0.5 * deep.cost({&load, 1}, 1, true, false).linear_s);
}

// A measured FP8 GEMM is capped by the same table's BF16 row of the shape (StepModel::gemm_s): B200 SGLang
// 0.5.9's block-FP8 rows at one token are ~3x its BF16 rows (4096 x 4096: 0.0286 vs 0.0097 ms), so a
// Qwen3-32B-FP8 decode step came out slower than the BF16 model's (22.8 vs 14.0 ms TPOT at concurrency 1);
// now its linears take no longer than the BF16 model's, and at 8,192 tokens, where the FP8 rows are the
// faster (0.148 vs 0.180 ms), they keep their own time.
TEST(StepModel, MeasuredFp8GemmsAreNoSlowerThanTheirBf16Rows) {
  const MeasuredOperators measured;
  const auto c = hardware::parse_cluster("1xB200");
  auto fp8 = sglang_tp8_deepgemm(model::resolve_model("Qwen/Qwen3-32B-FP8"), c, "0.5.9");
  auto bf16 = test_launch(model::resolve_model("Qwen/Qwen3-32B"), c, 1);
  bf16.config.kind = engines::EngineKind::kSglang;
  bf16.version = "0.5.9";
  for (auto* l : {&fp8, &bf16}) {
    l->config.tp = 1;
    l->layout.tp = l->layout.gpus = l->layout.attn_tp = l->layout.dense_tp = l->layout.moe_tp = 1;
  }
  const StepModel f(fp8, c), b(bf16, c);
  const RankLoad one = decode_one(1000);
  const double f1 = f.cost({&one, 1}, 1, true, false).linear_s,
               b1 = b.cost({&one, 1}, 1, true, false).linear_s;
  EXPECT_GT(f1, 0.0);
  EXPECT_LE(f1, b1 * (1 + 1e-12));
  const auto table = measured.store.table("b200_sxm", "sglang", "0.5.9", "gemm_perf");
  ASSERT_TRUE(table);
  auto row = [&](const char* dtype, double m) {
    return table->lookup({{"gemm_dtype", std::string(dtype)}, {"m", m}, {"n", 4096.0}, {"k", 4096.0}})
        .latency_ms;
  };
  EXPECT_GT(row("fp8_block", 1), 2.5 * row("bfloat16", 1));
  EXPECT_LT(row("fp8_block", 8192), row("bfloat16", 8192));
}

// MXFP4 experts with MXFP8 activations (vLLM's VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8 on SM100) are the
// moe_perf rows "w4a8_mxfp4_mxfp8": B200's vLLM 0.24.0 table has them only for another shape, and the
// BF16-activation "w4a16_mxfp4" rows of the same kernel for gpt-oss-120b's experts (hidden 2880, 128
// experts, top 4; two layer kinds, sliding and full attention). Those stand in, same latency, and the note
// says so.
TEST(StepModel, Mxfp8ActivationsTakeTheirOwnMoeRows) {
  const MeasuredOperators measured;
  const auto m = corpus_model("gpt-oss-120b");
  const auto c = hardware::parse_cluster("1xB200");
  auto l = test_launch(m, c, 1);
  l.config.kind = engines::EngineKind::kVllm;
  l.version = "0.24.0";
  l.execution.moe = engines::MoeKernel::kFlashInferTrtllm;
  l.execution.moe_kernel_sources = std::vector<std::string>{"vllm_*mxfp4*_flashinfer_trtllm_*"};
  EXPECT_STREQ(detail::measured_moe_dtype(m.quantization.experts, true), "w4a8_mxfp4_mxfp8");
  const auto moe_note = [](const StepModel& sm) {
    for (const auto& n : sm.measured_notes())
      if (n.rfind("MoE experts:", 0) == 0) return n;
    return std::string();
  };
  EXPECT_EQ(moe_note(StepModel(l, c)).rfind("MoE experts: 2 of 2 layer kinds", 0), 0u)
      << moe_note(StepModel(l, c));
  RankLoad load;
  load.requests = load.decode_requests = load.query_tokens = load.sampled_tokens = 16;
  load.decode_pairs[0] = load.decode_kv_tokens[0] = 16 * 100.0;
  const double bf16 = StepModel(l, c).cost({&load, 1}, 16, true, false).moe_s;
  l.execution.moe_mxfp8_activations = true;
  const StepModel mxfp8(l, c);
  EXPECT_EQ(
      moe_note(mxfp8),
      "MoE experts: 2 of 2 layer kinds from moe_perf of b200_sxm vllm 0.24.0; no MXFP8-activation row of "
      "this shape: the kernel's BF16-activation (w4a16_mxfp4) rows stand in");
  EXPECT_DOUBLE_EQ(mxfp8.cost({&load, 1}, 16, true, false).moe_s, bf16);
}

// FlashInfer's TRT-LLM-gen MoE on Blackwell tiles each expert's rows by 8 to 64 tokens
// (get_tile_tokens_dim), so a decode step of gpt-oss-120b (36 layers of 128 experts, top 4, hidden 2880,
// MXFP4 experts of 2 x 2880 x 2880 up and 2880 x 2880 down) on 1xB200 at 16 tokens reads the touched
// experts' weights and is memory-bound: 128 x (1 - (1 - 4/128)^16) = 50.0 experts under uniform routing, x
// 0.904 under skewed routing at lambda 16 x 4 / 128 = 0.5 (routed_experts_touched) = 45.2 touched, each
// 3 x 2880 x 2880 x 4.25 bits; 64 rows of activations (2 x 5760 + 2 x 2880 ... BF16). Before, every touched
// expert was padded to a 128-row tile at BF16 peak and the step came out 2.5x too slow (vLLM 0.11 on B200).
TEST(StepModel, BlackwellTrtllmGenMoePadsDecodeToEightRows) {
  const auto m = corpus_model("gpt-oss-120b");
  const auto c = hardware::parse_cluster("1xB200");
  auto l = test_launch(m, c, 1);
  l.execution.moe = engines::MoeKernel::kFlashInferTrtllm;
  RankLoad load;
  load.requests = load.decode_requests = load.query_tokens = load.sampled_tokens = 16;
  load.decode_pairs[0] = load.decode_kv_tokens[0] = 16 * 100.0;
  const auto cost = StepModel(l, c).cost({&load, 1}, 16, true, false);
  const auto eff = detail::moe_efficiency(engines::MoeKernel::kFlashInferTrtllm, c.gpu.generation);
  EXPECT_EQ(eff.min_rows, 8);
  const double touched = 128 * (1 - std::pow(1 - 4.0 / 128, 16)) * 0.904;
  const double weights = touched * 3.0 * 2880 * 2880 * m.quantization.experts.bytes_per_param();
  const double bytes = weights + 16 * 4 * (2 * 2880 + 2880 + 2 * 2880) * 2.0;
  const double router = 36 * 2e-6;  // the router GEMM (16 x 2880 x 128 BF16), a few microseconds a layer
  const double fixed = detail::kMoeCallLatencyS + touched * detail::kMoeExpertOverheadS;
  EXPECT_NEAR(cost.moe_s, 36 * (bytes / (c.gpu.hbm_bandwidth_Bps * eff.memory) + fixed), router);
  EXPECT_LT(cost.moe_s, 5e-3);
}

// fused_moe Triton pads a decode step's experts to BLOCK_SIZE_M 16 when the tokens are no more than the
// experts (get_default_config), to 64 above. Qwen3-235B BF16 at TP8, 64 tokens: 110.7 touched experts (as
// above) x (384 x 4096 + 4096 x 192) BF16 weights per rank; 16-row padding leaves the weight read the bound
// (2 x 110.7 x 16 x 2.36 M params = 8.4 GFLOP at 0.50 x 989 TFLOPS x 192 / (192 + 300) = 43 us against 229 us
// of read on H100), so H200's HBM makes it faster: 64-row padding made it compute-bound (172 us) and the same
// on both, where vLLM 0.14.0's measured rows put H200 1.39x faster. At 256 tokens (above the 128 experts)
// rows pad to 64.
TEST(StepModel, TritonFusedMoeDecodePadsToSixteenRowsAndReadsAtTheHbmRate) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507");
  const int T = 64;
  RankLoad r = decode_one(1000);
  r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = T;
  r.decode_pairs[0] = r.decode_kv_tokens[0] = 1000.0 * T;
  const double touched = 128 * (1 - std::pow(1 - 8.0 / 128, T)) * 0.874;
  const double experts = touched * (384.0 * 4096 + 4096.0 * 192) * 2 + 8.0 * T * (384 + 4096 + 2 * 4096) * 2;
  const double fixed = detail::kMoeCallLatencyS + touched * detail::kMoeExpertOverheadS;
  for (const auto& [gpus, B] : {std::pair{"8xH100", 3.35e12}, std::pair{"8xH200", 4.8e12}}) {
    const auto c = hardware::parse_cluster(gpus);
    auto launch = test_launch(m, c, 8);
    launch.execution.moe = engines::MoeKernel::kTritonFused;
    const StepModel model(launch, c);
    const double router = (128.0 * 4096 * 2 + 2.0 * T * (128 + 4096)) / (B * 0.80);
    EXPECT_NEAR(model.cost({&r, 1}, T, true, false).moe_s, 94 * (experts / (B * 0.70) + fixed + router), 1e-9)
        << gpus;
    // 256 tokens: 64-row tiles, 2 x 128 x 64 x 2.36 M = 38.7 GFLOP at 0.50 x 989 T x 0.39 = 200 us, over the
    // read of every expert (all touched) on H200.
    RankLoad big = r;
    big.requests = big.decode_requests = big.query_tokens = big.sampled_tokens = 256;
    const double big_touched = 128 * (1 - std::pow(1 - 8.0 / 128, 256));
    const double params = 384.0 * 4096 + 4096.0 * 192;
    const double compute = 2 * big_touched * 64 * params / (989e12 * 0.50 * 192 / (192 + 300));
    if (B > 4e12) EXPECT_GT(model.cost({&big, 1}, 256, true, false).moe_s, 94 * compute) << gpus;
  }
}

// gpt-oss-120b's experts on one H100 through triton_kernels (MXFP4 upcast to BF16 wgmma, Marlin's Hopper
// 0.26 of 989 TFLOPS: its Ampere 0.45 x FlashAttention-2's H100 / A100 ratio 0.35 / 0.60): an 8192-token
// prefill chunk routes 8192 x 4 = 32,768 rows through all 128 experts of a layer,
// 2 x 32,768 x (5760 x 2880 + 2880 x 2880) = 1.631 TFLOP = 6.34 ms per layer at the full efficiency, and
// the unsliced experts (2880 columns at TP 1) reach 2880 / (2880 + 280) of it (KernelEfficiency::slice_s0,
// scripts/moe_slice_fit.py): 6.96 ms, compute-bound (the expert read, 128 x 24.9 M params x 0.53125 B + the
// rows' activations, is 1.12 ms at 0.70 of 3.35 TB/s); the BF16 router (128 x 2880) is memory-bound:
// (128 x 2880 x 2 + 2 x 8192 x (128 + 2880)) B at 0.80 of HBM. 36 layers: ~251 ms, and the fixed 14 us +
// 128 x 0.21 us a layer (physics.h kMoeCallLatencyS, kMoeExpertOverheadS): ~253 ms.
TEST(StepModel, GptOssExpertsOnHopperRunAtTheTritonKernelsRate) {
  const auto m = corpus_model("gpt-oss-120b");
  const auto c = hardware::parse_cluster("1xH100");
  auto launch = test_launch(m, c, 1);
  launch.execution.moe = engines::MoeKernel::kTritonKernels;
  const StepModel sm(launch, c);
  RankLoad r;
  r.requests = r.prefill_requests = r.sampled_tokens = 1;
  r.query_tokens = r.prefill_tokens = 8192;
  const double P = 989e12, B = 3.35e12;
  const double experts = 2.0 * 32768 * (5760.0 * 2880 + 2880.0 * 2880) / (P * 0.26 * 2880 / (2880 + 280));
  const double router = (128.0 * 2880 * 2 + 2.0 * 8192 * (128 + 2880)) / (B * 0.80);
  const double fixed = detail::kMoeCallLatencyS + 128 * detail::kMoeExpertOverheadS;  // 40.9 us a layer
  EXPECT_NEAR(sm.cost({&r, 1}, 1, false, false).moe_s, 36 * (experts + fixed + router), 1e-9);
  EXPECT_NEAR(36 * (experts + fixed + router), 0.2526, 0.0005);
}

// A GPU with no table of the launch's release line takes a GPU's of the same compute (stand_in_op_source):
// TensorRT-LLM 1.2.0rc5 was measured on B200, not B300 (the same 148 SMs and 2,250 / 4,500 dense BF16 / FP8
// TFLOPS; 7.75 vs 8 TB/s). Llama-3.1-70B FP8 TP4 on B300 was the roofline, 53% faster than B200's tables at
// batch 1 (141 vs 93 tok/s); now B200's rows rescaled by the two rooflines: a decode step no faster than
// B200's and at most 8 / 7.75 slower, every lookup counted as extrapolated. An H100 (3.35 TB/s) has no
// stand-in in H200 (4.8): the bandwidth is beyond kStandInBandwidthReach.
TEST(StepModel, AGpuWithoutTheReleaseLinesTablesTakesThoseOfTheSameCompute) {
  const testing::MeasuredOperators measured;
  const auto m = model::resolve_model("nvidia/Llama-3.1-70B-Instruct-FP8");
  auto resolve = [&](const hardware::ClusterSpec& c) {
    return std::get<engines::ResolvedLaunch>(engines::resolve_launch(
        engines::parse_launch_command({"trtllm-serve", "nvidia/Llama-3.1-70B-Instruct-FP8", "--tp_size", "4"},
                                      {}, "1.2.0rc5"),
        m, c));
  };
  const auto b200 = hardware::parse_cluster("4xB200"), b300 = hardware::parse_cluster("4xB300");
  const detail::StepModel on_b200(resolve(b200), b200), on_b300(resolve(b300), b300);
  const detail::RankLoad load = testing::decode_one(1000);
  const double t200 = on_b200.cost({&load, 1}, 1, true, false).gpu_s;
  const double t300 = on_b300.cost({&load, 1}, 1, true, false).gpu_s;
  EXPECT_GE(t300, t200 * 0.9999);
  EXPECT_LE(t300, t200 * 8 / 7.75 * 1.0001);
  EXPECT_GT(on_b300.measured_lookups(), 0);
  EXPECT_EQ(on_b300.extrapolated_lookups(), on_b300.measured_lookups());
  EXPECT_EQ(on_b300.measured_notes().at(0).rfind(
                "no trtllm tables of 1.2.0rc5's release line on B300: B200's stand in (the same generation, "
                "SMs and BF16 / FP8 peaks; HBM 7.75 vs 8 TB/s)",
                0),
            0u)
      << on_b300.measured_notes().at(0);
  EXPECT_EQ(on_b300.measured_notes().at(1),
            "GEMMs: 6 of 6 shapes from gemm_perf of b200_sxm trtllm 1.2.0rc5");
  hardware::GpuSpec stand_in;
  EXPECT_FALSE(detail::stand_in_op_source(measured.store, resolve(hardware::parse_cluster("4xH100")),
                                          hardware::parse_cluster("4xH100").gpu, &stand_in));
}

// A release's table beside a reuse.yaml naming a donor for it holds what that release measured anew; the
// rest is the donor's (scripts/import_ops.mjs mergeDonor). vLLM 0.22.0 on B200 measured no NVFP4 MoE rows
// (0.24.0, its donor, did): MiniMax-M2.5-NVFP4 at TP4 took the MoE roofline on B200 and 0.24.0's rows on B300
// (a reuse.yaml alone), TTFT 120 vs 86 ms at 8k in. Own rows win by group: 0.22.0's BF16 GEMMs keep their
// kernel's name alone, vllm_default (0.24.0 calls the same rows torch.nn.functional.linear; mixed, every
// lookup was ambiguous), and its FP8 GEMM rows, which 0.22.0 never measured, are 0.24.0's.
TEST(StepModel, AReleaseInheritsTheRowsItsReuseDeclarationNamesWhereItMeasuredNone) {
  const testing::MeasuredOperators measured;
  const auto m = model::resolve_model("nvidia/MiniMax-M2.5-NVFP4");
  const auto c = hardware::parse_cluster("4xB200");
  const auto l = std::get<engines::ResolvedLaunch>(engines::resolve_launch(
      engines::parse_launch_command(
          {"vllm", "serve", "nvidia/MiniMax-M2.5-NVFP4", "--tensor-parallel-size", "4"}, {}, "0.22.0"),
      m, c));
  const detail::StepModel sm(l, c);
  std::string moe, gemms;
  for (const auto& n : sm.measured_notes()) {
    if (n.rfind("MoE experts:", 0) == 0) moe = n;
    if (n.rfind("GEMMs:", 0) == 0) gemms = n;
  }
  EXPECT_EQ(moe.rfind("MoE experts: 1 of 1 layer kinds from moe_perf of b200_sxm vllm 0.22.0 (with ", 0), 0u)
      << moe;
  EXPECT_NE(moe.find(" rows of 0.24.0 where it measured none: its reuse.yaml)"), std::string::npos) << moe;
  EXPECT_EQ(gemms.rfind("GEMMs: 4 of 4 shapes from gemm_perf of b200_sxm vllm 0.22.0", 0), 0u) << gemms;
  const auto table = measured.store.table("b200_sxm", "vllm", "0.22.0", "gemm_perf");
  ASSERT_TRUE(table);
  EXPECT_EQ(table->distinct("kernel_source", {{"gemm_dtype", std::string("bfloat16")}}),
            std::vector<std::string>{"vllm_default"});
  EXPECT_EQ(table->distinct("kernel_source", {{"gemm_dtype", std::string("fp8")}}),
            std::vector<std::string>{"CutlassFP8ScaledMMLinearKernel"});
}

}  // namespace
}  // namespace servelab::sim
