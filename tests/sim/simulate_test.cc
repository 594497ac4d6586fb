// The twin's discrete-event simulation on hand-built launches: timing identities, the schedulers'
// invariants (vLLM preemption, SGLang admission, TRT-LLM no-evict), pipeline micro-batches, DP routing,
// speculative decoding, client concurrency caps and arrivals, and the trace replay used by the fit.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include <numeric>

#include "servelab/metrics/metrics.h"
#include "servelab/sim/sim.h"
#include "sim/api_server.h"
#include "sim/sim_detail.h"
#include "test_launch.h"

namespace servelab::sim {
namespace {

using testing::corpus_model;
using testing::test_launch;

struct Case {
  model::ModelSpec model = corpus_model("qwen3-8b");
  hardware::ClusterSpec cluster = hardware::parse_cluster("1xH100");
  engines::ResolvedLaunch launch;
  Case() {
    launch = test_launch(model, cluster, 1);
    launch.max_model_len = 32768;
  }
};

// Options whose calibration has no API-server delay and no first-token latency: the engine's own
// timing identities hold at the client.
WorkloadOptions engine_only() {
  WorkloadOptions o;
  CalibrationTable t;
  t.engines["vllm"].cal = Calibration{1.0, 2.5, 20.0, 0.0, 0.0};
  o.calibration = t;
  return o;
}

Prediction ok(PredictResult r) {
  if (const auto* f = std::get_if<PredictedFailure>(&r)) {
    ADD_FAILURE() << f->message;
    return Prediction{};
  }
  return std::get<Prediction>(std::move(r));
}

// 300 requests of mixed lengths (100-999 prompt, 20-219 output tokens).
std::vector<WorkloadRequest> mixed_requests() {
  std::vector<WorkloadRequest> w;
  for (int i = 0; i < 300; ++i) w.push_back({100 + (i * 37) % 900, 20 + (i * 11) % 200});
  return w;
}

// A run of `w` with its trace recorded into `trace`.
Prediction traced(const Case& c, const std::vector<WorkloadRequest>& w, WorkloadOptions o, Trace& trace) {
  o.trace = &trace;
  return ok(predict_resolved(c.launch, c.cluster, w, o));
}

// One request alone: its TTFT is one prefill step, every later token one decode step; the run is their
// sum. The step times are the step model's at the calibration the prediction used.
TEST(Simulate, OneRequestIsPrefillThenDecodeSteps) {
  Case c;
  const std::vector<WorkloadRequest> w = {{1000, 10}};
  WorkloadOptions o = engine_only();
  o.chat_template_tokens = 0;
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
  ASSERT_EQ(p.outputs.size(), 1u);
  const auto& out = p.outputs[0];
  ASSERT_TRUE(out.success);
  EXPECT_EQ(out.output_tokens, 10);
  EXPECT_EQ(out.itl_s.size(), 9u);
  EXPECT_EQ(p.twin.steps, 10);
  const double sum = std::accumulate(out.itl_s.begin(), out.itl_s.end(), out.ttft_s);
  EXPECT_NEAR(sum, out.latency_s, 1e-12);
  EXPECT_NEAR(out.latency_s, p.twin.duration_s, 1e-12);
  // The decode steps grow with the context by the KV read only: nearly equal.
  EXPECT_NEAR(out.itl_s.front(), out.itl_s.back(), 1e-4);
  EXPECT_GT(out.ttft_s, out.itl_s.front());
  EXPECT_EQ(p.twin.graphed_steps, 9);    // decode steps replay graphs, the prefill does not
  EXPECT_EQ(p.twin.piecewise_steps, 0);  // 1,000 tokens: above the graph sizes, the prefill runs eagerly
  // PIECEWISE mode (vLLM's only mode before 0.11): no step replays a full graph; the decode steps replay
  // the layers' pieces.
  Case pw;
  pw.launch.execution.graphs = engines::GraphMode::kPiecewise;
  const auto& q = ok(predict_resolved(pw.launch, pw.cluster, w, o));
  EXPECT_EQ(q.twin.graphed_steps, 0);
  EXPECT_EQ(q.twin.piecewise_steps, 9);
}

// Without CUDA graphs every kernel keeps its launch-to-launch gap on the GPU and the CPU's launches may
// take longer still: a step is never faster than its graphed twin (a new-user trial found --enforce-eager
// predicted 13% faster at batch 1 when the eager step dropped the gaps).
TEST(Simulate, AStepWithoutGraphsIsNeverFaster) {
  Case graphed, eager;
  eager.launch.execution.graphs = engines::GraphMode::kNone;
  const std::vector<WorkloadRequest> w = {{1000, 50}};
  const auto& g = ok(predict_resolved(graphed.launch, graphed.cluster, w, engine_only()));
  const auto& e = ok(predict_resolved(eager.launch, eager.cluster, w, engine_only()));
  ASSERT_EQ(g.outputs[0].itl_s.size(), 49u);
  ASSERT_EQ(e.outputs[0].itl_s.size(), 49u);
  EXPECT_EQ(g.twin.graphed_steps, 49);
  EXPECT_EQ(e.twin.graphed_steps, 0);
  for (std::size_t i = 0; i < 49; ++i) EXPECT_GE(e.outputs[0].itl_s[i], g.outputs[0].itl_s[i]) << i;
}

TEST(Simulate, DeterministicAndTheTraceReplaysExactly) {
  Case c;
  const std::vector<WorkloadRequest> w = mixed_requests();
  Trace trace;
  const Prediction a = traced(c, w, {}, trace);
  const Prediction b = ok(predict_resolved(c.launch, c.cluster, w, {}));
  EXPECT_EQ(a.twin.duration_s, b.twin.duration_s);
  const HeadlineMetrics h = headline(a);
  const HeadlineMetrics r = replay(trace, a.context.calibration);
  EXPECT_EQ(r.completed, h.completed);
  EXPECT_NEAR(r.duration_s, h.duration_s, 1e-6 * h.duration_s);
  EXPECT_NEAR(r.total_tok_s, h.total_tok_s, 1e-6 * h.total_tok_s);
  EXPECT_NEAR(r.mean_ttft_ms, h.mean_ttft_ms, 1e-6 * h.mean_ttft_ms);
  EXPECT_NEAR(r.mean_tpot_ms, h.mean_tpot_ms, 1e-6 * h.mean_tpot_ms);
  // Re-timed with a slower CPU, the run is longer by about steps x the extra time.
  Calibration slow = a.context.calibration;
  slow.cpu_step_ms += 1.0;
  EXPECT_NEAR(replay(trace, slow).duration_s - h.duration_s, a.twin.steps * 1e-3, 0.02 * h.duration_s);
}

// Under a client concurrency cap the client frees a slot when it has the request's last token, which
// reaches it first_token_ms after the step that made it: the trace replay used by the fit re-times those
// sends the same way, so it reproduces the run exactly.
TEST(Simulate, TheTraceReplaysACappedRunExactly) {
  Case c;
  WorkloadOptions o;
  o.max_concurrency = 16;
  Trace trace;
  const Prediction a = traced(c, mixed_requests(), o, trace);
  ASSERT_GT(a.context.calibration.first_token_ms, 0);
  const HeadlineMetrics h = headline(a), r = replay(trace, a.context.calibration);
  // (The trace keeps step times in floats: 1e-6, as DeterministicAndTheTraceReplaysExactly.) Before the
  // trace said which slots free at the client's last token, the replay sent those requests first_token_ms
  // early: mean TTFT 67.7 ms where the run had 57.0.
  EXPECT_EQ(r.completed, h.completed);
  EXPECT_NEAR(r.duration_s, h.duration_s, 1e-6 * h.duration_s);
  EXPECT_NEAR(r.mean_ttft_ms, h.mean_ttft_ms, 1e-6 * h.mean_ttft_ms);
  EXPECT_NEAR(r.mean_tpot_ms, h.mean_tpot_ms, 1e-6 * h.mean_tpot_ms);
}

// A traced run compressed (compress_trace) re-times within its tolerance under any calibration, with far
// fewer entries: 300 requests under a client cap of 16 (sends after steps) and then at 20 requests/s
// (waits for arrivals). Tolerance 0 merges only identical steps and replays to rounding.
TEST(Simulate, ACompressedTraceReplaysWithinItsTolerance) {
  Case c;
  // One long decode: its steps differ only by the KV read growing a token at a time.
  {
    Trace trace;
    traced(c, {{1000, 2000}}, {}, trace);
    const Trace merged = compress_trace(trace, 1e-3);
    EXPECT_EQ(trace.steps.size(), 2000u);
    EXPECT_LT(merged.steps.size(), 40u);  // measured: 18
    const HeadlineMetrics h = replay(trace, Calibration{}), m = replay(merged, Calibration{});
    EXPECT_NEAR(m.mean_tpot_ms, h.mean_tpot_ms, 1e-3 * h.mean_tpot_ms);
    EXPECT_NEAR(m.mean_ttft_ms, h.mean_ttft_ms, 1e-3 * h.mean_ttft_ms);
  }
  for (const double rate : {std::numeric_limits<double>::infinity(), 20.0}) {
    WorkloadOptions o;
    o.request_rate = rate;
    if (!std::isfinite(rate)) o.max_concurrency = 16;
    Trace trace;
    const Prediction p = traced(c, mixed_requests(), o, trace);
    const Trace merged = compress_trace(trace, 1e-3), exact = compress_trace(trace, 0.0);
    ASSERT_EQ(trace.steps.size(), static_cast<std::size_t>(p.twin.steps));
    EXPECT_LT(merged.steps.size(), trace.steps.size()) << "rate " << rate;
    EXPECT_LE(exact.steps.size(), trace.steps.size());
    double repeats = 0;
    for (float r : merged.steps.repeat) repeats += r;
    EXPECT_EQ(repeats, static_cast<double>(trace.steps.size()));
    // Slower only: re-timed faster, a run with timed arrivals would start steps before their requests arrive
    // (the trace keeps the traced run's batches; trace.h).
    Calibration slow_gpu = p.context.calibration, cpu_bound = slow_gpu;
    slow_gpu.kernel_scale *= 0.5;
    cpu_bound.cpu_step_ms += 1.0;
    cpu_bound.cpu_request_us += 50;
    for (const Calibration& cal : {p.context.calibration, slow_gpu, cpu_bound}) {
      const HeadlineMetrics h = replay(trace, cal), m = replay(merged, cal), e = replay(exact, cal);
      EXPECT_EQ(m.completed, h.completed);
      EXPECT_NEAR(m.duration_s, h.duration_s, 1e-3 * h.duration_s);
      EXPECT_NEAR(m.mean_ttft_ms, h.mean_ttft_ms, 1e-3 * h.mean_ttft_ms);
      EXPECT_NEAR(m.mean_tpot_ms, h.mean_tpot_ms, 1e-3 * h.mean_tpot_ms);
      EXPECT_NEAR(e.mean_ttft_ms, h.mean_ttft_ms, 1e-9 * h.mean_ttft_ms);
      EXPECT_NEAR(e.mean_tpot_ms, h.mean_tpot_ms, 1e-9 * h.mean_tpot_ms);
    }
  }
}

// Shared prompt prefixes (WorkloadRequest::prefix_group) with prefix caching on: 40 requests in two groups,
// each prompt 2,000 shared + 100 own tokens, sent 0.5 s apart (each is done before the next arrives, so
// nothing is evicted and nothing queues). The first request of each group prefills its whole prompt and
// caches the prefix's 125 blocks of 16 = 2,000 tokens; the other 38 find them cached and prefill 100
// tokens: 38 x 2,000 = 76,000 prompt tokens not prefilled, and their TTFT falls. With prefix caching off
// every prompt is prefilled whole.
TEST(Simulate, SharedPrefixesArePrefilledOncePerGroup) {
  Case c;
  std::vector<WorkloadRequest> w;
  for (int i = 0; i < 40; ++i) w.push_back({2100, 8, i % 2, 2000});
  WorkloadOptions o = engine_only();
  o.request_rate = 2.0;
  o.constant_arrivals = true;  // evenly spaced
  ASSERT_TRUE(c.launch.prefix_caching);
  const Prediction on = ok(predict_resolved(c.launch, c.cluster, w, o));
  EXPECT_EQ(on.twin.shared_prefix_tokens_reused, 38 * 2000);
  c.launch.prefix_caching = false;
  const Prediction off = ok(predict_resolved(c.launch, c.cluster, w, o));
  EXPECT_EQ(off.twin.shared_prefix_tokens_reused, 0);
  // The first of each group prefills 2,100 tokens in both runs; the rest 100 (+ the step's floor) with the
  // cache, so their TTFT is well under the uncached one.
  for (int i = 2; i < 40; ++i) EXPECT_LT(on.outputs[i].ttft_s, 0.5 * off.outputs[i].ttft_s) << i;
  EXPECT_NEAR(on.outputs[0].ttft_s, off.outputs[0].ttft_s, 1e-9);
  // Without a group (prefix_group -1) nothing is shared.
  c.launch.prefix_caching = true;
  for (auto& r : w) r.prefix_group = -1;
  EXPECT_EQ(ok(predict_resolved(c.launch, c.cluster, w, o)).twin.shared_prefix_tokens_reused, 0);
}

// The cached prefix's KV is held once, not per request: a burst of 20 requests of one group (4,000 shared +
// 100 own tokens, 8 outputs). The first hand-off prefills its 4,100 tokens alone (one step); the other 19,
// handed off during that step, find the 4,000-token prefix cached when it ends and prefill 100 tokens each.
// Peak KV: about 4,000 + 20 x 108 tokens with the cache, 20 x 4,108 without it.
TEST(Simulate, ACachedPrefixIsHeldOnce) {
  Case c;
  std::vector<WorkloadRequest> w(20, WorkloadRequest{4100, 8, 0, 4000});
  const Prediction on = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  EXPECT_EQ(on.twin.shared_prefix_tokens_reused, 19 * 4000);
  c.launch.prefix_caching = false;
  const Prediction off = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  EXPECT_EQ(off.twin.shared_prefix_tokens_reused, 0);
  EXPECT_GT(off.twin.kv_peak_fraction, 0.0);
  EXPECT_NEAR(on.twin.kv_peak_fraction / off.twin.kv_peak_fraction, (4000.0 + 20 * 112) / (20 * 4112), 0.02);
}

// Three requests arrive together, 1 ms of API-server work each. Processor sharing ends all three's work
// at 3 ms and hands them off one at a time, at 3, 3.05 and 3.10 ms (kApiHandOffS apart); FIFO
// (TensorRT-LLM's trtllm-serve) at 1, 2 and 3 ms. Dropping the second at 0.5 ms moves the third to 2 ms.
TEST(Simulate, FifoApiServerHandsOffOneAfterAnother) {
  std::vector<std::pair<double, int>> done;
  detail::ApiServer ps(1e-3);
  for (int i = 0; i < 3; ++i) ps.arrive(i, 0.0, done);
  EXPECT_NEAR(ps.next_completion(), 3e-3, 1e-12);
  ps.advance(3.06e-3, done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_NEAR(ps.next_completion(), 3.1e-3, 1e-12);
  ps.advance(1.0, done);
  ASSERT_EQ(done.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(done[i].second, i);
    EXPECT_NEAR(done[i].first, 3e-3 + i * detail::kApiHandOffS, 1e-12);
  }
  EXPECT_DOUBLE_EQ(detail::kApiHandOffS, 50e-6);
  done.clear();
  detail::ApiServer fifo(1e-3, true);
  for (int i = 0; i < 3; ++i) fifo.arrive(i, 0.0, done);
  EXPECT_NEAR(fifo.next_completion(), 1e-3, 1e-12);
  fifo.advance(1.0, done);
  ASSERT_EQ(done.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(done[i].second, i);
    EXPECT_NEAR(done[i].first, (i + 1) * 1e-3, 1e-12);
  }
  done.clear();
  detail::ApiServer drop(1e-3, true);
  for (int i = 0; i < 3; ++i) drop.arrive(i, 0.0, done);
  drop.advance(0.5e-3, done);
  EXPECT_TRUE(drop.remove(1));
  drop.advance(1.0, done);
  ASSERT_EQ(done.size(), 2u);
  EXPECT_NEAR(done[0].first, 1e-3, 1e-12);
  EXPECT_EQ(done[1].second, 2);
  EXPECT_NEAR(done[1].first, 2e-3, 1e-12);
}

// A burst of 200 requests (100 prompt tokens, 2 outputs) through an API server of 5 ms per request, run
// twice on the engine-only calibration: the launch as it is, then after `change` to its execution policy,
// traced. The API-server tests below compare the two runs.
struct ApiBurst {
  Prediction before, after;
  Trace trace;                               ///< of the `after` run
  engines::ExecutionPolicy after_execution;  ///< the changed policy
};
ApiBurst api_burst(const std::function<void(engines::ExecutionPolicy&)>& change) {
  Case c;
  std::vector<WorkloadRequest> w(200, WorkloadRequest{100, 2});
  WorkloadOptions o = engine_only();
  o.chat_template_tokens = 0;
  o.calibration->engines["vllm"].cal.api_request_ms = 5.0;
  o.calibration->engines["vllm"].cal.harmony_api_share = 0.1;
  ApiBurst b;
  b.before = ok(predict_resolved(c.launch, c.cluster, w, o));
  change(c.launch.execution);
  b.after_execution = c.launch.execution;
  o.trace = &b.trace;
  b.after = ok(predict_resolved(c.launch, c.cluster, w, o));
  return b;
}

// A FIFO API server in a run: 200 requests, 5 ms each, reach the engine at 5, 10, ..., 1000 ms instead
// of all at 1000 ms, so the first TTFT is about 5 ms of hand-off plus its step, not 1 s; the trace
// records the mode and replays the run exactly.
TEST(Simulate, FifoApiServerStartsTheEngineAtOnce) {
  const ApiBurst b = api_burst([](engines::ExecutionPolicy& ex) { ex.api_fifo = true; });
  const Prediction &ps = b.before, &fifo = b.after;
  const Trace& trace = b.trace;
  EXPECT_TRUE(trace.api_fifo);
  double first_ps = 1e9, first_fifo = 1e9;
  for (const auto& r : ps.outputs) first_ps = std::min(first_ps, r.ttft_s);
  for (const auto& r : fifo.outputs) first_fifo = std::min(first_fifo, r.ttft_s);
  EXPECT_GE(first_ps, 1.0);
  EXPECT_LT(first_fifo, 0.1);
  const HeadlineMetrics hf = headline(fifo), r = replay(trace, fifo.context.calibration);
  EXPECT_LT(hf.mean_ttft_ms, headline(ps).mean_ttft_ms);
  EXPECT_NEAR(r.mean_ttft_ms, hf.mean_ttft_ms, 1e-6 * hf.mean_ttft_ms);
  EXPECT_NEAR(r.duration_s, hf.duration_s, 1e-6 * hf.duration_s);
}

// The API server is processor-shared: a burst of N requests reaches the engine together after N x the
// work per request. With api_request_ms 5 and 200 requests that is 1.0 s on the Jinja chat-template path
// and 200 x 0.1 x 5 ms = 0.1 s when the launch renders with openai_harmony (harmony_api_share 0.1, a fitted
// field set here); the engine's run behind it is
// the same, so every TTFT is 0.9 s shorter, and the trace replays the harmony run exactly.
TEST(Simulate, HarmonyChatSkipsMostOfTheApiServerWork) {
  const ApiBurst b = api_burst([](engines::ExecutionPolicy& ex) { ex.harmony_chat = true; });
  const Prediction &jinja = b.before, &harmony = b.after;
  const Trace& trace = b.trace;
  EXPECT_DOUBLE_EQ(detail::api_work_share(b.after_execution, harmony.context.calibration), 0.1);
  EXPECT_DOUBLE_EQ(detail::api_work_share(b.before.context.launch.execution, jinja.context.calibration), 1.0);
  const HeadlineMetrics hj = headline(jinja), hh = headline(harmony);
  EXPECT_NEAR(hj.mean_ttft_ms - hh.mean_ttft_ms, 900.0, 1e-6);
  EXPECT_NEAR(hj.duration_s - hh.duration_s, 0.9, 1e-9);
  EXPECT_NEAR(hh.mean_tpot_ms, hj.mean_tpot_ms, 1e-9);
  EXPECT_TRUE(trace.harmony_chat);
  const HeadlineMetrics r = replay(trace, harmony.context.calibration);
  EXPECT_NEAR(r.mean_ttft_ms, hh.mean_ttft_ms, 1e-6 * hh.mean_ttft_ms);
  EXPECT_NEAR(r.duration_s, hh.duration_s, 1e-6 * hh.duration_s);
}

// vLLM preempts (recompute) when the pool runs out while decoding; nothing is lost and every request
// finishes with all its tokens. The count is checked against the work it costs: a request preempted after
// k of its 600 tokens is prefilled again over its 1500 prompt tokens + k outputs (vLLM recompute), so the
// query tokens beyond the no-preemption total 400 × (1500 + 599) lie in [1499, 2100] per preemption (less
// what the prefix cache still held).
TEST(Simulate, VllmPreemptsAndRecomputesWhenKvRunsOut) {
  Case c;
  c.launch.memory.fraction = 0.865;  // a small pool: weights 16.4 GB, ~4 GB of KV
  std::vector<WorkloadRequest> w(400, WorkloadRequest{1500, 600});
  WorkloadOptions opts;
  opts.chat_template_tokens = 0;  // prompts of exactly 1500 tokens
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, opts));
  // 400 × 2100 tokens at once cannot fit the pool: the peak run holds more than the pool fits at full length.
  const long long pool_tokens = p.twin.memory.kv_tokens_per_rank;
  ASSERT_GT(pool_tokens, 0);
  EXPECT_LT(pool_tokens, 400LL * 2100);
  EXPECT_GT(static_cast<long long>(p.twin.max_batch_requests) * 2100, pool_tokens);
  const long long query_tokens =
      std::llround(p.twin.mean_step_tokens * static_cast<double>(p.twin.micro_batches));
  const long long recomputed = query_tokens - 400LL * (1500 + 599) + p.twin.cached_tokens_reused;
  ASSERT_GT(p.twin.preemptions, 0);
  EXPECT_GE(recomputed, p.twin.preemptions * 1499)
      << "preemptions " << p.twin.preemptions << ", query tokens " << query_tokens << ", pool "
      << pool_tokens;
  EXPECT_LE(recomputed, p.twin.preemptions * 2100)
      << "preemptions " << p.twin.preemptions << ", query tokens " << query_tokens << ", pool "
      << pool_tokens;
  EXPECT_LE(p.twin.kv_peak_fraction, 1.0);
  for (const auto& o : p.outputs) {
    ASSERT_TRUE(o.success);
    EXPECT_EQ(o.output_tokens, 600);
  }
}

// TensorRT-LLM's GUARANTEED_NO_EVICT reserves prompt + max output at admission: no preemption ever.
TEST(Simulate, TrtllmNeverEvicts) {
  Case c;
  c.launch.memory.fraction = 0.865;
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kTrtllmInflight;
  c.launch.scheduler.chunked_prefill = false;
  std::vector<WorkloadRequest> w(400, WorkloadRequest{1500, 600});
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, {}));
  EXPECT_EQ(p.twin.preemptions, 0);
  EXPECT_LE(p.twin.kv_peak_fraction, 1.0);
}

