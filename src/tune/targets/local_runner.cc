#include "tune/targets/local_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <thread>

#include "tune/targets/engine_process.h"

namespace servelab::tune {

namespace {

using Clock = std::chrono::steady_clock;

double since_s(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

void sleep_s(double s) {
  std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

/// Connects with a timeout; returns the socket or -1.
int connect_to(const std::string& host, int port, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return -1;
  int fd = -1;
  for (addrinfo* a = res; a; a = a->ai_next) {
    fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      if (poll(&p, 1, static_cast<int>(timeout_s * 1000)) == 1 &&
          getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0)
        rc = 0;
    }
    if (rc == 0) break;
    close(fd);
    fd = -1;
  }
  freeaddrinfo(res);
  return fd;
}

/// The process environment with the trial's variables on top.
std::map<std::string, std::string> child_environment(const std::map<std::string, std::string>& overrides) {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string kv(*e);
    const auto eq = kv.find('=');
    if (eq != std::string::npos && eq > 0) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  for (const auto& [k, v] : overrides) env[k] = v;
  return env;
}

/// Is something listening on (or answering at) host:port?
bool port_busy(const std::string& host, int port) {
  if (!detail::listening_socket_inodes(port).empty()) return true;
  const int fd = connect_to(host, port, 0.2);
  if (fd < 0) return false;
  close(fd);
  return true;
}

/// nullopt when every process listening on `port` belongs to `engine`; else why the server that answered
/// is not ours.
std::optional<std::string> foreign_listener(const detail::EngineProcess& engine, int port) {
  const auto inodes = detail::listening_socket_inodes(port);
  if (inodes.empty())
    return fmt::format(
        "a server answered on port {} but no listening socket for it is visible in /proc/net/tcp; "
        "refusing to measure a server this tune cannot tell it started",
        port);
  const auto holders = detail::socket_holders(inodes);
  if (holders.empty())
    return fmt::format(
        "port {} is listened on by a process not visible to this user; refusing to measure a "
        "server this tune did not start (stop it or set [study] port)",
        port);
  for (pid_t p : holders)
    if (!engine.owns(p))
      return fmt::format(
          "port {} is served by pid {} ({}), which this tune did not start (its engine is pid {}); "
          "refusing to measure it. Stop that server or set [study] port to a free port",
          port, p, detail::process_command_line(p), engine.pid());
  return std::nullopt;
}

std::string read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The engine a keep_engine trial left running, for the next trial of the same launch (TrialRequest::
/// keep_engine). Stopped (SIGTERM, grace, SIGKILL) by the next trial that does not reuse it, by a
/// release_engine request, or when the runner goes away; the supervisor's lifeline covers tune dying.
struct KeptEngine {
  detail::EngineProcess engine;
  bool held = false;
  std::string engine_name, config_key, trial_key;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::filesystem::path log;
  double grace_s = 0;

  bool same_launch(const TrialRequest& req) const {
    return held && engine_name == req.engine && config_key == req.config_key && argv == req.argv &&
           env == req.env;
  }
  void hold(detail::EngineProcess e, const TrialRequest& req, const std::filesystem::path& log_path,
            double grace) {
    engine = std::move(e);
    held = true;
    engine_name = req.engine, config_key = req.config_key, trial_key = req.trial_key;
    argv = req.argv, env = req.env, log = log_path, grace_s = grace;
  }
  void stop() {
    if (held) engine.stop(grace_s);
    held = false;
  }
  ~KeptEngine() { stop(); }
};

/// Do all `paths` answer HTTP 200 on host:port now?
bool answers_ready(const std::string& host, int port, const std::vector<std::string>& paths) {
  for (const auto& p : paths)
    if (http_get_status(host, port, p, 2.0) != 200) return false;
  return true;
}

}  // namespace

namespace {
int http_status(const std::string& method, const std::string& host, int port, const std::string& path,
                double timeout_s);
}  // namespace

int http_get_status(const std::string& host, int port, const std::string& path, double timeout_s) {
  return http_status("GET", host, port, path, timeout_s);
}

int http_post_status(const std::string& host, int port, const std::string& path, double timeout_s) {
  return http_status("POST", host, port, path, timeout_s);
}

std::optional<double> nvidia_smi_memory_used_mib() {
  FILE* p = popen("nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits 2>/dev/null", "r");
  if (!p) return std::nullopt;
  double sum = 0, v = 0;
  int n = 0;
  while (std::fscanf(p, "%lf", &v) == 1) sum += v, ++n;
  const int rc = pclose(p);
  if (rc != 0 || n == 0) return std::nullopt;
  return sum;
}

namespace {
int http_status(const std::string& method, const std::string& host, int port, const std::string& path,
                double timeout_s) {
  int fd = connect_to(host, port, timeout_s);
  if (fd < 0) return 0;
  std::string req =
      fmt::format("{} {} HTTP/1.0\r\nHost: {}:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", method,
                  path, host, port);
  std::string resp;
  auto t0 = Clock::now();
  size_t sent = 0;
  while (sent < req.size() && since_s(t0) < timeout_s) {
    ssize_t n = send(fd, req.data() + sent, req.size() - sent, MSG_NOSIGNAL);
    if (n > 0)
      sent += n;
    else if (errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      poll(&p, 1, 50);
    } else
      break;
  }
  char buf[512];
  while (resp.find("\r\n") == std::string::npos && since_s(t0) < timeout_s) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 50) <= 0) continue;
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    resp.append(buf, n);
  }
  close(fd);
  std::smatch m;
  static const std::regex kStatus(R"(^HTTP/\d(?:\.\d)? (\d{3}))");
  if (std::regex_search(resp, m, kStatus)) return std::stoi(m[1]);
  return 0;
}
}  // namespace

