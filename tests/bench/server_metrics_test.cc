// The server-metrics scrape (bench/server_metrics.h): vLLM / SGLang / TensorRT-LLM names reduced to one
// sample, the run summary (gauge max/mean over the run, counter deltas), the console lines and JSON, and the
// scraper thread against a loopback server (a Prometheus answer, a 404, JSON, HTML, text that is not the
// format, nothing listening).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "bench/metrics_server.h"
#include "servelab/bench/server_metrics.h"
#include "servelab/engines/engine_module.h"

namespace servelab::bench {
namespace {

using testing::MetricsAnswer;
using testing::MetricsServer;

// The engine modules' /metrics names (EngineModule::server_metrics), as the CLI hands them to bench.
const std::vector<metrics::ServerMetricNames>& names() {
  static const std::vector<metrics::ServerMetricNames> kNames = engines::server_metric_names();
  return kNames;
}

TEST(ReduceExposition, VllmTwoEnginesSumCountsAndTakeTheFullestKvCache) {
  const auto e = prometheus::parse(R"(# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.75
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 5.0
vllm:num_requests_waiting{engine="0",model_name="m"} 2.0
vllm:num_requests_waiting{engine="1",model_name="m"} NaN
vllm:num_preemptions_total{engine="0",model_name="m"} 1.0
vllm:num_preemptions_total{engine="1",model_name="m"} 2.0
vllm:num_preemptions_created{engine="0",model_name="m"} 1.7e9
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 400.0
vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 30.0
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 21.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",model_name="m",position="0"} 9.0
)");
  std::string engine;
  const ServerSample s = reduce_exposition(e, names(), &engine);
  EXPECT_EQ(engine, "vllm");
  EXPECT_EQ(s.kv_cache_usage, 0.75);
  EXPECT_EQ(s.num_requests_running, 8.0);
  EXPECT_EQ(s.num_requests_waiting, 2.0);  // the NaN series carries no level
  EXPECT_EQ(s.preemptions_total, 3.0);
  EXPECT_EQ(s.prefix_cache_queries_total, 1000.0);
  EXPECT_EQ(s.prefix_cache_hits_total, 400.0);
  EXPECT_FALSE(s.prefix_cache_hit_rate);
  EXPECT_EQ(s.spec_decode_num_drafts_total, 10.0);
  EXPECT_EQ(s.spec_decode_draft_tokens_total, 30.0);
  EXPECT_EQ(s.spec_decode_accepted_tokens_total, 21.0);
  EXPECT_FALSE(s.spec_decode_acceptance_length);
}

TEST(ReduceExposition, OlderVllmNames) {
  const auto e = prometheus::parse(
      "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\nvllm:gpu_prefix_cache_queries{model_name=\"m\"} 80\n"
      "vllm:gpu_prefix_cache_hits{model_name=\"m\"} 20\nvllm:num_preemptions{model_name=\"m\"} 4\n");
  const ServerSample s = reduce_exposition(e, names());
  EXPECT_EQ(s.kv_cache_usage, 0.5);
  EXPECT_EQ(s.prefix_cache_queries_total, 80.0);
  EXPECT_EQ(s.prefix_cache_hits_total, 20.0);
  EXPECT_EQ(s.preemptions_total, 4.0);
  EXPECT_FALSE(s.num_requests_running);
}

TEST(ReduceExposition, HitsWithoutQueriesMakeNoPair) {
  const ServerSample s = reduce_exposition(prometheus::parse("vllm:prefix_cache_hits_total 5\n"), names());
  EXPECT_FALSE(s.prefix_cache_hits_total);
  EXPECT_FALSE(s.prefix_cache_queries_total);
}

TEST(ReduceExposition, Sglang) {
  const auto e = prometheus::parse(R"(# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m",tp_rank="0"} 0.4
sglang:num_running_reqs{model_name="m",tp_rank="0"} 16.0
sglang:num_queue_reqs{model_name="m",tp_rank="0"} 4.0
sglang:cache_hit_rate{model_name="m",tp_rank="0"} 0.3
sglang:spec_accept_length{model_name="m",tp_rank="0"} 2.5
sglang:prompt_tokens_total{model_name="m"} 1000.0
sglang:cached_tokens_total{model_name="m"} 250.0
)");
  std::string engine;
  const ServerSample s = reduce_exposition(e, names(), &engine);
  EXPECT_EQ(engine, "sglang");
  EXPECT_EQ(s.kv_cache_usage, 0.4);
  EXPECT_EQ(s.num_requests_running, 16.0);
  EXPECT_EQ(s.num_requests_waiting, 4.0);
  EXPECT_EQ(s.prefix_cache_hit_rate, 0.3);
  EXPECT_EQ(s.spec_decode_acceptance_length, 2.5);
  EXPECT_EQ(s.prefix_cache_queries_total, 1000.0);
  EXPECT_EQ(s.prefix_cache_hits_total, 250.0);
  EXPECT_FALSE(s.preemptions_total);
}

// TensorRT-LLM's iteration stats, read with the keys its module gives.
TEST(ReduceIterationStats, TrtllmNewestGaugesAndSummedDrafts) {
  const metrics::IterationStatsKeys& keys =
      *engines::engine_module(engines::EngineKind::kTrtllm).server_metrics.iteration_stats;
  ServerSample totals;
  const auto a = reduce_iteration_stats(R"([
    {"iter": 1, "numActiveRequests": 2, "numQueuedRequests": 1,
     "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 10, "reusedBlocks": 3, "missedBlocks": 7},
     "specDecodingStats": {"numDraftTokens": 6, "numAcceptedTokens": 4, "numRequestsWithDraftTokens": 2}},
    {"iter": 2, "numActiveRequests": 4, "numQueuedRequests": 0,
     "kvCacheStats": {"maxNumBlocks": 100, "usedNumBlocks": 25, "reusedBlocks": 5, "missedBlocks": 15},
     "specDecodingStats": {"numDraftTokens": 12, "numAcceptedTokens": 5, "numRequestsWithDraftTokens": 4}}])",
                                        keys, totals);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->num_requests_running, 4.0);
  EXPECT_EQ(a->num_requests_waiting, 0.0);
  EXPECT_EQ(a->kv_cache_usage, 0.25);
  EXPECT_EQ(a->prefix_cache_hits_total, 5.0);
  EXPECT_EQ(a->prefix_cache_queries_total, 20.0);
  EXPECT_EQ(a->spec_decode_num_drafts_total, 6.0);
  EXPECT_EQ(a->spec_decode_draft_tokens_total, 18.0);
  EXPECT_EQ(a->spec_decode_accepted_tokens_total, 9.0);
  const auto b = reduce_iteration_stats("[]", keys, totals);  // nothing since the previous GET
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->num_requests_running);
  EXPECT_EQ(b->spec_decode_draft_tokens_total, 18.0);
  EXPECT_FALSE(reduce_iteration_stats(R"({"iter": 1})", keys, totals));
  EXPECT_FALSE(reduce_iteration_stats(R"([{"object": "model"}])", keys, totals));
  EXPECT_FALSE(reduce_iteration_stats("not json", keys, totals));
  EXPECT_EQ(totals.spec_decode_draft_tokens_total, 18.0);  // a refused answer adds nothing
}

