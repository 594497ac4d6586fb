// servelab/simserve: the public header of the module, all that the CLI and other modules include. The HTTP
// server of `servelab sim serve`: an OpenAI-compatible API whose tokens leave at the times the engine twin
// predicts. The twin's scheduler is driven online through `Timeline` in virtual time; wall time = virtual
// time / time_scale. Everything else in src/simserve is private to the module: openai_api.h (request
// validation, response JSON), metrics_text.h (GET /metrics), server_impl.h and http_session.h (the event
// loop and the connections); only simserve's own .cc files and tests of those internals include them.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tokenizer/tokenizer.h"

namespace servelab::simserve {

/// One engine's (DP rank's) live state, served by GET /metrics under vLLM 0.13's Prometheus names
/// (vllm/v1/metrics/loggers.py; see metrics_text.h).
struct EngineMetrics {
  double kv_cache_usage = 0.0;    ///< vllm:kv_cache_usage_perc, fraction [0, 1]
  int num_requests_running = 0;   ///< vllm:num_requests_running
  int num_requests_waiting = 0;   ///< vllm:num_requests_waiting
  long long num_preemptions = 0;  ///< vllm:num_preemptions_total
  long long prefix_cache_queries = 0,
            prefix_cache_hits = 0;  ///< vllm:prefix_cache_{queries,hits}_total, tokens
  long long spec_decode_num_drafts = 0, spec_decode_num_draft_tokens = 0, spec_decode_num_accepted_tokens = 0;
};

/// What the engine model makes of a request the server's context check passed.
struct Admission {
  /// Set: the engine turns the request away (the client gets a 400 with this text).
  std::optional<std::string> refusal;
  /// Else the tokens it emits: the request's, or fewer where the engine clips max_new_tokens (SGLang: to
  /// its rank's KV pool).
  int output_tokens = 0;
};

/// The online engine model behind the server, in virtual time (seconds since the server started).
/// Thread-safety: the server calls these from its single event-loop thread only.
struct Timeline {
  /// A request arrives at virtual time `now_s` with `prompt_tokens` to prefill and `output_len` to decode.
  std::function<void(std::uint64_t id, int prompt_tokens, int output_len, double now_s)> submit;
  /// The client went away: drop the request (frees its KV cache in the model).
  std::function<void(std::uint64_t id)> cancel;
  /// Advances to virtual time `t_s`, calling `emit(id, token_index, t_emit_s)` for every output token
  /// (0-based index) whose emission time is ≤ t_s, in time order; token_index = -1 reports a request the
  /// engine aborted (the client gets a 500 error).
  std::function<void(double t_s, const std::function<void(std::uint64_t, int, double)>& emit)> advance_to;
  /// Virtual time (s) of the next token emission; +infinity when idle.
  std::function<double()> next_event_s;
  /// The engines' live state for GET /metrics, one entry per DP rank; empty function: /metrics is a 404.
  std::function<std::vector<EngineMetrics>()> engine_metrics;
  bool spec_decode = false;  ///< the engine decodes speculatively: /metrics has the spec_decode families
  /// Asked before submit: the engine's verdict on a request of `prompt_tokens` asking `output_len`. Empty
  /// function: every request the server's context check passes is served as asked.
  std::function<Admission(int prompt_tokens, int output_len)> admit;
};

/// Options of `sim serve`.
struct ServerOptions {
  std::string host = "127.0.0.1";          ///< bind address (loopback unless told otherwise)
  unsigned short port = 8000;              ///< 0 = pick a free port
  std::vector<std::string> served_models;  ///< names answered on the API (first = default)
  std::string root_model;                  ///< model id shown as `root` in /v1/models
  int max_model_len = 163840;              ///< context limit, tokens (prompt + max_tokens)
  int vocab_size = 0;                      ///< the model's vocab_size (config.json); 0 = unknown
  int max_logprobs = 20;                   ///< most logprobs a request may ask for (vLLM --max-logprobs)
  double time_scale = 1.0;                 ///< >1 runs faster than real time
  std::uint64_t seed = 0;                  ///< output-token draw seed (a request's `seed` overrides)
  bool reasoning_parser = false;           ///< --reasoning-parser set: thinking output → reasoning_content
  double reasoning_fraction = 0.5;         ///< share of output tokens streamed as reasoning when thinking
  bool chat_bos = true;                    ///< chat prompts start with BOS (DeepSeek encoding)
  /// A chat request that does not say (chat_template_kwargs) thinks: the model's template default
  /// (model::ChatTemplate::thinks_by_default; Qwen3 yes, DeepSeek-V3.2 no).
  bool thinking_default = false;
  int default_max_tokens = 0;  ///< output length when the request gives none (0 = to context end)
  /// Larger request bodies get 413 (by Content-Length before the body is read, else once the streamed body
  /// passes it). 0 = 32 bytes per token of max_model_len, at least 1 MiB: a prompt that fits the context is
  /// far below it (JSON-escaped CJK text is ~9 bytes per token), and tokenizing a body that large takes
  /// the event loop ~0.1 s, not the ~10 s a 50 MB body took.
  std::size_t max_body_bytes = 0;
  std::size_t max_header_bytes = 64u << 10;  ///< larger request heads get 431
  /// An idle connection (no request in flight) must deliver a whole request head within this time, and a
  /// body within body_timeout_s after its head; else it is closed (slowloris).
  double header_timeout_s = 30.0;
  double body_timeout_s = 60.0;
  /// A token leaving this many wall ms after its scheduled time logs "falling behind" (at most every 10 s).
  double behind_warn_wall_ms = 50.0;
};

/// Counters of a running server, for tests and diagnostics. Thread-safety: Server::stats() may be called
/// from any thread.
struct ServerStats {
  std::size_t sessions = 0;            ///< open client connections
  std::size_t requests_in_flight = 0;  ///< generation requests handed to the twin and not finished
  std::uint64_t accept_errors = 0;     ///< failed accept() calls (e.g. at the file-descriptor limit)
  std::uint64_t handler_errors = 0;    ///< exceptions turned into 500 responses or dropped streams
};

/// The server. Construct, `start()` (binds and returns the port), then `run()` blocks until `stop()`.
///
/// Time: every response carries `x-servelab-time-scale: K` and /v1/models entries carry
/// `"servelab": {"engine_twin": true, "time_scale": K}`, so that clients report engine time (wall × K).
/// GET /servelab/schedule returns how late tokens left relative to the twin's schedule, in engine ms:
/// `{"time_scale": K, "total": {"tokens", "lag_sum_ms", "lag_max_ms", "lag_last_ms"}, "window": {...}}` where
/// `lag_last_ms` is the latest token's lag (read right after a run: the error on its duration) and `window`
/// covers the time since the previous GET of this path (the read starts a new window). `admission_total` /
/// `admission_window` `{"requests", "wait_sum_ms", "wait_max_ms"}` bound how long requests may have waited
/// unread while the event loop was busy (engine ms; their arrival in the twin is late by up to that).
/// GET /metrics answers the Prometheus text format (0.0.4) with vLLM's metric names and the twin's live
/// values (Timeline::engine_metrics; metrics_text.h).
/// Thread-safety: `stop()` may be called from any thread (e.g. a signal handler's watcher thread);
/// everything else from the owning thread.
class Server {
 public:
  Server(ServerOptions options, Timeline timeline, tokenizer::Tokenizer tokenizer);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  /// Binds the listening socket. Returns the bound port. Throws std::runtime_error naming host:port.
  unsigned short start();
  /// Serves until stop(). No request can end it: every exception of a request handler becomes an
  /// OpenAI-style error response (or ends that one stream) and is counted in ServerStats::handler_errors.
  void run();
  /// Stops accepting and closes all connections; run() returns (at once if it has not started yet).
  /// Thread-safe; not async-signal-safe (call it from a thread that waits for signals).
  void stop();
  /// Current counters (thread-safe).
  ServerStats stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace servelab::simserve