// Without chunked prefill a prompt runs whole: one as long as the token budget fits only a step with no
// generation token beside it, so it waits for every running request to finish (TensorRT-LLM's default
// max_num_tokens 8192 against 8192-token prompts: one request at a time, TTFT in minutes). The twin view
// counts the steps such a prompt waited and its length (new-user trial: a 10-minute TTFT with no reason).
TEST(Simulate, AWholePromptAsLongAsTheBudgetWaitsForTheRunningRequests) {
  Case c;
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kTrtllmInflight;
  c.launch.scheduler.chunked_prefill = false;
  c.launch.scheduler.token_budget = 2048;
  std::vector<WorkloadRequest> whole(4, WorkloadRequest{2040, 50});  // + 8 template tokens: 2048
  const auto& p = ok(predict_resolved(c.launch, c.cluster, whole, engine_only()));
  EXPECT_EQ(p.twin.max_batch_requests, 1);
  EXPECT_GE(p.twin.contexts_over_budget_steps, 3 * 49);  // each later prompt waits out a whole decode
  EXPECT_EQ(p.twin.largest_context_over_budget, 2048);
  EXPECT_EQ(p.twin.step_token_budget, 2048);
  std::vector<WorkloadRequest> shorter(4, WorkloadRequest{1000, 50});
  const auto& q = ok(predict_resolved(c.launch, c.cluster, shorter, engine_only()));
  EXPECT_EQ(q.twin.contexts_over_budget_steps, 0);
  EXPECT_GT(q.twin.max_batch_requests, 1);
  // vLLM without chunked prefill waits the same way.
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kVllmV1;
  const auto& v = ok(predict_resolved(c.launch, c.cluster, whole, engine_only()));
  EXPECT_EQ(v.twin.max_batch_requests, 1);
  EXPECT_GE(v.twin.contexts_over_budget_steps, 3 * 49);
  // Generation tokens that take the whole budget keep a shorter prompt out too: 64 requests of 4 tokens
  // each and a budget of 64 (the steps where every running request decodes count).
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kTrtllmInflight;
  c.launch.scheduler.token_budget = 64;
  std::vector<WorkloadRequest> many(80, WorkloadRequest{4, 200});  // + 8 template tokens: 12
  const auto& m = ok(predict_resolved(c.launch, c.cluster, many, engine_only()));
  EXPECT_GT(m.twin.contexts_over_budget_steps, 0);
  EXPECT_EQ(m.twin.largest_context_over_budget, 12);
}

