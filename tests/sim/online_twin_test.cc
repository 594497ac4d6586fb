// One simulator, one answer (issue 29 §2): the same requests sent at the same times to the offline run
// (predict: Simulator::run) and to the online twin (OnlineTwin driven in-process by advance_to, as `sim
// serve`'s timer does) get the same per-request TTFT, TPOT and E2E latency and the same duration.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <variant>
#include <vector>

#include "servelab/engines/engines.h"
#include "servelab/sim/sim.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

struct Times {
  double first_s = -1, last_s = -1;
  int tokens = 0;
};

/// Drives `twin` as a perfect server would: request k is submitted at arrival[k] after every event
/// before it was applied; then runs to the end. Returns each request's first and last token times.
std::vector<Times> drive_online(OnlineTwin& twin, const std::vector<WorkloadRequest>& w,
                                const std::vector<double>& arrival, int template_tokens) {
  std::vector<Times> out(w.size());
  double horizon = 0;
  auto emit = [&](std::uint64_t id, int index, double t) {
    auto& o = out[id];
    ASSERT_GE(index, 0);
    EXPECT_LE(t, horizon) << "a token left before its time";
    EXPECT_EQ(index, o.tokens);
    if (index == 0) o.first_s = t;
    o.last_s = t;
    ++o.tokens;
  };
  for (std::size_t k = 0; k < w.size(); ++k) {
    horizon = arrival[k];
    twin.advance_to(arrival[k], emit);
    twin.submit(k, w[k].prompt_len + template_tokens, w[k].output_len, arrival[k]);
  }
  for (int guard = 0; guard < 10000000; ++guard) {
    const double next = twin.next_event_s();
    if (!std::isfinite(next)) break;
    horizon = next;
    twin.advance_to(next, emit);
  }
  return out;
}

/// Runs `w` offline (predict) and online (drive_online at the offline run's send times) on the launch
/// `argv` of `model_name` on `gpus`, and expects every request's TTFT, E2E latency (so TPOT) and the end of
/// the run to agree to 1e-9 s. Returns the offline run's view.
TwinView expect_same(const std::vector<std::string>& argv, const char* model_name, const char* gpus,
                     const std::vector<WorkloadRequest>& w, WorkloadOptions o) {
  const auto model = testing::corpus_model(model_name);
  const auto cluster = hardware::parse_cluster(gpus);
  const auto engine = engines::parse_launch_command(argv);
  o.chat_template_tokens = 0;
  auto predicted = predict(engine, cluster, model, w, o);
  if (!std::holds_alternative<Prediction>(predicted)) {
    ADD_FAILURE() << std::get<PredictedFailure>(predicted).message;
    return {};
  }
  const auto& p = std::get<Prediction>(predicted);
  auto created = OnlineTwin::create(engine, cluster, model, o.calibration);
  if (!std::holds_alternative<std::unique_ptr<OnlineTwin>>(created)) {
    ADD_FAILURE() << "OnlineTwin::create failed";
    return {};
  }
  auto& twin = *std::get<std::unique_ptr<OnlineTwin>>(created);
  std::vector<double> arrival;
  for (const auto& r : p.outputs) arrival.push_back(r.send_time_s);
  const auto online = drive_online(twin, w, arrival, 0);
  double end_online = 0, end_offline = 0, ttft_on = 0, ttft_off = 0;
  for (std::size_t k = 0; k < w.size(); ++k) {
    const auto& off = p.outputs[k];
    EXPECT_TRUE(off.success);
    const auto& on = online[k];
    EXPECT_EQ(on.tokens, w[k].output_len) << k;
    EXPECT_NEAR(on.first_s - arrival[k], off.ttft_s, 1e-9) << "request " << k;
    EXPECT_NEAR(on.last_s - arrival[k], off.latency_s, 1e-9) << "request " << k;
    end_online = std::max(end_online, on.last_s);
    end_offline = std::max(end_offline, arrival[k] + off.latency_s);
    ttft_on += on.first_s - arrival[k];
    ttft_off += off.ttft_s;
  }
  EXPECT_NEAR(end_online, end_offline, 1e-9);
  EXPECT_NEAR(p.twin.duration_s, end_offline, 1e-9);
  EXPECT_NEAR(ttft_on, ttft_off, 1e-9 * static_cast<double>(w.size()));
  return p.twin;
}

// A mix of lengths (some of one output token), deterministic.
std::vector<WorkloadRequest> mixed(int n, int max_prompt, int max_output) {
  std::vector<WorkloadRequest> w;
  for (int i = 0; i < n; ++i) w.push_back({1 + (i * 7919) % max_prompt, 1 + (i * 104729) % max_output});
  return w;
}

WorkloadOptions poisson(double rate) {
  WorkloadOptions o;
  o.request_rate = rate;
  o.seed = 7;
  return o;
}

const std::vector<std::string> kVllm = {"vllm", "serve", "Qwen/Qwen3-8B"};

// A burst: every request is sent at t = 0. The old online loop formed the first step as soon as the first
// request was handed off, before the others were submitted (a step formed ahead of the clock).
TEST(OnlineTwin, BurstAgreesWithTheOfflineRun) {
  expect_same(kVllm, "qwen3-8b", "1xH100", std::vector<WorkloadRequest>(200, WorkloadRequest{1000, 50}), {});
}

