// servelab/client private: Worker, one I/O thread of run_load / run_sessions (schedule, semaphores, sessions,
// the request lifecycle on its keep-alive pool, stop).
#pragma once

#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <queue>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/http/error.hpp>

#include "client/load_detail.h"
#include "client/os_limits.h"
#include "client/preconnect.h"
#include "client/sse.h"
#include "servelab/client/request.h"
#include "servelab/common/redact.h"

namespace servelab::client::detail {

template <class Stream>
class Worker {
 public:
  /// `mine`: the requests this worker dispatches on the schedule, in order; `owned`: those plus the later
  /// turns of their sessions (all of which this worker sends).
  Worker(Run<Stream>& run, std::vector<std::size_t> mine, std::size_t owned)
      : run_(run),
        mine_(std::move(mine)),
        owned_(owned),
        dispatch_timer_(io_),
        grace_timer_(io_),
        guard_(asio::make_work_guard(io_)) {}

  void run_loop() {
    if (mine_.empty()) guard_.reset();
    asio::post(io_, [this] { arm_dispatch(); });
    io_.run();
  }

  /// Requests this worker sends (its share of the run).
  std::size_t num_requests() const { return owned_; }

  /// Thread-safe.
  void request_stop() {
    run_.stop_requested = true;
    asio::post(io_, [this] { begin_stop(); });
  }

  /// Thread-safe: a slot of the semaphore was handed to request `idx` of this worker.
  void post_start(std::size_t idx) {
    asio::post(io_, [this, idx] { start(idx); });
  }

  /// Thread-safe: a session slot was handed to the session whose first turn is request `idx`.
  void post_session_start(std::size_t idx) {
    asio::post(io_, [this, idx] { on_session_slot(idx); });
  }

  simdjson::ondemand::parser& json() { return json_; }

  /// Before t = 0, on this worker's thread: opens `count` connections into its keep-alive pool (they are
  /// then used as kept-alive ones: a server that closed one meanwhile costs one retry on a fresh one).
  /// Returns how many failed, with the first error in `error`.
  std::size_t preconnect(std::size_t count, std::string& error) {
    auto opened = detail::preconnect<Stream>(
        io_, run_.endpoints, count, run_.options.connect_timeout_s, [this] { return make_stream(); },
        run_.host, run_.options.insecure,
        [this] { return stopping_ || run_.stop_requested.load(std::memory_order_relaxed); });
    for (Stream& s : opened.streams) {
      ConnT* c = new_conn();
      c->stream.emplace(std::move(s));
      c->state = ConnState::kOpen;
      if (stopping_) {
        close(*c);
      } else {
        idle_.push_back(c);
      }
    }
    error = std::move(opened.first_error);
    return opened.failed;
  }

  // Called by Conn::on_body.
  void on_events(Conn<Stream>& c, std::string_view bytes) {
    if (c.st.done) return;  // bytes after `data: [DONE]`: not part of the stream
    auto on_event = [this, &c](const char* data, std::size_t size, std::size_t capacity) {
      return apply_event(c.st, json_, data, size, capacity, Clock::now());
    };
    const auto status = c.sse.feed(bytes.data(), bytes.size(), on_event);
    report_sse_status(c, status);
  }

 private:
  using ConnT = Conn<Stream>;

  void report_sse_status(ConnT& c, SseParser::Status status) {
    if (status == SseParser::Status::kMalformed) {
      fail(c.st, FailureKind::kSseParse, "malformed SSE line: " + c.sse.bad_line());
    } else if (status == SseParser::Status::kTooLarge) {
      fail(c.st, FailureKind::kSseParse,
           "SSE event larger than " + std::to_string(kMaxEventBytes) + " bytes");
    }
  }

  Clock::time_point due(std::size_t idx) const {
    return run_.t0 +
           std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(run_.schedule[idx]));
  }

  // ---- schedule ----
  // Earliest due request: the next one on the schedule, or a released session turn.
  Clock::time_point next_due_time() const {
    Clock::time_point at = next_ < mine_.size() ? due(mine_[next_]) : Clock::time_point::max();
    if (!followups_.empty()) at = std::min(at, followups_.top().first);
    return at;
  }

