// A fake engine registered from this one file: every engine fact the rest of servelab uses comes from the
// engine table (engine_module.h), so a new engine is a module, and a module with a hook missing is refused
// at registration (never a silent fallback to another engine). Own test binary: the registration is global.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench/metrics_server.h"
#include "engines/launch_detail.h"
#include "servelab/bench/prometheus.h"
#include "servelab/bench/server_metrics.h"
#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/engines/multinode.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/ops/op_store.h"
#include "servelab/sim/calibration.h"
#include "servelab/sim/sim.h"
#include "servelab/sim/trace.h"
#include "vllm_clone.h"

namespace servelab::engines {
namespace {

constexpr auto kFake = static_cast<EngineKind>(42);

// `fake-serve [serve] MODEL [--tp N] [--nodes N]`.
void fake_parse(const std::vector<std::string>& args, const std::map<std::string, std::string>&,
                LaunchConfig& c) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "--tp" || args[i] == "--nodes") && i + 1 < args.size()) {
      int& field = args[i] == "--tp" ? c.tp : c.nnodes;
      field = std::stoi(args[++i]);
    } else if (args[i].rfind("--", 0) == 0) {
      throw EngineArgError(kFake, "fake-serve: no such option: " + args[i]);
    } else {
      c.model = args[i];
    }
  }
}

std::vector<std::string> fake_render(const LaunchConfig& c, const LaunchConfig& bare) {
  if (c.tp == bare.tp) return {};
  return {"--tp", std::to_string(c.tp)};
}

void fake_env(const LaunchConfig& c, std::map<std::string, std::string>& env) {
  env["FAKE_DEEP_GEMM"] = c.deep_gemm ? "1" : "0";
}

// A model with no layers is refused; any other is resolved as far as the shared helpers go (release, layout).
std::variant<ResolvedLaunch, LaunchFailure> fake_resolve(const LaunchConfig& c, const model::ModelSpec& m,
                                                         const hardware::ClusterSpec&) {
  if (m.layers.empty())
    return LaunchFailure{FailurePhase::kStartup, "fake-serve: this engine serves nothing", true,
                         "fake.refuse"};
  ResolvedLaunch r;
  r.config = c;
  r.model = m;
  r.layout.attn_tp = c.tp;
  detail::apply_version(r);
  return r;
}

std::optional<std::string> fake_heads_error(int heads, int tp) {
  return "FakeError: " + std::to_string(heads) + " heads over TP " + std::to_string(tp);
}

std::optional<std::string> fake_check_request(const ResolvedLaunch&, int prompt_tokens, int) {
  if (prompt_tokens > 10) return "fake-serve: prompt of " + std::to_string(prompt_tokens) + " > 10";
  return std::nullopt;
}

// The option file sets the TP size: `tp: N`.
LaunchConfig fake_apply(const LaunchConfig& c, const std::string& text) {
  LaunchConfig out = c;
  if (text.rfind("tp: ", 0) != 0) throw std::invalid_argument("fake: expected 'tp: N'");
  out.tp = std::stoi(text.substr(4));
  return out;
}

std::optional<LaunchConfig::NodePlacement> fake_placement(const LaunchConfig& c) {
  if (c.nnodes <= 1) return std::nullopt;
  return LaunchConfig::NodePlacement{c.nnodes, c.tp / c.nnodes, "--nodes " + std::to_string(c.nnodes)};
}

NodeLaunch fake_node_launch(const LaunchConfig& c, const MultiNodeRequest& r, std::vector<std::string> argv,
                            const std::map<std::string, std::string>&) {
  NodeLaunch n;
  n.method = "fake-ranks";
  argv.insert(argv.end(), {"--rank", std::to_string(r.node_rank)});
  n.argv = std::move(argv);
  n.serves_http = r.node_rank == 0;
  n.gpus = c.tp / r.nodes;
  return n;
}

