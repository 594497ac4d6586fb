// OpenAI-compatible request validation and response JSON for `sim serve`. See openai_api.h.
#include "simserve/openai_api.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <tuple>

namespace servelab::simserve {
namespace {

using json = nlohmann::ordered_json;

// Serialises a response JSON. Text that is not valid UTF-8 (a client's bytes echoed in an error message or
// an id) is written with U+FFFD instead of throwing, so no request can make a writer fail.
std::string dump(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

ApiError bad_request(std::string message, std::string param = {}) {
  return {400, "BadRequestError", std::move(message), std::move(param)};
}
ApiError validation(std::string message, std::string param) {
  return {422, "ValidationError", std::move(message), std::move(param)};
}

const char* json_type_name(const json& v) {
  return v.type_name();
}

// Reads an optional integer field; a present value of another type is a 422.
std::optional<ApiError> read_int(const json& body, const char* key, std::optional<int>& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) {
    return validation(std::string(key) + " must be an integer, got " + json_type_name(*it), key);
  }
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > static_cast<std::uint64_t>(INT32_MAX)) {
    return bad_request(std::string(key) + " = " + it->dump() + " is out of range (at most 2147483647)", key);
  }
  const auto v = it->get<std::int64_t>();
  if (v < INT32_MIN || v > INT32_MAX) {
    return bad_request(std::string(key) + " = " + std::to_string(v) + " is out of range", key);
  }
  out = static_cast<int>(v);
  return std::nullopt;
}

std::optional<ApiError> read_bool(const json& body, const char* key, bool& out) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) {
    return validation(std::string(key) + " must be a boolean, got " + json_type_name(*it), key);
  }
  out = it->get<bool>();
  return std::nullopt;
}

// Chat content: a string, or a list of {"type":"text","text":...} parts (concatenated, as vLLM does
// for text-only parts with "\n" between them).
std::variant<std::string, ApiError> read_content(const json& v, std::size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "].content";
  if (v.is_null()) return std::string();
  if (v.is_string()) return v.get<std::string>();
  if (!v.is_array()) return validation(where + " must be a string or a list of parts", where);
  std::string text;
  for (std::size_t k = 0; k < v.size(); ++k) {
    const auto& part = v[k];
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return validation(where + "[" + std::to_string(k) + "] must be an object with a string \"type\"",
                        where);
    }
    const auto type = part["type"].get<std::string>();
    if (type != "text") {
      return bad_request(where + "[" + std::to_string(k) + "].type = \"" + type +
                             "\" is not supported by the engine twin (text only)",
                         where);
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return validation(where + "[" + std::to_string(k) + "].text must be a string", where);
    }
    if (!text.empty()) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

}  // namespace

std::string error_json(const ApiError& e) {
  json err = {{"message", e.message},
              {"type", e.type},
              {"param", e.param.empty() ? json(nullptr) : json(e.param)},
              {"code", e.status}};
  return dump(json{{"error", err}});
}

namespace {

// The completions prompt: one string, a one-string list, or one list of non-negative token ids. Batched
// prompts are a 400 (the twin answers one choice per request); any other type a 422.
std::optional<ApiError> read_completions_prompt(const json& body, GenerationRequest& r) {
  auto it = body.find("prompt");
  if (it == body.end()) return validation("prompt is required", "prompt");
  if (it->is_string()) {
    r.prompt = it->get<std::string>();
  } else if (it->is_array() && it->size() == 1 && (*it)[0].is_string()) {
    r.prompt = (*it)[0].get<std::string>();
  } else if (it->is_array() && !it->empty() && std::all_of(it->begin(), it->end(), [](const json& t) {
               return t.is_number_integer() && t.get<std::int64_t>() >= 0;
             })) {
    r.prompt_token_ids = it->get<std::vector<std::int64_t>>();  // one prompt as token ids
  } else if (it->is_array()) {
    return bad_request(
        "prompt: batched prompts (a list of strings or of token-id lists) are not supported by "
        "the engine twin; send one string or one list of non-negative token ids",
        "prompt");
  } else {
    return validation(std::string("prompt must be a string, got ") + json_type_name(*it), "prompt");
  }
  return std::nullopt;
}

// An assistant message's `tool_calls` (OpenAI's schema: id, function.name and function.arguments, a JSON
// text, are strings), appended to `msg`. `where` names the message in errors ("messages[i]").
std::optional<ApiError> read_tool_calls(const json& calls, const std::string& where, chat::Message& msg) {
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const auto& tc = calls[k];
    const std::string at = where + ".tool_calls[" + std::to_string(k) + "]";
    if (!tc.is_object() || !tc.contains("function") || !tc["function"].is_object()) {
      return validation(at + " must have a function object", at);
    }
    const auto& f = tc["function"];
    for (const auto& [obj, key, name] : {std::tuple{&tc, "id", "id"}, std::tuple{&f, "name", "function.name"},
                                         std::tuple{&f, "arguments", "function.arguments"}}) {
      if (auto v = obj->find(key); v != obj->end() && !v->is_null() && !v->is_string()) {
        return validation(at + "." + name + " must be a string, got " + json_type_name(*v), at + "." + name);
      }
    }
    chat::ToolCall call;
    if (auto v = tc.find("id"); v != tc.end() && v->is_string()) call.id = v->get<std::string>();
    if (auto v = f.find("name"); v != f.end() && v->is_string()) call.name = v->get<std::string>();
    call.arguments_json = "{}";
    if (auto v = f.find("arguments"); v != f.end() && v->is_string())
      call.arguments_json = v->get<std::string>();
    msg.tool_calls.push_back(std::move(call));
  }
  return std::nullopt;
}

