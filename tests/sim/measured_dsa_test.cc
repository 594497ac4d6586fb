// The DSA module tables (measured_dsa.cc): a DeepSeek Sparse Attention layer's whole attention block per
// engine release, as the step model reads them.
#include <gtest/gtest.h>

#include <cmath>
#include <variant>
#include <vector>

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
using testing::decode_one;
using testing::MeasuredOperators;
using testing::prefill_one;
using testing::sglang_tp8_deepgemm;

// DeepSeek-V3.2's DSA layers take their whole attention block (q / kv projections, indexer, sparse MLA,
// o_proj) from the DSA module tables (measured_dsa_module). SGLang 0.5.6.post2 on H200 reads SGLang
// 0.5.10's (the oldest measured release of its line; its one label dsa_nsa): at 128 heads a rank
// (DP-attention), FP8 block projections, BF16 KV, 64 decoding requests at history 1,024 the row is
// 0.1787 ms. A step is the row less the block's fixed part, its time at the smallest shape (batch 1,
// history 1) less its projection weights streamed at 80% of HBM: the kernel gaps and host work the kernel
// floors and eager launches count. At TP8 (16 heads a GPU) one request decoding at history 1,000 and one
// prefilling 1,000 tokens are each 61 layers of that.
TEST(StepModel, MeasuredDsaBlockOfDeepseekV32OnH200) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = model::deepseek_v32();
  const auto c = hardware::parse_cluster("8xH200");
  auto l = sglang_tp8_deepgemm(m, c, "0.5.6.post2");
  const auto src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  const auto* mla = std::get_if<model::MlaAttention>(&m.layers.back().layer.attention);
  ASSERT_TRUE(mla);
  const auto dp_attention = detail::measured_dsa_module(
      store, *src, {*mla, m.hidden_size, m.id, 128, 1, model::DType::kBf16, "fp8_block"});
  ASSERT_TRUE(dp_attention && dp_attention->decode && !dp_attention->prefill.empty());
  EXPECT_EQ(dp_attention->model, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(dp_attention->decode_kernel, "dsa_nsa");
  EXPECT_NEAR(dp_attention->decode->at(64, 1024), 0.1787, 1e-6);
  ASSERT_EQ(dp_attention->prefill.prefix, std::vector<double>{0});  // 0.5.10: no cached prefix
  EXPECT_NEAR(dp_attention->prefill.surface[0]->at(1, 2048), 1.3829, 1e-6);
  EXPECT_TRUE(dp_attention->prefill_dense.empty());  // 0.5.10 times both prefill paths under one label
  // Above the largest batch measured at 128 heads (4 requests; the larger batches were measured at fewer
  // heads only), only the part above the fixed one (the least time the phase measured, 0.7259 ms at 4
  // requests x 8 tokens) grows with the requests: 16 requests of 256 tokens are 0.7259 + 4 x (0.8929 -
  // 0.7259) ms.
  const detail::OpSurface& pre128 = *dp_attention->prefill.surface[0];
  ASSERT_EQ(pre128.outer.back(), 4);
  EXPECT_NEAR(pre128.fixed_ms, 0.7259, 1e-6);  // the least row: 4 requests x 8 tokens
  bool outside = false;
  EXPECT_NEAR(pre128.at(16, 256, &outside), 0.7259 + (0.8929 - 0.7259) * 4, 1e-6);
  EXPECT_TRUE(outside);
  // A batch whose rows stop short is continued along the smaller batch's rows, marked outside the grid.
  bool continued = false;
  for (std::size_t k = 0; k < pre128.curves.size(); ++k) {
    if (pre128.curves[k].x.back() <= pre128.measured_end[k]) continue;
    bool out = false;
    pre128.at(pre128.outer[k], pre128.curves[k].x.back(), &out);
    EXPECT_TRUE(out) << pre128.outer[k];
    continued = true;
  }
  EXPECT_TRUE(continued);

  const StepModel sm(l, c);
  const auto table = [&](const char* name) { return store.table("h200_sxm", "sglang", "0.5.10", name); };
  const auto gen = table("dsa_generation_module_perf"), ctx = table("dsa_context_module_perf");
  ASSERT_TRUE(gen && ctx);
  const auto row = [&](const ops::OpTable& t, bool decode, double length) {
    ops::OpQuery q{{"model", std::string("deepseek-ai/DeepSeek-V3.2")},
                   {"kv_cache_dtype", std::string("bfloat16")},
                   {"gemm_type", std::string("fp8_block")},
                   {"num_heads", 16.0},
                   {"tp_size", 1.0},
                   {"batch_size", 1.0},
                   {decode ? "isl" : "step", decode ? 1.0 : 0.0},
                   {decode ? "step" : "isl", length}};
    const auto r = t.lookup(q);
    EXPECT_TRUE(r.ok) << r.detail;
    return r.latency_ms * 1e-3;
  };
  double weights = 0;  // one GPU's attention projections at TP8, FP8 block
  for (const auto& lin : model::linears(m.layers.back().layer, m.hidden_size))
    if (lin.cls == model::LinearClass::kAttention)
      weights += model::shard_params(lin, 8) * m.quantization.format(lin.cls).bytes_per_param();
  const double stream = weights / (c.gpu.hbm_bandwidth_Bps * 0.8);
  EXPECT_GT(stream, 5e-6);
  EXPECT_LT(stream, 30e-6);
  // The fixed part of each phase is the least time its rows measured at 16 heads: at most the smallest
  // shape's, and within the scatter of the rows around it.
  const auto tp8 = detail::measured_dsa_module(
      store, *src, {*mla, m.hidden_size, m.id, 16, 8, model::DType::kBf16, "fp8_block"});
  ASSERT_TRUE(tp8 && tp8->decode && !tp8->prefill.empty());
  const double dec_least = tp8->decode->fixed_ms * 1e-3, pre_least = tp8->prefill.smallest() * 1e-3;
  EXPECT_LE(dec_least, row(*gen, true, 1) + 1e-12);
  EXPECT_GT(dec_least, 0.9 * row(*gen, true, 1));
  EXPECT_LE(pre_least, row(*ctx, false, 1) + 1e-12);
  EXPECT_GT(pre_least, 0.9 * row(*ctx, false, 1));
  const RankLoad dec = decode_one(1000);
  const double dec_fixed = dec_least - stream;
  EXPECT_NEAR(sm.cost({&dec, 1}, 1, true, false).attention_s, 61 * (row(*gen, true, 1000) - dec_fixed), 1e-9);
  const RankLoad pre = prefill_one(1000);
  const double pre_fixed = pre_least - stream;
  EXPECT_GT(pre_fixed, 0.7e-3);  // a floor of ~0.77 ms at any length to 2,048 tokens
  const double pre_s = sm.cost({&pre, 1}, 1, false, false).attention_s;
  EXPECT_NEAR(pre_s, 61 * (row(*ctx, false, 1000) - pre_fixed), 1e-9);
  // The same 1,000-token chunk after 7,000 cached tokens: rows without a prefix split into per-token and
  // per-pair work, so it costs more than the chunk alone and less than a 8,000-token prompt; the lookup
  // past the measured prefixes counts as extrapolated.
  RankLoad after = pre;
  after.prefill_cached = 7000;
  after.prefill_max_context = 8000;
  after.prefill_pairs[0] = 1000 * 7000 + 1000.0 * 1001 / 2;
  const long long outside_before = sm.extrapolated_lookups();
  const double after_s = sm.cost({&after, 1}, 1, false, false).attention_s;
  EXPECT_GT(after_s, pre_s * 1.2);
  EXPECT_LT(after_s, 61 * (row(*ctx, false, 8000) - pre_fixed));
  EXPECT_GT(sm.extrapolated_lookups(), outside_before);
  EXPECT_EQ(sm.measured_notes()[1].rfind(
                "DSA attention blocks (projections, the indexer or the reuse of its selection, "
                "sparse core): 2 of 2 layer kinds (bf16 KV cache) from "
                "dsa_generation_module_perf of h200_sxm sglang 0.5.10",
                0),
            0u)
      << sm.measured_notes()[1];
}

