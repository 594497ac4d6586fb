// arrival_schedule vs numpy: vLLM 0.13's get_request schedule computed by tests/schedule/arrival_oracle.py
// with numpy's legacy RandomState (values pasted below), plus the argument checks.
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <gtest/gtest.h>

#include "servelab/schedule/schedule.h"

namespace servelab::schedule {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Case {
  std::size_t n;
  double rate;
  double burstiness;
  std::uint32_t seed;
  RampUp ramp;
  int start_rps;
  int end_rps;
  std::vector<double> expected;
};

const std::vector<Case> kCases = {
    {20,
     10.0,
     1.0,
     0u,
     RampUp::kNone,
     0,
     0,
     {0.06852979000999215, 0.17667331084192062, 0.2561686177846462, 0.323951577422889,  0.3714003108510468,
      0.46079234156655546, 0.5103481565363982,  0.7018075631945018, 0.9872423062446655, 1.0288834821879844,
      1.1639752861304467,  1.2287852506957762,  1.3010656870264645, 1.524791676155153,  1.5311364476576903,
      1.5389859843855829,  1.540744755588761,   1.6946586629611424, 1.8243161355295843, 2.0}},
    {20, 5.5, 0.5, 42u, RampUp::kNone, 0, 0, {0.06583819248080632, 0.37513718814095387, 0.38656160889627783,
                                              0.3881450008919829,  0.5644871337484434,  0.5646860002416242,
                                              1.0788206200456665,  1.0943369228787951,  1.1377799660321335,
                                              1.2253464982341948,  1.4096265875442764,  1.4496834641024114,
                                              1.5473046754595974,  1.56601680864344,    1.7470650742218468,
                                              1.7490511558013317,  3.3358526684938385,  3.3794018776024686,
                                              3.6293737028295237,  3.6363636363636367}},
    {20, 3.0, 2.0, 7u, RampUp::kNone, 0, 0, {0.18155979782541384, 0.31622466223229256, 0.5833513484016567,
                                             1.1203623153547193,  1.5313442674327615,  1.9166425863170546,
                                             2.132911628347455,   2.5313674259970202,  2.8244863804524463,
                                             3.598185241152831,   3.898055754349454,   4.15548888156403,
                                             4.2207376013789295,  4.768271601992793,   4.957854341527278,
                                             5.008211797705758,   5.401519492788935,   5.488779647016244,
                                             6.185853768568989,   6.666666666666667}},
    {20, 100.0, 0.1, 123u, RampUp::kNone, 0, 0, {0.0020011759263424095, 0.0020012028219815905,
                                                 0.004770610452823592,  0.14444234937957112,
                                                 0.14449167835161267,   0.14449336669507082,
                                                 0.1445129857300807,    0.14452042584786062,
                                                 0.14452042890065883,   0.14465461843804092,
                                                 0.1454414911980648,    0.14840893357980495,
                                                 0.151294987095207,     0.15129785005767363,
                                                 0.15129820610962508,   0.15129820611289918,
                                                 0.1513146368039893,    0.15132924618150945,
                                                 0.15134403529672646,   0.2}},
    {20, 7.0, 4.5, 2024u, RampUp::kNone, 0, 0, {0.3202492581774952, 0.5389022503932102, 0.6795153366025737,
                                                0.8237654300759989, 0.852884896073171,  0.9276806443164183,
                                                1.1208739820349496, 1.28423933376352,   1.3511316657987509,
                                                1.4863800203124613, 1.6121942185625622, 1.74941598022027,
                                                1.9883944690845232, 2.092493104099904,  2.1598872184158187,
                                                2.22786300487741,   2.357071324681588,  2.4224956327135545,
                                                2.6365813379025083, 2.8571428571428568}},
    {20, 4.0, kInf, 1u, RampUp::kNone, 0, 0, {0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25, 2.5,
                                              2.75, 3.0, 3.25, 3.5, 3.75, 4.0, 4.25, 4.5, 4.75, 5.0}},
    {20, kInf, 1.0, 0u, RampUp::kNone, 0, 0, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0,
                                              0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
    {20, kInf, 1.0, 3u, RampUp::kLinear, 1, 10, {0.8002823868824798, 1.6359484257419994, 1.8124766049888295,
                                                 2.107819340087688,  2.879713621151334,  3.552487744620587,
                                                 3.587416652994531,  3.6412279853770975, 3.652260285845072,
                                                 3.762700767194412,  3.7679879264746647, 3.8662628290797607,
                                                 4.0229574047056245, 4.068558141606098,  4.216338674980949,
                                                 4.326600951729625,  4.329430451499322,  4.419832848292851,
                                                 4.4513345749256485, 4.504966218231263}},
    {20,
     kInf,
     3.0,
     5u,
     RampUp::kExponential,
     2,
     32,
     {0.575671710154165,  0.8870837166923136, 1.998863451288402,  2.2436924443937514, 2.377610079843889,
      2.5232415579499756, 2.6034174844798907, 2.744195651225469,  2.7839880121352647, 2.8592375263339873,
      2.89339663448734,   3.0227588756801196, 3.0656118655384845, 3.1164789141864278, 3.2168938732758816,
      3.2917269221010077, 3.334848642693397,  3.3696796253454084, 3.420094368133081,  3.438454385757122}},
    {1, 2.0, 1.0, 9u, RampUp::kNone, 0, 0, {0.5}},
};

TEST(ArrivalSchedule, MatchesNumpyLegacyGammaForSeedsAndBurstiness) {
  for (const Case& c : kCases) {
    ArrivalOptions o;
    o.num_requests = c.n;
    o.request_rate = c.rate;
    o.burstiness = c.burstiness;
    o.seed = c.seed;
    o.ramp_up = c.ramp;
    o.ramp_up_start_rps = c.start_rps;
    o.ramp_up_end_rps = c.end_rps;
    const std::vector<double> got = arrival_schedule(o);
    ASSERT_EQ(got.size(), c.expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], c.expected[i], 1e-12 * std::max(1.0, std::abs(c.expected[i])))
          << "seed " << c.seed << " burstiness " << c.burstiness << " rate " << c.rate << " i " << i;
    }
  }
}

