// Step times against hand calculations (roofline per operator with the kernel efficiencies of
// physics.cc): a memory-bound decode, a compute-bound prefill, A100 vs H100, MoE expert touching, and
// the collectives of TP16 across two nodes vs PP2 x TP8.
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
using testing::prefill_one;
using testing::sglang_tp8_deepgemm;
using testing::test_launch;

// One memory-bound GEMM: max(2 x ceil(M/64)*64 x N x K / (peak x eff), (N x K x B + 2 M (N + K)) / (bw x
// eff_mem)), cuBLAS BF16 on Hopper: 0.55 / 0.80.
double bf16_gemm(double m, double n, double k, double peak, double bw) {
  const double rows = std::ceil(m / 64) * 64;
  return std::max(2 * rows * n * k / (peak * 0.55), (n * k * 2 + 2 * m * (n + k)) / (bw * 0.80));
}

// Qwen3-32B, one H100, one request decoding at context 1000. Per layer: q (N 8192, K 5120), kv (2048,
// 5120), o (5120, 8192), gate_up (51200, 5120), down (5120, 25600), all weight-read bound; attention
// reads 1000 x 4096 B of KV at FA3's 0.80 of 3.35 TB/s. LM head: 151,936 x 5120 BF16 weights plus the
// sampler's 3 passes over 151,936 FP32 logits at 0.8 of HBM. Sum over 64 layers: ~24 ms, the weight
// read 65.5 GB / (0.8 x 3.35 TB/s).
// Marlin's MXFP4 MoE pads hidden to 256 and the intermediate slice to 128 (vllm_launch.cc): gpt-oss's
// 2880 x 2 x 2880 w13 becomes 3072 x 2 x 2944 = 5888 x 3072; w2 at moe_tp 2: 3072 x round_up(1440, 128)
// = 3072 x 1536. Unpadded policies keep the shapes.
TEST(StepModel, MarlinPadsTheExpertShapes) {
  engines::ExecutionPolicy ex;
  model::Linear w13{"experts.w13", 2880, 5760, 128, model::Split::kColumn};
  model::Linear w2{"experts.w2", 2880, 2880, 128, model::Split::kRow};
  auto e = detail::expert_shape(w13, 1, ex);
  EXPECT_DOUBLE_EQ(e.n, 5760);
  EXPECT_DOUBLE_EQ(e.k, 2880);
  ex.expert_pad_hidden = 256, ex.expert_pad_intermediate = 128;
  e = detail::expert_shape(w13, 1, ex);
  EXPECT_DOUBLE_EQ(e.n, 5888);
  EXPECT_DOUBLE_EQ(e.k, 3072);
  e = detail::expert_shape(w2, 2, ex);
  EXPECT_DOUBLE_EQ(e.n, 3072);
  EXPECT_DOUBLE_EQ(e.k, 1536);
}

TEST(StepModel, Qwen3_32bDecodeIsTheWeightRead) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  const StepModel sm(test_launch(m, c, 1), c);
  const RankLoad load = decode_one(1000);
  const auto cost = sm.cost({&load, 1}, 1, true, false);
  const double P = 989e12, B = 3.35e12;
  const double layer = bf16_gemm(1, 8192, 5120, P, B) + bf16_gemm(1, 2048, 5120, P, B) +
                       bf16_gemm(1, 5120, 8192, P, B) + bf16_gemm(1, 51200, 5120, P, B) +
                       bf16_gemm(1, 5120, 25600, P, B) +
                       std::max(1000 * 2.0 * 64 * 256 / (P * 0.60), 1000 * 4096.0 / (B * 0.80));
  const double head = bf16_gemm(1, 151936, 5120, P, B) + 3.0 * 151936 * 4 / (B * 0.8);
  EXPECT_NEAR(cost.gpu_s, 64 * layer + head, 1e-9);
  EXPECT_NEAR(cost.gpu_s, 65.52e9 / (0.8 * 3.35e12), 0.001);  // ~24.4 ms
  // Every dense GEMM of this step streams its weights: all of it but the attention core is the
  // memory-bound part that kernel_scale does not touch.
  const double attn = 64 * std::max(1000 * 2.0 * 64 * 256 / (P * 0.60), 1000 * 4096.0 / (B * 0.80));
  EXPECT_NEAR(cost.memory_s, 64 * layer + head - attn, 1e-9);
  EXPECT_DOUBLE_EQ(cost.comm_s, 0.0);
  EXPECT_DOUBLE_EQ(cost.floor_s, 64 * 12 * 2.5e-6);  // 12 graphed kernels per dense layer
  EXPECT_DOUBLE_EQ(cost.launch_kernels, 0.0);
  // The same step eagerly: every kernel launched from the CPU (Calibration::eager_launch_us each).
  const auto eager = StepModel(test_launch(m, c, 1), c).cost({&load, 1}, 1, false, false);
  EXPECT_GT(eager.launch_kernels, 0.0);
}

// --cpu-offload-gb 20: each step also reads the 20 GiB kept in host memory over PCIe Gen5 x16 (64 GB/s
// per direction, at 80%): 21,474,836,480 B / 51.2e9 B/s = 0.4194 s, memory-bound (not kernel-scaled); an
// offload above the weights reads the weights once (65,522,892,800 B / 51.2e9 = 1.2797 s).
TEST(StepModel, CpuOffloadedWeightsAreReadOverPcieEveryStep) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  const RankLoad load = decode_one(1000);
  const auto base = StepModel(test_launch(m, c, 1), c).cost({&load, 1}, 1, true, false);
  auto l = test_launch(m, c, 1);
  l.memory.cpu_offload_bytes = 20.0 * 1024 * 1024 * 1024;
  const auto off = StepModel(l, c).cost({&load, 1}, 1, true, false);
  EXPECT_NEAR(off.gpu_s - base.gpu_s, 21474836480.0 / 51.2e9, 1e-9);
  EXPECT_NEAR(off.memory_s - base.memory_s, 21474836480.0 / 51.2e9, 1e-9);
  l.memory.cpu_offload_bytes = 1e12;
  const auto all = StepModel(l, c).cost({&load, 1}, 1, true, false);
  EXPECT_NEAR(all.gpu_s - base.gpu_s, 65522892800.0 / 51.2e9, 1e-9);
}

