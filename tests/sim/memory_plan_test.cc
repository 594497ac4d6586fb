// The twin's memory plan against hand calculations, one model of each kind (dense GQA, MoE, MXFP4 +
// sliding window, hybrid linear attention, MLA + DSA) on A100 / H100 / H200, and the multi-node PP / TP
// arithmetic. Launch policies are set by hand (test_launch.h) so the arithmetic is the test's own.
#include <gtest/gtest.h>

#include <cmath>

#include "servelab/common/paths.h"
#include "servelab/model/model.h"
#include "servelab/sim/memory_plan.h"
#include "sim/sim_detail.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

using testing::corpus_model;
using testing::test_launch;
constexpr double kMiB = 1024.0 * 1024.0;

// Qwen3-32B, BF16, one H100 (81,559 MiB). Per layer: q 5120x8192 + kv 5120x2048 + o 8192x5120 +
// gate_up 5120x51200 + down 25600x5120 = 487,587,840 params; x64 + embedding and LM head 2 x
// 151,936 x 5120 = 32,761,446,400 params = 65,522,892,800 B. KV: 64 layers x 2 x 8 heads x 128 x 2 B
// = 262,144 B/token. Profile run (8192 tokens): transient 210,944 B/token (gate_up + activation
// 3 x 25,600 x 2 B, q_proj output 8192 x 2 B, four hidden buffers 4 x 5120 x 2 B) = 1,728,053,248 B,
// above the sampler's 2 x 4 B x 151,936 x 256 rows. Budget 0.9 x 85,520,809,984 - weights - activations
// = 9,717,782,937.6 B -> 37,056 tokens in blocks of 16.
TEST(MemoryPlan, Qwen3_32bDenseOnH100) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.max_model_len = 32768;
  const auto p = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(p.weight_bytes, 65522892800.0);
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token, 262144.0);
  EXPECT_DOUBLE_EQ(p.activation_bytes, 1728053248.0);
  EXPECT_NEAR(p.kv_budget_bytes, 9717782937.6, 1.0);
  EXPECT_EQ(p.kv_tokens_per_rank, 37056);
  EXPECT_TRUE(p.fits) << p.failure;
}

// A multimodal checkpoint's vision encoder is loaded beside the language model in BF16, split over
// MemoryPolicy::mm_encoder_shards GPUs (vLLM's --mm-encoder-tp-mode weights: the TP ranks): Qwen3-VL-32B's
// tower of 594,800,640 params (tests/model/qwen3_vl_test.cc) adds 1,189,601,280 B whole, 297,400,320 B
// per GPU at TP4; without a tower in the config the ~0.6 B estimate applies.
TEST(MemoryPlan, VisionEncoderWeightsSplitOverItsShards) {
  const auto m = model::load_config(common::data_dir() / "model-configs" / "aic" /
                                    "Qwen--Qwen3-VL-32B-Instruct_config.json");
  const auto c = hardware::parse_cluster("4xH100");
  auto l = test_launch(m, c, 4);
  l.max_model_len = 32768;
  const double text_only = plan_memory(l, c).weight_bytes;
  l.memory.mm_encoder = true;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).weight_bytes - text_only, 1189601280.0);
  l.memory.mm_encoder_shards = 4;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).weight_bytes - text_only, 297400320.0);
  auto estimate = m;
  estimate.vision_params = 0;
  l.model = estimate;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).weight_bytes - text_only, 0.6e9 * 2 / 4);
}

// SGLang (a fraction of the total, activations outside it): weights that leave no KV token inside
// mem_fraction_static fail with SGLang's own message (model_runner.py profile_max_num_token), not a CUDA OOM.
TEST(MemoryPlan, SglangWithNoKvLeftSaysItsOwnMessage) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.max_model_len = 4096;
  l.memory.profile_activations = false;
  l.memory.fraction = 0.7;  // 0.7 x 79.65 GiB < 61.02 GiB of weights
  const auto p = plan_memory(l, c);
  EXPECT_FALSE(p.fits);
  EXPECT_EQ(p.failure.rfind("RuntimeError: Not enough memory. Please try to increase --mem-fraction-static. "
                            "(weights need 61.02 GiB per GPU; --mem-fraction-static 0.700 of 79.65 GiB",
                            0),
            0u)
      << p.failure;
}

