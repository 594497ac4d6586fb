// The runner of a target (targets.h): the twin, or one local runner per engine on bench's library.
#include "servelab/tune/targets/targets.h"

#include <map>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "tune/targets/local_runner.h"
#include "tune/targets/twin_runner.h"

namespace servelab::tune {

TrialRunner default_runner(const Study& study, Target target, const std::atomic<bool>* stop) {
  if (target == Target::kTwin) {
    return make_twin_runner(study);
  }
  if (target == Target::kSlurm)
    throw std::runtime_error(
        "the slurm target's runner submits into the study's output directory: run_study "
        "makes it (make_slurm_runner)");
  ScenarioFn fn = bench_scenario_fn(study);
  LocalRunnerOptions opt;
  opt.host = study.host;
  opt.port = study.port;
  opt.run_scenario = std::move(fn);
  opt.warmup_args = study.warmup_args;
  opt.stop = stop;
  // Per-engine readiness settings: one runner per engine, chosen per trial.
  std::map<std::string, TrialRunner> per_engine;
  for (const auto& e : study.engines) {
    LocalRunnerOptions o = opt;
    o.ready_paths = e.ready_paths;
    o.ready_timeout_s = e.ready_timeout_s;
    o.stop_grace_s = e.stop_grace_s;
    // Prefix-cache reset between scenarios where the engine offers one (vLLM needs VLLM_SERVER_DEV_MODE=1
    // for it; without it the POST gets 404 and nothing changes).
    o.reset_cache_path = engines::engine_module(e.kind).prefix_cache_reset_path;
    o.gpu_memory_used_mib = nvidia_smi_memory_used_mib;
    per_engine[e.name] = make_local_runner(o);
  }
  return [per_engine](const TrialRequest& req) { return per_engine.at(req.engine)(req); };
}

std::string runner_data_note(const Study& study, Target target) {
  if (target == Target::kTwin) return twin_data_note(study);
  return "scenarios as given to bench serve (data directory " + common::data_dir().string() + ")";
}

}  // namespace servelab::tune
