// The engines' schedulers, per DP rank, over a KV pool in bytes (include/servelab/sim/memory_plan.h): vLLM
// V1, SGLang, TensorRT-LLM in-flight batching. Which one runs, and its limits, come from the resolved launch
// (engines::SchedulerPolicy); this file holds the algorithms only.
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/simulator.h"

namespace servelab::sim::detail {
namespace {

// sum_{i=s+1}^{s+n} min(i, k): keys of the queries of a prefill chunk over positions s+1..s+n.
double sum_min_limit(double s, double n, double k) {
  const double e = s + n;
  if (!std::isfinite(k) || e <= k) return n * s + n * (n + 1) / 2;
  if (s >= k) return n * k;
  const double m = k - s;  // queries below the knee
  return m * s + m * (m + 1) / 2 + (e - k) * k;
}

/// Sum over positions 1..x of ((pos - 1) mod c) + 1: q full chunks of c(c+1)/2 and a partial one.
double chunk_prefix_pairs(double x, double c) {
  const double q = std::floor(x / c), r = x - q * c;
  return q * c * (c + 1) / 2 + r * (r + 1) / 2;
}

}  // namespace

double pattern_prefill_pairs(const AttentionPattern& p, double s, double n) {
  if (p.chunk > 0) return chunk_prefix_pairs(s + n, p.chunk) - chunk_prefix_pairs(s, p.chunk);
  return sum_min_limit(s, n, p.key_limit);
}

double pattern_decode_keys(const AttentionPattern& p, double c) {
  if (p.chunk > 0) return std::fmod(std::max(c, 1.0) - 1, p.chunk) + 1;
  return std::min(c, p.key_limit);
}

bool Simulator::alloc(Rank& r, Req& q, long long tokens) {
  if (tokens <= q.kv_tokens) return true;  // request_kv_bytes is non-decreasing in tokens
  // A cached shared prefix the request references is held once by its group (SharedPrefix), not by it.
  const double need = std::max(0.0, request_kv_bytes(plan_, tokens) - q.shared_bytes);
  // request_kv_bytes is flat up to the end of the block `tokens` falls in (the window part too: its
  // rounded length is that block's end or the window), so the allocation covers that far.
  const long long bs = std::max(1, plan_.block_size);
  const long long covered = (tokens + bs - 1) / bs * bs;
  if (need <= q.kv_bytes) {
    q.kv_tokens = std::max(q.kv_tokens, covered);
    return true;
  }
  const double delta = need - q.kv_bytes;
  if (delta > r.free_bytes) return false;
  r.free_bytes -= delta;
  r.allocated += delta;
  q.kv_bytes = need;
  q.kv_tokens = covered;
  r.peak_used = std::max(r.peak_used, r.total_bytes - r.free_bytes);
  return true;
}

void Simulator::release(Rank& r, Req& q) {
  r.free_bytes += q.kv_bytes;
  q.kv_bytes = 0;
  q.kv_tokens = 0;
  if (q.holds_prefix) {
    q.holds_prefix = false;
    q.prefix_owner = false;
    q.shared_bytes = 0;
    SharedPrefix& p = r.prefixes[q.prefix_group];
    if (--p.holders == 0) {
      // The last reference gone, the prefix's blocks are free but stay cached: evicted only after every
      // block freed before them (the request's own tail blocks among them) has been reused.
      p.evict_after = r.allocated + r.free_bytes;
      r.free_bytes += p.bytes;
    }
  }
}

void Simulator::cache_shared_prefix(Rank& r, Req& q) {
  if (!launch_.prefix_caching || q.prefix_group < 0) return;
  // Full blocks enter the cache as the prefill computes them (chunk by chunk), so a request that arrives
  // while the first of its group is still prefilling finds the blocks done so far.
  const long long bs = std::max(1, plan_.block_size);
  const long long tokens = std::min<long long>(q.computed, q.shared_prefix_len) / bs * bs;
  if (tokens <= 0) return;
  SharedPrefix& p = r.prefixes[q.prefix_group];
  if (q.holds_prefix && !q.prefix_owner)
    return;  // it references the group's copy; its own blocks stay its own
  if (!q.holds_prefix) {
    // Another request of the group pins a copy already: this one computed its own and keeps it private, as
    // the engine's hash table keeps one copy. Else its blocks become the group's (a stale copy left free
    // by earlier holders is simply replaced).
    if (p.holders > 0) return;
    p.tokens = 0;
    p.bytes = 0;
    p.holders = 1;
    q.holds_prefix = true;
    q.prefix_owner = true;
  }
  if (tokens <= p.tokens) return;
  // The request's prefix blocks move to the group: counted once, as used, while referenced.
  const double extra = std::clamp(request_kv_bytes(plan_, tokens) - p.bytes, 0.0, q.kv_bytes);
  q.kv_bytes -= extra;
  p.bytes += extra;
  p.tokens = tokens;
  q.shared_bytes = p.bytes;
}

double Simulator::tokens_of_bytes(double bytes) const {
  const double per = plan_.kv_bytes_per_token + plan_.kv_window_bytes_per_token;
  return per > 0 ? bytes / per : bytes;
}

void Simulator::preempt(Rank& r, int id) {
  Req& q = reqs_[id];
  if (launch_.prefix_caching) {
    // The blocks go to the back of the free queue (vLLM FreeKVCacheBlockQueue; SGLang's radix cache):
    // evicted only once every block freed before them has been reused.
    q.cached_bytes = q.kv_bytes;
    q.cached_tokens = q.computed;
    q.evict_after = r.allocated + r.free_bytes;
  }
  release(r, q);
  q.computed = 0;
  q.prefill_target = q.prompt + q.generated;  // recompute prompt + generated tokens
  q.sched = 0;
  q.state = ReqState::kWaiting;
  r.running.erase(std::find(r.running.begin(), r.running.end(), id));
  r.waiting.push_front(id);
  ++view_.preemptions;
  ++r.preemptions;
}

double Simulator::surviving_fraction(const Rank& r, double bytes, double evict_after) {
  const double evicted = std::max(0.0, r.allocated - evict_after);
  return std::max(0.0, bytes - evicted) / bytes;
}

void Simulator::restore_cached_prefix(Rank& r, Req& q) {
  if (q.cached_bytes <= 0) {
    // A fresh prompt whose group's prefix is cached on this rank references the blocks that survive (all
    // while pinned) instead of prefilling them: whole blocks, at most prompt - 1 tokens (one token is always
    // computed so that the step samples). Unpinned blocks are taken back from the free pool.
    if (!launch_.prefix_caching || q.prefix_group < 0 || q.computed > 0 || q.holds_prefix) return;
    const auto it = r.prefixes.find(q.prefix_group);
    if (it == r.prefixes.end() || it->second.tokens <= 0 || it->second.bytes <= 0) return;
    SharedPrefix& p = it->second;
    const double surviving = p.holders > 0 ? 1.0 : surviving_fraction(r, p.bytes, p.evict_after);
    const long long bs = std::max(1, plan_.block_size);
    long long tokens = static_cast<long long>(static_cast<double>(p.tokens) * surviving) / bs * bs;
    tokens = std::min<long long>(tokens, q.prefill_target - 1) / bs * bs;
    if (tokens <= 0) return;
    const double bytes = std::min(p.bytes, request_kv_bytes(plan_, tokens));
    if (p.holders == 0) {
      if (bytes > r.free_bytes) return;
      r.free_bytes -= bytes;  // re-pinned; the evicted rest is gone
      r.peak_used = std::max(r.peak_used, r.total_bytes - r.free_bytes);
      p.tokens = tokens;
      p.bytes = bytes;
    }
    ++p.holders;
    q.holds_prefix = true;
    q.shared_bytes = bytes;  // a prompt shorter than the pinned prefix references its leading blocks only
    q.computed = static_cast<int>(tokens);  // the rest is allocated with its next chunk by the caller
    view_.shared_prefix_tokens_reused += tokens;
    return;
  }
  const double surviving = surviving_fraction(r, q.cached_bytes, q.evict_after);
  // Cached blocks are prefix blocks (a request's tail blocks are evicted first); one token is always
  // recomputed so that the step samples.
  const long long bs = plan_.block_size;
  long long tokens = static_cast<long long>(q.cached_tokens * surviving) / bs * bs;
  tokens = std::min<long long>(tokens, q.prefill_target - 1);
  q.cached_bytes = 0;
  if (tokens <= 0) return;
  q.computed = static_cast<int>(tokens);  // allocated with the request's next chunk by the caller
  view_.cached_tokens_reused += tokens;
}

void Simulator::count_prefix_lookup(Rank& r, const Req& q) {
  if (!launch_.prefix_caching) return;
  r.prefix_cache_queries += q.prefill_target;
  r.prefix_cache_hits += q.computed;  // restore_cached_prefix left the tokens found cached there
}

int Simulator::verify_tokens() const {
  if (!launch_.speculative) return 1;
  const auto& s = *launch_.speculative;
  // Chain drafts verify 1 + k tokens; SGLang's tree verifies num_draft_tokens.
  return s.topk > 1 ? std::max(2, s.num_draft_tokens) : 1 + std::max(1, s.num_speculative_tokens);
}

void Simulator::account(Rank& r, int id, int n) {
  Req& q = reqs_[id];
  q.sched = n;
  RankLoad& b = r.load;
  b.query_tokens += n;
  ++b.requests;
  const auto& pats = model_.patterns();
  const int topk_p = model_.topk_pattern();
  if (q.computed < q.prefill_target) {  // prefill chunk over positions computed+1 .. computed+n
    b.prefill_tokens += n;
    ++b.prefill_requests;
    b.prefill_cached += q.computed;
    b.prefill_max_context = std::max(b.prefill_max_context, q.computed + n);
    const double s = q.computed;
    const double topk = topk_p >= 0 ? pats[topk_p].key_limit : 0;
    const bool dense_short =
        topk_p >= 0 && launch_.execution.dsa_dense_short_prefill && q.prefill_target <= topk;
    for (std::size_t p = 0; p < pats.size(); ++p) {
      if (pats[p].linear) continue;
      if (static_cast<int>(p) == topk_p) {
        if (dense_short)
          b.dsa_dense_prefill_pairs += sum_min_limit(s, n, std::numeric_limits<double>::infinity());
        else
          b.prefill_pairs[p] += model_.prefill_fixed_topk() ? double(n) * topk : sum_min_limit(s, n, topk);
        continue;
      }
      b.prefill_pairs[p] += pattern_prefill_pairs(pats[p], s, n);
    }
    if (topk_p >= 0 && !dense_short)
      b.indexer_prefill_pairs += sum_min_limit(s, n, std::numeric_limits<double>::infinity());
    if (q.computed + n >= q.prefill_target) b.sampled_tokens += 1;
  } else {  // decode: n = 1 + draft query tokens at context c
    ++b.decode_requests;
    const double c = q.computed + 1;
    for (std::size_t p = 0; p < pats.size(); ++p) {
      if (pats[p].linear) continue;
      const bool fixed = static_cast<int>(p) == topk_p && model_.decode_fixed_topk();
      const double keys = fixed ? pats[p].key_limit : pattern_decode_keys(pats[p], c);
      b.decode_pairs[p] += n * keys;
      b.decode_kv_tokens[p] += keys;
    }
    b.sampled_tokens += n;
  }
}

void Simulator::route(int id) {
  Req& q = reqs_[id];
  int best = 0;
  if (ranks_.size() > 1) {
    if (launch_.routing == engines::Routing::kLeastLoaded) {
      // vLLM DP load balancing: score = waiting * 4 + running (DPLBAsyncMPClient), lowest wins.
      long long best_score = -1;
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const long long s = 4LL * ranks_[i].waiting.size() + ranks_[i].running.size();
        if (best_score < 0 || s < best_score) best_score = s, best = static_cast<int>(i);
      }
    } else if (launch_.routing == engines::Routing::kShortestQueue) {
      // Fewest requests (waiting + running) on the rank.
      std::size_t best_n = 0;
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const std::size_t n = ranks_[i].waiting.size() + ranks_[i].running.size();
        if (i == 0 || n < best_n) best_n = n, best = static_cast<int>(i);
      }
    } else if (launch_.routing == engines::Routing::kMinimumTokens) {
      // Fewest KV bytes in use on the rank.
      double best_used = 0;
      for (std::size_t i = 0; i < ranks_.size(); ++i) {
        const double used = ranks_[i].total_bytes - ranks_[i].free_bytes;
        if (i == 0 || used < best_used) best_used = used, best = static_cast<int>(i);
      }
    } else {  // SGLang data_parallel_controller: round robin
      best = rr_next_;
      rr_next_ = (rr_next_ + 1) % static_cast<int>(ranks_.size());
    }
  }
  q.rank = best;
  q.state = ReqState::kWaiting;
  ranks_[best].waiting.push_back(id);
}

