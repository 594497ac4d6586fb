// The twin's discrete-event simulation: per DP rank, the engine's own scheduler (vLLM V1, SGLang, TRT-LLM
// in-flight batching) over a KV block pool; all ranks advance in lock-step, one forward step at a time,
// each step's duration from step_time(); tokens leave at the end of the step that produced them.
#include <algorithm>
#include <cmath>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <functional>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "client/client.h"
#include "engines/engines.h"
#include "sim/knobs.h"
#include "sim/sim.h"
#include "sim/step_time.h"

namespace servelab::sim {
namespace {

using engines::EngineKind;

/// Chat-template tokens the engine adds to a benchmark prompt that the dataset count already has BOS for:
/// `<｜User｜>`, `<｜Assistant｜>`, `</think>` (deepseek-v32-chat-encoding.md, non-thinking mode).
constexpr int kChatTemplateTokens = 3;
/// SGLang CLIP_MAX_NEW_TOKENS (schedule_policy.py): future-token reservation per request is capped.
constexpr int kSglangClipMaxNewTokens = 4096;

enum class State : std::uint8_t { kNotArrived, kWaiting, kRunning, kDone, kFailed };

struct Req {
  int prompt = 0;          // engine-side prompt tokens
  int target = 0;          // output tokens to generate
  int prefill_target = 0;  // tokens to have in KV before the next token (prompt, + generated after preemption)
  int computed = 0;        // tokens in the KV cache
  int generated = 0;       // output tokens emitted
  long long blocks = 0;    // KV blocks held
  int rank = 0;
  int sched = 0;           // tokens scheduled in the current step (0 = not scheduled)
  State state = State::kNotArrived;
  double send_s = 0, last_emit_s = 0;
};

struct Rank {
  std::deque<int> waiting;
  std::vector<int> running;  // admission order
  long long free_blocks = 0;
  long long total_blocks = 0;
  long long peak_used = 0;
  double new_token_ratio = 0.7;
  RankBatch batch;
  bool prefill_step = false;
};

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

/// What a sparse-MLA kernel does with its inputs. FlashMLA's sparse kernels (vLLM FLASHMLA_SPARSE, SGLang
/// flashmla_sparse / flashmla_kv) loop over all index_topk slots of each query (invalid slots masked) and
/// need the query heads padded to 64 on SM90 (128 on SM100) (FlashMLA README, vLLM flashmla_sparse.py);
/// FA3 on the selected pages (SGLang fa3) and TensorRT-LLM's kernel visit only the valid keys and take any
/// head count.
struct BackendTraits {
  bool fixed_topk = false;
  int head_pad = 0;
};

BackendTraits backend_traits(const std::string& backend, const Hardware& gpu) {
  if (backend.rfind("flashmla", 0) == 0) return {true, gpu.compute_capability >= 100 ? 128 : 64};
  return {false, 0};
}

// Σ_{i=s+1}^{s+n} min(i, k): keys per query of a prefill chunk covering positions s+1..s+n under top-k.
double sum_min_topk(double s, double n, double k) {
  const double e = s + n;
  if (e <= k) return n * s + n * (n + 1) / 2;
  if (s >= k) return n * k;
  const double m = k - s;  // queries below the knee
  return m * s + m * (m + 1) / 2 + (e - k) * k;
}

class Simulator {
 public:
  Simulator(const engines::EngineConfig& e, const Cluster& cluster, const ModelConfig& m,
            std::span<const WorkloadRequest> reqs, const WorkloadOptions& opt)
      : engine_(e), model_(m), opt_(opt), input_(reqs) {
    knobs_ = detail::resolve_knobs(e, cluster.gpu, m);
    plan_ = plan_memory(e, cluster.gpu, m);
    ctx_.model = m;
    ctx_.gpu = cluster.gpu;
    ctx_.par = plan_.par;
    ctx_.cal = opt.calibration ? *opt.calibration
                               : calibration_for(e.kind == EngineKind::kVllm     ? "vllm"
                                                 : e.kind == EngineKind::kSglang ? "sglang"
                                                                                 : "trtllm");
    ctx_.deep_gemm = knobs_.deep_gemm;
    ctx_.overlap_scheduler = knobs_.overlap_scheduler;
    ctx_.spec_tokens = knobs_.spec_tokens;
    topk_ = m.sparse() ? m.index_topk : 1 << 30;
    latent_bytes_ = plan_.kv_latent_bytes;
    indexer_bytes_ = kv_indexer_bytes_per_layer(m);
  }

  PredictResult run();

