// servelab/sim (private): the discrete-event simulation of one resolved launch. Per DP rank the engine's
// own scheduler (vLLM V1, SGLang, TRT-LLM in-flight batching, by ResolvedLaunch::scheduler.kind) runs over
// its KV pool; all ranks advance in lock-step; with pipeline parallelism up to `pp` micro-batches are in
// flight, one stage apart, and a micro-batch's tokens leave when it has passed every stage.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/engines/launch.h"
#include "servelab/metrics/request_output.h"
#include "servelab/sim/memory_plan.h"
#include "servelab/sim/sim.h"
#include "servelab/sim/trace.h"
#include "sim/api_server.h"
#include "sim/sim_detail.h"

namespace servelab::sim::detail {

enum class ReqState : std::uint8_t { kNotArrived, kWaiting, kRunning, kDone, kFailed };

struct Req {
  int prompt = 0;      ///< engine-side prompt tokens (chat template included)
  int output_len = 0;  ///< output tokens to generate
  int prefill_target =
      0;                ///< tokens to hold in KV before the next token (prompt, + generated after preemption)
  int computed = 0;     ///< tokens in the KV cache
  int generated = 0;    ///< output tokens emitted
  double kv_bytes = 0;  ///< KV bytes held on each GPU of its rank
  /// The tokens kv_bytes was sized for (request_kv_bytes grows with tokens: fewer need no new blocks).
  long long kv_tokens = 0;
  int rank = 0;
  int sched = 0;           ///< tokens scheduled in the micro-batch in flight (0 = not scheduled)
  bool in_flight = false;  ///< part of a micro-batch still in the pipeline
  int micro_batch = -1;    ///< SGLang pipeline parallelism: the micro-batch whose running batch holds it
  // Prefix cache after a preemption: the freed blocks stay cached (evictable) until the pool's LRU
  // reaches them; a request re-admitted before that recomputes only what was evicted.
  double cached_bytes = 0;    ///< bytes of its KV left in the cache when it was preempted
  double cached_tokens = 0;   ///< tokens those bytes held
  double evict_after = 0;     ///< the rank's allocation counter beyond which they start to be evicted
  int prefix_group = -1;      ///< WorkloadRequest::prefix_group
  int shared_prefix_len = 0;  ///< WorkloadRequest::shared_prefix_len
  bool holds_prefix = false;  ///< counted among its group's SharedPrefix::holders on its rank
  bool prefix_owner = false;  ///< its prefill writes the group's cached prefix (it extends it chunk by chunk)
  /// KV bytes of its group's cached prefix blocks it references (held by the SharedPrefix, not in
  /// kv_bytes): alloc() charges the request only for the rest of its tokens.
  double shared_bytes = 0;
  ReqState state = ReqState::kNotArrived;
  double send_s = 0, last_emit_s = 0;
};

/// A prefix group's cached prompt blocks on one rank (prefix caching on): written by the group's first
/// prefill, pinned (counted as used, once) while requests of the group reference them, then free but
/// cached, evicted behind every block freed before them (the LRU position evict_after, as a preempted
/// request's blocks: Req::evict_after).
struct SharedPrefix {
  long long tokens = 0;    ///< cached prefix tokens (whole blocks)
  double bytes = 0;        ///< the KV bytes they hold on each GPU of the rank
  int holders = 0;         ///< requests of the group referencing them (pinned while > 0)
  double evict_after = 0;  ///< the rank's allocation counter beyond which they start to be evicted
};

struct Rank {
  std::deque<int> waiting;
  std::vector<int> running;  ///< admission order
  double free_bytes = 0;
  double total_bytes = 0;
  double peak_used = 0;
  double new_token_ratio = 0.7;  ///< SGLang's future-token reservation ratio
  /// SGLang running_batch.batch_is_full, per micro-batch slot (one without PP): the slot's running count
  /// when an admission ran out of KV, 0 when not full.
  std::vector<int> full_at;
  double allocated = 0;  ///< bytes allocated so far (the LRU position of freed cached blocks)
  RankLoad load;
  // Counters of this rank since start, as vLLM's Prometheus metrics count them (EngineLiveMetrics).
  long long preemptions = 0;
  long long prefix_cache_queries = 0, prefix_cache_hits = 0;  ///< tokens, with prefix caching on
  std::map<int, SharedPrefix> prefixes;                       ///< by prefix group
  long long spec_drafts = 0, spec_draft_tokens = 0, spec_accepted_tokens = 0;
};

/// A micro-batch chosen by the schedulers of all ranks: its requests and scheduled token counts, and
/// its cost.
struct Batch {
  std::vector<std::pair<int, int>> items;  ///< (request id, scheduled tokens)
  std::vector<RankLoad> loads;
  StepCost cost;
  double stage_s = 0;  ///< one pipeline stage (== whole step when pp == 1), seconds
  bool any_prefill = false;
  int max_running = 0, max_tokens = 0;
  int stages_left = 1;
  int slot = -1;  ///< SGLang pipeline parallelism: the micro-batch slot it runs in (-1: none)
};

class Simulator {
 public:
  Simulator(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
            const Calibration& cal, std::uint64_t seed);

