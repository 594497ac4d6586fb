#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "simserve/openai_api.h"

using namespace servelab::simserve;
using nlohmann::json;

namespace {
const std::vector<std::string> kModels = {"deepseek-ai/DeepSeek-V3.2"};

ApiError error_of(const std::string& body, Endpoint ep = Endpoint::kCompletions) {
  auto r = parse_generation_request(body, ep, kModels);
  EXPECT_TRUE(std::holds_alternative<ApiError>(r)) << body;
  return std::holds_alternative<ApiError>(r) ? std::get<ApiError>(r) : ApiError{};
}
GenerationRequest ok(const std::string& body, Endpoint ep = Endpoint::kCompletions) {
  auto r = parse_generation_request(body, ep, kModels);
  if (auto* e = std::get_if<ApiError>(&r)) ADD_FAILURE() << e->message;
  return std::holds_alternative<GenerationRequest>(r) ? std::get<GenerationRequest>(r) : GenerationRequest{};
}
}  // namespace

TEST(OpenAiApi, CompletionsRequestAsVllmBenchSendsIt) {
  const auto r =
      ok(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"hi","max_tokens":7,"repetition_penalty":1.0,
    "logprobs":null,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true})");
  EXPECT_EQ(r.prompt, "hi");
  EXPECT_EQ(r.max_tokens, 7);
  EXPECT_TRUE(r.stream);
  EXPECT_TRUE(r.include_usage);
  EXPECT_TRUE(r.ignore_eos);
}

// One prompt as token ids (what bench serve --dataset-name timed_trace sends); batches are refused by name.
TEST(OpenAiApi, CompletionsPromptAsTokenIds) {
  const auto r = ok(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":[1,2,3,50256],"max_tokens":2})");
  ASSERT_TRUE(r.prompt_token_ids);
  EXPECT_EQ(*r.prompt_token_ids, (std::vector<std::int64_t>{1, 2, 3, 50256}));
  EXPECT_TRUE(r.prompt.empty());
  for (const char* bad : {R"([[1,2],[3]])", R"(["a","b"])", R"([1,-2])", R"([])", R"([1,"x"])"}) {
    const auto e = error_of(std::string(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":)") + bad + "}");
    EXPECT_EQ(e.status, 400) << bad;
    EXPECT_NE(e.message.find("batched prompts"), std::string::npos) << e.message;
  }
}

TEST(OpenAiApi, ChatRequestWithListContentAndThinking) {
  const auto r = ok(
      R"({"model":"deepseek-ai/DeepSeek-V3.2","messages":[{"role":"user","content":[{"type":"text","text":"a"},
    {"type":"text","text":"b"}]}],"max_completion_tokens":3,"max_tokens":99,"chat_template_kwargs":{"thinking":true}})",
      Endpoint::kChatCompletions);
  ASSERT_EQ(r.messages.size(), 1u);
  EXPECT_EQ(r.messages[0].content, "a\nb");
  EXPECT_EQ(r.max_tokens, 3);  // max_completion_tokens wins over the deprecated max_tokens
  EXPECT_EQ(r.thinking, std::optional<bool>(true));
  // Unsaid, it is the model's default (ServerOptions::thinking_default), not false.
  EXPECT_FALSE(ok(R"({"model":"deepseek-ai/DeepSeek-V3.2","messages":[{"role":"user","content":"a"}]})",
                  Endpoint::kChatCompletions)
                   .thinking.has_value());
}

