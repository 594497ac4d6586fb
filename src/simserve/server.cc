// The `sim serve` HTTP server: Boost.Beast on one event-loop thread. Requests are validated and
// tokenized (generation.cc), then handed to the twin's Timeline; a single timer wakes the loop at the next
// predicted token emission and streams each token as an SSE chunk at that moment. This file: the event loop
// (listening with accept back-off, the emission timer, the schedule-lag report) and the Server interface;
// http_session.cc: one connection.
#include "servelab/simserve/simserve.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>
#include <string_view>

#include "simserve/http_session.h"
#include "simserve/server_impl.h"

namespace servelab::simserve {
namespace detail {

std::vector<tokenizer::TokenId> standalone_word_tokens(const tokenizer::Tokenizer& tok) {
  std::vector<tokenizer::TokenId> out;
  const auto n = static_cast<tokenizer::TokenId>(tok.vocab_size());
  for (tokenizer::TokenId id = 0; id < n; ++id) {
    const auto piece = tok.id_to_token(id);
    // Byte-level BPE spells a leading space as "Ġ" (U+0120, bytes C4 A0); sentencepiece as "▁".
    if (!piece || piece->size() < 4) continue;
    const std::string_view p(*piece);
    std::size_t skip = 0;
    if (p.substr(0, 2) == "\xC4\xA0")
      skip = 2;
    else if (p.substr(0, 3) == "\xE2\x96\x81")
      skip = 3;
    else
      continue;
    bool letters = p.size() - skip >= 2;
    for (std::size_t i = skip; i < p.size() && letters; ++i) {
      letters = (p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z');
    }
    if (!letters) continue;
    const tokenizer::TokenId one[1] = {id};
    const auto text = tok.decode(one, true);
    const auto back = tok.encode(text, false);
    if (back.size() == 1 && back[0] == id) out.push_back(id);
  }
  return out;
}

}  // namespace detail

namespace net = detail::net;
namespace beast = detail::beast;
using detail::Clock;
using detail::tcp;
void Server::Impl::schedule() {
  if (stopped) return;
  const double next = timeline.next_event_s();
  if (!std::isfinite(next)) {
    timer.cancel();
    return;
  }
  // Wall seconds from t0, bounded so that the clock arithmetic cannot overflow (~31 years ahead).
  const double wall_s = std::clamp(next / options.time_scale, 0.0, 1e9);
  const auto when = t0 + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wall_s));
  timer.expires_at(when);
  timer.async_wait([this](beast::error_code ec) {
    if (!ec) on_timer();
  });
}

void Server::Impl::on_timer() {
  busy_for_ms();
  try {
    timeline.advance_to(virtual_now(), [this](std::uint64_t id, int index, double t_emit) {
      if (index >= 0 && active.count(id)) record_lag(t_emit);
      emit(id, index);
    });
  } catch (const std::exception& e) {
    ++stat_handler_errors;
    std::fprintf(stderr, "sim serve: engine model error: %s\n", e.what());
  }
  schedule();
  work_done();
}

void Server::Impl::record_lag(double t_emit_s) {
  const double lag_ms = std::max(0.0, virtual_now() - t_emit_s) * 1e3;
  lag_total.add(lag_ms);
  lag_window.add(lag_ms);
  // Say so when the host cannot keep up: a token 50 ms of wall time late is far outside timer jitter.
  const double wall_lag_ms = lag_ms / options.time_scale;
  const auto now = Clock::now();
  if (wall_lag_ms > options.behind_warn_wall_ms && now - last_behind_log > std::chrono::seconds(10)) {
    last_behind_log = now;
    std::fprintf(
        stderr,
        "servelab sim serve: falling behind the twin's schedule: a token left %.1f ms late in engine time "
        "(%.1f ms wall) at time scale %g; the host is too slow for this scale and measured times are "
        "inflated (bench serve reads the lag from /servelab/schedule and marks its run invalid when the lag "
        "is a material share of it: the last token late by over 1%% of the run, or tokens late by over 5%% "
        "of the mean TTFT on average)\n",
        lag_ms, wall_lag_ms, options.time_scale);
    std::fflush(stderr);
  }
}