  const MemoryPlan& plan() const { return plan_; }
  const engines::ResolvedLaunch& launch() const { return launch_; }
  int in_flight() const { return in_flight_; }

  /// Registers a request (not yet sent). `engine_prompt` counts the chat template; `reported_prompt` is
  /// what the benchmark counts. Returns its id.
  /// `prefix_group` / `shared_prefix_len`: WorkloadRequest's (prompt tokens shared within the group).
  int add_request(int engine_prompt, int output_len, int reported_prompt, int prefix_group = -1,
                  int shared_prefix_len = 0);
  /// Why the engine turns a request of `prompt` + `output_len` tokens away at arrival (nullopt: accepted):
  /// the engine module's context-length rule (engines::check_request, an HTTP 400), then, where the engine
  /// bounds one request by its rank's KV pool (SchedulerPolicy::request_len_from_pool), the abort its
  /// scheduler sends inside the stream (HTTP 200).
  struct Refusal {
    metrics::FailureKind kind = metrics::FailureKind::kHttpStatus;
    int http_status = 400;
    std::string message;
  };
  std::optional<Refusal> refusal(int prompt, int output_len) const;
  /// The output tokens the engine emits for a request it accepts: `output_len`, or fewer where it clips
  /// max_new_tokens to one request's share of the pool (SchedulerPolicy::request_len_from_pool).
  int admitted_output(int prompt, int output_len) const;
  /// The client sends the request at `t`: refused (refusal()) or queued at the API server, which hands
  /// requests to the engine one after another (Calibration::api_request_ms). An accepted request's output
  /// is clipped where the engine clips max_new_tokens to the pool (SchedulerPolicy::request_len_from_pool).
  std::optional<std::string> send(int id, double t);
  /// send() for a request refusal() turns away (its failure recorded, its message returned); nullopt, and
  /// nothing sent, for one it accepts. One check where a caller must know the verdict before queuing.
  std::optional<std::string> send_if_refused(int id, double t);
  /// Advances the API server to `t` and hands to the engine's router every request it finished by `cut`
  /// (<= t; default t); later ones wait for the next call. With an overlapped scheduler the step that
  /// follows `t` was formed when the step ending at `t` began, so run() passes that start as `cut`.
  /// With SchedulerPolicy::recv_interval > 1 the engine takes hand-offs only on a step whose receive
  /// counter is full (recv_counter_); the others stay with the API server's output until then.
  void deliver(double t, double cut = std::numeric_limits<double>::infinity());

  /// When the API server hands its next request to the engine (+inf when none is inside).
  double next_delivery() const { return api_.next_completion(); }
  /// The request the next delivery is for (-1 when none).
  int next_delivery_id() const { return api_.next_completion_id(); }
  /// Drops a request (client gone); frees its KV unless it is in a micro-batch in flight (then on exit).
  void cancel(int id);