ServerSample at(ServerSample::Phase p, double t) {
  ServerSample s;
  s.phase = p;
  s.t_s = t;
  return s;
}

ServerMetrics hand_run() {
  ServerMetrics m;
  m.url = "http://h:1/metrics";
  m.engine = "vllm";
  m.available = true;
  m.interval_s = 1.0;
  auto before = at(ServerSample::Phase::kBefore, 0);
  before.num_requests_running = 0;
  before.kv_cache_usage = 0;
  before.preemptions_total = 10;
  before.prefix_cache_queries_total = 100;
  before.prefix_cache_hits_total = 0;
  before.spec_decode_num_drafts_total = 50;
  before.spec_decode_draft_tokens_total = 150;
  before.spec_decode_accepted_tokens_total = 90;
  m.samples.push_back(before);
  const double running[] = {4, 8, 6}, kv[] = {0.2, 0.5, 0.3}, waiting[] = {0, 3, 1};
  for (int i = 0; i < 3; ++i) {
    auto s = at(ServerSample::Phase::kDuring, i + 1.0);
    s.num_requests_running = running[i];
    s.kv_cache_usage = kv[i];
    s.num_requests_waiting = waiting[i];
    m.samples.push_back(s);
  }
  auto after = at(ServerSample::Phase::kAfter, 3.5);
  after.num_requests_running = 0;
  after.kv_cache_usage = 0;
  after.preemptions_total = 13;
  after.prefix_cache_queries_total = 1100;
  after.prefix_cache_hits_total = 250;
  after.spec_decode_num_drafts_total = 150;
  after.spec_decode_draft_tokens_total = 450;
  after.spec_decode_accepted_tokens_total = 300;
  m.samples.push_back(after);
  summarize_server_metrics(m);
  return m;
}