// Its /metrics: Prometheus names of its own, or iteration-stats JSON with keys of its own (none of
// TensorRT-LLM's), prefix-cache reuse counted in blocks.
metrics::IterationStatsKeys fake_iteration_stats() {
  metrics::IterationStatsKeys k;
  k.entry_keys = {"step"};
  k.num_requests_running = "active";
  k.num_requests_waiting = "queue";
  k.kv_cache_blocks_used = "cache.blocks_in_use";
  k.kv_cache_blocks_total = "cache.blocks";
  k.prefix_cache_hits = "cache.hit_blocks";
  k.prefix_cache_misses = "cache.miss_blocks";
  k.spec_decode_num_drafts = "mtp.verifies";
  k.spec_decode_draft_tokens = "mtp.proposed";
  k.spec_decode_accepted_tokens = "mtp.accepted";
  return k;
}

metrics::ServerMetricNames fake_server_metrics() {
  metrics::ServerMetricNames n;
  n.engine = "fakellm";
  n.prefix = "fake:";
  n.prefix_cache_unit = "blocks";
  n.kv_cache_usage = {"fake:kv_usage"};
  n.num_requests_running = {"fake:running"};
  n.num_requests_waiting = {"fake:queued"};
  n.preemptions_total = {"fake:evictions_total"};
  n.prefix_cache_queries_total = {"fake:block_lookups_total"};
  n.prefix_cache_hits_total = {"fake:block_hits_total"};
  n.spec_decode_num_drafts_total = {"fake:drafts_total"};
  n.spec_decode_draft_tokens_total = {"fake:draft_tokens_total"};
  n.spec_decode_accepted_tokens_total = {"fake:accepted_tokens_total"};
  n.iteration_stats = fake_iteration_stats();
  return n;
}

EngineModule fake_module() {
  return {kFake,
          "fakellm",
          "FakeLLM",
          {{"1.0", "fakellm-1.0"}, {"1.2", "fakellm-1.2"}},
          "1.0",
          {{"fake-serve", "fake-serve", "serve", true, "", ""}},
          {{"fakellm"}, {"fakellm-server"}},
          {"FAKE_"},
          fake_parse,
          fake_render,
          fake_env,
          fake_resolve,
          fake_check_request,
          fake_heads_error,
          {"--fake-config", &LaunchConfig::config_file, false, false, fake_apply},
          /*dp_attention_within_tp=*/true,
          fake_placement,
          fake_node_launch,
          /*multi_node_one_job=*/false,
          {3.0, 7.0},
          "",
          "/fake_reset",
          "",
          fake_server_metrics()};
}

// What bench reads from `server` in one 100 ms run, scraping every 20 ms by the engine table's names.
bench::ServerMetrics scrape_for_100ms(const bench::testing::MetricsServer& server) {
  bench::detail::ServerMetricsScraper scraper(server.base_url(), {}, false, 0.02, 1.0, server_metric_names());
  scraper.start_run();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  return scraper.stop();
}

class FakeEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!find_engine_module("fakellm")) register_engine_module(fake_module());
    testing::register_vllm_clone();
  }
};

TEST_F(FakeEngine, IsParsedAndRenderedByItsModule) {
  const LaunchConfig c = parse_launch_command({"fake-serve", "serve", "m", "--tp", "4"});
  EXPECT_EQ(c.kind, kFake);
  EXPECT_EQ(c.program, "fake-serve");
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.tp, 4);
  EXPECT_EQ(std::string(engine_kind_name(kFake)), "fakellm");
  EXPECT_EQ(engine_kind_from_name("fakellm"), kFake);
  EXPECT_EQ(render_command(c), "FAKE_DEEP_GEMM=1 fake-serve m --tp 4");
  EXPECT_THROW(parse_launch_command({"fake-serve", "m", "--pp", "2"}), EngineArgError);
  // The built-in engines are still found by their own programs.
  EXPECT_EQ(parse_launch_command({"vllm", "serve", "m"}).kind, EngineKind::kVllm);
}

