// Failure classification of the local runner, with small scripts as fake engines (timeouts ~1 s).
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "test_ports.h"
#include "tune/targets/local_runner.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

using testing::free_port;

const char* kServer = R"py(
import http.server, os, sys, threading, time
port, mode = int(sys.argv[1]), sys.argv[2]
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header('Content-Length', '2'); self.end_headers(); self.wfile.write(b'ok')
    def do_POST(self):
        with open(os.environ.get('FAKE_POST_LOG', '/dev/null'), 'a') as f:
            f.write(self.path + '\n')
        self.send_response(200); self.send_header('Content-Length', '0'); self.end_headers()
    def log_message(self, *a): pass
s = http.server.HTTPServer(('127.0.0.1', port), H)
print('INFO: Application startup complete.', flush=True)
if mode == 'workers':
    # An engine with worker processes, one of which leaves the process group, that ignores SIGTERM: only
    # the supervisor's SIGKILL of the group and of re-parented processes ends them all.
    import signal, subprocess
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    w1 = subprocess.Popen(['sleep', '1000'])
    w2 = subprocess.Popen(['sleep', '1000'], start_new_session=True)
    with open(sys.argv[3] + '.tmp', 'w') as f:
        f.write('%d %d %d\n' % (os.getpid(), w1.pid, w2.pid))
    os.rename(sys.argv[3] + '.tmp', sys.argv[3])
if mode == 'crash':
    def die():
        time.sleep(0.4)
        print('RuntimeError: CUDA error: an illegal memory access was encountered', flush=True)
        os._exit(1)
    threading.Thread(target=die, daemon=True).start()
s.serve_forever()
)py";

struct LocalFixture : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("servelab-tune-local-" + std::to_string(getpid()));
  int port = free_port();
  void SetUp() override {
    fs::create_directories(dir);
    std::ofstream(dir / "server.py") << kServer;
  }
  void TearDown() override { fs::remove_all(dir); }
  fs::path script(const std::string& name, const std::string& body) {
    fs::path p = dir / name;
    std::ofstream(p) << "#!/bin/sh\n" << body;
    fs::permissions(p, fs::perms::owner_all);
    return p;
  }
  LocalRunnerOptions options(double scenario_s = 0.0, double successes = 10) {
    LocalRunnerOptions o;
    o.port = port;
    o.ready_timeout_s = 1.5;
    o.stop_grace_s = 1.0;
    o.poll_interval_s = 0.05;
    o.port_free_timeout_s = 2.0;
    o.run_scenario = [scenario_s, successes](const Scenario& sc, const std::string& url,
                                             const std::atomic<bool>&) {
      std::this_thread::sleep_for(std::chrono::duration<double>(scenario_s));
      ScenarioResult r;
      r.metrics["Successful requests"] = successes;
      r.metrics["Failed requests"] = 10 - successes;
      r.metrics["Total Token throughput (tok/s)"] = 1234.5;
      r.result_block = url;
      return r;
    };
    return o;
  }
  TrialRequest request(const std::vector<std::string>& argv) {
    TrialRequest r;
    r.trial_key = "t";
    r.engine = "e";
    r.argv = argv;
    r.env = {{"FAKE_ENGINE", "1"}};
    r.scenarios = {Scenario{"s1", "", {}, 1.0}};
    r.log_path = dir / "engine.log";
    return r;
  }
  std::vector<std::string> server(const std::string& mode) {
    return {"/usr/bin/python3", (dir / "server.py").string(), std::to_string(port), mode};
  }
};

TEST_F(LocalFixture, RefusedAtStartupKeepsTheEnginesMessage) {
  auto p = script("refuse.sh",
                  "echo 'INFO starting'\n"
                  "echo \"ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this "
                  "configuration. Reason: ['sparse not supported']\" >&2\necho 'further noise'\nexit 1\n");
  TrialOutcome o = make_local_runner(options())(request({p.string()}));
  EXPECT_EQ(o.status, TrialStatus::kStartupRefused);
  EXPECT_EQ(o.reason,
            "ValueError: Selected backend AttentionBackendEnum.FLASHMLA is not valid for this configuration. "
            "Reason: "
            "['sparse not supported']");
  EXPECT_NE(o.log_tail.find("INFO starting"), std::string::npos);
}