  std::size_t pop_due() {
    if (!followups_.empty() && (next_ >= mine_.size() || followups_.top().first < due(mine_[next_]))) {
      const std::size_t idx = followups_.top().second;
      followups_.pop();
      return idx;
    }
    return mine_[next_++];
  }

  void arm_dispatch() {
    if (stopping_ || (next_ >= mine_.size() && followups_.empty())) return;
    dispatch_timer_.expires_at(next_due_time());
    dispatch_timer_.async_wait([this](const error_code& ec) {
      if (ec || stopping_) return;
      dispatch_due();
    });
  }

  // Dispatches due requests in batches of kDispatchBatch, yielding to the event loop in between so
  // that reads (and their timestamps) are not held up by a burst of sends/connects.
  void dispatch_due() {
    if (stopping_ || run_.stop_requested.load(std::memory_order_relaxed)) return;
    Clock::time_point now = Clock::now();
    int batch = 0;
    while ((next_ < mine_.size() || !followups_.empty()) && next_due_time() <= now) {
      if (batch++ == kDispatchBatch) {
        asio::post(io_, [this] { dispatch_due(); });
        return;
      }
      dispatch(pop_due(), now);
      now = Clock::now();
    }
    arm_dispatch();
  }

  void dispatch(std::size_t idx, Clock::time_point now) {
    RequestOutput& out = run_.outputs[idx];
    out.dispatch_time_s = run_.rel(now);
    if (run_.plan && run_.turn_of[idx] == 0 && run_.sessions_limited) {
      std::lock_guard lock(run_.mu);
      if (run_.sessions_available == 0) {
        run_.session_waiters.emplace_back(this, idx);
        return;
      }
      --run_.sessions_available;
    }
    if (run_.plan && run_.turn_of[idx] == 0) run_.holds_session_slot[run_.session_of[idx]] = 1;
    acquire_slot(idx);
  }

  void on_session_slot(std::size_t idx) {
    run_.holds_session_slot[run_.session_of[idx]] = 1;
    if (stopping_ || run_.stop_requested.load(std::memory_order_relaxed)) {
      mark_not_sent(idx, "not sent: run interrupted while waiting for a session slot");
      return check_done();
    }
    acquire_slot(idx);
  }

  // The --max-concurrency semaphore, then start.
  void acquire_slot(std::size_t idx) {
    if (run_.limited && run_.plan == nullptr) {
      std::vector<std::pair<Worker*, std::size_t>> granted;
      {
        std::lock_guard lock(run_.mu);
        run_.admit_waiting[idx] = this;
        admit_in_order(granted);
      }
      return hand_out(granted);
    }
    if (run_.limited) {
      std::lock_guard lock(run_.mu);
      if (run_.available == 0) {
        run_.waiters.emplace_back(this, idx);
        return;
      }
      --run_.available;
    }
    start(idx);
  }

  // Grants free slots to the waiting requests in send order, stopping at the first request of that order
  // not dispatched yet (its turn comes before any later one's). Caller holds run_.mu.
  void admit_in_order(std::vector<std::pair<Worker*, std::size_t>>& granted) {
    if (run_.stop_requested.load(std::memory_order_relaxed)) return;
    while (run_.available > 0 && run_.admit_pos < run_.admit_order.size()) {
      const std::size_t j = run_.admit_order[run_.admit_pos];
      Worker* w = run_.admit_waiting[j];
      if (w == nullptr) break;
      run_.admit_waiting[j] = nullptr;
      ++run_.admit_pos;
      --run_.available;
      granted.emplace_back(w, j);
    }
  }

  // Starts granted requests: this worker's own at once (in order), the others' on their threads.
  void hand_out(const std::vector<std::pair<Worker*, std::size_t>>& granted) {
    for (const auto& [w, j] : granted) {
      if (w == this) {
        start(j);
      } else {
        w->post_start(j);
      }
    }
  }