TEST_F(FakeEngine, ItsProgramImagesAndEnvironmentComeFromTheModule) {
  // Behind a container: the image's entrypoint is the engine's program (EngineImages::entrypoint_words),
  // and the image's tag names the release (EngineImages::repository_words).
  const LaunchConfig entry = parse_launch_command({"docker", "run", "--rm", "org/fakellm-server:v1.2", "m"});
  EXPECT_EQ(entry.kind, kFake);
  EXPECT_EQ(entry.model, "m");
  EXPECT_EQ(entry.engine_version, "1.2");
  const LaunchConfig wrapped =
      parse_launch_command({"docker", "run", "--rm", "org/fakellm:1.0", "fake-serve", "m", "--tp", "2"});
  EXPECT_EQ(wrapped.kind, kFake);
  EXPECT_EQ(wrapped.tp, 2);
  EXPECT_EQ(wrapped.engine_version, "1.0");
  // mpirun finds the engine's program among its own options.
  EXPECT_EQ(parse_launch_command({"mpirun", "-n", "1", "fake-serve", "m"}).kind, kFake);
  // The engine's environment variables are recorded (env_prefixes), others are not.
  const LaunchConfig env = parse_launch_command({"FAKE_KNOB=1", "OTHER_KNOB=2", "fake-serve", "m"});
  EXPECT_EQ(env.env.count("FAKE_KNOB"), 1u);
  EXPECT_EQ(env.env.count("OTHER_KNOB"), 0u);
}

TEST_F(FakeEngine, ItsReleaseFamilyAndHeadsErrorComeFromTheModule) {
  model::ModelSpec m;
  model::GqaAttention attention;
  attention.heads = 6;
  attention.kv_heads = 6;
  attention.head_dim = 64;
  m.layers.push_back({0, 2, model::Layer{attention, {}}});
  const auto split = resolve_launch(parse_launch_command({"fake-serve", "m", "--tp", "4"}), m, {});
  ASSERT_TRUE(std::holds_alternative<LaunchFailure>(split));
  EXPECT_EQ(std::get<LaunchFailure>(split).rule, "parallel.heads_divisible");
  EXPECT_EQ(std::get<LaunchFailure>(split).message, "FakeError: 6 heads over TP 4");
  EXPECT_TRUE(std::get<LaunchFailure>(split).verbatim);

  const auto resolved =
      resolve_launch(parse_launch_command({"fake-serve", "m", "--tp", "2"}, {}, "1.3"), m, {});
  ASSERT_TRUE(std::holds_alternative<ResolvedLaunch>(resolved));
  EXPECT_EQ(std::get<ResolvedLaunch>(resolved).version, "1.3");
  EXPECT_EQ(std::get<ResolvedLaunch>(resolved).version_family, "fakellm-1.2");
}

TEST_F(FakeEngine, ItsOptionFileGpusAndNodesComeFromTheModule) {
  LaunchConfig c = parse_launch_command({"fake-serve", "m", "--tp", "8", "--nodes", "2"});
  c.enable_dp_attention = true;
  c.dp = 4;
  EXPECT_EQ(c.gpus_used(), 8);  // dp_attention_within_tp
  const auto placement = c.stated_node_placement();
  ASSERT_TRUE(placement);
  EXPECT_EQ(placement->flag, "--nodes 2");
  EXPECT_EQ(placement->gpus_per_node, 4);

  EXPECT_EQ(apply_config_yaml(c, "tp: 2").tp, 2);
  const std::string path = ::testing::TempDir() + "fake_engine_test.yaml";
  std::ofstream(path) << "tp: 16";
  c.config_file = path;
  EXPECT_EQ(apply_config_files(c).tp, 16);
  c.config_file = path + ".missing";
  try {
    apply_config_files(c);
    FAIL() << "a missing option file must fail";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("--fake-config " + c.config_file + ": cannot read", 0), 0u)
        << e.what();
  }
}

