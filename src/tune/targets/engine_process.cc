#include "tune/targets/engine_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace servelab::tune::detail {

namespace {

// ---- supervisor side: only async-signal-safe calls from here to the end of supervise() ----------------

double mono_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void write_all(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    p += k;
    n -= static_cast<size_t>(k);
  }
}

/// Closes every descriptor >= 3 except those in keep[0..n).
void close_all_but(const int* keep, int n) {
  int sorted[8];
  for (int i = 0; i < n; ++i) sorted[i] = keep[i];
  std::sort(sorted, sorted + n);
  unsigned lo = 3;
  for (int i = 0; i < n; ++i) {
    if (sorted[i] < 3) continue;
    if (static_cast<unsigned>(sorted[i]) > lo)
      syscall(SYS_close_range, lo, static_cast<unsigned>(sorted[i]) - 1, 0);
    lo = static_cast<unsigned>(sorted[i]) + 1;
  }
  syscall(SYS_close_range, lo, ~0u, 0);
}

/// Sends `sig` to every child of this process (read from /proc/self/task/<pid>/children: the supervisor
/// is single-threaded, so its task id is its pid). Returns the number of children signalled.
int signal_children(int sig) {
  char path[64] = "/proc/self/task/";
  // Append the pid in decimal (no snprintf: not async-signal-safe).
  char digits[16];
  int nd = 0;
  for (pid_t p = getpid(); p > 0 && nd < 15; p /= 10) digits[nd++] = static_cast<char>('0' + p % 10);
  size_t len = std::strlen(path);
  while (nd > 0) path[len++] = digits[--nd];
  const char* tail = "/children";
  for (size_t i = 0; tail[i]; ++i) path[len++] = tail[i];
  path[len] = '\0';
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char buf[4096];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  int count = 0;
  long v = 0;
  bool in = false;
  for (ssize_t i = 0; i <= n; ++i) {
    const char c = i < n ? buf[i] : ' ';
    if (c >= '0' && c <= '9') {
      v = v * 10 + (c - '0');
      in = true;
    } else if (in) {
      kill(static_cast<pid_t>(v), sig);
      ++count;
      v = 0;
      in = false;
    }
  }
  return count;
}

void ignore_signal(int sig) {
  struct sigaction sa {};
  sa.sa_handler = SIG_IGN;
  sigaction(sig, &sa, nullptr);
}

void default_signal(int sig) {
  struct sigaction sa {};
  sa.sa_handler = SIG_DFL;
  sigaction(sig, &sa, nullptr);
}

struct ExecPlan {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* exec_fail;  // "servelab: cannot execute '...': "
  int log_fd, null_fd, life_rd, status_wr;
  double grace_s;
};

[[noreturn]] void run_engine(const ExecPlan& p) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGPIPE, SIGTERM})
    default_signal(sig);  // ignored ones survive exec
  dup2(p.null_fd, 0);
  dup2(p.log_fd, 1);
  dup2(p.log_fd, 2);
  const int keep[] = {0};
  close_all_but(keep, 0);
  execve(p.path, p.argv, p.envp);
  const int err = errno;
  write_all(2, p.exec_fail, std::strlen(p.exec_fail));
  const char* why = err == ENOENT    ? "No such file or directory"
                    : err == EACCES  ? "Permission denied"
                    : err == ENOEXEC ? "Exec format error"
                                     : "exec failed";
  write_all(2, why, std::strlen(why));
  write_all(2, "\n", 1);
  _exit(127);
}