// The operator classes of the twin view are the kernel time the steps ran: with a fitted kernel scale of
// 1.4 (kernels faster than the roofline) they, the collectives and the CPU overhead add up to the busy
// time, not to 1.4x more of it (a new-user review found 7.06 s of classes in 5.59 s of steps).
TEST(Simulate, OperatorClassesAddUpToTheBusyTime) {
  Case c;
  WorkloadOptions o = engine_only();
  o.calibration->engines["vllm"].cal.kernel_scale = 1.4;
  std::vector<WorkloadRequest> w(200, WorkloadRequest{900, 150});
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
  const auto& v = p.twin;
  const double classes = v.attention_s + v.linear_attention_s + v.linear_s + v.moe_s + v.lm_head_s +
                         v.draft_s + v.elementwise_s + v.comm_s + v.overhead_s;
  const double busy = v.prefill_time_s + v.decode_time_s;
  EXPECT_GT(busy, 1.0);
  EXPECT_NEAR(classes, busy, 1e-6 * busy);
  EXPECT_GT(v.linear_s, 0.5 * busy);  // a dense 8B model's time is mostly its GEMMs
}

// SGLang runs prefill batches apart from decode (no mixing): with a long queue its first tokens come
// in prefill steps of up to the chunk size. The first hand-off of the burst finds the engine idle and is
// prefilled alone (api_server.h: hand-offs leave kApiHandOffS apart); the other 63 queue behind it.
TEST(Simulate, SglangPrefillsBeforeDecoding) {
  Case c;
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kSglang;
  c.launch.scheduler.mixed_prefill_decode = false;
  c.launch.scheduler.token_budget = 8192;
  c.launch.scheduler.max_num_seqs = 0;
  c.launch.scheduler.max_num_seqs_from_pool = true;
  c.launch.memory.profile_activations = false;
  std::vector<WorkloadRequest> w(64, WorkloadRequest{1024, 32});
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  // 64 x (1024 + 8 template tokens) prompt tokens in chunks of 8192 per prefill batch.
  EXPECT_GT(p.twin.prefill_time_s, 0);
  int alone = 0, second_step_finishers = 0;
  for (const auto& o : p.outputs) alone += o.ttft_s == p.outputs[0].ttft_s;
  for (const auto& o : p.outputs) second_step_finishers += o.ttft_s == p.outputs[1].ttft_s;
  EXPECT_EQ(alone, 1);
  EXPECT_EQ(second_step_finishers, 7);  // 8192 / 1032 = 7.9: seven whole prompts in a prefill batch
}