// The same decode step with GEMM times from the measured tables (use_measured_operators; H100 vLLM
// 0.19.0's gemm_perf, BF16, M = 1): q 8192 x 5120 0.03117155697610643 ms, kv 2048 x 5120
// 0.012287110918098025, o 5120 x 8192 0.031735999716652766, gate_up 51200 x 5120 0.19412710931566027
// (rows of the table), down 5120 x 25600 interpolated in K, the LM head 151,936 x 5120 beyond the largest
// measured N (65,536: scaled linearly). The attention core from generation_attention_perf (vllm_flash_attn,
// batch 1, 64 / 8 heads of 128, BF16 KV): rows at KV length 511 (0.011306667079528173 ms) and 1023
// (0.011674666156371435 ms), linear at 1000. The sampler stays physics. A measurement is not divided by
// the kernel scale: all of the measured time is in memory_s.
TEST(StepModel, MeasuredGemmsReplaceTheRoofline) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.version = "0.19.0";
  const StepModel sm(l, c);
  const RankLoad load = decode_one(1000);
  const auto cost = sm.cost({&load, 1}, 1, true, false);
  const auto table = store.table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(table);
  auto ms = [&](double n, double k) {
    const auto r = table->lookup({{"gemm_dtype", std::string("bfloat16")}, {"m", 1.0}, {"n", n}, {"k", k}});
    EXPECT_TRUE(r.ok) << r.detail;
    return r.latency_ms;
  };
  EXPECT_NEAR(ms(8192, 5120), 0.03117155697610643, 1e-7);
  EXPECT_NEAR(ms(51200, 5120), 0.19412710931566027, 1e-7);
  const double gemms = 1e-3 * (0.03117155697610643 + 0.012287110918098025 + 0.031735999716652766 +
                               0.19412710931566027 + ms(5120, 25600));
  const double B = 3.35e12;
  const double attn = 1e-3 * (0.011306667079528173 +
                              (1000.0 - 511) / (1023 - 511) * (0.011674666156371435 - 0.011306667079528173));
  const double head = 1e-3 * ms(151936, 5120);
  const double sampler = 3.0 * 151936 * 4 / (B * 0.8);
  // The elementwise kernels of one token (ElementwiseBytesOfAQwen3_32bLayer) at 80% of HBM.
  const double elementwise = 64 * (86016.0 + 194560.0) / (B * 0.8);
  EXPECT_NEAR(cost.elementwise_s, elementwise, 1e-12);
  EXPECT_NEAR(cost.gpu_s, 64 * (gemms + attn) + elementwise + head + sampler, 1e-7);
  EXPECT_NEAR(cost.memory_s, 64 * (gemms + attn) + elementwise + head + sampler, 1e-7);
  EXPECT_NEAR(cost.attention_s, 64 * attn, 1e-9);
  // Every lookup is counted, once per layer kind (5 GEMMs and the attention of the one kind, the LM head);
  // the LM head's N lies beyond the grid and is reported as such.
  EXPECT_EQ(sm.measured_lookups(), 5 + 1 + 1);
  EXPECT_EQ(sm.extrapolated_lookups(), 1);
  ASSERT_EQ(sm.measured_notes().size(), 3u);
  EXPECT_EQ(sm.measured_notes()[0], "GEMMs: 6 of 6 shapes from gemm_perf of h100_sxm vllm 0.19.0");
  // Measured and roofline agree on this weight-bound step within a few per cent (both ~24 ms).
  EXPECT_NEAR(cost.gpu_s, 65.52e9 / (0.8 * 3.35e12), 0.002);
  // A release between measured ones takes the newest not newer (vLLM 0.17.0 -> 0.14.0). One older than
  // every measured release takes the oldest only within its release line (TensorRT-LLM 1.2.0rc1 ->
  // 1.2.0rc5); vLLM 0.10.1, older than every line measured (0.14 on), stays the roofline and the note
  // names the releases there are. A GPU without tables (H20) stays the roofline.
  l.version = "0.17.0";
  auto src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  EXPECT_EQ(src->release, "0.14.0");
  EXPECT_FALSE(src->exact_release);
  l.config.kind = engines::EngineKind::kTrtllm;
  l.version = "1.2.0rc1";
  src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  EXPECT_EQ(src->release, "1.2.0rc5");
  l.config.kind = engines::EngineKind::kVllm;
  l.version = "0.10.1";
  EXPECT_FALSE(detail::op_source(store, l, c.gpu));
  const StepModel older(l, c);
  ASSERT_EQ(older.measured_notes().size(), 1u);
  EXPECT_EQ(
      older.measured_notes()[0].rfind(
          "no measured vllm release on h100_sxm at or before the launch's 0.10.1 or in its release line "
          "(measured: 0.14.0, 0.19.0",
          0),
      0u)
      << older.measured_notes()[0];
  EXPECT_FALSE(detail::op_source(store, l, hardware::gpu_by_name("H20")));
}

// The elementwise bytes of a Qwen3-32B layer (hidden 5120, 64 / 8 heads of 128, SwiGLU 25,600) per token,
// BF16: two fused residual-add + RMSNorm passes read and write the hidden state and the residual, 2 x 4 x
// 5120 x 2 = 81,920 B; RoPE reads and writes q and k, 2 x (8192 + 1024) x 2 = 36,864 B; the KV-cache write
// reads k and v and stores them in BF16, 2 x 1024 x (2 + 2) = 8,192 B; SwiGLU reads gate and up and writes
// their product, 3 x 25,600 x 2 = 153,600 B. Attention side 40,960 + 36,864 + 8,192 = 86,016 B, FFN side
// 40,960 + 153,600 = 194,560 B. At TP2 with an FP8 KV cache: 32 / 4 heads, 12,800 of SwiGLU.
TEST(StepModel, ElementwiseBytesOfAQwen3_32bLayer) {
  const auto m = corpus_model("qwen3-32b");
  engines::ParallelLayout p;
  auto b = detail::elementwise_bytes(m.layers.front().layer, m.hidden_size, p, model::DType::kBf16);
  EXPECT_DOUBLE_EQ(b.attention, 86016.0);
  EXPECT_DOUBLE_EQ(b.ffn, 194560.0);
  p.attn_tp = p.dense_tp = 2;
  b = detail::elementwise_bytes(m.layers.front().layer, m.hidden_size, p, model::DType::kFp8);
  EXPECT_DOUBLE_EQ(b.attention, 40960.0 + 2.0 * (4096 + 512) * 2 + 2.0 * 512 * (2 + 1));
  EXPECT_DOUBLE_EQ(b.ffn, 40960.0 + 3.0 * 12800 * 2);
}

