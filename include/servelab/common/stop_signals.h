// servelab/common: Ctrl-C and SIGTERM as an ordinary event. The commands that stop a loop on a signal
// (`bench serve`, `sim serve`, `tune`) take SIGINT/SIGTERM on a watcher thread with sigtimedwait instead of
// a signal handler, so the stop action may lock, allocate and call anything (a handler may only touch
// lock-free atomics: POSIX async-signal-safety).
#pragma once

#include <signal.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

namespace servelab::common {

/// For its lifetime, SIGINT and SIGTERM are blocked in the constructing thread — and so in every thread it
/// starts afterwards (signal masks are inherited; create this before the worker threads) — and taken by a
/// watcher thread (sigtimedwait, 50 ms ticks). First signal: `first_message` (if any) to stderr, then
/// `on_first()` on the watcher thread, both after kSameSignalWindow: a signal within it is the same one
/// delivered again (timeout(1) signals the process, then its process group) and is dropped. A later
/// second signal: `second_message` (if any) to stderr, then _exit(128 + its number) at once. The destructor
/// joins the watcher and restores the signal mask; a signal still pending then is delivered with the old
/// disposition. Thread-safety: requested() from any thread; construct and destroy on one thread.
class StopOnSignals {
 public:
  /// Signals this soon after the first count as that one: timeout(1)'s second kill follows within
  /// microseconds (more on a loaded machine), a person's second Ctrl-C takes far longer.
  static constexpr std::chrono::milliseconds kSameSignalWindow{50};

  explicit StopOnSignals(std::function<void()> on_first, std::string first_message = {},
                         std::string second_message = {});
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  /// True once the first signal arrived (set before on_first runs).
  bool requested() const { return requested_.load(); }
  /// The exit status of a command the first signal stopped, by the shell's convention 128 + its number:
  /// 130 for SIGINT (Ctrl-C), 143 for SIGTERM; 130 when none arrived yet.
  int exit_status() const { return 128 + (signal_.load() ? signal_.load() : SIGINT); }

 private:
  void watch();

  std::function<void()> on_first_;
  std::string first_message_, second_message_;
  sigset_t set_{}, old_{};
  std::atomic<bool> requested_{false};
  std::atomic<int> signal_{0};  ///< the first signal's number (set before on_first runs)
  std::atomic<bool> done_{false};
  std::thread thread_;
};

}  // namespace servelab::common