// Pipeline parallelism: two micro-batches in flight, each through both stages. With enough requests
// the throughput nearly doubles over one micro-batch at a time, and each token takes two ticks.
TEST(Simulate, PipelineKeepsTwoMicroBatchesInFlight) {
  Case c;
  c.cluster = hardware::parse_cluster("2xH100");
  auto pp = test_launch(c.model, c.cluster, 1, 2);
  pp.max_model_len = 32768;
  std::vector<WorkloadRequest> w(256, WorkloadRequest{200, 200});
  // A fixed calibration: the bubble's share depends on the CPU time per step, which a refit moves.
  const WorkloadOptions o = engine_only();
  const auto& p = ok(predict_resolved(pp, c.cluster, w, o));
  for (const auto& out : p.outputs) ASSERT_TRUE(out.success);
  // One request alone: every token needs both stages (two ticks of half the model each).
  const std::vector<WorkloadRequest> one = {{200, 5}};
  const auto& q = ok(predict_resolved(pp, c.cluster, one, o));
  EXPECT_EQ(q.twin.steps, 2 * 5);
  // Five micro-batches ran, each one request: the means are per micro-batch, not per tick (half of which
  // finish none).
  EXPECT_EQ(q.twin.micro_batches, 5);
  EXPECT_DOUBLE_EQ(q.twin.mean_batch_requests, 1.0);
  EXPECT_NEAR(q.twin.mean_step_ms, 1e3 * (q.twin.prefill_time_s + q.twin.decode_time_s) / 5, 1e-9);
  // Its time counts once per micro-batch; the other stage's tick is the bubble: as long as the busy time.
  const double busy = q.twin.prefill_time_s + q.twin.decode_time_s;
  EXPECT_NEAR(q.twin.pipeline_bubble_s, busy, 1e-9 * q.twin.duration_s);
  EXPECT_NEAR(busy + q.twin.idle_time_s + q.twin.pipeline_bubble_s, q.twin.duration_s,
              1e-9 * q.twin.duration_s);
  // Micro-batches in flight together fill ticks: the bubble (fill, drain and waits for the larger
  // micro-batch's stage) is less than the busy time. (Here only while prompts are prefilled: once they
  // decode, the first micro-batch takes all 256 requests, max_num_seqs, and the next finds none free.)
  const double busy2 = p.twin.prefill_time_s + p.twin.decode_time_s;
  EXPECT_NEAR(busy2 + p.twin.idle_time_s + p.twin.pipeline_bubble_s, p.twin.duration_s,
              1e-9 * p.twin.duration_s);
  EXPECT_GT(p.twin.pipeline_bubble_s, 0.0);
  EXPECT_LT(p.twin.pipeline_bubble_s, busy2);  // measured 0.81 x: the prefill phase overlaps
  EXPECT_EQ(
      ok(predict_resolved(test_launch(c.model, c.cluster, 1, 1), c.cluster, one, o)).twin.pipeline_bubble_s,
      0.0);
}

