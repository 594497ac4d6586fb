// Trial keys (tune/targets/trial_key.h): every kind round-trips through its text, and keys as servelab wrote
// them before the type existed still resume a study.
#include "servelab/tune/targets/trial_key.h"

#include <gtest/gtest.h>

#include "servelab/tune/search/search.h"
#include "servelab/tune/store/tally.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

TEST(TrialKey, EveryKindRoundTrips) {
  const std::vector<std::pair<TrialKey, std::string>> cases = {
      {{RunnerKind::kTwin, "a{}", TrialKey::Run{{"s1"}, 0}}, "twin|a{}|s1|r0"},
      {{RunnerKind::kLocal, "b{layout=tp4-dp2,flag=true}", TrialKey::Run{{"s1", "s2"}, 2}},
       "local|b{layout=tp4-dp2,flag=true}|s1+s2|r2"},
      {{RunnerKind::kSlurm, "a{ctx=32768}", TrialKey::Run{{"s1@c1", "s1@c4", "s1@r2.5n2400"}, 12}},
       "slurm|a{ctx=32768}|s1@c1+s1@c4+s1@r2.5n2400|r12"},
      {{RunnerKind::kK8sPlan, "a{}", TrialKey::Run{{}, 1}}, "k8s-plan|a{}||r1"},
      {{RunnerKind::kLocal, "a{layout=tp3}", TrialKey::Rejected{}}, "local|a{layout=tp3}|rejected"},
      {{RunnerKind::kLocal, "a{}", TrialKey::Release{}}, "local|a{}|release"},
  };
  for (const auto& [key, text] : cases) {
    EXPECT_EQ(key.to_string(), text);
    const std::optional<TrialKey> back = TrialKey::parse(text);
    ASSERT_TRUE(back) << text;
    EXPECT_EQ(*back, key) << text;
    EXPECT_EQ(back->to_string(), text);
  }
  EXPECT_TRUE(TrialKey::parse("local|a{layout=tp3}|rejected")->rejected());
  EXPECT_FALSE(TrialKey::parse("local|a{}|s1|r0")->rejected());
}

TEST(TrialKey, ReadsFromBothEnds) {
  // A '|' inside the configuration key stays in it; '+' separates scenario ids, empty ones included.
  const auto k = TrialKey::parse("twin|a{x=1|2}|s1|r3");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->config_key, "a{x=1|2}");
  EXPECT_EQ(std::get<TrialKey::Run>(k->what), (TrialKey::Run{{"s1"}, 3}));
  for (const char* text : {"twin|a{}|s1+|r0", "twin|a{}|+s1|r0", "twin|a{}|+|r0", "twin|a{x=|}|rejected"})
    EXPECT_EQ(TrialKey::parse(text)->to_string(), text);
}

TEST(TrialKey, RefusesWhatIsNoKey) {
  for (const char* text : {"", "twin", "twin|a{}", "gpu|a{}|s1|r0", "twin|a{}|r0", "twin|a{}|s1|r01",
                           "twin|a{}|s1|r-1", "twin|a{}|s1|r", "twin|a{}|s1|rx", "twin|a{}|s1|r99999999999",
                           "twin|a{}|bogus", "twin|rejected", "t", "k"})
    EXPECT_FALSE(TrialKey::parse(text)) << text;
}

TEST(RunnerKind, TagsAndPredictions) {
  EXPECT_STREQ(runner_tag(runner_kind(Target::kTwin)), "twin");
  EXPECT_STREQ(runner_tag(runner_kind(Target::kLocal)), "local");
  EXPECT_STREQ(runner_tag(runner_kind(Target::kSlurm)), "slurm");
  EXPECT_STREQ(runner_tag(RunnerKind::kK8sPlan), "k8s-plan");
  EXPECT_EQ(runner_kind_from_tag("k8s-plan"), RunnerKind::kK8sPlan);
  EXPECT_FALSE(runner_kind_from_tag("k8s"));
  EXPECT_TRUE(runner_predicts(RunnerKind::kTwin));
  EXPECT_FALSE(runner_predicts(RunnerKind::kLocal));
  EXPECT_FALSE(runner_predicts(RunnerKind::kK8sPlan));
}

/// A finished trial as the store holds it, its key written as text (as servelab wrote it before TrialKey).
TrialRecord stored(const std::string& trial_key, const std::string& config_key, TrialStatus status,
                   double tok_s) {
  TrialRecord r;
  r.trial_key = trial_key;
  r.engine = config_key.substr(0, 1);
  r.config_key = config_key;
  r.phase = "baseline";
  r.outcome.status = status;
  if (status == TrialStatus::kOk) {
    ScenarioResult s;
    s.scenario_id = "s1";
    s.metrics["Total Token throughput (tok/s)"] = tok_s;
    r.outcome.scenarios.push_back(s);
  }
  return r;
}

TEST(TrialKey, StoredKeysOfTheOldCodeResume) {
  Study s = parse_study(testing::kSmallStudy, "small.toml", "/data");
  s.target = Target::kLocal;
  const std::vector<TrialRecord> records = {
      stored("local|a{}|s1|r0", "a{}", TrialStatus::kOk, 123),
      stored("local|b{}|rejected", "b{}", TrialStatus::kRejected, 0),
      stored("twin|a{}|s1|r0", "a{}", TrialStatus::kOk, 77),
  };
  int launches = 0;
  Evaluator local(s, testing::fake_runner(&launches), RunnerKind::kLocal, nullptr, records, nullptr, nullptr,
                  {});
  const Evaluation a = local.evaluate(CandidateConfig{"a", {}}, {"s1"}, "baseline");
  EXPECT_EQ(launches, 0);  // the stored result, not the twin's
  EXPECT_DOUBLE_EQ(a.objective.mean, 123);
  const Evaluation b = local.evaluate(CandidateConfig{"b", {}}, {"s1"}, "baseline");
  EXPECT_EQ(launches, 0);  // refused once, for every repeat
  EXPECT_EQ(b.status, TrialStatus::kRejected);
  ASSERT_NE(local.find("a{}", "s1", 0), nullptr);
  EXPECT_EQ(local.find("a{}", "s1", 0)->trial_key, "local|a{}|s1|r0");
  // The twin's evaluator reads its own key and launches for what it lacks, under its own tag.
  Evaluator twin(s, testing::fake_runner(&launches), RunnerKind::kTwin, nullptr, records, nullptr, nullptr,
                 {});
  EXPECT_DOUBLE_EQ(twin.evaluate(CandidateConfig{"a", {}}, {"s1"}, "baseline").objective.mean, 77);
  const Evaluation tb = twin.evaluate(CandidateConfig{"b", {}}, {"s1"}, "baseline");
  EXPECT_EQ(launches, 1);
  EXPECT_EQ(tb.trial_keys, std::vector<std::string>{"twin|b{}|s1|r0"});
  // The tally counts the target's trials only, the rejected one as pruned.
  const TrialTally t = tally_trials(s, records);
  EXPECT_EQ(t.trials, 2);
  EXPECT_EQ(t.pruned, 1);
  EXPECT_EQ(t.launches, 1);
}

}  // namespace
}  // namespace servelab::tune