TEST(SummarizeServerMetrics, GaugesOverTheRunCountersAsDeltas) {
  const ServerMetrics m = hand_run();
  ASSERT_TRUE(m.kv_cache_usage);
  EXPECT_DOUBLE_EQ(m.kv_cache_usage->max, 0.5);
  EXPECT_DOUBLE_EQ(m.kv_cache_usage->mean, (0.2 + 0.5 + 0.3) / 3);
  EXPECT_EQ(m.kv_cache_usage->samples, 3u);  // before/after (idle) excluded
  EXPECT_DOUBLE_EQ(m.num_requests_running->max, 8);
  EXPECT_DOUBLE_EQ(m.num_requests_running->mean, 6);
  EXPECT_DOUBLE_EQ(m.num_requests_waiting->max, 3);
  EXPECT_DOUBLE_EQ(m.num_requests_waiting->mean, 4.0 / 3);
  EXPECT_EQ(m.preemptions, 3.0);
  EXPECT_EQ(m.prefix_cache_queries, 1000.0);
  EXPECT_EQ(m.prefix_cache_hits, 250.0);
  EXPECT_DOUBLE_EQ(*m.prefix_cache_hit_rate, 0.25);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_rate, 210.0 / 300.0);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_length, 1.0 + 210.0 / 100.0);
  EXPECT_EQ(m.note, "");
}

TEST(SummarizeServerMetrics, CounterGoingBackwardsGivesNoDeltaAndANote) {
  ServerMetrics m = hand_run();
  m.samples.back().preemptions_total = 2;  // the server restarted during the run
  summarize_server_metrics(m);
  EXPECT_FALSE(m.preemptions);
  EXPECT_EQ(m.note, "counter preemptions went backwards (10 -> 2: server restarted?), no delta");
}

TEST(SummarizeServerMetrics, SglangGaugesWhenNoCounters) {
  ServerMetrics m;
  m.available = true;
  for (double v : {0.2, 0.4}) {
    auto s = at(ServerSample::Phase::kDuring, v);
    s.prefix_cache_hit_rate = v;
    s.spec_decode_acceptance_length = 10 * v;
    m.samples.push_back(s);
  }
  summarize_server_metrics(m);
  EXPECT_DOUBLE_EQ(*m.prefix_cache_hit_rate, 0.3);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_length, 3.0);
  EXPECT_FALSE(m.spec_decode_acceptance_rate);
}

TEST(SummarizeServerMetrics, RunShorterThanTheIntervalSaysSo) {
  ServerMetrics m = hand_run();
  m.samples.erase(m.samples.begin() + 1, m.samples.begin() + 4);
  summarize_server_metrics(m);
  EXPECT_FALSE(m.kv_cache_usage);
  EXPECT_EQ(m.preemptions, 3.0);  // counters still have their before/after delta
  EXPECT_EQ(m.note,
            "no scrape fell inside the run (every 1 s): no KV-cache or queue figures; lower "
            "--server-metrics-interval-s");
}

TEST(FormatServerMetrics, ConsoleLines) {
  const std::string text = format_server_metrics(hand_run());
  EXPECT_EQ(text,
            "----------- server metrics (/metrics) ------------\n"
            "Scrapes during the run:                  3 (of 5 with the ones before and after; every 1 s; "
            "engine names: vllm)\n"
            "KV-cache usage max/mean (%):             50.00 / 33.33\n"
            "Running requests max/mean:               8 / 6.00\n"
            "Waiting requests max/mean:               3 / 1.33\n"
            "Preemptions:                             3\n"
            "Prefix-cache hit rate (%):               25.00 (250 of 1000 tokens)\n"
            "Spec-decode acceptance rate (%):         70.00 (210 of 300 draft tokens)\n"
            "Spec-decode acceptance length:           3.10\n"
            "==================================================\n");
  ServerMetrics big = hand_run();
  big.preemptions = 1234567;  // counters print whole, never as 1.23457e+06
  EXPECT_NE(format_server_metrics(big).find("Preemptions:                             1234567\n"),
            std::string::npos);
  ServerMetrics none;
  none.note = "GET http://h:1/metrics returned HTTP 404 Not Found";
  EXPECT_EQ(format_server_metrics(none),
            "----------- server metrics (/metrics) ------------\n"
            "Server metrics not available: GET http://h:1/metrics returned HTTP 404 Not Found\n"
            "==================================================\n");
}

