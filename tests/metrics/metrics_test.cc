// compute_metrics against hand-computed per-request timings (every reported number), plus the flag parsers.
#include "servelab/metrics/metrics.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace servelab::metrics {
namespace {

RequestOutput success(int dataset_prompt_len, int prompt_len, int output_tokens, double dispatch_s,
                      double send_s, double ttft_s, std::vector<double> itl_s) {
  RequestOutput r;
  r.success = true;
  r.dataset_prompt_len = dataset_prompt_len;
  r.prompt_len = prompt_len;
  r.output_tokens = output_tokens;
  r.intended_send_time_s = dispatch_s;
  r.dispatch_time_s = dispatch_s;
  r.send_time_s = send_s;
  r.ttft_s = ttft_s;
  double latency = ttft_s;
  for (double g : itl_s) latency += g;
  r.latency_s = latency;
  r.itl_s = std::move(itl_s);
  return r;
}

RequestOutput failure(FailureKind kind, int dataset_prompt_len, double intended_s, double dispatch_s) {
  RequestOutput r;
  r.success = false;
  r.failure = kind;
  r.dataset_prompt_len = dataset_prompt_len;
  r.prompt_len = dataset_prompt_len;
  r.intended_send_time_s = intended_s;
  r.dispatch_time_s = dispatch_s;
  r.send_time_s = dispatch_s;
  r.error = "boom";
  return r;
}

// Five requests, all timings exact binary fractions so the expected values are exact:
//  A: sent 0.0,  TTFT 0.5,  ITL .25 .25 .5 .5  -> E2EL 2.0, 5 tokens, TPOT 1.5/4 = 0.375
//  B: sent 2.0,  TTFT 1.0,  no ITL            -> E2EL 1.0, 1 token (no TPOT; 0 for goodput)
//  C: sent 1.5,  TTFT 0.25, ITL .75 1.0       -> E2EL 2.0, 3 tokens, TPOT 1.75/2 = 0.875
//  D: timeout,  E: HTTP status failure.
std::vector<RequestOutput> scenario() {
  std::vector<RequestOutput> v;
  v.push_back(success(100, 101, 5, 0.0, 0.0, 0.5, {0.25, 0.25, 0.5, 0.5}));
  v.back().ttfct_s = 0.75;
  v.back().reasoning_tokens = 2;
  v.back().usage_completion_tokens = 5;
  v.back().tokenizer_output_tokens = 6;
  v.push_back(success(-1, 200, 1, 2.0, 2.0, 1.0, {}));
  v.back().intended_send_time_s = 1.5;  // lag 0.5 s
  v.push_back(success(50, 50, 3, 1.25, 1.5, 0.25, {0.75, 1.0}));
  v.back().intended_send_time_s = 1.0;  // lag 0.25 s, client queue 0.25 s
  v.back().ttfct_s = 0.25;
  v.back().chunk_tokens = {2, 0, 1};
  v.back().usage_completion_tokens = 3;
  v.back().tokenizer_output_tokens = 3;
  v.push_back(failure(FailureKind::kTimeout, 70, 3.0, 3.25));
  v.push_back(failure(FailureKind::kHttpStatus, 0, 4.0, 4.0));
  return v;
}

double pct(const LatencySummary& s, std::size_t i) {
  return s.percentiles_ms.at(i).value_ms;
}

TEST(ComputeMetrics, EveryNumberOfAHandComputedRun) {
  const auto outputs = scenario();
  MetricsOptions opts;
  opts.percentiles = {50, 99, 99.9};
  const BenchmarkMetrics m = compute_metrics(outputs, 10.0, opts);

  EXPECT_EQ(m.completed, 3);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.total_input, 350);  // dataset counts 100 + 200 (prompt_len fallback) + 50
  EXPECT_EQ(m.total_output, 9);
  EXPECT_DOUBLE_EQ(m.request_throughput, 0.3);
  EXPECT_FALSE(m.request_goodput.has_value());
  EXPECT_DOUBLE_EQ(m.output_throughput, 0.9);
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 35.9);
  EXPECT_EQ(m.duration_s, 10.0);
  EXPECT_EQ(m.input_lens, (std::vector<int>{100, 200, 50, 70, 0}));
  EXPECT_EQ(m.output_lens, (std::vector<int>{5, 1, 3, 0, 0}));

  // TTFT [0.5, 1.0, 0.25] s
  EXPECT_DOUBLE_EQ(m.ttft.mean_ms, 1750.0 / 3);
  EXPECT_EQ(m.ttft.median_ms, 500.0);
  EXPECT_NEAR(m.ttft.std_ms, 311.80478223116176, 1e-9);
  EXPECT_EQ(m.ttft.percentiles_ms.size(), 3u);
  EXPECT_EQ(m.ttft.percentiles_ms[2].p, 99.9);
  EXPECT_EQ(pct(m.ttft, 0), 500.0);
  EXPECT_DOUBLE_EQ(pct(m.ttft, 1), 990.0);  // 1.0 - 0.5 * 0.02
  EXPECT_DOUBLE_EQ(pct(m.ttft, 2), 999.0);  // 1.0 - 0.5 * 0.002
  EXPECT_EQ(m.ttft.count, 3u);
  // TPOT [0.375, 0.875] s (B has one token: excluded)
  EXPECT_EQ(m.tpot.count, 2u);
  EXPECT_EQ(m.tpot.mean_ms, 625.0);
  EXPECT_EQ(m.tpot.median_ms, 625.0);
  EXPECT_EQ(m.tpot.std_ms, 250.0);
  EXPECT_DOUBLE_EQ(pct(m.tpot, 1), 870.0);  // 0.875 - 0.5 * 0.01
  // ITL pooled [0.25 0.25 0.5 0.5 0.75 1.0] s
  EXPECT_EQ(m.itl.count, 6u);
  EXPECT_DOUBLE_EQ(m.itl.mean_ms, 3250.0 / 6);
  EXPECT_EQ(m.itl.median_ms, 500.0);
  EXPECT_DOUBLE_EQ(pct(m.itl, 1), 987.5);  // v = 4.95: 1.0 - 0.25 * 0.05
  EXPECT_DOUBLE_EQ(pct(m.itl, 0), 500.0);
  // E2EL [2.0, 1.0, 2.0] s
  EXPECT_DOUBLE_EQ(m.e2el.mean_ms, 5000.0 / 3);
  EXPECT_EQ(m.e2el.median_ms, 2000.0);
  EXPECT_EQ(pct(m.e2el, 1), 2000.0);
  EXPECT_NEAR(m.e2el.std_ms, 471.40452079103168, 1e-9);

  // Peaks, vLLM 0.13 buckets relative to t0 = 0: chunk times A .5 .75 1 1.5 2, B 3, C 1.75 2.5 3.5
  // -> buckets {0: 2, 1: 3, 2: 2, 3: 2}.
  EXPECT_EQ(m.max_output_tokens_per_s, 3.0);
  // Active seconds (end inclusive): A 0-2, B 2-3, C 1-3 -> second 2 counts 3 ...
  EXPECT_EQ(m.max_concurrent_requests, 3);
  // ... although at most 2 are ever in flight at once ([0,2) [2,3) [1.5,3.5)).
  EXPECT_EQ(m.max_concurrent_requests_exact, 2);
  {
    // A capped client sends the next request when one ends; the ended one's send + latency may land an ulp
    // later than that send (the twin's `sim run` read 33 in flight at --max-concurrency 32): one at a time.
    std::vector<RequestOutput> chain(2);
    chain[0].success = chain[1].success = true;
    chain[0].send_time_s = 0.1, chain[0].latency_s = 0.2;
    chain[1].send_time_s = std::nextafter(0.1 + 0.2, 0.0), chain[1].latency_s = 0.2;
    ASSERT_LT(chain[1].send_time_s, chain[0].send_time_s + chain[0].latency_s);
    for (auto& c : chain) c.ttft_s = 0.1, c.output_tokens = 2, c.prompt_len = 1, c.itl_s = {0.1};
    EXPECT_EQ(compute_metrics(chain, 1.0, MetricsOptions{}).max_concurrent_requests_exact, 1);
  }
  // Tokens per bucket: A's first chunk (0.5 s) precedes its first text (TTFCT 0.75: a role-only chunk), so
  // its 5 tokens spread over its other 4 chunks, 1.25 each; B 1; C exact {2,0,1} -> {0: 1.25, 1: 2.5 + 2,
  // 2: 1.25 + 0, 3: 1 + 1} (new-user trial: the role chunk got a share, the peak shifted toward TTFT).
  EXPECT_EQ(m.max_output_tokens_per_s_by_tokens, 4.5);

  // Extras.
  EXPECT_EQ(m.failures_by_kind[static_cast<std::size_t>(FailureKind::kTimeout)], 1);
  EXPECT_EQ(m.failures_by_kind[static_cast<std::size_t>(FailureKind::kHttpStatus)], 1);
  EXPECT_EQ(m.failures_by_kind[static_cast<std::size_t>(FailureKind::kNone)], 0);
  // schedule lag (dispatch - intended) over all five: [0, .5, .25, .25, 0]
  EXPECT_EQ(m.schedule_lag.count, 5u);
  EXPECT_DOUBLE_EQ(m.schedule_lag.mean_ms, 200.0);
  EXPECT_EQ(m.schedule_lag.median_ms, 250.0);
  EXPECT_EQ(m.schedule_lag_max_ms, 500.0);
  // client queue (send - dispatch) over successes: [0, 0, .25]
  EXPECT_DOUBLE_EQ(m.client_queue.mean_ms, 250.0 / 3);
  EXPECT_EQ(m.client_queue.median_ms, 0.0);
  // TTFCT over successes that saw content: [0.75, 0.25]
  EXPECT_EQ(m.ttfct.count, 2u);
  EXPECT_EQ(m.ttfct.mean_ms, 500.0);
  EXPECT_EQ(m.total_reasoning_tokens, 2);
  EXPECT_EQ(m.reasoning_requests, 1);
  EXPECT_EQ(m.usage_compared, 2);
  EXPECT_EQ(m.usage_mismatches, 1);
  EXPECT_EQ(m.usage_mismatch_tokens, 1);
}

