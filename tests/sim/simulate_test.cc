// The twin's discrete-event simulation: workload definition, determinism, scheduler invariants.
#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <string>

#include "metrics/metrics.h"
#include "engines/engines.h"
#include "sim/sim.h"

namespace servelab::sim {
namespace {

using engines::EngineConfig;
using engines::EngineKind;

EngineConfig parse(const std::string& command) {
  return engines::parse_launch_command(engines::split_command_line(command), {});
}

EngineConfig vllm_tp8() { return parse("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8"); }

TEST(Workload, ShareGpt1000MatchesStudyTotals) {
  const auto w = sharegpt_1000();
  ASSERT_EQ(w.size(), 1000u);
  long long in = 0, out = 0;
  for (const auto& r : w) {
    in += r.prompt_len;
    out += r.output_len;
    EXPECT_GE(r.prompt_len, 4);
    EXPECT_LE(r.prompt_len + r.output_len, 2048);  // vLLM's ShareGPT filter
  }
  EXPECT_EQ(in, 219111);   // the study's "Total input tokens"
  EXPECT_EQ(out, 197162);  // mean generated total of the released full-success runs
}

TEST(Simulate, DeterministicAndComplete) {
  const Cluster c = parse_cluster("8xH200");
  const auto a = predict(vllm_tp8(), c, sharegpt_1000(), {});
  const auto b = predict(vllm_tp8(), c, sharegpt_1000(), {});
  ASSERT_TRUE(std::holds_alternative<Prediction>(a)) << std::get<Failure>(a).reason;
  const auto& pa = std::get<Prediction>(a);
  const auto& pb = std::get<Prediction>(b);
  ASSERT_EQ(pa.outputs.size(), 1000u);
  EXPECT_EQ(pa.twin.duration_s, pb.twin.duration_s);
  for (std::size_t i = 0; i < pa.outputs.size(); ++i) {
    const auto& o = pa.outputs[i];
    ASSERT_TRUE(o.success);
    EXPECT_EQ(o.output_tokens, sharegpt_1000()[i].output_len);
    EXPECT_EQ(o.itl_s.size() + 1, static_cast<std::size_t>(o.output_tokens));  // one token per chunk
    EXPECT_EQ(o.ttft_s, pb.outputs[i].ttft_s);
    const double sum_itl = std::accumulate(o.itl_s.begin(), o.itl_s.end(), 0.0);
    EXPECT_NEAR(o.ttft_s + sum_itl, o.latency_s, 1e-9);
  }
  const auto m = metrics::compute_metrics(pa.outputs, pa.twin.duration_s, {});
  EXPECT_EQ(m.completed, 1000);
  EXPECT_EQ(m.total_input, 219111);
}

TEST(Simulate, ReleasedFailuresReproduced) {
  // The study's refusals (engines rules) and the vLLM -dp 8 OOM at full context (memory plan).
  const Cluster c = parse_cluster("8xH200");
  const auto w = random_fixed(4, 100, 10);
  auto fails = [&](const std::string& cmd, std::map<std::string, std::string> env = {}) {
    const auto r = predict(engines::parse_launch_command(engines::split_command_line(cmd), env), c, w, {});
    return std::holds_alternative<Failure>(r) ? std::get<Failure>(r).reason : std::string();
  };
  const std::string base = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8";
  EXPECT_EQ(fails(base, {{"VLLM_ATTENTION_BACKEND", "FLASHMLA"}}),
            "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. "
            "Reason: ['sparse not supported']");
  EXPECT_NE(fails(base + " -dcp 8").find("log-sum-exp"), std::string::npos);
  EXPECT_NE(fails("python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp-size 8",
                  {{"SGLANG_ENABLE_JIT_DEEPGEMM", "0"}}).find("DeepGEMM"), std::string::npos);
  const std::string dp8 = "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 1 -dp 8 --enable-expert-parallel";
  EXPECT_NE(fails(dp8).find("max seq len (163840)"), std::string::npos);
  EXPECT_EQ(fails(dp8 + " --max-model-len 81920"), "");
  EXPECT_EQ(fails(base), "");
}

TEST(Simulate, RequestLongerThanContextFailsLikeVllm) {
  EngineConfig e = vllm_tp8();
  e.max_model_len = 4096;
  const std::vector<WorkloadRequest> w{{4000, 200}, {100, 10}};
  const auto r = predict(e, parse_cluster("8xH200"), w, {});
  const auto& p = std::get<Prediction>(r);
  EXPECT_FALSE(p.outputs[0].success);
  EXPECT_EQ(p.outputs[0].http_status, 400);
  EXPECT_NE(p.outputs[0].error.find("maximum context length is 4096"), std::string::npos);
  EXPECT_TRUE(p.outputs[1].success);
}

TEST(Simulate, SglangSpeculativeCapsRunningRequestsAt48) {
  const EngineConfig e = parse(
      "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp-size 8 "
      "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1 "
      "--speculative-num-draft-tokens 2");
  const auto w = random_fixed(200, 100, 50);
  const auto predicted = predict(e, parse_cluster("8xH200"), w, {});  // a reference into the temporary dangled
  const auto& p = std::get<Prediction>(predicted);
  EXPECT_EQ(p.twin.max_batch_requests, 48);
  EXPECT_GT(p.twin.mtp_acceptance, 0.0);
  long long chunks = 0, tokens = 0;
  for (const auto& o : p.outputs) {
    chunks += static_cast<long long>(o.itl_s.size()) + 1;
    tokens += o.output_tokens;
  }
  EXPECT_LT(chunks, tokens);  // accepted draft tokens arrive two to a chunk
}

TEST(Simulate, KvExhaustionPreemptsInVllm) {
  EngineConfig e = vllm_tp8();
  e.gpu_memory_fraction = 0.62;  // leaves a KV pool of ~45 K tokens
  e.max_model_len = 8192;
  const auto w = random_fixed(256, 1000, 400);
  const auto r = predict(e, parse_cluster("8xH200"), w, {});
  ASSERT_TRUE(std::holds_alternative<Prediction>(r)) << std::get<Failure>(r).reason;
  const auto& p = std::get<Prediction>(r);
  EXPECT_GT(p.twin.preemptions, 0);
  for (const auto& o : p.outputs) EXPECT_TRUE(o.success);
}

}  // namespace
}  // namespace servelab::sim
