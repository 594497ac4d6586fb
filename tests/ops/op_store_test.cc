// The measured-operator store against hand-picked rows of NVIDIA's tables ($SERVELAB_DATA_DIR/aic-ops,
// read independently with hyparquet when the test was written): exact rows, interpolation along each kind
// of axis, duplicates averaged, extrapolation marked, reuse declarations followed, errors that name what
// was measured. The store is the one `make deps` imports (OpStore::default_dir()); a missing store fails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>

#include "servelab/ops/op_store.h"

namespace servelab::ops {
namespace {

const OpStore& store() {
  static const OpStore s = OpStore::open(OpStore::default_dir());
  return s;
}

std::shared_ptr<const OpTable> table(const char* gpu, const char* backend, const char* version,
                                     const char* name) {
  auto t = store().table(gpu, backend, version, name);
  if (!t) ADD_FAILURE() << "no table " << gpu << " " << backend << " " << version << " " << name;
  return t;
}

// float32 storage: 7 significant digits.
void expect_ms(const OpLookup& r, double want) {
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_NEAR(r.latency_ms, want, 1e-6 * want) << r.detail;
}

TEST(OpStore, IndexListsEveryGpuOfTheData) {
  std::set<std::string> gpus;
  for (const auto& e : store().entries()) gpus.insert(e.gpu);
  EXPECT_EQ(gpus,
            (std::set<std::string>{"a100_sxm", "b200_sxm", "b300_sxm", "h100_sxm", "h200_sxm", "l40s"}));
  EXPECT_EQ(store().entries().size(), 798u);  // parquet files in aic-ops/data
  const auto v = store().versions("h100_sxm", "vllm", "gemm_perf");
  EXPECT_EQ(v, (std::vector<std::string>{"0.14.0", "0.19.0", "0.22.0", "0.24.0"}));
}

TEST(OpStore, GemmExactRowAndInterpolationAlongM) {
  auto t = table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->device(), "NVIDIA H100 80GB HBM3");
  // Row: fp8, m 4096, n 4096, k 4096 -> 0.11918044090270996 ms.
  expect_ms(t->lookup({{"gemm_dtype", "fp8"}, {"m", 4096.0}, {"n", 4096.0}, {"k", 4096.0}}),
            0.11918044090270996);
  // m 3000 between the rows m 2817 (0.10615644190046523) and m 3072 (0.0982088910208808).
  const double t3000 = (3000.0 - 2817.0) / (3072.0 - 2817.0);
  const auto r = t->lookup({{"gemm_dtype", "fp8"}, {"m", 3000.0}, {"n", 4096.0}, {"k", 4096.0}});
  expect_ms(r, 0.10615644190046523 + t3000 * (0.0982088910208808 - 0.10615644190046523));
  EXPECT_FALSE(r.extrapolated);
}

TEST(OpStore, GemmInterpolatesAcrossN) {
  auto t = table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(t);
  // n 4608 halfway between n 4096 (0.11918044090270996) and n 5120 (0.1577555603451199) at m = k = 4096.
  expect_ms(t->lookup({{"gemm_dtype", "fp8"}, {"m", 4096.0}, {"n", 4608.0}, {"k", 4096.0}}),
            0.5 * (0.11918044090270996 + 0.1577555603451199));
}

TEST(OpStore, GemmBeyondTheGridIsScaledAndMarked) {
  auto t = table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(t);
  // m 65536 = 2 x the largest measured m (32768: 0.8951333363850912 ms), latency linear in m beyond it.
  const auto r = t->lookup({{"gemm_dtype", "fp8"}, {"m", 65536.0}, {"n", 4096.0}, {"k", 4096.0}});
  expect_ms(r, 2 * 0.8951333363850912);
  EXPECT_TRUE(r.extrapolated);
  EXPECT_NE(r.detail.find("m=65536 above the measured maximum 32768"), std::string::npos) << r.detail;
}

TEST(OpStore, CurveAlongMMatchesPointLookups) {
  auto t = table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(t);
  OpCurve c;
  const auto r = t->curve({{"gemm_dtype", "fp8"}, {"n", 4608.0}, {"k", 4096.0}}, "m", c);
  ASSERT_TRUE(r.ok) << r.detail;
  EXPECT_EQ(c.x.size(), 74u);  // the table's m grid: 74 values
  for (double m : {1.0, 3000.0, 4096.0, 20000.0, 65536.0}) {
    const auto p = t->lookup({{"gemm_dtype", "fp8"}, {"n", 4608.0}, {"k", 4096.0}, {"m", m}});
    ASSERT_TRUE(p.ok) << p.detail;
    EXPECT_NEAR(c.at(m), p.latency_ms, 1e-9 * p.latency_ms) << "m = " << m;
  }
  bool outside = false;
  c.at(65536.0, &outside);
  EXPECT_TRUE(outside);
  EXPECT_FALSE(t->curve({{"gemm_dtype", "fp8"}, {"n", 4096.0}, {"k", 4096.0}}, "gemm_dtype", c).ok);
}

TEST(OpStore, GemmOnOtherGpus) {
  // bf16 128 x 8192 x 8192: B200 vLLM 0.19.0 0.026762665973769292 ms, A100 vLLM 0.14.0 0.12217066023084854
  // ms.
  auto b200 = table("b200_sxm", "vllm", "0.19.0", "gemm_perf");
  auto a100 = table("a100_sxm", "vllm", "0.14.0", "gemm_perf");
  ASSERT_TRUE(b200 && a100);
  const OpQuery q{{"gemm_dtype", "bfloat16"}, {"m", 128.0}, {"n", 8192.0}, {"k", 8192.0}};
  expect_ms(b200->lookup(q), 0.026762665973769292);
  expect_ms(a100->lookup(q), 0.12217066023084854);
}

TEST(OpStore, DecodeAttentionAveragesDuplicatesAndInterpolatesHistory) {
  auto t = table("h200_sxm", "vllm", "0.19.0", "generation_attention_perf");
  ASSERT_TRUE(t);
  const OpQuery base{
      {"batch_size", 64.0}, {"num_heads", 16.0},        {"num_key_value_heads", 2.0},   {"head_dim", 128.0},
      {"window_size", 0.0}, {"attn_dtype", "bfloat16"}, {"kv_cache_dtype", "bfloat16"}, {"beam_width", 1.0},
      {"isl", 1.0}};
  // The table measured step (KV history) 1023 twice (collector runs of vLLM 0.19.0 and 0.19.1 in one
  // release directory): 0.026591998835404713 and 0.026608000199000042, averaged.
  OpQuery q = base;
  q["step"] = 1023.0;
  expect_ms(t->lookup(q), 0.5 * (0.026591998835404713 + 0.026608000199000042));
  // step 3071 between 2047 (0.04232533276081085, 0.041493333876132965) and 4095 (0.07353066901365916,
  // 0.07344000041484833).
  q["step"] = 3071.0;
  const double y0 = 0.5 * (0.04232533276081085 + 0.041493333876132965);
  const double y1 = 0.5 * (0.07353066901365916 + 0.07344000041484833);
  expect_ms(t->lookup(q), y0 + (3071.0 - 2047.0) / (4095.0 - 2047.0) * (y1 - y0));
}

TEST(OpStore, PrefillAttentionInterpolatesInSqrtLatency) {
  // SGLang 0.5.9's table has no window_size column: a query's window_size = 0 is ignored there.
  auto t = table("h200_sxm", "sglang", "0.5.9", "context_attention_perf");
  ASSERT_TRUE(t);
  EXPECT_FALSE(t->has_column("window_size"));
  OpQuery q{{"batch_size", 4.0}, {"num_heads", 16.0},        {"num_key_value_heads", 2.0},
            {"head_dim", 128.0}, {"attn_dtype", "bfloat16"}, {"kv_cache_dtype", "bfloat16"},
            {"step", 0.0},       {"window_size", 0.0},       {"isl", 4096.0}};
  expect_ms(t->lookup(q), 0.48366718292236327);
  // isl 2560 between 2048 (0.14611999988555907) and 3072 (0.3155247926712036), sqrt(latency) linear.
  q["isl"] = 2560.0;
  const double s = 0.5 * (std::sqrt(0.14611999988555907) + std::sqrt(0.3155247926712036));
  expect_ms(t->lookup(q), s * s);
  // isl 32768 = 2 x 16384 (7.768055725097656 ms): quadratic beyond the grid.
  q["isl"] = 32768.0;
  const auto r = t->lookup(q);
  expect_ms(r, 4 * 7.768055725097656);
  EXPECT_TRUE(r.extrapolated);
}

TEST(OpStore, MoeInterpolatesTokens) {
  auto t = table("h200_sxm", "sglang", "0.5.9", "moe_perf");
  ASSERT_TRUE(t);
  OpQuery q{{"moe_dtype", "fp8_block"}, {"hidden_size", 7168.0},
            {"inter_size", 2048.0},     {"topk", 8.0},
            {"num_experts", 256.0},     {"moe_tp_size", 1.0},
            {"moe_ep_size", 8.0},       {"distribution", "balanced"},
            {"num_tokens", 1024.0}};
  expect_ms(t->lookup(q), 0.5429619216918946);
  // 1280 tokens: between 1024 (0.5429619216918946) and 1536 (0.5794700622558594).
  q["num_tokens"] = 1280.0;
  expect_ms(t->lookup(q), 0.5 * (0.5429619216918946 + 0.5794700622558594));
  // Without the routing distribution the three measured ones are ambiguous: say so, list them.
  q.erase("distribution");
  const auto r = t->lookup(q);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("distribution"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("balanced, power_law_1.01, power_law_1.2"), std::string::npos) << r.detail;
}

TEST(OpStore, NcclAllReduce) {
  auto t = table("h100_sxm", "nccl", "2.27.3", "nccl_perf");
  ASSERT_TRUE(t);
  // The file holds two runs of every point (1 Mi elements: 0.03855 and 0.038689999999999995 ms; 2 Mi:
  // 0.050320000000000004 and 0.05049): averaged.
  OpQuery q{
      {"op_name", "all_reduce"}, {"nccl_dtype", "half"}, {"num_gpus", 8.0}, {"message_size", 1048576.0}};
  const double one = 0.5 * (0.03855 + 0.038689999999999995), two = 0.5 * (0.050320000000000004 + 0.05049);
  expect_ms(t->lookup(q), one);
  q["message_size"] = 1572864.0;  // 1.5 Mi: halfway
  expect_ms(t->lookup(q), 0.5 * (one + two));
}

TEST(OpStore, ReuseDeclarationLeadsToTheDonorRelease) {
  // h200 TensorRT-LLM 1.3.0rc15 declares computescale_perf reused from 1.3.0rc10 (reuse.yaml).
  auto t = store().table("h200_sxm", "trtllm", "1.3.0rc15", "computescale_perf");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->version(), "1.3.0rc10");
  expect_ms(t->lookup({{"quant_dtype", "fp8"}, {"m", 32768.0}, {"k", 51200.0}}), 2.4173152923583987);
  EXPECT_EQ(store().table("h200_sxm", "trtllm", "9.9.9", "computescale_perf"), nullptr);
}

