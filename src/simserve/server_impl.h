// servelab/simserve (private to the module; see simserve.h): the state of a running `sim serve` server,
// shared by its parts: server.cc (the event loop: listening, the emission timer, the schedule-lag report),
// generation.cc (admitting a generation request into the twin and writing its tokens) and http_session.cc
// (one HTTP connection). Thread-safety: everything here runs on the server's single event-loop thread,
// except the atomic counters that Server::stats() reads.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <utility>  // before Asio: boost 1.74 awaitable.hpp uses std::exchange without including it

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "servelab/simserve/simserve.h"
#include "servelab/tokenizer/tokenizer.h"
#include "simserve/openai_api.h"

namespace servelab::simserve::detail {

namespace net = boost::asio;
namespace beast = boost::beast;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

class Session;

/// A generation request handed to the twin and not finished: where its tokens go and what they say.
struct Active {
  std::weak_ptr<Session> session;
  GenerationRequest request;
  ResponseIdentity identity;
  Usage usage;                  ///< prompt tokens; completion_tokens = the output length the twin decodes
  int reasoning_tokens = 0;     ///< the first `reasoning_tokens` outputs are reasoning
  std::uint64_t draw_seed = 0;  ///< seed of the output-token draw
  std::string text, reasoning;  ///< accumulated (non-streaming responses)
  std::string finish_reason = "length";
};

/// How late tokens leave relative to the twin's schedule, in engine (virtual) ms. A host too slow for the
/// time scale shows up here: every measured time is then inflated and the run is not valid.
struct ScheduleLag {
  std::uint64_t tokens = 0;
  double sum_ms = 0, max_ms = 0,
         last_ms = 0;  // last: the latest token (at the end of a run: its duration error)
  void add(double lag_ms) {
    ++tokens;
    sum_ms += lag_ms;
    max_ms = std::max(max_ms, lag_ms);
    last_ms = lag_ms;
  }
};

/// Token ids whose text stands alone: decode([id]) is a space followed by ASCII letters and re-encodes to
/// exactly [id], so a streamed completion re-tokenizes to the count the server reports. Ascending ids.
std::vector<tokenizer::TokenId> standalone_word_tokens(const tokenizer::Tokenizer& tokenizer);

}  // namespace servelab::simserve::detail

namespace servelab::simserve {

struct Server::Impl {
  using Clock = detail::Clock;
  using Active = detail::Active;
  using ScheduleLag = detail::ScheduleLag;
  using Session = detail::Session;

  ServerOptions options;
  ScheduleLag lag_total, lag_window;  // since start / since the last GET /servelab/schedule
  // Admission: a request read while the event loop has been busy for a while (tokenizing a burst of other
  // requests, emitting tokens) may have waited that long in the socket; its arrival is then late in the
  // twin's time. The busy period's length is an upper bound on that wait, tight for a burst sent at once.
  ScheduleLag admission_total, admission_window;
  Clock::time_point busy_since{}, last_work_end{};
  Clock::time_point last_behind_log{};
  Timeline timeline;
  tokenizer::Tokenizer tok;
  /// Prompt token ids at or above this are out of vocabulary, as vLLM's input processor judges them:
  /// max(the tokenizer's ids, the model's vocab_size) (its embedding may be padded past the tokenizer)
  /// [recalled: vllm/v1/engine/processor.py _validate_model_input]. Set once in the constructor.
  std::int64_t token_id_bound = 0;
  std::vector<tokenizer::TokenId> words;
  detail::net::io_context ioc{1};
  detail::tcp::acceptor acceptor{ioc};
  detail::net::steady_timer timer{ioc};
  detail::net::steady_timer accept_timer{ioc};
  Clock::duration accept_backoff{};
  bool accept_failing = false;  // an accept error was logged and accepting has not recovered yet
  bool stopped = false;
  Clock::time_point t0 = Clock::now();
  std::uint64_t next_id = 1;
  /// Mixed into response ids only (not into generated text, which follows Options::seed): two twins behind
  /// one router never hand out the same "cmpl-..." id (vLLM's are random uuids).
  const std::uint64_t id_salt = (std::uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  std::unordered_map<std::uint64_t, Active> active;
  std::set<std::shared_ptr<Session>> sessions;
  std::atomic<std::size_t> stat_sessions{0}, stat_in_flight{0};
  std::atomic<std::uint64_t> stat_accept_errors{0}, stat_handler_errors{0};

  Impl(ServerOptions o, Timeline t, tokenizer::Tokenizer k)
      : options(std::move(o)),
        timeline(std::move(t)),
        tok(std::move(k)),
        token_id_bound(std::max<std::int64_t>(static_cast<std::int64_t>(tok.vocab_size_with_added()),
                                              options.vocab_size)) {}

  /// Virtual (engine) seconds since start(): wall seconds × time_scale.
  double virtual_now() const {
    return std::chrono::duration<double>(Clock::now() - t0).count() * options.time_scale;
  }
  // server.cc: the emission timer and the schedule-lag report.
  void schedule();
  void on_timer();
  void record_lag(double t_emit_s);
  /// At the start of a handler: engine ms the loop has been continuously busy (gaps < 0.2 ms) until now.
  double busy_for_ms() {
    const auto now = Clock::now();
    if (now - last_work_end > std::chrono::microseconds(200)) busy_since = now;
    return std::chrono::duration<double>(now - busy_since).count() * options.time_scale * 1e3;
  }
  void work_done() { last_work_end = Clock::now(); }
  std::string schedule_json();
  std::string time_scale_text() const {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", options.time_scale);
    return buf;
  }
  void accept();
  void on_accept_error(const detail::beast::error_code& ec);

  // generation.cc: admitting a request and writing its tokens.
  /// Handles a generation request; returns an error or registers the request with the twin.
  /// `received_s`: virtual time the request was read (before tokenizing it), its arrival in the twin.
  std::optional<ApiError> generate(const std::shared_ptr<Session>& s, Endpoint ep, const std::string& body,
                                   const std::string& request_id, double received_s);
  /// The twin emitted output token `index` of request `id` (-1: the engine aborted it).
  void emit(std::uint64_t id, int index);
  void emit_token(Active& a, Session& s, std::uint64_t id, int index);

  void erase_active(std::unordered_map<std::uint64_t, Active>::iterator it) {
    active.erase(it);
    stat_in_flight = active.size();
  }
  void cancel_all(const std::set<std::uint64_t>& ids) {
    for (auto id : ids) {
      if (active.erase(id) > 0) timeline.cancel(id);
    }
    stat_in_flight = active.size();
    schedule();
  }
  void add_session(const std::shared_ptr<Session>& s) {
    sessions.insert(s);
    stat_sessions = sessions.size();
  }
  void remove_session(const std::shared_ptr<Session>& s) {
    sessions.erase(s);
    stat_sessions = sessions.size();
  }
};

}  // namespace servelab::simserve