/// The supervisor's whole life (see engine_process.h).
[[noreturn]] void supervise(const ExecPlan& p) {
  const pid_t self = getpid();
  for (int sig : {SIGINT, SIGQUIT, SIGHUP, SIGPIPE}) ignore_signal(sig);
  default_signal(SIGTERM);
  default_signal(SIGCHLD);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int keep[] = {p.log_fd, p.null_fd, p.life_rd, p.status_wr};
  close_all_but(keep, 4);
  const pid_t engine = fork();
  if (engine == 0) {
    if (getppid() != self) _exit(127);
    close(p.life_rd);
    close(p.status_wr);
    run_engine(p);
  }
  const int started = engine > 0 ? static_cast<int>(engine) : -errno;
  write_all(p.status_wr, &started, sizeof started);
  if (engine < 0) _exit(1);
  setpgid(engine, engine);
  close(p.log_fd);
  close(p.null_fd);

  bool engine_done = false, terminating = false;
  double deadline = 0;
  for (;;) {
    int st = 0;
    pid_t r;
    while ((r = waitpid(-1, &st, WNOHANG)) > 0) {
      if (r == engine && !engine_done) {
        engine_done = true;
        write_all(p.status_wr, &st, sizeof st);
      }
    }
    if (terminating && (engine_done || mono_s() >= deadline)) break;
    pollfd pf{p.life_rd, POLLIN, 0};
    if (poll(&pf, 1, 50) > 0 && !terminating) {
      char c;
      const ssize_t k = read(p.life_rd, &c, 1);
      if (k <= 0 && !(k < 0 && errno == EINTR)) {  // EOF: tune is gone or done with this engine
        terminating = true;
        deadline = mono_s() + p.grace_s;
        if (!engine_done) kill(-engine, SIGTERM);
      }
    }
  }
  // Whatever is left of the engine: its group, then every process re-parented to us, until none remain.
  kill(-engine, SIGKILL);
  for (;;) {
    signal_children(SIGKILL);
    int st = 0;
    const pid_t r = waitpid(-1, &st, 0);
    if (r < 0 && errno == ECHILD) break;
    if (r == engine && !engine_done) {
      engine_done = true;
      write_all(p.status_wr, &st, sizeof st);
    }
  }
  _exit(0);
}

// ---- tune side --------------------------------------------------------------------------------------

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

void sleep_ms(int ms) {
  timespec ts{ms / 1000, static_cast<long>(ms % 1000) * 1000000L};
  nanosleep(&ts, nullptr);
}

/// Parent pid and process group of `pid` from /proc/PID/stat; false when the process is gone.
bool stat_of(pid_t pid, pid_t* ppid, pid_t* pgid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return false;
  std::istringstream rest(text.substr(close_paren + 2));
  char state = 0;
  long pp = 0, pg = 0;
  if (!(rest >> state >> pp >> pg)) return false;
  *ppid = static_cast<pid_t>(pp);
  *pgid = static_cast<pid_t>(pg);
  return true;
}

std::vector<pid_t> all_pids() {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long v = std::strtol(e->d_name, &end, 10);
    if (end && *end == '\0' && v > 0) out.push_back(static_cast<pid_t>(v));
  }
  closedir(d);
  return out;
}

}  // namespace

std::string find_executable(const std::string& name, const std::string& path_var) {
  if (name.empty()) throw EngineMissing("the engine command is empty");
  auto runnable = [](const std::string& p) {
    struct stat st {};
    return stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (runnable(name)) return name;
    throw EngineMissing(fmt::format("engine executable '{}' does not exist or is not executable", name));
  }
  std::string searched;
  size_t start = 0;
  while (start <= path_var.size()) {
    size_t end = path_var.find(':', start);
    if (end == std::string::npos) end = path_var.size();
    const std::string dir = end > start ? path_var.substr(start, end - start) : ".";
    const std::string candidate = dir + "/" + name;
    if (runnable(candidate)) return candidate;
    start = end + 1;
  }
  throw EngineMissing(
      fmt::format("engine executable '{}' not found on PATH ({}); install the engine or put it on "
                  "PATH (for a rehearsal without GPUs: the stand-ins in tools/standins)",
                  name, path_var.empty() ? "PATH is empty" : path_var));
}

