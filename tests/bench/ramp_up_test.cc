// vLLM 0.13's rps_change_events of a ramp-up run, against hand-computed rates and crossings.
#include "bench/ramp_up.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <ctime>
#include <optional>
#include <string>

namespace servelab::bench {
namespace {

class RampUpEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* tz = std::getenv("TZ");
    saved_ = tz ? std::optional<std::string>(tz) : std::nullopt;
    setenv("TZ", "UTC", 1);
    tzset();
  }
  void TearDown() override {
    if (saved_)
      setenv("TZ", saved_->c_str(), 1);
    else
      unsetenv("TZ");
    tzset();
  }
  std::optional<std::string> saved_;
};

client::ArrivalOptions ramp(client::RampUp kind, int start, int end, std::size_t n) {
  client::ArrivalOptions a;
  a.num_requests = n;
  a.ramp_up = kind;
  a.ramp_up_start_rps = start;
  a.ramp_up_end_rps = end;
  return a;
}

std::vector<std::pair<int, std::string>> pairs(const std::vector<report::RpsChangeEvent>& events) {
  std::vector<std::pair<int, std::string>> out;
  for (const auto& e : events) out.emplace_back(e.rps, e.timestamp);
  return out;
}

// 2026-12-01T15:00:00 UTC.
constexpr double kT0 = 1796137200.0;

TEST_F(RampUpEvents, IsoTimestampAsPython) {
  EXPECT_EQ(iso_local_timestamp(kT0), "2026-12-01T15:00:00");  // no fraction when it is 0
  EXPECT_EQ(iso_local_timestamp(kT0 + 1.25), "2026-12-01T15:00:01.250000");
  EXPECT_EQ(iso_local_timestamp(kT0 + 59.9999996), "2026-12-01T15:01:00");  // rounds into the next second
  EXPECT_EQ(iso_local_timestamp(kT0 + 0.000001), "2026-12-01T15:00:00.000001");
}

TEST_F(RampUpEvents, LinearCrossingsStampedWithTheCrossingRequest) {
  // N = 5, 1 -> 9 rps: λ_i = 1 + 8·i/4 = 1, 3, 5, 7, 9 (exact in binary).
  const std::vector<double> dispatch = {kT0 + 1, kT0 + 2, kT0 + 3, kT0 + 4, kT0 + 5};
  const auto events = rps_change_events(ramp(client::RampUp::kLinear, 1, 9, 5), kT0, dispatch);
  const std::vector<std::pair<int, std::string>> expected = {
      {1, "2026-12-01T15:00:00"},                              // start, before the first request
      {2, "2026-12-01T15:00:02"}, {3, "2026-12-01T15:00:02"},  // request 1 (λ = 3)
      {4, "2026-12-01T15:00:03"}, {5, "2026-12-01T15:00:03"},  // request 2 (λ = 5)
      {6, "2026-12-01T15:00:04"}, {7, "2026-12-01T15:00:04"},
      {8, "2026-12-01T15:00:05"}, {9, "2026-12-01T15:00:05"}};
  EXPECT_EQ(pairs(events), expected);
}

TEST_F(RampUpEvents, ExponentialAndTruncation) {
  // N = 5, 1 -> 16 rps: λ_i = 16^(i/4) = 1, 2, 4, 8, 16.
  const std::vector<double> dispatch = {kT0, kT0 + 0.5, kT0 + 1, kT0 + 1.5, kT0 + 2};
  const auto events = rps_change_events(ramp(client::RampUp::kExponential, 1, 16, 5), kT0, dispatch);
  ASSERT_EQ(events.size(), 16u);
  for (int k = 0; k < 16; ++k) EXPECT_EQ(events[static_cast<std::size_t>(k)].rps, k + 1);
  EXPECT_EQ(events[1].timestamp, "2026-12-01T15:00:00.500000");  // 2 at request 1
  EXPECT_EQ(events[2].timestamp, "2026-12-01T15:00:01");         // 3, 4 at request 2
  EXPECT_EQ(events[3].timestamp, "2026-12-01T15:00:01");
  EXPECT_EQ(events[4].timestamp, "2026-12-01T15:00:01.500000");  // 5..8 at request 3
  EXPECT_EQ(events[7].timestamp, "2026-12-01T15:00:01.500000");
  EXPECT_EQ(events[8].timestamp, "2026-12-01T15:00:02");  // 9..16 at request 4
  EXPECT_EQ(events[15].timestamp, "2026-12-01T15:00:02");
  // Linear 1 -> 2 over 3 requests: λ = 1, 1.5, 2; int(1.5) = 1 is no crossing.
  const auto slow = rps_change_events(ramp(client::RampUp::kLinear, 1, 2, 3), kT0, dispatch);
  EXPECT_EQ(pairs(slow), (std::vector<std::pair<int, std::string>>{{1, "2026-12-01T15:00:00"},
                                                                   {2, "2026-12-01T15:00:01"}}));
}

TEST_F(RampUpEvents, OnlyDispatchedRequestsAndNoRampUp) {
  // Interrupted after 2 of 5 sends: the crossings of requests 2..4 never happened.
  const std::vector<double> dispatch = {kT0 + 1, kT0 + 2};
  const auto events = rps_change_events(ramp(client::RampUp::kLinear, 1, 9, 5), kT0, dispatch);
  EXPECT_EQ(pairs(events),
            (std::vector<std::pair<int, std::string>>{
                {1, "2026-12-01T15:00:00"}, {2, "2026-12-01T15:00:02"}, {3, "2026-12-01T15:00:02"}}));
  client::ArrivalOptions none;
  none.num_requests = 5;
  none.request_rate = 4;
  EXPECT_TRUE(rps_change_events(none, kT0, dispatch).empty());
}

}  // namespace
}  // namespace servelab::bench