// Routed experts and prefill attention from the measured tables. Qwen3-235B-A22B (94 layers of 128 experts,
// top 8, hidden 4096, expert intermediate 1536, BF16) at TP4 on H100, vLLM: moe_perf of vLLM 0.14.0 (the
// newest measured release not newer than the launch's 0.17.0) row vllm_fused_moe, power_law_1.01 (the
// skewed routing the twin models; balanced takes 0.2232 ms), moe_tp_size 4, num_tokens 8: 0.17569920420646667
// ms per layer; the router (8 x 4096 x 128 BF16) stays the roofline, well
// under 2 us a layer. Prefill of one 1000-token prompt (pairs 1000^2 / 2): the attention core is
// context_attention_perf at batch 1, isl 1000, 16 / 1 heads of 128 (64 / 4 over TP4), as the table says.
TEST(StepModel, MeasuredMoeAndPrefillAttention) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507");
  const auto c = hardware::parse_cluster("4xH100");
  auto l = test_launch(m, c, 4);
  l.version = "0.17.0";
  const StepModel sm(l, c);
  RankLoad dec;
  dec.requests = dec.decode_requests = dec.query_tokens = dec.sampled_tokens = 8;
  dec.decode_pairs[0] = dec.decode_kv_tokens[0] = 8 * 100.0;
  const auto cost = sm.cost({&dec, 1}, 8, true, false);
  // Two all-reduces a layer (after o_proj, after the TP MoE) of 8 x 4096 BF16 elements over 4 GPUs, from
  // custom_allreduce_perf (vLLM's custom all-reduce, the CUDA-graph rows; the row at 32,768 elements):
  // 0.00531328022480011 ms each.
  const auto allreduce = store.table("h100_sxm", "vllm", "0.14.0", "custom_allreduce_perf");
  ASSERT_TRUE(allreduce);
  const auto ar = allreduce->lookup({{"allreduce_dtype", std::string("bfloat16")},
                                     {"kernel_source", std::string("vLLM_custom_graph")},
                                     {"num_gpus", 4.0},
                                     {"message_size", 8.0 * 4096}});
  ASSERT_TRUE(ar.ok) << ar.detail;
  EXPECT_NEAR(ar.latency_ms, 0.00531328022480011, 1e-9);
  EXPECT_NEAR(cost.comm_s, 94 * 2 * ar.latency_ms * 1e-3, 1e-9);
  EXPECT_NEAR(cost.moe_s, 94 * 0.17569920420646667e-3, 94 * 2e-6);
  EXPECT_GT(cost.moe_s, 94 * 0.17569920420646667e-3);
  ASSERT_EQ(sm.measured_notes().size(), 4u);
  EXPECT_EQ(sm.measured_notes()[2],
            "MoE experts: 1 of 1 layer kinds from moe_perf of h100_sxm vllm 0.14.0, the newest measured "
            "release at or before the launch's 0.17.0");

  const RankLoad pre = prefill_one(1000);
  const auto table = store.table("h100_sxm", "vllm", "0.14.0", "context_attention_perf");
  ASSERT_TRUE(table);
  const auto row = table->lookup({{"batch_size", 1.0},
                                  {"isl", 1000.0},
                                  {"num_heads", 16.0},
                                  {"num_key_value_heads", 1.0},
                                  {"head_dim", 128.0},
                                  {"window_size", 0.0},
                                  {"kv_cache_dtype", std::string("bfloat16")},
                                  {"step", 0.0},
                                  {"beam_width", 1.0}});
  ASSERT_TRUE(row.ok) << row.detail;
  EXPECT_NEAR(sm.cost({&pre, 1}, 1, false, false).attention_s, 94 * row.latency_ms * 1e-3, 1e-9);
}

// TensorRT-LLM's context_attention_perf times two maths over an FP8 KV cache (attn_dtype bfloat16 and fp8).
// Qwen3-32B at TP1 on H100 under 1.2.0rc5, one 1024-token prompt, FP8 cache: its BF16 QKV projection
// emits BF16 Q, so its 64 layers take the bfloat16 rows; with an FP8 (per-tensor, QDQ) projection, the fp8
// rows (FP8 context FMHA).
TEST(StepModel, AttentionMathOverAnFp8CacheFollowsTheQkvProjection) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.config.kind = engines::EngineKind::kTrtllm;
  l.version = "1.2.0rc5";
  l.kv_dtype = model::DType::kFp8;
  const auto table = store.table("h100_sxm", "trtllm", "1.2.0rc5", "context_attention_perf");
  ASSERT_TRUE(table);
  auto row = [&](const char* math) {
    const auto r = table->lookup({{"batch_size", 1.0},
                                  {"isl", 1024.0},
                                  {"num_heads", 64.0},
                                  {"num_key_value_heads", 8.0},
                                  {"head_dim", 128.0},
                                  {"window_size", 0.0},
                                  {"kv_cache_dtype", std::string("fp8")},
                                  {"attn_dtype", std::string(math)},
                                  {"step", 0.0},
                                  {"beam_width", 1.0}});
    EXPECT_TRUE(r.ok) << r.detail;
    return r.latency_ms;
  };
  ASSERT_NE(row("bfloat16"), row("fp8"));
  const RankLoad pre = prefill_one(1024);
  EXPECT_NEAR(StepModel(l, c).cost({&pre, 1}, 1, false, false).attention_s, 64 * row("bfloat16") * 1e-3,
              1e-9);
  l.execution.gemm = l.execution.attention_gemm = engines::GemmKernel::kFp8Native;
  EXPECT_NEAR(StepModel(l, c).cost({&pre, 1}, 1, false, false).attention_s, 64 * row("fp8") * 1e-3, 1e-9);
}