// The same launch on an A100 80GB (81,920 MiB): budget 0.9 x 85,899,345,920 - the same weights and
// activations = 10,058,465,280 B -> 38,368 tokens.
TEST(MemoryPlan, Qwen3_32bDenseOnA100) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xA100");
  auto l = test_launch(m, c, 1);
  l.max_model_len = 32768;
  const auto p = plan_memory(l, c);
  EXPECT_NEAR(p.kv_budget_bytes, 10058465280.0, 1.0);
  EXPECT_EQ(p.kv_tokens_per_rank, 38368);
}

// --cpu-offload-gb 20 on the same launch: 20 GiB of the weights stay in host memory, so the device holds
// 65,522,892,800 - 21,474,836,480 = 44,048,056,320 B and the KV budget grows by the same 21,474,836,480 B
// (9,717,782,937.6 -> 31,192,619,417.6 B: 118,976 tokens in blocks of 16). An offload larger than the
// weights offloads them all.
TEST(MemoryPlan, CpuOffloadFreesDeviceMemoryForTheKvCache) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.max_model_len = 32768;
  l.memory.cpu_offload_bytes = 20.0 * 1024 * 1024 * 1024;
  const auto p = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(p.cpu_offloaded_bytes, 21474836480.0);
  EXPECT_DOUBLE_EQ(p.weight_bytes, 44048056320.0);
  EXPECT_NEAR(p.kv_budget_bytes, 31192619417.6, 1.0);
  EXPECT_EQ(p.kv_tokens_per_rank, 118976);
  l.memory.cpu_offload_bytes = 1e12;
  const auto all = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(all.cpu_offloaded_bytes, 65522892800.0);
  EXPECT_DOUBLE_EQ(all.weight_bytes, 0.0);
}

// vLLM refuses a context whose one request does not fit: 40,960 x 262,144 B = 10 GiB against 9.05 GiB
// is within the plan's 1.5 GiB uncertainty (the twin predicts the engine starts, and says why); with 2 GiB
// more reserved (7.19 GiB) it is not, and the engine's own message comes back.
TEST(MemoryPlan, VllmRefusesAContextThatDoesNotFit) {
  const auto m = corpus_model("qwen3-32b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  const auto within = plan_memory(l, c);
  EXPECT_TRUE(within.fits);
  ASSERT_EQ(within.notes.size(), 1u);
  EXPECT_NE(within.notes[0].find("within the plan's uncertainty"), std::string::npos) << within.notes[0];
  // An engine that starts passed its check: its pool holds the 40,960-token request (a new user's 16k
  // context on a pool of 10,352 tokens had its long requests fail at runtime instead).
  EXPECT_EQ(within.kv_tokens_per_rank, 40960);
  EXPECT_DOUBLE_EQ(within.kv_budget_bytes, 40960.0 * 262144);
  l.memory.reserved_bytes = 2.0 * 1024 * 1024 * 1024;
  const auto p = plan_memory(l, c);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.failure.find("max seq len (40960)"), std::string::npos) << p.failure;
  EXPECT_NE(p.failure.find("10.00 GiB KV cache is needed"), std::string::npos) << p.failure;
  // An engine that fits the context instead lowers it to the pool: floor(7.19 GiB / 262,144 B) in blocks.
  l.memory.auto_fit_max_model_len = true;
  const auto fit = plan_memory(l, c);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.max_model_len, static_cast<int>(std::floor(fit.kv_budget_bytes / 262144 / 16)) * 16);
}

// Tensor parallelism: TP2 halves every linear (32 of 64 query heads, 4 of 8 KV heads) and the
// vocabulary: 32,761,446,400 B per GPU, KV 131,072 B/token. TP16 over two nodes: 4 query heads per GPU
// but one whole KV head (8 KV heads cannot split 16 ways: replicated), so per layer q 5120x512 + kv
// 5120x256 + o 512x5120 + gate_up 5120x3200 + down 1600x5120 = 31,129,600 params; x64 + 2 x 9,496 x
// 5120 = 2,089,533,440 params = 4,179,066,880 B; KV 64 x 2 x 1 x 128 x 2 = 32,768 B/token (as TP8).
TEST(MemoryPlan, TensorParallelSplitsHeadsAndReplicatesKvHeads) {
  const auto m = corpus_model("qwen3-32b");
  const auto c2 = hardware::parse_cluster("2xH100");
  const auto p2 = plan_memory(test_launch(m, c2, 2), c2);
  EXPECT_DOUBLE_EQ(p2.weight_bytes, 32761446400.0);
  EXPECT_DOUBLE_EQ(p2.kv_bytes_per_token, 131072.0);
  const auto c16 = hardware::parse_cluster("16xH100");
  ASSERT_EQ(c16.nodes, 2);
  const auto l16 = test_launch(m, c16, 16);
  EXPECT_TRUE(l16.layout.tp_crosses_nodes);
  const auto p16 = plan_memory(l16, c16);
  EXPECT_DOUBLE_EQ(p16.weight_bytes, 4179066880.0);
  EXPECT_DOUBLE_EQ(p16.kv_bytes_per_token, 32768.0);
}