  /// Forms the next micro-batch from requests that are not in flight; nullopt when nothing is schedulable.
  std::optional<Batch> plan_batch();
  /// plan_batch() until `pipe` holds pipeline_depth() micro-batches; when nothing is schedulable while
  /// hand-offs are held back by deliver's `cut`, the idle engine takes them at `t` and plans again.
  void plan_into(std::deque<Batch>& pipe, double t);
  /// A micro-batch leaves the pipeline at `t`: KV grows, tokens are emitted, finished requests leave.
  void finish_batch(const Batch& b, double t);
  /// Keeps a finished micro-batch's buffers for the next plan_batch() (a step allocates nothing).
  void recycle(Batch&& b);
  /// Aborts requests that can never be scheduled (need more KV than a rank holds); returns how many.
  int drop_unschedulable();
  /// One pipeline tick (an engine step) has passed.
  void count_tick() { ++view_.steps; }
  /// Pipeline depth (micro-batches in flight at most).
  int pipeline_depth() const { return std::max(1, launch_.layout.pp); }
  /// An overlapped scheduler (vLLM async scheduling, SGLang's overlap loop, TensorRT-LLM's overlap
  /// scheduler) forms step k+1 while step k runs, so a hand-off after step k began joins step k+2
  /// (vLLM PR #19970). Only without pipeline stages: PP runs its own micro-batch queue.
  bool overlapped_scheduler() const { return launch_.execution.async_scheduling && pipeline_depth() == 1; }

  /// Emitted tokens (online mode) and per-request outputs.
  struct Emission {
    int id;
    int first;  ///< output index of the first token; -1 = aborted by the engine
    int count;
    double t_s;
  };
  void set_sink(std::vector<Emission>* sink, bool record_timings) {
    sink_ = sink;
    record_ = record_timings;
  }
  void set_trace(Trace* trace) { trace_ = trace; }
  /// Whether emit() records inter-token latencies and chunk sizes (WorkloadOptions::per_token_timings).
  void set_record_timings(bool record) { record_ = record; }
  std::vector<metrics::RequestOutput>& outputs() { return out_; }
  TwinView view();
  /// The live state of each DP rank (sim serve's /metrics).
  std::vector<EngineLiveMetrics> live_metrics() const;

  /// The full offline run: arrivals from `arrival` (s), optional client concurrency cap. Steps through
  /// the same EventLoop (event_loop.h) as the online twin.
  void run(const std::vector<double>& arrival, std::optional<int> max_concurrency);
  double now() const { return now_s_; }

 private:
  /// Records request `id` as failed with `no` (kind, HTTP status, message); returns the message.
  std::string fail_refused(int id, Refusal no);
  friend class EventLoop;  // event_loop.h: steps the simulation (idle time, trace, the clock of drops)
  class Client;            // the benchmark client of run() (simulate.cc)
  /// Appends the step that `slow` (the pipeline's slowest micro-batch) set to the trace.
  void record_step(const Batch& slow, double not_before, int wake);
  /// SGLang's max_req_len (SchedulerPolicy::request_len_from_pool), tokens; 0 where the engine sets none.
  long long max_request_len() const;
  void route(int id);
  void schedule_vllm(Rank& r, int rank);
  void schedule_sglang(Rank& r, int rank);
  void decode_sglang(Rank& r);
  /// `contexts_allowed`: this step may start contexts (trtllm_contexts_balanced).
  void schedule_trtllm(Rank& r, bool contexts_allowed);
  /// TensorRT-LLM attention-DP context balancing (SchedulerPolicy::dp_balance): whether this step may
  /// start contexts; advances its step counters and TwinView::contexts_held_steps.
  bool trtllm_contexts_balanced();
  /// A waiting prompt of `tokens` that chunked prefill cannot split did not fit the step's budget left:
  /// counted in TwinView::contexts_over_budget_steps when the whole budget holds it and the step's
  /// `generation_tokens` alone keep it out.
  void note_context_over_budget(int tokens, int generation_tokens);
  /// The same for the head of `r`'s queue when the generation tokens took the whole budget (the admission
  /// loop, which stops at a spent budget, never reaches it): without chunked prefill, below the running cap.
  void note_head_over_budget(const Rank& r, int generation_tokens);
  bool alloc(Rank& r, Req& q, long long tokens);
  void release(Rank& r, Req& q);
  void preempt(Rank& r, int id);
  /// The share of `bytes` of free-but-cached blocks still cached on `r`: the allocations since they were
  /// freed evict them once they pass `evict_after` (the LRU position recorded when they were freed).
  static double surviving_fraction(const Rank& r, double bytes, double evict_after);
  void restore_cached_prefix(Rank& r, Req& q);
  /// A request of a prefix group whose prefill has computed its shared prefix: the group's blocks are
  /// cached on its rank (prefix caching on) and it holds them.
  void cache_shared_prefix(Rank& r, Req& q);
  void count_prefix_lookup(Rank& r, const Req& q);
  int draft_tokens(int scheduled) const;
  void account(Rank& r, int id, int n);
  void emit(int id, int tokens, double t);
  int verify_tokens() const;
  int accepted_tokens(int id, int scheduled) const;
  double tokens_of_bytes(double bytes) const;