TEST_F(FakeEngine, MultiNodeLaunchResolutionAndAdmissionAskTheModule) {
  MultiNodeRequest r;
  r.kind = kFake;
  r.argv = {"fake-serve", "m", "--tp", "16"};
  r.nodes = 2;
  r.gpus_per_node = 8;
  r.node_rank = 1;
  const NodeLaunch n = render_node_launch(r);
  EXPECT_EQ(n.argv, (std::vector<std::string>{"fake-serve", "m", "--tp", "16", "--rank", "1"}));
  EXPECT_EQ(n.method, "fake-ranks");
  EXPECT_FALSE(n.serves_http);
  EXPECT_EQ(n.gpus, 8);

  const LaunchConfig c = parse_launch_command({"fake-serve", "m"});
  const auto resolved = resolve_launch(c, model::ModelSpec{}, hardware::ClusterSpec{});
  ASSERT_TRUE(std::holds_alternative<LaunchFailure>(resolved));
  EXPECT_EQ(std::get<LaunchFailure>(resolved).rule, "fake.refuse");

  ResolvedLaunch launch;
  launch.config = c;
  EXPECT_EQ(check_request(launch, 11, 1), "fake-serve: prompt of 11 > 10");
  EXPECT_EQ(check_request(launch, 10, 1), std::nullopt);
}

TEST_F(FakeEngine, TheTwinsPriorsAndTheStudyHooksAreTheModules) {
  const EngineModule& m = engine_module(kFake);
  EXPECT_STREQ(m.prefix_cache_reset_path, "/fake_reset");
  EXPECT_STREQ(m.version_probe_package, "");
  EXPECT_FALSE(m.multi_node_one_job);
  const sim::Calibration prior = sim::calibration_prior("fakellm");
  EXPECT_DOUBLE_EQ(prior.cpu_step_ms, 3.0);
  EXPECT_DOUBLE_EQ(prior.api_request_ms, 7.0);
  // No module, no prior: never another engine's.
  EXPECT_THROW(sim::calibration_prior("nosuchengine"), std::invalid_argument);
}

TEST_F(FakeEngine, TheTwinPredictsAnEngineFromItsModuleNotItsName) {
  const model::ModelSpec model = model::load_config(common::data_dir() / "model-configs" / "qwen3-8b.json");
  const hardware::ClusterSpec cluster = hardware::parse_cluster("1xH100");
  const std::vector<std::string> args = {"serve", "Qwen/Qwen3-8B", "--max-num-seqs", "64"};
  std::vector<std::string> vllm_argv = {"vllm"}, clone_argv = {"vllm-clone"};
  vllm_argv.insert(vllm_argv.end(), args.begin(), args.end());
  clone_argv.insert(clone_argv.end(), args.begin(), args.end());
  const LaunchConfig vllm = parse_launch_command(vllm_argv);
  const LaunchConfig clone = parse_launch_command(clone_argv);
  ASSERT_EQ(clone.kind, testing::kVllmClone);
  // The same calibration for both (the fit knows only the built-in engines' names).
  sim::WorkloadOptions options;
  sim::CalibrationTable table;
  table.engines["vllm"].cal = sim::calibration_prior("vllm");
  table.engines["vllmclone"].cal = sim::calibration_prior("vllm");
  options.calibration = table;
  const auto requests = sim::random_fixed(200, 1000, 200);
  const auto a = sim::predict(vllm, cluster, model, requests, options);
  const auto b = sim::predict(clone, cluster, model, requests, options);
  ASSERT_TRUE(std::holds_alternative<sim::Prediction>(a));
  ASSERT_TRUE(std::holds_alternative<sim::Prediction>(b));
  const sim::HeadlineMetrics ha = sim::headline(std::get<sim::Prediction>(a));
  const sim::HeadlineMetrics hb = sim::headline(std::get<sim::Prediction>(b));
  EXPECT_EQ(hb.completed, 200);
  EXPECT_GT(hb.output_tok_s, 0.0);
  EXPECT_EQ(ha.completed, hb.completed);
  EXPECT_DOUBLE_EQ(ha.output_tok_s, hb.output_tok_s);
  EXPECT_DOUBLE_EQ(ha.mean_ttft_ms, hb.mean_ttft_ms);
  EXPECT_DOUBLE_EQ(ha.mean_tpot_ms, hb.mean_tpot_ms);

  // On a release with measured operator tables, the clone's kernels are timed from the tables its module
  // names (EngineModule::op_tables, vLLM's), not from a directory spelled like its own name.
  LaunchConfig vllm24 = vllm, clone24 = clone;
  vllm24.engine_version = clone24.engine_version = "0.24.0";
  sim::use_measured_operators(ops::OpStore::default_dir());
  const auto c = sim::predict(vllm24, cluster, model, requests, options);
  const auto d = sim::predict(clone24, cluster, model, requests, options);
  sim::use_measured_operators({});  // back to the library's default (the roofline)
  ASSERT_TRUE(std::holds_alternative<sim::Prediction>(c));
  ASSERT_TRUE(std::holds_alternative<sim::Prediction>(d));
  const auto& vc = std::get<sim::Prediction>(c).twin;
  const auto& vd = std::get<sim::Prediction>(d).twin;
  ASSERT_FALSE(vd.measured_operators.empty());
  EXPECT_NE(vd.measured_operators.front().find("from gemm_perf of h100_sxm vllm 0.24.0"), std::string::npos)
      << vd.measured_operators.front();
  EXPECT_GT(vd.measured_lookups, 0);
  EXPECT_EQ(vc.measured_operators, vd.measured_operators);
  EXPECT_DOUBLE_EQ(sim::headline(std::get<sim::Prediction>(c)).mean_tpot_ms,
                   sim::headline(std::get<sim::Prediction>(d)).mean_tpot_ms);
}

