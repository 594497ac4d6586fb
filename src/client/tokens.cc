// Output-token counting after a run (off the hot path): vLLM's re-tokenization fallback, reasoning
// tokens, and the server-usage vs tokenizer cross-check; plus vLLM's ready check.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "servelab/client/client.h"
#include "servelab/client/request.h"

namespace servelab::client {
namespace detail {

using Clock = std::chrono::steady_clock;

void count_output_tokens(const ClientOptions& options, const std::vector<std::string>& reasoning,
                         LoadResult& result, std::stop_token stop) {
  const std::size_t n = result.outputs.size();
  // Re-tokenization is the slow part after a run (a hostile server's 10 MB events): it runs on the client's
  // I/O thread count (the tokenizer is thread-safe) and stops at a stop request between outputs.
  std::atomic<std::size_t> next{0}, counted{0}, to_count{0};
  for (const auto& out : result.outputs) to_count += options.retokenize && out.success;
  auto work = [&] {
    for (std::size_t i; (i = next++) < n;) {
      metrics::RequestOutput& out = result.outputs[i];
      if (!options.retokenize || !out.success) continue;
      if (stop.stop_requested()) continue;
      out.tokenizer_output_tokens = options.retokenize(out.generated_text);
      if (out.usage_completion_tokens < 0 || out.output_tokens == 0)
        out.output_tokens = out.tokenizer_output_tokens;
      if (out.reasoning_tokens == 0 && !reasoning[i].empty())
        out.reasoning_tokens = options.retokenize(reasoning[i]);
      ++counted;
    }
  };
  if (options.retokenize) {
    std::size_t threads = options.num_threads > 0 ? static_cast<std::size_t>(options.num_threads)
                                                  : std::max(1u, std::thread::hardware_concurrency());
    threads = std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(1, to_count.load()));
    std::vector<std::thread> pool;
    for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  }
  if (counted < to_count) {
    result.interrupted = true;
    result.warnings.push_back(
        "output tokens: re-tokenization interrupted: " + std::to_string(to_count - counted) + " of " +
        std::to_string(to_count.load()) +
        " successful requests not counted by the tokenizer (their output tokens are the "
        "server's usage, 0 where it sent none)");
  }
  for (auto& out : result.outputs) {
    if (!options.keep_generated_text) std::string().swap(out.generated_text);
  }
  std::size_t compared = 0, differ = 0, rejected = 0;
  long long usage_total = 0, tokenizer_total = 0;
  std::int64_t rejected_example = 0;
  for (const metrics::RequestOutput& out : result.outputs) {
    if (out.success && out.usage_rejected) {
      ++rejected;
      rejected_example = *out.usage_rejected;
    }
    if (!out.success || out.tokenizer_output_tokens < 0) continue;
    if (out.usage_completion_tokens < 0 && !out.usage_rejected) continue;
    ++compared;
    differ += out.usage_rejected || out.usage_completion_tokens != out.tokenizer_output_tokens;
    usage_total += std::max(out.usage_completion_tokens, 0);
    tokenizer_total += out.tokenizer_output_tokens;
  }
  if (rejected > 0) {
    result.warnings.push_back("output tokens: the server's usage holds token counts out of range (e.g. " +
                              std::to_string(rejected_example) + ") for " + std::to_string(rejected) +
                              " requests; they were rejected and those requests counted with the tokenizer");
  }
  if (differ > 0) {
    result.warnings.push_back(
        "output tokens: the server's usage.completion_tokens and the tokenizer's count of the "
        "generated text differ for " +
        std::to_string(differ) + " of " + std::to_string(compared) + " requests (totals " +
        std::to_string(usage_total) + " vs " + std::to_string(tokenizer_total) +
        "); the report uses the server's usage, as vLLM");
  }
}

}  // namespace detail

using detail::Clock;

metrics::RequestOutput wait_until_ready(const ClientOptions& options, const PlannedRequest& request,
                                        double timeout_s, double retry_interval_s, std::stop_token stop,
                                        const ReadyAttemptFn& on_failed_attempt) {
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  metrics::RequestOutput last;
  last.failure = metrics::FailureKind::kTimeout;
  last.error = "ready check timed out before any attempt";
  const double zero = 0.0;
  for (int attempt = 1;; ++attempt) {
    const double remaining = std::chrono::duration<double>(deadline - Clock::now()).count();
    if (remaining <= 0 || stop.stop_requested()) return last;
    ClientOptions once = options;
    once.request_timeout_s = std::min(options.request_timeout_s, remaining);
    once.connect_timeout_s = std::min(options.connect_timeout_s, remaining);
    once.num_threads = 1;
    LoadResult r = run_load(once, std::span<const PlannedRequest>(&request, 1),
                            std::span<const double>(&zero, 1), {}, stop);
    last = std::move(r.outputs[0]);
    if (last.success) return last;
    // Sleep the retry interval, waking early on a stop request. An interval that reaches the deadline leaves
    // no next attempt (vLLM's loop tests the time after its sleep): end now rather than sleep and say
    // "next attempt in 2.0 s" when none follows (new-user trial).
    const auto now = Clock::now();
    const auto wake =
        now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(retry_interval_s));
    const bool another = wake < deadline;
    if (on_failed_attempt && !stop.stop_requested()) {
      const double left = std::max(0.0, std::chrono::duration<double>(deadline - now).count());
      on_failed_attempt(ReadyAttempt{attempt, &last, left,
                                     another ? std::chrono::duration<double>(wake - now).count() : 0.0});
    }
    if (!another) return last;
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    cv.wait_until(lock, stop, wake, [] { return false; });
  }
}

}  // namespace servelab::client
