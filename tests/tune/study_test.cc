#include <gtest/gtest.h>

#include "test_study.h"
#include "tune/space.h"
#include "tune/study.h"

namespace servelab::tune {
namespace {

Study small() { return parse_study(testing::kSmallStudy, "small.toml", "/data"); }

TEST(Study, ParsesEnginesKnobsScenarios) {
  Study s = small();
  EXPECT_EQ(s.name, "small");
  ASSERT_EQ(s.engines.size(), 2u);
  EXPECT_EQ(s.engines[1].base_flags, (std::vector<std::string>{"--chat-template", "x.jinja"}));
  ASSERT_EQ(s.knobs.size(), 3u);
  EXPECT_EQ(s.knobs[0].values[0].label, "tp8");
  EXPECT_EQ(s.knobs[0].values[1].label, "tp4-dp2");
  EXPECT_EQ(s.knobs[0].baseline, "tp8");
  EXPECT_TRUE(s.knobs[1].values[0].is_default);
  EXPECT_EQ(s.knobs[2].values[1].label, "true");
  EXPECT_EQ(s.objective.metric, "Total Token throughput (tok/s)");
  EXPECT_EQ(s.search.knob_order, (std::vector<std::string>{"layout", "ctx", "flag"}));
}

TEST(Study, ErrorsNameTomlPathAndLine) {
  std::string bad = testing::kSmallStudy;
  bad.replace(bad.find("values = [\"default\", 32768]"), 27, "values = [\"default\", \"x\"]");
  try {
    parse_study(bad, "bad.toml", "/data");
    FAIL() << "expected StudyError";
  } catch (const StudyError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("bad.toml:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("knobs[1] (ctx).values[1]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("wrong type"), std::string::npos) << msg;
  }
  EXPECT_THROW(parse_study("[study]\nname = \"x\"\n[model]\nid = \"m\"\n", "t.toml", "/d"), StudyError);
  try {
    parse_study(std::string(testing::kSmallStudy) + "\n[search]\nstrategy = \"random\"\n", "s.toml", "/d");
    FAIL();
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("search.strategy"), std::string::npos) << e.what();
  }
  try {
    parse_study("[study\n", "syn.toml", "/d");
    FAIL();
  } catch (const StudyError& e) {
    EXPECT_NE(std::string(e.what()).find("syn.toml:1:"), std::string::npos) << e.what();
  }
}

TEST(Space, RendersCommandAndEnv) {
  Study s = small();
  Rendered r = render(s, Config{"b", {{"layout", "tp4-dp2"}, {"ctx", "32768"}, {"flag", "true"}}});
  EXPECT_EQ(r.argv, (std::vector<std::string>{"python3", "-m", "sglang.launch_server", "--model-path", "org/model",
                                              "--chat-template", "x.jinja", "--tp-size", "4", "--dp-size", "2",
                                              "--context-length=32768"}));
  EXPECT_EQ(r.env.at("B_FLAG"), "1");
  EXPECT_EQ(r.shell(),
            "B_FLAG=1 python3 -m sglang.launch_server --model-path org/model --chat-template x.jinja --tp-size 4 "
            "--dp-size 2 --context-length=32768");
  Rendered a = render(s, Config{"a", {}});
  EXPECT_EQ(a.shell(), "vllm serve org/model --port 8000 -tp 8");
}

TEST(Space, PrunesInvalidCombinations) {
  Study s = small();
  auto why = check_config(s, Config{"a", {{"layout", "tp3"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "layout tp3 uses 3 GPUs, which does not divide the node's 8");
  why = check_config(s, Config{"a", {{"flag", "true"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "a has no setting for knob flag (value true)");
  EXPECT_FALSE(check_config(s, Config{"b", {{"flag", "true"}, {"layout", "tp4-dp2"}}}));
  // Study-level rejection rules.
  std::string t = testing::kSmallStudy;
  t.replace(t.find("render.b = [{flags = [\"--tp-size\""), std::string("render.b = [").size(),
            "render.b = [{when = \"dp > 1\", reject = \"no dp here\"}, ");
  Study s2 = parse_study(t, "r.toml", "/d");
  why = check_config(s2, Config{"b", {{"layout", "tp4-dp2"}}});
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "b rejects layout=tp4-dp2: no dp here");
  // Layout arithmetic.
  std::string l = testing::kSmallStudy;
  l.replace(l.find("{tp = 3}"), 8, "{tp = 8, dp = 2}, {tp = 8, dp = 2, dp_attention = true}, {tp = 4, ep = 3}");
  Study s3 = parse_study(l, "l.toml", "/d");
  EXPECT_EQ(*check_config(s3, Config{"a", {{"layout", "tp8-dp2"}}}), "layout tp8-dp2 needs 16 GPUs, the node has 8");
  EXPECT_FALSE(check_config(s3, Config{"b", {{"layout", "tp8-dp2-dpattn"}}}));
  EXPECT_EQ(*check_config(s3, Config{"a", {{"layout", "tp4-ep3"}}}), "layout tp4-ep3: ep=3 does not divide the 4 GPUs used");
}

TEST(Space, ConditionsAndKeys) {
  EXPECT_TRUE(eval_condition("dp > 1", {{"dp", "2"}}));
  EXPECT_FALSE(eval_condition("dp > 1", {{"dp", "1"}}));
  EXPECT_TRUE(eval_condition("!flag", {{"flag", "false"}}));
  EXPECT_TRUE(eval_condition("engine == 'x'", {{"engine", "x"}}));
  EXPECT_THROW(eval_condition("nope", {{"dp", "1"}}), StudyError);
  Study s = small();
  Config c{"b", {{"ctx", "32768"}, {"layout", "tp8"}}};
  EXPECT_EQ(config_key(s, c), "b{ctx=32768}");
  EXPECT_EQ(config_label(s, normalize(s, c)), "ctx=32768");
  EXPECT_EQ(knobs_for_engine(s, "a"), (std::vector<std::string>{"layout", "ctx"}));
  EXPECT_EQ(enumerate_grid(s).size(), 3u * 2u + 3u * 2u * 2u);
}

}  // namespace
}  // namespace servelab::tune
