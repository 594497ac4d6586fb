// vLLM's multi-node launch (multinode.h; the module's node_launch hook). Sources:
//   vLLM DP: docs/serving/data_parallel_deployment.md (vLLM >= 0.9): node 0 `vllm serve $MODEL
//            --data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 10.99.48.128
//            --data-parallel-rpc-port 13345`, node 1 the same plus `--headless --data-parallel-start-rank 2`.
//            [recalled; the flags are in vllm/vllm.cc for every modelled release]
//   vLLM Ray: docs/serving/distributed_serving.md and examples/online_serving/run_cluster.sh: `ray start
//            --head --port=6379` on the head, `ray start --address=HEAD:6379 --block` on workers, then
//            `vllm serve ... --tensor-parallel-size 8 --pipeline-parallel-size 2
//            --distributed-executor-backend ray` on the head; vllm/executor/ray_utils.py waits for the
//            placement group (PG_WAIT_TIMEOUT 1800 s) while workers join. [recalled]
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engines/multinode_detail.h"
#include "engines/vllm/vllm_detail.h"

namespace servelab::engines::detail {
namespace {

using Argv = std::vector<std::string>;

NodeLaunch vllm_data_parallel(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv, int replica) {
  const int per_node = r.gpus_per_node / replica;  // DP ranks one node holds
  const int start = r.node_rank * per_node;
  const int local = std::min(per_node, c.dp - start);
  NodeLaunch n;
  n.method = "vllm-data-parallel";
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
  n.method = "vllm-ray";
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

NodeLaunch vllm_nodes(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv) {
  refuse_multinode_flags(c, {"--data-parallel-size-local", "--data-parallel-start-rank",
                             "--data-parallel-rank", "--data-parallel-address", "--data-parallel-rpc-port",
                             "--distributed-executor-backend", "--headless"});
  check_multinode_rendezvous(r);
  const int replica = c.tp * c.pp;  // GPUs of one DP rank
  if (replica <= r.gpus_per_node) {
    if (r.gpus_per_node % replica != 0)
      multinode_fail("vLLM data parallel over nodes: a replica of TP*PP = " + std::to_string(replica) +
                     " GPUs does not divide the " + std::to_string(r.gpus_per_node) + " GPUs per node");
    const int per_node = r.gpus_per_node / replica;
    if (c.dp <= (r.nodes - 1) * per_node)
      multinode_fail("vLLM data parallel: " + std::to_string(c.dp) + " DP ranks of " +
                     std::to_string(replica) + " GPUs fit in fewer than " + std::to_string(r.nodes) +
                     " nodes");
    return vllm_data_parallel(c, r, std::move(argv), replica);
  }
  if (c.dp > 1)
    multinode_fail("vLLM: DP " + std::to_string(c.dp) + " with TP*PP = " + std::to_string(replica) +
                   " GPUs spanning nodes (more than " + std::to_string(r.gpus_per_node) +
                   " per node) is not rendered: use DP ranks that fit in one node, or DP 1 over Ray");
  return vllm_ray(c, r, std::move(argv));
}

}  // namespace

NodeLaunch node_launch_vllm(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                            const std::map<std::string, std::string>& /*env*/) {
  return vllm_nodes(c, r, std::move(argv));
}

}  // namespace servelab::engines::detail
