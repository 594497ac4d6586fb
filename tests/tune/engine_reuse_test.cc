// Issue 14 §2: on --target local the engine stays up across the probes of one SLO search of one
// configuration (TrialRequest::keep_engine), is stopped when the search ends, and an engine that died
// between probes is launched again. The engine is a small Python HTTP server that appends its PID to a
// start log, so launches are counted by the engine itself.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "servelab/common/paths.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/search/search.h"
#include "servelab/tune/tune.h"
#include "test_ports.h"
#include "test_study.h"
#include "tune/targets/local_runner.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

const char* kEngine = R"py(
import http.server, os, sys
port, start_log = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
    def do_POST(self):
        with open(start_log + '.posts', 'a') as f:
            f.write(self.path + '\n')
        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(('127.0.0.1', port), H)
with open(start_log, 'a') as f:
    f.write('%d\n' % os.getpid())
print('INFO: Application startup complete.', flush=True)
s.serve_forever()
)py";

using testing::arg_value;

bool process_alive(pid_t pid) {
  return kill(pid, 0) == 0 || errno != ESRCH;
}

/// Waits up to 10 s for `pid` to be gone (it is reaped by its supervisor, not by this test).
bool gone_within_10_s(pid_t pid) {
  for (int i = 0; i < 200 && process_alive(pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  return !process_alive(pid);
}

struct EngineReuse : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("servelab-engine-reuse-" + std::to_string(getpid()));
  int port = testing::free_port();
  Study study = parse_study(std::string(testing::kSmallStudy) +
                                "\n[slo]\np99_ttft_ms = 2000\nmean_tpot_ms = 50\ntolerance_pct = 5\n",
                            "small.toml", "/data");
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream(dir / "engine.py") << kEngine;
  }
  void TearDown() override { fs::remove_all(dir); }

  /// PIDs in the start log, one per launch.
  std::vector<pid_t> starts() const {
    std::ifstream in(dir / "starts.log");
    std::vector<pid_t> pids;
    for (long p; in >> p;) pids.push_back(static_cast<pid_t>(p));
    return pids;
  }

  /// The local runner on the fake engine: P99 TTFT = 100 ms × request rate (the SLO holds up to 20 req/s).
  /// `after(n)` runs after the n-th trial (1-based) returns.
  TrialRunner runner(std::function<void(int)> after = nullptr) {
    LocalRunnerOptions o;
    o.port = port;
    o.ready_timeout_s = 20.0;
    o.stop_grace_s = 1.0;
    o.poll_interval_s = 0.05;
    o.port_free_timeout_s = 5.0;
    o.reset_cache_path = "/reset_prefix_cache";
    o.run_scenario = [](const Scenario& sc, const std::string&, const std::atomic<bool>&) {
      const double rate = arg_value(sc.args, "--request-rate");
      ScenarioResult r;
      r.metrics["P99 TTFT (ms)"] = 100 * rate;
      r.metrics["Mean TPOT (ms)"] = 10;
      r.metrics["Request throughput (req/s)"] = rate;
      r.metrics["Request goodput (req/s)"] = 0.9 * rate;
      r.metrics["Total Token throughput (tok/s)"] = 30 * rate;
      r.metrics["Output token throughput (tok/s)"] = 10 * rate;
      r.metrics["Successful requests"] = 10;
      r.metrics["Total generated tokens"] = 1000;
      return r;
    };
    TrialRunner local = make_local_runner(o);
    const std::vector<std::string> argv = {"/usr/bin/python3", (dir / "engine.py").string(),
                                           std::to_string(port), (dir / "starts.log").string()};
    auto n = std::make_shared<int>(0);
    return [local, argv, after, n](const TrialRequest& req) {
      TrialRequest r = req;
      r.argv = argv;  // the study's `vllm serve ...` rendered, run as the fake engine
      TrialOutcome out = local(r);
      if (!req.release_engine && after) after(++*n);
      return out;
    };
  }
};