EngineProcess EngineProcess::start(const std::vector<std::string>& argv_in,
                                   const std::map<std::string, std::string>& env,
                                   const std::filesystem::path& log, double grace_s) {
  if (argv_in.empty()) throw EngineMissing("the engine command is empty");
  auto path_it = env.find("PATH");
  const std::string exe = find_executable(argv_in[0], path_it == env.end() ? "" : path_it->second);
  // Everything the children need is prepared before fork: they only make async-signal-safe calls.
  std::vector<std::string> env_store;
  for (const auto& [k, v] : env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv_in;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  const std::string exec_fail = fmt::format("servelab: cannot execute '{}': ", exe);
  if (log.has_parent_path()) std::filesystem::create_directories(log.parent_path());
  const int log_fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0)
    throw std::runtime_error("cannot open engine log " + log.string() + ": " + std::strerror(errno));
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  int life[2], status[2];
  if (pipe2(life, O_CLOEXEC) != 0 || pipe2(status, O_CLOEXEC) != 0) {
    close(log_fd);
    close(null_fd);
    throw std::runtime_error(std::string("pipe: ") + std::strerror(errno));
  }
  ExecPlan plan{exe.c_str(), argv.data(), envp.data(), exec_fail.c_str(), log_fd, null_fd,
                life[0],     status[1],   grace_s};
  const pid_t sup = fork();
  if (sup < 0) {
    const int err = errno;
    for (int fd : {log_fd, null_fd, life[0], life[1], status[0], status[1]}) close(fd);
    throw std::runtime_error(std::string("fork: ") + std::strerror(err));
  }
  if (sup == 0) {
    close(life[1]);
    close(status[0]);
    supervise(plan);
  }
  for (int fd : {log_fd, null_fd, life[0], status[1]}) close(fd);
  EngineProcess e;
  e.supervisor_ = sup;
  e.life_fd_ = life[1];
  e.status_fd_ = status[0];
  int started = 0;
  ssize_t n;
  do n = read(e.status_fd_, &started, sizeof started);
  while (n < 0 && errno == EINTR);
  if (n != static_cast<ssize_t>(sizeof started) || started <= 0) {
    e.stop(0);
    throw std::runtime_error(fmt::format("the engine supervisor could not fork the engine ({})",
                                         started < 0 ? std::strerror(-started) : "no answer"));
  }
  e.engine_ = static_cast<pid_t>(started);
  fcntl(e.status_fd_, F_SETFL, O_NONBLOCK);
  return e;
}

EngineProcess::EngineProcess(EngineProcess&& o) noexcept {
  *this = std::move(o);
}

EngineProcess& EngineProcess::operator=(EngineProcess&& o) noexcept {
  if (this != &o) {
    if (supervisor_ > 0 && !stopped_) stop(0);
    supervisor_ = o.supervisor_;
    engine_ = o.engine_;
    life_fd_ = o.life_fd_;
    status_fd_ = o.status_fd_;
    exited_ = o.exited_;
    stopped_ = o.stopped_;
    wait_status_ = o.wait_status_;
    o.supervisor_ = o.engine_ = -1;
    o.life_fd_ = o.status_fd_ = -1;
    o.stopped_ = true;
  }
  return *this;
}

EngineProcess::~EngineProcess() {
  if (supervisor_ > 0 && !stopped_) stop(0);
}

void EngineProcess::poll_status() {
  if (exited_ || status_fd_ < 0) return;
  int st = 0;
  const ssize_t n = read(status_fd_, &st, sizeof st);
  if (n == static_cast<ssize_t>(sizeof st)) {
    exited_ = true;
    wait_status_ = st;
    return;
  }
  if (n == 0) {  // the supervisor is gone without reporting: treat the engine as gone with it
    exited_ = true;
    int sup_status = 0;
    if (waitpid(supervisor_, &sup_status, WNOHANG) == supervisor_) stopped_ = true;
    wait_status_ = sup_status;
  }
}