// Qwen3-235B-A22B-FP8 (block 128x128: 1 + 4/16384 B per param) on 4 x H100, TP4. Per GPU and layer: q
// 4096x8192/4, kv one of 4 KV heads 4096x1024/4, o 8192x4096/4, experts (4096x3072 + 1536x4096) x 128 / 4
// = 621,805,568 params x 1.000244140625 B, router 4096x128 in BF16: 623,005,952 B; x94 + embedding and
// LM head 2 x 37,984 x 4096 x 2 B = 59,184,889,344 B.
TEST(MemoryPlan, Qwen3_235bMoeFp8Tp4) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507-fp8");
  const auto c = hardware::parse_cluster("4xH100");
  auto l = test_launch(m, c, 4);
  l.max_model_len = 32768;
  const auto p = plan_memory(l, c);
  EXPECT_NEAR(p.weight_bytes, 59184889344.0, 1.0);
  // 94 layers x 2 x 1 KV head x 128 x 2 B.
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token, 94 * 2 * 1 * 128 * 2.0);
  // Expert parallelism keeps the bytes: 32 whole experts per GPU instead of 128 quarter-experts.
  auto ep = l;
  ep.layout.moe_tp = 1;
  ep.layout.moe_ep = 4;
  EXPECT_NEAR(plan_memory(ep, c).weight_bytes, 59184889344.0, 1.0);
}

// Multi-node: Qwen3-235B (BF16) on 16 x H100. PP2 x TP8: 47 layers per stage, per GPU and layer q/8,
// one of 4 KV heads, o/8, experts/8, router: 311,951,360 params x 2 B = 623,902,720 B; stage 0 holds
// the embedding (18,992 x 4096 x 2 B): 29,479,010,304 B; stage 1 the LM head: the same. TP16: every
// linear /16 but the KV projection (one whole head: replicated): 313,524,224 B per layer x 94 +
// embedding and head 2 x 9,496 x 4096 x 2 B = 29,626,859,520 B.
TEST(MemoryPlan, PipelineAndTensorParallelAcrossTwoNodes) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507");
  const auto c = hardware::parse_cluster("16xH100");
  const auto stages = detail::pipeline_stages(m, 2);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_EQ(stages[0].end - stages[0].first, 47);
  EXPECT_EQ(stages[1].end - stages[1].first, 47);
  auto pp = test_launch(m, c, 8, 2);
  EXPECT_TRUE(pp.layout.pp_crosses_nodes);
  EXPECT_FALSE(pp.layout.tp_crosses_nodes);
  EXPECT_DOUBLE_EQ(plan_memory(pp, c).weight_bytes, 29479010304.0);
  auto tp = test_launch(m, c, 16);
  EXPECT_DOUBLE_EQ(plan_memory(tp, c).weight_bytes, 29626859520.0);
  // 95 layers over 2 stages: the first stage takes the extra one.
  model::ModelSpec odd = m;
  odd.layers.back().count += 1;
  const auto s = detail::pipeline_stages(odd, 2);
  EXPECT_EQ(s[0].end - s[0].first, 48);
  EXPECT_EQ(s[1].end - s[1].first, 47);
}

