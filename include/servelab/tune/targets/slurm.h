// servelab/tune: the Slurm target (`tune --target slurm`, docs/cluster.md). Each trial becomes one Slurm job:
// tune writes the trial's request (REQUEST.json: the study, the config, the scenarios) and a batch script
// into OUT/slurm/<trial>/, submits it with sbatch, and the job runs `servelab tune-trial REQUEST.json --out
// RESULT.json` under srun on its node: that is the local target's runner (engine under a supervisor, log
// capture, readiness, the engine's failure classes) on a port free on the node, then the scenarios. The
// submitting tune polls squeue, reads RESULT.json as each job ends and records it in SQLite at once; a job
// the scheduler ended (time limit, node failure, preemption, out of memory, cancellation) is classified by
// its Slurm state. Job ids are stored (table slurm_jobs) so that --resume waits for jobs still running
// instead of submitting them again. The output directory must be on a file system the nodes share.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "servelab/engines/multinode.h"
#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/preflight.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune {

/// One job as squeue (or sacct) reports it.
struct SlurmJobState {
  std::string state;   ///< Slurm's job state: "PENDING", "RUNNING", "COMPLETED", "TIMEOUT", ...
  std::string detail;  ///< the third column, to the line's end: squeue's reason (%r: "Resources", "None")
                       ///< or command (%o: the batch script's path)
};

/// True while the job may still run or run again: PENDING, CONFIGURING, RUNNING, COMPLETING, SUSPENDED,
/// REQUEUED, REQUEUE_FED, REQUEUE_HOLD, RESIZING, SIGNALING, STAGE_OUT, STOPPED, RESV_DEL_HOLD,
/// SPECIAL_EXIT (Slurm 22.05 `man squeue`, JOB STATE CODES). A state with a "+" suffix is read without it.
bool slurm_state_live(const std::string& state);

/// The trial status of a job the scheduler ended: TIMEOUT and DEADLINE → kJobTimeLimit, NODE_FAIL and
/// BOOT_FAIL → kJobNodeFail, PREEMPTED → kJobPreempted, OUT_OF_MEMORY → kJobOutOfMemory, CANCELLED →
/// kJobCancelled. nullopt for COMPLETED and FAILED (the trial's own RESULT.json decides) and live states.
std::optional<TrialStatus> slurm_state_failure(const std::string& state);

/// Parses `squeue -h -t all -o "%i|%T|%r"` (or "%i|%T|%o", or `sacct -n -P -X -o JobID,State,Reason`) lines
/// into job id → state. Array or step suffixes are kept in the id; blank lines are skipped.
std::map<std::string, SlurmJobState> parse_slurm_states(const std::string& text);

/// sbatch --time text for a limit in minutes, rounded up to whole seconds: "D-HH:MM:SS" (e.g. 90.5 →
/// "0-01:30:30"). Throws std::invalid_argument for a limit ≤ 0.
std::string slurm_time(double minutes);

/// Minutes of a Slurm time text ("30", "1:30:00", "2-00:00:00", "45:00" = 45 min), nullopt for "UNLIMITED",
/// "INFINITE" or "NONE" (no limit) — throws std::invalid_argument for text that is not a Slurm time.
std::optional<double> parse_slurm_minutes(const std::string& text);

/// `key=value` pairs of one `scontrol show partition -o` / `scontrol show job -o` line.
std::map<std::string, std::string> parse_scontrol_line(const std::string& line);

/// GPUs per node a GRES text declares for `gres_name` ("gpu:8", "gpu:h100:8(S:0-1)", "gpu:4,shard:8" → 8, 4;
/// the sum over types), 0 when absent. Source: sinfo's %G column.
int gres_count(const std::string& gres, const std::string& gres_name);

