// `servelab tune-trial REQUEST.json --out RESULT.json` (hidden): one trial of a `tune --target slurm` study,
// run by its Slurm job on the node (docs/cluster.md). The engine runs under the local target's runner on a
// port free on the node; RESULT.json is written for every outcome, engine failures included.
#include <atomic>
#include <csignal>
#include <cstdio>

#include "cli/command_registry.h"
#include "servelab/common/redact.h"
#include "servelab/tune/targets/slurm.h"

namespace {

std::atomic<bool> g_trial_stop{false};

// Slurm ends a job step with SIGTERM (time limit, scancel) and SIGKILL KillWait seconds later: the first
// signal stops the engine with its grace period; the engine's supervisor stops it if we are killed.
extern "C" void on_trial_signal(int) {
  g_trial_stop.store(true);
}

struct TrialArgs {
  std::string request, out;
};

}  // namespace

SERVELAB_REGISTER_COMMAND("tune-trial", 41, [](CLI::App& root) {
  auto args = std::make_shared<TrialArgs>();
  CLI::App* cmd = root.add_subcommand("tune-trial",
                                      "Run one trial of a Slurm study on this node (used by the "
                                      "batch scripts of `tune --target slurm`)");
  cmd->group("");  // hidden: not for people
  cmd->add_option("request", args->request, "the trial's REQUEST.json")->required()->check(CLI::ExistingFile);
  cmd->add_option("--out", args->out, "where RESULT.json goes")->required();
  cmd->callback([args] {
    std::signal(SIGTERM, on_trial_signal);
    std::signal(SIGINT, on_trial_signal);
    try {
      const int rc = servelab::tune::run_trial_file(args->request, args->out, &g_trial_stop);
      if (rc != 0) throw servelab::cli::ExitRequest{rc};
    } catch (const std::exception& e) {  // a worker node's failure (the head writes every outcome)
      std::fprintf(stderr, "servelab tune-trial: %s\n", servelab::common::redact_text(e.what()).c_str());
      throw servelab::cli::ExitRequest{2};
    }
  });
});
