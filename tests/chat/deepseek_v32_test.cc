#include <gtest/gtest.h>

#include "servelab/chat/chat.h"

using namespace servelab::chat;

namespace {
const std::string B(kBos), E(kEos), U(kUser), A(kAssistant), D(kDsml);
}

TEST(DeepSeekV32Render, PlainPromptIsBosUserAssistantCloseThink) {
  // The benchmark case from the reference: BOS <｜User｜>{prompt}<｜Assistant｜></think>
  EXPECT_EQ(render_deepseek_v32({{"user", "Hello"}}), B + U + "Hello" + A + "</think>");
}

TEST(DeepSeekV32Render, ThinkingModeOpensThinkOnlyAfterLastUser) {
  RenderOptions o;
  o.thinking = true;
  Message a{"assistant", "4"};
  a.reasoning_content = "dropped because it is before the last user";
  const auto s = render_deepseek_v32({{"system", "S"}, {"user", "2+2?"}, a, {"user", "3+3?"}}, o);
  EXPECT_EQ(s, B + "S" + U + "2+2?" + A + "</think>" + "4" + E + U + "3+3?" + A + "<think>");
}

TEST(DeepSeekV32Render, AssistantReasoningKeptAfterLastUserInThinkingMode) {
  RenderOptions o;
  o.thinking = true;
  Message a{"assistant", "6"};
  a.reasoning_content = "3+3";
  EXPECT_EQ(render_deepseek_v32({{"user", "q"}, a}, o), B + U + "q" + A + "<think>" + "3+3</think>6" + E);
}

TEST(DeepSeekV32Render, ToolCallsAndResults) {
  Message a{"assistant", ""};
  a.tool_calls.push_back({"c0", "get_weather", R"({"city":"Paris","days":3})"});
  Message t{"tool", "sunny"};
  const auto s = render_deepseek_v32({{"user", "weather?"}, a, t}, {});
  const std::string expected =
      B + U + "weather?" + A + "</think>" + "\n\n<" + D + "function_calls>\n<" + D +
      "invoke name=\"get_weather\">\n<" + D + "parameter name=\"city\" string=\"true\">Paris</" + D +
      "parameter>\n<" + D + "parameter name=\"days\" string=\"false\">3</" + D + "parameter>\n</" + D +
      "invoke>\n</" + D + "function_calls>" + E +
      "\n\n<function_results>\n<result>sunny</result>\n</function_results>\n\n</think>";
  EXPECT_EQ(s, expected);
}

TEST(DeepSeekV32Render, BadRolesAreErrorsNamingTheMessage) {
  EXPECT_THROW(render_deepseek_v32({{"wizard", "x"}}), std::invalid_argument);
  try {
    render_deepseek_v32({{"user", "x"}, {"tool", "y"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("messages[1]"), std::string::npos);
  }
}

TEST(DeepSeekV32Parse, SplitsReasoningContentAndToolCalls) {
  const std::string text =
      "let me think</think>Calling."
      "\n\n<" +
      D + "function_calls>\n<" + D + "invoke name=\"f\">\n<" + D +
      "parameter name=\"a\" string=\"true\">x y</" + D + "parameter>\n<" + D +
      "parameter name=\"n\" string=\"false\">[1,2]</" + D + "parameter>\n</" + D + "invoke>\n</" + D +
      "function_calls>" + E + "junk";
  const auto p = parse_deepseek_v32(text, /*thinking=*/true);
  EXPECT_EQ(p.reasoning_content, "let me think");
  EXPECT_EQ(p.content, "Calling.");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].name, "f");
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"a":"x y","n":[1,2]})");
  EXPECT_TRUE(p.finished_with_eos);
}

TEST(DeepSeekV32Parse, RoundTripsRenderedToolCall) {
  Message a{"assistant", "ok"};
  a.tool_calls.push_back({"c0", "g", R"({"q":"v","k":true})"});
  const auto rendered = render_deepseek_v32({{"user", "u"}, a}, {});
  const auto gen = rendered.substr(rendered.find("</think>") + 8);
  const auto p = parse_deepseek_v32(gen, false);
  EXPECT_EQ(p.content, "ok");
  ASSERT_EQ(p.tool_calls.size(), 1u);
  EXPECT_EQ(p.tool_calls[0].arguments_json, R"({"q":"v","k":true})");
}

TEST(DeepSeekV32Parse, UnterminatedThinkingIsAllReasoning) {
  const auto p = parse_deepseek_v32("still thinking", true);
  EXPECT_EQ(p.reasoning_content, "still thinking");
  EXPECT_EQ(p.content, "");
  EXPECT_FALSE(p.finished_with_eos);
}

TEST(DeepSeekV32Parse, MalformedDsmlIsAnError) {
  EXPECT_THROW(parse_deepseek_v32("x\n\n<" + D + "function_calls>\n<" + D + "invoke name=\"f\">", false),
               std::invalid_argument);
  EXPECT_THROW(
      parse_deepseek_v32("x\n\n<" + D + "function_calls>\n<" + D + "invoke>\n</" + D + "invoke>", false),
      std::invalid_argument);
}