// vLLM's `model` is optional: absent or null, the request goes to the first served model name; a model that
// is not a string is a validation error (422).
TEST(OpenAiApi, AbsentModelIsTheFirstServedOne) {
  EXPECT_EQ(ok(R"({"prompt":"hi","max_tokens":2})").model, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(ok(R"({"model":null,"prompt":"hi","max_tokens":2})").model, "deepseek-ai/DeepSeek-V3.2");
  const auto e = error_of(R"({"model":7,"prompt":"hi"})");
  EXPECT_EQ(e.status, 422);
  EXPECT_EQ(e.param, "model");
}

TEST(OpenAiApi, StatusCodesForBadRequests) {
  EXPECT_EQ(error_of("{not json").status, 400);
  EXPECT_EQ(error_of(R"({"model":"other","prompt":"x"})").status, 404);
  EXPECT_EQ(error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":5})").status, 422);
  EXPECT_EQ(error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x","max_tokens":"7"})").status, 422);
  EXPECT_EQ(error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x","max_tokens":0})").status, 400);
  EXPECT_EQ(
      error_of(
          R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x","stream_options":{"include_usage":true}})")
          .status,
      400);
  EXPECT_EQ(
      error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","messages":[]})", Endpoint::kChatCompletions).status,
      400);
  EXPECT_EQ(error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","messages":[{"role":"wizard","content":"x"}]})",
                     Endpoint::kChatCompletions)
                .status,
            400);
  const auto e =
      error_of(R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x","min_tokens":9,"max_tokens":2})");
  EXPECT_EQ(e.param, "min_tokens");
}

// vLLM's SamplingParams ranges (a 400 there): the twin samples nothing but answers as the engine would.
TEST(OpenAiApi, SamplingParametersOutOfVllmsRangesAre400) {
  const std::string head = R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x",)";
  const auto t = error_of(head + R"("temperature":-1})");
  EXPECT_EQ(t.status, 400);
  EXPECT_EQ(t.param, "temperature");
  EXPECT_EQ(t.message, "temperature must be non-negative, got -1.");
  EXPECT_EQ(error_of(head + R"("top_p":0})").param, "top_p");
  EXPECT_EQ(error_of(head + R"("top_p":1.5})").status, 400);
  EXPECT_EQ(error_of(head + R"("presence_penalty":2.5})").param, "presence_penalty");
  EXPECT_EQ(error_of(head + R"("frequency_penalty":-3})").param, "frequency_penalty");
  EXPECT_EQ(error_of(head + R"("repetition_penalty":0})").param, "repetition_penalty");
  EXPECT_EQ(error_of(head + R"("min_p":1.5})").param, "min_p");
  // The edges are allowed.
  ok(head + R"("temperature":0,"top_p":1,"presence_penalty":-2,"frequency_penalty":2,)"
            R"("repetition_penalty":1.1,"min_p":0})");
}