std::string file_tail(const std::string& path, std::size_t lines) {
  std::ifstream in(path);
  if (!in) return "";
  std::deque<std::string> q;
  std::string line;
  while (std::getline(in, line)) {
    q.push_back(line);
    if (q.size() > lines) q.pop_front();
  }
  std::string out;
  for (const auto& l : q) out += l + "\n";
  return out;
}

bool log_shows_oom(const std::string& text) {
  static const std::regex kOom(
      R"(CUDA out of memory|OutOfMemoryError|out of memory|OOM|Not enough memory|insufficient memory|)"
      R"(No available memory for the cache blocks|cudaErrorMemoryAllocation|larger than the available KV cache memory)",
      std::regex::icase);
  return std::regex_search(text, kOom);
}

bool log_shows_bind_failure(const std::string& text) {
  static const std::regex kBind(
      R"(address already in use|EADDRINUSE|Errno 98\b|bind.*(failed|error).*\b98\b)", std::regex::icase);
  return std::regex_search(text, kBind);
}

std::string error_line(const std::string& text) {
  static const std::regex kErr(
      R"(^\s*([A-Za-z_.]*(Error|Exception)(\[[^\]]*\])?:\s.*|.*\berror:\s.*|Error:\s.*))");
  std::string last_err, last_nonempty;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) {
      last_nonempty = line;
      if (std::regex_match(line, kErr)) last_err = line;
    }
    start = end + 1;
  }
  auto trim = [](std::string s) {
    size_t a = s.find_first_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a);
  };
  return trim(last_err.empty() ? last_nonempty : last_err);
}

namespace {

/// GPU memory in use before the runner's first launch (MiB): each trial ends only when it is back to that.
struct GpuBaseline {
  bool read = false;
  std::optional<double> baseline_mib;
};

/// One trial on a local engine, step by step: reuse the kept engine or launch one, wait until it is ready,
/// run the warm-up and the scenarios (bench), classify a failure from the engine's log, stop it (or keep
/// it up for the next probe) and collect the log tail. Lives for one call of the runner.
class LocalTrial {
 public:
  LocalTrial(const LocalRunnerOptions& opt, GpuBaseline& gpu, KeptEngine& kept, const TrialRequest& req)
      : opt_(opt),
        gpu_(gpu),
        kept_(kept),
        req_(req),
        t0_(Clock::now()),
        log_(req.log_path.empty() ? std::filesystem::temp_directory_path() / "servelab-engine.log"
                                  : req.log_path),
        stop_(opt.stop ? *opt.stop : never_) {}

  /// The whole trial: its outcome (status, reason, scenario results, log tail, wall time in s).
  TrialOutcome run() {
    if (!gpu_.read && opt_.gpu_memory_used_mib) {
      gpu_.baseline_mib = opt_.gpu_memory_used_mib();
      gpu_.read = true;
    }
    if (req_.release_engine) {
      kept_.stop();
      return finish(TrialStatus::kOk, "");
    }
    reuse_or_stop_kept_engine();
    if (!out_.engine_reused)
      if (auto failed = launch_and_wait_ready()) return *failed;
    return run_bench();
  }

 private:
  /// Waits up to `timeout_s` until nothing listens on the port; false on timeout or Ctrl-C.
  bool wait_port_free(double timeout_s) {
    const auto tp = Clock::now();
    while (port_busy(opt_.host, opt_.port)) {
      if (since_s(tp) >= timeout_s || stop_.load()) return false;
      sleep_s(opt_.poll_interval_s);
    }
    return true;
  }

  /// Waits (up to port_free_timeout_s) until GPU memory in use is back within 1 GiB of the baseline.
  void wait_gpus_free() {
    const std::optional<double>& baseline_mib = gpu_.baseline_mib;
    if (!baseline_mib || !opt_.gpu_memory_used_mib) return;
    const auto tg = Clock::now();
    while (since_s(tg) < opt_.port_free_timeout_s) {
      const auto used = opt_.gpu_memory_used_mib();
      if (!used || *used <= *baseline_mib + 1024) return;
      sleep_s(0.5);
    }
  }