// SGLang pipeline parallelism: each of the pp micro-batches keeps a running batch of its own, of at most
// max_running_requests / pp requests. 8 requests of 208 engine tokens (200 + 8 template) fit one 8192-token
// prefill, but with max_running_requests 8 and pp 2 a micro-batch takes 8 / 2 = 4 of them, and each decode
// batch carries at most 4 requests (vLLM's batch queue would put all 8 in one batch). The first hand-off
// finds the engine idle: slot 0 prefills r0 alone, slot 1 then r1-r4 (handed off during slot 0's first
// tick), and slot 0 r5-r7 after r0's prefill, a second prefill round before its 19 decode rounds: 21 rounds
// of 2 ticks = 42 (40 if all 8 had been there at once).
TEST(Simulate, SglangPipelineMicroBatchesKeepTheirOwnRunningBatch) {
  Case c;
  c.cluster = hardware::parse_cluster("2xH100");
  auto pp = test_launch(c.model, c.cluster, 1, 2);
  pp.max_model_len = 32768;
  pp.scheduler.kind = engines::SchedulerPolicy::Kind::kSglang;
  pp.scheduler.mixed_prefill_decode = false;
  pp.scheduler.max_num_seqs = 8;
  pp.scheduler.pp_micro_batches = 2;
  std::vector<WorkloadRequest> w(8, WorkloadRequest{200, 20});
  const auto& p = ok(predict_resolved(pp, c.cluster, w, engine_only()));
  for (const auto& out : p.outputs) ASSERT_TRUE(out.success);
  EXPECT_EQ(p.twin.max_batch_requests, 4);
  EXPECT_EQ(p.twin.steps, 42);
  // The same launch as vLLM schedules every request not in flight into one batch.
  pp.scheduler.kind = engines::SchedulerPolicy::Kind::kVllmV1;
  pp.scheduler.mixed_prefill_decode = true;
  const auto& v = ok(predict_resolved(pp, c.cluster, w, engine_only()));
  EXPECT_EQ(v.twin.max_batch_requests, 8);
}

