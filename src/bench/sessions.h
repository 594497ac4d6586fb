// servelab/bench private: the multi-turn conversation benchmark (`--multi-turn`): the turns of every
// conversation as client sessions (each turn sent with its history, the next one after the previous finished
// plus the think time), and the per-turn and per-conversation metrics of the console extras and the result
// JSON's servelab section.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/client/session.h"
#include "servelab/dataset/multi_turn.h"
#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"

namespace servelab::bench::detail {

/// The assistant messages of a turn's history (--multi-turn-history).
enum class HistoryMode {
  kServer,   ///< the server's actual answers to the earlier turns (vLLM benchmarks/multi_turn, AIPerf)
  kDataset,  ///< the answers recorded in the file (same prompts on every run and server)
};

/// The conversations as client sessions. Thread-safety: plan.next_turn may be called concurrently for
/// different conversations (each writes only its own conversation's slot of the shared state).
struct MultiTurnWorkload {
  std::shared_ptr<const std::vector<dataset::ChatConversation>> conversations;
  /// Every turn, conversation-major (conversation c, turn t at first_request[c] + t); later turns are
  /// placeholders with the dataset's lengths until plan.next_turn builds them.
  std::vector<client::PlannedRequest> requests;
  std::vector<std::size_t> first_request;  ///< per conversation
  client::SessionPlan plan;
  HistoryMode history = HistoryMode::kServer;
};

/// The chat messages of turn `turn` of `c` (system prompt, then user/assistant pairs, then the turn's user
/// message), as a JSON array of {"role", "content": string} (OpenAI chat format, as vLLM's multi-turn
/// benchmark sends them). `answers[j]` is the assistant content of turn j < turn.
std::string turn_messages_json(const dataset::ChatConversation& c, std::size_t turn,
                               const std::vector<std::string>& answers);

/// Builds the workload. Request ids: request_id_prefix + "<conversation>-<turn>". prompt_len of turn t (the
/// client-side input count): system + user tokens of turns ≤ t + answer tokens of turns < t (recorded ones,
/// or the server's output_tokens with kServer); chat-template tokens are not counted (the server's usage is).
/// think_time_s and session_concurrency go to the plan (0 concurrency = every conversation may be active).
MultiTurnWorkload make_multi_turn(std::vector<dataset::ChatConversation> conversations, HistoryMode history,
                                  const std::string& request_id_prefix, int session_concurrency,
                                  double think_time_s);

/// Statistics of one turn index over all conversations.
struct TurnMetrics {
  std::size_t turn = 0;          ///< 0-based turn index
  int sent = 0;                  ///< turns with this index that were sent
  int completed = 0;             ///< ... and succeeded
  int not_sent = 0;              ///< never sent (an earlier turn failed, or the run was interrupted)
  metrics::LatencySummary ttft;  ///< successes, ms
  metrics::LatencySummary e2el;  ///< successes, ms
  double mean_input_tokens =
      0;  ///< successes: server usage.prompt_tokens when reported, else the client count
  double mean_output_tokens = 0;  ///< successes
};

/// Per-conversation and per-turn metrics of a multi-turn run (times in the run's clock: engine time for a
/// twin).
struct SessionMetrics {
  int conversations = 0;
  int completed = 0;    ///< conversations whose every turn succeeded
  int turns_total = 0;  ///< turns in the workload
  int turns_completed = 0;
  /// Conversation duration: last turn's end (send + latency) minus the first turn's send, completed
  /// conversations, ms (think times and client waits between turns included).
  metrics::LatencySummary duration;
  /// First turns: from the conversation's arrival (intended time) to its send — the wait for a session slot
  /// (--session-concurrency) plus the client's lag and queue, ms.
  metrics::LatencySummary session_wait;
  /// Later turns: from the intended time (previous turn's end + think time) to the send — the client's lag
  /// plus the --max-concurrency queue, ms. Near 0 unless the client or the request limit holds turns back.
  metrics::LatencySummary turn_wait;
  double conversation_throughput = 0;  ///< completed conversations / benchmark duration, conv/s
  std::vector<TurnMetrics> per_turn;
};

/// Computes SessionMetrics from the run's records (outputs[i] of workload.requests[i]). `percentiles` as
/// --metric-percentiles. Throws std::invalid_argument when outputs and requests differ in size.
SessionMetrics session_metrics(const MultiTurnWorkload& workload,
                               const std::vector<metrics::RequestOutput>& outputs, double duration_s,
                               const std::vector<double>& percentiles);

/// The console section (after servelab's extras): banner " multi-turn sessions ", the settings, the
/// conversation lines, then one line per turn index (sent, ok, mean/P<p> TTFT, mean E2EL, mean input tokens).
std::string format_session_metrics(const SessionMetrics& m, HistoryMode history, double think_time_ms,
                                   int session_concurrency);

/// The result JSON's servelab.multi_turn object (the same numbers as the console).
nlohmann::ordered_json session_metrics_json(const SessionMetrics& m, HistoryMode history,
                                            double think_time_ms, int session_concurrency);

}  // namespace servelab::bench::detail
