// `sim run`'s path (parse the launch, resolve it for the model and GPUs, plan memory, simulate) for the
// architectures of issue 29, on the models' real configs (AIConfigurator's copies in the data dir, read
// with the ModelOpt file beside them as `--model-config` does): each launch yields a prediction whose
// memory plan carries the model's own KV bytes per token and weights.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/model/model.h"
#include "servelab/sim/sim.h"
#include "sim/sim_detail.h"

namespace servelab::sim {
namespace {

model::ModelSpec aic(const std::string& name) {
  return model::load_config_with_modelopt(common::data_dir() / "model-configs" / "aic" /
                                          (name + "_config.json"));
}

/// Predicts 64 requests of 1024 in / 128 out at concurrency 32 (the completions endpoint: no template
/// tokens) for `argv` on `gpus` at engine release `version` ("" = the module's default); fails the test on a
/// predicted failure.
Prediction predict_run(const std::vector<std::string>& argv, const model::ModelSpec& m, const char* gpus,
                       const std::string& version = "") {
  const auto cluster = hardware::parse_cluster(gpus);
  const auto engine = engines::parse_launch_command(argv, {}, version);
  WorkloadOptions o;
  o.max_concurrency = 32;
  o.chat_template_tokens = 0;
  const auto w = random_fixed(64, 1024, 128);
  auto r = predict(engine, cluster, m, w, o);
  if (const auto* f = std::get_if<PredictedFailure>(&r)) {
    ADD_FAILURE() << m.id << " on " << gpus << ": " << f->message;
    return {};
  }
  Prediction p = std::get<Prediction>(std::move(r));
  const HeadlineMetrics h = headline(p);
  EXPECT_EQ(h.completed, 64) << m.id;
  EXPECT_TRUE(std::isfinite(h.output_tok_s) && h.output_tok_s > 0) << m.id;
  EXPECT_GT(h.mean_tpot_ms, 0) << m.id;
  return p;
}

constexpr double kGiB = 1024.0 * 1024 * 1024;

// Llama-3.1-70B BF16, vLLM TP4 on H100: 80 layers x 2 x (8/4 KV heads) x 128 x 2 B = 81,920 B per token;
// weights 70.55 B x 2 B / 4 = 32.85 GiB a GPU.
TEST(Architectures, Llama31_70BVllmTp4OnH100) {
  const auto m = aic("meta-llama--Meta-Llama-3.1-70B");
  const Prediction p = predict_run({"vllm", "serve", "meta-llama/Llama-3.1-70B", "-tp", "4"}, m, "4xH100");
  EXPECT_DOUBLE_EQ(p.twin.memory.kv_bytes_per_token, 81920);
  EXPECT_NEAR(p.twin.memory.weight_bytes / kGiB, 32.85, 0.05);
  EXPECT_EQ(p.twin.moe_s, 0);
}

// MiniMax-M2.5 (FP8 blocks), vLLM TP4 and TP8 + EP on H200: 62 layers x 2 x 128 x 2 B x 2 (TP4) or 1 (TP8)
// KV heads a rank; routed experts take MoE time. Pure TP8 slices its 1536-wide experts into 192 columns, not
// whole 128-blocks, which vLLM refuses (MiniMax-M2's vLLM recipe: TP8 needs expert parallelism).
TEST(Architectures, MiniMaxM25VllmTp4AndTp8OnH200) {
  const auto m = aic("MiniMaxAI--MiniMax-M2.5");
  const Prediction p4 = predict_run({"vllm", "serve", "MiniMaxAI/MiniMax-M2.5", "-tp", "4"}, m, "4xH200");
  EXPECT_DOUBLE_EQ(p4.twin.memory.kv_bytes_per_token, 63488);
  EXPECT_GT(p4.twin.moe_s, 0);
  EXPECT_TRUE(std::holds_alternative<PredictedFailure>(
      predict(engines::parse_launch_command({"vllm", "serve", "MiniMaxAI/MiniMax-M2.5", "-tp", "8"}),
              hardware::parse_cluster("8xH200"), m, random_fixed(64, 1024, 128), WorkloadOptions{})));
  const Prediction p8 = predict_run(
      {"vllm", "serve", "MiniMaxAI/MiniMax-M2.5", "-tp", "8", "--enable-expert-parallel"}, m, "8xH200");
  EXPECT_DOUBLE_EQ(p8.twin.memory.kv_bytes_per_token, 31744);
  // Half the weights a GPU (230.0 GB of FP8 + BF16 embedding/head over 4 vs 8 GPUs).
  EXPECT_NEAR(p4.twin.memory.weight_bytes / p8.twin.memory.weight_bytes, 2.0, 0.01);
  EXPECT_NEAR(p8.twin.memory.weight_bytes / kGiB, 230022392832.0 / 8 / kGiB, 0.1);
  // TP8 decodes faster per token than TP4 at the same load.
  EXPECT_LT(headline(p8).mean_tpot_ms, headline(p4).mean_tpot_ms);
}

// The other new architectures resolve and predict: nvidia's ModelOpt FP8 Llama (hf_quant_config.json),
// Mixtral-8x7B, the NVFP4 MiniMax on B200, Kimi-K2.5 (INT4 experts, MLA) on H200 and Qwen3-VL-30B-A3B.
TEST(Architectures, OtherNewVariantsPredict) {
  const auto fp8 = aic("nvidia--Llama-3.1-70B-Instruct-FP8");
  const Prediction p =
      predict_run({"vllm", "serve", "nvidia/Llama-3.1-70B-Instruct-FP8", "-tp", "4"}, fp8, "4xH100");
  EXPECT_NEAR(p.twin.memory.weight_bytes / kGiB, 72653733888.0 / 4 / kGiB, 0.05);
  predict_run({"vllm", "serve", "mistralai/Mixtral-8x7B-v0.1", "-tp", "2"},
              aic("mistralai--Mixtral-8x7B-v0.1"), "2xH100");
  predict_run({"vllm", "serve", "nvidia/MiniMax-M2.5-NVFP4", "-tp", "4"}, aic("nvidia--MiniMax-M2.5-NVFP4"),
              "4xB200");
  // Kimi K2.5 (2026-01) is newer than the default vLLM 0.13.0 (engines' architecture bound): 0.17.1.
  const Prediction k = predict_run({"vllm", "serve", "moonshotai/Kimi-K2.5", "-tp", "8"},
                                   aic("moonshotai--Kimi-K2.5"), "8xH200", "0.17.1");
  EXPECT_DOUBLE_EQ(k.twin.memory.kv_bytes_per_token, 70272);  // 61 x 576 x 2 B, replicated
  predict_run({"vllm", "serve", "Qwen/Qwen3-VL-30B-A3B-Instruct", "-tp", "4"},
              aic("Qwen--Qwen3-VL-30B-A3B-Instruct"), "4xH100");
}

// Chunked local attention (Llama 4): a prefill of positions s+1 .. s+n pairs each query with the keys of
// its own chunk up to itself, and a decode query at context c reads ((c - 1) mod chunk) + 1 keys.
TEST(Architectures, ChunkedAttentionPairs) {
  using detail::AttentionPattern, detail::pattern_decode_keys, detail::pattern_prefill_pairs;
  AttentionPattern p;
  p.key_limit = std::numeric_limits<double>::infinity();
  p.chunk = 4;
  // Positions 1..10: 1+2+3+4 + 1+2+3+4 + 1+2 = 23; positions 3..6: 3+4+1+2 = 10.
  EXPECT_DOUBLE_EQ(pattern_prefill_pairs(p, 0, 10), 23);
  EXPECT_DOUBLE_EQ(pattern_prefill_pairs(p, 2, 4), 10);
  EXPECT_DOUBLE_EQ(pattern_decode_keys(p, 4), 4);
  EXPECT_DOUBLE_EQ(pattern_decode_keys(p, 5), 1);
  EXPECT_DOUBLE_EQ(pattern_decode_keys(p, 11), 3);
  // Without a chunk: min(position, key_limit), as before.
  AttentionPattern w;
  w.key_limit = 3;
  EXPECT_DOUBLE_EQ(pattern_prefill_pairs(w, 0, 5), 1 + 2 + 3 + 3 + 3);
  EXPECT_DOUBLE_EQ(pattern_decode_keys(w, 10), 3);
}

// Llama 4 Scout BF16 on 4xH200 (vLLM TP4): every layer's KV is 2 x 2 x 128 x 2 B a token a GPU; the 36
// chunked layers are bounded at one chunk (8192 tokens), the 12 NoPE layers hold the full context.
TEST(Architectures, Llama4ScoutVllmTp4OnH200) {
  const auto m = aic("meta-llama--Llama-4-Scout-17B-16E-Instruct");
  const Prediction p = predict_run(
      {"vllm", "serve", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "-tp", "4", "--max-model-len", "65536"},
      m, "4xH200");
  EXPECT_DOUBLE_EQ(p.twin.memory.kv_bytes_per_token, 12 * 1024);
  EXPECT_DOUBLE_EQ(p.twin.memory.kv_window_bytes_per_token, 36 * 1024);
  EXPECT_EQ(p.twin.memory.window_tokens, 8192);
  EXPECT_GT(p.twin.moe_s, 0);
}

}  // namespace
}  // namespace servelab::sim
