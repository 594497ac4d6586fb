// Fuzzes the client's HTTP/1.1 response handling: the allocation-free Beast parser (status line, headers,
// chunked framing, 1xx interim responses) feeding the SSE parser, read by read as load.cc drives it.
#include <cstdint>
#include <cstring>
#include <optional>

#include <boost/asio/buffer.hpp>

#include "client/http_response.h"
#include "client/sse.h"

using namespace servelab::client;
using namespace servelab::client::detail;

namespace {

struct Sink {
  int status = 0;
  SseParser sse;
  StreamState* st = nullptr;
  simdjson::ondemand::parser* json = nullptr;
  void on_status(int code, std::string_view) { status = code; }
  void on_body(std::string_view bytes) {
    sse.feed(bytes.data(), bytes.size(), [this](const char* d, std::size_t n, std::size_t cap) {
      return apply_event(*st, *json, d, n, cap, Clock::now());
    });
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const std::size_t step = 1 + data[0];
  const char* p = reinterpret_cast<const char*>(data + 1);
  std::size_t left = size - 1;
  static simdjson::ondemand::parser json;
  servelab::metrics::RequestOutput out;
  StreamState st;
  st.begin(&out, Clock::now());
  Sink sink;
  sink.st = &st;
  sink.json = &json;
  std::optional<ResponseParser<Sink>> parser(std::in_place, &sink);
  std::string buf;
  bool eof_ok = false;
  while (left > 0) {
    const std::size_t n = std::min(step, left);
    buf.append(p, n);
    p += n;
    left -= n;
    for (;;) {
      boost::beast::error_code ec;
      const std::size_t used = parser->put(boost::asio::const_buffer(buf.data(), buf.size()), ec);
      buf.erase(0, used);
      if (ec == boost::beast::http::error::need_more) break;
      if (ec) return 0;
      if (parser->is_done()) {
        if (sink.status / 100 == 1 && sink.status != 101) {  // interim response: the real one follows
          parser.emplace(&sink);
          continue;
        }
        return 0;
      }
      if (used == 0) break;
    }
  }
  if (parser->got_some()) {
    boost::beast::error_code ec;
    parser->put_eof(ec);
    eof_ok = !ec;
  }
  (void)eof_ok;
  finish_stream(st);
  return 0;
}
