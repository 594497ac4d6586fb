// The node side of a multi-node Slurm trial: what each task of `srun --nodes=N --ntasks-per-node=1
// servelab tune-trial` runs, from the allocation (SLURM_NODEID, SLURM_JOB_NUM_NODES, SLURM_JOB_NODELIST,
// SLURM_JOB_ID) and the engine's own multi-node method (engines::render_node_launch,
// include/servelab/engines/multinode.h).
#include <fmt/format.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "servelab/engines/engine_module.h"
#include "servelab/engines/multinode.h"
#include "servelab/tune/targets/slurm.h"
#include "tune/targets/engine_process.h"

namespace servelab::tune {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

/// True once something accepts TCP connections on host:port.
bool tcp_open(const std::string& host, int port) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  bool ok = false;
  for (addrinfo* a = res; a && !ok; a = a->ai_next) {
    const int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
  }
  freeaddrinfo(res);
  return ok;
}

void run_all(const std::vector<std::vector<std::string>>& commands, const char* what) {
  for (const auto& c : commands) {
    const auto r = detail::run_command(c, 600);
    if (r.exit_code != 0)
      throw std::runtime_error(fmt::format("{} `{}` failed: {}", what, c.empty() ? "" : c[0], r.err + r.out));
  }
}

}  // namespace

SlurmNodeContext SlurmNodeContext::from_environment() {
  SlurmNodeContext c;
  c.nodes = std::stoi(env_or("SLURM_JOB_NUM_NODES", env_or("SLURM_NNODES", "1")));
  c.node_rank = std::stoi(env_or("SLURM_NODEID", "0"));
  c.job_id = env_or("SLURM_JOB_ID", "0");
  if (c.nodes > 1) {
    const auto r =
        detail::run_command({"scontrol", "show", "hostnames", env_or("SLURM_JOB_NODELIST", "")}, 60);
    c.head = r.out.substr(0, r.out.find('\n'));
    if (r.exit_code != 0 || c.head.empty())
      throw std::runtime_error("cannot name the head node: `scontrol show hostnames " +
                               env_or("SLURM_JOB_NODELIST", "") + "` failed: " + r.err);
  }
  return c;
}

engines::NodeLaunch slurm_node_launch(const Study& study, const std::string& engine,
                                      const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& env,
                                      const SlurmNodeContext& node) {
  const EngineSpec& spec = study.engine(engine);
  engines::MultiNodeRequest r;
  r.kind = spec.kind;
  r.engine_version = spec.version;
  r.argv = argv;
  r.env = env;
  r.nodes = node.nodes;
  r.gpus_per_node = study.slurm.gpus_per_node;
  r.node_rank = node.node_rank;
  r.head_address = node.head;
  r.port = slurm_rendezvous_port(node.job_id);
  if (const auto& m = engines::engine_module(r.kind); m.multi_node_one_job && node.nodes > 1)
    throw std::invalid_argument(std::string("multi-node ") + m.product_name +
                                " runs as one MPI job that must own the allocation's tasks; target slurm "
                                "starts one servelab task per node, so it does not launch it yet (use one "
                                "node per trial)");
  return engines::render_node_launch(r);
}

int slurm_rendezvous_port(const std::string& job_id) {
  long id = 0;
  try {
    id = std::stol(job_id);
  } catch (const std::exception&) {
  }
  return 20000 + static_cast<int>(id % 20000);
}

int run_worker_node(const engines::NodeLaunch& launch, const std::filesystem::path& log,
                    const std::filesystem::path& head_result, const SlurmNodeContext& node, double grace_s,
                    const std::atomic<bool>* stop) {
  const auto stopped = [&] { return (stop && stop->load()) || std::filesystem::exists(head_result); };
  if (launch.after_head_setup) {  // Ray workers join a running head
    const int port = slurm_rendezvous_port(node.job_id);
    for (int i = 0; i < 6000 && !stopped() && !tcp_open(node.head, port); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  run_all(launch.setup, "node setup");
  if (!launch.argv.empty()) {
    std::map<std::string, std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      const auto eq = kv.find('=');
      if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : launch.env) env[k] = v;
    auto engine = detail::EngineProcess::start(launch.argv, env, log, grace_s);
    // Until the engine ends, Slurm stops the step, or the head has written the trial's result.
    while (!engine.exited() && !stopped()) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    engine.stop(grace_s);
  }
  run_all(launch.teardown, "node teardown");
  return 0;
}

}  // namespace servelab::tune
