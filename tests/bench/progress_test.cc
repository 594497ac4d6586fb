// Progress without a terminal: a plain log line every few seconds (done/total, rate, ETA).
#include "bench/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace servelab::bench::detail {
namespace {

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[512];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

TEST(ProgressLog, LineFormat) {
  // 120 of 1000 in 12 s: 10 req/s, 880 left -> 88 s = 01:28.
  EXPECT_EQ(format_progress_log(120, 1000, 12.0),
            "Progress: 120/1000 requests done (12.0%), 10.00 req/s, elapsed 00:12, ETA 01:28");
  EXPECT_EQ(format_progress_log(0, 50, 5.0),
            "Progress: 0/50 requests done (0.0%), ? req/s, elapsed 00:05, ETA ?");
  EXPECT_EQ(format_progress_log(3, 3, 3725.0),
            "Progress: 3/3 requests done (100.0%), 0.00 req/s, elapsed 1:02:05, ETA 00:00");
}

TEST(ProgressLog, OneLineEveryIntervalAndAFinalOne) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressLog log(f, 100, 5.0);
    log.update_at(10, 1.0);  // < 5 s: nothing yet
    log.update_at(30, 4.9);
    log.update_at(40, 5.0);  // line 1
    log.update_at(45, 9.0);
    log.update_at(60, 10.0);  // line 2 (5 s after line 1)
    log.update_at(100, 12.5);
    log.finish_at(12.5);  // line 3: the count moved since line 2
    log.finish_at(20.0);  // once only
    log.update_at(100, 30.0);
  }
  EXPECT_EQ(contents(f),
            "Progress: 40/100 requests done (40.0%), 8.00 req/s, elapsed 00:05, ETA 00:07\n"
            "Progress: 60/100 requests done (60.0%), 6.00 req/s, elapsed 00:10, ETA 00:06\n"
            "Progress: 100/100 requests done (100.0%), 8.00 req/s, elapsed 00:12, ETA 00:00\n");
  std::fclose(f);
}

TEST(ProgressLog, NoRepeatAtFinishWhenNothingMoved) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  ProgressLog log(f, 4, 2.0);
  log.update_at(4, 2.0);
  log.finish_at(2.5);
  EXPECT_EQ(contents(f), "Progress: 4/4 requests done (100.0%), 2.00 req/s, elapsed 00:02, ETA 00:00\n");
  std::fclose(f);
}

}  // namespace
}  // namespace servelab::bench::detail