// vLLM V1 scheduler (vllm/v1/core/sched/scheduler.py): running requests first (decode or the next
// prefill chunk), preempting from the back of the running list when KV runs out; then waiting requests
// FCFS while the token budget, max_num_seqs and free KV allow. Requests of a micro-batch still in the
// pipeline are skipped.
void Simulator::schedule_vllm(Rank& r, int) {
  const auto& sch = launch_.scheduler;
  int budget = sch.token_budget;
  int generation_tokens = 0;  // the running requests' decode (and verify) tokens of this step
  bool preempted = false;
  const int verify = verify_tokens();
  for (std::size_t i = 0; i < r.running.size() && budget > 0;) {
    const int id = r.running[i];
    Req& q = reqs_[id];
    if (q.in_flight) {
      ++i;
      continue;
    }
    const bool generating = q.computed >= q.prefill_target;
    int n = generating ? verify : std::min(q.prefill_target - q.computed, budget);
    n = std::min(n, budget);
    bool ok = alloc(r, q, q.computed + n);
    while (!ok) {
      int victim = -1;
      for (auto it = r.running.rbegin(); it != r.running.rend(); ++it)
        if (!reqs_[*it].in_flight) {
          victim = *it;
          break;
        }
      if (victim < 0) break;
      preempt(r, victim);
      preempted = true;
      if (victim == id) break;
      ok = alloc(r, q, q.computed + n);
    }
    if (!ok) break;
    account(r, id, n);
    budget -= n;
    if (generating) generation_tokens += n;
    ++i;
  }
  if (preempted) return;
  if (budget <= 0) note_head_over_budget(r, generation_tokens);
  while (!r.waiting.empty() && budget > 0 && static_cast<int>(r.running.size()) < max_running_) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    restore_cached_prefix(r, q);
    int n = q.prefill_target - q.computed;
    if (!sch.chunked_prefill && n > budget) {
      note_context_over_budget(n, generation_tokens);
      break;
    }
    n = std::min(n, budget);
    if (!alloc(r, q, q.computed + n)) break;
    r.waiting.pop_front();
    count_prefix_lookup(r, q);
    q.state = ReqState::kRunning;
    r.running.push_back(id);
    account(r, id, n);
    budget -= n;
  }
}