// SGLang 0.5.14 times GLM-5.2's layers that reuse the previous selection (skip_indexer labels, its own
// rows) apart from those that run the indexer (GLM-5's rows: the same attention, GLM-5.2 runs the indexer
// every fourth layer), and the dense-MHA prefill of short prompts apart from the sparse one.
TEST(StepModel, DsaLayersWithAndWithoutTheIndexerTakeTheirOwnRows) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = model::resolve_model("zai-org/GLM-5.2-FP8");
  const auto c = hardware::parse_cluster("8xH200");
  const auto l = sglang_tp8_deepgemm(m, c, "0.5.14");
  const auto src = detail::op_source(store, l, c.gpu);
  ASSERT_TRUE(src);
  int seen = 0;
  for (const bool indexer : {true, false}) {
    for (const auto& g : m.layers) {
      const auto* a = std::get_if<model::MlaAttention>(&g.layer.attention);
      if (!a || a->index_topk == 0 || a->indexer != indexer) continue;
      const auto block = detail::measured_dsa_module(
          store, *src, {*a, m.hidden_size, m.id, double(a->heads) / 8, 8, model::DType::kBf16, "fp8_block"});
      ASSERT_TRUE(block && block->decode && !block->prefill.empty() && !block->prefill_dense.empty())
          << indexer;
      EXPECT_EQ(block->model, indexer ? "zai-org/GLM-5-FP8" : "zai-org/GLM-5.2-FP8");
      EXPECT_EQ(block->decode_kernel, indexer ? "sglang_dsa_indexer_fa3" : "sglang_dsa_skip_indexer_fa3");
      EXPECT_EQ(block->prefill_kernel,
                indexer ? "sglang_dsa_indexer_flashmla_sparse" : "sglang_dsa_skip_indexer_flashmla_sparse");
      EXPECT_EQ(block->dense_kernel, "sglang_dsa_dense_mha_fa3");
      // 0.5.14 keys the cached prefix: a chunk of 1,024 tokens after 4,096 cached is its own row; after
      // 5,000 it lies between the 4,096 and 6,144 rows; far past the largest prefix, the largest alone.
      const auto& p = block->prefill;
      const auto at = [&](double v) {
        return std::size_t(std::find(p.prefix.begin(), p.prefix.end(), v) - p.prefix.begin());
      };
      ASSERT_LT(at(4096), p.prefix.size());
      ASSERT_LT(at(6144), p.prefix.size());
      using Around = std::pair<std::optional<std::size_t>, std::optional<std::size_t>>;
      EXPECT_EQ(p.around(1, 1024, 4096), Around(at(4096), at(4096)));
      EXPECT_EQ(p.around(1, 1024, 5000), Around(at(4096), at(6144)));
      EXPECT_FALSE(p.around(1, 1024, 1e9).second);
      EXPECT_GE(p.surface[at(4096)]->at(1, 1024), p.surface[at(4096)]->fixed_ms);
      // No prefix measured at one shape only (0.5.14's from 155,648 cached tokens on): it cannot tell the
      // fixed part from work (read at 16,384 tokens it became 23,000 s a layer).
      for (const auto& surface : p.surface)
        EXPECT_TRUE(surface->curves.size() > 1 || surface->curves.front().x.size() > 1);
      // Past its last measured length only a block's work grows, linearly (not the whole latency, squared).
      const auto& s0 = *p.surface[at(4096)];
      ASSERT_EQ(s0.outer.front(), 1);
      const double last = s0.curves.front().x.back(), y_last = s0.curves.front().y_ms.back();
      bool out = false;
      EXPECT_NEAR(s0.at(1, 2 * last, &out), s0.fixed_ms + (y_last - s0.fixed_ms) * 2, 1e-9);
      EXPECT_TRUE(out);
      ++seen;
      break;
    }
  }
  EXPECT_EQ(seen, 2);
}