// bench names no engine: the names it reads /metrics with are the table's (the CLI hands them over), so
// the fake engine's own names are read, and the engine and the unit reported are its module's.
TEST_F(FakeEngine, BenchReadsItsMetricsByTheNamesOfItsModule) {
  const std::vector<metrics::ServerMetricNames> names = server_metric_names();
  ASSERT_EQ(names.size(), 4u);  // vllm, sglang, trtllm, fakellm: the vLLM clone's names are vLLM's
  EXPECT_EQ(names[3].engine, "fakellm");
  const auto e = bench::prometheus::parse(R"(# TYPE fake:kv_usage gauge
fake:kv_usage{rank="0"} 0.3
fake:kv_usage{rank="1"} 0.6
fake:running{rank="0"} 2
fake:running{rank="1"} 5
fake:queued{rank="0"} 4
fake:evictions_total 9
fake:block_lookups_total{rank="0"} 300
fake:block_lookups_total{rank="1"} 100
fake:block_hits_total{rank="0"} 120
fake:block_hits_total{rank="1"} 30
fake:drafts_total 10
fake:draft_tokens_total 40
fake:accepted_tokens_total 25
fake:unread_gauge 1
)");
  std::string engine, unit;
  const bench::ServerSample s = bench::reduce_exposition(e, names, &engine, &unit);
  EXPECT_EQ(engine, "fakellm");
  EXPECT_EQ(unit, "blocks");
  EXPECT_EQ(s.kv_cache_usage, 0.6);  // the fuller rank
  EXPECT_EQ(s.num_requests_running, 7.0);
  EXPECT_EQ(s.num_requests_waiting, 4.0);
  EXPECT_EQ(s.preemptions_total, 9.0);
  EXPECT_EQ(s.prefix_cache_queries_total, 400.0);
  EXPECT_EQ(s.prefix_cache_hits_total, 150.0);
  EXPECT_FALSE(s.prefix_cache_hit_rate);
  EXPECT_EQ(s.spec_decode_num_drafts_total, 10.0);
  EXPECT_EQ(s.spec_decode_draft_tokens_total, 40.0);
  EXPECT_EQ(s.spec_decode_accepted_tokens_total, 25.0);
  EXPECT_FALSE(s.spec_decode_acceptance_length);
  // Without the module's names, bench knows none of them.
  EXPECT_FALSE(bench::reduce_exposition(e, {names[0], names[1], names[2]}, &engine).kv_cache_usage);
  EXPECT_EQ(engine, "");
}