// DeepSeek-R1 (61 MLA layers of 128 heads, 58 of them MoE: 256 experts of 2048, top 8, FP8 block) at TP8
// on H200 under SGLang 0.5.6.post2, resolved by its Hub id from AIConfigurator's config copy
// (model-configs/aic). Decode of one request at context 1000: the MLA core is generation_mla_perf at batch
// 1, 16 heads a GPU (tp_size 8), BF16 KV, rows at KV length 511 (0.016977599263191222 ms) and 1023
// (0.01740639954805374 ms), linear at 1000; the routed experts are moe_perf's fp8_block row of this shape
// (sglang_fused_moe_triton, moe_tp_size 8; SGLang measured it only with power_law_1.01 routing) at 1 token:
// 0.06742784023284912 ms, plus the router (7168 x 256 BF16, the roofline, under 2 us). Prefill of one
// 1000-token prompt: context_mla_perf at batch 1, isl 1000, as the table interpolates it.
TEST(StepModel, MeasuredMlaAndMoeOfDeepseekR1OnH200) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = model::resolve_model("deepseek-ai/DeepSeek-R1");
  EXPECT_NE(m.config_source.find("aic"), std::string::npos) << m.config_source;
  const auto c = hardware::parse_cluster("8xH200");
  auto l = sglang_tp8_deepgemm(m, c, "0.5.6.post2");
  const StepModel sm(l, c);
  const RankLoad load = decode_one(1000);
  const auto cost = sm.cost({&load, 1}, 1, true, false);
  const double mla = 1e-3 * (0.016977599263191222 +
                             (1000.0 - 511) / (1023 - 511) * (0.01740639954805374 - 0.016977599263191222));
  EXPECT_NEAR(cost.attention_s, 61 * mla, 1e-9);
  EXPECT_NEAR(cost.moe_s, 58 * 0.06742784023284912e-3, 58 * 2e-6);
  EXPECT_GT(cost.moe_s, 58 * 0.06742784023284912e-3);
  ASSERT_EQ(sm.measured_notes().size(), 4u);
  EXPECT_EQ(sm.measured_notes()[0], "GEMMs: 15 of 15 shapes from gemm_perf of h200_sxm sglang 0.5.6.post2");
  EXPECT_EQ(sm.measured_notes()[1],
            "attention: 2 of 2 layer kinds (bf16 KV cache) from generation_mla_perf (decode) and "
            "context_mla_perf (prefill) of h200_sxm sglang 0.5.6.post2");

  const RankLoad pre = prefill_one(1000);
  const auto table = store.table("h200_sxm", "sglang", "0.5.6.post2", "context_mla_perf");
  ASSERT_TRUE(table);
  const auto row = table->lookup({{"batch_size", 1.0},
                                  {"isl", 1000.0},
                                  {"num_heads", 16.0},
                                  {"tp_size", 8.0},
                                  {"kv_cache_dtype", std::string("bfloat16")},
                                  {"step", 0.0}});
  ASSERT_TRUE(row.ok) << row.detail;
  EXPECT_NEAR(sm.cost({&pre, 1}, 1, false, false).attention_s, 61 * row.latency_ms * 1e-3, 1e-9);

  // vLLM measured two MLA kernels (FlashMLA with an FP8 KV cache, FlashAttention MLA with BF16): a FlashMLA
  // launch takes FlashMLA's rows when its KV cache is FP8; with BF16 no row has its kernel, and a kernel no
  // table names (CUTLASS MLA) keeps the roofline too; the note says so.
  l.config.kind = engines::EngineKind::kVllm;
  l.version = "0.17.0";
  l.kv_dtype = model::DType::kFp8;
  l.execution.attention = l.execution.decode_attention = engines::AttentionKernel::kFlashMla;
  l.execution.mla_prefill_kernel_sources = l.execution.mla_decode_kernel_sources =
      std::vector<std::string>{"vllm_flashmla"};
  EXPECT_EQ(
      StepModel(l, c).measured_notes()[1],
      "attention: 2 of 2 layer kinds (fp8 KV cache) from generation_mla_perf (decode) and context_mla_perf "
      "(prefill) of h200_sxm vllm 0.14.0, the newest measured release at or before the launch's 0.17.0");
  l.kv_dtype = model::DType::kBf16;
  EXPECT_EQ(StepModel(l, c).measured_notes()[1].rfind("attention: 0 of 2 layer kinds", 0), 0u);
  l.execution.attention = l.execution.decode_attention = engines::AttentionKernel::kCutlassMla;
  l.execution.mla_prefill_kernel_sources = l.execution.mla_decode_kernel_sources = std::vector<std::string>{};
  EXPECT_EQ(StepModel(l, c).measured_notes()[1].rfind("attention: 0 of 2 layer kinds", 0), 0u)
      << StepModel(l, c).measured_notes()[1];
}

// Each kernel of a graphed step pays the per-kernel floor (kernel_floor_s: 2.5 us on Hopper); with
// programmatic dependent launch (TensorRT-LLM's TRTLLM_ENABLE_PDL=1) a kernel launches while the previous one
// drains and pays none: Qwen3-32B's 64 layers x 12 kernels = 768 kernels, 1.92 ms a step, become 0.
TEST(StepModel, ProgrammaticDependentLaunchHasNoKernelFloor) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  const RankLoad load = decode_one(1000);
  EXPECT_NEAR(StepModel(l, c).cost({&load, 1}, 1, true, false).floor_s, 64 * 12 * 2.5e-6, 1e-12);
  l.execution.programmatic_dependent_launch = true;
  EXPECT_EQ(StepModel(l, c).cost({&load, 1}, 1, true, false).floor_s, 0.0);
}

// Kernels of an eager step: Qwen3-32B (64 dense GQA layers of 12 kernels) without graphs launches 768
// kernels from the CPU; at the fitted CPU time per kernel (Calibration::eager_launch_us) of 60 us that is
// 46.08 ms, a floor under the step's 10 ms of kernels; at the 12 us prior 9.216 ms, under them.
TEST(StepModel, EagerLaunchTimeIsTheEnginesPerKernelCost) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.execution.graphs = engines::GraphMode::kNone;
  const RankLoad load = decode_one(1000);
  EXPECT_DOUBLE_EQ(StepModel(l, c).cost({&load, 1}, 1, false, false).launch_kernels, 64 * 12);
  detail::StepCost s;
  s.gpu_s = s.memory_s = 10e-3;
  s.launch_kernels = 64 * 12;
  Calibration cal;
  cal.cpu_step_ms = 1.0;
  cal.cpu_request_us = 0;
  cal.eager_launch_us = 60.0;
  EXPECT_NEAR(detail::step_seconds(s, cal), 46.08e-3 + 1e-3, 1e-12);
  cal.eager_launch_us = 12.0;
  EXPECT_NEAR(detail::step_seconds(s, cal), 10e-3 + 1e-3, 1e-12);
}

// DeepSeek-V3.2's layers: MLA (+6) and the DSA indexer (+20) on all 61, MoE (+6) on the 58 after the 3
// dense ones: 3 x (12 + 6 + 20) + 58 x (12 + 6 + 6 + 20) = 114 + 2552 = 2666 kernels a step; graphed at
// 2.5 us each on Hopper (6.665 ms), or all 2666 launched eagerly.
TEST(StepModel, DeepseekV32KernelsPerStep) {
  const auto m = model::deepseek_v32();
  const auto c = hardware::parse_cluster("8xH200");
  auto l = test_launch(m, c, 8);
  const RankLoad load = decode_one(1000);
  EXPECT_NEAR(StepModel(l, c).cost({&load, 1}, 1, true, false).floor_s, 2666 * 2.5e-6, 1e-12);
  l.execution.graphs = engines::GraphMode::kNone;
  EXPECT_DOUBLE_EQ(StepModel(l, c).cost({&load, 1}, 1, false, false).launch_kernels, 2666);
}

