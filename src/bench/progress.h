// servelab/bench private: a tqdm-style progress bar ("100%|██████████| 1000/1000 [00:12<00:00, 81.20it/s]")
// drawn on a terminal with '\r', as vLLM's tqdm bar on stderr.
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

}  // namespace servelab::bench::detail