  /// A step chosen by the schedulers of all ranks, with its predicted duration.
  struct PlannedStep {
    StepTime st;
    bool any_prefill = false;
    int max_running = 0, max_tokens = 0;
  };
  /// Tokens emitted by a step: `count` output tokens of request `id` starting at output index `first`,
  /// at virtual time `t_s`. `first` = -1 marks a request the engine aborted.
  struct Emission {
    int id;
    int first;
    int count;
    double t_s;
  };

  // Incremental interface (used by run() and by OnlineTwin): init once, add and send requests, then
  // alternately plan a step (at its start time) and apply it (at its end time).
  void init();
  int add_request(int engine_prompt_tokens, int output_tokens, int reported_prompt_len);
  std::optional<std::string> send(int id, double t);  ///< error text when the request is refused
  std::optional<PlannedStep> plan_step();
  void apply_step(const PlannedStep& step, double t_end);
  int drop_unschedulable();
  void cancel(int id);
  TwinView finish_view();
  void set_sink(std::vector<Emission>* sink, bool record_timings) {
    sink_ = sink;
    record_ = record_timings;
  }
  int max_model_len() const { return knobs_.max_model_len; }
  bool fits() const { return plan_.fits; }
  const std::string& failure() const { return plan_.failure; }
  int in_flight() const { return in_flight_; }

 private:
  void route(int id);
  void schedule_vllm(Rank& r);
  void schedule_sglang(Rank& r);
  void schedule_trtllm(Rank& r);
  bool alloc(Rank& r, Req& q, long long tokens);
  void release(Rank& r, Req& q);
  void preempt(Rank& r, int id);
  void account(Rank& r, int id, int n);
  void emit(int id, int tokens, double t);

