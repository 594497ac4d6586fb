// servelab/bench private: a tqdm-style progress bar ("100%|██████████| 1000/1000 [00:12<00:00, 81.20it/s]")
// drawn on a terminal with '\r', as vLLM's tqdm bar on stderr; and, when stderr is not a terminal (CI logs,
// nohup), a plain log line every few seconds instead.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <string>

namespace servelab::bench::detail {

/// Formats one bar line (no '\r', no newline): percentage, a `width`-cell bar, n/total, elapsed<remaining
/// (mm:ss, or h:mm:ss past an hour) and the rate in it/s (tqdm's default layout). `elapsed_s` >= 0.
std::string format_progress(std::size_t done, std::size_t total, double elapsed_s, int width = 40);

/// Draws format_progress lines on `stream` (redrawn in place with '\r'); finish() ends the line.
/// Thread-safety: not thread-safe; call from one thread (the client's progress callback thread).
class ProgressBar {
 public:
  ProgressBar(std::FILE* stream, std::size_t total);
  void update(std::size_t done);
  void finish();

 private:
  std::FILE* stream_;
  std::size_t total_;
  std::chrono::steady_clock::time_point start_;
  bool finished_ = false;
};

/// One log line (no newline) for a stream that is not a terminal: "Progress: 120/1000 requests done (12.0%),
/// 9.81 req/s, elapsed 00:12, ETA 01:30" (rate = done / elapsed_s in req/s; "?" for rate and ETA before the
/// first completion; clocks as format_progress). `elapsed_s` >= 0.
std::string format_progress_log(std::size_t done, std::size_t total, double elapsed_s);

/// Writes format_progress_log lines on `stream`, one each time `interval_s` has passed since the previous
/// one, and a last line from finish() when the count moved since. The *_at variants take the elapsed time
/// explicitly (seconds since construction) instead of reading the steady clock.
/// Thread-safety: not thread-safe; call from one thread (the client's progress callback thread).
class ProgressLog {
 public:
  ProgressLog(std::FILE* stream, std::size_t total, double interval_s = 5.0);
  void update(std::size_t done);
  void update_at(std::size_t done, double elapsed_s);
  void finish();
  void finish_at(double elapsed_s);

 private:
  void write(double elapsed_s);
  std::FILE* stream_;
  std::size_t total_;
  double interval_s_;
  std::chrono::steady_clock::time_point start_;
  std::size_t done_ = 0;
  std::size_t printed_done_ = 0;
  bool printed_ = false;
  double printed_at_s_ = 0.0;
  bool finished_ = false;
};

}  // namespace servelab::bench::detail