/// Paths of one trial's job, all under OUT/slurm/<trial dir>/.
struct SlurmJobFiles {
  std::filesystem::path dir;
  std::filesystem::path request;  ///< REQUEST.json (trial_request_json)
  std::filesystem::path result;   ///< RESULT.json, written by tune-trial when it ends
  std::filesystem::path script;   ///< job.sh, the batch script
  std::filesystem::path output;   ///< slurm-%j.out, the job's stdout+stderr
};
/// The files of `trial_key` under `slurm_dir` (absolute when `slurm_dir` is).
SlurmJobFiles slurm_job_files(const std::filesystem::path& slurm_dir, const std::string& trial_key);

/// What one trial's job asks Slurm for.
struct SlurmAllocation {
  int gpus =
      0;  ///< GPUs the trial asks for: its launch's (TP x PP x DP), or [slurm] gpus_per_trial when given
  int nodes = 1;          ///< ceil(gpus / [slurm] gpus_per_node)
  int gpus_per_node = 0;  ///< --gres count on each node: gpus on one node, else [slurm] gpus_per_node
};

/// The allocation of `request`: the GPUs its own launch uses (a study's layouts differ: tp8 on one node,
/// tp16 on two), or [slurm] gpus_per_trial when the study gives it, in whole nodes when it spans more than
/// one. Throws std::invalid_argument naming the trial's problem: a launch servelab cannot read, more GPUs
/// than the study's [hardware] gpu_count, a multi-node allocation that does not fill whole nodes, a
/// multi-node launch of an engine that runs as one MPI job (TensorRT-LLM: docs/cluster.md section 5).
SlurmAllocation slurm_allocation(const Study& study, const TrialRequest& request);

/// The batch script of one trial: `#SBATCH` lines from the [slurm] section (job name, partition,
/// account, qos, `alloc`'s nodes, one task per node, --gres=<gres_name>:<alloc's GPUs per node>, --time,
/// --output, --requeue or --no-requeue, extra sbatch_args), the setup lines, then `srun` running
/// `servelab tune-trial` on every node of the allocation (`--wait` ends the other nodes' tasks 30 s after
/// the head's). Words are single-quoted for the shell; an account, partition or QoS holding whitespace is
/// refused (std::invalid_argument), as is a path with spaces or quotes.
std::string slurm_batch_script(const Study& study, const SlurmJobFiles& files, const std::string& servelab,
                               const std::string& job_name, const SlurmAllocation& alloc);

/// REQUEST.json of one trial: the study text and what tune applied to it (prompts scale, target port),
/// the request (key, engine, knobs, scenarios with their arguments, repeat, engine log path).
std::string trial_request_json(const Study& study, const TrialRequest& request);
/// RESULT.json text of an outcome, and back. read_trial_outcome throws std::runtime_error naming the file
/// for a missing or malformed file.
std::string trial_outcome_json(const TrialOutcome& outcome);
TrialOutcome read_trial_outcome(const std::filesystem::path& path);

/// How the Slurm runner talks to the cluster. Tests replace the commands with fakes.
struct SlurmRunnerOptions {
  std::filesystem::path out_dir;     ///< the study's output directory (shared with the nodes)
  std::filesystem::path store_path;  ///< results.sqlite: the job ids (table slurm_jobs)
  std::string servelab;              ///< servelab on the nodes ("" = [slurm] servelab, else this binary)
  std::string sbatch = "sbatch", squeue = "squeue", scancel = "scancel", sacct = "sacct";
  const std::atomic<bool>* stop = nullptr;  ///< Ctrl-C: the study's jobs are cancelled (scancel)
  std::ostream* progress = nullptr;         ///< one line per submission, requeue and end
  double command_timeout_s = 60;            ///< for each sbatch/squeue/scancel call
};

/// The Slurm target's runner: submits up to [slurm] max_parallel jobs at once, polls squeue every
/// poll_interval_s, reports each trial as its job ends (RESULT.json for a job that completed, the Slurm
/// state's class otherwise, the job output's last lines as log tail). A trial whose job id is stored
/// from an earlier tune (--resume) is not submitted again: a live job is waited for, an ended one is read.
/// On stop it cancels every job it waits for (one scancel), forgets their ids and reports them
/// kInterrupted. Throws StudyAbort when sbatch refuses a job (bad partition, account, GRES: no trial
/// could run) or the cluster does not answer.
BatchTrialRunner make_slurm_runner(const Study& study, SlurmRunnerOptions options);

