// servelab/client private: an allocation-free HTTP/1.1 response parser (Beast basic_parser) that
// hands every body byte (chunked framing removed) to a sink.
#pragma once

#include <cstdint>
#include <limits>
#include <string_view>

#include <boost/beast/http/basic_parser.hpp>
#include <boost/optional.hpp>

namespace servelab::client::detail {

/// Sink requirements: `void on_status(int code, std::string_view reason)`,
/// `void on_body(std::string_view bytes)`. Thread-safety: none (one per connection).
template <class Sink>
class ResponseParser : public boost::beast::http::basic_parser<false> {
 public:
  explicit ResponseParser(Sink* sink) : sink_(sink) {
    eager(true);
    // Not boost::none: Beast 1.74 compares `len_ > body_limit_` with an empty optional as "exceeded".
    body_limit(std::numeric_limits<std::uint64_t>::max());
    header_limit(64 * 1024);
  }

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb, string_view, string_view, int, error_code&) override {}
  void on_response_impl(int code, string_view reason, int, error_code&) override {
    sink_->on_status(code, std::string_view(reason.data(), reason.size()));
  }
  void on_field_impl(boost::beast::http::field, string_view, string_view, error_code&) override {}
  void on_header_impl(error_code&) override {}
  void on_body_init_impl(boost::optional<std::uint64_t> const&, error_code&) override {}
  std::size_t on_body_impl(string_view body, error_code&) override {
    sink_->on_body(std::string_view(body.data(), body.size()));
    return body.size();
  }
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override {
    sink_->on_body(std::string_view(body.data(), body.size()));
    return body.size();
  }
  void on_finish_impl(error_code&) override {}

  Sink* sink_;
};

}  // namespace servelab::client::detail
