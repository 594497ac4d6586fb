// vLLM's SSE timing rules (endpoint_request_func.py, 0.13) on simdjson's On-Demand parser.
#include "client/sse.h"

#include <simdjson.h>

#include <algorithm>
#include <limits>
#include <optional>

namespace servelab::client::detail {
namespace {

namespace od = simdjson::ondemand;
using metrics::FailureKind;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

std::string excerpt(const char* data, std::size_t size) {
  std::string s(data, std::min<std::size_t>(size, 200));
  if (size > 200) s += "...";
  return s;
}

// Whether `v` is JSON null, as an error code: simdjson_result<bool>'s conversion to bool throws on a
// malformed value (`"content":nde`), and an exception on an I/O thread would end the whole run.
simdjson::error_code null_value(od::value& v, bool& null) {
  return v.is_null().get(null);
}

// What one `usage` object holds.
struct Usage {
  int prompt_tokens = -1;
  int completion_tokens = -1;
  int reasoning_tokens = -1;
  std::optional<std::int64_t>
      rejected;  // a count outside [0, 2^31 - 1]: never truncated into a plausible one
};

// Reads a token count that may be null/absent; -1 when not a number, and -1 with `u.rejected` set when it
// does not fit a token count (negative, or 2^40 that int truncation would turn into 0).
int to_int(od::value v, Usage& u) {
  std::int64_t i;
  if (v.get_int64().get(i) != simdjson::SUCCESS) {
    std::uint64_t big;
    if (v.get_uint64().get(big) == simdjson::SUCCESS) u.rejected = std::numeric_limits<std::int64_t>::max();
    return -1;
  }
  if (i < 0 || i > std::numeric_limits<std::int32_t>::max()) {
    u.rejected = i;
    return -1;
  }
  return static_cast<int>(i);
}

simdjson::error_code read_usage(od::value v, Usage& u) {
  bool null = false;
  if (auto e = null_value(v, null)) return e;
  if (null) return simdjson::SUCCESS;
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    od::value val;
    if (auto e = field.value().get(val)) return e;
    if (key == "prompt_tokens") {
      u.prompt_tokens = to_int(val, u);
    } else if (key == "completion_tokens") {
      u.completion_tokens = to_int(val, u);
    } else if (key == "completion_tokens_details") {
      od::object details;
      if (val.get_object().get(details) == simdjson::SUCCESS) {
        for (auto d : details) {
          std::string_view dk;
          if (d.unescaped_key().get(dk)) break;
          if (dk == "reasoning_tokens") {
            od::value dv;
            if (d.value().get(dv) == simdjson::SUCCESS) u.reasoning_tokens = to_int(dv, u);
          }
        }
      }
    }
  }
  return simdjson::SUCCESS;
}

// The parts of choices[0] vLLM reads.
struct Choice {
  std::string_view text;       // completions text / chat delta.content
  std::string_view reasoning;  // chat delta.reasoning_content or delta.reasoning
};

simdjson::error_code read_string_or_null(od::value v, std::string_view& out) {
  bool null = false;
  if (auto e = null_value(v, null)) return e;
  if (null) return simdjson::SUCCESS;
  return v.get_string().get(out);
}

simdjson::error_code read_choice(od::value v, Endpoint endpoint, Choice& c) {
  od::object obj;
  if (auto e = v.get_object().get(obj)) return e;
  for (auto field : obj) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    if (endpoint == Endpoint::kCompletions && key == "text") {
      od::value tv;
      if (auto e = field.value().get(tv)) return e;
      if (auto e = read_string_or_null(tv, c.text)) return e;
    } else if (key == "delta") {
      od::object delta;
      if (field.value().get_object().get(delta) != simdjson::SUCCESS) continue;
      for (auto df : delta) {
        std::string_view dk;
        if (auto e = df.unescaped_key().get(dk)) return e;
        if (dk == "content" && endpoint == Endpoint::kChatCompletions) {
          od::value dv;
          if (auto e = df.value().get(dv)) return e;
          if (auto e = read_string_or_null(dv, c.text)) return e;
        } else if (dk == "reasoning_content" || dk == "reasoning") {
          od::value dv;
          if (auto e = df.value().get(dv)) return e;
          std::string_view r;
          if (auto e = read_string_or_null(dv, r)) return e;
          if (!r.empty()) c.reasoning = r;
        }
      }
    }
  }
  return simdjson::SUCCESS;
}

}  // namespace