// One chat message `messages[index]`: role (system, user, assistant, tool, developer), content,
// reasoning_content, tool_calls and tool_call_id.
std::variant<chat::Message, ApiError> read_message(const json& m, std::size_t index) {
  const std::string where = "messages[" + std::to_string(index) + "]";
  if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) {
    return validation(where + " must be an object with a string role", where);
  }
  chat::Message msg;
  msg.role = m["role"].get<std::string>();
  if (msg.role != "system" && msg.role != "user" && msg.role != "assistant" && msg.role != "tool" &&
      msg.role != "developer") {
    return bad_request(where + ".role = \"" + msg.role + "\" is not a valid role", where + ".role");
  }
  auto content = read_content(m.contains("content") ? m["content"] : json(nullptr), index);
  if (auto* err = std::get_if<ApiError>(&content)) return *err;
  msg.content = std::get<std::string>(content);
  if (m.contains("reasoning_content") && m["reasoning_content"].is_string()) {
    msg.reasoning_content = m["reasoning_content"].get<std::string>();
  }
  if (m.contains("tool_calls") && m["tool_calls"].is_array()) {
    if (auto err = read_tool_calls(m["tool_calls"], where, msg)) return *err;
  }
  if (m.contains("tool_call_id") && m["tool_call_id"].is_string()) {
    msg.tool_call_id = m["tool_call_id"].get<std::string>();
  }
  return msg;
}

// The chat conversation (a non-empty list of messages) and chat_template_kwargs.thinking /
// enable_thinking (the later key wins).
std::optional<ApiError> read_chat_messages(const json& body, GenerationRequest& r) {
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array()) return validation("messages must be a list", "messages");
  if (it->empty()) return bad_request("messages must not be empty", "messages");
  for (std::size_t i = 0; i < it->size(); ++i) {
    auto msg = read_message((*it)[i], i);
    if (auto* err = std::get_if<ApiError>(&msg)) return *err;
    r.messages.push_back(std::move(std::get<chat::Message>(msg)));
  }
  if (auto kw = body.find("chat_template_kwargs"); kw != body.end() && kw->is_object()) {
    for (const char* key : {"thinking", "enable_thinking"}) {
      if (kw->contains(key) && (*kw)[key].is_boolean()) r.thinking = (*kw)[key].get<bool>();
    }
  }
  return std::nullopt;
}

// Output length (tokens): max_completion_tokens over max_tokens, at least 1; min_tokens in [0, max_tokens];
// n must be 1.
std::optional<ApiError> read_output_length(const json& body, GenerationRequest& r) {
  std::optional<int> max_tokens, max_completion_tokens, min_tokens, n;
  if (auto e = read_int(body, "max_tokens", max_tokens)) return *e;
  if (auto e = read_int(body, "max_completion_tokens", max_completion_tokens)) return *e;
  if (auto e = read_int(body, "min_tokens", min_tokens)) return *e;
  if (auto e = read_int(body, "n", n)) return *e;
  r.max_tokens = max_completion_tokens ? max_completion_tokens : max_tokens;
  if (r.max_tokens && *r.max_tokens < 1) {
    return bad_request("max_tokens must be at least 1, got " + std::to_string(*r.max_tokens) + ".",
                       max_completion_tokens ? "max_completion_tokens" : "max_tokens");
  }
  r.min_tokens = min_tokens.value_or(0);
  if (r.min_tokens < 0) return bad_request("min_tokens must be greater than or equal to 0", "min_tokens");
  if (r.max_tokens && r.min_tokens > *r.max_tokens) {
    return bad_request("min_tokens must be less than or equal to max_tokens=" +
                           std::to_string(*r.max_tokens) + ", got " + std::to_string(r.min_tokens) + ".",
                       "min_tokens");
  }
  if (n && *n != 1)
    return bad_request("n = " + std::to_string(*n) + ": the engine twin generates one choice", "n");
  return std::nullopt;
}