// Qwen3.5-9B (24 gated-DeltaNet layers of 32 value heads x 128 x 128, conv kernel 4; 8 full-attention
// layers) on one H100: the linear-attention core runs flash-linear-attention's Triton kernels at 0.04 of
// the BF16 peak and 0.45 of HBM (linear_attention_efficiency, from the measured aic-ops gdn_perf rows), not
// FlashAttention-3's 0.60 / 0.80.
//  Decode of 256 requests (no full-attention KV, to isolate the DeltaNet layers): each request's BF16 state
//  32 x 128 x 128 x 2 B + 3 x (2 x 16 x 128 + 32 x 128) x 2 B = 1,097,728 B is read and written once:
//  24 x 2 x 256 x 1,097,728 / (0.45 x 3.35e12) = 8.948 ms (the 256 x 6 x 32 x 128 x 128 state FLOPs,
//  20 us per layer at 0.04 of the peak, are below it). The measured rows: 278-364 us per layer for 256
//  requests (TensorRT-LLM 1.3 / vLLM 0.24), 24 x = 6.7-8.7 ms.
//  Prefill of 4096 tokens of one request: 24 x 4096 x 3,145,728 / (0.04 x 989e12) = 7.817 ms; measured
//  333-515 us per layer (TensorRT-LLM 1.3 / SGLang 0.5.14 FLA Triton), 24 x = 8.0-12.4 ms.
TEST(StepModel, GatedDeltaNetRunsAtTheFlaKernelsEfficiency) {
  const auto m = corpus_model("qwen3.5-9b");
  const auto c = hardware::parse_cluster("1xH100");
  const StepModel sm(test_launch(m, c, 1), c);
  RankLoad d;
  d.requests = d.decode_requests = d.query_tokens = d.sampled_tokens = 256;
  const double state = 32.0 * 128 * 128 * 2 + 3.0 * (2 * 16 * 128 + 32 * 128) * 2;
  EXPECT_DOUBLE_EQ(state, 1097728.0);
  // The DeltaNet cores are their own class (TwinView::linear_attention_s), apart from softmax attention.
  EXPECT_NEAR(sm.cost({&d, 1}, 256, true, false).linear_attention_s, 24 * 2 * 256 * state / (0.45 * 3.35e12),
              1e-12);
  EXPECT_NEAR(sm.cost({&d, 1}, 256, true, false).linear_attention_s, 8.948e-3, 1e-6);
  EXPECT_EQ(sm.cost({&d, 1}, 256, true, false).attention_s, 0.0);  // no KV to read in the full layers
  RankLoad p;
  p.requests = p.prefill_requests = p.sampled_tokens = 1;
  p.query_tokens = p.prefill_tokens = 4096;
  const double flops = 6.0 * 32 * 128 * 128;
  EXPECT_NEAR(sm.cost({&p, 1}, 1, false, false).linear_attention_s, 24 * 4096 * flops / (0.04 * 989e12),
              1e-12);
  EXPECT_NEAR(sm.cost({&p, 1}, 1, false, false).linear_attention_s, 7.817e-3, 1e-6);
  const auto eff = detail::linear_attention_efficiency(hardware::Generation::kHopper);
  EXPECT_DOUBLE_EQ(eff.compute, 0.04);
  EXPECT_DOUBLE_EQ(eff.memory, 0.45);
}

// With measured operators the DeltaNet layers take gdn_perf's kernels (SGLang 0.5.14 on H100: the FLA
// packed recurrent decode and conv-state update; the chunked prefill and causal conv). The tables measure
// Qwen3.5 shapes; 4B, 9B and 35B-A3B share 16 key / 32 value heads of 128, so their rows of one batch and
// length average (the importer drops the model columns; 122B / 397B at TP2, 8 key / 32 value heads, differ).
// Decode of 256 requests: 24 layers x (recurrent + conv update at batch 256), plus the 8 full-attention
// layers' decode core at KV length 0 (their own table); prefill of one 4096-token prompt: 24 x (chunk + conv
// at 1 x 4096). Measured: 360.8 + 13.6 us and 514.4 + 61.7 us a layer, where the roofline at 0.45 of HBM /
// 0.04 of the peak gives 373 and 326 us.
TEST(StepModel, GatedDeltaNetFromTheMeasuredKernels) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = corpus_model("qwen3.5-9b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.config.kind = engines::EngineKind::kSglang;
  l.version = "0.5.14";
  const StepModel sm(l, c);
  const auto src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  const auto gdn = detail::measured_gdn(store, *src, detail::GdnShape{16, 32, 128, 128});
  ASSERT_TRUE(gdn);
  EXPECT_EQ(gdn->decode_kernels, (std::vector<std::string>{"fused_recurrent_gated_delta_rule_packed_decode",
                                                           "causal_conv1d_update"}));
  EXPECT_EQ(gdn->prefill_kernels, (std::vector<std::string>{"chunk_gated_delta_rule", "causal_conv1d_fn"}));
  const auto table = store.table("h100_sxm", "sglang", "0.5.14", "gdn_perf");
  ASSERT_TRUE(table);
  auto row = [&](const char* kernel, const char* phase, double batch, double len) {
    const auto r = table->lookup({{"kernel_source", std::string(kernel)},
                                  {"phase", std::string(phase)},
                                  {"head_k_dim", 128.0},
                                  {"head_v_dim", 128.0},
                                  {"num_k_heads", 16.0},
                                  {"num_v_heads", 32.0},
                                  {"batch_size", batch},
                                  {"seq_len", len}});
    EXPECT_TRUE(r.ok) << r.detail;
    return r.latency_ms;
  };
  const double recurrent_ms = row("fused_recurrent_gated_delta_rule_packed_decode", "generation", 256, 1);
  const double decode_ms = recurrent_ms + row("causal_conv1d_update", "generation", 256, 1);
  const double prefill_ms =
      row("chunk_gated_delta_rule", "context", 1, 4096) + row("causal_conv1d_fn", "context", 1, 4096);
  // The mean of the 4B, 9B and 35B-A3B rows (16 key / 32 value heads).
  EXPECT_NEAR(decode_ms,
              (0.3608335876464844 + 0.36061920166015626 + 0.3608214569091797) / 3 +
                  (0.013556159734725954 + 0.01352031946182251 + 0.01347040057182312) / 3,
              1e-7);
  EXPECT_NEAR(prefill_ms,
              (0.514161262512207 + 0.5145779037475586 + 0.5133878326416015) / 3 +
                  (0.06169951915740966 + 0.061739840507507325 + 0.061704640388488774) / 3,
              1e-7);

  RankLoad d;
  d.requests = d.decode_requests = d.query_tokens = d.sampled_tokens = 256;
  const auto full = detail::measured_attention(store, *src, true,
                                               detail::AttentionShape{16, 4, 256, 0, model::DType::kBf16});
  ASSERT_TRUE(full);
  EXPECT_NEAR(sm.cost({&d, 1}, 256, true, false).linear_attention_s, 24 * decode_ms * 1e-3, 1e-9);
  EXPECT_NEAR(sm.cost({&d, 1}, 256, true, false).attention_s, 8 * full->at(256, 0) * 1e-3, 1e-9);
  // SGLang keeps the state in FP32 (twice the BF16 bytes the rows streamed): the recurrent kernel doubles.
  auto fp32 = l;
  fp32.state_dtype = model::DType::kFp32;
  EXPECT_NEAR(StepModel(fp32, c).cost({&d, 1}, 256, true, false).linear_attention_s,
              24 * (decode_ms + recurrent_ms) * 1e-3, 1e-9);
  RankLoad p;
  p.requests = p.prefill_requests = p.sampled_tokens = 1;
  p.query_tokens = p.prefill_tokens = 4096;
  p.prefill_pairs[0] = 0;  // the full-attention layers' prefill core apart: only the DeltaNet layers
  const auto cost = sm.cost({&p, 1}, 1, false, false);
  EXPECT_NEAR(cost.linear_attention_s, 24 * prefill_ms * 1e-3, 1e-9);
  const auto notes = sm.measured_notes();
  EXPECT_NE(
      std::find(notes.begin(), notes.end(),
                "gated DeltaNet: decode 1 of 1, prefill 1 of 1 layer kinds from gdn_perf of h100_sxm sglang "
                "0.5.14 (fused_recurrent_gated_delta_rule_packed_decode, causal_conv1d_update, "
                "chunk_gated_delta_rule, causal_conv1d_fn)"),
      notes.end());
  // The note says when the recurrent rows were scaled for the launch's state bytes.
  const auto fp32_notes = StepModel(fp32, c).measured_notes();
  EXPECT_NE(
      std::find(fp32_notes.begin(), fp32_notes.end(),
                "gated DeltaNet: decode 1 of 1, prefill 1 of 1 layer kinds from gdn_perf of h100_sxm sglang "
                "0.5.14 (fused_recurrent_gated_delta_rule_packed_decode, causal_conv1d_update, "
                "chunk_gated_delta_rule, causal_conv1d_fn); the recurrent rows (a BF16 state) x2 for the "
                "launch's fp32 state"),
      fp32_notes.end());
}