TEST(ServerMetricsJson, SummaryThenSampleColumns) {
  const auto j = server_metrics_json(hand_run());
  EXPECT_EQ(j["engine"], "vllm");
  EXPECT_EQ(j["scrapes"], 5);
  EXPECT_EQ(j["kv_cache_usage"]["max"], 0.5);
  EXPECT_EQ(j["num_requests_running"]["mean"], 6.0);
  EXPECT_EQ(j["preemptions"], 3.0);
  EXPECT_EQ(j["prefix_cache_hit_rate"], 0.25);
  EXPECT_EQ(j["spec_decode_acceptance_length"], 3.1);
  EXPECT_TRUE(j["note"].is_null());
  const auto& cols = j["samples"];
  EXPECT_EQ(cols["phase"].dump(), R"(["before","during","during","during","after"])");
  EXPECT_EQ(cols["t_s"].dump(), "[0.0,1.0,2.0,3.0,3.5]");
  EXPECT_EQ(cols["num_requests_running"].dump(), "[0.0,4.0,8.0,6.0,0.0]");
  EXPECT_EQ(cols["preemptions_total"].dump(), "[10.0,null,null,null,13.0]");
  EXPECT_EQ(cols["prefix_cache_hit_rate"].dump(), "[null,null,null,null,null]");
}

std::string vllm_text(int preemptions) {
  return "# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.\n"
         "# TYPE vllm:num_preemptions_total counter\n"
         "vllm:num_preemptions_total{engine=\"0\",model_name=\"m\"} " +
         std::to_string(preemptions) + ".0\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2.0\n";
}

TEST(ServerMetricsScraper, BeforeDuringAfterAgainstAPrometheusServer) {
  MetricsServer server([](int n) { return MetricsAnswer{"200 OK", "text/plain", vllm_text(10 + n)}; });
  detail::ServerMetricsScraper scraper(server.base_url(), {{"Authorization", "Bearer k"}}, false, 0.05, 2.0,
                                       names());
  EXPECT_EQ(server.scrapes(), 1);  // the "before" scrape happens at construction
  scraper.start_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  const ServerMetrics m = scraper.stop();
  const int scrapes = server.scrapes();
  ASSERT_TRUE(m.available);
  EXPECT_EQ(m.engine, "vllm");
  EXPECT_EQ(m.url, server.base_url() + "/metrics");
  EXPECT_EQ(m.scrapes_failed, 0u);
  ASSERT_EQ(static_cast<int>(m.samples.size()), scrapes);
  ASSERT_GE(scrapes, 3);  // before, at least one during (every 50 ms over 400 ms), after
  EXPECT_EQ(m.samples.front().phase, ServerSample::Phase::kBefore);
  EXPECT_EQ(m.samples.back().phase, ServerSample::Phase::kAfter);
  EXPECT_EQ(m.preemptions, scrapes - 1.0);  // scrape n answered 10 + n
  EXPECT_EQ(m.num_requests_running->max, 2.0);
  // t_s is benchmark time: wall since start_run x time scale 2, so the after sample is past 0.8 s.
  EXPECT_GE(m.samples.back().t_s, 0.8);
  for (std::size_t i = 1; i < m.samples.size(); ++i) EXPECT_GE(m.samples[i].t_s, m.samples[i - 1].t_s);
  EXPECT_EQ(server.last_accept(), "text/plain;version=0.0.4;q=0.9,*/*;q=0.1");
}

ServerMetrics scrape_once(const MetricsAnswer& answer, int* scrapes = nullptr) {
  MetricsServer server([answer](int) { return answer; });
  detail::ServerMetricsScraper scraper(server.base_url(), {}, false, 0.01, 1.0, names());
  scraper.start_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ServerMetrics m = scraper.stop();
  if (scrapes) *scrapes = server.scrapes();
  return m;
}