  engines::EngineConfig engine_;
  ModelConfig model_;
  WorkloadOptions opt_;
  std::span<const WorkloadRequest> input_;
  detail::EngineKnobs knobs_;
  MemoryPlan plan_;
  StepContext ctx_;
  int topk_ = 2048;
  double latent_bytes_ = 0, indexer_bytes_ = 0;
  int max_running_ = 0;
  std::vector<Req> reqs_;
  std::vector<Rank> ranks_;
  std::vector<metrics::RequestOutput> out_;
  TwinView view_;
  int rr_next_ = 0;
  long long step_index_ = 0;
  std::vector<RankBatch> batches_;
  int in_flight_ = 0, finished_ = 0, to_finish_ = 0;
  double sum_batch_ = 0, sum_tokens_ = 0;
  std::vector<Emission>* sink_ = nullptr;  // online mode: where emit() reports tokens
  bool record_ = true;                      // keep per-request ITL arrays (batch mode)
};

bool Simulator::alloc(Rank& r, Req& q, long long tokens) {
  const long long need = (tokens + plan_.block_size - 1) / plan_.block_size;
  if (need <= q.blocks) return true;
  if (need - q.blocks > r.free_blocks) return false;
  r.free_blocks -= need - q.blocks;
  q.blocks = need;
  r.peak_used = std::max(r.peak_used, r.total_blocks - r.free_blocks);
  return true;
}

void Simulator::release(Rank& r, Req& q) {
  r.free_blocks += q.blocks;
  q.blocks = 0;
}

void Simulator::preempt(Rank& r, int id) {
  Req& q = reqs_[id];
  release(r, q);
  q.computed = 0;
  q.prefill_target = q.prompt + q.generated;  // recompute prompt + generated tokens
  q.sched = 0;
  q.state = State::kWaiting;
  r.running.erase(std::find(r.running.begin(), r.running.end(), id));
  r.waiting.push_front(id);
  ++view_.preemptions;
}

// Adds request `id` with `n` scheduled tokens to its rank's batch (FLOP/byte bookkeeping).
void Simulator::account(Rank& r, int id, int n) {
  Req& q = reqs_[id];
  q.sched = n;
  RankBatch& b = r.batch;
  b.query_tokens += n;
  ++b.batch_requests;
  const BackendTraits pre = backend_traits(knobs_.prefill_backend, ctx_.gpu);
  const BackendTraits dec = backend_traits(knobs_.decode_backend, ctx_.gpu);
  if (q.computed < q.prefill_target) {  // prefill chunk over positions computed+1 .. computed+n
    b.prefill_tokens += n;
    const double s = q.computed;
    // TensorRT-LLM skips the indexer for sequences <= index_topk and runs dense MHA
    // (DeepSeekSparseAttentionConfig.skip_indexer_for_short_seqs); vLLM 0.13 and SGLang 0.5.6 run the
    // sparse path for every prompt.
    const bool mha_short = knobs_.kind == EngineKind::kTrtllm && q.prefill_target <= topk_;
    const double ctx_pairs = n * s + double(n) * (n + 1) / 2;
    if (mha_short || !model_.sparse()) {
      b.dense_pairs += ctx_pairs;
    } else {
      b.indexer_pairs += ctx_pairs;
      b.sparse_pairs += pre.fixed_topk ? double(n) * topk_ : sum_min_topk(s, n, topk_);
      b.sparse_head_pad = std::max(b.sparse_head_pad, pre.head_pad);
    }
    if (q.computed + n >= q.prefill_target) b.sampled_tokens += 1;
  } else {  // decode: n = 1 + spec query tokens at context c
    ++b.decode_requests;
    const double c = q.computed + 1;
    const double keys = std::min<double>(c, topk_);
    if (model_.sparse()) {
      b.sparse_pairs += n * (dec.fixed_topk ? double(topk_) : keys);
      b.indexer_pairs += n * c;
      b.kv_read_bytes += keys * latent_bytes_ + c * indexer_bytes_;
      b.sparse_head_pad = std::max(b.sparse_head_pad, dec.head_pad);
    } else {
      b.sparse_pairs += n * c;
      b.kv_read_bytes += c * latent_bytes_;
    }
    b.sampled_tokens += n;
  }
}

void Simulator::route(int id) {
  Req& q = reqs_[id];
  int best = 0;
  if (ranks_.size() > 1) {
    if (engine_.kind == EngineKind::kVllm) {
      // vLLM DP load balancing: score = waiting * 4 + running (DPLBAsyncMPClient), lowest wins.
      long long best_score = -1;
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const long long s = 4LL * ranks_[i].waiting.size() + ranks_[i].running.size();
        if (best_score < 0 || s < best_score) best_score = s, best = static_cast<int>(i);
      }
    } else {  // SGLang data_parallel_controller: round_robin by default
      best = rr_next_;
      rr_next_ = (rr_next_ + 1) % static_cast<int>(ranks_.size());
    }
  }
  q.rank = best;
  q.state = State::kWaiting;
  ranks_[best].waiting.push_back(id);
}

// vLLM V1 scheduler (vllm/v1/core/sched/scheduler.py): running requests first (decode or the next
// prefill chunk), preempting from the back of the running list when KV blocks run out; then waiting
// requests FCFS while the token budget, max_num_seqs and free blocks allow.
void Simulator::schedule_vllm(Rank& r) {
  int budget = knobs_.token_budget;
  bool preempted = false;
  for (std::size_t i = 0; i < r.running.size() && budget > 0;) {
    const int id = r.running[i];
    Req& q = reqs_[id];
    int n = q.computed < q.prefill_target ? std::min(q.prefill_target - q.computed, budget) : 1 + knobs_.spec_tokens;
    n = std::min(n, budget);
    bool ok = alloc(r, q, q.computed + n);
    while (!ok) {
      const int victim = r.running.back();
      preempt(r, victim);
      preempted = true;
      if (victim == id) break;
      ok = alloc(r, q, q.computed + n);
    }
    if (!ok) break;
    account(r, id, n);
    budget -= n;
    ++i;
  }
  if (preempted) return;
  while (!r.waiting.empty() && budget > 0 && static_cast<int>(r.running.size()) < max_running_) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    int n = q.prefill_target - q.computed;
    if (!knobs_.chunked_prefill && n > budget) break;
    n = std::min(n, budget);
    if (!alloc(r, q, q.computed + n)) break;
    r.waiting.pop_front();
    q.state = State::kRunning;
    r.running.push_back(id);
    account(r, id, n);
    budget -= n;
  }
}