// The ranges vLLM's SamplingParams._verify_args enforces, with its messages [recalled:
// vllm/sampling_params.py]: a request outside them is a 400 there, so it is one here, though the twin samples
// nothing.
std::optional<ApiError> check_sampling_ranges(const json& body) {
  auto number = [&](const char* key) -> std::optional<double> {
    const auto it = body.find(key);
    if (it == body.end() || !it->is_number()) return std::nullopt;
    return it->get<double>();
  };
  auto fail = [](const char* key, const std::string& rule, double v) {
    return bad_request(fmt::format("{} must be {}, got {}.", key, rule, v), key);
  };
  if (auto t = number("temperature"); t && !(*t >= 0)) return fail("temperature", "non-negative", *t);
  if (auto p = number("top_p"); p && !(*p > 0 && *p <= 1)) return fail("top_p", "in (0, 1]", *p);
  for (const char* key : {"presence_penalty", "frequency_penalty"})
    if (auto v = number(key); v && !(*v >= -2 && *v <= 2)) return fail(key, "in [-2, 2]", *v);
  if (auto r = number("repetition_penalty"); r && !(*r > 0))
    return fail("repetition_penalty", "greater than zero", *r);
  if (auto m = number("min_p"); m && !(*m >= 0 && *m <= 1)) return fail("min_p", "in [0, 1]", *m);
  return std::nullopt;
}

// ignore_eos, stream, stream_options.include_usage (only with stream), seed, and the type of the sampling
// parameters the twin accepts but does not use (temperature, top_p, penalties, min_p: numbers).
std::optional<ApiError> read_sampling_options(const json& body, GenerationRequest& r) {
  if (auto e = read_bool(body, "ignore_eos", r.ignore_eos)) return *e;
  if (auto e = read_bool(body, "stream", r.stream)) return *e;
  if (auto so = body.find("stream_options"); so != body.end() && !so->is_null()) {
    if (!so->is_object()) return validation("stream_options must be an object", "stream_options");
    if (auto e = read_bool(*so, "include_usage", r.include_usage)) return *e;
    if (!r.stream)
      return bad_request("Stream options can only be defined when `stream=True`.", "stream_options");
  }
  if (auto s = body.find("seed"); s != body.end() && !s->is_null()) {
    if (!s->is_number_integer()) return validation("seed must be an integer", "seed");
    r.seed = s->is_number_unsigned() ? s->get<std::uint64_t>()
                                     : static_cast<std::uint64_t>(s->get<std::int64_t>());
  }
  for (const char* key :
       {"temperature", "top_p", "frequency_penalty", "presence_penalty", "repetition_penalty", "min_p"}) {
    if (auto it = body.find(key); it != body.end() && !it->is_null() && !it->is_number()) {
      return validation(std::string(key) + " must be a number", key);
    }
  }
  return check_sampling_ranges(body);
}

// pydantic's lax mode, as vLLM's request models read a field [recalled: pydantic v2 conversion table]: a
// boolean is true/false, 0/1 or one of its strings; an integer an integer, a float with no fraction or a
// string of an integer. Anything else is a validation error.
std::optional<bool> lax_bool(const json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<std::int64_t>() == 0 || v.get<std::int64_t>() == 1))
    return v.get<std::int64_t>() == 1;
  if (!v.is_string()) return std::nullopt;
  std::string t = v.get<std::string>();
  for (char& c : t) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (const char* yes : {"1", "on", "t", "true", "y", "yes"})
    if (t == yes) return true;
  for (const char* no : {"0", "off", "f", "false", "n", "no"})
    if (t == no) return false;
  return std::nullopt;
}
std::optional<std::int64_t> lax_int(const json& v) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9e15) return static_cast<std::int64_t>(d);
    return std::nullopt;
  }
  if (v.is_string()) {
    const std::string t = v.get<std::string>();
    std::int64_t out = 0;
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
    if (ec == std::errc() && end == t.data() + t.size() && !t.empty()) return out;
  }
  return std::nullopt;
}