// SGLang batch_is_full: an admission that runs out of KV stops prefill batches until the running batch
// shrinks. Pool of 2500 tokens, requests of 1008 engine tokens (1000 + 8 template) and 500 outputs: a
// request joining a prefill batch reserves its whole max_new_tokens (PrefillAdder.add_one_req). r0, the
// burst's first hand-off, is prefilled alone; r1 and r2 arrive during it. The next call admits r1 (the
// first request of a batch is admitted when its blocks fit: 1492 free tokens hold its 1008), and r2 finds
// no room (1508 > 2500 - 2 x 1508 reserved: NO_TOKEN), which sets the flag: r2 starts only once r0 has
// left, while r0 and r1 grow past the pool (2 x 1508 > 2500) and r1, the later, is retracted.
TEST(Simulate, SglangBatchFullWaitsForTheRunningBatchToShrink) {
  Case c;
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kSglang;
  c.launch.scheduler.mixed_prefill_decode = false;
  c.launch.scheduler.max_num_seqs = 8;
  c.launch.memory.max_total_tokens = 2500;
  c.launch.max_model_len = 2048;
  std::vector<WorkloadRequest> w(3, WorkloadRequest{1000, 500});
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  ASSERT_EQ(p.outputs.size(), 3u);
  for (const auto& o : p.outputs) ASSERT_TRUE(o.success);
  const double r0_end = p.outputs[0].send_time_s + p.outputs[0].latency_s;
  EXPECT_LT(p.outputs[1].send_time_s + p.outputs[1].ttft_s, r0_end);
  EXPECT_GT(p.outputs[2].send_time_s + p.outputs[2].ttft_s, r0_end);
  EXPECT_EQ(p.twin.max_batch_requests, 2);
  EXPECT_GE(p.twin.preemptions, 1);
}

// SGLang bounds one request by its rank's KV pool (SchedulerPolicy::request_len_from_pool): max_req_len =
// min(context length, pool) - 1 = 2495 for --max-total-tokens 2500 (a pool of 2496: whole 16-token pages).
// A prompt of 3008 engine tokens (3000 + 8 template) is aborted in the stream (it once stalled the twin: it
// could never be prefilled); one of 2008 is served with max_new_tokens clipped to 2495 - 2008 - 1 = 486; a
// short one is untouched.
TEST(Simulate, SglangAbortsPromptsLongerThanItsPoolAndClipsTheOutput) {
  Case c;
  c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kSglang;
  c.launch.scheduler.mixed_prefill_decode = false;
  c.launch.scheduler.request_len_from_pool = true;
  c.launch.scheduler.max_num_seqs = 8;
  c.launch.memory.max_total_tokens = 2500;
  c.launch.memory.kv_pool_holds_one_request = false;  // SGLang starts with a pool under the context length
  std::vector<WorkloadRequest> w{{3000, 100}, {2000, 1000}, {500, 100}};
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  ASSERT_EQ(p.twin.memory.kv_tokens_per_rank, 2496);
  ASSERT_EQ(p.outputs.size(), 3u);
  EXPECT_FALSE(p.outputs[0].success);
  EXPECT_EQ(p.outputs[0].failure, metrics::FailureKind::kServerError);
  EXPECT_EQ(
      p.outputs[0].error,
      "Input length (3008 tokens) exceeds the maximum allowed length (2490 tokens). Use a shorter input "
      "or enable --allow-auto-truncate.");
  ASSERT_TRUE(p.outputs[1].success);
  EXPECT_EQ(p.outputs[1].output_tokens, 486);
  ASSERT_TRUE(p.outputs[2].success);
  EXPECT_EQ(p.outputs[2].output_tokens, 100);
  // Without the rule (another engine's policy) the same pool holds the short request only: the others
  // are dropped as unschedulable, never a stalled run.
  c.launch.scheduler.request_len_from_pool = false;
  const auto& q = ok(predict_resolved(c.launch, c.cluster, w, engine_only()));
  EXPECT_FALSE(q.outputs[0].success);
  EXPECT_TRUE(q.outputs[2].success);
}

