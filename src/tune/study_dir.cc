#include "tune/study_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>

#include "servelab/tune/store/store.h"
#include "servelab/tune/tune.h"
#include "tune/targets/engine_process.h"

namespace servelab::tune::detail {

namespace fs = std::filesystem;

namespace {

/// Opens and flocks `file` exclusively, writing this process's PID into it; returns the descriptor. When
/// another process holds it, throws TuneSetupError with `busy(pid, command line)`; I/O errors throw
/// std::runtime_error.
int lock_file(const fs::path& file, const std::function<std::string(int, const std::string&)>& busy) {
  const int fd = open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(fmt::format("cannot open {}: {}", file.string(), std::strerror(errno)));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {0};
    const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    close(fd);
    if (err != EWOULDBLOCK)
      throw std::runtime_error(fmt::format("cannot lock {}: {}", file.string(), std::strerror(err)));
    const int pid = n > 0 ? std::atoi(buf) : 0;
    throw TuneSetupError(busy(pid, pid > 0 ? process_command_line(pid) : ""));
  }
  const std::string me = fmt::format("{}\n", getpid());
  if (ftruncate(fd, 0) != 0 || pwrite(fd, me.data(), me.size(), 0) != static_cast<ssize_t>(me.size())) {
    const int err = errno;
    close(fd);
    throw std::runtime_error(fmt::format("cannot write {}: {}", file.string(), std::strerror(err)));
  }
  return fd;
}

std::string holder(int pid, const std::string& cmd) {
  return fmt::format("pid {}{}", pid > 0 ? std::to_string(pid) : "unknown", cmd.empty() ? "" : ": " + cmd);
}

}  // namespace

DirLock::DirLock(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error(fmt::format("cannot create study directory {}: {}", dir.string(), ec.message()));
  fd_ = lock_file(dir / kLockFile, [&](int pid, const std::string& cmd) {
    return fmt::format(
        "{} is in use by another servelab tune ({}); two tunes on one directory would measure each "
        "other's engines. Wait for it to finish or stop it (kill -INT {}), or use another --out directory",
        dir.string(), holder(pid, cmd), pid > 0 ? std::to_string(pid) : "PID");
  });
}

fs::path port_lock_path(int port) {
  // /tmp itself, not $TMPDIR: two tunes with different TMPDIRs share the host's ports.
  return fs::path("/tmp") / fmt::format("servelab-tune-port-{}.lock", port);
}

DirLock DirLock::port(int port) {
  DirLock l;
  l.fd_ = lock_file(port_lock_path(port), [&](int pid, const std::string& cmd) {
    return fmt::format(
        "port {} is used by another servelab tune ({}): two tunes launching engines on one port would record "
        "each other's bind failures as their configurations' start-up refusals. Wait for it to finish or "
        "stop "
        "it (kill -INT {}), or set [study] port to another port",
        port, holder(pid, cmd), pid > 0 ? std::to_string(pid) : "PID");
  });
  return l;
}

DirLock::~DirLock() {
  if (fd_ < 0) return;
  if (ftruncate(fd_, 0) != 0) {
    // Nothing to do: the lock itself is released by close.
  }
  close(fd_);
}

namespace {

std::string stamp_now() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%d-%H%M%S", std::localtime(&now));
  return buf;
}

fs::path aside_name(const fs::path& dir) {
  const fs::path clean = dir.lexically_normal().string().back() == '/' ? dir.lexically_normal().parent_path()
                                                                       : dir.lexically_normal();
  fs::path target = clean.string() + "." + stamp_now();
  for (int i = 1; fs::exists(target); ++i)
    target = clean.string() + "." + stamp_now() + "-" + std::to_string(i);
  return target;
}

}  // namespace

void check_study_dir(const fs::path& dir, const std::string& study_toml, const DirPolicy& policy) {
  const fs::path db = dir / "results.sqlite";
  if (policy.fresh) return;
  if (!fs::exists(db)) return;
  Store store(db);
  const std::int64_t trials = store.trial_count();
  if (!policy.resume && trials > 0) {
    throw TuneSetupError(
        fmt::format("{} already holds {} trial(s) of study '{}'; refusing to overwrite them. Use --resume to "
                    "continue that "
                    "study, --fresh to move the directory aside ({}.<date>) and start over, or --out DIR for "
                    "another directory",
                    db.string(), trials, store.study_name().value_or("?"), dir.string()));
  }
  if (policy.resume && trials > 0) {
    const auto stored = store.study_toml();
    if (stored && *stored != study_toml)
      throw TuneSetupError(fmt::format(
          "--resume: the study file differs from the one {} was started with (its {} trial(s) were measured "
          "with the stored version, `sqlite3 {} 'select toml from study'`); restore the file, or use --fresh "
          "to start over with the new one",
          db.string(), trials, db.string()));
  }
}

DirLock prepare_study_dir(const fs::path& dir, const std::string& study_toml, const DirPolicy& policy,
                          fs::path* moved_to) {
  if (policy.fresh && fs::exists(dir) && !fs::is_empty(dir)) {
    fs::path target = aside_name(dir);
    {
      DirLock old(dir);  // never move a directory another tune is using
      std::error_code ec;
      fs::rename(dir, target, ec);
      if (ec)
        throw TuneSetupError(fmt::format("--fresh: cannot move {} aside to {}: {}", dir.string(),
                                         target.string(), ec.message()));
    }
    if (moved_to) *moved_to = target;
  }
  DirLock lock(dir);
  check_study_dir(dir, study_toml, policy);
  return lock;
}

}  // namespace servelab::tune::detail