// The parameters the twin checks as vLLM does and then ignores (its text is synthetic): stop (a string or a
// list of strings), stop_token_ids (a list of integers), echo (completions: a boolean), logprobs
// (completions: an integer; chat: a boolean, with top_logprobs an integer that needs logprobs true). A count
// of -1 means the whole vocabulary; above the server's limit (vLLM --max-logprobs, default 20; -1: the
// vocabulary) it is vLLM's "Requested sample logprobs of N, which is greater than max allowed: M" [recalled:
// vllm/entrypoints/ openai/protocol.py validators, vllm/v1/engine/processor.py _validate_logprobs].
std::optional<ApiError> read_ignored_options(const json& body, Endpoint endpoint,
                                             const RequestLimits& limits) {
  auto present = [&](const char* key) {
    const auto it = body.find(key);
    return it != body.end() && !it->is_null() ? &*it : nullptr;
  };
  if (const json* stop = present("stop"); stop && !stop->is_string()) {
    if (!stop->is_array())
      return validation(
          std::string("stop must be a string or a list of strings, got ") + json_type_name(*stop), "stop");
    for (std::size_t i = 0; i < stop->size(); ++i)
      if (!(*stop)[i].is_string())
        return validation(fmt::format("stop[{}] must be a string, got {}", i, json_type_name((*stop)[i])),
                          "stop");
  }
  if (const json* ids = present("stop_token_ids")) {
    if (!ids->is_array())
      return validation(std::string("stop_token_ids must be a list of integers, got ") + json_type_name(*ids),
                        "stop_token_ids");
    for (std::size_t i = 0; i < ids->size(); ++i)
      if (!lax_int((*ids)[i]))
        return validation(fmt::format("stop_token_ids[{}] must be an integer, got {}", i, (*ids)[i].dump()),
                          "stop_token_ids");
  }
  const bool completions = endpoint == Endpoint::kCompletions;
  if (const json* echo = present("echo"); completions && echo && !lax_bool(*echo))
    return validation("echo must be a boolean, got " + echo->dump(), "echo");
  bool chat_logprobs = false;  // chat: logprobs is a boolean that top_logprobs needs true
  if (const json* lp = present("logprobs"); lp && !completions) {
    const auto on = lax_bool(*lp);
    if (!on) return validation("logprobs must be a boolean, got " + lp->dump(), "logprobs");
    chat_logprobs = *on;
  }
  std::optional<std::int64_t> count;
  const char* key = completions ? "logprobs" : "top_logprobs";
  if (const json* n = present(key)) {
    if (!(count = lax_int(*n)))
      return validation(fmt::format("{} must be an integer, got {}", key, n->dump()), key);
  }
  if (!count) return std::nullopt;
  if (*count < -1)
    return bad_request(fmt::format("{} must be non-negative or -1, got {}.", key, *count), key);
  if (!completions && *count != 0 && !chat_logprobs)
    return bad_request("when using `top_logprobs`, `logprobs` must be set to true.", key);
  const std::int64_t vocab = limits.vocab_size > 0 ? limits.vocab_size : INT32_MAX;
  const std::int64_t asked = *count == -1 ? vocab : *count;
  const std::int64_t allowed = limits.max_logprobs == -1 ? vocab : limits.max_logprobs;
  if (asked > allowed)
    return bad_request(
        fmt::format("Requested sample logprobs of {}, which is greater than max allowed: {}", asked, allowed),
        key);
  return std::nullopt;
}

}  // namespace

