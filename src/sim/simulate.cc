// The twin's discrete-event simulation (see simulator.h): requests arrive, the engine's scheduler of
// each DP rank forms a micro-batch, the step model prices it, its tokens leave at its end.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "servelab/common/hash.h"
#include "servelab/metrics/metrics.h"
#include "servelab/schedule/schedule.h"
#include "sim/event_loop.h"
#include "sim/simulator.h"

namespace servelab::sim {
namespace detail {
namespace {

using common::splitmix64;

}  // namespace

Simulator::Simulator(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                     const Calibration& cal, std::uint64_t seed)
    : launch_(launch),
      cluster_(cluster),
      cal_(cal),
      seed_(seed),
      plan_(plan_memory(launch, cluster)),
      model_(launch, cluster),
      api_(cal.api_request_ms * 1e-3 * detail::api_work_share(launch.execution, cal),
           launch.execution.api_fifo) {
  launch_.max_model_len = plan_.max_model_len;  // the engine may have lowered it to fit (memory_plan.cc)
  ranks_.assign(std::max(1, launch_.layout.dp_ranks), Rank{});
  for (auto& r : ranks_) {
    r.free_bytes = r.total_bytes = std::max(0.0, plan_.kv_budget_bytes);
    r.new_token_ratio = std::min(1.0, 0.7 * launch_.scheduler.conservativeness);
  }
  max_running_ = launch_.scheduler.max_num_seqs;
  if (launch_.scheduler.max_num_seqs_from_pool || max_running_ <= 0) {
    // SGLang (model_runner.py): req_to_token pool = clamp(tokens / context_len * 512, 2048, 4096) per
    // worker, max_running_requests = min(pool, max_total_tokens / 2); a user cap applies on top.
    const long long tokens = plan_.kv_tokens_per_rank;
    const long long pool =
        std::clamp<long long>(tokens * 512 / std::max(1, launch_.max_model_len), 2048, 4096);
    const int from_pool = static_cast<int>(std::max<long long>(1, std::min<long long>(pool, tokens / 2)));
    max_running_ = max_running_ > 0 ? std::min(max_running_, from_pool) : from_pool;
  }
  // A separate recurrent-state pool (SGLang MambaPool) caps the running requests (memory_plan.h).
  if (plan_.max_running_from_states > 0)
    max_running_ = std::max(1, std::min(max_running_, plan_.max_running_from_states));
  view_.memory = plan_;
  // SGLang runs pp micro-batches, each a running batch of its own (managers/scheduler.py event_loop_pp:
  // running_mbs[mb_id], one get_next_batch_to_run per slot) [recalled]; vLLM's batch queue instead
  // schedules every request not in flight into the next batch.
  if (launch_.scheduler.kind == engines::SchedulerPolicy::Kind::kSglang &&
      launch_.scheduler.pp_micro_batches > 1)
    slot_busy_.assign(launch_.scheduler.pp_micro_batches, 0);
}

int Simulator::add_request(int engine_prompt, int output_len, int reported_prompt, int prefix_group,
                           int shared_prefix_len) {
  const int id = static_cast<int>(reqs_.size());
  Req q;
  q.prompt = engine_prompt;
  q.output_len = output_len;
  q.prefill_target = q.prompt;
  if (prefix_group >= 0 && shared_prefix_len > 0) {
    q.prefix_group = prefix_group;
    q.shared_prefix_len = std::min(shared_prefix_len, engine_prompt);
  }
  reqs_.push_back(q);
  metrics::RequestOutput o;
  o.prompt_len = reported_prompt;
  o.output_len = output_len;
  o.request_id = fmt::format("sim-{}", id);
  out_.push_back(std::move(o));
  if (trace_) trace_->requests.push_back(TraceRequest{.prompt_tokens = reported_prompt});
  return id;
}

long long Simulator::max_request_len() const {
  if (!launch_.scheduler.request_len_from_pool) return 0;
  return std::max<long long>(1, std::min<long long>(launch_.max_model_len, plan_.kv_tokens_per_rank) - 1);
}

std::optional<Simulator::Refusal> Simulator::refusal(int prompt, int output_len) const {
  if (auto message = engines::check_request(launch_, prompt, output_len)) return Refusal{.message = *message};
  if (const long long cap = max_request_len(); cap > 0 && prompt >= cap - 5)
    return Refusal{
        .kind = metrics::FailureKind::kServerError,
        .http_status = 200,
        .message = fmt::format("Input length ({} tokens) exceeds the maximum allowed length ({} tokens). "
                               "Use a shorter input or enable --allow-auto-truncate.",
                               prompt, cap - 5)};
  return std::nullopt;
}

int Simulator::admitted_output(int prompt, int output_len) const {
  const long long cap = max_request_len();
  return cap > 0 ? static_cast<int>(std::max<long long>(1, std::min<long long>(output_len, cap - prompt - 1)))
                 : output_len;
}

std::string Simulator::fail_refused(int id, Refusal no) {
  Req& q = reqs_[id];
  auto& o = out_[id];
  q.state = ReqState::kFailed;
  o.success = false;
  o.failure = no.kind;
  o.http_status = no.http_status;
  o.error = std::move(no.message);
  return o.error;
}

std::optional<std::string> Simulator::send_if_refused(int id, double t) {
  Req& q = reqs_[id];
  auto no = refusal(q.prompt, q.output_len);
  if (!no) return std::nullopt;
  q.send_s = t;
  out_[id].send_time_s = t;
  return fail_refused(id, std::move(*no));
}

std::optional<std::string> Simulator::send(int id, double t) {
  Req& q = reqs_[id];
  auto& o = out_[id];
  q.send_s = t;
  o.send_time_s = t;
  if (auto no = refusal(q.prompt, q.output_len)) return fail_refused(id, std::move(*no));
  q.output_len = admitted_output(q.prompt, q.output_len);
  // The API server's work on the request (processor sharing, or FIFO: api_server.h), then the hand-off.
  api_.arrive(id, t, handed_off_);
  ++in_flight_;
  return std::nullopt;
}

void Simulator::deliver(double t, double cut) {
  api_.advance(t, handed_off_);
  if (const int interval = launch_.scheduler.recv_interval; interval > 1) {
    if (recv_counter_ < interval) return;  // SGLang SchedulerRecvSkipper: no poll this step
    recv_counter_ = 0;
  }
  std::size_t kept = 0;
  for (const auto& [at, id] : handed_off_) {
    if (at > cut) {
      handed_off_[kept++] = {at, id};
      continue;
    }
    if (reqs_[id].state == ReqState::kNotArrived) route(id);
  }
  handed_off_.resize(kept);
}

void Simulator::cancel(int id) {
  Req& q = reqs_[id];
  if (q.state == ReqState::kNotArrived) {
    // Still at the API server: never handed off.
    if (!api_.remove(id)) return;
    q.state = ReqState::kFailed;
    out_[id].success = false;
    out_[id].failure = metrics::FailureKind::kCancelled;
    ++finished_;
    --in_flight_;
    return;
  }
  if (q.state != ReqState::kWaiting && q.state != ReqState::kRunning) return;
  Rank& r = ranks_[q.rank];
  if (auto it = std::find(r.waiting.begin(), r.waiting.end(), id); it != r.waiting.end()) r.waiting.erase(it);
  if (auto it = std::find(r.running.begin(), r.running.end(), id); it != r.running.end()) r.running.erase(it);
  release(r, q);
  q.sched = 0;
  q.state = ReqState::kFailed;
  out_[id].success = false;
  out_[id].failure = metrics::FailureKind::kCancelled;
  ++finished_;
  --in_flight_;
}

std::optional<Batch> Simulator::plan_batch() {
  if (slot_busy_.empty()) return plan_slot();
  // SGLang PP: the next free slot (in ring order) that has work forms the batch.
  const int n = static_cast<int>(slot_busy_.size());
  for (int k = 0; k < n; ++k) {
    const int s = (next_slot_ + k) % n;
    if (slot_busy_[s]) continue;
    slot_ = s;
    auto b = plan_slot();
    slot_ = -1;
    if (!b) continue;
    b->slot = s;
    slot_busy_[s] = 1;
    next_slot_ = (s + 1) % n;
    return b;
  }
  return std::nullopt;
}

void Simulator::recycle(Batch&& b) {
  if (b.items.capacity() > spare_.items.capacity()) spare_.items = std::move(b.items);
  if (b.loads.capacity() > spare_.loads.capacity()) spare_.loads = std::move(b.loads);
}

std::optional<Batch> Simulator::plan_slot() {
  Batch b;
  b.items = std::move(spare_.items);
  b.loads = std::move(spare_.loads);
  b.items.clear();
  b.loads.clear();
  bool any = false;
  const bool contexts_allowed =
      launch_.scheduler.kind != engines::SchedulerPolicy::Kind::kTrtllmInflight || trtllm_contexts_balanced();
  for (std::size_t i = 0; i < ranks_.size(); ++i) {
    Rank& r = ranks_[i];
    r.load = RankLoad{};
    switch (launch_.scheduler.kind) {
      case engines::SchedulerPolicy::Kind::kVllmV1:
        schedule_vllm(r, static_cast<int>(i));
        break;
      case engines::SchedulerPolicy::Kind::kSglang:
        schedule_sglang(r, static_cast<int>(i));
        break;
      case engines::SchedulerPolicy::Kind::kTrtllmInflight:
        schedule_trtllm(r, contexts_allowed);
        break;
    }
    for (int id : r.running) {
      Req& q = reqs_[id];
      if (q.sched > 0 && !q.in_flight) {
        b.items.emplace_back(id, q.sched);
        q.in_flight = true;
      }
    }
    b.loads.push_back(r.load);
    // The CPU handles the running batch of this micro-batch (SGLang PP: the slot's requests only).
    int held = static_cast<int>(r.running.size());
    if (slot_ >= 0)
      held = static_cast<int>(std::count_if(r.running.begin(), r.running.end(),
                                            [&](int id) { return reqs_[id].micro_batch == slot_; }));
    b.max_running = std::max(b.max_running, held);
    b.max_tokens = std::max(b.max_tokens, r.load.query_tokens);
    b.any_prefill |= r.load.prefill_tokens > 0;
    any |= r.load.query_tokens > 0;
  }
  if (!any) {
    recycle(std::move(b));
    return std::nullopt;
  }
  const bool graph = model_.graphed(b.loads);
  b.cost = model_.cost(b.loads, b.max_running, graph, pipeline_depth() > 1);
  b.stage_s = step_seconds(b.cost, cal_);
  b.stages_left = pipeline_depth();
  if (graph) ++view_.graphed_steps;
  if (b.cost.piecewise_graphs) ++view_.piecewise_steps;
  return b;
}

void Simulator::plan_into(std::deque<Batch>& pipe, double t) {
  for (int pass = 0; pass < 2; ++pass) {
    while (static_cast<int>(pipe.size()) < pipeline_depth()) {
      auto b = plan_batch();
      if (!b) break;
      pipe.push_back(std::move(*b));
    }
    if (!pipe.empty() || handed_off_.empty()) return;
    // Nothing to run: the idle engine takes the requests held back by deliver's cut (or its receive
    // counter: an idle loop fills it) now.
    recv_counter_ = launch_.scheduler.recv_interval;
    deliver(t);
  }
}

int Simulator::draft_tokens(int scheduled) const {
  if (!launch_.speculative || scheduled <= 1) return 0;
  return launch_.speculative->topk > 1 ? launch_.speculative->num_steps : scheduled - 1;
}

int Simulator::accepted_tokens(int id, int scheduled) const {
  if (!launch_.speculative || scheduled <= 1) return 1;
  const double a = launch_.speculative->acceptance;
  // A chain of drafts: draft d counts only if every draft before it was accepted. Deterministic draws.
  const int drafts = draft_tokens(scheduled);
  int tokens = 1;
  for (int d = 0; d < drafts; ++d) {
    const std::uint64_t h =
        splitmix64(seed_ ^ (std::uint64_t(id) << 32) ^ std::uint64_t(step_index_ * 16 + d));
    if (double(h >> 11) * 0x1.0p-53 >= a) break;
    ++tokens;
  }
  return tokens;
}

void Simulator::finish_batch(const Batch& b, double t) {
  if (b.slot >= 0 && b.slot < static_cast<int>(slot_busy_.size())) slot_busy_[b.slot] = 0;
  ++step_index_;
  // SchedulerRecvSkipper: a decode-only step adds 1 to the receive counter, any other the whole interval.
  recv_counter_ += b.any_prefill ? launch_.scheduler.recv_interval : 1;
  const double s = b.stage_s;
  (b.any_prefill ? view_.prefill_time_s : view_.decode_time_s) += s;
  // The classes are roofline / table times; the step runs their scaled part at the fitted kernel scale.
  const double kernel_s = (b.cost.gpu_s - b.cost.memory_s) / cal_.kernel_scale + b.cost.memory_s;
  const double f = b.cost.gpu_s > 0 ? kernel_s / b.cost.gpu_s : 1.0;
  view_.attention_s += f * b.cost.attention_s;
  view_.linear_attention_s += f * b.cost.linear_attention_s;
  view_.linear_s += f * b.cost.linear_s;
  view_.moe_s += f * b.cost.moe_s;
  view_.lm_head_s += f * b.cost.lm_head_s;
  view_.draft_s += f * b.cost.draft_s;
  view_.elementwise_s += f * b.cost.elementwise_s;
  view_.comm_s += b.cost.comm_s;
  view_.overhead_s += std::max(0.0, s - kernel_s - b.cost.comm_s);
  sum_batch_ += b.max_running;
  sum_tokens_ += b.max_tokens;
  view_.max_batch_requests = std::max(view_.max_batch_requests, b.max_running);
  const int trace_step = trace_ ? static_cast<int>(trace_->steps.size()) - 1 : -1;
  for (const auto& [id, n] : b.items) {
    Req& q = reqs_[id];
    q.in_flight = false;
    q.sched = 0;
    if (q.state != ReqState::kRunning) {
      // Cancelled or preempted while in flight: its KV was handled there.
      continue;
    }
    if (q.computed < q.prefill_target) {
      q.computed += n;
      cache_shared_prefix(ranks_[q.rank], q);
      if (q.computed >= q.prefill_target) emit(id, 1, t);
    } else {
      const int tokens = accepted_tokens(id, n);
      if (const int drafts = draft_tokens(n); drafts > 0) {
        Rank& rk = ranks_[q.rank];
        ++rk.spec_drafts;
        rk.spec_draft_tokens += drafts;
        rk.spec_accepted_tokens += tokens - 1;
      }
      q.computed += tokens;
      emit(id, tokens, t);
    }
    if (trace_ && q.generated > 0) {
      auto& tr = trace_->requests[id];
      if (tr.first_step < 0) tr.first_step = trace_step;
      tr.last_step = trace_step;
    }
    if (q.generated >= q.output_len) {
      Rank& r = ranks_[q.rank];
      q.state = ReqState::kDone;
      auto& o = out_[id];
      o.success = true;
      o.output_tokens = q.generated;
      o.usage_completion_tokens = q.generated;
      o.usage_prompt_tokens = q.prompt;
      o.latency_s = q.last_emit_s - q.send_s;
      client_done_.push_back({q.last_emit_s, step_trace_index(), true});
      release(r, q);
      r.running.erase(std::find(r.running.begin(), r.running.end(), id));
      ++finished_;
      --in_flight_;
      if (trace_) {
        trace_->requests[id].success = true;
        trace_->requests[id].output_tokens = q.generated;
      }
    }
  }
}

int Simulator::drop_unschedulable() {
  // Nothing schedulable although requests wait: a request needs more KV than the whole pool holds. The
  // engine aborts it; it counts as a server-side failure and the run goes on.
  int dropped = 0;
  for (auto& r : ranks_) {
    if (r.waiting.empty() || !r.running.empty()) continue;
    const int id = r.waiting.front();
    r.waiting.pop_front();
    Req& q = reqs_[id];
    release(r, q);
    q.state = ReqState::kFailed;
    auto& o = out_[id];
    o.success = false;
    o.failure = metrics::FailureKind::kServerError;
    // Its last step holds the prompt, every output token but the last, and the verify tokens of that step.
    const int verify = verify_tokens();
    o.error =
        fmt::format("request needs {} KV tokens{} but the pool of one rank holds {}",
                    q.prompt + q.output_len - 1 + verify,
                    verify > 1 ? fmt::format(" ({} of them speculative-decoding verify tokens)", verify) : "",
                    plan_.kv_tokens_per_rank);
    if (sink_ != nullptr) sink_->push_back({id, -1, 0, now_s_});
    client_done_.push_back({now_s_, step_trace_index(), false});
    ++finished_;
    --in_flight_;
    ++dropped;
  }
  return dropped;
}

void Simulator::emit(int id, int tokens, double engine_t) {
  Req& q = reqs_[id];
  auto& o = out_[id];
  tokens = std::min(tokens, q.output_len - q.generated);
  if (tokens <= 0) return;
  // What the client sees: every token first_token_ms after the step that made it (the request's stream is
  // late by the API server's time to its first token; the gaps between its tokens are the engine's), never
  // a token before an earlier one.
  const double t = std::max(engine_t + cal_.first_token_ms * 1e-3, q.last_emit_s);
  if (sink_ != nullptr) sink_->push_back({id, q.generated, tokens, t});
  if (q.generated == 0) {
    o.ttft_s = t - q.send_s;
    o.chunk_tokens.push_back(tokens);
  } else if (record_) {
    o.itl_s.push_back(t - q.last_emit_s);
    o.chunk_tokens.push_back(tokens);
  }
  q.last_emit_s = t;
  last_emit_s_ = std::max(last_emit_s_, t);
  q.generated += tokens;
}

TwinView Simulator::view() {
  // Per batch that ran (finish_batch counts them in step_index_): without PP one per step; under PP the
  // micro-batches, so that a pipeline holding one micro-batch does not average in its empty ticks.
  const auto batches = static_cast<double>(step_index_);
  view_.micro_batches = step_index_;
  view_.mean_batch_requests = batches > 0 ? sum_batch_ / batches : 0;
  view_.mean_step_tokens = batches > 0 ? sum_tokens_ / batches : 0;
  view_.mean_step_ms = batches > 0 ? 1e3 * (view_.prefill_time_s + view_.decode_time_s) / batches : 0;
  // A micro-batch's time counts once, when it leaves the last stage: the rest of the ticks is the bubble.
  view_.pipeline_bubble_s =
      pipeline_depth() > 1
          ? std::max(0.0, view_.duration_s - view_.prefill_time_s - view_.decode_time_s - view_.idle_time_s)
          : 0.0;
  double peak = 0;
  for (const auto& r : ranks_) peak = std::max(peak, r.total_bytes > 0 ? r.peak_used / r.total_bytes : 0.0);
  view_.kv_peak_fraction = peak;
  view_.memory = plan_;
  view_.spec_acceptance = launch_.speculative ? launch_.speculative->acceptance : 0.0;
  view_.measured_operators = model_.measured_notes();
  view_.measured_lookups = model_.measured_lookups();
  view_.extrapolated_lookups = model_.extrapolated_lookups();
  return view_;
}

std::vector<EngineLiveMetrics> Simulator::live_metrics() const {
  std::vector<EngineLiveMetrics> out;
  out.reserve(ranks_.size());
  for (const auto& r : ranks_) {
    EngineLiveMetrics e;
    e.kv_cache_usage =
        r.total_bytes > 0 ? std::clamp((r.total_bytes - r.free_bytes) / r.total_bytes, 0.0, 1.0) : 0.0;
    e.num_requests_running = static_cast<int>(r.running.size());
    e.num_requests_waiting = static_cast<int>(r.waiting.size());
    e.num_preemptions = r.preemptions;
    e.prefix_cache_queries = r.prefix_cache_queries;
    e.prefix_cache_hits = r.prefix_cache_hits;
    e.spec_decode_num_drafts = r.spec_drafts;
    e.spec_decode_num_draft_tokens = r.spec_draft_tokens;
    e.spec_decode_num_accepted_tokens = r.spec_accepted_tokens;
    out.push_back(e);
  }
  return out;
}

/// The benchmark client of an offline run (Simulator::run): sends each request at its arrival time or,
/// under --max-concurrency, when one of the client's slots frees (a slot is held from a request's send
/// until the client has its last token or its error: Simulator::client_done_). Not thread-safe; one run.
class Simulator::Client {
 public:
  Client(Simulator& sim, const std::vector<double>& arrival, std::optional<int> max_concurrency)
      : sim_(sim),
        arrival_(arrival),
        n_(static_cast<int>(sim.reqs_.size())),
        cap_(max_concurrency.value_or(0)) {
    for (int k = 0; k < cap_; ++k) slots_.push({});
  }