void fail(StreamState& state, metrics::FailureKind kind, std::string message) {
  if (state.failed) return;
  state.failed = true;
  state.out->success = false;
  state.out->failure = kind;
  state.out->error = std::move(message);
}

namespace {

// One chunk's fields as vLLM reads them: choices[0], usage and a server's error object.
struct Chunk {
  bool has_choices = false;  // a non-null, non-empty "choices" array
  Choice choice;             // of choices[0]
  Usage usage;
  bool has_usage = false;     // "usage" carries completion or prompt tokens
  bool has_error = false;     // an "error" field: the fields after it are not read
  std::string error_message;  // its "message" string, empty when absent
};

// An "error" value's message: error.message when it is an object with a string message, else empty.
std::string server_error_message(od::value& val) {
  std::string message;
  od::object err;
  if (val.get_object().get(err) == simdjson::SUCCESS) {
    for (auto ef : err) {
      std::string_view ek;
      if (ef.unescaped_key().get(ek)) break;
      if (ek == "message") {
        std::string_view m;
        if (ef.value().get_string().get(m) == simdjson::SUCCESS) message.assign(m);
      }
    }
  }
  return message;
}

// Reads the fields of one chunk's root object into `chunk` (a usage object's rejected fields go to the
// request's output at once). Returns the first JSON error; stops at an "error" field.
simdjson::error_code read_chunk(od::object& root, StreamState& state, Chunk& chunk) {
  for (auto field : root) {
    std::string_view key;
    if (auto e = field.unescaped_key().get(key)) return e;
    od::value val;
    if (auto e = field.value().get(val)) return e;
    if (key == "choices") {
      bool null = false;
      if (auto e = null_value(val, null)) return e;
      if (null) continue;
      od::array arr;
      if (auto e = val.get_array().get(arr)) return e;
      bool first = true;
      for (auto elem : arr) {
        od::value ev;
        if (auto e = elem.get(ev)) return e;
        if (first) {
          if (auto e = read_choice(ev, state.endpoint, chunk.choice)) return e;
          first = false;
        }
        chunk.has_choices = true;
      }
    } else if (key == "usage") {
      if (auto e = read_usage(val, chunk.usage)) return e;
      chunk.has_usage = chunk.usage.completion_tokens >= 0 || chunk.usage.prompt_tokens >= 0;
      if (chunk.usage.rejected) state.out->usage_rejected = chunk.usage.rejected;
    } else if (key == "error") {
      chunk.has_error = true;
      chunk.error_message = server_error_message(val);
      return simdjson::SUCCESS;
    }
  }
  return simdjson::SUCCESS;
}

// A chunk with choices, received at `ts`: TTFT (first) or one ITL gap, the text kept, TTFCT, and the
// per-chunk token count from continuous usage stats (cumulative completion_tokens).
void record_token_chunk(StreamState& state, const Chunk& chunk, Clock::time_point ts) {
  metrics::RequestOutput& out = *state.out;
  const Choice& choice = chunk.choice;
  if (state.events == 0) {
    out.ttft_s = seconds(ts - state.send);
  } else {
    out.itl_s.push_back(seconds(ts - state.last));
  }
  state.last = ts;
  ++state.events;
  if (state.keep_text && !choice.text.empty()) out.generated_text.append(choice.text);
  if (!choice.reasoning.empty() && state.reasoning_text) state.reasoning_text->append(choice.reasoning);
  if (out.ttfct_s < 0 && (!choice.text.empty() || !choice.reasoning.empty())) {
    out.ttfct_s = seconds(ts - state.send);
  }
  if (chunk.usage.completion_tokens >= 0) {
    const int prev = state.usage_completion_running < 0 ? 0 : state.usage_completion_running;
    const int delta = chunk.usage.completion_tokens - prev;
    out.chunk_tokens.push_back(delta);
    if (!choice.reasoning.empty() && choice.text.empty()) state.reasoning_chunk_tokens += delta;
    state.usage_completion_running = chunk.usage.completion_tokens;
  } else {
    state.chunk_tokens_complete = false;
  }
}

// vLLM reads usage only from choice-less chunks; servelab also accepts usage on the last chunk that
// still has choices (llama.cpp style, spec §7 pitfall 18): the latest usage seen wins.
void record_usage(StreamState& state, const Usage& usage) {
  metrics::RequestOutput& out = *state.out;
  if (usage.completion_tokens >= 0) {
    out.usage_completion_tokens = usage.completion_tokens;
    out.output_tokens = usage.completion_tokens;
  }
  if (usage.prompt_tokens >= 0) {
    out.usage_prompt_tokens = usage.prompt_tokens;
    out.prompt_len = usage.prompt_tokens;
  }
  if (usage.reasoning_tokens >= 0) state.usage_reasoning_tokens = usage.reasoning_tokens;
}

}  // namespace

