// Layer kinds: formats, shard_params, keys per query, core FLOPs — every value computed by hand.
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <string>

namespace servelab::model {
namespace {

TEST(Formats, ElementBytesAndNames) {
  EXPECT_EQ(dtype_bytes(DType::kFp32), 4);
  EXPECT_EQ(dtype_bytes(DType::kBf16), 2);
  EXPECT_EQ(dtype_bytes(DType::kFp16), 2);
  EXPECT_EQ(dtype_bytes(DType::kFp8), 1);
  EXPECT_EQ(dtype_bytes(DType::kInt8), 1);
  EXPECT_EQ(dtype_bytes(DType::kInt4), 0.5);
  EXPECT_EQ(dtype_bytes(DType::kMxfp4), 0.5);
  EXPECT_EQ(dtype_bytes(DType::kNvfp4), 0.5);
  EXPECT_STREQ(dtype_name(DType::kMxfp4), "mxfp4");
  EXPECT_STREQ(dtype_name(DType::kBf16), "bf16");
  EXPECT_STREQ(quant_method_name(QuantMethod::kFp8Block), "fp8-block");
  EXPECT_STREQ(quant_method_name(QuantMethod::kW8A8Int8), "w8a8-int8");
}

TEST(Formats, BytesPerParamIncludeGroupScales) {
  // FP8 128x128 blocks, one fp32 scale each: 1 + 4 / 16384.
  EXPECT_DOUBLE_EQ((WeightFormat{DType::kFp8, 16384, 4, true}.bytes_per_param()), 1.000244140625);
  // AWQ INT4 group 128, fp16 scale + 4-bit zero: 0.5 + 2.5 / 128.
  EXPECT_DOUBLE_EQ((WeightFormat{DType::kInt4, 128, 2.5, false}.bytes_per_param()), 0.51953125);
  // MXFP4: E2M1 + one E8M0 byte per 32.
  EXPECT_DOUBLE_EQ((WeightFormat{DType::kMxfp4, 32, 1, false}.bytes_per_param()), 0.53125);
  // NVFP4: E2M1 + one FP8 byte per 16.
  EXPECT_DOUBLE_EQ((WeightFormat{DType::kNvfp4, 16, 1, false}.bytes_per_param()), 0.5625);
  // No group: scales ignored.
  EXPECT_DOUBLE_EQ((WeightFormat{DType::kBf16, 0, 0, false}.bytes_per_param()), 2);
}

// Qwen3-32B's dims: hidden 5120, 64 query heads, 8 KV heads, head_dim 128, intermediate 25600.
Layer qwen3_32b_layer() {
  return Layer{GqaAttention{64, 8, 128}, DenseFfn{25600}};
}

TEST(ShardParams, ColumnRowUnitSplitAndReplicated) {
  const auto ls = linears(qwen3_32b_layer(), 5120);
  ASSERT_EQ(ls.size(), 5u);
  const Linear& q = ls[0];
  const Linear& kv = ls[1];
  const Linear& o = ls[2];
  const Linear& gate_up = ls[3];
  const Linear& down = ls[4];
  EXPECT_STREQ(q.name, "q_proj");
  EXPECT_EQ(q.out, 8192);
  EXPECT_EQ(q.split_units, 64);
  EXPECT_STREQ(kv.name, "kv_proj");
  EXPECT_EQ(kv.out, 2048);  // 2 x 8 x 128
  EXPECT_EQ(kv.split_units, 8);
  EXPECT_EQ(o.split, Split::kRow);
  EXPECT_EQ(o.in, 8192);
  EXPECT_EQ(gate_up.out, 51200);
  EXPECT_EQ(gate_up.split, Split::kColumn);
  EXPECT_EQ(down.split, Split::kRow);

  // Freely split column: 5120 x 51200 = 262,144,000 / 4 = 65,536,000.
  EXPECT_DOUBLE_EQ(shard_params(gate_up, 4), 65536000);
  // Freely split row: 25600 x 5120 = 131,072,000 / 8 = 16,384,000.
  EXPECT_DOUBLE_EQ(shard_params(down, 8), 16384000);
  // Unit split by 64 query heads at TP16: 4 heads per rank = 5120 x 8192 / 16 = 2,621,440.
  EXPECT_DOUBLE_EQ(shard_params(q, 16), 2621440);
  // KV heads: 5120 x 2048 = 10,485,760. TP8 -> one head per rank = 1,310,720; TP16 -> still one head
  // (each KV head replicated on two ranks); TP3 -> ceil(8/3) = 3 heads = 3,932,160.
  EXPECT_DOUBLE_EQ(shard_params(kv, 1), 10485760);
  EXPECT_DOUBLE_EQ(shard_params(kv, 8), 1310720);
  EXPECT_DOUBLE_EQ(shard_params(kv, 16), 1310720);
  EXPECT_DOUBLE_EQ(shard_params(kv, 3), 3932160);

  // Replicated MoE router (Qwen3-235B: 4096 -> 128 experts) and routed experts (copies).
  const auto moe = linears(Layer{GqaAttention{64, 4, 128}, MoeFfn{128, 8, 1536}}, 4096);
  ASSERT_EQ(moe.size(), 6u);
  EXPECT_EQ(moe[3].cls, LinearClass::kRouter);
  EXPECT_EQ(moe[3].split, Split::kReplicated);
  EXPECT_DOUBLE_EQ(shard_params(moe[3], 8), 524288);  // 4096 x 128 on every rank
  EXPECT_STREQ(moe[4].name, "experts.w13");
  EXPECT_EQ(moe[4].copies, 128);
  // 4096 x 3072 x 128 = 1,610,612,736 / 8 = 201,326,592.
  EXPECT_DOUBLE_EQ(shard_params(moe[4], 8), 201326592);
}

TEST(ShardParams, MlaDownProjectionsAndIndexerAreReplicated) {
  MlaAttention a{128, 1536, 512, 128, 64, 128, 2048, true, 64, 128};
  const auto ls = linears(Layer{a, DenseFfn{18432}}, 7168);
  // q_a, q_b, kv_a, kv_b, indexer wq_b / wk / weights_proj, o, gate_up, down.
  ASSERT_EQ(ls.size(), 10u);
  for (const char* replicated :
       {"q_a_proj", "kv_a_proj_with_mqa", "indexer.wq_b", "indexer.wk", "indexer.weights_proj"}) {
    bool found = false;
    for (const auto& l : ls) {
      if (std::string(l.name) != replicated) continue;
      found = true;
      EXPECT_EQ(l.split, Split::kReplicated) << replicated;
      EXPECT_DOUBLE_EQ(shard_params(l, 8), double(l.in) * l.out) << replicated;
    }
    EXPECT_TRUE(found) << replicated;
  }
  EXPECT_EQ(ls[6].cls, LinearClass::kRouter);  // weights_proj stays bf16
  // q_b: 1536 x (128 x 192) split by 128 heads: / 8 = 4,718,592.
  EXPECT_DOUBLE_EQ(shard_params(ls[1], 8), 1536.0 * 24576 / 8);
}

TEST(KeysPerQuery, FullWindowSparseAndLinear) {
  EXPECT_DOUBLE_EQ(keys_per_query(GqaAttention{64, 8, 64}, 5000), 5000);
  GqaAttention sliding{64, 8, 64, 128, true};
  EXPECT_DOUBLE_EQ(keys_per_query(sliding, 5000), 128);
  EXPECT_DOUBLE_EQ(keys_per_query(sliding, 50), 50);
  MlaAttention dsa{128, 1536, 512, 128, 64, 128, 2048, true, 64, 128};
  EXPECT_DOUBLE_EQ(keys_per_query(dsa, 5000), 2048);
  EXPECT_DOUBLE_EQ(keys_per_query(dsa, 1000), 1000);
  MlaAttention dense = dsa;
  dense.index_topk = 0;
  EXPECT_DOUBLE_EQ(keys_per_query(dense, 5000), 5000);
  EXPECT_DOUBLE_EQ(keys_per_query(LinearAttention{16, 128, 32, 128, 4}, 5000), 0);
  EXPECT_EQ(kv_window_tokens(sliding), 128);
  EXPECT_EQ(kv_window_tokens(GqaAttention{64, 8, 64}), 0);
  EXPECT_EQ(kv_window_tokens(dsa), 0);
  // Chunked local attention (Llama 4): keys restart at every chunk; the KV held is one chunk.
  GqaAttention chunked{40, 8, 128};
  chunked.chunk = 8192;
  EXPECT_DOUBLE_EQ(keys_per_query(chunked, 8192), 8192);
  EXPECT_DOUBLE_EQ(keys_per_query(chunked, 8193), 1);
  EXPECT_DOUBLE_EQ(keys_per_query(chunked, 20000), 20000 - 16384);
  EXPECT_EQ(kv_window_tokens(chunked), 8192);
}

TEST(CoreFlops, PerPairByKindAndMode) {
  // GQA Qwen3-32B: 2 x 64 heads x (128 + 128) = 32,768 per (query, key); TP8: 8 heads -> 4,096.
  EXPECT_DOUBLE_EQ(core_flops_per_pair(GqaAttention{64, 8, 128}, 1, AttentionMode::kDense), 32768);
  EXPECT_DOUBLE_EQ(core_flops_per_pair(GqaAttention{64, 8, 128}, 8, AttentionMode::kDense), 4096);
  // MLA V3.2 dense (MHA form): 2 x 128 x (192 + 128) = 81,920; absorbed: 2 x 128 x (576 + 512) = 278,528;
  // absorbed at TP8: 16 heads -> 34,816.
  MlaAttention mla{128, 1536, 512, 128, 64, 128, 2048, true, 64, 128};
  EXPECT_DOUBLE_EQ(core_flops_per_pair(mla, 1, AttentionMode::kDense), 81920);
  EXPECT_DOUBLE_EQ(core_flops_per_pair(mla, 1, AttentionMode::kAbsorbed), 278528);
  EXPECT_DOUBLE_EQ(core_flops_per_pair(mla, 8, AttentionMode::kAbsorbed), 34816);
  // Indexer: 2 x 64 x 128 = 16,384 per (query, context token), not TP-split; 0 on non-indexer layers.
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(mla), 16384);
  MlaAttention reuse = mla;
  reuse.indexer = false;
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(reuse), 0);
  EXPECT_DOUBLE_EQ(indexer_flops_per_pair(GqaAttention{64, 8, 128}), 0);
  // Gated DeltaNet (Qwen3.5): 6 x 32 value heads x 128 x 128 = 3,145,728 per token; TP2 halves it.
  EXPECT_DOUBLE_EQ(core_flops_per_pair(LinearAttention{16, 128, 32, 128, 4}, 1, AttentionMode::kDense),
                   3145728);
  EXPECT_DOUBLE_EQ(core_flops_per_pair(LinearAttention{16, 128, 32, 128, 4}, 2, AttentionMode::kDense),
                   1572864);
}

TEST(KvBytes, GqaShardsKvHeadsAndReplicatesPastThem) {
  const GqaAttention a{64, 8, 128};
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 1, DType::kBf16), 4096);  // 2 x 8 x 128 x 2 B
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 8, DType::kBf16), 512);   // one KV head per GPU
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 16, DType::kBf16), 512);  // replicated: still one head
  EXPECT_DOUBLE_EQ(kv_bytes_per_token(a, 1, DType::kFp8), 2048);
  EXPECT_DOUBLE_EQ(state_bytes_per_request(a, 1, DType::kBf16), 0);
}

}  // namespace
}  // namespace servelab::model