// On an A100 the same decode is bandwidth-bound too: the step scales with 3.35 / 2.039 TB/s.
// step_seconds: kernel_scale divides the compute-bound part only. 10 ms of kernels of which 6 ms stream
// weights, kernel_scale 0.5, no collectives, 1 ms CPU: 6 + 4 / 0.5 + 0.5 (floors) + 1 = 15.5 ms.
TEST(StepModel, KernelScaleLeavesMemoryBoundGemmsAlone) {
  detail::StepCost c;
  c.gpu_s = 10e-3;
  c.memory_s = 6e-3;
  c.floor_s = 0.5e-3;
  Calibration cal;
  cal.kernel_scale = 0.5;
  cal.cpu_step_ms = 1.0;
  cal.cpu_request_us = 0;
  EXPECT_NEAR(detail::step_seconds(c, cal), 15.5e-3, 1e-12);
  c.memory_s = 0;  // all compute-bound: 10 / 0.5 + 0.5 + 1
  EXPECT_NEAR(detail::step_seconds(c, cal), 21.5e-3, 1e-12);
}

// The API server's streamed-reply stage (ExecutionPolicy::api_stream_stage,
// Calibration::api_stream_request_us per chunk) is a floor beside the engine, not an addition: 10 ms of
// memory-bound kernels with async scheduling (1 ms CPU hidden) and 512 decoding requests x 80 us = 40.96 ms
// -> 40.96 ms; 64 requests -> 5.12 ms < 10 ms -> 10 ms.
TEST(StepModel, ApiStreamStageIsAFloorOnTheStep) {
  detail::StepCost c;
  c.gpu_s = c.memory_s = 10e-3;
  c.overlap = true;
  Calibration cal;
  cal.kernel_scale = 1.0;
  cal.cpu_step_ms = 1.0;
  cal.cpu_request_us = 0;
  cal.api_stream_request_us = 80.0;
  c.api_stream_chunks = 512;
  EXPECT_NEAR(detail::step_seconds(c, cal), 40.96e-3, 1e-12);
  c.api_stream_chunks = 64;
  EXPECT_NEAR(detail::step_seconds(c, cal), 10e-3, 1e-12);
}

// StepModel::cost fills the stage from the decoding requests of all ranks: 2 ranks x 100 decoding over 2 API
// servers x stream interval 2 = 50 chunks; none without api_stream_stage.
TEST(StepModel, ApiStreamStageCountsDecodingRequests) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  RankLoad r = decode_one(1000);
  r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = 100;
  const RankLoad loads[2] = {r, r};
  EXPECT_DOUBLE_EQ(StepModel(l, c).cost({loads, 1}, 100, true, false).api_stream_chunks, 0.0);
  l.execution.api_stream_stage = true;
  l.execution.api_server_count = 2;
  l.execution.stream_interval = 2;
  EXPECT_DOUBLE_EQ(StepModel(l, c).cost({loads, 2}, 200, true, false).api_stream_chunks, 50.0);
}

TEST(StepModel, DecodeScalesWithHbmBandwidth) {
  const auto m = corpus_model("qwen3-32b");
  const auto h = hardware::parse_cluster("1xH100"), a = hardware::parse_cluster("1xA100");
  const RankLoad load = decode_one(1000);
  const double th = StepModel(test_launch(m, h, 1), h).cost({&load, 1}, 1, true, false).gpu_s;
  const double ta = StepModel(test_launch(m, a, 1), a).cost({&load, 1}, 1, true, false).gpu_s;
  EXPECT_NEAR(ta / th, 3.35 / 2.039, 0.01);
}

// A 4096-token prefill of Qwen3-32B on an H100 is compute-bound: 2 x 487,587,840 params x 4096 tokens
// per layer at 0.55 x 989 TFLOPS, plus the causal attention 4096 x 4097 / 2 pairs x 2 x 64 x 256 FLOPs
// at FA3's 0.60.
TEST(StepModel, Qwen3_32bPrefillIsTheGemmFlops) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  const StepModel sm(test_launch(m, c, 1), c);
  RankLoad r;
  r.requests = r.prefill_requests = r.sampled_tokens = 1;
  r.query_tokens = r.prefill_tokens = 4096;
  r.prefill_pairs[0] = 4096.0 * 4097 / 2;
  const auto cost = sm.cost({&r, 1}, 1, false, false);
  const double P = 989e12;
  const double gemm = 2.0 * 487587840 * 4096 / (P * 0.55);
  const double attn = 4096.0 * 4097 / 2 * 2 * 64 * 256 / (P * 0.60);
  const double lm = bf16_gemm(1, 151936, 5120, P, 3.35e12) + 3.0 * 151936 * 4 / (3.35e12 * 0.8);
  EXPECT_NEAR(cost.gpu_s, 64 * (gemm + attn) + lm, 1e-6);
  // A 4096-token prefill is compute-bound in every layer: only the one-row LM head streams weights.
  EXPECT_NEAR(cost.memory_s, lm, 1e-9);
}