TEST_F(LocalFixture, OutOfMemoryAtStartup) {
  auto p = script("oom.sh",
                  "echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB'\nexit 1\n");
  TrialOutcome o = make_local_runner(options())(request({p.string()}));
  EXPECT_EQ(o.status, TrialStatus::kOutOfMemory);
  EXPECT_NE(o.reason.find("Tried to allocate 2.00 GiB"), std::string::npos) << o.reason;
}

TEST_F(LocalFixture, NeverReadyIsStoppedAndClassified) {
  auto p = script("never.sh", "echo loading weights\nexec sleep 30\n");
  auto t0 = std::chrono::steady_clock::now();
  TrialOutcome o = make_local_runner(options())(request({p.string()}));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(o.status, TrialStatus::kNotReady);
  EXPECT_NE(o.reason.find("not ready after 2 s"), std::string::npos) << o.reason;
  EXPECT_LT(s, 6.0);  // SIGTERM ended it; it did not sleep 30 s
}

TEST_F(LocalFixture, CrashMidRun) {
  TrialOutcome o = make_local_runner(options(1.0))(request(server("crash")));
  EXPECT_EQ(o.status, TrialStatus::kCrashed);
  EXPECT_NE(o.reason.find("RuntimeError: CUDA error: an illegal memory access"), std::string::npos)
      << o.reason;
  EXPECT_NE(o.reason.find("exit status 1"), std::string::npos) << o.reason;
}