// SGLang scheduler (managers/scheduler.py get_next_batch_to_run + schedule_policy.PrefillAdder): a prefill
// batch when requests can be admitted (prefill first, no mixing with decode unless --enable-mixed-chunk),
// else one decode step for all running requests. Admission reserves future tokens: remaining
// max_new_tokens (clipped) x new_token_ratio for every running request, the whole remaining
// max_new_tokens (clipped) for every request admitted into this prefill batch; new_token_ratio
// starts at 0.7 x conservativeness and decays to 0.1 x conservativeness over 600 decode steps; a decode
// step that runs out of KV retracts requests.
//
// Pipeline parallelism (slot_ >= 0): the running batch is the slot's (decode steps take only its
// requests, admitted requests join it) and holds at most pp_max_micro_batch_size requests, by default
// max_running_requests / pp (scheduler.py get_num_allocatable_reqs) [recalled]; the KV pool is shared.
void Simulator::schedule_sglang(Rank& r, int) {
  const auto& sch = launch_.scheduler;
  const double ratio = r.new_token_ratio;
  double reserved = 0;
  int prefilling = -1, in_slot = 0;
  for (int id : r.running) {
    const Req& q = reqs_[id];
    // With PP slots a chunk in flight does not hold back the next micro-batch's prefill: the stages run
    // the micro-batches in order, so later chunks and requests pipeline behind it [recalled].
    if (q.computed < q.prefill_target && !(slot_ >= 0 && q.in_flight)) prefilling = id;
    reserved += std::min(q.output_len - q.generated, sch.clip_max_new_tokens) * ratio;
    in_slot += q.micro_batch == slot_ ? 1 : 0;
  }
  const int slots = std::max<int>(1, static_cast<int>(slot_busy_.size()));
  const int cap = slot_ >= 0 ? std::max(1, max_running_ / slots) : max_running_;
  const int held = slot_ >= 0 ? in_slot : static_cast<int>(r.running.size());
  // batch_is_full: an admission that ran out of KV (AddReqResult.NO_TOKEN) stops prefill batches of this
  // running batch until it shrinks (a request finished or was retracted: update_running_batch) [recalled].
  const std::size_t fs = static_cast<std::size_t>(std::max(0, slot_));
  if (r.full_at.size() <= fs) r.full_at.resize(fs + 1, 0);
  if (r.full_at[fs] > 0 && held < r.full_at[fs]) r.full_at[fs] = 0;
  const bool full = r.full_at[fs] > 0;
  double rem_total = tokens_of_bytes(r.free_bytes) - reserved;
  int rem_chunk = sch.token_budget;
  int rem_input = sch.max_prefill_tokens;
  bool any = false;
  if (prefilling >= 0 && !reqs_[prefilling].in_flight) {  // the chunked request continues first
    Req& q = reqs_[prefilling];
    const int n = std::min(q.prefill_target - q.computed, rem_chunk);
    if (alloc(r, q, q.computed + n)) {
      account(r, prefilling, n);
      q.micro_batch = slot_;
      rem_chunk -= n;
      rem_input -= n;
      any = true;
    }
  }
  int admitted = 0;
  auto set_full = [&] {
    if (held + admitted > 0) r.full_at[fs] = held + admitted;
  };
  while (!full && prefilling < 0 && !r.waiting.empty() && rem_chunk > 0 && rem_input > 0 &&
         held + admitted < cap) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    restore_cached_prefix(r, q);
    const int remaining = q.prefill_target - q.computed;
    // The candidate reserves its whole remaining max_new_tokens (clipped), not x new_token_ratio: the ratio
    // scales only the running batch's reservation (schedule_policy.py PrefillAdder.add_one_req: total_tokens
    // = extend_input_len + min(max_new_tokens - output, CLIP_MAX_NEW_TOKENS); _update_prefill_budget adds
    // max_new_tokens unscaled) [recalled].
    const double need = remaining + std::min(q.output_len - q.generated, sch.clip_max_new_tokens);
    if (need > rem_total && any) {
      set_full();
      break;
    }
    if (!sch.chunked_prefill && remaining > rem_chunk && any) break;
    const int n = sch.chunked_prefill ? std::min(remaining, rem_chunk) : remaining;
    if (!alloc(r, q, q.computed + n)) {
      set_full();
      break;
    }
    r.waiting.pop_front();
    count_prefix_lookup(r, q);
    q.state = ReqState::kRunning;
    q.micro_batch = slot_;
    r.running.push_back(id);
    account(r, id, n);
    ++admitted;
    rem_total -= need;
    rem_chunk -= n;
    rem_input -= n;
    any = true;
    if (n < remaining) break;  // chunked: the rest continues next prefill batch
  }
  if (any && !sch.mixed_prefill_decode) return;
  decode_sglang(r);
}