TEST(ServerMetricsScraper, MissingEndpointIsOneNoteAndNoThread) {
  int scrapes = 0;
  const ServerMetrics m = scrape_once({"404 Not Found", "application/json", "{}"}, &scrapes);
  EXPECT_FALSE(m.available);
  EXPECT_EQ(scrapes, 1);  // no periodic or after scrape once the first failed
  EXPECT_TRUE(m.samples.empty());
  EXPECT_NE(m.note.find("/metrics returned HTTP 404 Not Found"), std::string::npos) << m.note;
}

TEST(ServerMetricsScraper, NonPrometheusAnswersAreNamed) {
  EXPECT_NE(scrape_once({"200 OK", "application/json", R"({"object": "list"})"})
                .note.find("answered JSON that is neither Prometheus text nor iteration stats (trtllm)"),
            std::string::npos);
  EXPECT_NE(scrape_once({"200 OK", "text/html", "<html><body>hi</body></html>"})
                .note.find("answered HTML, not the Prometheus text format"),
            std::string::npos);
  const ServerMetrics text = scrape_once({"200 OK", "text/plain", "hello world\nsecond line\n"});
  EXPECT_FALSE(text.available);
  EXPECT_NE(text.note.find(
                "is not in the Prometheus text format (2 malformed lines; line 1: invalid value 'world')"),
            std::string::npos)
      << text.note;
  EXPECT_NE(
      scrape_once({"200 OK", "text/plain", "# only comments\n"}).note.find("answered no Prometheus samples"),
      std::string::npos);
}

TEST(ServerMetricsScraper, MalformedLinesInAGoodAnswerAreCounted) {
  const ServerMetrics m = scrape_once({"200 OK", "text/plain", vllm_text(1) + "broken{ 1\n"});
  ASSERT_TRUE(m.available);
  EXPECT_EQ(m.skipped_lines, m.samples.size());  // one per scrape
  EXPECT_NE(format_server_metrics(m).find("Malformed /metrics lines (skipped):"), std::string::npos);
}

TEST(ServerMetricsScraper, TrtllmJsonIsRead) {
  const ServerMetrics m = scrape_once(
      {"200 OK", "application/json",
       R"([{"iter": 7, "numActiveRequests": 3, "numQueuedRequests": 2, "kvCacheStats": {"maxNumBlocks": 8, "usedNumBlocks": 2}}])"});
  ASSERT_TRUE(m.available) << m.note;
  EXPECT_EQ(m.engine, "trtllm");
  EXPECT_EQ(m.samples.front().kv_cache_usage, 0.25);
  EXPECT_EQ(m.samples.front().num_requests_waiting, 2.0);
}

// TensorRT-LLM's module says its iteration stats count prefix-cache reuse in blocks: scrape n reports
// 10 n blocks reused and 30 n missed.
TEST(ServerMetricsScraper, TrtllmPrefixCacheCountsAreBlocks) {
  MetricsServer server([](int n) {
    return MetricsAnswer{"200 OK", "application/json",
                         R"([{"iter": )" + std::to_string(n) + R"(, "kvCacheStats": {"reusedBlocks": )" +
                             std::to_string(10 * n) + R"(, "missedBlocks": )" + std::to_string(30 * n) +
                             "}}]"};
  });
  detail::ServerMetricsScraper scraper(server.base_url(), {}, false, 0.02, 1.0, names());
  scraper.start_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(60));
  const ServerMetrics m = scraper.stop();
  const int last = server.scrapes() - 1;
  ASSERT_TRUE(m.available) << m.note;
  EXPECT_EQ(m.engine, "trtllm");
  EXPECT_EQ(m.prefix_cache_unit, "blocks");
  EXPECT_EQ(m.prefix_cache_queries, 40.0 * last);
  EXPECT_NE(format_server_metrics(m).find("25.00 (" + std::to_string(10 * last) + " of " +
                                          std::to_string(40 * last) + " blocks)\n"),
            std::string::npos)
      << format_server_metrics(m);
}

TEST(ServerMetricsScraper, NothingListening) {
  std::string url;
  {
    MetricsServer gone([](int) { return MetricsAnswer{}; });
    url = gone.base_url();
  }
  detail::ServerMetricsScraper scraper(url, {}, false, 1.0, 1.0, names());
  scraper.start_run();
  const ServerMetrics m = scraper.stop();
  EXPECT_FALSE(m.available);
  EXPECT_NE(m.note.find("GET " + url + "/metrics failed"), std::string::npos) << m.note;
}

}  // namespace
}  // namespace servelab::bench