// Routed experts: with T tokens a layer touches 1 - (1 - k/E)^T of its experts under uniform routing, times
// the skewed-routing ratio at lambda = T x k / E (routed_experts_touched: 1 up to 0.35, 0.874 at 4), and
// reads only those. Qwen3-235B-A22B-FP8 (128 experts, top-8) at TP4, fused Triton MoE (0.70 of HBM): per
// layer the touched experts' FP8 slices (768 x 4096 + 4096 x 384 params x 1.000244 B each), the routed rows'
// activations (8T x (768 + 4096 + 2 x 4096) x 2 B) and the BF16 router (128 x 4096 x 2 B + its activations at
// 0.80).
TEST(StepModel, MoeReadsOnlyTheTouchedExperts) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507-fp8");
  const auto c = hardware::parse_cluster("4xH100");
  const StepModel sm(test_launch(m, c, 4), c);
  const double B = 3.35e12, blk = 1 + 4.0 / 16384;
  for (const auto& [T, skew] : {std::pair{1, 1.0}, {4, 1.0}, {64, 0.874}}) {
    RankLoad r = decode_one(1000);
    r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = T;
    r.decode_pairs[0] = r.decode_kv_tokens[0] = 1000.0 * T;
    const double touched = 128 * (1 - std::pow(1 - 8.0 / 128, T)) * skew;
    const double experts =
        touched * (768.0 * 4096 + 4096.0 * 384) * blk + 8.0 * T * (768 + 4096 + 2 * 4096) * 2;
    const double router = (128.0 * 4096 * 2 + 2.0 * T * (128 + 4096)) / (B * 0.80);
    const double fixed = detail::kMoeCallLatencyS + touched * detail::kMoeExpertOverheadS;
    EXPECT_NEAR(sm.cost({&r, 1}, T, true, false).moe_s, 94 * (experts / (B * 0.70) + fixed + router), 1e-9)
        << T;
  }
}

// vLLM's TritonOrDeepGemmExperts: a 64-token decode step of Qwen3-235B FP8 on 4xH100 is below DeepGEMM's
// 128-row M alignment, so its experts run fused_moe Triton (0.70 of HBM) rather than DeepGEMM (0.80).
// Both are weight-read bound here: the touched experts, 128 x (1 - (1 - 8/128)^64) x 0.874 (skewed routing at
// lambda 4) = 110.7 of them, each (768 x 4096 + 4096 x 384) FP8 weights with a 4/16384 block-scale overhead,
// plus the rows' activations. DeepGEMM's compute (2 x 110.7 x 64 rows x 4.72 M params = 66.9 GFLOP at 0.62 of
// 1,979 TFLOPS = 55 us) stays under its 192 us read.
TEST(StepModel, VllmSmallDecodeStepsRunTheTritonExperts) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507-fp8");
  const auto c = hardware::parse_cluster("4xH100");
  auto launch = test_launch(m, c, 4);
  launch.execution.moe = engines::MoeKernel::kDeepGemmGrouped;
  const StepModel deepgemm(launch, c);
  launch.execution.moe_small = engines::MoeKernel::kTritonFused;
  launch.execution.moe_small_below = 128;
  const StepModel fallback(launch, c);
  const double B = 3.35e12, blk = 1 + 4.0 / 16384;
  const int T = 64;
  RankLoad r = decode_one(1000);
  r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = T;
  r.decode_pairs[0] = r.decode_kv_tokens[0] = 1000.0 * T;
  const double touched = 128 * (1 - std::pow(1 - 8.0 / 128, T)) * 0.874;
  const double experts =
      touched * (768.0 * 4096 + 4096.0 * 384) * blk + 8.0 * T * (768 + 4096 + 2 * 4096) * 2;
  const double router = (128.0 * 4096 * 2 + 2.0 * T * (128 + 4096)) / (B * 0.80);
  const double fixed = detail::kMoeCallLatencyS + touched * detail::kMoeExpertOverheadS;
  EXPECT_NEAR(fallback.cost({&r, 1}, T, true, false).moe_s, 94 * (experts / (B * 0.70) + fixed + router),
              1e-9);
  EXPECT_NEAR(deepgemm.cost({&r, 1}, T, true, false).moe_s, 94 * (experts / (B * 0.80) + fixed + router),
              1e-9);
  // At 128 tokens the fallback launch runs DeepGEMM too.
  RankLoad big = r;
  big.requests = big.decode_requests = big.query_tokens = big.sampled_tokens = 128;
  EXPECT_DOUBLE_EQ(fallback.cost({&big, 1}, 128, true, false).moe_s,
                   deepgemm.cost({&big, 1}, 128, true, false).moe_s);
}

// The roofline MoE's time, when its weight read bounds it, is not divided by the kernel scale: its read rate
// and fixed costs are the measured tables' (physics.h moe_time_s), as a memory-bound dense GEMM's.
// gpt-oss-120b on one H100 through triton_kernels: a decode step of 32 requests touches 128 x (1 - (1 -
// 4/128)^32) x 0.783 (skewed routing at lambda 1) = 63.9 experts a layer, 63.9 x 3 x 2880 x 2880 x 4.25 / 8 B
// = 0.845 GB, read at 132 SMs x 20.3 GB/s in 315 us, where the padded rows' compute (63.9 x 16 rows) takes 2
// x 1023 x 24.9 M / (0.26 x 989 T x 0.911) = 217 us: the whole MoE (with its BF16 router) is in the unscaled
// memory_s. An 8192-token prefill is compute-bound: its experts stay in the scaled part.
TEST(StepModel, AMemoryBoundMoeIsNotScaledByTheKernelScale) {
  const auto m = corpus_model("gpt-oss-120b");
  const auto c = hardware::parse_cluster("1xH100");
  auto launch = test_launch(m, c, 1);
  launch.execution.moe = engines::MoeKernel::kTritonKernels;
  const StepModel sm(launch, c);
  RankLoad d;
  d.requests = d.decode_requests = d.query_tokens = d.sampled_tokens = 32;
  d.decode_pairs[0] = d.decode_kv_tokens[0] = 32 * 1000;
  const auto decode = sm.cost({&d, 1}, 32, true, false);
  EXPECT_GT(decode.moe_s, 36 * 315e-6);
  EXPECT_GE(decode.memory_s, decode.moe_s);
  RankLoad p;
  p.requests = p.prefill_requests = p.sampled_tokens = 1;
  p.query_tokens = p.prefill_tokens = 8192;
  const auto prefill = sm.cost({&p, 1}, 1, false, false);
  EXPECT_LT(prefill.memory_s, 0.05 * prefill.moe_s);
}

// vLLM's TRITON_ATTN on A100 (gpt-oss' only backend with sinks on SM80) at 0.30 of 312 TFLOPS (no public
// figure: the Triton row, below FlashAttention-2): a 2048-token chunk of gpt-oss-20b at context 16,000 has
// 2048 x 16,000 + 2048 x 2049 / 2 key pairs in each of its 12 full-attention layers, 4 x 64 heads x 64 dims
// = 16,384 FLOPs each: 12 x 5.71e11 FLOP / 93.6 TFLOPS = 73 ms (the sliding layers get no pairs here).
TEST(StepModel, TritonAttentionOnAmpereRunsAtTheTritonRow) {
  const auto m = corpus_model("gpt-oss-20b");
  const auto c = hardware::parse_cluster("1xA100");
  auto launch = test_launch(m, c, 1);
  launch.execution.attention = launch.execution.decode_attention = engines::AttentionKernel::kTriton;
  const StepModel sm(launch, c);
  RankLoad r;
  r.requests = r.prefill_requests = r.sampled_tokens = 1;
  r.query_tokens = r.prefill_tokens = 2048;
  const double pairs = 2048.0 * 16000 + 2048.0 * 2049 / 2;
  r.prefill_pairs[0] = pairs;  // pattern 0: unbounded keys (the full-attention layers)
  const double core = 12 * pairs * 4 * 64 * 64 / (312e12 * 0.30);
  EXPECT_NEAR(sm.cost({&r, 1}, 1, false, false).attention_s, core, 1e-9);
  EXPECT_NEAR(core, 0.0732, 0.0005);
}

