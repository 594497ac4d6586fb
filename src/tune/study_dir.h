// servelab/tune (private): the study directory — one tune at a time, and results never wiped.
//   * An exclusive lock (flock on DIR/.servelab-tune.lock, the file holding the holder's PID) keeps a second
//     tune off a directory whose engines and database are in use; the kernel drops it when the holder dies,
//     even by SIGKILL, so a stale lock never blocks --resume.
//   * A directory whose results.sqlite holds trials is reused only with --resume (same study file), or moved
//     aside with --fresh (renamed DIR.<YYYYmmdd-HHMMSS>).
#pragma once

#include <filesystem>
#include <string>

namespace servelab::tune::detail {

/// Holds the lock on a study directory (or, DirLock::port, on a TCP port) until destroyed. Movable, not
/// copyable.
class DirLock {
 public:
  /// Creates `dir` if needed and locks it. Throws TuneSetupError naming the holder (PID and command line)
  /// when another process holds it, std::runtime_error for I/O errors.
  explicit DirLock(const std::filesystem::path& dir);
  ~DirLock();
  /// Locks the host-wide lock file of TCP port `port` (port_lock_path) for a tune that launches engines
  /// there, as a directory is locked. Throws TuneSetupError naming the other tune when it holds the port.
  static DirLock port(int port);
  DirLock(DirLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  DirLock& operator=(DirLock&&) = delete;
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  DirLock() = default;
  int fd_ = -1;
};

/// The lock file of a port, shared by every servelab tune on this host: /tmp/servelab-tune-port-N.lock (not
/// under $TMPDIR, which differs between users and shells).
std::filesystem::path port_lock_path(int port);

/// Name of the lock file inside a study directory.
inline constexpr const char* kLockFile = ".servelab-tune.lock";

/// What to do with an existing study directory.
struct DirPolicy {
  bool resume = false;  ///< keep and continue the results
  bool fresh = false;   ///< move an existing directory aside first
};

/// Makes `dir` ready for a run of the study whose TOML text is `study_toml`, then locks it (the returned lock
/// must be held for the whole run). Without resume/fresh, a directory whose results.sqlite holds trials is
/// refused; with resume, a database started by a different study file is refused; with fresh, an existing
/// directory is renamed to `<dir>.<YYYYmmdd-HHMMSS>` (the new name is written to `moved_to`). Throws
/// TuneSetupError with the reason and the fix.
DirLock prepare_study_dir(const std::filesystem::path& dir, const std::string& study_toml,
                          const DirPolicy& policy, std::filesystem::path* moved_to);

/// The refusals of prepare_study_dir (results without --resume, a changed study file with --resume),
/// read-only and without the lock: lets the CLI refuse before its pre-flight. Throws TuneSetupError.
void check_study_dir(const std::filesystem::path& dir, const std::string& study_toml,
                     const DirPolicy& policy);

}  // namespace servelab::tune::detail
