// servelab/sim: the trace of a simulated run — each step's cost split by what the fitted parameters
// scale, and when each request's tokens left — so that a run can be re-timed under another calibration
// in microseconds instead of re-simulated (fit.cc). The batch compositions are those of the traced run:
// exact when arrivals do not depend on timing (request rate inf, no concurrency cap), an approximation
// otherwise (the fit re-simulates between rounds).
#pragma once

#include <vector>

#include "servelab/sim/calibration.h"

namespace servelab::sim {

/// One step (pipeline tick) of a traced run, as the simulator records it (Trace::add_step). Seconds.
struct TraceStep {
  float gpu_s = 0, memory_s = 0, comm_s = 0, floor_s = 0;  ///< detail::StepCost's fields (s)
  float launch_kernels = 0;                                ///< detail::StepCost::launch_kernels
  int running = 0;
  bool overlap = false;
  float api_stream_chunks = 0;  ///< detail::StepCost::api_stream_chunks
  double not_before_s = 0;      ///< the step could not start before this arrival (0 = right after the last)
  int wake_request = -1;        ///< the request whose API-server hand-off ended the idle wait (-1: none)
};

/// One request of a traced run.
struct TraceRequest {
  double arrival_s = 0;      ///< intended send time
  int send_after_step = -1;  ///< sent when this step ended (client concurrency cap), -1 = at arrival
  /// With send_after_step: sent when the client had the last token of the request that held the slot,
  /// Calibration::first_token_ms after that step's end (false: at the step's end, a refused request's slot).
  bool send_after_token = false;
  int first_step = -1;    ///< step whose end emitted the first token (-1 = none)
  int last_step = -1;     ///< step whose end emitted the last token
  int prompt_tokens = 0;  ///< as the benchmark counts them
  int output_tokens = 0;  ///< tokens emitted
  bool success = false;
};

/// The steps of a traced run, column by column (what replay reads, in the order it reads it: a fit
/// re-times every trace hundreds of times). Entry i of every column is step i (TraceStep's fields).
struct TraceSteps {
  std::vector<double> kernel_s;  ///< gpu_s - memory_s: the kernel time kernel_scale divides (s)
  std::vector<float> memory_s, comm_s, floor_s, launch_kernels, api_stream_chunks;
  std::vector<int> running;
  std::vector<unsigned char> overlap;  ///< 1: CPU work overlaps the GPU's
  /// How many simulated steps entry i stands for (1 as recorded; more after compress_trace, which merges
  /// runs of like steps into their mean): replay counts entry i's seconds this many times.
  std::vector<float> repeat;
  /// A step that waited for an arrival (TraceStep::not_before_s > 0) or an API-server hand-off, in step
  /// order; the other steps start when the previous one ends.
  struct Wait {
    int step = 0;
    double not_before_s = 0;
    int wake_request = -1;
  };
  std::vector<Wait> waits;
  std::size_t size() const { return kernel_s.size(); }
};

/// A traced run.
struct Trace {
  TraceSteps steps;
  std::vector<TraceRequest> requests;
  /// The launch's API server renders chat requests with openai_harmony (ExecutionPolicy::harmony_chat): its
  /// work per request is Calibration::api_request_ms x harmony_api_share (physics.h api_work_share).
  bool harmony_chat = false;
  bool api_fifo = false;  ///< ExecutionPolicy::api_fifo: the API server serves requests one at a time
  /// Appends step `s` (the next index) to the columns.
  void add_step(const TraceStep& s);
};

/// The headline numbers of a run (tok/s, ms, s).
struct HeadlineMetrics {
  double total_tok_s = 0;
  double output_tok_s = 0;
  double mean_ttft_ms = 0;
  double mean_tpot_ms = 0;
  double duration_s = 0;
  int completed = 0;
};

/// `trace` with each run of consecutive steps merged into one entry (TraceSteps::repeat) when nothing
/// happens inside the run and its steps are alike: no request's first token, last token or send and no
/// wait refers to a step of the run but its last (a wait may precede its first); the same `running` and
/// `overlap`; the spreads of the time columns (kernel, memory, comm, floor seconds) adding up to within
/// `tolerance` of the run's smallest step seconds, and each count (launch kernels, stream chunks) within
/// `tolerance` of its smallest (0 stays 0). The entry holds the run's means. Its linear terms replay
/// exactly; a max() of detail::step_seconds_of moves by at most about `tolerance` / kernel_scale of the
/// run's time, so replay() of the result stays that close to replay() of `trace` under any calibration,
/// with far fewer steps to re-time. `tolerance` >= 0; 0 merges identical steps only.
Trace compress_trace(const Trace& trace, double tolerance);

/// Re-times `trace` under `cal` and returns its headline metrics, computed as vLLM bench serve does
/// (duration to the last completion; TPOT over requests with more than one output token). Pure.
HeadlineMetrics replay(const Trace& trace, const Calibration& cal);

}  // namespace servelab::sim
