// servelab/simserve (private to the module; see simserve.h): the OpenAI-compatible surface of `servelab sim
// serve` — request validation and the JSON of responses and stream chunks, shaped as vLLM 0.13's OpenAI
// server writes them (vllm/entrypoints/openai/protocol.py, serving_completion.py, serving_chat.py). Pure
// functions: no I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "servelab/chat/chat.h"

namespace servelab::simserve {

/// An OpenAI-style error: HTTP status plus the `{"error": {...}}` body fields.
struct ApiError {
  int status = 400;     ///< 400 bad request, 404 not found, 405 method, 413 too large, 422 validation
  std::string type;     ///< "BadRequestError", "NotFoundError", ...
  std::string message;  ///< names the offending field and value
  std::string param;    ///< the field at fault (may be empty)
};

/// Serialises an ApiError as OpenAI's `{"error":{"message","type","param","code"}}` JSON.
std::string error_json(const ApiError& error);

/// Which endpoint a generation request came through.
enum class Endpoint { kCompletions, kChatCompletions };

/// A validated generation request. Token counts are not known yet (the server tokenizes).
struct GenerationRequest {
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;
  std::string prompt;  ///< completions: the prompt text
  /// completions: the prompt as token ids (`"prompt": [int, ...]`, as vLLM accepts it; what
  /// `bench serve --dataset-name timed_trace` sends); then `prompt` is empty and these are the prompt.
  std::optional<std::vector<std::int64_t>> prompt_token_ids;
  std::vector<chat::Message> messages;  ///< chat: the conversation
  /// chat_template_kwargs.thinking / enable_thinking; unset: the model's template default
  /// (ServerOptions::thinking_default).
  std::optional<bool> thinking;
  std::optional<int> max_tokens;  ///< max_tokens or max_completion_tokens (tokens)
  int min_tokens = 0;
  bool ignore_eos = false;
  bool stream = false;
  bool include_usage = false;  ///< stream_options.include_usage
  std::optional<std::uint64_t> seed;
  std::string request_id;  ///< x-request-id header, else generated
};

/// What a server accepts beyond the request's own schema.
struct RequestLimits {
  int max_logprobs = 20;  ///< vLLM --max-logprobs (default 20 [recalled: ModelConfig]); -1 = the vocabulary
  int vocab_size = 0;     ///< the model's vocab_size (what a logprobs of -1 asks for); 0 = unknown
};

/// Parses and validates a request body for `endpoint`. `served_models` are the names the server answers
/// to; `limits` what it accepts beyond the schema (logprobs). Returns the request or an ApiError: 400 for
/// malformed JSON and semantic errors, 422 for fields of the wrong type (FastAPI's validation status), 404
/// for an unknown model.
std::variant<GenerationRequest, ApiError> parse_generation_request(
    const std::string& body, Endpoint endpoint, const std::vector<std::string>& served_models,
    const RequestLimits& limits = {});

/// Body of GET /v1/models listing `served_models` (root = `root_model`, max_model_len in tokens). Each entry
/// also carries `"servelab": {"engine_twin": true, "time_scale": time_scale}` (the server runs time_scale
/// times faster than real time; clients multiply wall times by it to report engine time).
std::string models_json(const std::vector<std::string>& served_models, const std::string& root_model,
                        int max_model_len, std::int64_t created, double time_scale = 1.0);

/// Identity of one response: id ("cmpl-..."/"chatcmpl-..."), model and creation time (unix seconds).
struct ResponseIdentity {
  std::string id;
  std::string model;
  std::int64_t created = 0;
};

/// Token usage of one response (tokens).
struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

/// One streamed delta. For chat, `role_only` makes the first `{"role":"assistant","content":""}` chunk.
struct StreamDelta {
  std::string text;        ///< content text (or reasoning text when `reasoning`)
  bool reasoning = false;  ///< chat: send as delta.reasoning_content
  bool role_only = false;
  std::optional<std::string> finish_reason;  ///< "stop" or "length" on the last token
};

/// `data: {...}\n\n` for one stream chunk of `endpoint`.
std::string stream_chunk(Endpoint endpoint, const ResponseIdentity& id, const StreamDelta& delta);
/// `data: {...}\n\n` for the final choice-less usage chunk (stream_options.include_usage).
std::string stream_usage_chunk(Endpoint endpoint, const ResponseIdentity& id, const Usage& usage);
/// `data: [DONE]\n\n`.
std::string stream_done();

/// Non-streaming response body. `reasoning` is put in message.reasoning_content (chat) when non-empty.
std::string full_response(Endpoint endpoint, const ResponseIdentity& id, const std::string& text,
                          const std::string& reasoning, const std::string& finish_reason, const Usage& usage);

}  // namespace servelab::simserve