// SGLang's decode step (update_running_batch): every running request of the batch that finished its
// prefill; a step that runs out of KV retracts requests; new_token_ratio decays.
void Simulator::decode_sglang(Rank& r) {
  const auto& sch = launch_.scheduler;
  const int n = verify_tokens();
  for (std::size_t i = 0; i < r.running.size();) {
    const int id = r.running[i];
    Req& q = reqs_[id];
    if (q.computed < q.prefill_target || q.in_flight || q.sched > 0 ||
        (slot_ >= 0 && q.micro_batch != slot_)) {
      ++i;
      continue;
    }
    if (!alloc(r, q, q.computed + n)) {
      // retract_decode: the most recently admitted request goes back to the queue.
      int victim = -1;
      for (auto it = r.running.rbegin(); it != r.running.rend(); ++it)
        if (!reqs_[*it].in_flight && reqs_[*it].sched == 0) {
          victim = *it;
          break;
        }
      if (victim < 0) break;
      preempt(r, victim);
      r.new_token_ratio = std::min(1.0, 0.7 * sch.conservativeness);
      if (victim != id)
        i = static_cast<std::size_t>(std::find(r.running.begin(), r.running.end(), id) - r.running.begin());
      continue;
    }
    account(r, id, n);
    ++i;
  }
  const double init = std::min(1.0, 0.7 * sch.conservativeness);
  const double lo = std::min(init, 0.1 * sch.conservativeness);
  r.new_token_ratio = std::max(lo, r.new_token_ratio - (init - lo) / 600.0);
}