TEST(OnlineTwin, PoissonArrivalsAgreeWithTheOfflineRun) {
  expect_same(kVllm, "qwen3-8b", "1xH100", mixed(300, 3000, 200), poisson(20));
}

// KV pressure: long requests on one GPU, preemptions and recomputes.
TEST(OnlineTwin, PreemptionsAgreeWithTheOfflineRun) {
  const auto view = expect_same(kVllm, "qwen3-8b", "1xH100",
                                std::vector<WorkloadRequest>(400, WorkloadRequest{6000, 1500}), poisson(50));
  EXPECT_GT(view.preemptions, 0);
}

TEST(OnlineTwin, DataParallelAgreesWithTheOfflineRun) {
  expect_same({"vllm", "serve", "Qwen/Qwen3-8B", "-dp", "2"}, "qwen3-8b", "2xH100", mixed(200, 2000, 300),
              poisson(30));
}

TEST(OnlineTwin, PipelineMicroBatchesAgreeWithTheOfflineRun) {
  expect_same({"vllm", "serve", "Qwen/Qwen3-8B", "-pp", "2"}, "qwen3-8b", "2xH100", mixed(200, 2000, 300),
              poisson(30));
}

TEST(OnlineTwin, SglangAgreesWithTheOfflineRun) {
  expect_same({"python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"}, "qwen3-8b",
              "1xH100", mixed(200, 2000, 300), poisson(30));
  expect_same({"python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--pp-size", "2"},
              "qwen3-8b", "2xH100", mixed(200, 2000, 300), {});
}

TEST(OnlineTwin, TrtllmAgreesWithTheOfflineRun) {
  expect_same({"trtllm-serve", "Qwen/Qwen3-8B"}, "qwen3-8b", "1xH100", mixed(200, 2000, 300), poisson(30));
}

// A request cancelled mid-decode stops emitting (the step in flight finishes first); the other one runs
// to its end, and the engine is idle afterwards.
TEST(OnlineTwin, CancelStopsARequestsTokens) {
  const auto model = testing::corpus_model("qwen3-8b");
  auto created =
      OnlineTwin::create(engines::parse_launch_command(kVllm), hardware::parse_cluster("1xH100"), model);
  auto& twin = *std::get<std::unique_ptr<OnlineTwin>>(created);
  int tokens[2] = {0, 0};
  double last = 0;
  auto emit = [&](std::uint64_t id, int index, double t) {
    ASSERT_LT(id, 2u);
    EXPECT_EQ(index, tokens[id]++);
    last = t;
  };
  EXPECT_FALSE(twin.submit(0, 500, 200, 0.0));
  EXPECT_FALSE(twin.submit(1, 500, 200, 0.0));
  while (tokens[0] < 50) twin.advance_to(twin.next_event_s(), emit);
  twin.cancel(0);
  const int at_cancel = tokens[0];
  while (std::isfinite(twin.next_event_s())) twin.advance_to(twin.next_event_s(), emit);
  EXPECT_EQ(tokens[0], at_cancel);
  EXPECT_EQ(tokens[1], 200);
  EXPECT_EQ(twin.live_metrics().front().num_requests_running, 0);
  EXPECT_GT(last, 0.0);
}

// SGLang bounds one request by its rank's KV pool (--max-total-tokens 2500: a pool of 2,500 tokens,
// max_req_len 2499): the online twin refuses a prompt the pool cannot hold and emits the clipped output, as
// `sim serve` asks it before submitting (both once hung the server: refused prompts got no answer, clipped
// ones waited for tokens that never came).
TEST(OnlineTwin, SglangRefusesAndClipsByItsPool) {
  const auto model = testing::corpus_model("qwen3-8b");
  auto created = OnlineTwin::create(
      engines::parse_launch_command({"python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B",
                                     "--max-total-tokens", "2500"}),
      hardware::parse_cluster("1xH100"), model);
  ASSERT_TRUE(std::holds_alternative<std::unique_ptr<OnlineTwin>>(created));
  auto& twin = *std::get<std::unique_ptr<OnlineTwin>>(created);
  EXPECT_EQ(
      twin.refusal(3000, 10).value_or(""),
      "Input length (3000 tokens) exceeds the maximum allowed length (2494 tokens). Use a shorter input or "
      "enable --allow-auto-truncate.");
  EXPECT_FALSE(twin.refusal(2000, 1000));
  EXPECT_EQ(twin.admitted_output(2000, 1000), 498);
  EXPECT_EQ(twin.admitted_output(100, 20), 20);
  // Submitted, the clipped request emits exactly its admitted tokens; the refused one none.
  EXPECT_TRUE(twin.submit(0, 3000, 10, 0.0));
  EXPECT_FALSE(twin.submit(1, 2000, 1000, 0.0));
  int tokens[2] = {0, 0};
  while (std::isfinite(twin.next_event_s()))
    twin.advance_to(twin.next_event_s(), [&](std::uint64_t id, int index, double) {
      ASSERT_LT(id, 2u);
      ASSERT_GE(index, 0);
      ++tokens[id];
    });
  EXPECT_EQ(tokens[0], 0);
  EXPECT_EQ(tokens[1], 498);
}

}  // namespace
}  // namespace servelab::sim