bool apply_event(StreamState& state, od::parser& parser, const char* data, std::size_t size,
                 std::size_t capacity, Clock::time_point ts) {
  // After [DONE] the stream has ended: whatever a server sends behind it (trailing garbage) is not part of
  // it and must not fail a request that completed.
  if (state.failed || state.done) return false;
  std::string_view payload(data, size);
  // vLLM strips each message; tolerate surrounding whitespace the same way.
  while (!payload.empty() && (payload.front() == ' ' || payload.front() == '\t')) payload.remove_prefix(1);
  while (!payload.empty() && (payload.back() == ' ' || payload.back() == '\t' || payload.back() == '\n')) {
    payload.remove_suffix(1);
  }
  if (payload == "[DONE]") {
    state.done = true;
    return false;  // stop feeding: the stream is complete
  }
  if (payload.empty()) return true;

  auto parse_error = [&](simdjson::error_code e) {
    fail(
        state, FailureKind::kJsonParse,
        std::string("invalid JSON in SSE data (") + simdjson::error_message(e) + "): " + excerpt(data, size));
    return false;
  };
  od::document doc;
  od::object root;
  if (auto e = parser.iterate(data, size, capacity).get(doc)) return parse_error(e);
  if (auto e = doc.get_object().get(root)) return parse_error(e);
  Chunk chunk;
  if (auto e = read_chunk(root, state, chunk)) return parse_error(e);
  if (chunk.has_error) {
    fail(state, FailureKind::kServerError,
         "server error in stream: " +
             (chunk.error_message.empty() ? excerpt(data, size) : chunk.error_message));
    return false;
  }
  if (chunk.has_choices) record_token_chunk(state, chunk, ts);
  if (chunk.has_usage) record_usage(state, chunk.usage);
  return true;
}

void finish_stream(StreamState& state) {
  metrics::RequestOutput& out = *state.out;
  if (!state.chunk_tokens_complete) out.chunk_tokens.clear();
  if (state.usage_reasoning_tokens >= 0) {
    out.reasoning_tokens = state.usage_reasoning_tokens;
  } else if (state.chunk_tokens_complete && state.events > 0) {
    out.reasoning_tokens = state.reasoning_chunk_tokens;
  }
  if (state.failed) return;
  if (state.events == 0) {
    fail(state, FailureKind::kNoValidChunk, kNoValidChunkError);
    return;
  }
  out.success = true;
  out.failure = FailureKind::kNone;
  out.latency_s = seconds(state.last - state.send);
}

}  // namespace servelab::client::detail
