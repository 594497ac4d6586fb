// servelab/client private: incremental SSE framing and vLLM's per-event timing rules (exposed for tests).
// Hot path: no allocation per event once the buffers have grown to the largest event seen.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

#include <simdjson.h>

#include "servelab/client/client.h"
#include "servelab/metrics/request_output.h"

namespace servelab::client::detail {

using Clock = std::chrono::steady_clock;

/// Bytes of readable slack kept after every event's data for simdjson (≥ SIMDJSON_PADDING).
inline constexpr std::size_t kJsonPadding = 64;
/// Largest SSE event accepted (bytes); bigger → kSseParse.
inline constexpr std::size_t kMaxEventBytes = 16u << 20;

/// Incremental Server-Sent Events parser (WHATWG framing): lines end in LF, CRLF or CR (also when
/// split across feeds); `:` lines are comments; `data:` lines (one optional space after the colon)
/// are joined with '\n'; `event:`/`id:`/`retry:` are accepted and ignored; a blank line dispatches
/// the event. Any other line is malformed (vLLM fails such a stream at its JSON parse).
/// Thread-safety: none (one per connection).
class SseParser {
 public:
  enum class Status { kOk, kMalformed, kTooLarge };

  SseParser() {
    line_.reserve(256);
    data_.reserve(512 + kJsonPadding);
  }

  /// Clears the state for a new response (keeps buffer capacity).
  void reset() {
    line_.clear();
    data_.clear();
    has_data_ = false;
    skip_lf_ = false;
    status_ = Status::kOk;
  }

  /// Feeds body bytes; calls `on_event(const char* data, size_t size, size_t capacity)` for every
  /// complete event (capacity ≥ size + kJsonPadding readable bytes). Stops and returns the status at
  /// the first malformed line. on_event returns false to stop feeding (the request failed).
  template <class OnEvent>
  Status feed(const char* p, std::size_t n, OnEvent&& on_event) {
    if (status_ != Status::kOk) return status_;
    const char* end = p + n;
    while (p < end) {
      if (skip_lf_) {
        skip_lf_ = false;
        if (*p == '\n') {
          ++p;
          continue;
        }
      }
      const char* eol = find_eol(p, end);
      if (eol == end) {
        if (line_.size() + (end - p) > kMaxEventBytes) return status_ = Status::kTooLarge;
        line_.append(p, end - p);
        return status_;
      }
      std::string_view line;
      if (line_.empty()) {
        line = std::string_view(p, eol - p);
      } else {
        line_.append(p, eol - p);
        line = line_;
      }
      skip_lf_ = *eol == '\r';
      p = eol + 1;
      const bool keep_going = process_line(line, on_event);
      line_.clear();
      if (status_ != Status::kOk || !keep_going) return status_;
    }
    return status_;
  }

  /// End of body: a last line without terminator and a last event without blank line are still
  /// processed (vLLM emits the leftover "data: ..." buffer).
  template <class OnEvent>
  Status finish(OnEvent&& on_event) {
    if (status_ != Status::kOk) return status_;
    if (!line_.empty()) {
      std::string_view line = line_;
      if (!process_line(line, on_event)) return status_;
      line_.clear();
      if (status_ != Status::kOk) return status_;
    }
    if (has_data_) dispatch(on_event);
    return status_;
  }

 private:
  static const char* find_eol(const char* p, const char* end) {
    for (; p < end; ++p) {
      if (*p == '\n' || *p == '\r') return p;
    }
    return end;
  }

  template <class OnEvent>
  bool dispatch(OnEvent& on_event) {
    has_data_ = false;
    if (data_.capacity() < data_.size() + kJsonPadding) data_.reserve(data_.size() + kJsonPadding);
    const bool keep_going = on_event(data_.data(), data_.size(), data_.capacity());
    data_.clear();
    return keep_going;
  }

  template <class OnEvent>
  bool process_line(std::string_view line, OnEvent& on_event) {
    if (line.empty()) return has_data_ ? dispatch(on_event) : true;
    if (line.front() == ':') return true;  // comment / keep-alive ping
    const std::size_t colon = line.find(':');
    const std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    }
    if (field == "data") {
      if (has_data_) data_.push_back('\n');
      if (data_.size() + value.size() > kMaxEventBytes) {
        status_ = Status::kTooLarge;
        return false;
      }
      data_.append(value.data(), value.size());
      has_data_ = true;
      return true;
    }
    if (field == "event" || field == "id" || field == "retry") return true;
    status_ = Status::kMalformed;
    bad_line_.assign(line.substr(0, 120));
    return false;
  }

 public:
  /// The first malformed line (≤ 120 bytes), for the error message.
  const std::string& bad_line() const { return bad_line_; }

 private:
  std::string line_;
  std::string data_;
  std::string bad_line_;
  bool has_data_ = false;
  bool skip_lf_ = false;
  Status status_ = Status::kOk;
};

/// Per-request state while a response streams. `out` receives the vLLM fields.
struct StreamState {
  metrics::RequestOutput* out = nullptr;
  std::string* reasoning_text = nullptr;  ///< reasoning deltas collected here when non-null
  Endpoint endpoint = Endpoint::kCompletions;
  bool keep_text = true;   ///< append content to out->generated_text
  Clock::time_point send;  ///< vLLM `st`
  Clock::time_point last;  ///< vLLM `most_recent_timestamp` (last choices event)
  int events = 0;          ///< choices events seen
  bool done = false;       ///< `data: [DONE]` seen
  bool failed = false;
  int usage_completion_running = -1;  ///< last usage.completion_tokens seen on a choices chunk
  bool chunk_tokens_complete = true;  ///< every choices chunk carried usage (continuous stats)
  int reasoning_chunk_tokens = 0;     ///< tokens of reasoning chunks by continuous usage deltas
  int usage_reasoning_tokens = -1;    ///< usage.completion_tokens_details.reasoning_tokens

  /// Prepares for a new request sent at `send_time`.
  void begin(metrics::RequestOutput* output, Clock::time_point send_time) {
    out = output;
    send = send_time;
    last = send_time;
    events = 0;
    done = false;
    failed = false;
    usage_completion_running = -1;
    chunk_tokens_complete = true;
    reasoning_chunk_tokens = 0;
    usage_reasoning_tokens = -1;
  }
};

/// Applies one SSE data payload received at `ts`, with vLLM's rules: `[DONE]` ends the stream (sets
/// `done`; every later event and byte is ignored, so trailing garbage never fails a completed request); a
/// JSON object with non-empty `choices` is a token event (TTFT on the first, ITL gaps after, text from
/// choices[0].text or choices[0].delta.content, reasoning from delta.reasoning_content/reasoning);
/// a choice-less chunk with `usage` sets output_tokens/prompt_len; an `error` object fails the
/// request (kServerError); invalid JSON fails it (kJsonParse). `data` must have `capacity` ≥
/// size + kJsonPadding readable bytes. Returns false (stop feeding) once the request has failed or the
/// stream has ended.
bool apply_event(StreamState& state, simdjson::ondemand::parser& parser, const char* data, std::size_t size,
                 std::size_t capacity, Clock::time_point ts);

/// Ends the stream (body complete): success if a choices event was seen, else kNoValidChunk with
/// vLLM's message; latency = last event − send.
void finish_stream(StreamState& state);

/// Marks the request failed with `kind` and `message` (first failure wins).
void fail(StreamState& state, metrics::FailureKind kind, std::string message);

/// vLLM's error text for a stream without choices events.
inline constexpr const char* kNoValidChunkError =
    "Never received a valid chunk to calculate TTFT.This response will be marked as failed!";

}  // namespace servelab::client::detail