// SGLang scheduler (managers/scheduler.py get_next_batch_to_run + schedule_policy.PrefillAdder): a prefill
// batch when requests can be admitted (prefill has priority, no mixing with decode), else one decode step
// for all running requests. Admission reserves future tokens: remaining max_new_tokens (clipped at 4096)
// x new_token_ratio for every running and admitted request; new_token_ratio starts at 0.7 x
// conservativeness and decays to 0.1 x conservativeness over 600 decode steps; a decode step that runs out
// of KV retracts requests.
void Simulator::schedule_sglang(Rank& r) {
  const double ratio = r.new_token_ratio;
  const int bs = plan_.block_size;
  double reserved = 0;
  int prefilling = -1;
  for (int id : r.running) {
    const Req& q = reqs_[id];
    if (q.computed < q.prefill_target) prefilling = id;
    reserved += std::min(q.target - q.generated, kSglangClipMaxNewTokens) * ratio;
  }
  double rem_total = double(r.free_blocks) * bs - reserved;
  int rem_chunk = knobs_.token_budget;
  int rem_input = knobs_.max_prefill_tokens;
  bool any = false;
  if (prefilling >= 0) {  // the in-progress chunked request continues first
    Req& q = reqs_[prefilling];
    const int n = std::min(q.prefill_target - q.computed, rem_chunk);
    if (alloc(r, q, q.computed + n)) {
      account(r, prefilling, n);
      rem_chunk -= n;
      rem_input -= n;
      any = true;
    }
  }
  while (prefilling < 0 && !r.waiting.empty() && rem_chunk > 0 && rem_input > 0 &&
         static_cast<int>(r.running.size()) < max_running_) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    const int remaining = q.prefill_target - q.computed;
    const double need = remaining + std::min(q.target - q.generated, kSglangClipMaxNewTokens) * ratio;
    if (need > rem_total && any) break;
    if (!knobs_.chunked_prefill && remaining > rem_chunk && any) break;
    const int n = knobs_.chunked_prefill ? std::min(remaining, rem_chunk) : remaining;
    if (!alloc(r, q, q.computed + n)) break;
    r.waiting.pop_front();
    q.state = State::kRunning;
    r.running.push_back(id);
    account(r, id, n);
    rem_total -= need;
    rem_chunk -= n;
    rem_input -= n;
    any = true;
    if (n < remaining) break;  // chunked: the rest continues next prefill batch
  }
  if (any) {
    r.prefill_step = true;
    return;
  }
  // Decode step: every running request that finished its prefill.
  const int n = 1 + knobs_.spec_tokens;
  for (std::size_t i = 0; i < r.running.size();) {
    const int id = r.running[i];
    Req& q = reqs_[id];
    if (q.computed < q.prefill_target) { ++i; continue; }
    if (!alloc(r, q, q.computed + n)) {
      // retract_decode: the most recently admitted request goes back to the queue.
      const int victim = r.running.back();
      preempt(r, victim);
      r.new_token_ratio = std::min(1.0, 0.7 * knobs_.conservativeness);
      i = 0;
      r.batch = RankBatch{};
      for (int v : r.running) reqs_[v].sched = 0;
      continue;
    }
    account(r, id, n);
    ++i;
  }
  const double init = std::min(1.0, 0.7 * knobs_.conservativeness);
  const double lo = std::min(init, 0.1 * knobs_.conservativeness);
  r.new_token_ratio = std::max(lo, r.new_token_ratio - (init - lo) / 600.0);
}

// TensorRT-LLM in-flight batching (batch_manager capacity + micro-batch schedulers): GUARANTEED_NO_EVICT
// admits a request only when KV for prompt + max output is free; without chunked prefill a context request
// runs whole and must fit the max_num_tokens budget left after the generation tokens.
void Simulator::schedule_trtllm(Rank& r) {
  int budget = knobs_.token_budget;
  for (int id : r.running) {
    Req& q = reqs_[id];
    if (q.computed >= q.prefill_target) {
      account(r, id, 1 + knobs_.spec_tokens);
      budget -= 1 + knobs_.spec_tokens;
    }
  }
  while (!r.waiting.empty() && static_cast<int>(r.running.size()) < max_running_) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    const int n = q.prefill_target - q.computed;
    if (n > budget && !knobs_.chunked_prefill) break;
    if (!alloc(r, q, q.prompt + q.target)) break;
    r.waiting.pop_front();
    q.state = State::kRunning;
    r.running.push_back(id);
    const int take = std::min(n, budget);
    account(r, id, take);
    budget -= take;
    if (budget <= 0) break;
  }
}

void Simulator::emit(int id, int tokens, double t) {
  Req& q = reqs_[id];
  auto& o = out_[id];
  tokens = std::min(tokens, q.target - q.generated);
  if (tokens <= 0) return;
  if (sink_ != nullptr) sink_->push_back({id, q.generated, tokens, t});
  if (q.generated == 0) {
    o.ttft_s = t - q.send_s;
  } else if (record_) {
    o.itl_s.push_back(t - q.last_emit_s);
    o.chunk_tokens.push_back(tokens);
  }
  if (o.chunk_tokens.empty() && q.generated == 0) o.chunk_tokens.push_back(tokens);
  q.last_emit_s = t;
  q.generated += tokens;
}

