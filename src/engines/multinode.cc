// Multi-node launch rendering per engine (see multinode.h). Sources per method:
//   SGLang:  docs.sglang.ai "Multi-Node Deployment" / references/multi_node.md: the same launch_server on
//            every node with --tp 16 --dist-init-addr HEAD:20000 --nnodes 2 --node-rank R; python/sglang/
//            srt/entrypoints/engine.py _launch_subprocesses: "if server_args.node_rank >= 1: ... non-zero
//            rank nodes do not need to run tokenizer or detokenizer" (no HTTP server there). [src: docs;
//            engine.py recalled]
//   vLLM DP: docs/serving/data_parallel_deployment.md (vLLM >= 0.9): node 0 `vllm serve $MODEL
//            --data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 10.99.48.128
//            --data-parallel-rpc-port 13345`, node 1 the same plus `--headless --data-parallel-start-rank 2`.
//            [recalled; the flags are in src/engines/vllm.cc for every modelled release]
//   vLLM Ray: docs/serving/distributed_serving.md and examples/online_serving/run_cluster.sh: `ray start
//            --head --port=6379` on the head, `ray start --address=HEAD:6379 --block` on workers, then
//            `vllm serve ... --tensor-parallel-size 8 --pipeline-parallel-size 2
//            --distributed-executor-backend ray` on the head; vllm/executor/ray_utils.py waits for the
//            placement group (PG_WAIT_TIMEOUT 1800 s) while workers join. [recalled]
//   TensorRT-LLM: docs/source/commands/trtllm-serve "multi-node" and examples/llm-api/llm_mgmn_*.sh:
//            `srun -N 2 --ntasks-per-node=8 --mpi=pmix ... trtllm-llmapi-launch trtllm-serve MODEL
//            --tp_size 16 ...` — one MPI world of tp*pp ranks; trtllm-llmapi-launch runs the server on rank 0
//            and MPI workers on the others. [recalled]
#include "servelab/engines/multinode.h"

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <string>

#include "engines/engine_hooks.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {

const char* multinode_method_name(MultiNodeMethod method) {
  switch (method) {
    case MultiNodeMethod::kSingleNode:
      return "single-node";
    case MultiNodeMethod::kSglangNnodes:
      return "sglang-nnodes";
    case MultiNodeMethod::kVllmDataParallel:
      return "vllm-data-parallel";
    case MultiNodeMethod::kVllmRay:
      return "vllm-ray";
    case MultiNodeMethod::kTrtllmMpi:
      return "trtllm-mpi";
  }
  return "?";
}

int nodes_for_gpus(int gpus, int gpus_per_node) {
  if (gpus < 1 || gpus_per_node < 1)
    throw std::invalid_argument("nodes_for_gpus: gpus (" + std::to_string(gpus) + ") and gpus_per_node (" +
                                std::to_string(gpus_per_node) + ") must be >= 1");
  return (gpus + gpus_per_node - 1) / gpus_per_node;
}