TEST(ComputeMetrics, ServerUsageInputSource) {
  MetricsOptions opts;
  opts.input_tokens = InputTokenSource::kServerUsage;
  const auto m = compute_metrics(scenario(), 10.0, opts);
  EXPECT_EQ(m.total_input, 351);  // 101 + 200 + 50
  EXPECT_DOUBLE_EQ(m.total_token_throughput, 36.0);
}

TEST(ComputeMetrics, GoodputIsInclusiveAndUsesZeroTpotForOneToken) {
  const auto outputs = scenario();
  MetricsOptions opts;
  opts.goodput.ttft_ms = 500;  // A (0.5 <= 0.5) and C
  EXPECT_DOUBLE_EQ(*compute_metrics(outputs, 10.0, opts).request_goodput, 0.2);
  opts.goodput.tpot_ms = 375;  // A only (C's TPOT is 0.875)
  EXPECT_DOUBLE_EQ(*compute_metrics(outputs, 10.0, opts).request_goodput, 0.1);
  MetricsOptions tpot_only;
  tpot_only.goodput.tpot_ms = 0;  // B: one token -> TPOT 0 passes any SLO
  EXPECT_DOUBLE_EQ(*compute_metrics(outputs, 10.0, tpot_only).request_goodput, 0.1);
  MetricsOptions e2el;
  e2el.goodput.e2el_ms = 1000;  // B only
  EXPECT_DOUBLE_EQ(*compute_metrics(outputs, 10.0, e2el).request_goodput, 0.1);
  MetricsOptions none_good;
  none_good.goodput.ttft_ms = 100;
  const auto m = compute_metrics(outputs, 10.0, none_good);
  ASSERT_TRUE(m.request_goodput.has_value());
  EXPECT_EQ(*m.request_goodput, 0.0);
}

