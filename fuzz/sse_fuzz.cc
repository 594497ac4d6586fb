// Fuzzes the client's SSE framing (SseParser) and vLLM's per-event rules (apply_event, finish_stream) on
// any bytes a server may stream. The first byte picks the endpoint and where the body is split into reads.
#include <cstdint>

#include "client/sse.h"

using namespace servelab::client;
using namespace servelab::client::detail;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const Endpoint endpoint = data[0] & 1 ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  const std::size_t step = 1 + (data[0] >> 1);  // read sizes 1..128 bytes
  const char* body = reinterpret_cast<const char*>(data + 1);
  const std::size_t n = size - 1;
  static simdjson::ondemand::parser json;
  servelab::metrics::RequestOutput out;
  std::string reasoning;
  StreamState st;
  st.begin(&out, Clock::now());
  st.endpoint = endpoint;
  st.reasoning_text = &reasoning;
  SseParser sse;
  auto on_event = [&](const char* d, std::size_t len, std::size_t cap) {
    return apply_event(st, json, d, len, cap, Clock::now());
  };
  for (std::size_t p = 0; p < n; p += step) {
    if (sse.feed(body + p, std::min(step, n - p), on_event) != SseParser::Status::kOk) break;
  }
  sse.finish(on_event);
  finish_stream(st);
  return 0;
}