// `bench serve --server-metrics`' scraper against a server answering the fake engine's names: scrape n
// reports 100 n blocks looked up of which 40 n hit, and 3 n preemptions.
TEST_F(FakeEngine, BenchScrapesItsMetricsThroughTheTable) {
  bench::testing::MetricsServer server([](int n) {
    return bench::testing::MetricsAnswer{"200 OK", "text/plain",
                                         "fake:kv_usage 0.5\nfake:running 3\nfake:block_lookups_total " +
                                             std::to_string(100 * n) + "\nfake:block_hits_total " +
                                             std::to_string(40 * n) + "\nfake:evictions_total " +
                                             std::to_string(3 * n) + "\n"};
  });
  const bench::ServerMetrics m = scrape_for_100ms(server);
  const int last = server.scrapes() - 1;
  ASSERT_TRUE(m.available) << m.note;
  ASSERT_GE(last, 1);
  EXPECT_EQ(m.engine, "fakellm");
  EXPECT_EQ(m.prefix_cache_unit, "blocks");
  EXPECT_EQ(m.prefix_cache_queries, 100.0 * last);
  EXPECT_EQ(m.prefix_cache_hits, 40.0 * last);
  EXPECT_DOUBLE_EQ(*m.prefix_cache_hit_rate, 0.4);
  EXPECT_EQ(m.preemptions, 3.0 * last);
  const std::string text = bench::format_server_metrics(m);
  EXPECT_NE(text.find("engine names: fakellm)"), std::string::npos) << text;
  EXPECT_NE(text.find("Prefix-cache hit rate (%):               40.00 (" + std::to_string(40 * last) +
                      " of " + std::to_string(100 * last) + " blocks)\n"),
            std::string::npos)
      << text;
}

// Iteration-stats JSON is read by the keys its module gives: scrape n answers one iteration with 3
// running, 1 queued, 12 of 48 KV blocks in use, 10 n prefix-cache blocks hit and 15 n missed (cumulative),
// and 2 drafts of 8 tokens with 6 accepted (per iteration). TensorRT-LLM's module, earlier in the table and
// also serving JSON, does not read it: its keys are not there.
TEST_F(FakeEngine, BenchReadsItsIterationStatsByTheKeysOfItsModule) {
  const auto body = [](int n) {
    return R"([{"step": )" + std::to_string(n) +
           R"(, "active": 3, "queue": 1, "cache": {"blocks_in_use": 12, "blocks": 48, "hit_blocks": )" +
           std::to_string(10 * n) + R"(, "miss_blocks": )" + std::to_string(15 * n) +
           R"(}, "mtp": {"verifies": 2, "proposed": 8, "accepted": 6}}])";
  };
  bench::ServerSample totals;
  EXPECT_FALSE(bench::reduce_iteration_stats(
      body(1), *engine_module(EngineKind::kTrtllm).server_metrics.iteration_stats, totals));
  EXPECT_FALSE(totals.spec_decode_num_drafts_total);
  bench::testing::MetricsServer server([&body](int n) {
    return bench::testing::MetricsAnswer{"200 OK", "application/json", body(n)};
  });
  const bench::ServerMetrics m = scrape_for_100ms(server);
  const int last = server.scrapes() - 1;
  ASSERT_TRUE(m.available) << m.note;
  ASSERT_GE(last, 1);
  EXPECT_EQ(m.engine, "fakellm");
  EXPECT_EQ(m.prefix_cache_unit, "blocks");
  ASSERT_TRUE(m.kv_cache_usage);
  EXPECT_EQ(m.kv_cache_usage->max, 0.25);
  EXPECT_EQ(m.num_requests_running->mean, 3.0);
  EXPECT_EQ(m.num_requests_waiting->max, 1.0);
  EXPECT_EQ(m.prefix_cache_hits, 10.0 * last);
  EXPECT_EQ(m.prefix_cache_queries, 25.0 * last);
  EXPECT_DOUBLE_EQ(*m.prefix_cache_hit_rate, 0.4);
  EXPECT_EQ(m.spec_decode_num_drafts, 2.0 * last);
  EXPECT_EQ(m.spec_decode_draft_tokens, 8.0 * last);
  EXPECT_EQ(m.spec_decode_accepted_tokens, 6.0 * last);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_rate, 0.75);
  EXPECT_DOUBLE_EQ(*m.spec_decode_acceptance_length, 4.0);  // 1 + 6 / 2
  // An empty answer (no iteration since the previous GET) fits both engines' keys: it names neither.
  bench::testing::MetricsServer idle([](int) {
    return bench::testing::MetricsAnswer{"200 OK", "application/json", "[]"};
  });
  const bench::detail::ScrapeResult r =
      bench::detail::scrape_metrics(idle.base_url() + "/metrics", {}, false, server_metric_names(), &totals);
  ASSERT_TRUE(r.sample) << r.error;
  EXPECT_EQ(r.engine, "");
  EXPECT_EQ(r.prefix_cache_unit, "");
}