void Simulator::init() {
  const int dp = plan_.par.dp_ranks;
  ranks_.assign(dp, Rank{});
  batches_.assign(dp, RankBatch{});
  const long long blocks = plan_.kv_tokens_per_rank / plan_.block_size;
  for (auto& r : ranks_) {
    r.free_blocks = r.total_blocks = blocks;
    r.new_token_ratio = std::min(1.0, 0.7 * knobs_.conservativeness);
  }
  max_running_ = knobs_.max_num_seqs;
  if (max_running_ <= 0) {
    // SGLang default (model_runner.py): req_to_token pool = clamp(tokens / context_len * 512, 2048, 4096)
    // per worker, max_running_requests = min(pool, max_total_tokens / 2).
    const long long tokens = plan_.kv_tokens_per_rank;
    const long long pool = std::clamp<long long>(tokens * 512 / std::max(1, knobs_.max_model_len), 2048, 4096);
    max_running_ = static_cast<int>(std::min<long long>(pool, tokens / 2));
  }
}

int Simulator::add_request(int engine_prompt_tokens, int output_tokens, int reported_prompt_len) {
  const int id = static_cast<int>(reqs_.size());
  Req q;
  q.prompt = engine_prompt_tokens;
  q.target = output_tokens;
  q.prefill_target = q.prompt;
  reqs_.push_back(q);
  metrics::RequestOutput o;
  o.prompt_len = reported_prompt_len;
  o.expected_output_len = output_tokens;
  o.request_id = fmt::format("sim-{}", id);
  out_.push_back(std::move(o));
  return id;
}

std::optional<std::string> Simulator::send(int id, double t) {
  Req& q = reqs_[id];
  auto& o = out_[id];
  q.send_s = t;
  o.send_time_s = t;
  const bool too_long = q.prompt >= knobs_.max_model_len ||
                        (engine_.kind == EngineKind::kVllm && q.prompt + q.target > knobs_.max_model_len);
  if (too_long) {
    q.state = State::kFailed;
    o.success = false;
    o.failure = metrics::FailureKind::kHttpStatus;
    o.http_status = 400;
    o.error = fmt::format(
        "This model's maximum context length is {} tokens. However, you requested {} tokens ({} in the "
        "messages, {} in the completion). Please reduce the length of the messages or completion.",
        knobs_.max_model_len, q.prompt + q.target, q.prompt, q.target);
    return o.error;
  }
  route(id);
  ++in_flight_;
  ++to_finish_;
  return std::nullopt;
}

std::optional<Simulator::PlannedStep> Simulator::plan_step() {
  const int dp = static_cast<int>(ranks_.size());
  for (auto& r : ranks_) {
    r.batch = RankBatch{};
    r.prefill_step = false;
    switch (engine_.kind) {
      case EngineKind::kVllm: schedule_vllm(r); break;
      case EngineKind::kSglang: schedule_sglang(r); break;
      case EngineKind::kTrtllm: schedule_trtllm(r); break;
    }
  }
  PlannedStep p;
  bool any_work = false;
  for (int i = 0; i < dp; ++i) {
    batches_[i] = ranks_[i].batch;
    p.max_running = std::max<int>(p.max_running, ranks_[i].running.size());
    p.max_tokens = std::max(p.max_tokens, batches_[i].query_tokens);
    p.any_prefill |= batches_[i].prefill_tokens > 0;
    any_work |= batches_[i].query_tokens > 0;
  }
  if (!any_work) return std::nullopt;
  int max_decode = 0;
  for (int i = 0; i < dp; ++i) max_decode = std::max(max_decode, batches_[i].decode_requests);
  const bool graph = !p.any_prefill && knobs_.cuda_graph_max_bs > 0 &&
                     (engine_.kind == EngineKind::kVllm ? p.max_tokens : max_decode) <= knobs_.cuda_graph_max_bs;
  p.st = step_time(ctx_, batches_.data(), dp, p.max_running, graph);
  return p;
}

int Simulator::drop_unschedulable() {
  // Nothing schedulable although requests wait: a request needs more KV than the whole pool holds.
  // The engine would abort it; count it as a server-side failure and go on.
  int dropped = 0;
  for (auto& r : ranks_) {
    if (r.waiting.empty() || !r.running.empty()) continue;
    const int id = r.waiting.front();
    r.waiting.pop_front();
    Req& q = reqs_[id];
    release(r, q);
    q.state = State::kFailed;
    auto& o = out_[id];
    o.success = false;
    o.failure = metrics::FailureKind::kServerError;
    o.error = fmt::format("request needs {} KV tokens but the pool of one rank holds {}", q.prompt + q.target,
                          plan_.kv_tokens_per_rank);
    if (sink_ != nullptr) sink_->push_back({id, -1, 0, 0.0});
    ++finished_;
    --in_flight_;
    ++dropped;
  }
  return dropped;
}