TEST(ComputeMetrics, AllFailedGivesZerosLikeVllm) {
  std::vector<RequestOutput> outputs = {failure(FailureKind::kConnect, 10, 0, 0),
                                        failure(FailureKind::kConnect, 10, 0, 0)};
  const auto m = compute_metrics(outputs, 2.0, MetricsOptions{});
  EXPECT_EQ(m.completed, 0);
  EXPECT_EQ(m.failed, 2);
  EXPECT_EQ(m.total_input, 0);
  EXPECT_EQ(m.request_throughput, 0.0);
  EXPECT_EQ(m.ttft.mean_ms, 0.0);
  EXPECT_EQ(m.ttft.std_ms, 0.0);
  EXPECT_EQ(m.ttft.median_ms, 0.0);
  EXPECT_EQ(pct(m.ttft, 0), 0.0);
  EXPECT_EQ(m.itl.count, 0u);
  EXPECT_EQ(m.max_output_tokens_per_s, 0.0);
  EXPECT_EQ(m.max_concurrent_requests, 0);
  EXPECT_EQ(m.failures_by_kind[static_cast<std::size_t>(FailureKind::kConnect)], 2);
}

TEST(ComputeMetrics, ZeroUsageFallsBackToTokenizerCount) {
  std::vector<RequestOutput> outputs = {success(5, 5, 0, 0, 0, 0.5, {0.5})};
  outputs[0].tokenizer_output_tokens = 7;
  const auto m = compute_metrics(outputs, 1.0, MetricsOptions{});
  EXPECT_EQ(m.total_output, 7);
  EXPECT_DOUBLE_EQ(m.tpot.mean_ms, 500.0 / 6);
}