TEST_F(FakeEngine, AModuleWithAMissingHookOrATakenNameIsRefused) {
  EngineModule m = fake_module();
  m.kind = static_cast<EngineKind>(43);
  m.name = "fakellm2";
  m.node_launch = nullptr;
  try {
    register_engine_module(m);
    FAIL() << "a module without node_launch must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "engine module 'fakellm2': 'node_launch' is not set");
  }
  m = fake_module();
  m.kind = static_cast<EngineKind>(43);
  m.name = "fakellm2";
  m.heads_indivisible_error = nullptr;
  EXPECT_THROW(register_engine_module(m), std::invalid_argument);
  m = fake_module();
  m.kind = static_cast<EngineKind>(43);
  m.name = "fakellm2";
  m.releases.back().family = "";
  try {
    register_engine_module(m);
    FAIL() << "a module without a family for each release must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "engine module 'fakellm2': release '1.2' needs a version and a fitted-parameter family");
  }
  m = fake_module();
  m.kind = static_cast<EngineKind>(43);
  m.name = "fakellm2";
  m.default_version = "2.0";
  try {
    register_engine_module(m);
    FAIL() << "a default release that is not modelled must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "engine module 'fakellm2': default_version '2.0' is not one of its releases");
  }
  m.default_version = "1.0";
  try {
    register_engine_module(m);  // fakellm's own program words: which engine a launch is would be ambiguous
    FAIL() << "a module started like a registered one must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(),
                 "engine module 'fakellm2': program 'fake-serve' is already 'fakellm''s: a launch would be "
                 "ambiguous");
  }
  m.releases.clear();
  try {
    register_engine_module(m);
    FAIL() << "a module without releases must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(
        e.what(),
        "engine module 'fakellm2': no releases (the releases whose flags and defaults are modelled)");
  }
  m = fake_module();
  m.kind = static_cast<EngineKind>(43);
  m.name = "fakellm2";
  m.server_metrics = {};
  try {
    register_engine_module(m);
    FAIL() << "a module that does not say how its /metrics is read must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "engine module 'fakellm2': 'server_metrics.engine' is not set");
  }
  m.server_metrics.engine = "fakellm2";
  m.server_metrics.prefix_cache_unit = "tokens";
  EXPECT_THROW(register_engine_module(m), std::invalid_argument);  // neither a prefix nor iteration stats
  m.server_metrics.iteration_stats = metrics::IterationStatsKeys{};
  try {
    register_engine_module(m);
    FAIL() << "iteration stats without the keys that identify an entry must be refused";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "engine module 'fakellm2': 'server_metrics.iteration_stats.entry_keys' is empty");
  }
  EXPECT_THROW(register_engine_module(fake_module()), std::invalid_argument);  // already registered
  EXPECT_EQ(find_engine_module("fakellm2"), nullptr);
  EXPECT_THROW(engine_module(static_cast<EngineKind>(43)), std::logic_error);
}

}  // namespace
}  // namespace servelab::engines
