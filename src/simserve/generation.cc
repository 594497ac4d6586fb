// Generation requests of `sim serve`: admitting one into the twin (validation, prompt tokens, context
// limit, output length, identity) and writing each output token the twin emits, streamed as an SSE chunk
// or accumulated into one response. See server_impl.h.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <exception>
#include <string>

#include "servelab/chat/chat.h"
#include "servelab/common/hash.h"
#include "simserve/http_session.h"
#include "simserve/server_impl.h"

namespace servelab::simserve {
namespace {

using common::splitmix64;

std::string hex_id(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = digits[v & 15];
  return s;
}

}  // namespace

std::optional<ApiError> Server::Impl::generate(const std::shared_ptr<Session>& s, Endpoint ep,
                                               const std::string& body, const std::string& request_id,
                                               double received_s) {
  auto parsed =
      parse_generation_request(body, ep, options.served_models, {options.max_logprobs, options.vocab_size});
  if (auto* err = std::get_if<ApiError>(&parsed)) return *err;
  auto& req = std::get<GenerationRequest>(parsed);

  int prompt_tokens = 0;
  if (ep == Endpoint::kCompletions && req.prompt_token_ids) {
    // vLLM's "Token id {id} is out of vocabulary" (token_id_bound). The list is never empty
    // (read_completions_prompt).
    const std::int64_t top = *std::max_element(req.prompt_token_ids->begin(), req.prompt_token_ids->end());
    if (top >= token_id_bound)
      return ApiError{400, "BadRequestError", "Token id " + std::to_string(top) + " is out of vocabulary",
                      ""};
    prompt_tokens = static_cast<int>(req.prompt_token_ids->size());  // token ids: the prompt as sent
  } else if (ep == Endpoint::kCompletions) {
    prompt_tokens = static_cast<int>(tok.encode(req.prompt, true).size());
  } else {
    chat::RenderOptions ro;
    // The prompt is counted in DeepSeek-V3.2's encoding, whose thinking mode is the request's own (the
    // model's template default decides only whether reasoning is streamed, below).
    ro.thinking = req.thinking.value_or(false);
    ro.add_bos = options.chat_bos;
    std::string prompt;
    try {
      prompt = chat::render_deepseek_v32(req.messages, ro);
    } catch (const std::exception& e) {
      return ApiError{400, "BadRequestError", e.what(), "messages"};
    }
    prompt_tokens = static_cast<int>(tok.encode(prompt, false).size());
  }
  // vLLM's input processor refuses a prompt of no tokens ("The decoder prompt cannot be empty"
  // [recalled], a 400); the twin would otherwise fail the request inside the engine.
  if (prompt_tokens < 1)
    return ApiError{400, "BadRequestError", "The decoder prompt cannot be empty",
                    ep == Endpoint::kCompletions ? "prompt" : "messages"};
  const int room = options.max_model_len - prompt_tokens;
  if (room < 1 || (req.max_tokens && *req.max_tokens > room)) {
    const std::int64_t asked = std::int64_t{prompt_tokens} + req.max_tokens.value_or(0);  // 2^31 - 1 + prompt
    return ApiError{400, "BadRequestError",
                    "This model's maximum context length is " + std::to_string(options.max_model_len) +
                        " tokens. However, you requested " + std::to_string(asked) + " tokens (" +
                        std::to_string(prompt_tokens) + " in the messages, " +
                        std::to_string(req.max_tokens.value_or(0)) +
                        " in the completion). Please reduce the length of the messages or completion.",
                    ep == Endpoint::kCompletions ? "prompt" : "messages"};
  }
  // Output length: the request's budget (the twin has no model to emit EOS earlier; see docs), else the
  // server default, else up to the end of the context; never below min_tokens.
  int output_tokens = req.max_tokens.value_or(
      options.default_max_tokens > 0 ? std::min(options.default_max_tokens, room) : room);
  output_tokens = std::max(output_tokens, std::min(req.min_tokens, room));
  // The engine's own verdict (SGLang bounds one request by its rank's KV pool: a refusal, or fewer tokens).
  if (timeline.admit) {
    const Admission verdict = timeline.admit(prompt_tokens, output_tokens);
    if (verdict.refusal)
      return ApiError{400, "BadRequestError", *verdict.refusal,
                      ep == Endpoint::kCompletions ? "prompt" : "messages"};
    output_tokens = verdict.output_tokens;
  }

  const std::uint64_t id = next_id++;
  Active a;
  a.session = s;
  a.identity.id = std::string(ep == Endpoint::kCompletions ? "cmpl-" : "chatcmpl-") +
                  (request_id.empty() ? hex_id(splitmix64(id_salt ^ id)) : request_id);
  a.identity.model = req.model;
  a.identity.created = static_cast<std::int64_t>(std::time(nullptr));
  a.usage = {prompt_tokens, output_tokens};
  if (options.reasoning_parser && ep == Endpoint::kChatCompletions &&
      req.thinking.value_or(options.thinking_default)) {
    a.reasoning_tokens = static_cast<int>(std::floor(options.reasoning_fraction * output_tokens));
  }
  a.draw_seed = req.seed ? splitmix64(*req.seed) : splitmix64(options.seed * 0x100000001B3ull + id);
  a.request = std::move(req);
  const bool stream = a.request.stream;
  // The twin first: if it throws, nothing was registered and the request gets a 500.
  timeline.submit(id, prompt_tokens, output_tokens, received_s);
  active.emplace(id, std::move(a));
  stat_in_flight = active.size();
  s->track(id);
  if (stream) s->begin_stream();
  schedule();
  return std::nullopt;
}

void Server::Impl::emit(std::uint64_t id, int index) {
  auto it = active.find(id);
  if (it == active.end()) return;
  auto s = it->second.session.lock();
  if (!s || s->dropped()) {
    erase_active(it);
    timeline.cancel(id);
    return;
  }
  try {
    emit_token(it->second, *s, id, index);
  } catch (const std::exception& e) {
    // A response that cannot be written ends its own connection, never the server.
    ++stat_handler_errors;
    std::fprintf(stderr, "sim serve: request %llu dropped: %s\n", static_cast<unsigned long long>(id),
                 e.what());
    if (auto again = active.find(id); again != active.end()) erase_active(again);
    s->drop();
  }
}

void Server::Impl::emit_token(Active& a, Session& s, std::uint64_t id, int index) {
  if (index < 0) {  // the engine aborted the request (it needs more KV than one rank holds)
    const ApiError err{500, "InternalServerError",
                       "the engine aborted the request: it needs more KV cache than one rank holds", ""};
    const bool stream = a.request.stream;
    erase_active(active.find(id));
    if (stream) {
      s.stream_event("data: " + error_json(err) + "\n\n");
      s.stream_event(stream_done());
      s.end_stream(id);
    } else {
      s.respond_error(err);
      s.finish(id);
    }
    return;
  }
  const tokenizer::TokenId token =
      words.empty() ? 0 : words[splitmix64(a.draw_seed + static_cast<std::uint64_t>(index)) % words.size()];
  const tokenizer::TokenId one[1] = {token};
  const std::string piece = tok.decode(one, true);
  const bool reasoning = index < a.reasoning_tokens;
  const bool last = index + 1 >= a.usage.completion_tokens;
  const Endpoint ep = a.request.endpoint;
  if (a.request.stream) {
    if (index == 0 && ep == Endpoint::kChatCompletions) {
      StreamDelta role;
      role.role_only = true;
      s.stream_event(stream_chunk(ep, a.identity, role));
    }
    StreamDelta d;
    d.text = piece;
    d.reasoning = reasoning;
    if (last) d.finish_reason = a.finish_reason;
    s.stream_event(stream_chunk(ep, a.identity, d));
    if (last) {
      if (a.request.include_usage) s.stream_event(stream_usage_chunk(ep, a.identity, a.usage));
      s.stream_event(stream_done());
      erase_active(active.find(id));
      s.end_stream(id);
    }
  } else {
    (reasoning ? a.reasoning : a.text) += piece;
    if (last) {
      std::string body = full_response(ep, a.identity, a.text, a.reasoning, a.finish_reason, a.usage);
      erase_active(active.find(id));
      s.respond(200, "application/json", std::move(body));
      s.finish(id);
    }
  }
}

}  // namespace servelab::simserve