/// Where the Slurm pre-flight asks. Tests replace the commands with fakes.
struct SlurmPreflightOptions {
  std::string sinfo = "sinfo", scontrol = "scontrol";
  double command_timeout_s = 60;
};

/// Pre-flight of target slurm, from the submitting host: the partition exists and is UP (`scontrol show
/// partition -o`; the cluster's default when [slurm] partition is ""), its MaxTime admits time_limit_min and
/// its MaxNodes the trial's nodes; enough nodes of it declare the GRES a trial asks for (`sinfo -N -o
/// %N|%G`: <gres_name>:<GPUs per node> on ceil(gpus_per_trial / gpus_per_node) nodes); a warning when the
/// time limit is shorter than an engine's start-up budget (ready_timeout_s). Never throws for a failed check.
PreflightReport run_slurm_preflight(const Study& study, const SlurmPreflightOptions& options);

namespace detail {
/// What a command printed and how it ended.
struct CommandResult {
  int exit_code = -1;  ///< -1: could not run, or killed at the timeout
  std::string out, err;
};
/// Runs argv (argv[0] looked up on PATH), stdin /dev/null, capturing stdout and stderr; killed (its
/// process group) after `timeout_s`.
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s);
}  // namespace detail

/// Where this task of a trial's allocation is (from SLURM_JOB_NUM_NODES, SLURM_NODEID, SLURM_JOB_ID, and
/// the first host of `scontrol show hostnames $SLURM_JOB_NODELIST` as the head when nodes > 1).
struct SlurmNodeContext {
  int nodes = 1;
  int node_rank = 0;  ///< 0 = the head: it serves HTTP and runs the scenarios
  std::string head;   ///< head node's host name ("" on one node)
  std::string job_id = "0";
  /// Reads the Slurm environment; throws std::runtime_error when the head cannot be named.
  static SlurmNodeContext from_environment();
};

/// The rendezvous port of a multi-node trial on its head (SGLang --dist-init-addr, vLLM DP RPC, Ray GCS):
/// 20000 + job id mod 20000, the same on every node without talking.
int slurm_rendezvous_port(const std::string& job_id);

/// This node's part of a trial's launch (`argv`/`env` as rendered for one node, parallel sizes the totals):
/// engines::render_node_launch with [slurm] gpus_per_node and the head from `node`. Throws
/// std::invalid_argument for a launch the engine cannot spread over these nodes, and for multi-node
/// TensorRT-LLM (its MPI job would have to own the allocation's tasks; not launched by target slurm).
engines::NodeLaunch slurm_node_launch(const Study& study, const std::string& engine,
                                      const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& env,
                                      const SlurmNodeContext& node);

/// A worker node (rank > 0) of a multi-node trial: its setup commands, then its engine process under a
/// supervisor (output to `log`) until the engine ends, `stop` is set (Slurm's SIGTERM), or the head's
/// RESULT.json (`head_result`) appears; then its teardown commands. Ray workers first wait (up to 10 min)
/// for the head's port. Returns 0; throws std::runtime_error when a setup command fails.
int run_worker_node(const engines::NodeLaunch& launch, const std::filesystem::path& log,
                    const std::filesystem::path& head_result, const SlurmNodeContext& node, double grace_s,
                    const std::atomic<bool>* stop);

/// `servelab tune-trial`: runs the trial of REQUEST.json on this node with the local target's runner and
/// writes RESULT.json (also for engine failures). On a multi-node allocation only the head (SLURM_NODEID
/// 0) runs the trial. Returns 0 when RESULT.json was written. Throws std::runtime_error for an unreadable
/// request.
int run_trial_file(const std::filesystem::path& request, const std::filesystem::path& result,
                   const std::atomic<bool>* stop);

}  // namespace servelab::tune
