// servelab/bench private: tqdm-style progress bar.
#include "bench/progress.h"

#include <fmt/format.h>

#include <cmath>

namespace servelab::bench::detail {
namespace {

std::string clock_text(double s) {
  auto total = static_cast<long long>(s);
  long long h = total / 3600, m = (total / 60) % 60, sec = total % 60;
  return h > 0 ? fmt::format("{}:{:02d}:{:02d}", h, m, sec) : fmt::format("{:02d}:{:02d}", m, sec);
}

}  // namespace

std::string format_progress(std::size_t done, std::size_t total, double elapsed_s, int width) {
  double frac = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  if (frac > 1.0) frac = 1.0;
  // tqdm: full blocks plus one partial block of 1/8 resolution.
  static const char* kPartial[] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
  double cells = frac * width;
  int full = static_cast<int>(cells);
  int eighths = static_cast<int>((cells - full) * 8);
  std::string bar;
  for (int i = 0; i < full; ++i) bar += "█";
  int used = full;
  if (full < width) {
    bar += kPartial[eighths];
    used += eighths > 0 ? 1 : 0;
  }
  bar += std::string(static_cast<std::size_t>(width - used), ' ');
  double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  std::string remaining =
      (rate > 0 && done <= total) ? clock_text(static_cast<double>(total - done) / rate) : "?";
  std::string rate_text = rate > 0 ? fmt::format("{:.2f}it/s", rate) : "?it/s";
  return fmt::format("{:3.0f}%|{}| {}/{} [{}<{}, {}]", std::floor(frac * 100), bar, done, total,
                     clock_text(elapsed_s), remaining, rate_text);
}

ProgressBar::ProgressBar(std::FILE* stream, std::size_t total)
    : stream_(stream), total_(total), start_(std::chrono::steady_clock::now()) {
  update(0);
}

void ProgressBar::update(std::size_t done) {
  if (finished_) return;
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  std::fputs(("\r" + format_progress(done, total_, elapsed)).c_str(), stream_);
  std::fflush(stream_);
}

void ProgressBar::finish() {
  if (finished_) return;
  finished_ = true;
  std::fputs("\n", stream_);
  std::fflush(stream_);
}

std::string format_progress_log(std::size_t done, std::size_t total, double elapsed_s) {
  const double pct = total == 0 ? 100.0 : 100.0 * static_cast<double>(done) / static_cast<double>(total);
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  const std::string rate_text = rate > 0 ? fmt::format("{:.2f} req/s", rate) : "? req/s";
  const std::string eta =
      rate > 0 && done <= total ? clock_text(static_cast<double>(total - done) / rate) : std::string("?");
  return fmt::format("Progress: {}/{} requests done ({:.1f}%), {}, elapsed {}, ETA {}", done, total, pct,
                     rate_text, clock_text(elapsed_s), eta);
}

ProgressLog::ProgressLog(std::FILE* stream, std::size_t total, double interval_s)
    : stream_(stream), total_(total), interval_s_(interval_s), start_(std::chrono::steady_clock::now()) {}

void ProgressLog::update(std::size_t done) {
  update_at(done, std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void ProgressLog::update_at(std::size_t done, double elapsed_s) {
  if (finished_) return;
  done_ = done;
  if (elapsed_s - printed_at_s_ >= interval_s_) write(elapsed_s);
}

void ProgressLog::finish() {
  finish_at(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count());
}

void ProgressLog::finish_at(double elapsed_s) {
  if (finished_) return;
  if (!printed_ || printed_done_ != done_) write(elapsed_s);
  finished_ = true;
}

void ProgressLog::write(double elapsed_s) {
  std::fputs((format_progress_log(done_, total_, elapsed_s) + "\n").c_str(), stream_);
  std::fflush(stream_);
  printed_ = true;
  printed_done_ = done_;
  printed_at_s_ = elapsed_s;
}

}  // namespace servelab::bench::detail
