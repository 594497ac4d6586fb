// servelab/tune (private): bench/twin metrics → the ScenarioResult the study records.
#pragma once

#include <span>
#include <string>

#include "servelab/metrics/metrics.h"
#include "servelab/metrics/request_output.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// A ScenarioResult from computed metrics: the summary under vLLM's console labels ("Successful requests",
/// "Total Token throughput (tok/s)", "Mean TTFT (ms)", "P99 TPOT (ms)", ...; goodput only with SLOs),
/// per-request TTFT and TPOT samples in ms (successes; TPOT = (latency − TTFT)/(output tokens − 1) for
/// requests with more than one token, as vLLM), and the console block as given.
ScenarioResult scenario_result(const std::string& scenario_id, const metrics::BenchmarkMetrics& m,
                               std::span<const metrics::RequestOutput> outputs, std::string result_block);

}  // namespace servelab::tune