void Simulator::apply_step(const PlannedStep& p, double t) {
  const StepTime& st = p.st;
  ++view_.steps;
  ++step_index_;
  (p.any_prefill ? view_.prefill_time_s : view_.decode_time_s) += st.total_s;
  view_.attn_proj_s += st.attn_proj_s;
  view_.dense_s += st.dense_s;
  view_.moe_s += st.moe_s;
  view_.attention_s += st.attention_s;
  view_.indexer_s += st.indexer_s;
  view_.comm_s += st.comm_s;
  view_.overhead_s += st.overhead_s;
  sum_batch_ += p.max_running;
  sum_tokens_ += p.max_tokens;
  view_.max_batch_requests = std::max(view_.max_batch_requests, p.max_running);

  // Apply the step: KV grows, tokens leave at t.
  for (auto& r : ranks_) {
    for (std::size_t i = 0; i < r.running.size();) {
      const int id = r.running[i];
      Req& q = reqs_[id];
      const int s = q.sched;
      q.sched = 0;
      if (s == 0) { ++i; continue; }
      if (q.computed < q.prefill_target) {
        q.computed += s;
        if (q.computed >= q.prefill_target) emit(id, 1, t);
      } else {
        int tokens = 1;
        for (int d = 0; d < s - 1; ++d) {  // MTP: draft d accepted only if all before it were
          const std::uint64_t h = splitmix64(opt_.seed ^ (std::uint64_t(id) << 32) ^ std::uint64_t(step_index_ * 8 + d));
          if (double(h >> 11) * 0x1.0p-53 >= ctx_.cal.mtp_acceptance) break;
          ++tokens;
        }
        q.computed += tokens;
        emit(id, tokens, t);
      }
      if (q.generated >= q.target) {
        q.state = State::kDone;
        auto& o = out_[id];
        o.success = true;
        o.output_tokens = q.generated;
        o.usage_completion_tokens = q.generated;
        o.usage_prompt_tokens = q.prompt;
        o.latency_s = t - q.send_s;
        release(r, q);
        r.running.erase(r.running.begin() + static_cast<long>(i));
        ++finished_;
        --in_flight_;
        continue;
      }
      ++i;
    }
  }
}

void Simulator::cancel(int id) {
  Req& q = reqs_[id];
  if (q.state != State::kWaiting && q.state != State::kRunning) return;
  Rank& r = ranks_[q.rank];
  if (auto it = std::find(r.waiting.begin(), r.waiting.end(), id); it != r.waiting.end()) r.waiting.erase(it);
  if (auto it = std::find(r.running.begin(), r.running.end(), id); it != r.running.end()) r.running.erase(it);
  release(r, q);
  q.sched = 0;
  q.state = State::kFailed;
  out_[id].success = false;
  out_[id].failure = metrics::FailureKind::kCancelled;
  ++finished_;
  --in_flight_;
}

PredictResult Simulator::run() {
  if (!plan_.fits) return Failure{plan_.failure};
  const int n = static_cast<int>(input_.size());
  init();

  // Arrivals: bench serve's own schedule (request rate inf -> all at t = 0).
  std::vector<double> arrival(n, 0.0);
  if (std::isfinite(opt_.request_rate) && n > 0) {
    client::ArrivalOptions a;
    a.num_requests = static_cast<std::size_t>(n);
    a.request_rate = opt_.request_rate;
    a.burstiness = opt_.burstiness;
    a.seed = static_cast<std::uint32_t>(opt_.seed);
    arrival = client::arrival_schedule(a);
  }
  reqs_.reserve(n);
  out_.reserve(n);
  for (int i = 0; i < n; ++i) {
    const auto& w = input_[i];
    if (w.prompt_len < 1 || w.output_len < 1)
      throw std::invalid_argument(fmt::format("request {}: prompt_len and output_len must be >= 1", i));
    add_request(w.prompt_len + kChatTemplateTokens, w.output_len, w.prompt_len);
    out_[i].intended_send_time_s = arrival[i];
  }

  const int max_conc = opt_.max_concurrency.value_or(0);
  int next = 0;
  double t = 0;
  auto send_ready = [&](double now) {
    while (next < n && arrival[next] <= now && (max_conc <= 0 || in_flight_ < max_conc)) {
      double send_s = std::max(arrival[next], 0.0);
      if (max_conc > 0) send_s = std::max(arrival[next], std::min(now, std::max(arrival[next], now)));
      out_[next].dispatch_time_s = arrival[next];
      send(next, send_s);
      ++next;
    }
  };

  while (true) {
    send_ready(t);
    const auto step = plan_step();
    if (!step) {
      if (finished_ >= to_finish_ && next >= n) break;
      if (next < n && (max_conc <= 0 || in_flight_ < max_conc)) {
        const double ta = arrival[next];
        view_.idle_time_s += std::max(0.0, ta - t);
        t = std::max(t, ta);
        continue;
      }
      if (drop_unschedulable() == 0) throw std::logic_error("twin scheduler stalled with running requests (bug)");
      continue;
    }
    t += step->st.total_s;
    apply_step(*step, t);
  }
  view_.duration_s = t;
  return Prediction{std::move(out_), finish_view()};
}