// Qwen3-8B on two DP ranks of one H100 each (c.cluster becomes 2xH100), requests routed by `routing`.
engines::ResolvedLaunch two_dp_ranks(Case& c, engines::Routing routing) {
  c.cluster = hardware::parse_cluster("2xH100");
  auto dp = test_launch(c.model, c.cluster, 1);
  dp.layout.dp = dp.layout.dp_ranks = 2;
  dp.layout.gpus = 2;
  dp.routing = routing;
  dp.max_model_len = 32768;
  return dp;
}

// DP ranks: least-loaded routing spreads 8 equal requests 4 / 4 over two ranks (lock-stepped).
TEST(Simulate, DataParallelRanksShareTheLoad) {
  Case c;
  const auto dp = two_dp_ranks(c, engines::Routing::kLeastLoaded);
  std::vector<WorkloadRequest> w(8, WorkloadRequest{500, 50});
  const auto& p = ok(predict_resolved(dp, c.cluster, w, {}));
  EXPECT_EQ(p.twin.max_batch_requests, 4);
}

// TensorRT-LLM attention-DP balancing (attention_dp_config.enable_balance) on two DP ranks, requests sent
// every 0.1 s (~11 steps) and routed to the rank with the fewest: A (rank 0) and B (rank 1) decode 300
// tokens, B starting at once (rank 1 had nothing to decode). C (rank 0) finds rank 1 with no context to
// start: it waits for the timeout, whose counter runs on every step some rank has no context (nobody had one
// since B started), so C starts 50 steps after B. D (rank 1) sent right after C gives every rank a context
// while every rank decodes: C and D start together after the batching wait (10 steps).
TEST(Simulate, TrtllmAttentionDpBalanceHoldsContextsBack) {
  Case c;
  auto l = two_dp_ranks(c, engines::Routing::kShortestQueue);
  l.scheduler.kind = engines::SchedulerPolicy::Kind::kTrtllmInflight;
  l.scheduler.chunked_prefill = false;
  WorkloadOptions o;
  o.request_rate = 10.0;
  o.constant_arrivals = true;
  o.chat_template_tokens = 0;
  long long held = 0;
  auto first_steps = [&](const std::vector<WorkloadRequest>& w, bool balance) {
    l.scheduler.dp_balance = balance;
    Trace trace;
    o.trace = &trace;
    const auto& p = ok(predict_resolved(l, c.cluster, w, o));
    std::vector<int> first;
    for (const auto& r : trace.requests) first.push_back(r.first_step);
    for (const auto& out : p.outputs) EXPECT_TRUE(out.success);
    held = p.twin.contexts_held_steps;
    return first;
  };
  const std::vector<WorkloadRequest> three = {{200, 300}, {200, 300}, {200, 5}};
  const auto off = first_steps(three, false);
  EXPECT_EQ(held, 0);
  const auto on = first_steps(three, true);
  // The twin view counts the steps C waited: from the step it could have started to the one it did.
  EXPECT_EQ(held, on[2] - off[2]);
  EXPECT_EQ(on[0], off[0]);
  EXPECT_EQ(on[1], off[1]);  // rank 0 had nothing to start: no wait
  EXPECT_GT(on[2], off[2]);
  EXPECT_EQ(on[2] - on[1], l.scheduler.dp_balance_timeout_steps);
  const std::vector<WorkloadRequest> four = {{200, 300}, {200, 300}, {200, 5}, {200, 5}};
  const auto off4 = first_steps(four, false), on4 = first_steps(four, true);
  EXPECT_GT(off4[3] - off4[2], 5);  // D was sent after C
  EXPECT_EQ(on4[2], on4[3]);
  EXPECT_EQ(on4[3] - off4[3], l.scheduler.dp_balance_batching_steps);
}

// Speculative decoding: with acceptance a, a chain of k drafts yields 1 + a + ... + a^k tokens per step
// on average; the twin draws each acceptance deterministically.
TEST(Simulate, SpeculativeDecodingAcceptsDraftTokens) {
  Case c;
  engines::SpeculativePolicy s;
  s.method = engines::SpeculativePolicy::Method::kEagle3;
  s.num_speculative_tokens = 3;
  s.num_steps = 3;
  s.topk = 1;
  s.acceptance = 0.8;
  c.launch.speculative = s;
  std::vector<WorkloadRequest> w(20, WorkloadRequest{300, 400});
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, {}));
  long long tokens = 0, chunks = 0;
  for (const auto& o : p.outputs) {
    ASSERT_TRUE(o.success);
    tokens += o.output_tokens - 1;
    chunks += static_cast<long long>(o.itl_s.size());
  }
  // Expected tokens per decode step 1 + 0.8 + 0.64 + 0.512 = 2.95 (minus the clipping at each end).
  EXPECT_NEAR(double(tokens) / chunks, 2.95, 0.12);
  EXPECT_GT(p.twin.draft_s, 0);
}

// bench serve's ramp-up (new-user trial: `sim run` ignored --ramp-up-*, predicting a burst 44x off on TTFT):
// each request is sent at vLLM's ramped schedule, the same schedule::arrival_schedule bench sends by.
TEST(Simulate, RampUpSendsAtTheRampedSchedule) {
  Case c;
  std::vector<WorkloadRequest> w(40, WorkloadRequest{200, 20});
  WorkloadOptions o;
  o.ramp_up = schedule::RampUp::kLinear;
  o.ramp_up_start_rps = 1;
  o.ramp_up_end_rps = 20;
  o.seed = 7;
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
  schedule::ArrivalOptions a;
  a.num_requests = w.size();
  a.ramp_up = schedule::RampUp::kLinear;
  a.ramp_up_start_rps = 1;
  a.ramp_up_end_rps = 20;
  a.seed = 7;
  const std::vector<double> sends = schedule::arrival_schedule(a);
  ASSERT_EQ(p.outputs.size(), sends.size());
  for (std::size_t i = 0; i < sends.size(); ++i) EXPECT_DOUBLE_EQ(p.outputs[i].send_time_s, sends[i]) << i;
  EXPECT_GT(sends.back(), 1.0);  // not a burst at t = 0
}

