// run_sessions' argument checks (the session logic itself runs in load.cc's workers).
#include "servelab/client/session.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace servelab::client::detail {

std::vector<double> session_schedule(std::size_t num_requests, const SessionPlan& plan,
                                     std::span<const double> session_start_s) {
  const std::size_t num_sessions = plan.sessions.size();
  if (session_start_s.size() != num_sessions) {
    throw std::invalid_argument("run_sessions: " + std::to_string(session_start_s.size()) +
                                " start times for " + std::to_string(num_sessions) + " sessions");
  }
  if (!(plan.think_time_s >= 0.0) || plan.think_time_s > 1e6) {
    throw std::invalid_argument("run_sessions: think time must be in [0, 1e6] s, got " +
                                std::to_string(plan.think_time_s));
  }
  if (plan.session_concurrency < 0) {
    throw std::invalid_argument("run_sessions: session concurrency must be >= 0, got " +
                                std::to_string(plan.session_concurrency));
  }
  std::vector<double> schedule(num_requests, 0.0);
  std::vector<char> seen(num_requests, 0);
  for (std::size_t s = 0; s < num_sessions; ++s) {
    const auto& turns = plan.sessions[s];
    if (turns.empty())
      throw std::invalid_argument("run_sessions: session " + std::to_string(s) + " has no turns");
    if (turns.size() > 1 && !plan.next_turn) {
      throw std::invalid_argument("run_sessions: session " + std::to_string(s) +
                                  " has several turns but the plan has no next_turn function");
    }
    const double start = session_start_s[s];
    if (!std::isfinite(start) || start < 0.0 || (s > 0 && start < session_start_s[s - 1])) {
      throw std::invalid_argument("run_sessions: start time of session " + std::to_string(s) + " is " +
                                  std::to_string(start) + " s (must be finite, >= 0 and non-decreasing)");
    }
    for (std::size_t idx : turns) {
      if (idx >= num_requests || seen[idx]) {
        throw std::invalid_argument("run_sessions: request " + std::to_string(idx) + " of session " +
                                    std::to_string(s) +
                                    (idx >= num_requests ? " does not exist" : " is in several sessions"));
      }
      seen[idx] = 1;
    }
    schedule[turns.front()] = start;
  }
  for (std::size_t i = 0; i < num_requests; ++i) {
    if (!seen[i])
      throw std::invalid_argument("run_sessions: request " + std::to_string(i) + " is in no session");
  }
  return schedule;
}

}  // namespace servelab::client::detail