namespace {

using Argv = std::vector<std::string>;

[[noreturn]] void fail(const std::string& what) {
  throw std::invalid_argument("multi-node launch: " + what);
}

/// The request's argv without leading `env` / NAME=value words, and the environment with those words
/// applied (as parse_launch_command reads them).
void split_env_words(const MultiNodeRequest& r, Argv& argv, std::map<std::string, std::string>& env) {
  static const std::regex kAssignment("[A-Za-z_][A-Za-z0-9_]*=.*");
  env = r.env;
  std::size_t i = 0;
  if (i < r.argv.size() && r.argv[i] == "env") ++i;
  for (; i < r.argv.size() && std::regex_match(r.argv[i], kAssignment); ++i) {
    auto eq = r.argv[i].find('=');
    env[r.argv[i].substr(0, eq)] = r.argv[i].substr(eq + 1);
  }
  argv.assign(r.argv.begin() + static_cast<std::ptrdiff_t>(i), r.argv.end());
}

void refuse_flags(const LaunchConfig& c, const std::vector<const char*>& flags) {
  for (const char* f : flags)
    if (c.is_explicit(f))
      fail(std::string("the single-node command already has ") + f +
           "; the multi-node flags are rendered from the allocation, leave them out");
}

void check_rendezvous(const MultiNodeRequest& r) {
  if (r.head_address.empty()) fail("head_address is empty (the head node's host name or IP)");
  if (r.port < 1 || r.port > 65535) fail("port " + std::to_string(r.port) + " is outside 1..65535");
}

/// GPUs per node when the world splits evenly over the nodes.
int even_share(const LaunchConfig& c, const MultiNodeRequest& r, const char* engine) {
  const int world = c.gpus_used();
  if (world % r.nodes != 0)
    fail(std::string(engine) + " spreads its " + std::to_string(world) + " GPUs evenly over the nodes: " +
         std::to_string(world) + " is not a multiple of " + std::to_string(r.nodes) + " nodes");
  return world / r.nodes;
}

NodeLaunch sglang(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv) {
  refuse_flags(c, {"--nnodes", "--node-rank", "--dist-init-addr"});
  check_rendezvous(r);
  NodeLaunch n;
  n.method = MultiNodeMethod::kSglangNnodes;
  n.gpus = even_share(c, r, "SGLang");
  argv.insert(argv.end(), {"--nnodes", std::to_string(r.nodes), "--node-rank", std::to_string(r.node_rank),
                           "--dist-init-addr", r.head_address + ":" + std::to_string(r.port)});
  n.argv = std::move(argv);
  n.serves_http = r.node_rank == 0;
  return n;
}

NodeLaunch vllm_data_parallel(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv, int replica) {
  const int per_node = r.gpus_per_node / replica;  // DP ranks one node holds
  const int start = r.node_rank * per_node;
  const int local = std::min(per_node, c.dp - start);
  NodeLaunch n;
  n.method = MultiNodeMethod::kVllmDataParallel;
  n.gpus = local * replica;
  argv.insert(argv.end(), {"--data-parallel-size-local", std::to_string(local), "--data-parallel-address",
                           r.head_address, "--data-parallel-rpc-port", std::to_string(r.port)});
  if (r.node_rank > 0)
    argv.insert(argv.end(), {"--data-parallel-start-rank", std::to_string(start), "--headless"});
  n.argv = std::move(argv);
  n.serves_http = r.node_rank == 0;
  return n;
}

NodeLaunch vllm_ray(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv) {
  const int world = c.gpus_used();
  NodeLaunch n;
  n.method = MultiNodeMethod::kVllmRay;
  n.gpus = std::min(r.gpus_per_node, world - r.node_rank * r.gpus_per_node);
  const std::string port = std::to_string(r.port);
  n.teardown = {{"ray", "stop"}};
  if (r.node_rank == 0) {
    n.setup = {{"ray", "start", "--head", "--port=" + port, "--num-gpus=" + std::to_string(n.gpus)}};
    argv.insert(argv.end(), {"--distributed-executor-backend", "ray"});
    n.argv = std::move(argv);
    n.serves_http = true;
  } else {
    n.argv = {"ray", "start", "--address=" + r.head_address + ":" + port,
              "--num-gpus=" + std::to_string(n.gpus), "--block"};
    n.after_head_setup = true;
  }
  return n;
}

NodeLaunch vllm(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv) {
  refuse_flags(c, {"--data-parallel-size-local", "--data-parallel-start-rank", "--data-parallel-rank",
                   "--data-parallel-address", "--data-parallel-rpc-port", "--distributed-executor-backend",
                   "--headless"});
  check_rendezvous(r);
  const int replica = c.tp * c.pp;  // GPUs of one DP rank
  if (replica <= r.gpus_per_node) {
    if (r.gpus_per_node % replica != 0)
      fail("vLLM data parallel over nodes: a replica of TP*PP = " + std::to_string(replica) +
           " GPUs does not divide the " + std::to_string(r.gpus_per_node) + " GPUs per node");
    const int per_node = r.gpus_per_node / replica;
    if (c.dp <= (r.nodes - 1) * per_node)
      fail("vLLM data parallel: " + std::to_string(c.dp) + " DP ranks of " + std::to_string(replica) +
           " GPUs fit in fewer than " + std::to_string(r.nodes) + " nodes");
    return vllm_data_parallel(c, r, std::move(argv), replica);
  }
  if (c.dp > 1)
    fail("vLLM: DP " + std::to_string(c.dp) + " with TP*PP = " + std::to_string(replica) +
         " GPUs spanning nodes (more than " + std::to_string(r.gpus_per_node) +
         " per node) is not rendered: use DP ranks that fit in one node, or DP 1 over Ray");
  return vllm_ray(c, r, std::move(argv));
}

NodeLaunch trtllm(const LaunchConfig& c, const MultiNodeRequest& r, const Argv& argv,
                  const std::map<std::string, std::string>& env) {
  NodeLaunch n;
  n.method = MultiNodeMethod::kTrtllmMpi;
  n.gpus = even_share(c, r, "TensorRT-LLM");
  if (r.node_rank != 0) return n;  // the MPI launcher on the head places this node's ranks
  const std::string world = std::to_string(c.gpus_used()), per_node = std::to_string(n.gpus);
  Argv launch;
  if (r.mpi_launcher == MpiLauncher::kSrun) {
    launch = {"srun", "--nodes=" + std::to_string(r.nodes), "--ntasks=" + world,
              "--ntasks-per-node=" + per_node, "--mpi=pmix"};
  } else {
    if (static_cast<int>(r.hosts.size()) != r.nodes)
      fail("mpirun needs one host per node: " + std::to_string(r.hosts.size()) + " hosts for " +
           std::to_string(r.nodes) + " nodes");
    std::string hosts;
    for (const auto& h : r.hosts) {
      if (h.empty()) fail("mpirun: an empty host name in hosts");
      hosts += (hosts.empty() ? "" : ",") + h + ":" + per_node;
    }
    launch = {"mpirun", "-np", world, "-H", hosts, "--bind-to", "none"};
    for (const auto& kv : env) launch.insert(launch.end(), {"-x", kv.first});  // forwarded to remote ranks
  }
  launch.push_back("trtllm-llmapi-launch");
  launch.insert(launch.end(), argv.begin(), argv.end());
  n.argv = std::move(launch);
  n.serves_http = true;
  return n;
}

}  // namespace