// A client cap of 4 concurrent requests: never more than 4 in flight as the client sees them (a slot
// frees when the client has the last token); each request is sent when one before it finishes.
TEST(Simulate, ClientConcurrencyCap) {
  Case c;
  std::vector<WorkloadRequest> w(32, WorkloadRequest{200, 50});
  WorkloadOptions o;
  o.max_concurrency = 4;
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
  EXPECT_EQ(p.twin.max_batch_requests, 4);
  int in_flight_max = 0;
  for (std::size_t i = 0; i < p.outputs.size(); ++i) {
    int n = 0;
    const double t = p.outputs[i].send_time_s;
    for (const auto& q : p.outputs) n += q.send_time_s <= t && q.send_time_s + q.latency_s > t;
    in_flight_max = std::max(in_flight_max, n);
  }
  EXPECT_LE(in_flight_max, 4);
}

// guidellm's constant profile: request i is sent at i / rate.
TEST(Simulate, ConstantArrivals) {
  Case c;
  std::vector<WorkloadRequest> w(10, WorkloadRequest{100, 10});
  WorkloadOptions o;
  o.request_rate = 2.0;
  o.constant_arrivals = true;
  const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
  for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(p.outputs[i].send_time_s, i / 2.0);
  EXPECT_GT(p.twin.idle_time_s, 0);
}

// An overlapped scheduler (vLLM async scheduling, SGLang's overlap loop, TensorRT-LLM's overlap scheduler)
// forms step k+1 while step k runs. Request A (200 in, 100 out) runs alone; B is sent at 0.1 s, inside one
// of A's decode steps (say step j-1, which began before 0.1 s). Without overlap B is routed when that
// step ends and its prefill rides step j; with overlap step j was formed when step j-1 began, so B rides
// step j+1: its first token comes exactly one step later, its TTFT one decode step (3.4 ms here) longer. A,
// sent to an idle engine, is prefilled at once either way (step 0).
TEST(Simulate, OverlappedSchedulerAdmitsAStepLater) {
  const std::vector<WorkloadRequest> w = {{200, 100}, {200, 5}};
  // No CPU time per step: the overlap then hides nothing and both runs have the same step times.
  WorkloadOptions o;
  CalibrationTable t;
  t.engines["vllm"].cal = Calibration{1.0, 0.0, 0.0, 0.0, 0.0};
  o.calibration = t;
  o.request_rate = 10.0;
  o.constant_arrivals = true;
  o.chat_template_tokens = 0;
  int first_step[2] = {0, 0};
  double ttft[2] = {0, 0}, step_s = 0;
  for (int overlap = 0; overlap < 2; ++overlap) {
    Case c;
    c.launch.execution.async_scheduling = overlap == 1;
    Trace trace;
    o.trace = &trace;
    const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
    ASSERT_TRUE(p.outputs[1].success);
    EXPECT_EQ(trace.requests[0].first_step, 0);
    first_step[overlap] = trace.requests[1].first_step;
    ttft[overlap] = p.outputs[1].ttft_s;
    step_s = p.outputs[0].itl_s.front();
    // The replay (fit.cc) re-times the same steps.
    EXPECT_NEAR(replay(trace, p.context.calibration).mean_ttft_ms, headline(p).mean_ttft_ms, 1e-6);
  }
  EXPECT_GT(first_step[0], 5);  // B arrived during A's decode, not at an idle engine
  EXPECT_EQ(first_step[1], first_step[0] + 1);
  EXPECT_GT(ttft[1] - ttft[0], 0.5 * step_s);
  EXPECT_LT(ttft[1] - ttft[0], 2.0 * step_s);
}

// SGLang --scheduler-recv-interval N: the scheduler polls for new requests when its counter reaches N (a
// decode-only step adds 1, a prefill step N) and the poll empties it. A alone: polls before step 1 (after
// A's prefill) and then every N decode steps, so B, sent while A decodes, starts at the first poll at or
// after the step it would start at with N = 1. An idle engine polls at once.
TEST(Simulate, SglangReceivesNewRequestsEveryRecvInterval) {
  WorkloadOptions o;
  CalibrationTable t;
  t.engines["vllm"].cal = Calibration{1.0, 0.0, 0.0, 0.0, 0.0};
  o.calibration = t;
  o.request_rate = 10.0;  // B is sent at 0.1 s
  o.constant_arrivals = true;
  o.chat_template_tokens = 0;
  constexpr int kInterval = 8;
  auto run = [&](const std::vector<WorkloadRequest>& w, int interval, double* ttft_b) {
    Case c;
    c.launch.scheduler.kind = engines::SchedulerPolicy::Kind::kSglang;
    c.launch.scheduler.mixed_prefill_decode = false;
    c.launch.scheduler.recv_interval = interval;
    Trace trace;
    o.trace = &trace;
    const auto& p = ok(predict_resolved(c.launch, c.cluster, w, o));
    EXPECT_TRUE(p.outputs[1].success);
    EXPECT_EQ(trace.requests[0].first_step, 0);
    *ttft_b = p.outputs[1].ttft_s;
    EXPECT_NEAR(replay(trace, p.context.calibration).mean_ttft_ms, headline(p).mean_ttft_ms, 1e-6);
    return trace.requests[1].first_step;
  };
  // B arrives while A decodes.
  double ttft_every = 0, ttft_skip = 0;
  const std::vector<WorkloadRequest> busy = {{200, 200}, {200, 5}};
  const int every = run(busy, 1, &ttft_every);
  const int skip = run(busy, kInterval, &ttft_skip);
  ASSERT_GT(every, 2);  // during A's decode, not at an idle engine
  const int first_poll = 1 + ((every - 1 + kInterval - 1) / kInterval) * kInterval;
  EXPECT_EQ(skip, first_poll) << "B would start at step " << every;
  EXPECT_GE(ttft_skip, ttft_every);
  // B arrives after A finished: the idle engine takes it at once.
  double ttft_idle_every = 0, ttft_idle_skip = 0;
  const std::vector<WorkloadRequest> idle = {{200, 3}, {200, 5}};
  EXPECT_EQ(run(idle, kInterval, &ttft_idle_skip), run(idle, 1, &ttft_idle_every));
  EXPECT_DOUBLE_EQ(ttft_idle_skip, ttft_idle_every);
}

TEST(Simulate, BadWorkloadThrows) {
  Case c;
  const std::vector<WorkloadRequest> w = {{0, 10}};
  EXPECT_THROW(predict_resolved(c.launch, c.cluster, w, {}), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::sim