  engines::ResolvedLaunch launch_;
  hardware::ClusterSpec cluster_;
  Calibration cal_;
  std::uint64_t seed_;
  MemoryPlan plan_;
  StepModel model_;
  int max_running_ = 0;
  // SGLang pipeline parallelism (scheduler event_loop_pp): pp micro-batch slots, each with its own
  // running batch; slot_ is the one being scheduled (-1 outside plan_batch or without PP slots).
  std::vector<char> slot_busy_;
  int next_slot_ = 0, slot_ = -1;
  std::optional<Batch> plan_slot();
  std::vector<Req> reqs_;
  std::vector<Rank> ranks_;
  std::vector<metrics::RequestOutput> out_;
  TwinView view_;
  int rr_next_ = 0;
  // SchedulerPolicy::dp_balance: steps contexts have waited for every rank to have one, and for batching.
  int balance_wait_steps_ = 0, balance_batching_steps_ = 0;
  long long step_index_ = 0;
  int in_flight_ = 0, finished_ = 0;
  double sum_batch_ = 0, sum_tokens_ = 0;
  double now_s_ = 0;
  double last_emit_s_ = 0;  ///< latest token a client has seen (emit), s: the run ends no earlier
  std::vector<int> scratch_ids_;
  Batch spare_;    ///< buffers of a finished micro-batch, reused by plan_slot (recycle)
  ApiServer api_;  ///< the engine's API server (api_server.h)
  std::vector<std::pair<double, int>> handed_off_;  ///< (time, id) finished by the API, not yet routed
  /// SchedulerPolicy::recv_interval's counter: + 1 per decode-only step, + the interval per other step and
  /// when the engine idles (plan_into); the engine polls (deliver routes) when it has reached the interval,
  /// and the poll empties it.
  int recv_counter_ = 0;
  /// A client-visible completion: the client's concurrency slot frees at `t_s`.
  struct SlotFree {
    double t_s = 0;
    int step = -1;       ///< trace step that produced it (-1 = none)
    bool token = false;  ///< freed by the request's last token (first_token_ms after the step's end)
    bool operator>(const SlotFree& o) const { return t_s != o.t_s ? t_s > o.t_s : step > o.step; }
  };
  /// Client-visible completions, in order.
  std::vector<SlotFree> client_done_;
  int step_trace_index() const { return trace_ ? static_cast<int>(trace_->steps.size()) - 1 : -1; }
  std::vector<Emission>* sink_ = nullptr;
  bool record_ = true;
  Trace* trace_ = nullptr;
};

/// The calibration level, fitted parameters and error band of `launch` on `cluster` (options.calibration,
/// else the embedded table): what predict_resolved and OnlineTwin::create price a prediction with.
PredictionContext make_context(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                               const WorkloadOptions& options);

/// The PredictedFailure kind of a launch the engine module refuses: runtime, else startup.
PredictedFailure::Kind failure_kind(const engines::LaunchFailure& f);

}  // namespace servelab::sim::detail