TEST(OpStore, UnmeasuredKeyNamesWhatWasMeasured) {
  auto t = table("h100_sxm", "vllm", "0.19.0", "gemm_perf");
  ASSERT_TRUE(t);
  const auto r = t->lookup({{"gemm_dtype", "nvfp4"}, {"m", 16.0}, {"n", 4096.0}, {"k", 4096.0}});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.detail.find("no rows with gemm_dtype = nvfp4 (measured: bfloat16, fp8, fp8_block)"),
            std::string::npos)
      << r.detail;
  EXPECT_EQ(t->distinct("gemm_dtype"), (std::vector<std::string>{"bfloat16", "fp8", "fp8_block"}));
  EXPECT_EQ(t->distinct("kernel_source", {{"gemm_dtype", "fp8"}}),
            (std::vector<std::string>{"vllm_default"}));
}

TEST(OpStore, CorruptFilesAreRefusedWithTheirName) {
  const auto path = std::filesystem::temp_directory_path() / "servelab_op_store_test_bad.ops";
  {
    std::ofstream f(path, std::ios::binary);
    f << "SLOPS01\n" << std::string("\xff\xff\xff\x7f", 4) << "{}";
  }
  try {
    OpTable::open(path);
    ADD_FAILURE() << "a truncated table opened";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
  EXPECT_THROW(OpStore::open(std::filesystem::temp_directory_path() / "servelab-no-such-store"),
               std::runtime_error);
}

}  // namespace
}  // namespace servelab::ops
