// servelab/bench private: the requests of a run, from the dataset flags — independent requests (vLLM's
// datasets, timed_trace with its trace times) or multi-turn conversations (--multi-turn).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "bench/sessions.h"
#include "servelab/bench/config.h"
#include "servelab/client/client.h"

namespace servelab::tokenizer {
class Tokenizer;
}

namespace servelab::bench::detail {

/// What a run sends.
struct Workload {
  std::vector<client::PlannedRequest> planned;  ///< independent requests (empty with multi_turn)
  std::optional<MultiTurnWorkload> multi_turn;  ///< --multi-turn
  /// timed_trace with --self-timed: intended send time of planned[i], seconds (timestamp × multiplier, before
  /// a twin's time scale). Empty otherwise.
  std::vector<double> trace_send_s;
  std::vector<std::string> warnings;  ///< the dataset's warnings, printed as "WARNING: ..." lines

  std::vector<client::PlannedRequest>& requests() { return multi_turn ? multi_turn->requests : planned; }
};

/// Builds the run's requests. vLLM datasets: dataset::sample_requests. timed_trace: dataset::load_trace with
/// the tokenizer's base vocabulary minus its special ids; prompts as token lists; output length
/// `output_length` (or --output-len). --multi-turn: dataset::sample_conversations (tokens counted without
/// special tokens) and make_multi_turn (think time in wall seconds, divide by a twin's time scale before the
/// run). Throws std::runtime_error from the dataset (file, record, problem).
Workload build_workload(const RunOptions& config, const ResolvedConfig& resolved,
                        const tokenizer::Tokenizer& tok);

}  // namespace servelab::bench::detail