TEST(ComputeMetrics, RejectsBadDurationAndPercentile) {
  const auto outputs = scenario();
  EXPECT_THROW(compute_metrics(outputs, 0.0, MetricsOptions{}), std::invalid_argument);
  EXPECT_THROW(compute_metrics(outputs, -1.0, MetricsOptions{}), std::invalid_argument);
  MetricsOptions bad;
  bad.percentiles = {101};
  EXPECT_THROW(compute_metrics(outputs, 1.0, bad), std::invalid_argument);
}

TEST(ComputeMetrics, RejectsNonFiniteTimesAndMixedClocks) {
  auto outputs = scenario();
  outputs[2].itl_s[1] = std::numeric_limits<double>::quiet_NaN();
  outputs[2].request_id = "bench-7";
  try {
    compute_metrics(outputs, 10.0, MetricsOptions{});
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("request 2 (id 'bench-7')"), std::string::npos) << e.what();
  }
  outputs = scenario();
  outputs[1].send_time_s = 1.7e9;  // an epoch timestamp among benchmark-relative ones
  EXPECT_THROW(compute_metrics(outputs, 10.0, MetricsOptions{}), std::invalid_argument);
  // A failed request's garbage timings are ignored, as vLLM ignores them.
  outputs = scenario();
  outputs[3].latency_s = std::numeric_limits<double>::infinity();
  EXPECT_EQ(compute_metrics(outputs, 10.0, MetricsOptions{}).completed, 3);
}

TEST(ParseFlags, Goodput) {
  const std::vector<std::string> items = {"ttft:100", "e2el: 2000.5"};
  const GoodputSlos g = parse_goodput(items);
  EXPECT_EQ(*g.ttft_ms, 100.0);
  EXPECT_EQ(*g.e2el_ms, 2000.5);
  EXPECT_FALSE(g.tpot_ms.has_value());
  EXPECT_TRUE(parse_goodput(std::vector<std::string>{}).empty());
  EXPECT_THROW(parse_goodput(std::vector<std::string>{"ttft"}), std::invalid_argument);
  EXPECT_THROW(parse_goodput(std::vector<std::string>{"itl:5"}), std::invalid_argument);
  EXPECT_THROW(parse_goodput(std::vector<std::string>{"tpot:-1"}), std::invalid_argument);
  EXPECT_THROW(parse_goodput(std::vector<std::string>{"tpot:abc"}), std::invalid_argument);
  try {
    parse_goodput(std::vector<std::string>{"foo:1"});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("foo"), std::string::npos);
  }
}

TEST(ParseFlags, MetricPercentiles) {
  EXPECT_EQ(parse_metric_percentiles("99"), (std::vector<double>{99}));
  EXPECT_EQ(parse_metric_percentiles("50,90,99.9"), (std::vector<double>{50, 90, 99.9}));
  EXPECT_THROW(parse_metric_percentiles("50,,99"), std::invalid_argument);
  EXPECT_THROW(parse_metric_percentiles("101"), std::invalid_argument);
  EXPECT_THROW(parse_metric_percentiles("p99"), std::invalid_argument);
}

TEST(ParseFlags, PercentileMetrics) {
  const auto d = parse_percentile_metrics("ttft,tpot,itl");
  EXPECT_TRUE(d.ttft && d.tpot && d.itl && !d.e2el);
  const auto e = parse_percentile_metrics("e2el");
  EXPECT_TRUE(!e.ttft && !e.tpot && !e.itl && e.e2el);
  EXPECT_THROW(parse_percentile_metrics("ttft,latency"), std::invalid_argument);
}

TEST(FailureKindName, StableNames) {
  EXPECT_STREQ(failure_kind_name(FailureKind::kConnect), "connect");
  EXPECT_STREQ(failure_kind_name(FailureKind::kHttpStatus), "http_status");
  EXPECT_STREQ(failure_kind_name(FailureKind::kNoValidChunk), "no_valid_chunk");
  EXPECT_STREQ(failure_kind_name(FailureKind::kCancelled), "cancelled");
}

