// SGLang's multi-node launch (multinode.h; the module's node_launch hook). Sources:
//   SGLang:  docs.sglang.ai "Multi-Node Deployment" / references/multi_node.md: the same launch_server on
//            every node with --tp 16 --dist-init-addr HEAD:20000 --nnodes 2 --node-rank R; python/sglang/
//            srt/entrypoints/engine.py _launch_subprocesses: "if server_args.node_rank >= 1: ... non-zero
//            rank nodes do not need to run tokenizer or detokenizer" (no HTTP server there). [src: docs;
//            engine.py recalled]
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engines/multinode_detail.h"
#include "engines/sglang/sglang_detail.h"

namespace servelab::engines::detail {
namespace {

using Argv = std::vector<std::string>;

NodeLaunch sglang_nnodes(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv) {
  refuse_multinode_flags(c, {"--nnodes", "--node-rank", "--dist-init-addr"});
  check_multinode_rendezvous(r);
  NodeLaunch n;
  n.method = "sglang-nnodes";
  n.gpus = even_node_share(c, r, "SGLang");
  argv.insert(argv.end(), {"--nnodes", std::to_string(r.nodes), "--node-rank", std::to_string(r.node_rank),
                           "--dist-init-addr", r.head_address + ":" + std::to_string(r.port)});
  n.argv = std::move(argv);
  n.serves_http = r.node_rank == 0;
  return n;
}

}  // namespace

NodeLaunch node_launch_sglang(const LaunchConfig& c, const MultiNodeRequest& r, Argv argv,
                              const std::map<std::string, std::string>& /*env*/) {
  return sglang_nnodes(c, r, std::move(argv));
}

}  // namespace servelab::engines::detail
