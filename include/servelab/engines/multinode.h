// servelab/engines: multi-node launch rendering — turns the single-node launch of a trial (argv/env as tune
// renders it) into what each node of a multi-node allocation runs, the way each engine launches across
// nodes. A pure function: the caller (tune's Slurm batch scripts, the Kubernetes renderer) supplies the
// allocation (node count, GPUs per node, this node's rank, the head node's address and a port).
//
// Per engine (sources cited per method in src/engines/<engine>/<engine>_multinode.cc):
//   SGLang:       every node runs the same server with `--nnodes N --node-rank R --dist-init-addr HEAD:PORT`
//                 (TP/PP/DP sizes are the totals over all nodes); only rank 0 serves HTTP.
//   vLLM DP:      data-parallel ranks spread over nodes (each replica's TP*PP fits in one node):
//                 `--data-parallel-size-local K --data-parallel-address HEAD --data-parallel-rpc-port PORT`
//                 on every node, `--data-parallel-start-rank S --headless` on the others; the head serves.
//   vLLM Ray:     TP*PP larger than one node: a Ray cluster (head `ray start --head --port PORT`, workers
//                 `ray start --address HEAD:PORT --block`), the server on the head with
//                 `--distributed-executor-backend ray`.
//   TensorRT-LLM: one MPI job of all ranks, `trtllm-llmapi-launch` wrapping `trtllm-serve`, started once
//                 from the head: `srun --mpi=pmix` inside a Slurm allocation, or `mpirun -H` over named
//                 hosts; the other nodes start nothing themselves (the MPI launcher places their ranks).
//
// Thread-safety: pure; call from any thread.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "servelab/engines/engine_config.h"

namespace servelab::engines {

/// The method of a launch on one node: the launch unchanged (NodeLaunch::method).
inline constexpr const char* kSingleNodeMethod = "single-node";

/// How TensorRT-LLM's MPI job is started (vLLM and SGLang ignore it: each node starts its own process).
enum class MpiLauncher {
  kSrun,    ///< `srun --mpi=pmix` inside the Slurm allocation (the job's nodes)
  kMpirun,  ///< Open MPI `mpirun -H host:slots,...` over MultiNodeRequest::hosts
};

/// One trial's launch on a multi-node allocation. `argv`/`env` are the single-node launch exactly as tune
/// renders it (to_argv/to_env of the trial's LaunchConfig): parallel sizes are the totals over all nodes
/// (e.g. SGLang `--tp 16` on 2 x 8 GPUs) and must not already hold multi-node flags.
struct MultiNodeRequest {
  EngineKind kind = EngineKind::kVllm;
  std::string engine_version;                     ///< "" = the engine module's default release
  std::vector<std::string> argv;                  ///< single-node launch (argv[0] = program)
  std::map<std::string, std::string> env;         ///< its environment
  int nodes = 1;                                  ///< nodes of the allocation (>= 1)
  int gpus_per_node = 8;                          ///< GPUs on each node (>= 1)
  int node_rank = 0;                              ///< this node, 0 = head (0 .. nodes-1)
  std::string head_address;                       ///< head node's host name or IP, reachable from every node
  int port = 29500;                               ///< rendezvous port on the head: SGLang dist-init, vLLM DP
                                                  ///< RPC, Ray GCS (TensorRT-LLM's MPI job needs none)
  MpiLauncher mpi_launcher = MpiLauncher::kSrun;  ///< TensorRT-LLM only
  std::vector<std::string> hosts;  ///< TensorRT-LLM with kMpirun: every node's host, rank order
};

/// What one node runs. Sequence: `setup` commands to completion, then `argv` (long-running; empty when
/// the node starts nothing itself), then `teardown` commands once `argv` has ended or been stopped.
struct NodeLaunch {
  /// How the engine is spread over the nodes, named by its module's node_launch (one per mechanism above):
  /// "sglang-nnodes", "vllm-data-parallel", "vllm-ray", "trtllm-mpi"; kSingleNodeMethod on one node.
  std::string method = kSingleNodeMethod;
  std::vector<std::vector<std::string>> setup;     ///< e.g. Ray head `ray start --head --port 6379`
  std::vector<std::string> argv;                   ///< the node's long-running process ({} = none)
  std::map<std::string, std::string> env;          ///< environment of setup, argv and teardown
  std::vector<std::vector<std::string>> teardown;  ///< e.g. `ray stop`
  bool serves_http = false;                        ///< this node's process answers the OpenAI API
  /// Start this node only after the head's `setup` has finished (Ray workers join a running head).
  bool after_head_setup = false;
  int gpus = 0;  ///< GPUs of this node the engine uses
};

/// Renders node `request.node_rank`'s part of the multi-node launch (see the file comment for each
/// engine's method). The argv is parsed with parse_launch_command (so a flag the release lacks fails as the
/// engine would, EngineArgError) to read TP/PP/DP and the world size (LaunchConfig::gpus_used()).
/// Throws std::invalid_argument naming the problem when: nodes, gpus_per_node or node_rank are out of
/// range; head_address is empty or port outside 1..65535 (when the method uses them); the launch needs
/// more GPUs than the nodes hold, or leaves a whole node idle (gpus_used <= (nodes-1) * gpus_per_node);
/// the GPUs do not split evenly over the nodes (SGLang, TensorRT-LLM); a vLLM replica (TP*PP) neither
/// fits in one node nor is the whole launch (DP > 1 with TP*PP across nodes); the argv already holds
/// multi-node flags (--nnodes, --node-rank, --dist-init-addr, --data-parallel-address, ...,
/// --distributed-executor-backend, --headless); kMpirun without one host per node.
NodeLaunch render_node_launch(const MultiNodeRequest& request);

/// Nodes a launch of `gpus` GPUs takes on nodes of `gpus_per_node` GPUs (ceil). Throws
/// std::invalid_argument when either is < 1.
int nodes_for_gpus(int gpus, int gpus_per_node);

}  // namespace servelab::engines