namespace detail {

NodeLaunch node_launch_sglang(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                              const std::map<std::string, std::string>& /*env*/) {
  return sglang(c, r, std::move(argv));
}

NodeLaunch node_launch_vllm(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                            const std::map<std::string, std::string>& /*env*/) {
  return vllm(c, r, std::move(argv));
}

NodeLaunch node_launch_trtllm(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                              const std::map<std::string, std::string>& env) {
  return trtllm(c, r, argv, env);
}

}  // namespace detail

NodeLaunch render_node_launch(const MultiNodeRequest& r) {
  if (r.nodes < 1) fail("nodes " + std::to_string(r.nodes) + " must be >= 1");
  if (r.gpus_per_node < 1) fail("gpus_per_node " + std::to_string(r.gpus_per_node) + " must be >= 1");
  if (r.node_rank < 0 || r.node_rank >= r.nodes)
    fail("node_rank " + std::to_string(r.node_rank) + " is outside 0.." + std::to_string(r.nodes - 1));
  Argv argv;
  std::map<std::string, std::string> env;
  split_env_words(r, argv, env);
  const LaunchConfig c = parse_launch_command(argv, env, r.engine_version);
  if (c.kind != r.kind)
    fail(std::string("the command launches ") + engine_kind_name(c.kind) + ", the request says " +
         engine_kind_name(r.kind));
  const int world = c.gpus_used();
  if (world > r.nodes * r.gpus_per_node)
    fail("the launch uses " + std::to_string(world) + " GPUs; " + std::to_string(r.nodes) + " nodes x " +
         std::to_string(r.gpus_per_node) + " GPUs hold " + std::to_string(r.nodes * r.gpus_per_node));
  if (r.nodes > 1 && world <= (r.nodes - 1) * r.gpus_per_node)
    fail("the launch uses " + std::to_string(world) + " GPUs, which fit in " +
         std::to_string(nodes_for_gpus(world, r.gpus_per_node)) + " node(s) of " +
         std::to_string(r.gpus_per_node) + "; " + std::to_string(r.nodes) + " nodes would leave one idle");
  NodeLaunch n;
  if (r.nodes == 1) {
    n.argv = argv;
    n.serves_http = true;
    n.gpus = world;
  } else {
    n = engine_module(c.kind).node_launch(c, r, argv, env);
  }
  n.env = std::move(env);
  return n;
}

}  // namespace servelab::engines
