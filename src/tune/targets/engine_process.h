// servelab/tune (private): an engine process that cannot outlive tune, and who owns a TCP port.
//
// Each engine runs under a small supervisor process (forked from tune, no exec):
//   tune ──fork──> supervisor (child subreaper; ignores the terminal's SIGINT/SIGHUP)
//                     └──fork+exec──> engine (own process group, PR_SET_PDEATHSIG = SIGKILL) ──> workers
// tune holds the write end of a "lifeline" pipe; when tune exits for any reason (normal exit, a second
// Ctrl-C, kill -9) the supervisor reads EOF, sends SIGTERM to the engine's process group, waits the grace
// period, SIGKILLs the group and every process re-parented to it (workers that left the group), and exits.
// If the supervisor itself is killed, PR_SET_PDEATHSIG kills the engine.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace servelab::tune::detail {

/// The engine's executable cannot be found or run: no trial of this engine can start.
struct EngineMissing : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Resolves argv[0] as execvp would: a name with '/' as is, else the first executable match in `path_var`
/// (the child's PATH). Returns the path; throws EngineMissing naming the executable and the PATH searched.
std::string find_executable(const std::string& name, const std::string& path_var);

/// A running (or finished) supervised engine. Movable, not copyable; the destructor stops it (SIGKILL).
/// Thread-safety: one thread.
class EngineProcess {
 public:
  /// Starts `argv` with exactly the environment `env` (NAME -> value), stdin from /dev/null, stdout and
  /// stderr into `log` (truncated). `grace_s`: SIGTERM -> SIGKILL grace the supervisor uses when tune goes
  /// away. Throws EngineMissing (executable not found / not executable) or std::runtime_error (log file,
  /// fork).
  static EngineProcess start(const std::vector<std::string>& argv,
                             const std::map<std::string, std::string>& env, const std::filesystem::path& log,
                             double grace_s);
  EngineProcess() = default;
  EngineProcess(EngineProcess&& other) noexcept;
  EngineProcess& operator=(EngineProcess&& other) noexcept;
  EngineProcess(const EngineProcess&) = delete;
  EngineProcess& operator=(const EngineProcess&) = delete;
  ~EngineProcess();

  /// The engine's PID (= its process group id); -1 before start.
  pid_t pid() const { return engine_; }
  /// PID of the supervisor.
  pid_t supervisor_pid() const { return supervisor_; }
  /// Non-blocking: has the engine (the group leader) exited?
  bool exited();
  /// "exit status 1", "killed by signal 9 (Killed)".
  std::string describe_exit() const;
  /// SIGTERM to the engine's group, up to `grace_s` for it to exit, SIGKILL to the group, then the
  /// supervisor kills what is left (re-parented workers) and is reaped. Idempotent.
  void stop(double grace_s);
  /// Is `pid` one of this engine's processes (in its process group, or a descendant of the supervisor)?
  bool owns(pid_t pid) const;

 private:
  void poll_status();
  pid_t supervisor_ = -1;
  pid_t engine_ = -1;
  int life_fd_ = -1;    // write end of the lifeline (closing it tells the supervisor to finish)
  int status_fd_ = -1;  // read end: the engine's wait status when it exits
  bool exited_ = false;
  bool stopped_ = false;
  int wait_status_ = 0;
};

/// Inodes of the TCP sockets listening on `port` on any address (IPv4 and IPv6), from /proc/net/tcp{,6}.
std::vector<unsigned long> listening_socket_inodes(int port);

/// PIDs of the processes holding any of the socket `inodes` (scans /proc/*/fd; processes this user may not
/// inspect are skipped, so the list can be incomplete for other users' processes).
std::vector<pid_t> socket_holders(const std::vector<unsigned long>& inodes);

/// "pid 1234 (vllm serve ...)" for each holder of a listening socket on `port`; "an unknown process (not
/// visible to this user)" when the port is listened on but no holder is visible; "" when nothing listens.
std::string describe_port_holders(int port);

/// The command line of a process (/proc/PID/cmdline, arguments joined by spaces), "" if unknown.
std::string process_command_line(int pid);

}  // namespace servelab::tune::detail
