// servelab/bench: the status lines `bench serve` prints when things go wrong at the edges — each failed
// ready-check attempt, the hint when the backend does not fit the server's API, and the message of a run in
// which every request failed.
#pragma once

#include <span>
#include <string>

#include "servelab/bench/config.h"
#include "servelab/client/client.h"
#include "servelab/metrics/request_output.h"

namespace servelab::bench {

/// One line (no newline) for a failed ready-check attempt, e.g. "Endpoint not ready (attempt 2): connect to
/// 127.0.0.1:8000 failed: Connection refused; 590.0 s left, next attempt in 5.0 s" (or "; no time left"
/// for the last one). The error text is the client's (already free of credentials).
std::string ready_attempt_line(const client::ReadyAttempt& attempt);

/// A hint (starting with " Hint: ", or empty) when `failure` suggests that `--backend` does not match the
/// server's API: a completions backend (openai, vllm) whose endpoint answered HTTP 404/405 (a server that
/// serves only chat completions) is pointed at `--backend openai-chat --endpoint /v1/chat/completions`, and
/// the chat backend getting 404/405 at `--backend openai --endpoint /v1/completions`.
std::string backend_hint(const RunOptions& config, const metrics::RequestOutput& failure);

/// The error message of a finished run in which no request succeeded (empty when one did, when there were no
/// requests, or when the run was interrupted): vLLM's "All requests failed. This is likely due to a
/// misconfiguration on the benchmark arguments." followed by the count by failure kind, the first error and
/// backend_hint. `bench serve` prints it after the report and exits 1.
std::string all_failed_message(const RunOptions& config, std::span<const metrics::RequestOutput> outputs,
                               bool interrupted);

}  // namespace servelab::bench
