// The routed experts' fixed costs (physics.h kMoeCallLatencyS, kMoeExpertOverheadS): a small expert slice
// streams below the bandwidth a large one reaches, as the measured moe_perf rows of other shapes say.
#include <gtest/gtest.h>

#include "servelab/hardware/hardware.h"
#include "servelab/ops/op_store.h"
#include "sim/physics.h"

namespace servelab::sim {
namespace {

// The same experts sliced 4x thinner: Qwen3-30B-like experts (hidden 4096, intermediate 1536, 128 experts,
// top 8) through vLLM 0.14.0's Marlin MoE with int4 weights on H100, 16 tokens with balanced routing, so 128
// rows, one per expert: every expert is touched. moe_perf (vllm_marlin_moe, int4_wo, balanced, ep 1) times
// moe_tp 1 at 0.44862934947013855 ms and moe_tp 4 at 0.14525333046913147 ms: 4x fewer weight bytes take
// 3.09x less time. The roofline MoE by hand, each slice 3 x 4096 x 1536 / tp params at 4.125 bits (int4 and
// a BF16 scale per 128 [assumption: the collector's group size]), the Marlin MoE's Hopper row (0.75 of
// 3.35 TB/s; its compute, 2 x 128 rows x 18.9 M params at 0.26 of 989 TFLOPS = 18.8 us, stays under the
// read): tp 1 reads 1245.7 MB = 495.8 us, + 14 us + 128 x 0.21 us = 536.7 us; tp 4 123.95 us + 40.88 us
// = 164.8 us: 3.26x, 5% from the measured ratio, where the weight read alone (the model before) says 4.0x.
TEST(MoeOverhead, SmallExpertSlicesStreamBelowLargeOnes) {
  const auto store = ops::OpStore::open(ops::OpStore::default_dir());
  const auto table = store.table("h100_sxm", "vllm", "0.14.0", "moe_perf");
  ASSERT_TRUE(table) << "no H100 vLLM 0.14.0 moe_perf in " << store.dir() << " (make deps builds it)";
  auto measured_ms = [&](int tp) {
    const auto row = table->lookup({{"kernel_source", std::string("vllm_marlin_moe")},
                                    {"moe_dtype", std::string("int4_wo")},
                                    {"distribution", std::string("balanced")},
                                    {"hidden_size", 4096.0},
                                    {"inter_size", 1536.0},
                                    {"topk", 8.0},
                                    {"num_experts", 128.0},
                                    {"moe_tp_size", double(tp)},
                                    {"moe_ep_size", 1.0},
                                    {"num_tokens", 16.0}});
    EXPECT_TRUE(row.ok) << row.detail;
    return row.latency_ms;
  };
  const double tp1_ms = measured_ms(1), tp4_ms = measured_ms(4);
  EXPECT_NEAR(tp1_ms, 0.44862934947013855, 1e-9);
  EXPECT_NEAR(tp4_ms, 0.14525333046913147, 1e-9);

  const auto gpu = hardware::parse_cluster("1xH100").gpu;
  const auto eff = detail::moe_efficiency(engines::MoeKernel::kMarlinMoe, gpu.generation);
  auto roofline_s = [&](int tp) {
    const double params = 3.0 * 4096 * 1536 / tp;
    return detail::moe_time_s(2.0 * 128 * params, 128 * params * 4.125 / 8, 128, 1536.0 / tp, gpu.bf16_flops,
                              eff, gpu);
  };
  const double tp1_s = roofline_s(1), tp4_s = roofline_s(4);
  EXPECT_NEAR(tp1_s, 536.68e-6, 0.01e-6);
  EXPECT_NEAR(tp4_s, 164.83e-6, 0.01e-6);
  EXPECT_NEAR(tp1_s / tp4_s, 3.256, 0.001);
  EXPECT_NEAR((tp1_s / tp4_s) / (tp1_ms / tp4_ms), 1.0, 0.06);
  // No fixed cost when no expert is touched (an empty step).
  EXPECT_DOUBLE_EQ(detail::moe_time_s(0, 0, 0, 1536, gpu.bf16_flops, eff, gpu), 0.0);
}

// Tensor parallelism slices every expert's intermediate dimension; at a compute-bound token count each GPU
// then does 1/tp of the FLOPs in thinner GEMMs, less efficiently (KernelEfficiency::slice_s0). gpt-oss-120b's
// experts (hidden 2880, intermediate 2880, 128 experts, top 4) through vLLM 0.24.0's triton_kernels MXFP4 MoE
// on H100 (vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic, balanced, ep 1) at 8192 tokens:
// moe_tp 1 takes 2.9309 ms, moe_tp 8 0.6052 ms, 4.84x less for 8x fewer FLOPs per GPU (0.605 of linear).
// The roofline by hand, 2 x 32768 rows x 24.88 M params / tp at 0.26 of 989 TFLOPS x s / (s + 280) with
// s = 2880 / tp: tp 1 6.958 ms (x 0.911), tp 8 1.409 ms (x 0.5625), each + 14 us + 128 x 0.21 us = 41 us:
// 4.83x, 0.3% from the measured ratio, where the roofline without the slice term says 7.8x.
TEST(MoeOverhead, TensorParallelSlicesLoseComputeEfficiency) {
  const auto store = ops::OpStore::open(ops::OpStore::default_dir());
  const auto table = store.table("h100_sxm", "vllm", "0.24.0", "moe_perf");
  ASSERT_TRUE(table) << "no H100 vLLM 0.24.0 moe_perf in " << store.dir() << " (make deps builds it)";
  auto measured_ms = [&](int tp) {
    const auto row = table->lookup(
        {{"kernel_source", std::string("vllm_gptossmxfp4moe_triton_oaitritonmxfp4expertsmonolithic")},
         {"moe_dtype", std::string("w4a16_mxfp4")},
         {"distribution", std::string("balanced")},
         {"hidden_size", 2880.0},
         {"inter_size", 2880.0},
         {"topk", 4.0},
         {"num_experts", 128.0},
         {"moe_tp_size", double(tp)},
         {"moe_ep_size", 1.0},
         {"num_tokens", 8192.0}});
    EXPECT_TRUE(row.ok) << row.detail;
    return row.latency_ms;
  };
  const double measured = measured_ms(1) / measured_ms(8);
  EXPECT_NEAR(measured, 4.843, 0.001);

  const auto gpu = hardware::parse_cluster("1xH100").gpu;
  const auto eff = detail::moe_efficiency(engines::MoeKernel::kTritonKernels, gpu.generation);
  EXPECT_DOUBLE_EQ(eff.slice_s0, 280);
  auto roofline_s = [&](int tp) {
    const double params = 3.0 * 2880 * 2880 / tp;  // gate, up and down of one expert's slice
    return detail::moe_time_s(2.0 * 8192 * 4 * params, 128 * params * 4.25 / 8, 128, 2880.0 / tp,
                              gpu.bf16_flops, eff, gpu);
  };
  const double model = roofline_s(1) / roofline_s(8);
  EXPECT_NEAR(model, 4.827, 0.001);
  EXPECT_NEAR(model / measured, 1.0, 0.01);
  // Without the slice term the ratio is the FLOPs' (less the fixed costs).
  auto unsliced = eff;
  unsliced.slice_s0 = 0;
  const double params8 = 3.0 * 2880 * 2880 / 8;
  EXPECT_GT(roofline_s(1) / detail::moe_time_s(2.0 * 8192 * 4 * params8, 128 * params8 * 4.25 / 8, 128, 360,
                                               gpu.bf16_flops, unsliced, gpu),
            7.7);
}

}  // namespace
}  // namespace servelab::sim