std::variant<GenerationRequest, ApiError> parse_generation_request(
    const std::string& body_text, Endpoint endpoint, const std::vector<std::string>& served_models,
    const RequestLimits& limits) {
  json body;
  try {
    body = json::parse(body_text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers such as 1e400
    return bad_request(std::string("request body is not valid JSON: ") + e.what());
  }
  if (!body.is_object()) return bad_request("request body must be a JSON object");

  GenerationRequest r;
  r.endpoint = endpoint;
  // vLLM: `model` is optional (None or absent: the first served model name, serving_engine _check_model).
  if (!body.contains("model") || body["model"].is_null()) {
    if (served_models.empty()) return validation("model is required: the server names no model", "model");
    body["model"] = served_models.front();
  }
  if (!body["model"].is_string()) return validation("model must be a string", "model");
  r.model = body["model"].get<std::string>();
  bool known = false;
  for (const auto& m : served_models) known = known || m == r.model;
  if (!known) return ApiError{404, "NotFoundError", "The model `" + r.model + "` does not exist.", "model"};

  auto prompt_error =
      endpoint == Endpoint::kCompletions ? read_completions_prompt(body, r) : read_chat_messages(body, r);
  if (prompt_error) return *prompt_error;
  if (auto e = read_output_length(body, r)) return *e;
  if (auto e = read_sampling_options(body, r)) return *e;
  if (auto e = read_ignored_options(body, endpoint, limits)) return *e;
  return r;
}
std::string models_json(const std::vector<std::string>& served_models, const std::string& root_model,
                        int max_model_len, std::int64_t created, double time_scale) {
  json data = json::array();
  for (const auto& m : served_models) {
    data.push_back({{"id", m},
                    {"object", "model"},
                    {"created", created},
                    {"owned_by", "servelab-twin"},
                    {"root", root_model},
                    {"parent", nullptr},
                    {"max_model_len", max_model_len},
                    {"servelab", {{"engine_twin", true}, {"time_scale", time_scale}}}});
  }
  return dump(json{{"object", "list"}, {"data", data}});
}

std::string stream_chunk(Endpoint endpoint, const ResponseIdentity& id, const StreamDelta& d) {
  json choice;
  const json finish = d.finish_reason ? json(*d.finish_reason) : json(nullptr);
  json chunk;
  if (endpoint == Endpoint::kCompletions) {
    choice = {{"index", 0},
              {"text", d.text},
              {"logprobs", nullptr},
              {"finish_reason", finish},
              {"stop_reason", nullptr}};
    chunk = {{"id", id.id},
             {"object", "text_completion"},
             {"created", id.created},
             {"model", id.model},
             {"choices", json::array({choice})}};
  } else {
    json delta = json::object();
    if (d.role_only) {
      delta = {{"role", "assistant"}, {"content", ""}};
    } else if (d.reasoning) {
      delta = {{"reasoning_content", d.text}};
    } else {
      delta = {{"content", d.text}};
    }
    choice = {{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish}};
    chunk = {{"id", id.id},
             {"object", "chat.completion.chunk"},
             {"created", id.created},
             {"model", id.model},
             {"choices", json::array({choice})}};
  }
  return "data: " + dump(chunk) + "\n\n";
}

std::string stream_usage_chunk(Endpoint endpoint, const ResponseIdentity& id, const Usage& u) {
  json chunk = {{"id", id.id},
                {"object", endpoint == Endpoint::kCompletions ? "text_completion" : "chat.completion.chunk"},
                {"created", id.created},
                {"model", id.model},
                {"choices", json::array()},
                {"usage",
                 {{"prompt_tokens", u.prompt_tokens},
                  {"total_tokens", u.prompt_tokens + u.completion_tokens},
                  {"completion_tokens", u.completion_tokens}}}};
  return "data: " + dump(chunk) + "\n\n";
}

std::string stream_done() {
  return "data: [DONE]\n\n";
}

std::string full_response(Endpoint endpoint, const ResponseIdentity& id, const std::string& text,
                          const std::string& reasoning, const std::string& finish_reason, const Usage& u) {
  const json usage = {{"prompt_tokens", u.prompt_tokens},
                      {"total_tokens", u.prompt_tokens + u.completion_tokens},
                      {"completion_tokens", u.completion_tokens}};
  json body;
  if (endpoint == Endpoint::kCompletions) {
    json choice = {{"index", 0},
                   {"text", text},
                   {"logprobs", nullptr},
                   {"finish_reason", finish_reason},
                   {"stop_reason", nullptr}};
    body = {{"id", id.id},       {"object", "text_completion"},      {"created", id.created},
            {"model", id.model}, {"choices", json::array({choice})}, {"usage", usage}};
  } else {
    json message = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty()) message["reasoning_content"] = reasoning;
    message["tool_calls"] = json::array();
    json choice = {
        {"index", 0}, {"message", message}, {"logprobs", nullptr}, {"finish_reason", finish_reason}};
    body = {{"id", id.id},       {"object", "chat.completion"},      {"created", id.created},
            {"model", id.model}, {"choices", json::array({choice})}, {"usage", usage}};
  }
  return dump(body);
}

}  // namespace servelab::simserve