std::string Server::Impl::schedule_json() {
  auto one = [](const ScheduleLag& l) {
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "{\"tokens\":%llu,\"lag_sum_ms\":%.6f,\"lag_max_ms\":%.6f,\"lag_last_ms\":%.6f}",
                  static_cast<unsigned long long>(l.tokens), l.sum_ms, l.max_ms, l.last_ms);
    return std::string(buf);
  };
  auto admission = [](const ScheduleLag& l) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "{\"requests\":%llu,\"wait_sum_ms\":%.6f,\"wait_max_ms\":%.6f}",
                  static_cast<unsigned long long>(l.tokens), l.sum_ms, l.max_ms);
    return std::string(buf);
  };
  std::string out = "{\"time_scale\":" + time_scale_text() + ",\"total\":" + one(lag_total) +
                    ",\"window\":" + one(lag_window) + ",\"admission_total\":" + admission(admission_total) +
                    ",\"admission_window\":" + admission(admission_window) + "}";
  lag_window = {};
  admission_window = {};
  return out;
}

void Server::Impl::accept() {
  acceptor.async_accept([this](beast::error_code ec, tcp::socket socket) {
    if (stopped || ec == net::error::operation_aborted) return;
    if (ec) return on_accept_error(ec);
    if (accept_failing) {
      std::fprintf(stderr, "sim serve: accepting connections again\n");
      accept_failing = false;
    }
    accept_backoff = {};
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto s = std::make_shared<Session>(std::move(socket), *this);
    add_session(s);
    s->start();
    accept();
  });
}

// accept() failing (EMFILE at the descriptor limit, ENOBUFS, ...) would fail again at once: wait 10 ms,
// doubling up to 1 s while it keeps failing, and say so once per episode.
void Server::Impl::on_accept_error(const beast::error_code& ec) {
  ++stat_accept_errors;
  if (!accept_failing) {
    std::fprintf(stderr, "sim serve: accept failed (%s); retrying with back-off while it fails\n",
                 ec.message().c_str());
    accept_failing = true;
  }
  accept_backoff = std::min<Clock::duration>(std::chrono::seconds(1), accept_backoff == Clock::duration{}
                                                                          ? std::chrono::milliseconds(10)
                                                                          : accept_backoff * 2);
  accept_timer.expires_after(accept_backoff);
  accept_timer.async_wait([this](beast::error_code e) {
    if (!e && !stopped) accept();
  });
}

Server::Server(ServerOptions options, Timeline timeline, tokenizer::Tokenizer tokenizer)
    : impl_(std::make_unique<Impl>(std::move(options), std::move(timeline), std::move(tokenizer))) {
  if (impl_->options.served_models.empty()) throw std::invalid_argument("sim serve: no served model name");
  if (!(impl_->options.time_scale > 0)) throw std::invalid_argument("sim serve: --time-scale must be > 0");
  auto& o = impl_->options;
  if (o.max_body_bytes == 0) {
    o.max_body_bytes =
        std::max<std::size_t>(1u << 20, 32u * static_cast<std::size_t>(std::max(o.max_model_len, 0)));
  }
  if (!(o.header_timeout_s > 0) || !(o.body_timeout_s > 0)) {
    throw std::invalid_argument("sim serve: header and body timeouts must be > 0");
  }
  impl_->words = detail::standalone_word_tokens(impl_->tok);
  if (impl_->words.empty())
    throw std::runtime_error("sim serve: the tokenizer has no standalone word tokens");
}

Server::~Server() = default;

unsigned short Server::start() {
  auto& im = *impl_;
  beast::error_code ec;
  const auto address = net::ip::make_address(im.options.host, ec);
  if (ec) throw std::runtime_error("sim serve: bad --host '" + im.options.host + "': " + ec.message());
  const tcp::endpoint ep{address, im.options.port};
  im.acceptor.open(ep.protocol(), ec);
  if (!ec) im.acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) im.acceptor.bind(ep, ec);
  if (!ec) im.acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    throw std::runtime_error("sim serve: cannot listen on " + im.options.host + ":" +
                             std::to_string(im.options.port) + ": " + ec.message());
  }
  im.t0 = Clock::now();
  im.accept();
  return im.acceptor.local_endpoint().port();
}

void Server::run() {
  impl_->ioc.run();
}

void Server::stop() {
  net::post(impl_->ioc, [im = impl_.get()] {
    im->stopped = true;
    beast::error_code ec;
    im->acceptor.close(ec);
    im->timer.cancel();
    im->accept_timer.cancel();
    auto sessions = im->sessions;  // drop() removes each from the set
    for (auto& s : sessions) s->drop();
    im->ioc.stop();
  });
}

ServerStats Server::stats() const {
  ServerStats st;
  st.sessions = impl_->stat_sessions.load();
  st.requests_in_flight = impl_->stat_in_flight.load();
  st.accept_errors = impl_->stat_accept_errors.load();
  st.handler_errors = impl_->stat_handler_errors.load();
  return st;
}

}  // namespace servelab::simserve
