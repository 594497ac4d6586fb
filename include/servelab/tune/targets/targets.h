// servelab/tune: the targets a trial runs on, behind one interface (runner.h's TrialRunner): the engine
// twin in-process (twin_runner), real engines on this machine (local_runner, bench's library), Slurm jobs
// (slurm.h) and Kubernetes manifests (k8s.h). This header is the room's door: the runner of a target.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// The runner for a target built into this binary: the twin (sim::predict in-process) or real engines
/// (bench's library). Throws std::runtime_error naming what is missing from this build.
TrialRunner default_runner(const Study& study, Target target, const std::atomic<bool>* stop);

/// One line per data source the target's runner uses (for the report's "which data" line).
std::string runner_data_note(const Study& study, Target target);

/// An engine of a study whose named release cannot load the study's model.
struct ModelRefusal {
  std::string engine;   ///< the study's engine name
  std::string message;  ///< the refusal, as the twin gives it ("TensorRT-LLM 1.2.0rc5 predates ...")
};

/// The engines of `study` whose named release (EngineSpec::version) predates the model's architecture (the
/// engine module's architecture bound: engines::resolve_launch's "<engine>.architecture.release" refusal of
/// the baseline command): no configuration of them can start, whatever its knobs. Only what can be checked
/// here: an engine without a named release (the twin then takes one that can), or with check_flags = false,
/// is not checked, nor is any when the model's config.json cannot be resolved (on target twin as the twin
/// resolves it, the Hub included; elsewhere from this machine only) or the GPU is not in the twin's table.
/// Never throws for those; the first trial then says it. The bound is the twin's table (partly recalled):
/// tune stops a twin study on it, and only warns for a study on real engines.
std::vector<ModelRefusal> model_refusals(const Study& study);

}  // namespace servelab::tune
