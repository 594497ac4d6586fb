// TensorRT-LLM's multi-node launch (multinode.h; the module's node_launch hook). Sources:
//   TensorRT-LLM: docs/source/commands/trtllm-serve "multi-node" and examples/llm-api/llm_mgmn_*.sh:
//            `srun -N 2 --ntasks-per-node=8 --mpi=pmix ... trtllm-llmapi-launch trtllm-serve MODEL
//            --tp_size 16 ...` — one MPI world of tp*pp ranks; trtllm-llmapi-launch runs the server on rank 0
//            and MPI workers on the others. [recalled]
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engines/multinode_detail.h"
#include "engines/trtllm/trtllm_detail.h"

namespace servelab::engines::detail {
namespace {

using Argv = std::vector<std::string>;

NodeLaunch trtllm_mpi(const LaunchConfig& c, const MultiNodeRequest& r, const Argv& argv,
                      const std::map<std::string, std::string>& env) {
  NodeLaunch n;
  n.method = "trtllm-mpi";
  n.gpus = even_node_share(c, r, "TensorRT-LLM");
  if (r.node_rank != 0) return n;  // the MPI launcher on the head places this node's ranks
  const std::string world = std::to_string(c.gpus_used()), per_node = std::to_string(n.gpus);
  Argv launch;
  if (r.mpi_launcher == MpiLauncher::kSrun) {
    launch = {"srun", "--nodes=" + std::to_string(r.nodes), "--ntasks=" + world,
              "--ntasks-per-node=" + per_node, "--mpi=pmix"};
  } else {
    if (static_cast<int>(r.hosts.size()) != r.nodes)
      multinode_fail("mpirun needs one host per node: " + std::to_string(r.hosts.size()) + " hosts for " +
                     std::to_string(r.nodes) + " nodes");
    std::string hosts;
    for (const auto& h : r.hosts) {
      if (h.empty()) multinode_fail("mpirun: an empty host name in hosts");
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

NodeLaunch node_launch_trtllm(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                              const std::map<std::string, std::string>& env) {
  return trtllm_mpi(c, r, argv, env);
}

}  // namespace servelab::engines::detail