// Collectives of one decode step of 64 tokens of Qwen3-235B on 16 x H100 (two nodes):
//  TP16 crosses the nodes: 2 all-reduces per layer of 64 x 4096 x 2 B over InfiniBand (50 GB/s x 0.85
//  per GPU, 15 us latency): 15e-6 + 2 x 15/16 x 524,288 / 42.5e9, x 2 x 94 layers.
//  PP2 x TP8: one stage's 47 layers of all-reduces inside a node (NVLS busbw 480 GB/s, 10 us) plus one
//  stage boundary over InfiniBand: 15e-6 + 524,288 / 42.5e9.
TEST(StepModel, TensorParallelAcrossNodesPaysTheNetwork) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507");
  const auto c = hardware::parse_cluster("16xH100");
  RankLoad r = decode_one(1000);
  r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = 64;
  r.decode_pairs[0] = r.decode_kv_tokens[0] = 64000;
  const double bytes = 64 * 4096 * 2.0;
  const double ib = 50e9 * 0.85;
  const double tp16 = StepModel(test_launch(m, c, 16), c).cost({&r, 1}, 64, true, false).comm_s;
  EXPECT_NEAR(tp16, 94 * 2 * (15e-6 + 2.0 * 15 / 16 * bytes / ib), 1e-9);
  const double pp = StepModel(test_launch(m, c, 8, 2), c).cost({&r, 1}, 64, true, true).comm_s;
  EXPECT_NEAR(pp, 47 * 2 * (10e-6 + 2.0 * 7 / 8 * bytes / 480e9) + (15e-6 + bytes / ib), 1e-9);
  EXPECT_GT(tp16, 5 * pp);
}

// The per-kernel physics: DeepEP low-latency dispatch+combine reproduces its documented 128-token EP8
// figure (77 + 114 us for 7168-wide FP8 dispatch / BF16 combine) up to the fixed launch cost.
TEST(Physics, DeepEpLowLatencyMatchesItsDocumentedPoint) {
  const auto c = hardware::parse_cluster("8xH200");
  const double t = detail::deepep_s(128, 8, 8, 7168, true, false, c);
  EXPECT_NEAR(t - 2 * 15e-6, (77e-6 + 114e-6) * 7.0 / 8, 2e-6);  // 7/8 of the copies leave the GPU
}

// Block-scaled FP8 GEMMs stream small weight matrices at a lower share of HBM (DeepGEMM's M = 64 rows:
// 1.7 TB/s at 15 MB, 2.7 TB/s at 117 MB). DeepGEMM: 0.50 at <= 15 MB, 0.80 at >= 117 MB, log-linear in
// between: Qwen3-8B's 25.2 MB FP8 qkv (6144 x 4096) gets 0.50 + 0.30 x ln(25.2/15) / ln(117/15) =
// 0.50 + 0.30 x 0.519 / 2.054 = 0.576; its decode GEMM at M = 4 then takes (25.17e6 weight bytes +
// 2 x 4 x 10240 BF16 activation bytes) / (0.576 x 3.35e12 B/s) = 13.1 us, where the large-shape 0.80
// gave 9.4 us. BF16 cuBLAS keeps 0.80 at every size.
TEST(Physics, SmallBlockFp8GemmsStreamWeightsSlower) {
  using engines::GemmKernel;
  const auto dg = detail::gemm_efficiency(GemmKernel::kFp8BlockDeepGemm, hardware::Generation::kHopper);
  EXPECT_DOUBLE_EQ(detail::gemm_memory_efficiency(dg, 10e6), 0.50);
  EXPECT_DOUBLE_EQ(detail::gemm_memory_efficiency(dg, 200e6), 0.80);
  const double w = 6144.0 * 4096.0;  // FP8: one byte per weight
  EXPECT_NEAR(detail::gemm_memory_efficiency(dg, w), 0.576, 0.001);
  const auto gpu = hardware::parse_cluster("1xH100").gpu;
  const double t = detail::gemm_time_s(4, 6144, 4096, w, gpu.fp8_flops, dg, gpu, nullptr);
  EXPECT_NEAR(t, (w + 2.0 * 4 * (6144 + 4096)) / (0.576 * gpu.hbm_bandwidth_Bps), 0.02e-6);
  EXPECT_NEAR(t, 13.1e-6, 0.1e-6);
  const auto bf16 = detail::gemm_efficiency(GemmKernel::kCublasBf16, hardware::Generation::kHopper);
  EXPECT_DOUBLE_EQ(detail::gemm_memory_efficiency(bf16, 10e6), bf16.memory);
}

// TensorRT-LLM's fp8_block_scaling_gemm on Hopper (no public figure: the FP8 block-scaled CUTLASS row, 0.50
// of the FP8 peak): Qwen3-32B's gate_up (N 51200, K 5120) over a 4096-token prefill chunk is
// 2 x 4096 x 51200 x 5120 = 2.147e12 FLOP, 2.147e12 / (1979e12 x 0.50) = 2.170 ms, compute-bound (262 MB of
// FP8 weights stream in 0.11 ms at 0.70 of 3.35 TB/s); cuBLAS BF16 takes 2.147e12 / (989e12 x 0.55) =
// 3.948 ms: the FP8 kernel is 1.82x faster.
TEST(Physics, TrtllmBlockFp8GemmRunsAtTheCutlassBlockRow) {
  using engines::GemmKernel;
  const auto gpu = hardware::parse_cluster("1xH100").gpu;
  const auto trt = detail::gemm_efficiency(GemmKernel::kFp8BlockTrtllm, hardware::Generation::kHopper);
  const double n = 51200, k = 5120;
  double mem = 0;
  const double t = detail::gemm_time_s(
      4096, n, k, n * k, detail::gemm_peak_flops(GemmKernel::kFp8BlockTrtllm, gpu), trt, gpu, &mem);
  EXPECT_NEAR(t, 2.170e-3, 0.001e-3);
  EXPECT_EQ(mem, 0.0);
  const auto bf16 = detail::gemm_efficiency(GemmKernel::kCublasBf16, hardware::Generation::kHopper);
  const double tb = detail::gemm_time_s(4096, n, k, 2 * n * k, gpu.bf16_flops, bf16, gpu, nullptr);
  EXPECT_NEAR(tb, 3.948e-3, 0.001e-3);
  EXPECT_NEAR(tb / t, 1.82, 0.01);
}

}  // namespace
}  // namespace servelab::sim