// stop, stop_token_ids, echo and logprobs are ignored by the twin but checked as vLLM checks them (new-user
// trial: "stop": 5 and "logprobs": 100 were answered 200, where vLLM answers 422 / 400).
TEST(OpenAiApi, IgnoredParametersAreCheckedAsVllmChecksThem) {
  const std::string head = R"({"model":"deepseek-ai/DeepSeek-V3.2","prompt":"x",)";
  const auto stop = error_of(head + R"("stop":5})");
  EXPECT_EQ(stop.status, 422);
  EXPECT_EQ(stop.param, "stop");
  EXPECT_EQ(stop.message, "stop must be a string or a list of strings, got number");
  EXPECT_EQ(error_of(head + R"("stop":["a",1]})").message, "stop[1] must be a string, got number");
  EXPECT_EQ(error_of(head + R"("stop_token_ids":[1,"x"]})").param, "stop_token_ids");
  EXPECT_EQ(error_of(head + R"("echo":"maybe"})").status, 422);
  const auto lp = error_of(head + R"("logprobs":100})");
  EXPECT_EQ(lp.status, 400);
  EXPECT_EQ(lp.param, "logprobs");
  EXPECT_EQ(lp.message, "Requested sample logprobs of 100, which is greater than max allowed: 20");
  EXPECT_EQ(error_of(head + R"("logprobs":-2})").message, "logprobs must be non-negative or -1, got -2.");
  // -1 is the whole vocabulary: refused at the default limit, allowed with --max-logprobs -1.
  RequestLimits vocab{20, 129280};
  auto r = parse_generation_request(head + R"("logprobs":-1})", Endpoint::kCompletions, kModels, vocab);
  ASSERT_TRUE(std::holds_alternative<ApiError>(r));
  EXPECT_EQ(std::get<ApiError>(r).message,
            "Requested sample logprobs of 129280, which is greater than max allowed: 20");
  EXPECT_TRUE(std::holds_alternative<GenerationRequest>(
      parse_generation_request(head + R"("logprobs":-1})", Endpoint::kCompletions, kModels, {-1, 129280})));
  EXPECT_TRUE(std::holds_alternative<GenerationRequest>(
      parse_generation_request(head + R"("logprobs":100})", Endpoint::kCompletions, kModels, {100, 0})));
  const std::string chat =
      R"({"model":"deepseek-ai/DeepSeek-V3.2","messages":[{"role":"user","content":"x"}],)";
  EXPECT_EQ(error_of(chat + R"("logprobs":true,"top_logprobs":21})", Endpoint::kChatCompletions).param,
            "top_logprobs");
  EXPECT_EQ(error_of(chat + R"("top_logprobs":5})", Endpoint::kChatCompletions).message,
            "when using `top_logprobs`, `logprobs` must be set to true.");
  EXPECT_EQ(error_of(chat + R"("logprobs":3})", Endpoint::kChatCompletions).status, 422);
  // What vLLM accepts (pydantic's lax mode included) is accepted.
  ok(head + R"("stop":"\n","stop_token_ids":[2],"echo":false,"logprobs":20})");
  ok(head + R"("stop":["a","b"],"logprobs":null,"stop_token_ids":null})");
  ok(head + R"("stop":[],"logprobs":0,"echo":"yes","stop_token_ids":[1.0,"2"]})");
  ok(chat + R"("logprobs":1,"top_logprobs":"5"})", Endpoint::kChatCompletions);
  ok(chat + R"("logprobs":false,"top_logprobs":0})", Endpoint::kChatCompletions);
}

TEST(OpenAiApi, ErrorJsonIsOpenAiShaped) {
  const auto j = json::parse(error_json({404, "NotFoundError", "The model `x` does not exist.", "model"}));
  EXPECT_EQ(j["error"]["code"], 404);
  EXPECT_EQ(j["error"]["type"], "NotFoundError");
  EXPECT_EQ(j["error"]["param"], "model");
  EXPECT_EQ(j["error"]["message"], "The model `x` does not exist.");
}

TEST(OpenAiApi, StreamChunksCarryChoicesAndUsage) {
  ResponseIdentity id{"chatcmpl-1", "m", 1700000000};
  StreamDelta role;
  role.role_only = true;
  auto c = stream_chunk(Endpoint::kChatCompletions, id, role);
  ASSERT_EQ(c.rfind("data: ", 0), 0u);
  ASSERT_EQ(c.substr(c.size() - 2), "\n\n");
  auto j = json::parse(c.substr(6));
  EXPECT_EQ(j["choices"][0]["delta"]["role"], "assistant");
  StreamDelta r;
  r.text = " x";
  r.reasoning = true;
  r.finish_reason = "length";
  j = json::parse(stream_chunk(Endpoint::kChatCompletions, id, r).substr(6));
  EXPECT_EQ(j["choices"][0]["delta"]["reasoning_content"], " x");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  j = json::parse(stream_usage_chunk(Endpoint::kCompletions, id, {10, 3}).substr(6));
  EXPECT_TRUE(j["choices"].empty());
  EXPECT_EQ(j["usage"]["total_tokens"], 13);
  EXPECT_EQ(stream_done(), "data: [DONE]\n\n");
}

TEST(OpenAiApi, ModelsListShowsRootAndContext) {
  auto j = json::parse(models_json({"a", "b"}, "deepseek-ai/DeepSeek-V3.2", 81920, 1));
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["id"], "b");
  EXPECT_EQ(j["data"][0]["root"], "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(j["data"][0]["max_model_len"], 81920);
}