  void release_slot() {
    if (!run_.limited) return;
    if (run_.plan == nullptr) {
      std::vector<std::pair<Worker*, std::size_t>> granted;
      {
        std::lock_guard lock(run_.mu);
        ++run_.available;
        admit_in_order(granted);
      }
      // Posted, own ones too: this runs inside a request's completion.
      for (const auto& [w, j] : granted) w->post_start(j);
      return;
    }
    Worker* w = nullptr;
    std::size_t j = 0;
    {
      std::lock_guard lock(run_.mu);
      if (run_.waiters.empty()) {
        ++run_.available;
        return;
      }
      std::tie(w, j) = run_.waiters.front();
      run_.waiters.pop_front();
    }
    w->post_start(j);  // this worker's own too: posted to its thread
  }

  // ---- sessions ----
  // Turn `idx` ended (any outcome): release the next turn of its session, or end the session.
  void after_turn(std::size_t idx) {
    const std::size_t s = run_.session_of[idx];
    const std::size_t t = run_.turn_of[idx];
    const auto& turns = run_.plan->sessions[s];
    const RequestOutput& out = run_.outputs[idx];
    if (t + 1 == turns.size()) return end_session(s);
    if (stopping_ || run_.stop_requested.load(std::memory_order_relaxed)) {
      return abandon(s, t + 1, "not sent: run interrupted before this turn");
    }
    if (!out.success) {
      return abandon(s, t + 1,
                     "not sent: turn " + std::to_string(t) + " of its session failed (" +
                         metrics::failure_kind_name(out.failure) + ")");
    }
    const std::size_t next = turns[t + 1];
    PlannedRequest req;
    try {
      req = run_.plan->next_turn(s, t + 1, out);
      run_.http[next] = build_http_request(run_.options, *run_.url, run_.api_key, req);
    } catch (const std::exception& e) {
      return abandon(s, t + 1, std::string("not sent: building this turn failed: ") + e.what());
    }
    RequestOutput& n = run_.outputs[next];
    n.prompt_len = req.prompt_len;
    n.dataset_prompt_len = req.prompt_len;
    n.output_len = req.output_len;
    n.request_id = std::move(req.request_id);
    n.intended_send_time_s = run_.rel(Clock::now()) + run_.plan->think_time_s;
    run_.schedule[next] = n.intended_send_time_s;
    followups_.emplace(due(next), next);
    arm_dispatch();
  }

  // Turns `from`.. of session `s` are never sent; the session ends.
  void abandon(std::size_t s, std::size_t from, const std::string& why) {
    const auto& turns = run_.plan->sessions[s];
    for (std::size_t k = from; k < turns.size(); ++k) mark_one_not_sent(turns[k], why);
    end_session(s);
  }

  void end_session(std::size_t s) {
    if (!run_.holds_session_slot[s]) return;
    run_.holds_session_slot[s] = 0;
    if (!run_.sessions_limited) return;
    Worker* w = nullptr;
    std::size_t j = 0;
    {
      std::lock_guard lock(run_.mu);
      if (run_.session_waiters.empty()) {
        ++run_.sessions_available;
        return;
      }
      std::tie(w, j) = run_.session_waiters.front();
      run_.session_waiters.pop_front();
    }
    w->post_session_start(j);
  }

  // ---- request lifecycle ----
  void start(std::size_t idx) {
    if (stopping_ || run_.stop_requested.load(std::memory_order_relaxed)) {
      mark_not_sent(idx, "not sent: run interrupted while waiting for a --max-concurrency slot");
      release_slot();
      check_done();
      return;
    }
    RequestOutput& out = run_.outputs[idx];
    const Clock::time_point now = Clock::now();
    out.send_time_s = run_.rel(now);
    out.itl_s.reserve(static_cast<std::size_t>(std::clamp(out.output_len, 1, 4096)));
    ConnT* c = acquire_conn();
    begin_request(*c, idx, now);
    if (c->state == ConnState::kOpen) {
      c->attempt = Attempt::kKeptAlive;
      arm_deadline(*c, request_deadline(*c));
      write(*c);
    } else {
      connect(*c);
    }
  }

