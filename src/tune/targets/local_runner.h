// servelab/tune: running trials on real engines on this machine. The engine starts under a supervisor
// process, in its own process group, with its output in a log file, and dies with tune however tune ends
// (kill -9 included; see engine_process.h). Before each launch the port must be free; after readiness
// (polled over HTTP) the server that answers must be the engine this trial started. Each scenario runs
// through a scenario function (bench's library in-process); the engine is stopped with SIGTERM, a grace
// period and SIGKILL; failures are classified from the exit status and the log.
#pragma once

#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// Runs one scenario against a ready server at `base_url` ("http://127.0.0.1:8000"). Returns the
/// scenario's metrics; throws std::exception for a scenario that could not run (bad arguments).
/// Implementations should return early when `stop` becomes true.
using ScenarioFn = std::function<ScenarioResult(const Scenario& scenario, const std::string& base_url,
                                                const std::atomic<bool>& stop)>;

struct LocalRunnerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;
  std::vector<std::string> ready_paths = {"/health", "/v1/models"};
  double ready_timeout_s = 1800.0;    ///< start-up budget
  double stop_grace_s = 30.0;         ///< SIGTERM → SIGKILL
  double port_free_timeout_s = 60.0;  ///< wait for the port to be released after stopping
  double poll_interval_s = 0.25;
  ScenarioFn run_scenario;               ///< required
  std::vector<std::string> warmup_args;  ///< if non-empty: one warm-up scenario run first (discarded)
  std::size_t log_tail_lines = 40;
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C
  /// POSTed between two scenarios of a trial so that one scenario's prefix cache does not serve the next
  /// (vLLM /reset_prefix_cache, SGLang /flush_cache); "" when the engine offers none. Failures are ignored.
  std::string reset_cache_path;
  /// GPU memory in use on this node, MiB (sum over GPUs), or nullopt when unknown (no nvidia-smi). After a
  /// trial the runner waits (up to port_free_timeout_s) until it is back to what it was before the first
  /// launch + 1 GiB, so that the next engine does not start beside the last one's memory.
  std::function<std::optional<double>()> gpu_memory_used_mib;
};

/// nvidia-smi's total memory.used over GPUs (MiB), or nullopt when nvidia-smi is missing or fails.
std::optional<double> nvidia_smi_memory_used_mib();

/// POST http://host:port/path with an empty body; returns the HTTP status, or 0 if no response.
int http_post_status(const std::string& host, int port, const std::string& path, double timeout_s);

/// A TrialRunner for real engines. Classification (first match):
///   engine exits before ready: log has an out-of-memory pattern → kOutOfMemory, else kStartupRefused with
///   the engine's last error line; not ready within ready_timeout_s → kNotReady; engine dies during a
///   scenario → kCrashed (or kOutOfMemory by log); a scenario with zero successful requests →
///   kRequestsFailed; a scenario whose timing cannot be trusted (ScenarioResult::invalid_reason) → kInvalid.
///   Throws StudyAbort (no trial can run here) when the engine executable is missing, when the port is
///   still in use `port_free_timeout_s` after the previous trial, or when the server answering on the port
///   is not the engine this trial started (its PID and command are in the message).
///   Thread-safety: the returned runner must be called from one thread at a time.
TrialRunner make_local_runner(LocalRunnerOptions options);

/// GET http://host:port/path with a timeout; returns the HTTP status, or 0 if no response.
int http_get_status(const std::string& host, int port, const std::string& path, double timeout_s);

/// The last `lines` lines of a file ("" if it cannot be read).
std::string file_tail(const std::string& path, std::size_t lines);

/// The engine's own error message in a log: the last line that looks like an error (Python exception
/// "XxxError: ...", "error: ...", "Error: ..."), else the last non-empty line.
std::string error_line(const std::string& log_text);

/// True if the log text shows an out-of-memory failure (CUDA/torch OOM messages).
bool log_shows_oom(const std::string& log_text);
/// True when an engine log shows a failure to bind a socket whose address is in use (EADDRINUSE, errno 98,
/// "Address already in use" of Python and uvicorn).
bool log_shows_bind_failure(const std::string& log_text);

}  // namespace servelab::tune