void Simulator::note_context_over_budget(int tokens, int generation_tokens) {
  // Only a prompt the whole budget holds, kept out by the generation tokens alone (a prompt that waits one
  // step for other prompts is ordinary batching; a longer one never runs: the resolver refuses or fails it).
  const int whole = launch_.scheduler.token_budget;
  if (tokens > whole || tokens <= whole - generation_tokens) return;
  ++view_.contexts_over_budget_steps;
  view_.largest_context_over_budget = std::max(view_.largest_context_over_budget, tokens);
  view_.step_token_budget = launch_.scheduler.token_budget;
}

void Simulator::note_head_over_budget(const Rank& r, int generation_tokens) {
  if (launch_.scheduler.chunked_prefill || r.waiting.empty() ||
      static_cast<int>(r.running.size()) >= max_running_)
    return;
  const Req& q = reqs_[r.waiting.front()];
  note_context_over_budget(q.prefill_target - q.computed, generation_tokens);
}

// TensorRT-LLM in-flight batching (batch_manager capacity + micro-batch schedulers): GUARANTEED_NO_EVICT
// admits a request only when KV for prompt + max output is free; without chunked prefill a context
// request runs whole and must fit the max_num_tokens budget left after the generation tokens.
void Simulator::schedule_trtllm(Rank& r, bool contexts_allowed) {
  const auto& sch = launch_.scheduler;
  int budget = sch.token_budget;
  int generation_tokens = 0;
  const int verify = verify_tokens();
  for (int id : r.running) {
    Req& q = reqs_[id];
    if (q.in_flight) continue;
    if (q.computed >= q.prefill_target) {
      account(r, id, verify);
      budget -= verify;
      generation_tokens += verify;
    } else if (budget > 0 && contexts_allowed) {  // a chunked context continues
      const int take = std::min(q.prefill_target - q.computed, budget);
      account(r, id, take);
      budget -= take;
    }
  }
  if (contexts_allowed && budget <= 0) note_head_over_budget(r, generation_tokens);
  while (contexts_allowed && !r.waiting.empty() && static_cast<int>(r.running.size()) < max_running_ &&
         budget > 0) {
    const int id = r.waiting.front();
    Req& q = reqs_[id];
    restore_cached_prefix(r, q);  // KV cache reuse (enable_block_reuse): reused blocks are not recomputed
    const int n = q.prefill_target - q.computed;
    if (n > budget && !sch.chunked_prefill) {
      note_context_over_budget(n, generation_tokens);
      break;
    }
    if (!alloc(r, q, q.prompt + q.output_len)) break;
    r.waiting.pop_front();
    count_prefix_lookup(r, q);
    q.state = ReqState::kRunning;
    r.running.push_back(id);
    const int take = std::min(n, budget);
    account(r, id, take);
    budget -= take;
  }
}