TwinView Simulator::finish_view() {
  view_.mean_batch_requests = view_.steps ? sum_batch_ / view_.steps : 0;
  view_.mean_step_tokens = view_.steps ? sum_tokens_ / view_.steps : 0;
  view_.mean_step_ms = view_.steps ? 1e3 * (view_.prefill_time_s + view_.decode_time_s) / view_.steps : 0;
  double peak = 0;
  for (const auto& r : ranks_) peak = std::max(peak, r.total_blocks ? double(r.peak_used) / r.total_blocks : 0.0);
  view_.kv_peak_fraction = peak;
  view_.memory = plan_;
  view_.mtp_acceptance = knobs_.spec_tokens > 0 ? ctx_.cal.mtp_acceptance : 0.0;
  return view_;
}

}  // namespace

engines::ModelTraits model_traits(const ModelConfig& m) {
  engines::ModelTraits t;
  t.display_name = m.name.substr(m.name.find('/') == std::string::npos ? 0 : m.name.find('/') + 1);
  t.mla = m.kv_lora_rank > 0;
  t.sparse_attention = m.sparse();
  t.max_position_embeddings = m.max_position_embeddings;
  t.num_nextn_predict_layers = m.num_nextn_predict_layers;
  t.fp8_block_weights = m.weight_bytes == 1;
  return t;
}

engines::HardwareTraits hardware_traits(const Cluster& c) {
  engines::HardwareTraits t;
  t.name = c.gpu.name;
  t.compute_capability_major = c.gpu.compute_capability / 10;
  t.compute_capability_minor = c.gpu.compute_capability % 10;
  t.gpu_memory_bytes = static_cast<std::int64_t>(c.gpu.hbm_bytes);
  t.gpu_count = c.num_gpus;
  return t;
}

PredictResult predict(const engines::EngineConfig& engine, const Cluster& cluster, const ModelConfig& model,
                      std::span<const WorkloadRequest> requests, const WorkloadOptions& options) {
  const auto mt = model_traits(model);
  const auto ht = hardware_traits(cluster);
  // Start-up refusals and config-only run-time errors are the engines module's rules (one place).
  if (auto f = engines::check_launch(engine, mt, ht)) return Failure{f->message};
  const engines::EngineConfig resolved = engines::resolve_defaults(engine, mt, ht);
  const Parallelism par = parallelism_of(resolved);
  if (par.gpus > cluster.num_gpus)
    return Failure{fmt::format("the launch needs {} GPUs but the node has {} ({})", par.gpus, cluster.num_gpus,
                               cluster.gpu.name)};
  Simulator sim(resolved, cluster, model, requests, options);
  return sim.run();
}

// ---------------------------------------------------------------------------------------------------
// OnlineTwin: the Simulator driven step by step in virtual time (see sim.h).

struct OnlineTwin::Impl {
  Simulator sim;
  std::vector<Simulator::Emission> sink;
  std::optional<Simulator::PlannedStep> pending;  // the step in flight
  double pending_end_s = 0;
  double free_at_s = 0;                           // end of the last applied step
  std::deque<std::pair<int, double>> arrivals;    // (internal id, arrival time) not yet sent to a rank
  std::unordered_map<std::uint64_t, int> by_external;
  std::vector<std::uint64_t> external;            // internal id -> caller's id
  std::vector<int> deferred_cancels;

  Impl(const engines::EngineConfig& e, const Cluster& c, const ModelConfig& m)
      : sim(e, c, m, std::span<const WorkloadRequest>{}, WorkloadOptions{}) {}

  void admit_until(double t) {
    while (!arrivals.empty() && arrivals.front().second <= t) {
      sim.send(arrivals.front().first, arrivals.front().second);
      arrivals.pop_front();
    }
  }

  void ensure_planned() {
    while (!pending) {
      double start = free_at_s;
      admit_until(start);
      auto p = sim.plan_step();
      if (!p && !arrivals.empty()) {  // idle until the next arrival
        start = std::max(free_at_s, arrivals.front().second);
        admit_until(start);
        p = sim.plan_step();
      }
      if (!p) {
        if (sim.in_flight() > 0 && sim.drop_unschedulable() > 0) continue;
        return;
      }
      pending = p;
      pending_end_s = start + p->st.total_s;
    }
  }
};

