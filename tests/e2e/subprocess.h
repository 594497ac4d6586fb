// tests/e2e: run the servelab binary as a child process, capture stdout/stderr, optionally signal it once
// a marker text appeared on its stdout. POSIX (fork/exec/poll).
#pragma once

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace servelab::e2e {

/// Result of a finished child: exit status (128 + signal when killed by a signal) and its output.
struct ProcessResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

/// When `signal_after` appears in the child's stdout, waits `signal_delay` then sends `signal_number`.
struct SignalPlan {
  std::string signal_after;
  std::chrono::milliseconds signal_delay{0};
  int signal_number = SIGINT;
};

/// Runs `argv` (argv[0] = executable path) to completion; kills it with SIGKILL after `timeout`.
/// Throws std::runtime_error when it cannot start. `sent_signal_at` (optional) receives when the signal
/// was sent.
inline ProcessResult run_process(const std::vector<std::string>& argv, const SignalPlan* plan = nullptr,
                                 std::chrono::seconds timeout = std::chrono::seconds(120)) {
  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0 || pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    dup2(out_pipe[1], STDOUT_FILENO);
    dup2(err_pipe[1], STDERR_FILENO);
    close(out_pipe[0]);
    close(err_pipe[0]);
    close(out_pipe[1]);
    close(err_pipe[1]);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  ProcessResult r;
  bool out_open = true, err_open = true, signalled = false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  std::chrono::steady_clock::time_point signal_at{};
  bool signal_armed = false;
  char buf[65536];
  while (out_open || err_open) {
    auto now = std::chrono::steady_clock::now();
    if (now > deadline) {
      kill(pid, SIGKILL);
      break;
    }
    if (plan && !signalled && !signal_armed && r.out.find(plan->signal_after) != std::string::npos) {
      signal_armed = true;
      signal_at = now + plan->signal_delay;
    }
    if (signal_armed && !signalled && now >= signal_at) {
      kill(pid, plan->signal_number);
      signalled = true;
    }
    pollfd fds[2] = {{out_open ? out_pipe[0] : -1, POLLIN, 0}, {err_open ? err_pipe[0] : -1, POLLIN, 0}};
    poll(fds, 2, 10);
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP))) {
      ssize_t n = read(out_pipe[0], buf, sizeof buf);
      if (n <= 0)
        out_open = false;
      else
        r.out.append(buf, static_cast<std::size_t>(n));
    }
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP))) {
      ssize_t n = read(err_pipe[0], buf, sizeof buf);
      if (n <= 0)
        err_open = false;
      else
        r.err.append(buf, static_cast<std::size_t>(n));
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace servelab::e2e