// A DSA label whose rows come under both modules (SGLang 0.5.14 on B300: GLM-5.2-NVFP4's dense-MHA prefill
// as dsa_context_module and as dsa_context_module_skip_indexer, the same kernel_source) is read under the
// layer's own module: with op_name open every such lookup was ambiguous, the indexer layers' short prompts
// took the sparse rows, and B300's TTFT came out 1.36x B200's. A label under one module only is read there
// whichever the layer's: B200 has GLM-5.2-NVFP4's dense rows under dsa_context_module alone, and its
// reusing layers keep them (pinning op_name first once left them without a dense prefill).
TEST(StepModel, DsaRowsOfBothModulesAreReadUnderTheLayersOwn) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = model::resolve_model("zai-org/GLM-5.2-FP8");
  int seen = 0;
  for (const char* gpus : {"8xB200", "8xB300"}) {
    const auto c = hardware::parse_cluster(gpus);
    const auto src = detail::op_source(store, sglang_tp8_deepgemm(m, c, "0.5.14"), c.gpu);
    ASSERT_TRUE(src);
    for (const bool indexer : {true, false}) {
      for (const auto& g : m.layers) {
        const auto* a = std::get_if<model::MlaAttention>(&g.layer.attention);
        if (!a || a->index_topk == 0 || a->indexer != indexer) continue;
        const auto block =
            detail::measured_dsa_module(store, *src,
                                        {*a, m.hidden_size, "nvidia/GLM-5.2-NVFP4", double(a->heads) / 8, 8,
                                         model::DType::kFp8, "bfloat16"});
        ASSERT_TRUE(block) << gpus << " indexer " << indexer;
        EXPECT_EQ(block->dense_kernel, "sglang_dsa_dense_mha_trtllm_ragged")
            << gpus << " indexer " << indexer;
        EXPECT_FALSE(block->prefill_dense.empty()) << gpus << " indexer " << indexer;
        ++seen;
        break;
      }
    }
  }
  EXPECT_EQ(seen, 4);
}

