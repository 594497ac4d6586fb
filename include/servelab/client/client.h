// servelab/client: the measuring instrument's load generator. Sends OpenAI `/v1/completions` or
// `/v1/chat/completions` streaming requests exactly as `vllm bench serve` (0.13) does, on an open-loop
// arrival schedule, and fills one metrics::RequestOutput per request with vLLM's TTFT/ITL/latency
// definitions (spec: shared/reference/vllm-bench-serve.md §3).
//
// Transport: Boost.Asio (+ OpenSSL for https), one io_context per thread, N threads, keep-alive
// connection pool per thread, no thread per request, no allocation per token on the hot path.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <stop_token>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "servelab/metrics/request_output.h"
#include "servelab/schedule/schedule.h"

namespace servelab::client {

/// Which OpenAI API the requests go to (vLLM `--backend openai|vllm` → completions,
/// `openai-chat` → chat completions).
enum class Endpoint : std::uint8_t { kCompletions, kChatCompletions };

/// Counts the tokens of generated text (for vLLM's fallback when the server reports no `usage`, and
/// for the usage-vs-tokenizer cross-check). Must count WITHOUT special tokens (vLLM:
/// `tokenizer(text, add_special_tokens=False)`). Called after the run, never on the hot path, from
/// the thread that called run_load.
using RetokenizeFn = std::function<int(std::string_view text)>;

/// Progress report: `completed` requests (finished, any outcome) out of `total`. Called from the
/// thread that called run_load (about every 100 ms and once at the end), never from I/O threads.
using ProgressCallback = std::function<void(std::size_t completed, std::size_t total)>;

/// How the client connects and what it puts in every request. Validated by run_load (throws
/// std::invalid_argument naming the field and the offending value).
struct ClientOptions {
  /// Full URL, `http://` or `https://`, e.g. "http://127.0.0.1:8000/v1/completions" (vLLM
  /// `base_url + endpoint`). Chat requires the path to end in "chat/completions", completions in
  /// "completions" ("profile" also accepted, as vLLM).
  std::string api_url;
  Endpoint endpoint = Endpoint::kCompletions;
  std::string model;  ///< value of the request's "model" field (vLLM: served name, else --model)
  /// Extra headers (`--header KEY=VALUE`), sent in order after Content-Type/Authorization; a header
  /// of the same name (case-insensitive) replaces the default one; `x-request-id` always wins.
  std::vector<std::pair<std::string, std::string>> headers;
  /// Bearer token for `Authorization`; nullopt → $OPENAI_API_KEY if set (vLLM); "" → no header.
  std::optional<std::string> api_key;
  bool ignore_eos = false;      ///< adds "ignore_eos": true
  std::optional<int> logprobs;  ///< completions only; sent as null when unset (vLLM)
  /// Merged into every body after the fixed keys (Python `dict.update`: existing keys keep their
  /// position, new ones are appended). The caller puts sampling flags then --extra-body here.
  nlohmann::ordered_json extra_body = nlohmann::ordered_json::object();
  int max_concurrency = 0;                ///< client-side semaphore (vLLM --max-concurrency); 0 = none
  int num_threads = 0;                    ///< I/O threads (one io_context each); 0 = hardware cores
  double request_timeout_s = 6 * 3600.0;  ///< per-request deadline from send (aiohttp total 6 h)
  double connect_timeout_s = 30.0;        ///< TCP (+TLS) connect deadline, seconds
  bool insecure = false;                  ///< https: skip certificate and host name verification
  bool keep_generated_text = true;        ///< false → generated_text cleared after token counting
  /// Re-tokenizer for the output-token fallback/cross-check; empty → output_tokens stays the
  /// server's usage (0 when the server sent none) and tokenizer_output_tokens stays -1.
  RetokenizeFn retokenize;
  /// After a stop request: how long in-flight requests may still finish before being cancelled
  /// (seconds; 0 = cancel at once).
  double cancel_grace_s = 0.0;
  /// SCHED_FIFO priority (1-99) for the I/O threads, so that other busy processes on the machine do
  /// not delay the timestamps (needs root or CAP_SYS_NICE); 0 = normal scheduling. If it cannot be
  /// set the run continues and LoadResult::warnings says so. Measured effect: benchmarks/README.md.
  int realtime_priority = 0;
  /// Connections to open before the run's clock starts (t = 0), spread over the I/O threads in proportion
  /// to the requests each sends (at most that many per thread; ≤ 128 connecting at once per thread); 0 =
  /// connect on demand. A burst at t = 0 then writes on open connections instead of opening them inside
  /// the measured run (the connect storm: ~0.1 ms of client CPU per connection, and SYN retransmits of
  /// 1 s and more once a server's accept backlog overflows). Each is used as a kept-alive connection: one
  /// that the server closed meanwhile (e.g. uvicorn's 5 s idle timeout) costs a retry on a fresh one.
  /// Connections that cannot be opened are no request failure: LoadResult::warnings says how many and why.
  /// Measured effect: benchmarks/README.md ("Offered load").
  std::size_t preconnect = 0;
  /// t = 0 of the run (steady clock): when set, the schedule starts at this instant instead of when the I/O
  /// threads are ready (`bench serve --start-at`: one common start on several hosts). An instant already
  /// past when the threads are ready keeps t = 0 there: the late requests show as schedule lag.
  std::optional<std::chrono::steady_clock::time_point> start_at;
};

/// One request to send. prompt_len and output_len are the dataset's values (vLLM SampleRequest).
struct PlannedRequest {
  std::string prompt;                          ///< text prompt (completions "prompt", chat user text)
  std::vector<std::int32_t> prompt_token_ids;  ///< completions only: if non-empty, sent as a token list
  /// Chat only: if non-empty, a JSON array used verbatim as "messages" (prebuilt conversations);
  /// otherwise messages = [{"role":"user","content":[{"type":"text","text":prompt}]}].
  std::string messages_json;
  int prompt_len = 0;      ///< client-side prompt token count (dataset)
  int output_len = 0;      ///< expected output length → max_tokens / max_completion_tokens
  std::string request_id;  ///< x-request-id ("" = no header)
  /// Per-request body overrides, merged last (vLLM per-request extra body); may be null.
  nlohmann::ordered_json extra_body;
};

/// The arrival schedule lives in servelab_schedule (no I/O: the twin uses it without linking the client);
/// these names keep `client::arrival_schedule(...)` callers of the load generator working.
using schedule::arrival_rate;
using schedule::arrival_schedule;
using schedule::ArrivalOptions;
using schedule::RampUp;

/// What run_load returns.
struct LoadResult {
  /// One per planned request, same order. Times are relative to `start`. Requests never sent because
  /// of a stop are kCancelled with send_time_s = dispatch_time_s = 0 and error "not sent: ...".
  std::vector<metrics::RequestOutput> outputs;
  std::chrono::steady_clock::time_point start;  ///< t = 0 of the run (metrics/request_output.h), steady clock
  double duration_s = 0.0;       ///< t = 0 to the last request's completion (vLLM benchmark_duration)
  bool interrupted = false;      ///< a stop was requested before every request finished
  std::size_t num_not_sent = 0;  ///< requests never dispatched because of the stop
  /// Non-fatal problems: realtime priority refused; connections of ClientOptions::preconnect that could not
  /// be opened; server usage vs tokenizer count mismatch (with a re-tokenizer: how many requests differ and
  /// both totals).
  std::vector<std::string> warnings;
  std::size_t preconnected = 0;  ///< connections opened before t = 0 (ClientOptions::preconnect)
  double preconnect_s = 0.0;     ///< time spent opening them, before t = 0, s
};

/// Sends `requests[i]` at `start + schedule_s[i]` (open loop, wrk2-style: the intended time never
/// moves when the client lags), through the --max-concurrency semaphore (FIFO; the timer of a request
/// starts once it holds a slot, as vLLM), and streams every response. Blocks until all requests
/// finished or were cancelled. Never throws for per-request failures (recorded as
/// RequestOutput::failure); throws std::invalid_argument for bad options (URL, endpoint mismatch,
/// schedule size ≠ requests size) before anything is sent.
/// Clocks: metrics/request_output.h defines t = 0 (here `start`) and every time field (intended, dispatch,
/// send, wire); a send before connecting if no kept-alive connection was free makes TTFT include the connect,
/// as vLLM's. Every SSE event is stamped with the steady clock when its blank line is parsed (before its
/// JSON), so events that arrive in one read get (nearly) the same time, as in vLLM.
/// wire_time_s when its write completed (the request left; send lag = wire − intended − client queue).
/// Connections: keep-alive pool per I/O thread (≤ max_concurrency × threads connections); a kept-alive
/// connection the server had closed is retried once on a fresh one. ClientOptions::preconnect opens some
/// before t = 0. Each I/O thread owns its requests (round-robin share) and their connections, so connects
/// and sends of a burst run on every thread at once.
/// Limits: raises RLIMIT_NOFILE's soft limit to the hard one (process-wide), then throws
/// std::invalid_argument naming the limit when the connections this run needs at once (the requests due at
/// the first send time, capped by max_concurrency, at least preconnect) exceed the descriptors (+64) or
/// the ephemeral ports of net.ipv4.ip_local_port_range. A connect that still fails on a descriptor or port
/// limit (finite-rate runs are not checked ahead) says so in its error.
/// `stop`: a stop request stops dispatching; in-flight requests get `cancel_grace_s` to finish, then
/// are cancelled (kCancelled). Thread-safety: run_load may be called from any thread; the stop
/// source may be triggered from any thread (not from a signal handler: use a signal-waiting thread
/// or asio::signal_set).
LoadResult run_load(const ClientOptions& options, std::span<const PlannedRequest> requests,
                    std::span<const double> schedule_s, const ProgressCallback& progress = {},
                    std::stop_token stop = {});

/// One failed attempt of the ready check, as reported to its caller (bench prints a line per attempt).
struct ReadyAttempt {
  int attempt = 0;                                 ///< 1-based attempt number
  const metrics::RequestOutput* output = nullptr;  ///< that attempt's (failed) output
  double remaining_s = 0.0;                        ///< seconds left before the deadline, after it
  double retry_in_s = 0.0;                         ///< sleep before the next attempt, s; 0 = no next one
};
/// Called after each failed ready-check attempt, from the thread that called wait_until_ready.
using ReadyAttemptFn = std::function<void(const ReadyAttempt&)>;

/// vLLM's ready check: sends `request` (normally request 0 without request id) until one succeeds,
/// sleeping `retry_interval_s` (vLLM: 5 s) after a failure, each try bounded by the remaining time.
/// `on_failed_attempt` (optional) hears of every failed attempt before the sleep.
/// Returns the last attempt's output (success or the last failure). Never throws for failures.
metrics::RequestOutput wait_until_ready(const ClientOptions& options, const PlannedRequest& request,
                                        double timeout_s, double retry_interval_s = 5.0,
                                        std::stop_token stop = {},
                                        const ReadyAttemptFn& on_failed_attempt = {});

/// The JSON body vLLM sends for `request` (Python `json.dumps` bytes: ", " and ": " separators,
/// non-ASCII as \uXXXX; common::python_json_dumps), with the key order of vLLM 0.13's request functions.
/// Throws std::invalid_argument on a prompt or extra body that is not well-formed UTF-8 (vLLM could not have
/// read it) and on messages_json that is not a JSON array.
std::string request_body_json(const ClientOptions& options, const PlannedRequest& request);

/// Stable name of an endpoint ("completions", "chat_completions").
const char* endpoint_name(Endpoint endpoint);

}  // namespace servelab::client
