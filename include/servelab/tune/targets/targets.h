// servelab/tune: the targets a trial runs on, behind one interface (runner.h's TrialRunner): the engine
// twin in-process (twin_runner), real engines on this machine (local_runner, bench's library), Slurm jobs
// (slurm.h) and Kubernetes manifests (k8s.h). This header is the room's door: the runner of a target.
#pragma once

#include <atomic>
#include <string>

#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// The runner for a target built into this binary: the twin (sim::predict in-process) or real engines
/// (bench's library). Throws std::runtime_error naming what is missing from this build.
TrialRunner default_runner(const Study& study, Target target, const std::atomic<bool>* stop);

/// One line per data source the target's runner uses (for the report's "which data" line).
std::string runner_data_note(const Study& study, Target target);

}  // namespace servelab::tune
