// Multi-node launches (multinode.h): the request's checks, the engine-neutral parts and the helpers each
// engine's node_launch hook shares (multinode_detail.h). Each engine renders its own node launch in its
// folder (vllm/vllm_multinode.cc, sglang/sglang_multinode.cc, trtllm/trtllm_multinode.cc), with its sources.
#include "servelab/engines/multinode.h"

#include <algorithm>
#include <regex>
#include <stdexcept>
#include <string>

#include "engines/multinode_detail.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {

int nodes_for_gpus(int gpus, int gpus_per_node) {
  if (gpus < 1 || gpus_per_node < 1)
    throw std::invalid_argument("nodes_for_gpus: gpus (" + std::to_string(gpus) + ") and gpus_per_node (" +
                                std::to_string(gpus_per_node) + ") must be >= 1");
  return (gpus + gpus_per_node - 1) / gpus_per_node;
}

namespace {

using Argv = std::vector<std::string>;

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

}  // namespace

namespace detail {

[[noreturn]] void multinode_fail(const std::string& what) {
  throw std::invalid_argument("multi-node launch: " + what);
}

void refuse_multinode_flags(const LaunchConfig& c, const std::vector<const char*>& flags) {
  for (const char* f : flags)
    if (c.is_explicit(f))
      multinode_fail(std::string("the single-node command already has ") + f +
                     "; the multi-node flags are rendered from the allocation, leave them out");
}

void check_multinode_rendezvous(const MultiNodeRequest& r) {
  if (r.head_address.empty()) multinode_fail("head_address is empty (the head node's host name or IP)");
  if (r.port < 1 || r.port > 65535) multinode_fail("port " + std::to_string(r.port) + " is outside 1..65535");
}

/// GPUs per node when the world splits evenly over the nodes.
int even_node_share(const LaunchConfig& c, const MultiNodeRequest& r, const char* engine) {
  const int world = c.gpus_used();
  if (world % r.nodes != 0)
    multinode_fail(std::string(engine) + " spreads its " + std::to_string(world) +
                   " GPUs evenly over the nodes: " + std::to_string(world) + " is not a multiple of " +
                   std::to_string(r.nodes) + " nodes");
  return world / r.nodes;
}

}  // namespace detail

NodeLaunch render_node_launch(const MultiNodeRequest& r) {
  if (r.nodes < 1) detail::multinode_fail("nodes " + std::to_string(r.nodes) + " must be >= 1");
  if (r.gpus_per_node < 1)
    detail::multinode_fail("gpus_per_node " + std::to_string(r.gpus_per_node) + " must be >= 1");
  if (r.node_rank < 0 || r.node_rank >= r.nodes)
    detail::multinode_fail("node_rank " + std::to_string(r.node_rank) + " is outside 0.." +
                           std::to_string(r.nodes - 1));
  Argv argv;
  std::map<std::string, std::string> env;
  split_env_words(r, argv, env);
  const LaunchConfig c = parse_launch_command(argv, env, r.engine_version);
  if (c.kind != r.kind)
    detail::multinode_fail(std::string("the command launches ") + engine_kind_name(c.kind) +
                           ", the request says " + engine_kind_name(r.kind));
  const int world = c.gpus_used();
  if (world > r.nodes * r.gpus_per_node)
    detail::multinode_fail("the launch uses " + std::to_string(world) + " GPUs; " + std::to_string(r.nodes) +
                           " nodes x " + std::to_string(r.gpus_per_node) + " GPUs hold " +
                           std::to_string(r.nodes * r.gpus_per_node));
  if (r.nodes > 1 && world <= (r.nodes - 1) * r.gpus_per_node)
    detail::multinode_fail("the launch uses " + std::to_string(world) + " GPUs, which fit in " +
                           std::to_string(nodes_for_gpus(world, r.gpus_per_node)) + " node(s) of " +
                           std::to_string(r.gpus_per_node) + "; " + std::to_string(r.nodes) +
                           " nodes would leave one idle");
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