// A decode table whose KV histories end below index_topk says nothing of the sparse regime: SGLang 0.5.10 on
// B200 measured DeepSeek-V3.2's decode block up to a history of 128 tokens only (0.107 ms at 64 requests),
// and scaled from there the whole block grew 64x by 8,192 (6.85 ms a layer: SGLang on 8xB200 predicted 1.7x
// slower than on 8xH200). Its decode rows are left out with the reason (decode takes the roofline); its
// prefill rows stay.
TEST(MeasuredDsa, DecodeRowsEndingBelowIndexTopkAreLeftOut) {
  const MeasuredOperators measured;
  const ops::OpStore& store = measured.store;
  const auto m = model::deepseek_v32();
  const auto* mla = std::get_if<model::MlaAttention>(&m.layers.back().layer.attention);
  ASSERT_TRUE(mla);
  ASSERT_EQ(mla->index_topk, 2048);
  const auto b200 = hardware::parse_cluster("8xB200");
  const auto src = detail::op_source(store, sglang_tp8_deepgemm(m, b200, "0.5.6.post2"), b200.gpu);
  ASSERT_TRUE(src);
  const auto dsa = detail::measured_dsa_module(
      store, *src, {*mla, m.hidden_size, m.id, 16, 8, model::DType::kFp8, "fp8_block"});
  ASSERT_TRUE(dsa);
  EXPECT_FALSE(dsa->decode);
  EXPECT_TRUE(dsa->decode_kernel.empty());
  EXPECT_NE(dsa->decode_left_out.find("end at a KV history of 128 tokens, below index_topk 2048"),
            std::string::npos)
      << dsa->decode_left_out;
  EXPECT_FALSE(dsa->prefill.empty());
  // The same launch on H200 (histories measured to 4,096) keeps its decode rows.
  const auto h200 = hardware::parse_cluster("8xH200");
  const auto hsrc = detail::op_source(store, sglang_tp8_deepgemm(m, h200, "0.5.6.post2"), h200.gpu);
  ASSERT_TRUE(hsrc);
  const auto hdsa = detail::measured_dsa_module(
      store, *hsrc, {*mla, m.hidden_size, m.id, 16, 8, model::DType::kBf16, "fp8_block"});
  ASSERT_TRUE(hdsa && hdsa->decode);
  EXPECT_TRUE(hdsa->decode_left_out.empty());
}

}  // namespace
}  // namespace servelab::sim