  /// Sends every request whose time has come by `now` (s); `last_step` is the trace index of the engine
  /// step that ended last (-1 before the first).
  void send_ready(double now, int last_step) {
    if (cap_ > 0) collect();
    while (next_ < n_ && arrival_[next_] <= now) {
      double at = arrival_[next_];
      int after = -1;
      bool after_token = false;
      if (cap_ > 0) {
        if (slots_.empty() || slots_.top().t_s > now) break;
        if (slots_.top().t_s > at)
          at = slots_.top().t_s, after = slots_.top().step, after_token = slots_.top().token;
        slots_.pop();
      }
      sim_.out_[next_].dispatch_time_s = arrival_[next_];
      sim_.out_[next_].intended_send_time_s = arrival_[next_];
      if (sim_.trace_) {
        sim_.trace_->requests[next_].arrival_s = arrival_[next_];
        sim_.trace_->requests[next_].send_after_step = after;
        sim_.trace_->requests[next_].send_after_token = after_token;
      }
      if (sim_.send(next_, at))
        sim_.client_done_.push_back({at, last_step, false});  // refused: the slot frees at once
      ++next_;
    }
  }
  /// When the client sends its next request (s; +inf when it has none left or every slot is held).
  double next_send() {
    if (next_ >= n_) return std::numeric_limits<double>::infinity();
    if (cap_ <= 0) return arrival_[next_];
    collect();
    return slots_.empty() ? std::numeric_limits<double>::infinity()
                          : std::max(arrival_[next_], slots_.top().t_s);
  }

