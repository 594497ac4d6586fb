// servelab/tune (private): the runners on the other modules — the engine twin (src/sim, target twin) and
// bench's in-process run API (src/bench, target local).
#pragma once

#include <string>
#include <vector>

#include "servelab/bench/config.h"

#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"
#include "tune/targets/local_runner.h"

namespace servelab::tune {

/// A TrialRunner on the engine twin, in-process: the rendered launch is parsed like the real engine does
/// (engines::parse_launch_command; sim::predict then applies the engines' refusal rules and the memory
/// plan), each scenario's bench args are read by bench's own parser exactly as the local target reads them
/// (parse_scenario_bench_args: [bench] common_args, --model, the scenario's args), and its workload is built
/// from them as `sim run` builds it (random: fixed lengths; sharegpt without its file: the twin's built-in
/// ShareGPT lengths of the model's tokenizer family; any dataset file: bench's sampling with --tokenizer,
/// default the model's tokenizer); sim::predict runs it, and the per-request outputs go through
/// metrics::compute_metrics and the vLLM console block. Every outcome has predicted = true. Twin failures
/// map to statuses by their kind (sim::PredictedFailure): memory plan → kOutOfMemory, run time → kCrashed,
/// start-up refusal or unmodelled launch → kStartupRefused.
/// Every scenario's workload and the model are prepared here, once: what would fail every trial (a model
/// the twin cannot resolve, a tokenizer that cannot be loaded, bad bench args) throws TuneSetupError with
/// the whole message and the fix, before any trial runs, when the study needs the twin (target twin, or a
/// twin-guided search); where the twin only guides a local study's SLO searches, it fails those
/// predictions instead (with the same message) and the study goes on.
TrialRunner make_twin_runner(const Study& study);

/// Which data the twin uses for the study's scenarios (one line for the report).
std::string twin_data_note(const Study& study);

/// bench's in-process scenario runner for the local target: the scenario's args after the study's common
/// bench args, parsed as `bench serve` parses them.
ScenarioFn bench_scenario_fn(const Study& study);

/// The bench serve arguments every scenario of `study` starts with: [bench] common_args, --model (the
/// study's model) and --goodput from the [objective]'s SLOs.
std::vector<std::string> bench_common_args(const Study& study);

/// `common`, then scenario `sc`'s args with its --dataset-path resolved (tune/datasets.h), then `extra`,
/// through bench's own flag parser (bench::parse_bench_args), as the twin and the local target both read
/// them. Throws std::invalid_argument naming the scenario on an argument bench refuses, prefixed with where
/// the faulty arguments are written: `common_origin` (Study::bench_common_args_origin) when `common` and
/// `extra` fail by themselves, else the scenario's Scenario::args_origin.
bench::RunOptions parse_scenario_bench_args(const std::vector<std::string>& common, const Scenario& sc,
                                            const std::vector<std::string>& extra,
                                            const std::string& common_origin = "");

}  // namespace servelab::tune
