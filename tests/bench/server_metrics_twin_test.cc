// /metrics end to end: `sim serve` (the engine twin behind the simserve HTTP server, in-process) exposes
// vLLM's metric names with the twin's live values; `bench serve` scrapes them before, during and after a run
// and reports what the twin did. Hand-checkable: a burst of 24 requests on a twin limited to 4 running
// requests must show 4 running and up to 20 waiting, KV usage inside (0, 1] and at most the twin's peak,
// preemptions equal to the twin's own count, and prefix-cache queries equal to the prompt tokens served.
#include <gtest/gtest.h>

#include <memory>
#include <numeric>
#include <thread>

#include "servelab/bench/bench.h"
#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/sim.h"
#include "servelab/simserve/simserve.h"
#include "servelab/tokenizer/tokenizer.h"
#include "simserve/metrics_text.h"

namespace servelab::bench {
namespace {

// The twin of `vllm serve Qwen/Qwen3-8B --max-num-seqs 4` on one H100, served on a loopback port.
struct TwinServer {
  std::unique_ptr<sim::OnlineTwin> twin;
  std::unique_ptr<simserve::Server> server;
  std::thread thread;
  unsigned short port = 0;

  explicit TwinServer(const std::vector<std::string>& launch) {
    const auto engine = engines::parse_launch_command(launch);
    const auto model = model::load_config(common::data_dir() / "model-configs" / "qwen3-8b.json");
    auto created = sim::OnlineTwin::create(engine, hardware::parse_cluster("1xH100"), model);
    if (auto* f = std::get_if<sim::PredictedFailure>(&created)) throw std::runtime_error(f->message);
    twin = std::move(std::get<std::unique_ptr<sim::OnlineTwin>>(created));
    sim::OnlineTwin* t = twin.get();
    simserve::Timeline timeline{
        [t](std::uint64_t id, int prompt, int output, double now) { t->submit(id, prompt, output, now); },
        [t](std::uint64_t id) { t->cancel(id); },
        [t](double ts, const std::function<void(std::uint64_t, int, double)>& emit) {
          t->advance_to(ts, emit);
        },
        [t] { return t->next_event_s(); }};
    timeline.engine_metrics = [t] {
      std::vector<simserve::EngineMetrics> out;
      for (const auto& e : t->live_metrics()) {
        simserve::EngineMetrics m;
        m.kv_cache_usage = e.kv_cache_usage;
        m.num_requests_running = e.num_requests_running;
        m.num_requests_waiting = e.num_requests_waiting;
        m.num_preemptions = e.num_preemptions;
        m.prefix_cache_queries = e.prefix_cache_queries;
        m.prefix_cache_hits = e.prefix_cache_hits;
        m.spec_decode_num_drafts = e.spec_decode_num_drafts;
        m.spec_decode_num_draft_tokens = e.spec_decode_num_draft_tokens;
        m.spec_decode_num_accepted_tokens = e.spec_decode_num_accepted_tokens;
        out.push_back(m);
      }
      return out;
    };
    timeline.spec_decode = twin->speculative();
    simserve::ServerOptions o;
    o.port = 0;
    o.served_models = {"Qwen/Qwen3-8B"};
    o.root_model = "Qwen/Qwen3-8B";
    o.max_model_len = twin->max_model_len();
    server = std::make_unique<simserve::Server>(
        o, std::move(timeline), tokenizer::Tokenizer::from_file(common::data_dir() / "gpt2-tokenizer.json"));
    port = server->start();
    thread = std::thread([this] { server->run(); });
  }
  void stop() {
    if (!thread.joinable()) return;
    server->stop();
    thread.join();
  }
  ~TwinServer() { stop(); }
};

TEST(ServerMetricsTwin, BenchScrapesWhatTheTwinReports) {
  TwinServer ts({"vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "4"});
  RunOptions c;
  c.port = ts.port;
  c.model = "Qwen/Qwen3-8B";
  c.tokenizer = (common::data_dir() / "gpt2-tokenizer.json").string();
  c.num_prompts = 24;
  c.random_input_len = 64;
  c.random_output_len = 64;
  c.ready_check_timeout_s = 0;
  c.server_metric_names = engines::server_metric_names();  // as the CLI hands them to bench
  c.server_metrics_interval_s = 0.1;
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(c, {}, io);
  ts.stop();  // the twin is read below from this thread: its server thread must be gone
  const sim::TwinView view = ts.twin->view();

  EXPECT_EQ(r.metrics.completed, 24);
  ASSERT_TRUE(r.server_metrics);
  const ServerMetrics& m = *r.server_metrics;
  ASSERT_TRUE(m.available) << m.note;
  EXPECT_EQ(m.engine, "vllm");
  EXPECT_EQ(m.scrapes_failed, 0u);
  EXPECT_EQ(m.skipped_lines, 0u);
  ASSERT_GE(m.samples.size(), 3u);
  // Before: nothing ran yet (no ready check, no warm-up). After: the twin is idle again.
  EXPECT_EQ(m.samples.front().num_requests_running, 0.0);
  EXPECT_EQ(m.samples.front().prefix_cache_queries_total, 0.0);
  EXPECT_EQ(m.samples.back().num_requests_running, 0.0);
  EXPECT_EQ(m.samples.back().num_requests_waiting, 0.0);
  // During: the burst of 24 exceeds --max-num-seqs 4, so 4 run and the rest wait.
  ASSERT_TRUE(m.num_requests_running && m.num_requests_waiting && m.kv_cache_usage);
  EXPECT_EQ(m.num_requests_running->max, 4.0);
  EXPECT_GT(m.num_requests_waiting->max, 0.0);
  EXPECT_LE(m.num_requests_waiting->max, 20.0);
  for (const auto& s : m.samples) {
    EXPECT_LE(*s.num_requests_running, 4.0);
    EXPECT_EQ(s.num_requests_running.value() + s.num_requests_waiting.value() <= 24.0, true);
  }
  EXPECT_GT(m.kv_cache_usage->max, 0.0);
  EXPECT_LE(m.kv_cache_usage->max, view.kv_peak_fraction + 1e-12);
  EXPECT_EQ(view.max_batch_requests, 4);
  // Counters: the twin's own preemption count; prefix-cache lookups of every prompt token it prefilled.
  EXPECT_EQ(m.preemptions, static_cast<double>(view.preemptions));
  ASSERT_TRUE(ts.twin->prefix_caching());  // vLLM V1 default
  const long long prompt_tokens =
      std::accumulate(r.outputs.begin(), r.outputs.end(), 0LL,
                      [](long long a, const metrics::RequestOutput& o) { return a + o.usage_prompt_tokens; });
  EXPECT_EQ(m.prefix_cache_queries, static_cast<double>(prompt_tokens));
  if (view.preemptions == 0) {
    EXPECT_EQ(m.prefix_cache_hits, 0.0);
  }
  EXPECT_FALSE(m.spec_decode_acceptance_rate);  // no speculative decoding in this launch

  // Console and JSON.
  EXPECT_NE(r.console_report.find("Running requests max/mean:               4 / "), std::string::npos)
      << r.console_report;
  const auto& j = r.result_json["servelab"]["server_metrics"];
  EXPECT_EQ(j["engine"], "vllm");
  EXPECT_EQ(j["num_requests_running"]["max"], 4.0);
  EXPECT_EQ(j["samples"]["t_s"].size(), m.samples.size());
  EXPECT_EQ(j["samples"]["phase"].front(), "before");
}

// Speculative decoding (n-gram drafts, k = 2): each decode step of a request is one draft of 2 tokens,
// of which the twin accepts a chain (draft d only if every draft before it was), so the acceptance rate
// is about (a + a^2) / 2 for its per-draft acceptance a.
TEST(ServerMetricsTwin, SpecDecodeCountersOfTheTwin) {
  TwinServer ts({"vllm", "serve", "Qwen/Qwen3-8B", "--max-num-seqs", "8", "--speculative-config",
                 R"({"method":"ngram","num_speculative_tokens":2,"prompt_lookup_max":4})"});
  ASSERT_TRUE(ts.twin->speculative());
  const double a = ts.twin->context().launch.speculative->acceptance;
  RunOptions c;
  c.port = ts.port;
  c.model = "Qwen/Qwen3-8B";
  c.tokenizer = (common::data_dir() / "gpt2-tokenizer.json").string();
  c.num_prompts = 16;
  c.random_input_len = 32;
  c.random_output_len = 64;
  c.ready_check_timeout_s = 0;
  c.server_metric_names = engines::server_metric_names();  // as the CLI hands them to bench
  c.server_metrics_interval_s = 0.2;
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(c, {}, io);
  ts.stop();
  ASSERT_EQ(r.metrics.completed, 16);
  ASSERT_TRUE(r.server_metrics && r.server_metrics->available) << r.server_metrics->note;
  const ServerMetrics& m = *r.server_metrics;
  ASSERT_TRUE(m.spec_decode_num_drafts && m.spec_decode_draft_tokens && m.spec_decode_accepted_tokens);
  EXPECT_EQ(*m.spec_decode_draft_tokens, 2 * *m.spec_decode_num_drafts);
  EXPECT_LE(*m.spec_decode_accepted_tokens, *m.spec_decode_draft_tokens);
  // 16 x 63 tokens after the first come from decode steps of 1 to 3 tokens each (the last one capped).
  const double decoded = 16 * 63.0;
  EXPECT_GE(*m.spec_decode_num_drafts, decoded / 3);
  EXPECT_LE(*m.spec_decode_num_drafts, decoded);
  EXPECT_NEAR(*m.spec_decode_acceptance_rate, (a + a * a) / 2, 0.1);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_length,
                   1 + *m.spec_decode_accepted_tokens / *m.spec_decode_num_drafts);
  EXPECT_NE(r.console_report.find("Spec-decode acceptance rate (%):"), std::string::npos);
}

TEST(ServerMetricsTwin, NoServerMetricsFlagScrapesNothing) {
  TwinServer ts({"vllm", "serve", "Qwen/Qwen3-8B"});
  RunOptions c;
  c.port = ts.port;
  c.model = "Qwen/Qwen3-8B";
  c.tokenizer = (common::data_dir() / "gpt2-tokenizer.json").string();
  c.num_prompts = 2;
  c.random_input_len = 16;
  c.random_output_len = 4;
  c.ready_check_timeout_s = 0;
  c.server_metric_names = engines::server_metric_names();  // as the CLI hands them to bench
  c.no_server_metrics = true;
  RunIo io;
  io.quiet = true;
  const BenchResult r = run(c, {}, io);
  EXPECT_FALSE(r.server_metrics);
  EXPECT_EQ(r.console_report.find("server metrics"), std::string::npos);
  EXPECT_FALSE(r.result_json["servelab"].contains("server_metrics"));
}

// The exposition sim serve writes is what vLLM's prometheus_client writes, and bench's parser reads it back.
TEST(SimServeMetricsText, VllmLayoutRoundTrips) {
  simserve::EngineMetrics a, b;
  a.kv_cache_usage = 0.25;
  a.num_requests_running = 3;
  a.num_requests_waiting = 7;
  a.num_preemptions = 2;
  a.prefix_cache_queries = 640;
  a.prefix_cache_hits = 32;
  a.spec_decode_num_drafts = 5;
  a.spec_decode_num_draft_tokens = 15;
  a.spec_decode_num_accepted_tokens = 9;
  b.kv_cache_usage = 0.5;
  const std::string text = simserve::render_vllm_metrics({a, b}, "org/m \"x\"", true);
  EXPECT_EQ(text.substr(0, text.find("# HELP vllm:num_requests_waiting")),
            "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
            "# TYPE vllm:num_requests_running gauge\n"
            "vllm:num_requests_running{engine=\"0\",model_name=\"org/m \\\"x\\\"\"} 3.0\n"
            "vllm:num_requests_running{engine=\"1\",model_name=\"org/m \\\"x\\\"\"} 0.0\n");
  const auto e = prometheus::parse(text);
  EXPECT_EQ(e.skipped_count, 0u);
  EXPECT_EQ(*e.samples[0].label("model_name"), "org/m \"x\"");
  EXPECT_EQ(e.type_of("vllm:num_preemptions_total"), prometheus::MetricType::kCounter);
  std::string engine;
  const ServerSample s = reduce_exposition(e, engines::server_metric_names(), &engine);
  EXPECT_EQ(engine, "vllm");
  EXPECT_EQ(s.kv_cache_usage, 0.5);
  EXPECT_EQ(s.num_requests_running, 3.0);
  EXPECT_EQ(s.num_requests_waiting, 7.0);
  EXPECT_EQ(s.preemptions_total, 2.0);
  EXPECT_EQ(s.prefix_cache_queries_total, 640.0);
  EXPECT_EQ(s.prefix_cache_hits_total, 32.0);
  EXPECT_EQ(s.spec_decode_num_drafts_total, 5.0);
  EXPECT_EQ(s.spec_decode_draft_tokens_total, 15.0);
  EXPECT_EQ(s.spec_decode_accepted_tokens_total, 9.0);
  EXPECT_EQ(simserve::render_vllm_metrics({a}, "m", false).find("spec_decode"), std::string::npos);
}

}  // namespace
}  // namespace servelab::bench
