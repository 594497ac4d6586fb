// servelab/engines private: what the engines' node_launch hooks (engine_module.h, multinode.h) share:
// the request's refusals, the rendezvous check and the even split of a launch's GPUs over the nodes.
#pragma once

#include <string>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/multinode.h"

namespace servelab::engines::detail {

/// Throws std::invalid_argument("multi-node launch: " + what).
[[noreturn]] void multinode_fail(const std::string& what);

/// Refuses (multinode_fail) a single-node command that already gives one of `flags`: the multi-node flags
/// are rendered from the allocation.
void refuse_multinode_flags(const LaunchConfig& c, const std::vector<const char*>& flags);

/// Refuses an empty head address or a port outside 1..65535.
void check_multinode_rendezvous(const MultiNodeRequest& r);

/// GPUs per node when the launch's GPUs split evenly over r.nodes; refuses, naming `engine`, otherwise.
int even_node_share(const LaunchConfig& c, const MultiNodeRequest& r, const char* engine);

}  // namespace servelab::engines::detail
