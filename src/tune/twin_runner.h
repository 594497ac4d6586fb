// servelab/tune (private): the runners on the other modules — the engine twin (src/sim, target twin) and
// bench's in-process run API (src/bench, target local).
#pragma once

#include <string>

#include "tune/local_runner.h"
#include "servelab/tune/runner.h"
#include "servelab/tune/study.h"

namespace servelab::tune {

/// A TrialRunner on the engine twin, in-process: the rendered launch is parsed like the real engine does
/// (engines::parse_launch_command; sim::predict then applies the engines' refusal rules and the memory
/// plan), each scenario's workload is built from its bench args (random: fixed
/// lengths; sharegpt: the twin's ShareGPT workload from shared/data), sim::predict runs it, and the
/// per-request outputs go through metrics::compute_metrics and the vLLM console block. Every outcome has
/// predicted = true. Twin failures map to statuses: memory → kOutOfMemory, run-time → kCrashed, other →
/// kStartupRefused.
TrialRunner make_twin_runner(const Study& study);

/// Which data the twin uses for the study's scenarios (one line for the report).
std::string twin_data_note(const Study& study);

/// bench's in-process scenario runner for the local target: the scenario's args after the study's common
/// bench args, parsed as `bench serve` parses them.
ScenarioFn bench_scenario_fn(const Study& study);

}  // namespace servelab::tune