// gpt-oss-120b on one H100: attention (q 2880x4096, kv 2880x1024, o 4096x2880, biases) in BF16 =
// 53,100,160 B per layer, router 2880x128 + bias in BF16 = 737,536 B, experts MXFP4 (0.5 B + one E8M0
// scale per 32 = 0.53125 B/param) (2880x5760 + 2880x2880) x 128 + BF16 biases = 1,694,269,440 B; x36
// + embedding and LM head 2 x 201,088 x 2880 x 2 B = 65,248,390,656 B (60.8 GiB, the published
// checkpoint's ~65 GB). KV: 18 full layers x 2 x 8 x 64 x 2 B = 36,864 B/token without bound, and 18
// sliding layers with as much per token but at most 128 tokens per request (window-only allocator).
TEST(MemoryPlan, GptOssMxfp4AndSlidingWindow) {
  const auto m = corpus_model("gpt-oss-120b");
  const auto c = hardware::parse_cluster("1xH100");
  auto l = test_launch(m, c, 1);
  l.memory.kv_window_only = true;
  l.max_model_len = 32768;
  const auto p = plan_memory(l, c);
  EXPECT_NEAR(p.weight_bytes, 65248390656.0, 1.0);
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token, 36864.0);
  EXPECT_DOUBLE_EQ(p.kv_window_bytes_per_token, 36864.0);
  EXPECT_EQ(p.window_tokens, 128);
  // A 1000-token request: 1008 tokens in blocks of 16 of the full layers, 128 of the sliding ones.
  EXPECT_DOUBLE_EQ(request_kv_bytes(p, 1000), 1008 * 36864.0 + 128 * 36864.0);
  // Without the window-only allocator every layer keeps the whole context.
  l.memory.kv_window_only = false;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).kv_bytes_per_token, 73728.0);
  // SGLang's SWAKVPool at --swa-full-tokens-ratio 0.8: each full-layer token is matched by 0.8 tokens in
  // every sliding layer's pool, so a full token costs 18 x 2048 + 0.8 x 18 x 2048 = 66,355.2 B and the
  // pool holds budget / 66,355.2 full tokens (model_runner.py set_num_token_hybrid), 1.8x fewer than
  // the window-only allocator's budget / 36,864.
  l.memory.kv_window_only = true;
  l.memory.swa_split_pool = true;
  l.memory.swa_full_tokens_ratio = 0.8;
  const auto sg = plan_memory(l, c);
  EXPECT_NEAR(sg.kv_bytes_per_token, 66355.2, 1e-6);
  EXPECT_DOUBLE_EQ(sg.kv_window_bytes_per_token, 0.0);
  EXPECT_NEAR(double(sg.kv_tokens_per_rank), std::floor(sg.kv_budget_bytes / 66355.2 / 16) * 16, 16.0);
}

// Qwen3.5-35B-A3B on one H200: 10 full-attention layers x 2 x 2 KV heads x 256 x 2 B = 20,480 B/token;
// 30 gated-DeltaNet layers hold per request 32 x 128 x 128 x 2 B (BF16 state) + 3 x (2 x 16 x 128 +
// 32 x 128) x 2 B (conv) = 1,097,728 B each: 32,931,840 B per request, whatever its length.
TEST(MemoryPlan, Qwen3_5HybridRecurrentState) {
  const auto m = corpus_model("qwen3.5-35b-a3b");
  const auto c = hardware::parse_cluster("1xH200");
  auto l = test_launch(m, c, 1);
  l.max_model_len = 32768;
  const auto p = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(p.kv_bytes_per_token, 20480.0);
  EXPECT_DOUBLE_EQ(p.state_bytes_per_request, 32931840.0);
  EXPECT_DOUBLE_EQ(request_kv_bytes(p, 100), 112 * 20480.0 + 32931840.0);
}

// SGLang's MambaPool on the same model: FP32 recurrent state, 30 x (32 x 128 x 128 x 4 B + 3 x 8192 x 2 B)
// = 30 x 2,146,304 = 64,389,120 B per request. With the radix cache the pool takes 0.9 / 1.9 of the
// budget B (mamba / full KV = 0.9): floor(B x 0.9 / 1.9 / 64,389,120) states, a third of them running;
// the KV pool keeps B - slots x 64,389,120 and a request's KV bytes no longer include its state. Without
// the radix cache: 512 states, one per running request; under speculative decoding a slot holds 1 + draft
// tokens' states (64 slots x 3 here).
TEST(MemoryPlan, SglangHybridStatePool) {
  const auto m = corpus_model("qwen3.5-35b-a3b");
  const auto c = hardware::parse_cluster("1xH200");
  auto l = test_launch(m, c, 1);
  l.config.kind = engines::EngineKind::kSglang;
  l.memory.profile_activations = false;
  l.state_dtype = model::DType::kFp32;
  l.max_model_len = 32768;
  const auto shared = plan_memory(l, c);
  ASSERT_DOUBLE_EQ(shared.state_bytes_per_request, 64389120.0);
  EXPECT_EQ(shared.state_slots, 0);
  EXPECT_EQ(shared.max_running_from_states, 0);
  const double budget = shared.kv_budget_bytes;
  l.memory.state_pool_ratio = 0.9;
  l.memory.state_slots_per_running = 3;
  const auto p = plan_memory(l, c);
  const auto slots = static_cast<long long>(std::floor(budget * 0.9 / 1.9 / 64389120.0));
  EXPECT_GT(slots, 100);
  EXPECT_EQ(p.state_slots, slots);
  EXPECT_EQ(p.max_running_from_states, slots / 3);
  EXPECT_NEAR(p.kv_budget_bytes, budget - double(slots) * 64389120.0, 1.0);
  EXPECT_DOUBLE_EQ(request_kv_bytes(p, 100), 112 * 20480.0);
  l.memory.state_pool_ratio = 0;
  l.memory.state_slots = 512;
  l.memory.state_slots_per_running = 1;
  const auto off = plan_memory(l, c);
  EXPECT_EQ(off.state_slots, 512);
  EXPECT_EQ(off.max_running_from_states, 512);
  EXPECT_NEAR(off.kv_budget_bytes, budget - 512 * 64389120.0, 1.0);
  // Speculative decoding: each slot holds 1 + draft-token states.
  l.memory.state_slots = 64;
  l.memory.state_copies_per_slot = 3;
  EXPECT_NEAR(plan_memory(l, c).kv_budget_bytes, budget - 64 * 3 * 64389120.0, 1.0);
}