  /// Ends the trial with `s`: keeps a healthy engine up when the request asks for it, else stops it and
  /// waits for its port and GPUs; adds the log tail and the wall time.
  TrialOutcome finish(TrialStatus s, std::string reason) {
    out_.status = s;
    out_.reason = std::move(reason);
    if (s == TrialStatus::kOk && req_.keep_engine && !engine_.exited()) {
      kept_.hold(std::move(engine_), req_, log_, opt_.stop_grace_s);  // up for the next probe
      out_.engine_kept = true;
    } else {
      engine_.stop(opt_.stop_grace_s);
    }
    out_.log_tail = file_tail(log_.string(), opt_.log_tail_lines);
    if (!out_.engine_kept) {
      wait_port_free(opt_.port_free_timeout_s);  // so that the next trial can bind it
      wait_gpus_free();
    }
    out_.wall_s = since_s(t0_);
    return out_;
  }

  /// The engine exited: out of memory, a crash mid-run or a refused start-up, told apart by its log.
  TrialOutcome died(bool during_run) {
    const std::string text = read_all(log_);
    const std::string line = error_line(text);
    const std::string how = engine_.describe_exit();
    // A bind failure on the study's port while another process holds it is the harness's, not the launch's:
    // never recorded as this configuration's refusal.
    if (!during_run && log_shows_bind_failure(text)) {
      const std::string who = detail::describe_port_holders(opt_.port);
      if (!who.empty()) {
        finish(TrialStatus::kError, line);
        throw StudyAbort(
            fmt::format("the engine could not bind port {} ({}): it is held by {}, which this tune "
                        "did not start; stop it or set [study] port to a free port",
                        opt_.port, line, who));
      }
    }
    if (log_shows_oom(text))
      return finish(TrialStatus::kOutOfMemory, fmt::format("out of memory ({}): {}", how, line));
    if (during_run) return finish(TrialStatus::kCrashed, fmt::format("crashed mid-run ({}): {}", how, line));
    return finish(TrialStatus::kStartupRefused,
                  line.empty() ? fmt::format("exited at start-up ({})", how) : line);
  }

  /// A kept engine of the same launch is reused if it is alive, ready and still the one on the port (an
  /// engine that crashed after the last probe is not); any other kept engine is stopped first.
  void reuse_or_stop_kept_engine() {
    if (kept_.held && req_.keep_engine && kept_.same_launch(req_) && !kept_.engine.exited() &&
        answers_ready(opt_.host, opt_.port, opt_.ready_paths) && !foreign_listener(kept_.engine, opt_.port)) {
      engine_ = std::move(kept_.engine);
      kept_.held = false;
      if (!req_.log_path.empty() && req_.log_path != kept_.log)
        std::ofstream(req_.log_path) << fmt::format(
            "servelab: trial {} ran on the engine (pid {}) that trial {} launched and kept up; its output is "
            "in {}\n",
            req_.trial_key, engine_.pid(), kept_.trial_key, kept_.log.string());
      log_ = kept_.log;
      out_.engine_reused = true;
    } else if (kept_.held) {
      kept_.stop();
      wait_gpus_free();
    }
  }

  /// Launches the engine on a free port and waits for its ready check; the failed outcome if it does not
  /// come up. Throws StudyAbort when nothing can run (port held by a stranger, engine binary missing).
  std::optional<TrialOutcome> launch_and_wait_ready() {
    // The port must be free before launch: a server still answering there (an engine left by a killed
    // tune, another user's server) would be measured instead of ours.
    if (!wait_port_free(opt_.port_free_timeout_s)) {
      if (stop_.load()) return finish(TrialStatus::kInterrupted, "interrupted");
      const std::string who = detail::describe_port_holders(opt_.port);
      throw StudyAbort(fmt::format(
          "port {} on {} is still in use after {:g} s by {}, which this tune did not start; stop it or set "
          "[study] port to a free port",
          opt_.port, opt_.host, opt_.port_free_timeout_s,
          who.empty() ? "a process that accepts connections" : who));
    }
    try {
      engine_ = detail::EngineProcess::start(req_.argv, child_environment(req_.env), log_, opt_.stop_grace_s);
    } catch (const detail::EngineMissing& e) {
      throw StudyAbort(e.what());
    } catch (const std::exception& e) {
      return finish(TrialStatus::kError, e.what());
    }
    const auto tr = Clock::now();
    while (true) {
      if (stop_.load()) return finish(TrialStatus::kInterrupted, "interrupted");
      if (engine_.exited()) return died(false);
      if (answers_ready(opt_.host, opt_.port, opt_.ready_paths) && !engine_.exited()) break;
      if (since_s(tr) > opt_.ready_timeout_s)
        return finish(TrialStatus::kNotReady,
                      fmt::format("not ready after {:.0f} s (no HTTP 200 from {} on port {})",
                                  opt_.ready_timeout_s, fmt::join(opt_.ready_paths, ", "), opt_.port));
      sleep_s(opt_.poll_interval_s);
    }
    // Whoever answered must be our engine: never measure a server this tune did not start.
    if (auto stranger = foreign_listener(engine_, opt_.port)) {
      finish(TrialStatus::kError, *stranger);
      throw StudyAbort(*stranger);
    }
    return std::nullopt;
  }