OnlineTwin::OnlineTwin(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
OnlineTwin::~OnlineTwin() = default;

std::variant<std::unique_ptr<OnlineTwin>, Failure> OnlineTwin::create(const engines::EngineConfig& engine,
                                                                      const Cluster& cluster,
                                                                      const ModelConfig& model) {
  const auto mt = model_traits(model);
  const auto ht = hardware_traits(cluster);
  if (auto f = engines::check_launch(engine, mt, ht)) return Failure{f->message};
  const engines::EngineConfig resolved = engines::resolve_defaults(engine, mt, ht);
  const Parallelism par = parallelism_of(resolved);
  if (par.gpus > cluster.num_gpus)
    return Failure{fmt::format("the launch needs {} GPUs but the node has {} ({})", par.gpus, cluster.num_gpus,
                               cluster.gpu.name)};
  auto impl = std::make_unique<Impl>(resolved, cluster, model);
  if (!impl->sim.fits()) return Failure{impl->sim.failure()};
  impl->sim.init();
  impl->sim.set_sink(&impl->sink, /*record_timings=*/false);
  return std::unique_ptr<OnlineTwin>(new OnlineTwin(std::move(impl)));
}

std::optional<std::string> OnlineTwin::submit(std::uint64_t id, int prompt_tokens, int output_tokens,
                                              double now_s) {
  if (prompt_tokens < 1 || output_tokens < 1)
    throw std::invalid_argument(fmt::format("request {}: prompt and output tokens must be >= 1", id));
  auto& im = *impl_;
  const int internal = im.sim.add_request(prompt_tokens, output_tokens, prompt_tokens);
  im.external.push_back(id);
  // Refusals (context length) are decided at arrival, as the engine's API server does.
  if (prompt_tokens >= im.sim.max_model_len() || prompt_tokens + output_tokens > im.sim.max_model_len()) {
    return im.sim.send(internal, now_s);
  }
  im.by_external[id] = internal;
  im.arrivals.emplace_back(internal, now_s);
  return std::nullopt;
}

void OnlineTwin::cancel(std::uint64_t id) {
  auto& im = *impl_;
  auto it = im.by_external.find(id);
  if (it == im.by_external.end()) return;
  const int internal = it->second;
  im.by_external.erase(it);
  for (auto a = im.arrivals.begin(); a != im.arrivals.end(); ++a) {
    if (a->first == internal) {
      im.arrivals.erase(a);
      return;
    }
  }
  if (im.pending) im.deferred_cancels.push_back(internal);  // it may be in the step in flight
  else im.sim.cancel(internal);
}

void OnlineTwin::advance_to(double t_s, const std::function<void(std::uint64_t, int, double)>& emit) {
  auto& im = *impl_;
  std::vector<int> cancelled;
  // Reports what the simulator put in the sink (tokens of the applied step, engine aborts) and empties it.
  auto flush = [&] {
    for (const auto& e : im.sink) {
      if (std::find(cancelled.begin(), cancelled.end(), e.id) != cancelled.end()) continue;
      const std::uint64_t ext = im.external[e.id];
      if (e.first < 0) {  // aborted by the engine: more KV than a rank holds
        im.by_external.erase(ext);
        emit(ext, -1, im.free_at_s);
        continue;
      }
      for (int k = 0; k < e.count; ++k) emit(ext, e.first + k, e.t_s);
    }
    im.sink.clear();
  };
  for (;;) {
    im.ensure_planned();
    flush();
    if (!im.pending || im.pending_end_s > t_s) return;
    im.sim.apply_step(*im.pending, im.pending_end_s);
    im.free_at_s = im.pending_end_s;
    im.pending.reset();
    cancelled.swap(im.deferred_cancels);
    im.deferred_cancels.clear();
    for (int c : cancelled) im.sim.cancel(c);
    flush();
    cancelled.clear();
  }
}

double OnlineTwin::next_event_s() {
  impl_->ensure_planned();
  return impl_->pending ? impl_->pending_end_s : std::numeric_limits<double>::infinity();
}

int OnlineTwin::max_model_len() const { return impl_->sim.max_model_len(); }

TwinView OnlineTwin::view() { return impl_->sim.finish_view(); }


PredictResult predict(const engines::EngineConfig& engine, const Cluster& cluster,
                      std::span<const WorkloadRequest> requests, const WorkloadOptions& options) {
  return predict(engine, cluster, deepseek_v32(), requests, options);
}

}  // namespace servelab::sim