// TensorRT-LLM attention-DP balancing (pyexecutor/py_executor.py _balance_adp_requests, with
// attention_dp_config.enable_balance) [recalled]: the ranks exchange how many contexts and generations they
// scheduled. When every rank has a context and a free slot, contexts start at once, or, when every rank also
// has generations, after batching_wait_iters more steps; otherwise they wait, until timeout_iters steps have
// passed or some rank has no generation to run. A step that holds back a request some rank could start
// counts in TwinView::contexts_held_steps.
bool Simulator::trtllm_contexts_balanced() {
  const auto& sch = launch_.scheduler;
  if (!sch.dp_balance || ranks_.size() < 2) return true;
  bool all_context = true, all_free = true, all_generating = true, any_startable = false;
  for (const Rank& r : ranks_) {
    int generating = 0;
    bool context = false;
    for (int id : r.running) {
      const Req& q = reqs_[id];
      if (q.in_flight) continue;
      if (q.computed >= q.prefill_target)
        ++generating;
      else
        context = true;
    }
    const bool startable = !r.waiting.empty() && static_cast<int>(r.running.size()) < max_running_;
    any_startable = any_startable || startable;
    all_context = all_context && (context || startable);
    all_free = all_free && generating < max_running_;
    all_generating = all_generating && generating > 0;
  }
  bool allowed = true;
  if (all_context && all_free) {
    balance_wait_steps_ = 0;
    if (all_generating && balance_batching_steps_ < sch.dp_balance_batching_steps) {
      ++balance_batching_steps_;
      allowed = false;
    } else if (all_generating) {
      balance_batching_steps_ = 0;
    }
  } else if (++balance_wait_steps_ >= sch.dp_balance_timeout_steps || !all_generating) {
    balance_wait_steps_ = 0;
  } else {
    allowed = false;
  }
  if (!allowed && any_startable) ++view_.contexts_held_steps;
  return allowed;
}

}  // namespace servelab::sim::detail