TEST_F(EngineReuse, OneLaunchForEveryProbeOfTheSearchThenStopped) {
  // The probes of a hand-built curve (load_test's FindsTheHighestRateOfAHandBuiltCurve): 1, 2, 4, 8, 16, 32,
  // 20, 21 req/s, 8 trials on one engine; 32 and 21 miss the SLO but the trials are ok, so it stays up.
  Evaluator ev(study, runner(), RunnerKind::kLocal, nullptr, {}, nullptr, nullptr, dir / "logs");
  fs::create_directories(dir / "logs");
  const SloResult r = slo_search(study, ev, CandidateConfig{"a", {}});
  ASSERT_TRUE(r.found) << r.note;
  EXPECT_DOUBLE_EQ(r.max_passing, 20);
  EXPECT_EQ(r.runs, 8);
  const auto pids = starts();
  ASSERT_EQ(pids.size(), 1u);
  EXPECT_EQ(ev.launched(), 1);
  ASSERT_EQ(ev.records().size(), 8u);
  EXPECT_FALSE(ev.records()[0].outcome.engine_reused);
  for (size_t i = 1; i < 8; ++i) EXPECT_TRUE(ev.records()[i].outcome.engine_reused) << i;
  // Each probe on the kept engine first resets its prefix cache (the last probe's prompts): 7 POSTs.
  std::ifstream posts(dir / "starts.log.posts");
  std::vector<std::string> paths;
  for (std::string p; std::getline(posts, p);) paths.push_back(p);
  EXPECT_EQ(paths, std::vector<std::string>(7, "/reset_prefix_cache"));
  // A reused probe's own log names the engine's log.
  std::ifstream note(ev.records()[3].log_path);
  std::string line;
  std::getline(note, line);
  EXPECT_NE(line.find("launched and kept up"), std::string::npos) << line;
  // The search is over: the engine is stopped, not left for the next trial.
  EXPECT_TRUE(gone_within_10_s(pids[0])) << "engine pid " << pids[0] << " outlived the SLO search";
}

TEST_F(EngineReuse, EngineThatDiedBetweenProbesIsLaunchedAgain) {
  auto kill_engine_after_second = [this](int n) {
    if (n != 2) return;
    const auto pids = starts();
    ASSERT_EQ(pids.size(), 1u);
    kill(pids[0], SIGKILL);  // the kept engine dies between probe 2 and probe 3
    ASSERT_TRUE(gone_within_10_s(pids[0]));
  };
  Evaluator ev(study, runner(kill_engine_after_second), RunnerKind::kLocal, nullptr, {}, nullptr, nullptr,
               {});
  const SloResult r = slo_search(study, ev, CandidateConfig{"a", {}});
  ASSERT_TRUE(r.found) << r.note;
  EXPECT_DOUBLE_EQ(r.max_passing, 20);
  const auto pids = starts();
  ASSERT_EQ(pids.size(), 2u);  // the first engine, and the one launched for probe 3 (4 req/s)
  EXPECT_EQ(ev.launched(), 2);
  ASSERT_EQ(ev.records().size(), 8u);
  EXPECT_TRUE(ev.records()[1].outcome.engine_reused);
  EXPECT_FALSE(ev.records()[2].outcome.engine_reused);
  EXPECT_EQ(ev.records()[2].outcome.status, TrialStatus::kOk);
  EXPECT_TRUE(ev.records()[3].outcome.engine_reused);
  EXPECT_TRUE(gone_within_10_s(pids[1]));
}

TEST_F(EngineReuse, OrdinaryTrialsAndAnotherConfigLaunchFresh) {
  // Outside an SLO search every trial launches its own engine, even for the same config; inside one, a trial
  // of another config does not reuse the kept engine, which is stopped first (the port is free for it).
  Evaluator ev(study, runner(), RunnerKind::kLocal, nullptr, {}, nullptr, nullptr, {});
  const auto at = [&](double rate) {
    return std::vector<std::string>{
        load_scenario_id(study.slo.scenario, LoadPoint{LoadKind::kRequestRate, rate})};
  };
  ev.evaluate(CandidateConfig{"a", {}}, at(3), "x");
  ev.evaluate(CandidateConfig{"a", {}}, at(5), "x");
  ASSERT_EQ(starts().size(), 2u);
  ev.set_keep_engine(true);
  ev.evaluate(CandidateConfig{"a", {}}, at(7), "slo");
  const Evaluation b = ev.evaluate(CandidateConfig{"b", {}}, at(7), "slo");
  EXPECT_EQ(b.status, TrialStatus::kOk) << b.reason;
  ev.set_keep_engine(false);
  const auto pids = starts();
  ASSERT_EQ(pids.size(), 4u);
  EXPECT_EQ(ev.launched(), 4);
  ASSERT_EQ(ev.records().size(), 4u);
  for (const auto& r : ev.records()) EXPECT_FALSE(r.outcome.engine_reused) << r.trial_key;
  for (pid_t p : pids) EXPECT_TRUE(gone_within_10_s(p)) << "engine pid " << p << " left running";
}

