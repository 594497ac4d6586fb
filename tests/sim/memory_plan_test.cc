// Memory plan vs hand calculations (DeepSeek-V3.2 dims from perf-facts §1, H200 143771 MiB).
#include <gtest/gtest.h>

#include "sim/memory_plan.h"

namespace servelab::sim {
namespace {

using engines::EngineConfig;
using engines::EngineKind;

EngineConfig vllm(int tp, int dp = 1) {
  EngineConfig e;
  e.kind = EngineKind::kVllm;
  e.tp = tp;
  e.dp = dp;
  return e;
}

TEST(ModelConfig, ParameterCountsMatchHandCalculation) {
  const ModelConfig m = deepseek_v32();
  // MLA: 7168*1536 + 1536*128*192 + 7168*576 + 512*128*256 + 128*128*7168
  //    = 11,010,048 + 37,748,736 + 4,128,768 + 16,777,216 + 117,440,512 = 187,105,280
  EXPECT_DOUBLE_EQ(m.mla_params_per_layer(), 187105280.0);
  // Indexer: 1536*64*128 + 7168*128 + 7168*64 = 12,582,912 + 917,504 + 458,752 = 13,959,168
  EXPECT_DOUBLE_EQ(m.indexer_params_per_layer(), 13959168.0);
  EXPECT_DOUBLE_EQ(m.expert_params(), 44040192.0);       // 3*7168*2048
  EXPECT_DOUBLE_EQ(m.dense_ffn_params(), 396361728.0);   // 3*7168*18432
  EXPECT_DOUBLE_EQ(m.embedding_params(), 926679040.0);   // 129280*7168
}

TEST(MemoryPlan, KvBytesPerToken) {
  const ModelConfig m = deepseek_v32();
  EXPECT_DOUBLE_EQ(kv_latent_bytes_per_layer(m, false), 1152.0);  // 576 * 2
  EXPECT_DOUBLE_EQ(kv_latent_bytes_per_layer(m, true), 656.0);    // 512 + 4*4 + 64*2
  EXPECT_DOUBLE_EQ(kv_indexer_bytes_per_layer(m), 132.0);         // 128 + 4
  const Hardware h200 = hardware_by_name("H200");
  // 61 * (1152 + 132) = 78,324 B; FP8: 61 * (656 + 132) = 48,068 B.
  EXPECT_DOUBLE_EQ(plan_memory(vllm(8), h200, m).kv_bytes_per_token, 78324.0);
  EngineConfig fp8 = vllm(8);
  fp8.kv_cache_dtype = "fp8";
  EXPECT_DOUBLE_EQ(plan_memory(fp8, h200, m).kv_bytes_per_token, 48068.0);
}

TEST(MemoryPlan, WeightsTp8) {
  // (attn 12,264,931,328 + routed 653,908,770,816 + shared 2,554,331,136 + dense 1,189,085,184
  //  + embedding/head 3,706,716,160) / 8 + gates 212,860,928 (bf16, replicated) = 84,415,840,256 B.
  const MemoryPlan p = plan_memory(vllm(8), hardware_by_name("H200"), deepseek_v32());
  EXPECT_DOUBLE_EQ(p.weight_bytes, 84415840256.0);
  EXPECT_EQ(p.par.dp_ranks, 1);
  EXPECT_EQ(p.par.attn_tp, 8);
}

TEST(MemoryPlan, WeightsSglangDpAttentionReplicateAttention) {
  EngineConfig e;
  e.kind = EngineKind::kSglang;
  e.tp = 8;
  e.dp = 8;
  e.enable_dp_attention = true;
  const MemoryPlan p = plan_memory(e, hardware_by_name("H200"), deepseek_v32());
  // attention whole on every GPU: 12,264,931,328 + (653,908,770,816 + 2,554,331,136 + 1,189,085,184
  // + 3,706,716,160) / 8 + 212,860,928 = 95,147,655,168 B (perf-facts: ~95 GB/GPU).
  EXPECT_DOUBLE_EQ(p.weight_bytes, 95147655168.0);
  EXPECT_EQ(p.par.dp_ranks, 8);
  EXPECT_EQ(p.par.attn_tp, 1);
  // mem_fraction_static: reserved = 512 + 8192*1.5 + 512*2 + 8*1/8*1024 + 512*8*3 + 512*8*1.5
  // = 33,280 MiB; (143771 - 33280) / 143771 = 0.768521...
  EXPECT_NEAR(p.memory_fraction, (143771.0 - 33280.0) / 143771.0, 1e-12);
  // KV per rank: (0.768521 * 143771 MiB - weights) / 78,324 B, whole 64-token pages.
  const double budget = p.memory_fraction * 143771.0 * 1048576.0 - 95147655168.0;
  EXPECT_EQ(p.kv_tokens_per_rank, static_cast<long long>(budget / 78324.0 / 64) * 64);
  EXPECT_GT(p.kv_tokens_per_rank, 250000);  // perf-facts: ~267 K/rank bf16 (upper bound)
  EXPECT_LT(p.kv_tokens_per_rank, 270000);
}

TEST(MemoryPlan, SglangAutoMemFractionTp8) {
  EngineConfig e;
  e.kind = EngineKind::kSglang;
  e.tp = 8;
  // reserved = 512 + 12288 + 1024 + 1024 = 14,848 MiB -> (143771 - 14848) / 143771 = 0.89672
  EXPECT_NEAR(sglang_auto_mem_fraction(e, hardware_by_name("H200")), 0.896725, 1e-6);
}

TEST(MemoryPlan, VllmDp8NeedsMaxModelLen81920) {
  // The study: `vllm serve -tp 1 -dp 8 --enable-expert-parallel` ran out of memory at the full 163840
  // context and ran with --max-model-len 81920. Weights per GPU (tp 1: everything but the routed experts
  // replicated): 653,908,770,816/8 + 12,264,931,328 + 2,554,331,136 + 1,189,085,184 + 3,706,716,160
  // + 212,860,928 = 101,666,521,088 B.
  EngineConfig e = vllm(1, 8);
  e.enable_expert_parallel = true;
  const ModelConfig m = deepseek_v32();
  const Hardware h = hardware_by_name("H200");
  const MemoryPlan full = plan_memory(e, h, m);
  EXPECT_DOUBLE_EQ(full.weight_bytes, 101666521088.0);
  EXPECT_FALSE(full.fits);
  EXPECT_NE(full.failure.find("max seq len (163840)"), std::string::npos) << full.failure;
  e.max_model_len = 81920;
  const MemoryPlan half = plan_memory(e, h, m);
  EXPECT_TRUE(half.fits) << half.failure;
  EXPECT_GE(half.kv_tokens_per_rank, 81920);
  // TP8 keeps the full context.
  EXPECT_TRUE(plan_memory(vllm(8), h, m).fits);
}

TEST(Hardware, TableAndClusterSpec) {
  const Cluster c = parse_cluster("8xH200");
  EXPECT_EQ(c.num_gpus, 8);
  EXPECT_EQ(c.gpu.name, "H200");
  EXPECT_DOUBLE_EQ(c.gpu.hbm_bandwidth_bps, 4.8e12);
  EXPECT_DOUBLE_EQ(c.gpu.fp8_dense_flops, 1979e12);
  EXPECT_EQ(parse_cluster("4xb200-sxm").gpu.compute_capability, 100);
  EXPECT_THROW(parse_cluster("8xA100"), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::sim
