// servelab/metrics: the per-request record every producer (bench's HTTP client, the engine twin's
// discrete-event simulation) fills and every consumer (metrics, report) reads. One shape, one meaning.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace servelab::metrics {

/// Why a request failed. `kNone` for a success. Counted per kind in the report's failure table.
enum class FailureKind : std::uint8_t {
  kNone = 0,
  kConnect,       ///< TCP/TLS connect failed or refused
  kHttpStatus,    ///< non-2xx HTTP status (see http_status, error_message holds a body excerpt)
  kSseParse,      ///< malformed SSE framing
  kJsonParse,     ///< an SSE data payload that is not valid JSON / lacks expected fields
  kTimeout,       ///< request exceeded its deadline
  kReset,         ///< connection closed or reset mid-stream
  kNoValidChunk,  ///< stream ended without any chunk carrying `choices` (vLLM: "Never received a valid
                  ///< chunk")
  kServerError,   ///< the server sent an `error` object inside the stream
  kCancelled,     ///< cancelled by Ctrl-C / interrupt
};

/// Stable lower-case name of a failure kind ("connect", "http_status", ...), used in reports and JSON.
const char* failure_kind_name(FailureKind kind);

/// Outcome and timings of one benchmark request, as vLLM's `RequestFuncOutput` plus servelab extras.
///
/// The run's clock (the one definition; other headers refer here). Every `*_time_s` field is an instant in
/// seconds on the steady (monotonic) clock since t = 0; the other `*_s` fields are durations.
/// t = 0 is the run's start: the instant the arrival schedule's time 0 falls on (vLLM's
/// benchmark_start_time). bench's client: when every I/O thread is ready (after any preconnect), or the
/// --start-at instant (client::LoadResult::start); the engine twin: virtual time 0. It is not the first
/// dispatch: a request the schedule puts at 0.2 s has intended_send_time_s = 0.2 whatever the client does.
/// A request's instants, in order: intended send (the schedule) <= dispatch (the client fired it) <= send (it
/// holds its --max-concurrency slot and starts: vLLM's `st`, TTFT and latency count from here) <= wire (its
/// bytes left); send_time_s has this one meaning in every producer (the twin takes the same slot).
struct RequestOutput {
  bool success = false;
  FailureKind failure = FailureKind::kNone;
  int http_status = 0;  ///< HTTP status code received (0 if none)
  std::string error;    ///< human-readable error text (vLLM's `error` field)

  int prompt_len = 0;           ///< input tokens: server usage.prompt_tokens if known, else client count
  int dataset_prompt_len = -1;  ///< client-side (dataset) prompt length; -1 = not set (then prompt_len
                                ///< is used). vLLM 0.13 sums this one into total_input.
  int output_tokens = 0;        ///< server usage.completion_tokens, else re-tokenized text count
  int output_len = 0;           ///< requested max tokens

  double intended_send_time_s = 0.0;  ///< when the schedule wanted it sent (open-loop arrival time)
  double dispatch_time_s = 0.0;       ///< when the client dispatched it (before the --max-concurrency
                                      ///< semaphore; vLLM request_arrival_time). Schedule lag =
                                      ///< dispatch - intended; client queue time = send - dispatch.
  double send_time_s = 0.0;           ///< the send (see the clock above): it held its
                                      ///< --max-concurrency slot, before any connect (vLLM start_time: TTFT
                                      ///< includes the connect)
  /// When the whole request had been handed to the kernel (its write completed, after any connect and TLS
  /// handshake): the moment it left. -1 = not measured (e.g. the engine twin's offline simulation).
  /// Send lag = wire - intended - client queue (= schedule lag + wire - send).
  double wire_time_s = -1.0;
  double ttft_s = 0.0;        ///< first chunk with non-empty `choices` minus send_time_s (vLLM TTFT)
  double ttfct_s = -1.0;      ///< time to first non-empty content/reasoning text (servelab extra); -1 = none
  std::vector<double> itl_s;  ///< gaps between successive `choices` chunks (vLLM ITL), seconds
  std::vector<std::int32_t> chunk_tokens;  ///< tokens per chunk when known (servelab extra; may be empty)
  double latency_s = 0.0;                  ///< last `choices` chunk minus send_time_s (vLLM latency / E2EL)
  /// When the client saw the request end, success, error or cancellation alike (run clock, s): how long a
  /// failed request was in flight. -1 = not recorded (never sent; the engine twin's offline simulation).
  double end_time_s = -1.0;

  int reasoning_tokens = 0;          ///< tokens streamed as `reasoning_content`/`reasoning` (extra), if known
  int usage_prompt_tokens = -1;      ///< server usage.prompt_tokens (-1 = not reported)
  int usage_completion_tokens = -1;  ///< server usage.completion_tokens (-1 = not reported)
  int tokenizer_output_tokens = -1;  ///< client re-tokenization of generated_text (-1 = not computed)
  /// A usage count the server sent outside [0, 2^31 - 1] (e.g. 2^40; beyond 2^63 - 1 saturated), rejected:
  /// output_tokens then comes from the tokenizer and the run's usage-vs-tokenizer warning counts it as a
  /// mismatch. Empty when none was.
  std::optional<std::int64_t> usage_rejected;
  std::string generated_text;  ///< concatenated content (only kept with --save-detailed)
  std::string request_id;      ///< x-request-id sent
};

/// Whether `o` never left the client: a Ctrl-C (or a failed earlier turn of its session) cancelled it before
/// it was dispatched, so its dispatch time is still 0 (client::load marks such requests so). Neither
/// completed nor failed: the server never saw it.
inline bool never_sent(const RequestOutput& o) {
  return o.failure == FailureKind::kCancelled && o.dispatch_time_s == 0.0;
}

}  // namespace servelab::metrics