/// Issue 30 §5: what the fake engine "measures" for `config_key` on `sc`, the same as the plan's prediction:
/// capacity 10 req/s (×2 with layout tp4-dp2, ×1.5 on engine b, ×1.1 with ctx 32768); P99 TTFT = 1000 ms ×
/// rate ÷ capacity (the 2 s SLO holds up to twice the capacity); a scenario as written runs at capacity.
ScenarioResult planned_result(const std::string& config_key, const Scenario& sc) {
  double cap = 10;
  if (config_key.find("layout=tp4-dp2") != std::string::npos) cap *= 2;
  if (config_key.rfind("b{", 0) == 0) cap *= 1.5;
  if (config_key.find("ctx=32768") != std::string::npos) cap *= 1.1;
  const double rate = arg_value(sc.args, "--request-rate");
  const double served = rate > 0 ? std::min(rate, cap) : cap;
  ScenarioResult r;
  r.scenario_id = sc.id;
  r.metrics["P99 TTFT (ms)"] = rate > 0 ? 1000 * rate / cap : 500;
  r.metrics["Mean TPOT (ms)"] = 10;
  r.metrics["Request throughput (req/s)"] = served;
  r.metrics["Request goodput (req/s)"] = 0.9 * served;
  r.metrics["Total Token throughput (tok/s)"] = 30 * served;
  r.metrics["Output token throughput (tok/s)"] = 10 * served;
  r.metrics["Successful requests"] = 10;
  r.metrics["Total generated tokens"] = 1000;
  r.metrics["Benchmark duration (s)"] = 10 / served;
  return r;
}

TEST_F(EngineReuse, DryRunLaunchesAreTheEngineStartsOfTheRun) {
  // The dry-run counted the twin's ranking of the grid and its SLO brackets as launches, and every SLO probe
  // on a kept engine: twin-guided plans printed a grid's launches. The plan, the run's tally (the console's
  // last line) and the report must all count the engine's own start log.
  Study s = study;
  set_target(s, Target::kLocal);  // twin-guided, the local default
  ASSERT_EQ(s.search.strategy, Strategy::kTwinGuided);
  const TrialRunner predict = [](const TrialRequest& req) {
    TrialOutcome out;
    for (const auto& sc : req.scenarios) out.scenarios.push_back(planned_result(req.config_key, sc));
    return out;
  };
  const StudyPlan plan = plan_study(s, predict);

  auto config = std::make_shared<std::string>();  // the config of the trial the fake engine serves
  LocalRunnerOptions o;
  o.port = port;
  o.ready_timeout_s = 20.0;
  o.stop_grace_s = 1.0;
  o.poll_interval_s = 0.05;
  o.port_free_timeout_s = 5.0;
  o.run_scenario = [config](const Scenario& sc, const std::string&, const std::atomic<bool>&) {
    return planned_result(*config, sc);
  };
  const TrialRunner local = make_local_runner(o);
  const std::vector<std::string> argv = {"/usr/bin/python3", (dir / "engine.py").string(),
                                         std::to_string(port), (dir / "starts.log").string()};
  TuneOptions opt;
  opt.out_dir = dir / "study";
  opt.twin_runner = predict;
  opt.runner = [&](const TrialRequest& req) {
    TrialRequest r = req;
    r.argv = argv;
    *config = req.config_key;
    return local(r);
  };
  const TuneResult res = run_study(s, opt);
  const int starts_logged = static_cast<int>(starts().size());
  EXPECT_GT(res.tally.reused, 0);  // SLO probes ran on kept engines: not launches
  EXPECT_EQ(plan.tally.launches, starts_logged);
  EXPECT_EQ(res.tally.launches, starts_logged);
  EXPECT_EQ(plan.tally.trials, res.tally.trials);
  EXPECT_EQ(plan.tally.reused, res.tally.reused);
  // The saving is against the grid's own launches, not the same figure twice.
  ASSERT_TRUE(plan.grid);
  EXPECT_GT(plan.grid->launches, plan.tally.launches);
  const std::string md = common::read_file(opt.out_dir / "report.md");
  const std::string cost = fmt::format(
      "- Cost: {} engine launches ({} trials, {} on an engine kept up between SLO "
      "probes",
      starts_logged, res.tally.trials, res.tally.reused);
  EXPECT_NE(md.find(cost), std::string::npos) << cost << "\n" << md.substr(0, 3000);
}

}  // namespace
}  // namespace servelab::tune
