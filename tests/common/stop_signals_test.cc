// StopOnSignals: the first SIGINT/SIGTERM runs the stop once; the same interrupt delivered again within
// kSameSignalWindow (timeout(1) signals the process, then its process group) is dropped; a later one exits
// 130 at once. Each case runs in a forked child (gtest death test): the exit ends that child only.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "servelab/common/stop_signals.h"

namespace {

using servelab::common::StopOnSignals;
using namespace std::chrono_literals;

void child_duplicate_then_second() {
  std::atomic<int> stops{0};
  StopOnSignals s([&] { ++stops; }, "first\n", "second\n");
  kill(getpid(), SIGINT);
  std::this_thread::sleep_for(2ms);
  kill(getpid(), SIGINT);  // within the window: the same interrupt
  std::this_thread::sleep_for(StopOnSignals::kSameSignalWindow + 200ms);
  if (stops.load() != 1 || !s.requested()) _exit(3);
  std::fprintf(stderr, "survived\n");
  kill(getpid(), SIGINT);  // a person's second Ctrl-C: _exit(130)
  std::this_thread::sleep_for(2s);
  _exit(4);
}

TEST(StopOnSignalsDeathTest, TheSameSignalTwiceIsOneAndALaterOneExits) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(child_duplicate_then_second(), ::testing::ExitedWithCode(130),
              "first\n(.|\n)*survived\n(.|\n)*second");
}

}  // namespace