// Send lag (wire - intended - client queue) and the peak concurrency reached (sweep over [wire,
// send+latency)), by hand:
//  R1: intended 0,   dispatch 0,   send 0,   wire 0.25, latency 1.0 -> lag 0.25, on the wire [0.25, 1.0)
//  R2: intended 0,   dispatch 0.5, send 1.0, wire 1.0,  latency 0.5 -> lag 1.0 - 0 - 0.5 = 0.5, [1.0, 1.5)
//  R3: intended 0.5, dispatch 0.5, send 0.5, wire 0.5,  latency 2.0 -> lag 0, [0.5, 2.5)
//  R4: connect failure, never left (wire -1): no lag.  R5: success without a wire time (twin): ignored.
// Lags sorted 0, 0.25, 0.5: mean 250 ms, median 250, p99 = 0.25 + 0.98 * 0.25 = 0.495 s, max 500 ms.
// Peak: R1 ends at 1.0 where R2 starts (departure first) -> at most R3 + one of R1/R2 = 2.
TEST(ComputeMetrics, SendLagAndPeakConcurrencyReached) {
  std::vector<RequestOutput> v;
  v.push_back(success(1, 1, 1, 0.0, 0.0, 1.0, {}));
  v.back().wire_time_s = 0.25;
  v.push_back(success(1, 1, 1, 0.5, 1.0, 0.5, {}));
  v.back().intended_send_time_s = 0.0;
  v.back().wire_time_s = 1.0;
  v.push_back(success(1, 1, 1, 0.5, 0.5, 2.0, {}));
  v.back().wire_time_s = 0.5;
  v.push_back(failure(FailureKind::kConnect, 1, 0.0, 0.0));
  v.push_back(success(1, 1, 1, 0.0, 0.0, 3.0, {}));  // wire_time_s stays -1
  MetricsOptions o;
  o.percentiles = {50, 99};
  const BenchmarkMetrics m = compute_metrics(v, 3.0, o);
  EXPECT_EQ(m.send_lag.count, 3u);
  EXPECT_DOUBLE_EQ(m.send_lag.mean_ms, 250.0);
  EXPECT_DOUBLE_EQ(m.send_lag.median_ms, 250.0);
  EXPECT_NEAR(m.send_lag_p99_ms, 495.0, 1e-9);
  EXPECT_NEAR(m.send_lag.percentiles_ms[1].value_ms, 495.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.send_lag_max_ms, 500.0);
  EXPECT_EQ(m.peak_concurrency_reached, 2);
  // The sweep from send (the vLLM-style exact peak) counts R5 too and overlaps R1/R2 differently: 3.
  EXPECT_EQ(m.max_concurrent_requests_exact, 3);
}

// A failed request was in flight until the client saw it end (new-user trial: 12 requests sent at once, 11
// timed out, "Peak concurrency reached: 1" of 12 and no warning; after a Ctrl-C with 13 in flight, 0).
//  R1 success on the wire [0, 1.0); R2 timed out [0, 0.4); R3 cancelled by a Ctrl-C [0.1, 2.0);
//  R4 reset, its end not recorded: not counted; R5 never sent (cancelled before dispatch): not counted.
// Peak over [0.1, 0.4): R1 + R2 + R3 = 3. A never-sent request is not_sent, not failed.
TEST(ComputeMetrics, AFailedRequestCountsInThePeakUntilItEnded) {
  std::vector<RequestOutput> v;
  v.push_back(success(1, 1, 1, 0.0, 0.0, 1.0, {}));
  v.back().wire_time_s = 0.0;
  v.push_back(failure(FailureKind::kTimeout, 1, 0.0, 0.0));
  v.back().wire_time_s = 0.0;
  v.back().end_time_s = 0.4;
  v.push_back(failure(FailureKind::kCancelled, 1, 0.1, 0.1));
  v.back().wire_time_s = 0.1;
  v.back().end_time_s = 2.0;
  v.push_back(failure(FailureKind::kReset, 1, 0.2, 0.2));
  v.back().wire_time_s = 0.2;
  v.push_back(failure(FailureKind::kCancelled, 1, 0.3, 0.0));  // never dispatched
  const BenchmarkMetrics m = compute_metrics(v, 2.0, MetricsOptions{});
  EXPECT_EQ(m.peak_concurrency_reached, 3);
  EXPECT_EQ(m.failed, 3);
  EXPECT_EQ(m.not_sent, 1);
  EXPECT_EQ(m.completed, 1);
}

TEST(ComputeMetrics, NoWireTimesMeansNoSendLag) {
  std::vector<RequestOutput> v = {success(1, 1, 1, 0.0, 0.0, 1.0, {})};
  const BenchmarkMetrics m = compute_metrics(v, 1.0, MetricsOptions{});
  EXPECT_EQ(m.send_lag.count, 0u);
  EXPECT_EQ(m.send_lag_p99_ms, 0.0);
  EXPECT_EQ(m.peak_concurrency_reached, 0);
}

}  // namespace
}  // namespace servelab::metrics