  void begin_request(ConnT& c, std::size_t idx, Clock::time_point send) {
    ++c.gen;
    c.idx = idx;
    c.used = 0;
    c.got_bytes = false;
    c.attempt = Attempt::kFresh;
    c.status = 0;
    c.status_reason.clear();
    c.error_body.clear();
    c.parser.emplace(&c);
    c.sse.reset();
    c.st.begin(&run_.outputs[idx], send);
    c.st.endpoint = run_.options.endpoint;
    c.st.keep_text = run_.options.keep_generated_text || static_cast<bool>(run_.options.retokenize) ||
                     run_.plan != nullptr;  // a session's next turn may carry this answer
    c.st.reasoning_text = run_.options.retokenize ? &run_.reasoning[idx] : nullptr;
  }

  Clock::time_point request_deadline(const ConnT& c) const {
    return c.st.send + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(run_.options.request_timeout_s));
  }

  // (Re)arms the connection's single deadline timer (a pending wait is cancelled and ignored).
  void arm_deadline(ConnT& c, Clock::time_point deadline) {
    c.timer.expires_at(deadline);
    ++c.pending;
    c.timer.async_wait([this, &c, gen = c.gen](const error_code& ec) {
      --c.pending;
      if (ec || gen != c.gen || c.idx == kNoRequest) return recycle_if_idle(c);
      if (c.state == ConnState::kConnecting) {
        fail_request(c, FailureKind::kConnect,
                     "connect to " + run_.authority + " timed out after " +
                         std::to_string(run_.options.connect_timeout_s) + " s");
      } else {
        fail_request(c, FailureKind::kTimeout,
                     "request timed out after " + std::to_string(run_.options.request_timeout_s) + " s");
      }
    });
  }

  ConnT* acquire_conn() {
    while (!idle_.empty()) {
      ConnT* c = idle_.back();
      idle_.pop_back();
      if (c->state == ConnState::kOpen) return c;
    }
    return new_conn();
  }

  // A connection object without a socket (recycled or new).
  ConnT* new_conn() {
    ConnT* c;
    if (!free_.empty()) {
      c = free_.back();
      free_.pop_back();
    } else {
      conns_.push_back(std::make_unique<ConnT>(this, io_));
      c = conns_.back().get();
    }
    c->state = ConnState::kUnconnected;
    return c;
  }

  Stream make_stream() {
    if constexpr (std::is_same_v<Stream, SslStream>) {
      return SslStream(io_, *run_.ssl);
    } else {
      return tcp::socket(io_);
    }
  }

  void connect(ConnT& c) {
    c.state = ConnState::kConnecting;
    c.stream.emplace(make_stream());
    const auto connect_deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(run_.options.connect_timeout_s));
    arm_deadline(c, std::min(request_deadline(c), connect_deadline));
    ++c.pending;
    asio::async_connect(lowest(*c.stream), run_.endpoints,
                        [this, &c, gen = c.gen](const error_code& ec, const tcp::endpoint&) {
                          --c.pending;
                          if (gen != c.gen) return recycle_if_idle(c);
                          if (ec) {
                            return fail_request(c, FailureKind::kConnect,
                                                "connect to " + run_.authority + " failed: " + ec.message() +
                                                    connect_error_hint(ec));
                          }
                          error_code ignored;
                          lowest(*c.stream).set_option(tcp::no_delay(true), ignored);
                          handshake(c);
                        });
  }

  void handshake(ConnT& c) {
    if constexpr (std::is_same_v<Stream, SslStream>) {
      prepare_tls(*c.stream, run_.host, run_.options.insecure);
      ++c.pending;
      c.stream->async_handshake(
          asio::ssl::stream_base::client, [this, &c, gen = c.gen](const error_code& ec) {
            --c.pending;
            if (gen != c.gen) return recycle_if_idle(c);
            if (ec) {
              return fail_request(c, FailureKind::kConnect,
                                  "TLS handshake with " + run_.authority + " failed: " + ec.message());
            }
            on_connected(c);
          });
    } else {
      on_connected(c);
    }
  }

  void on_connected(ConnT& c) {
    c.state = ConnState::kOpen;
    // The request deadline counts from send (connect time included, as vLLM's timer).
    arm_deadline(c, request_deadline(c));
    write(c);
  }

  void write(ConnT& c) {
    ++c.pending;
    asio::async_write(*c.stream, asio::buffer(run_.http[c.idx]),
                      [this, &c, gen = c.gen](const error_code& ec, std::size_t) {
                        --c.pending;
                        if (gen != c.gen) return recycle_if_idle(c);
                        if (ec) {
                          if (c.attempt == Attempt::kKeptAlive) return retry_on_new_connection(c);
                          return fail_request(c, FailureKind::kReset,
                                              "connection lost while sending the request: " + ec.message());
                        }
                        c.st.out->wire_time_s = run_.rel(Clock::now());
                        read(c);
                      });
  }

  // A kept-alive connection the server had already closed: resend once on a fresh connection.
  void retry_on_new_connection(ConnT& c) {
    const std::size_t idx = c.idx;
    const Clock::time_point send = c.st.send;
    close(c);
    ConnT* fresh = new_conn();
    begin_request(*fresh, idx, send);
    fresh->attempt = Attempt::kRetry;
    connect(*fresh);
  }

  void read(ConnT& c) {
    ++c.pending;
    c.stream->async_read_some(asio::buffer(c.buf.get() + c.used, c.cap - c.used),
                              [this, &c, gen = c.gen](const error_code& ec, std::size_t n) {
                                --c.pending;
                                if (gen != c.gen) return recycle_if_idle(c);
                                on_read(c, ec, n);
                              });
  }

  void on_read(ConnT& c, const error_code& ec, std::size_t n) {
    if (ec) {
      if (!c.got_bytes && c.attempt == Attempt::kKeptAlive &&
          (is_eof(ec) || ec == asio::error::connection_reset)) {
        return retry_on_new_connection(c);
      }
      if (is_eof(ec) && !c.parser->got_some()) {
        // Closed before a single response byte: a reset, never "HTTP 0" (and no parser call: Beast asserts
        // that put_eof follows some input).
        return fail_request(c, FailureKind::kReset, "connection closed before any response byte");
      }
      if (is_eof(ec)) {
        error_code pec;
        c.parser->put_eof(pec);
        if (!pec && c.parser->is_done()) return complete_message(c, false);
        if (c.st.done && c.status / 100 == 2) return complete_message(c, false);  // closed after [DONE]
        return fail_request(c, FailureKind::kReset,
                            c.got_bytes ? "connection closed mid-stream (response incomplete)"
                                        : "connection closed before any response byte");
      }
      return fail_request(
          c, FailureKind::kReset,
          std::string(c.got_bytes ? "connection error mid-stream: " : "connection error: ") + ec.message());
    }
    c.got_bytes = true;
    c.used += n;
    for (;;) {
      error_code pec;
      const std::size_t consumed = c.parser->put(asio::const_buffer(c.buf.get(), c.used), pec);
      if (consumed > 0) {
        std::memmove(c.buf.get(), c.buf.get() + consumed, c.used - consumed);
        c.used -= consumed;
      }
      if (c.st.failed) return finish_request(c, false);
      if (pec == boost::beast::http::error::need_more) {
        if (c.used == c.cap) {
          if (c.cap >= kMaxReadBufferBytes) {
            return fail_request(c, FailureKind::kSseParse, "HTTP response header larger than 1 MiB");
          }
          std::unique_ptr<char[]> bigger(new char[c.cap * 2]);
          std::memcpy(bigger.get(), c.buf.get(), c.used);
          c.buf = std::move(bigger);
          c.cap *= 2;
        }
        break;
      }
      if (pec) {
        // Garbage before any status line on a kept-alive connection is the previous response's trailing
        // bytes, not this request's answer: resend it once on a fresh connection.
        if (c.status == 0 && c.attempt == Attempt::kKeptAlive) return retry_on_new_connection(c);
        return fail_request(c, FailureKind::kSseParse, "malformed HTTP response: " + pec.message());
      }
      if (c.parser->is_done()) {
        // 1xx (100 Continue, 103 Early Hints) is an interim response: the real one follows on the stream.
        if (c.status / 100 == 1 && c.status != 101) {
          c.status = 0;
          c.status_reason.clear();
          c.parser.emplace(&c);
          continue;
        }
        // Bytes after the response (an unasked-for second response) make the connection unusable: reusing it
        // would credit them to the next request.
        return complete_message(c, c.parser->keep_alive() && c.used == 0);
      }
      if (c.used == 0 || consumed == 0) break;
    }
    read(c);
  }

  void complete_message(ConnT& c, bool keep_alive) {
    if (c.status / 100 == 2) {
      auto on_event = [this, &c](const char* data, std::size_t size, std::size_t capacity) {
        return apply_event(c.st, json_, data, size, capacity, Clock::now());
      };
      if (!c.st.done) report_sse_status(c, c.sse.finish(on_event));  // a leftover line after [DONE]: ignored
      finish_stream(c.st);
    } else {
      std::string msg = "HTTP " + std::to_string(c.status);
      if (!c.status_reason.empty()) msg += " " + c.status_reason;
      // A server may echo a header or the key it refused ("Incorrect API key provided: sk-..."): what this
      // run sent as a credential is redacted by value, the rest by name.
      if (!c.error_body.empty()) msg += ": " + common::redact_values(c.error_body, run_.secrets);
      c.st.out->http_status = c.status;
      fail(c.st, FailureKind::kHttpStatus, std::move(msg));
      finish_stream(c.st);
    }
    finish_request(c, keep_alive);
  }

  void fail_request(ConnT& c, FailureKind kind, std::string message) {
    fail(c.st, kind, std::move(message));
    finish_stream(c.st);
    finish_request(c, false);
  }

  void finish_request(ConnT& c, bool reuse) {
    const std::size_t idx = c.idx;
    RequestOutput& out = run_.outputs[idx];
    out.end_time_s = run_.rel(Clock::now());
    // The run's duration ends at the last request the server finished, not at a Ctrl-C's cancellations.
    const bool completed = out.failure != FailureKind::kCancelled;
    if (c.status != 0) out.http_status = c.status;
    if (!out.success && out.failure == FailureKind::kNone) {  // failed parse path without a kind
      out.failure = FailureKind::kReset;
    }
    c.idx = kNoRequest;
    ++c.gen;
    error_code ignored;
    c.timer.cancel();
    if (reuse && !stopping_) {
      c.parser.reset();
      idle_.push_back(&c);
    } else {
      close(c);
    }
    if (run_.plan) after_turn(idx);
    on_request_done(completed);
  }

  void on_request_done(bool completed) {
    ++finished_;
    const auto now = Clock::now().time_since_epoch().count();
    auto prev = run_.last_completion.load(std::memory_order_relaxed);
    while (completed && prev < now && !run_.last_completion.compare_exchange_weak(prev, now)) {
    }
    if (!completed) run_.cancelled.fetch_add(1, std::memory_order_relaxed);
    run_.completed.fetch_add(1, std::memory_order_relaxed);
    release_slot();
    check_done();
  }

  void check_done() {
    if (finished_ == owned_) {
      for (ConnT* c : idle_) close(*c);
      idle_.clear();
      grace_timer_.cancel();  // nothing left to cancel: do not wait for the grace period
      dispatch_timer_.cancel();
      guard_.reset();
    }
  }

  void close(ConnT& c) {
    ++c.gen;
    if (c.state != ConnState::kFree) c.state = ConnState::kClosed;
    c.idx = kNoRequest;
    c.timer.cancel();
    if (c.stream) {
      error_code ignored;
      lowest(*c.stream).close(ignored);
    }
    recycle_if_idle(c);
  }

  void recycle_if_idle(ConnT& c) {
    if (c.state == ConnState::kClosed && c.pending == 0 && c.idx == kNoRequest) {
      c.stream.reset();
      c.parser.reset();
      c.state = ConnState::kFree;
      free_.push_back(&c);
    }
  }

  // Request `idx` is never sent; for a session turn, neither are the later turns of its session.
  void mark_not_sent(std::size_t idx, const std::string& why) {
    mark_one_not_sent(idx, why);
    if (run_.plan) abandon(run_.session_of[idx], run_.turn_of[idx] + 1, why);
  }

  void mark_one_not_sent(std::size_t idx, const std::string& why) {
    RequestOutput& out = run_.outputs[idx];
    out.success = false;
    out.failure = FailureKind::kCancelled;
    out.error = why;
    out.send_time_s = 0.0;
    out.dispatch_time_s = 0.0;
    run_.not_sent.fetch_add(1, std::memory_order_relaxed);
    ++finished_;
    run_.cancelled.fetch_add(1, std::memory_order_relaxed);
    run_.completed.fetch_add(1, std::memory_order_relaxed);
  }

  // ---- stop ----
  void begin_stop() {
    if (stopping_) return;
    stopping_ = true;
    dispatch_timer_.cancel();
    for (; next_ < mine_.size(); ++next_) {
      mark_not_sent(mine_[next_], "not sent: run interrupted before its send time");
    }
    for (; !followups_.empty(); followups_.pop()) {
      mark_not_sent(followups_.top().second, "not sent: run interrupted before its send time");
    }
    if (run_.limited) {
      std::vector<std::size_t> waiting = take_waiters(run_.waiters);
      {
        std::lock_guard lock(run_.mu);
        for (std::size_t i = 0; i < run_.admit_waiting.size(); ++i)
          if (run_.admit_waiting[i] == this) run_.admit_waiting[i] = nullptr, waiting.push_back(i);
      }
      for (std::size_t idx : waiting) {
        mark_not_sent(idx, "not sent: run interrupted while waiting for a --max-concurrency slot");
      }
    }
    if (run_.sessions_limited) {
      for (std::size_t idx : take_waiters(run_.session_waiters)) {
        mark_not_sent(idx, "not sent: run interrupted while waiting for a session slot");
      }
    }
    for (ConnT* c : idle_) close(*c);
    idle_.clear();
    if (run_.options.cancel_grace_s > 0) {
      grace_timer_.expires_after(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(run_.options.cancel_grace_s)));
      grace_timer_.async_wait([this](const error_code& ec) {
        if (!ec) abort_in_flight();
      });
    } else {
      abort_in_flight();
    }
    check_done();
  }

  // Removes this worker's entries from a semaphore's wait queue.
  std::vector<std::size_t> take_waiters(std::deque<std::pair<Worker*, std::size_t>>& queue) {
    std::vector<std::size_t> mine_waiting;
    std::lock_guard lock(run_.mu);
    for (auto it = queue.begin(); it != queue.end();) {
      if (it->first == this) {
        mine_waiting.push_back(it->second);
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
    return mine_waiting;
  }

  void abort_in_flight() {
    for (auto& c : conns_) {
      if (c->idx != kNoRequest) fail_request(*c, FailureKind::kCancelled, "cancelled: run interrupted");
    }
    check_done();
  }

  Run<Stream>& run_;
  std::vector<std::size_t> mine_;
  std::size_t owned_ = 0;
  // Released session turns by intended send time (earliest first).
  using Due = std::pair<Clock::time_point, std::size_t>;
  std::priority_queue<Due, std::vector<Due>, std::greater<>> followups_;
  asio::io_context io_{1};
  asio::steady_timer dispatch_timer_;
  asio::steady_timer grace_timer_;
  asio::executor_work_guard<asio::io_context::executor_type> guard_;
  simdjson::ondemand::parser json_;
  std::deque<std::unique_ptr<ConnT>> conns_;
  std::vector<ConnT*> idle_;
  std::vector<ConnT*> free_;
  std::size_t next_ = 0;
  std::size_t finished_ = 0;
  bool stopping_ = false;
};

template <class Stream>
void Conn<Stream>::on_body(std::string_view bytes) {
  if (st.failed) return;
  if (status / 100 == 2) {
    worker->on_events(*this, bytes);
  } else if (error_body.size() < kErrorExcerptBytes) {
    error_body.append(bytes.substr(0, kErrorExcerptBytes - error_body.size()));
  }
}

}  // namespace servelab::client::detail
