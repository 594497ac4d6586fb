// One meaning of time against a time-scaled engine twin (issue 10 §2): wall timings become engine time,
// and a run whose twin or client fell behind is marked invalid with the reason.
#include <gtest/gtest.h>

#include <vector>

#include "bench/server_clock.h"

namespace servelab::bench::detail {
namespace {

TEST(ServerClock, WallTimingsBecomeEngineTime) {
  std::vector<metrics::RequestOutput> out(2);
  out[0].intended_send_time_s = 0.5;
  out[0].dispatch_time_s = 0.6;
  out[0].send_time_s = 0.7;
  out[0].ttft_s = 0.1;
  out[0].ttfct_s = 0.2;
  out[0].itl_s = {0.01, 0.02};
  out[0].latency_s = 0.3;
  out[1].ttfct_s = -1;  // "none" stays none
  to_engine_time(out, 10);
  EXPECT_DOUBLE_EQ(out[0].intended_send_time_s, 5);
  EXPECT_DOUBLE_EQ(out[0].dispatch_time_s, 6);
  EXPECT_DOUBLE_EQ(out[0].send_time_s, 7);
  EXPECT_DOUBLE_EQ(out[0].ttft_s, 1);
  EXPECT_DOUBLE_EQ(out[0].ttfct_s, 2);
  EXPECT_DOUBLE_EQ(out[0].itl_s[1], 0.2);
  EXPECT_DOUBLE_EQ(out[0].latency_s, 3);
  EXPECT_DOUBLE_EQ(out[1].ttfct_s, -1);
}

TEST(ServerClock, RunsTheHostCouldNotKeepUpWithAreInvalid) {
  metrics::BenchmarkMetrics m;
  m.ttft.count = 10;
  m.ttft.mean_ms = 1000;
  ScheduleWindow ok{1000, 1000 * 2.0, 30, 5, 100};  // mean 2 ms, last 5 ms, admission 100 ms
  EXPECT_EQ(schedule_invalid_reason(ok, 10.0, m, 10, 0.1), "");
  ScheduleWindow late_end = ok;
  late_end.lag_last_ms = 150;  // > 1% of 10 s
  EXPECT_EQ(
      schedule_invalid_reason(late_end, 10.0, m, 10, 0.1),
      "the timing cannot be trusted at time scale 10: the last token left 150.0 ms late, more than 1% of the "
      "10000 ms run (engine time); the host is too busy for this scale: rerun with a smaller time scale or "
      "on an idle machine");
  ScheduleWindow unread = ok;
  unread.admission_wait_max_ms = 1500;
  EXPECT_NE(
      schedule_invalid_reason(unread, 10.0, m, 10, 0.1)
          .find("a request may have waited 1500 ms unread while the server was busy, more than 10% of the "
                "10000 ms run"),
      std::string::npos);
  ScheduleWindow behind = ok;
  behind.lag_sum_ms = 1000 * 60.0;  // mean 60 ms > 5% of the 1000 ms mean TTFT
  EXPECT_NE(schedule_invalid_reason(behind, 10.0, m, 10, 0.1)
                .find("tokens left 60.00 ms late on average, more than 5% of the mean TTFT (1000.0 ms)"),
            std::string::npos);
  EXPECT_NE(
      schedule_invalid_reason(ok, 10.0, m, 10, 6.0)
          .find("the benchmark client itself woke 6.00 ms late on average (60.0 ms scaled), more than 5% of "
                "the mean TTFT (1000.0 ms)"),
      std::string::npos);
  EXPECT_EQ(schedule_invalid_reason(ScheduleWindow{}, 10.0, m, 10, 6.0), "");  // nothing emitted: no verdict
}

TEST(ServerClock, ReadFromTheModelsList) {
  const ServerClock twin = server_clock_from_models(
      R"({"object":"list","data":[{"id":"m","servelab":{"engine_twin":true,"time_scale":20}}]})");
  EXPECT_TRUE(twin.engine_twin);
  EXPECT_EQ(twin.time_scale, 20.0);
  const ServerClock vllm =
      server_clock_from_models(R"({"object":"list","data":[{"id":"m","owned_by":"vllm"}]})");
  EXPECT_FALSE(vllm.engine_twin);
  EXPECT_EQ(vllm.time_scale, 1.0);
  EXPECT_EQ(server_clock_from_models("not json").time_scale, 1.0);
  EXPECT_EQ(server_clock_from_models(R"({"data":[{"servelab":{"time_scale":-3}}]})").time_scale, 1.0);
}

TEST(ServerClock, ARealEngineAdvertisesNothing) {
  // Nothing listens on port 1: the probe says "real engine, time scale 1" instead of failing.
  const ServerClock c = probe_server_clock("http://127.0.0.1:1", {}, false);
  EXPECT_EQ(c.time_scale, 1.0);
  EXPECT_FALSE(c.engine_twin);
  EXPECT_FALSE(read_schedule_window("http://127.0.0.1:1", {}, false).has_value());
}

}  // namespace
}  // namespace servelab::bench::detail