// GLM-5.2-FP8 on 8 x H200 with DP-attention (attention TP 1): the latent KV (512 + 64) x 2 B = 1152 B
// on every layer, plus the indexer key (128 FP8 + one fp32 scale = 132 B) on the layers that run the
// indexer; the FP8 cache uses FlashMLA's 656 B layout.
TEST(MemoryPlan, Glm52MlaDsaKv) {
  const auto m = corpus_model("glm-5.2-fp8");
  int layers = 0, indexer_layers = 0;
  for (const auto& g : m.layers) {
    layers += g.count;
    if (const auto* a = std::get_if<model::MlaAttention>(&g.layer.attention); a && a->indexer)
      indexer_layers += g.count;
  }
  ASSERT_EQ(layers, 78);
  ASSERT_GT(indexer_layers, 0);
  const auto c = hardware::parse_cluster("8xH200");
  auto l = test_launch(m, c, 1);
  l.layout.gpus = 8;
  l.layout.dp_ranks = 8;
  l.layout.dense_tp = l.layout.moe_tp = 8;
  l.layout.moe_gathered = true;
  l.max_model_len = 32768;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).kv_bytes_per_token, 78 * 1152.0 + indexer_layers * 132.0);
  l.kv_dtype = model::DType::kFp8;
  EXPECT_DOUBLE_EQ(plan_memory(l, c).kv_bytes_per_token, 78 * 656.0 + indexer_layers * 132.0);
}

// SGLang's req_to_token table, charged to the KV budget: (slots + 1) x (context_len + 4) int32 per rank.
// GLM-5.2's 1,048,576-token context: a pool of P tokens gives slots = clamp(P / 1048576 x 512, 2048, 4096)
// = 2048 for any P < 4.2 M, so 2049 x 1048580 x 4 B = 8,594,161,680 B (8.0 GiB) come out of the budget.
TEST(MemoryPlan, SglangRequestTableComesOutOfTheKvBudget) {
  const auto m = corpus_model("glm-5.2-fp8");
  const auto c = hardware::parse_cluster("8xH200");
  auto l = test_launch(m, c, 8);
  l.config.kind = engines::EngineKind::kSglang;
  l.memory.profile_activations = false;
  l.max_model_len = 1048576;
  const auto without = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(without.request_table_bytes, 0.0);
  l.memory.request_table = true;
  const auto with = plan_memory(l, c);
  EXPECT_DOUBLE_EQ(with.request_table_bytes, 8594161680.0);
  EXPECT_NEAR(with.kv_budget_bytes, without.kv_budget_bytes - 8594161680.0, 1.0);
  EXPECT_LT(with.kv_tokens_per_rank, without.kv_tokens_per_rank);
  // A 32K context: the pool's ~0.4 M tokens (TP8, fraction 0.9) / 32768 x 512 > 4096, so the table takes
  // the upper clamp: 4097 x 32772 x 4 = 537,067,536 B.
  l.max_model_len = 32768;
  const auto short_ctx = plan_memory(l, c);
  EXPECT_GT(short_ctx.kv_tokens_per_rank * 512 / 32768, 4096);
  EXPECT_DOUBLE_EQ(short_ctx.request_table_bytes, 537067536.0);
}

TEST(MemoryPlan, WeightsLargerThanTheGpuFailAtLoad) {
  const auto m = corpus_model("qwen3-235b-a22b-instruct-2507");
  const auto c = hardware::parse_cluster("1xH100");
  const auto p = plan_memory(test_launch(m, c, 1), c);
  EXPECT_FALSE(p.fits);
  EXPECT_NE(p.failure.find("CUDA out of memory while loading weights"), std::string::npos) << p.failure;
}

}  // namespace
}  // namespace servelab::sim
