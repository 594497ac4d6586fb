// Fuzzes `sim serve`'s request parser (parse_generation_request) and the JSON writers fed with what it
// accepted or rejected: nothing a client sends may throw out of them.
#include <cstdint>
#include <string>

#include "simserve/openai_api.h"

using namespace servelab::simserve;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const Endpoint ep = data[0] & 1 ? Endpoint::kChatCompletions : Endpoint::kCompletions;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  static const std::vector<std::string> models = {"twin", "m"};
  auto parsed = parse_generation_request(body, ep, models);
  if (auto* err = std::get_if<ApiError>(&parsed)) {
    (void)error_json(*err);
    return 0;
  }
  const auto& req = std::get<GenerationRequest>(parsed);
  ResponseIdentity id{"cmpl-" + req.model, req.model, 1};
  StreamDelta d;
  d.text = req.prompt.substr(0, 64);
  (void)stream_chunk(ep, id, d);
  (void)full_response(ep, id, req.prompt, req.messages.empty() ? "" : req.messages.back().content, "length",
                      {1, 2});
  return 0;
}