  /// Runs one scenario through bench; it stops early on Ctrl-C or when the engine dies (bench would
  /// otherwise retry its ready check against a dead server for --ready-check-timeout-sec).
  ScenarioResult run_watched(const Scenario& sc, const std::string& base_url) {
    std::atomic<bool> scenario_stop{false}, done{false};
    std::thread watcher([&] {
      while (!done.load()) {
        if (stop_.load() || engine_.exited()) {
          scenario_stop = true;
          return;
        }
        sleep_s(0.1);
      }
    });
    struct Join {
      std::atomic<bool>& done;
      std::thread& t;
      ~Join() {
        done = true;
        t.join();
      }
    } join{done, watcher};
    return opt_.run_scenario(sc, base_url, scenario_stop);
  }

  /// The warm-up (on a fresh engine) and the requested scenarios; the first failure ends the trial.
  TrialOutcome run_bench() {
    const std::string base_url = fmt::format("http://{}:{}", opt_.host, opt_.port);
    try {
      if (!opt_.warmup_args.empty() && !out_.engine_reused) {  // a kept engine is warm
        Scenario warm{"warmup", "warm-up run (discarded)", opt_.warmup_args, 1.0};
        run_watched(warm, base_url);
        if (stop_.load()) return finish(TrialStatus::kInterrupted, "interrupted");
        if (engine_.exited()) return died(true);
      }
      for (size_t i = 0; i < req_.scenarios.size(); ++i) {
        const Scenario& sc = req_.scenarios[i];
        // A kept engine still holds the last probe's prefixes: reset before its first scenario too.
        if ((i > 0 || out_.engine_reused) && !opt_.reset_cache_path.empty())
          http_post_status(opt_.host, opt_.port, opt_.reset_cache_path, 30.0);
        ScenarioResult r = run_watched(sc, base_url);
        if (stop_.load()) return finish(TrialStatus::kInterrupted, "interrupted");
        if (engine_.exited()) return died(true);
        r.scenario_id = sc.id;
        if (auto failed = scenario_failure(r)) return *failed;
        out_.scenarios.push_back(std::move(r));
      }
    } catch (const std::exception& e) {
      if (engine_.exited()) return died(true);
      return finish(TrialStatus::kError, std::string("scenario could not run: ") + e.what());
    }
    return finish(TrialStatus::kOk, "");
  }

  /// The trial's end when scenario result `r` is invalid or had no successful request; nothing otherwise.
  std::optional<TrialOutcome> scenario_failure(const ScenarioResult& r) {
    if (!r.invalid_reason.empty())
      return finish(TrialStatus::kInvalid, fmt::format("scenario {}: {}", r.scenario_id, r.invalid_reason));
    auto ok = r.metrics.find("Successful requests");
    if (ok != r.metrics.end() && ok->second <= 0) {
      auto failed = r.metrics.find("Failed requests");
      return finish(TrialStatus::kRequestsFailed,
                    fmt::format("no request of scenario {} succeeded ({} failed)", r.scenario_id,
                                failed == r.metrics.end() ? 0.0 : failed->second));
    }
    return std::nullopt;
  }

  const LocalRunnerOptions& opt_;
  GpuBaseline& gpu_;
  KeptEngine& kept_;
  const TrialRequest& req_;
  TrialOutcome out_;
  const Clock::time_point t0_;
  std::filesystem::path log_;  ///< the engine's output (the kept engine's when it is reused)
  const std::atomic<bool> never_{false};
  const std::atomic<bool>& stop_;
  detail::EngineProcess engine_;
};

}  // namespace

TrialRunner make_local_runner(LocalRunnerOptions opt) {
  if (!opt.run_scenario) throw std::invalid_argument("local runner needs a scenario function (bench)");
  auto gpu = std::make_shared<GpuBaseline>();
  auto kept = std::make_shared<KeptEngine>();
  return [opt, gpu, kept](const TrialRequest& req) -> TrialOutcome {
    return LocalTrial(opt, *gpu, *kept, req).run();
  };
}

}  // namespace servelab::tune