// A scenario waiting on a dead engine (bench retrying its ready check for 600 s) is stopped when the
// engine dies: the trial ends as crashed at once.
TEST_F(LocalFixture, ScenarioIsStoppedWhenTheEngineDies) {
  LocalRunnerOptions o = options();
  o.run_scenario = [](const Scenario&, const std::string&, const std::atomic<bool>& stop) {
    for (int i = 0; i < 3000 && !stop.load(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (stop.load())
      throw std::runtime_error("interrupted during the endpoint ready check; nothing was measured");
    return ScenarioResult{};
  };
  const auto t0 = std::chrono::steady_clock::now();
  TrialOutcome out = make_local_runner(o)(request(server("crash")));
  EXPECT_EQ(out.status, TrialStatus::kCrashed) << out.reason;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 10.0);
}

TEST_F(LocalFixture, RequestsFailing) {
  TrialOutcome o = make_local_runner(options(0.0, 0))(request(server("ok")));
  EXPECT_EQ(o.status, TrialStatus::kRequestsFailed);
  EXPECT_EQ(o.reason, "no request of scenario s1 succeeded (10 failed)");
  EXPECT_EQ(http_get_status("127.0.0.1", port, "/health", 0.5), 0);  // stopped, port free
}

TEST_F(LocalFixture, HealthyEngineRunsEveryScenarioAndIsStopped) {
  TrialRequest req = request(server("ok"));
  req.scenarios.push_back(Scenario{"s2", "", {}, 1.0});
  TrialOutcome o = make_local_runner(options())(req);
  ASSERT_EQ(o.status, TrialStatus::kOk) << o.reason << o.log_tail;
  ASSERT_EQ(o.scenarios.size(), 2u);
  EXPECT_EQ(o.scenarios[1].scenario_id, "s2");
  EXPECT_EQ(o.scenarios[0].result_block, "http://127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(http_get_status("127.0.0.1", port, "/health", 0.5), 0);
}

/// Is the process running (present and not a zombie)?
bool running(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

/// Issue 9 §3: after kill -9 of tune, the engine (and its workers, even one that left the process group)
/// kept running and holding the port. Now the supervisor ends them all within the grace period.
TEST_F(LocalFixture, EngineAndItsWorkersDieWithTuneAfterSigkill) {
  const fs::path pids = dir / "pids";
  std::vector<std::string> argv = server("workers");
  argv.push_back(pids.string());
  pid_t tune = fork();
  ASSERT_GE(tune, 0);
  if (tune == 0) {
    LocalRunnerOptions o = options(60.0);  // the scenario "runs" for a minute
    o.ready_timeout_s = 10;
    make_local_runner(o)(request(argv));
    _exit(0);
  }
  pid_t engine = 0, w1 = 0, w2 = 0;
  for (int i = 0; i < 200 && !fs::exists(pids); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(fs::exists(pids)) << "the fake engine did not start";
  std::ifstream(pids) >> engine >> w1 >> w2;
  for (int i = 0; i < 200 && http_get_status("127.0.0.1", port, "/health", 0.5) != 200; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  ASSERT_TRUE(running(engine) && running(w1) && running(w2));
  kill(tune, SIGKILL);
  waitpid(tune, nullptr, 0);
  // Grace period 1 s (options()), then SIGKILL of the group and of the re-parented worker.
  const auto t0 = std::chrono::steady_clock::now();
  while ((running(engine) || running(w1) || running(w2)) &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  EXPECT_FALSE(running(engine)) << "engine " << engine << " outlived tune";
  EXPECT_FALSE(running(w1)) << "worker " << w1 << " outlived tune";
  EXPECT_FALSE(running(w2)) << "worker " << w2 << " (own session) outlived tune";
  EXPECT_EQ(http_get_status("127.0.0.1", port, "/health", 0.5), 0);  // the port is free again
}

/// A process listening on the port before launch (an engine left behind, another user's server) stops the
/// study instead of being measured, and names the holder.
TEST_F(LocalFixture, PortInUseBeforeLaunchStopsTheStudy) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 4), 0);
  LocalRunnerOptions o = options();
  o.port_free_timeout_s = 0.3;
  try {
    make_local_runner(o)(request(server("ok")));
    FAIL() << "measured with the port taken";
  } catch (const StudyAbort& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("port " + std::to_string(port) + " on 127.0.0.1 is still in use after 0.3 s by pid " +
                            std::to_string(getpid()) + " (",
                        0),
              0u)
        << msg;
    EXPECT_NE(msg.find("which this tune did not start; stop it or set [study] port to a free port"),
              std::string::npos)
        << msg;
  }
  close(fd);
  EXPECT_FALSE(fs::exists(dir / "engine.log"));  // nothing was launched
}

/// A server that appears on the port after the check, not started by the trial, is refused at readiness.
TEST_F(LocalFixture, ServerNotStartedByTheTrialIsNotMeasured) {
  auto engine = script("sleepy.sh", "echo loading weights\nexec sleep 30\n");
  pid_t stranger = -1;
  std::thread starter([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    stranger = fork();
    if (stranger == 0) {
      execl("/usr/bin/python3", "python3", (dir / "server.py").c_str(), std::to_string(port).c_str(), "ok",
            static_cast<char*>(nullptr));
      _exit(127);
    }
  });
  LocalRunnerOptions o = options();
  o.ready_timeout_s = 10;
  std::string msg;
  try {
    make_local_runner(o)(request({engine.string()}));
  } catch (const StudyAbort& e) {
    msg = e.what();
  }
  starter.join();
  EXPECT_NE(msg.find("port " + std::to_string(port) + " is served by pid " + std::to_string(stranger)),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("which this tune did not start"), std::string::npos) << msg;
  EXPECT_EQ(http_get_status("127.0.0.1", port, "/health", 0.5), 200);  // the stranger was left alone
  kill(stranger, SIGKILL);
  waitpid(stranger, nullptr, 0);
}

/// A missing engine executable stops the study at once (it used to be retried for every planned trial).
TEST_F(LocalFixture, MissingExecutableStopsTheStudy) {
  try {
    make_local_runner(options())(request({"servelab-no-such-engine", "serve"}));
    FAIL();
  } catch (const StudyAbort& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("engine executable 'servelab-no-such-engine' not found on PATH (", 0), 0u)
        << e.what();
  }
}

/// A scenario measured on a twin that fell behind (bench's invalid_reason) makes the trial invalid: it is
/// recorded with the reason and never ranked.
TEST_F(LocalFixture, UntrustedTimingIsAnInvalidTrial) {
  LocalRunnerOptions o = options();
  o.run_scenario = [](const Scenario&, const std::string&, const std::atomic<bool>&) {
    ScenarioResult r;
    r.metrics["Successful requests"] = 10;
    r.invalid_reason = "the timing cannot be trusted at time scale 20: ...";
    return r;
  };
  TrialOutcome out = make_local_runner(o)(request(server("ok")));
  EXPECT_EQ(out.status, TrialStatus::kInvalid);
  EXPECT_EQ(out.reason, "scenario s1: the timing cannot be trusted at time scale 20: ...");
  EXPECT_TRUE(out.scenarios.empty());
  EXPECT_EQ(trial_status_from_name("invalid"), TrialStatus::kInvalid);
}

// Between two scenarios the engine's prefix cache is reset (its endpoint, POST), not before the first.
TEST_F(LocalFixture, PrefixCacheIsResetBetweenScenarios) {
  LocalRunnerOptions o = options();
  o.reset_cache_path = "/flush_cache";
  TrialRequest req = request(server("ok"));
  req.scenarios.push_back(Scenario{"s2", "", {}, 1.0});
  req.scenarios.push_back(Scenario{"s3", "", {}, 1.0});
  req.env["FAKE_POST_LOG"] = (dir / "posts").string();
  ASSERT_EQ(make_local_runner(o)(req).status, TrialStatus::kOk);
  std::ifstream in(dir / "posts");
  std::string all((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(all, "/flush_cache\n/flush_cache\n");
}

// A trial ends only when the GPUs' memory is back to its level before the first launch (+1 GiB).
TEST_F(LocalFixture, WaitsUntilGpuMemoryIsBackToBaseline) {
  LocalRunnerOptions o = options();
  std::vector<double> readings = {2000, 90000, 90000, 2500};  // baseline, then after the stop
  size_t calls = 0;
  o.gpu_memory_used_mib = [&]() -> std::optional<double> {
    return readings[std::min(calls++, readings.size() - 1)];
  };
  ASSERT_EQ(make_local_runner(o)(request(server("ok"))).status, TrialStatus::kOk);
  EXPECT_EQ(calls, 4u);
}

TEST(LogPatterns, ErrorLineAndOom) {
  EXPECT_EQ(error_line("a\nTraceback:\n  File x\nValueError: bad thing\n\nINFO done\n"),
            "ValueError: bad thing");
  EXPECT_EQ(error_line("Usage: trtllm-serve\nError: No such option: --foo\n"),
            "Error: No such option: --foo");
  EXPECT_EQ(error_line("just text\nlast line\n"), "last line");
  EXPECT_TRUE(log_shows_oom("torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_FALSE(log_shows_oom("ValueError: Selected backend"));
  // vLLM's check_enough_kv_cache_memory: the KV cache cannot hold one max-length request (an OOM class).
  EXPECT_TRUE(
      log_shows_oom("ValueError: To serve at least one request with the models's max seq len (163840), "
                    "(11.95 GiB KV cache is needed, which is larger than the available KV cache memory "
                    "(11.70 GiB)."));
  // A port in use (uvicorn, Python sockets): the harness's failure when a stranger holds the port.
  EXPECT_TRUE(
      log_shows_bind_failure("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', "
                             "30000): address already in use"));
  EXPECT_TRUE(log_shows_bind_failure("OSError: [Errno 98] Address already in use"));
  EXPECT_FALSE(log_shows_bind_failure("torch.OutOfMemoryError: CUDA out of memory."));
  EXPECT_FALSE(
      log_shows_bind_failure("ValueError: max_num_batched_tokens (98) is smaller than max_model_len"));
}

}  // namespace
}  // namespace servelab::tune