TEST(ArrivalSchedule, LastSendIsExactlyNOverRate) {
  ArrivalOptions o;
  o.num_requests = 1000;
  o.request_rate = 37.0;
  o.burstiness = 0.7;
  o.seed = 11;
  const auto t = arrival_schedule(o);
  EXPECT_DOUBLE_EQ(t.back(), 1000.0 / 37.0);
  for (std::size_t i = 1; i < t.size(); ++i) EXPECT_LE(t[i - 1], t[i]);
  EXPECT_GT(t.front(), 0.0);  // request 0 is not at t = 0 for a finite rate (vLLM)
}

TEST(ArrivalSchedule, InfiniteRateSendsEverythingAtZero) {
  ArrivalOptions o;
  o.num_requests = 5;
  const auto t = arrival_schedule(o);
  EXPECT_EQ(t, std::vector<double>(5, 0.0));
}

TEST(ArrivalSchedule, RejectsBadArguments) {
  ArrivalOptions o;
  o.num_requests = 3;
  o.burstiness = 0.0;
  EXPECT_THROW(arrival_schedule(o), std::invalid_argument);
  o.burstiness = 1.0;
  o.request_rate = 0.0;
  EXPECT_THROW(arrival_schedule(o), std::invalid_argument);
  o.ramp_up = RampUp::kLinear;
  o.ramp_up_start_rps = 10;
  o.ramp_up_end_rps = 5;
  EXPECT_THROW(arrival_schedule(o), std::invalid_argument);
  o.ramp_up = RampUp::kExponential;
  o.ramp_up_start_rps = 0;
  o.ramp_up_end_rps = 5;
  EXPECT_THROW(arrival_schedule(o), std::invalid_argument);
  o.ramp_up = RampUp::kLinear;  // linear from 0: request 0 has rate 0 → vLLM asserts
  EXPECT_THROW(arrival_schedule(o), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::schedule