bool EngineProcess::exited() {
  poll_status();
  return exited_;
}

std::string EngineProcess::describe_exit() const {
  if (WIFEXITED(wait_status_)) return fmt::format("exit status {}", WEXITSTATUS(wait_status_));
  if (WIFSIGNALED(wait_status_))
    return fmt::format("killed by signal {} ({})", WTERMSIG(wait_status_), strsignal(WTERMSIG(wait_status_)));
  return "ended";
}

void EngineProcess::stop(double grace_s) {
  if (stopped_ || supervisor_ <= 0) return;
  if (engine_ > 0 && !exited()) {
    kill(-engine_, SIGTERM);
    const double t0 = now_s();
    while (!exited() && now_s() - t0 < grace_s) sleep_ms(20);
  }
  if (engine_ > 0) kill(-engine_, SIGKILL);  // the group may outlive its leader (worker processes)
  if (life_fd_ >= 0) close(life_fd_);        // the supervisor kills what is left and exits
  life_fd_ = -1;
  int st = 0;
  while (waitpid(supervisor_, &st, 0) < 0 && errno == EINTR) {
  }
  if (!exited_) {
    poll_status();
    if (!exited_) exited_ = true;
  }
  if (status_fd_ >= 0) close(status_fd_);
  status_fd_ = -1;
  stopped_ = true;
}

bool EngineProcess::owns(pid_t pid) const {
  if (engine_ <= 0) return false;
  for (int depth = 0; pid > 1 && depth < 64; ++depth) {
    pid_t ppid = 0, pgid = 0;
    if (!stat_of(pid, &ppid, &pgid)) return false;
    if (pgid == engine_ || pid == engine_ || pid == supervisor_ || ppid == supervisor_) return true;
    pid = ppid;
  }
  return false;
}

std::vector<unsigned long> listening_socket_inodes(int port) {
  std::vector<unsigned long> out;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timers, retr, uid, timeout;
      unsigned long inode = 0;
      if (!(f >> sl >> local >> remote >> state >> queues >> timers >> retr >> uid >> timeout >> inode))
        continue;
      if (state != "0A") continue;  // TCP_LISTEN
      const auto colon = local.rfind(':');
      if (colon == std::string::npos) continue;
      if (std::stoul(local.substr(colon + 1), nullptr, 16) == static_cast<unsigned long>(port) && inode != 0)
        out.push_back(inode);
    }
  }
  return out;
}

std::vector<pid_t> socket_holders(const std::vector<unsigned long>& inodes) {
  std::set<std::string> wanted;
  for (auto i : inodes) wanted.insert("socket:[" + std::to_string(i) + "]");
  std::vector<pid_t> out;
  if (wanted.empty()) return out;
  for (pid_t pid : all_pids()) {
    const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = opendir(fd_dir.c_str());
    if (!d) continue;
    bool holds = false;
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[128];
      const std::string link = fd_dir + "/" + e->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = '\0';
      if (wanted.count(target)) {
        holds = true;
        break;
      }
    }
    closedir(d);
    if (holds) out.push_back(pid);
  }
  return out;
}

std::string describe_port_holders(int port) {
  const auto inodes = listening_socket_inodes(port);
  if (inodes.empty()) return "";
  const auto pids = socket_holders(inodes);
  if (pids.empty()) return "an unknown process (not visible to this user)";
  std::string out;
  for (pid_t p : pids) {
    std::string cmd = process_command_line(p);
    if (cmd.size() > 160) cmd = cmd.substr(0, 157) + "...";
    out += fmt::format("{}pid {} ({})", out.empty() ? "" : ", ", p, cmd.empty() ? "?" : cmd);
  }
  return out;
}

std::string process_command_line(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string raw((std::istreambuf_iterator<char>(in)), {});
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw)
    if (c == '\0') c = ' ';
  return raw;
}

}  // namespace servelab::tune::detail
