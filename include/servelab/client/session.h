// servelab/client: multi-turn sessions on top of run_load — requests that depend on earlier ones. A session
// is a chain of turns: turn k+1 is built and sent only after turn k finished (plus a think time), on the same
// I/O thread, so that its body can carry the answers received so far (chat history).
#pragma once

#include <cstddef>
#include <functional>
#include <span>
#include <stop_token>
#include <vector>

#include "servelab/client/client.h"
#include "servelab/metrics/request_output.h"

namespace servelab::client {

/// Builds turn `turn` (≥ 1) of session `session` once turn `turn - 1` finished successfully; `previous` is
/// that turn's record (generated_text holds the answer's content, output_tokens its length). Returns the
/// request to send. Called on an I/O thread: calls for one session come from one thread, in turn order, but
/// different sessions may be built concurrently. May throw: the session's remaining turns are then not sent
/// (recorded as failures carrying the exception's text).
using NextTurnFn = std::function<PlannedRequest(std::size_t session, std::size_t turn,
                                                const metrics::RequestOutput& previous)>;

/// How requests form sessions (run_sessions).
struct SessionPlan {
  /// Per session, the indexes (into run_sessions' `requests`) of its turns in sending order. Each request
  /// belongs to exactly one session. The first turn of each session is sent on `session_start_s`; a later
  /// turn's entry in `requests` is a placeholder replaced by `next_turn` (its prompt_len, output_len and
  /// request_id are still used when the turn is never sent).
  std::vector<std::vector<std::size_t>> sessions;
  /// Sessions in progress at once: a session's first turn waits (FIFO) for a slot and keeps it until its last
  /// turn ended (AIPerf / GenAI-Perf session concurrency). 0 = no limit. Independent of
  /// ClientOptions::max_concurrency, which still bounds the requests in flight.
  int session_concurrency = 0;
  /// Pause between the end of a turn and the intended send time of the next one, seconds (user think time).
  double think_time_s = 0.0;
  /// Builds turns ≥ 1; required when a session has more than one turn.
  NextTurnFn next_turn;
};

/// Runs sessions: session s's first turn is intended at `session_start_s[s]` (non-decreasing in s: an arrival
/// schedule such as arrival_schedule's), then each next turn is intended at the previous turn's completion +
/// think_time_s and measured against that (schedule lag = dispatch − intended, wrk2-style: a slow client
/// does not move the intended time). A failed turn ends its session: the later turns are not sent and are
/// recorded as kCancelled with the error "not sent: turn K of its session failed (...)". Everything else is
/// run_load's (semaphore, keep-alive, stop, token counting); outputs[i] is the record of requests[i] and
/// intended_send_time_s of a later turn is its dependent intended time. generated_text is kept during the
/// run for next_turn (and dropped afterwards unless ClientOptions::keep_generated_text).
/// Throws std::invalid_argument for bad options, a request in no or several sessions, a session without
/// turns, start times not finite/non-decreasing or of the wrong count, a negative think time or session
/// concurrency, or a multi-turn session without next_turn — before anything is sent.
/// Thread-safety: as run_load.
LoadResult run_sessions(const ClientOptions& options, std::span<const PlannedRequest> requests,
                        const SessionPlan& plan, std::span<const double> session_start_s,
                        const ProgressCallback& progress = {}, std::stop_token stop = {});

namespace detail {
/// run_sessions' checks and per-request schedule: the first turn of session s at session_start_s[s], later
/// turns 0 (set when released). Throws std::invalid_argument as documented at run_sessions.
std::vector<double> session_schedule(std::size_t num_requests, const SessionPlan& plan,
                                     std::span<const double> session_start_s);
}  // namespace detail

}  // namespace servelab::client