 private:
  void collect() {
    for (; done_seen_ < sim_.client_done_.size(); ++done_seen_) slots_.push(sim_.client_done_[done_seen_]);
  }
  Simulator& sim_;
  const std::vector<double>& arrival_;
  const int n_;
  const int cap_;
  int next_ = 0;
  /// Free times of the slots nobody holds, with the trace step that freed each.
  std::priority_queue<SlotFree, std::vector<SlotFree>, std::greater<>> slots_;
  std::size_t done_seen_ = 0;
};

void Simulator::record_step(const Batch& slow, double not_before, int wake) {
  TraceStep s;
  s.gpu_s = static_cast<float>(slow.cost.gpu_s);
  s.memory_s = static_cast<float>(slow.cost.memory_s);
  s.comm_s = static_cast<float>(slow.cost.comm_s);
  s.floor_s = static_cast<float>(slow.cost.floor_s);
  s.launch_kernels = static_cast<float>(slow.cost.launch_kernels);
  s.running = slow.cost.running;
  s.overlap = slow.cost.overlap;
  s.api_stream_chunks = static_cast<float>(slow.cost.api_stream_chunks);
  s.not_before_s = not_before;
  s.wake_request = not_before > 0 ? wake : -1;
  trace_->add_step(s);
}

void Simulator::run(const std::vector<double>& arrival, std::optional<int> max_concurrency) {
  Client client(*this, arrival, max_concurrency);
  EventLoop loop(*this, LoopClient{[&client](double t, int last_step) { client.send_ready(t, last_step); },
                                   [&client] { return client.next_send(); }});
  loop.run_until(std::numeric_limits<double>::infinity());
  // The benchmark ends when the client has the last token: every token is seen first_token_ms after the
  // step that made it, so a run ends after the engine's last step (trace.cc replay agrees).
  view_.duration_s = std::max(loop.clock_s(), last_emit_s_);
  now_s_ = loop.clock_s();
}

}  // namespace detail

// ---------------------------------------------------------------------------------------------------

std::optional<PredictedFailure> gpu_not_modelled(const hardware::ClusterSpec& cluster) {
  if (cluster.gpu.modelled) return std::nullopt;
  return PredictedFailure{
      fmt::format("the twin does not model {}: {}", cluster.gpu.name, cluster.gpu.unsupported_reason),
      PredictedFailure::Kind::kUnsupported};
}

CalibrationKey calibration_key(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster) {
  return CalibrationKey{engines::engine_kind_name(launch.config.kind), launch.version_family,
                        hardware::generation_name(cluster.gpu.generation)};
}

namespace detail {

PredictionContext make_context(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                               const WorkloadOptions& options) {
  PredictionContext ctx;
  ctx.launch = launch;
  ctx.key = calibration_key(launch, cluster);
  const CalibrationTable& table = options.calibration ? *options.calibration : embedded_calibration();
  ctx.calibration = table.lookup(ctx.key, &ctx.level);
  ctx.band = error_band(launch, cluster, embedded_bands());
  return ctx;
}

PredictedFailure::Kind failure_kind(const engines::LaunchFailure& f) {
  return f.phase == engines::FailurePhase::kRuntime ? PredictedFailure::Kind::kRuntime
                                                    : PredictedFailure::Kind::kStartup;
}

}  // namespace detail

PredictResult predict_resolved(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                               std::span<const WorkloadRequest> requests, const WorkloadOptions& options) {
  if (auto f = gpu_not_modelled(cluster)) return *f;
  PredictionContext ctx = detail::make_context(launch, cluster, options);
  detail::Simulator sim(launch, cluster, ctx.calibration, options.seed);
  if (!sim.plan().fits) return PredictedFailure{sim.plan().failure, PredictedFailure::Kind::kOutOfMemory};
  const int n = static_cast<int>(requests.size());
  std::vector<double> arrival(n, 0.0);
  const bool ramp = options.ramp_up != schedule::RampUp::kNone;
  if ((std::isfinite(options.request_rate) || ramp) && n > 0) {
    if (options.constant_arrivals && !ramp) {
      for (int i = 0; i < n; ++i) arrival[i] = i / options.request_rate;
    } else {
      schedule::ArrivalOptions a;
      a.num_requests = static_cast<std::size_t>(n);
      a.request_rate = options.request_rate;
      a.burstiness = options.burstiness;
      a.seed = static_cast<std::uint32_t>(options.seed);
      a.ramp_up = options.ramp_up;
      a.ramp_up_start_rps = options.ramp_up_start_rps;
      a.ramp_up_end_rps = options.ramp_up_end_rps;
      arrival = schedule::arrival_schedule(a);
    }
  }
  const int template_tokens =
      options.chat_template_tokens.value_or(launch.model.chat_template.overhead_tokens);
  if (options.trace) {
    *options.trace = Trace{};
    options.trace->harmony_chat = launch.execution.harmony_chat;
    options.trace->api_fifo = launch.execution.api_fifo;
  }
  sim.set_trace(options.trace);
  sim.set_record_timings(options.per_token_timings);
  for (int i = 0; i < n; ++i) {
    const auto& w = requests[i];
    if (w.prompt_len < 1 || w.output_len < 1)
      throw std::invalid_argument(fmt::format("request {}: prompt_len and output_len must be >= 1", i));
    sim.add_request(w.prompt_len + template_tokens, w.output_len, w.prompt_len, w.prefix_group,
                    w.shared_prefix_len);
  }
  sim.run(arrival, options.max_concurrency);
  Prediction p;
  p.twin = sim.view();
  p.outputs = std::move(sim.outputs());
  p.context = std::move(ctx);
  return p;
}

PredictResult predict(const engines::LaunchConfig& engine, const hardware::ClusterSpec& cluster,
                      const model::ModelSpec& model, std::span<const WorkloadRequest> requests,
                      const WorkloadOptions& options) {
  if (auto f = gpu_not_modelled(cluster)) return *f;
  auto resolved = engines::resolve_launch(engine, model, cluster);
  if (const auto* f = std::get_if<engines::LaunchFailure>(&resolved))
    return PredictedFailure{f->message, detail::failure_kind(*f)};
  return predict_resolved(std::get<engines::ResolvedLaunch>(resolved), cluster, requests, options);
}

std::optional<PredictedFailure> startup_failure(const engines::LaunchConfig& engine,
                                                const hardware::ClusterSpec& cluster,
                                                const model::ModelSpec& model) {
  if (auto f = gpu_not_modelled(cluster)) return f;
  auto resolved = engines::resolve_launch(engine, model, cluster);
  if (const auto* f = std::get_if<engines::LaunchFailure>(&resolved))
    return PredictedFailure{f->message, detail::failure_kind(*f)};
  // The plan the Simulator of predict_resolved makes (simulator.h plan_).
  const MemoryPlan plan = plan_memory(std::get<engines::ResolvedLaunch>(resolved), cluster);
  if (!plan.fits) return PredictedFailure{plan.failure, PredictedFailure::Kind::kOutOfMemory};
  return std::nullopt;
}

HeadlineMetrics headline(const Prediction& p) {
  const auto m =
      metrics::compute_metrics(p.outputs, std::max(p.twin.duration_s, 1e-9), metrics::MetricsOptions{});
  HeadlineMetrics h;
  h.total_tok_s = m.total_token_throughput;
  h.output_tok_s = m.output_throughput;
  h.mean_ttft_ms = m.ttft.mean_ms;
  h.mean_tpot_ms = m.tpot.mean_ms;
  h.duration_s = m.duration_s;
  h.completed = m.completed;
  return h;
}

}  // namespace servelab::sim
