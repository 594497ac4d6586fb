// Pre-flight of the Slurm target: partition, GRES and time limit against the study's plan.
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "servelab/engines/engine_module.h"
#include "servelab/tune/targets/slurm.h"

namespace servelab::tune {

namespace {

using Result = PreflightCheck::Result;

std::string first_line(const std::string& s) {
  return s.substr(0, s.find('\n'));
}

/// The partition's `scontrol show partition -o` fields; "" name = the default partition. Adds a failed check
/// and returns an empty map when it cannot be found.
std::map<std::string, std::string> find_partition(const Study& study, const SlurmPreflightOptions& o,
                                                  PreflightReport& r) {
  const std::string& name = study.slurm.partition;
  const auto res = detail::run_command({o.scontrol, "show", "partition", "-o"}, o.command_timeout_s);
  if (res.exit_code != 0) {
    r.checks.push_back(
        {"Slurm", Result::kFailed,
         fmt::format("`{} show partition` failed: {} (is this a Slurm login node? SLURM_CONF?)", o.scontrol,
                     first_line(res.err.empty() ? res.out : res.err))});
    return {};
  }
  std::vector<std::map<std::string, std::string>> parts;
  std::istringstream in(res.out);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("PartitionName=", 0) == 0) parts.push_back(parse_scontrol_line(line));
  std::string names;
  for (const auto& p : parts) {
    names += (names.empty() ? "" : ", ") + p.at("PartitionName");
    if (name.empty() ? p.count("Default") && p.at("Default") == "YES" : p.at("PartitionName") == name)
      return p;
  }
  r.checks.push_back({"partition", Result::kFailed,
                      name.empty()
                          ? fmt::format("[slurm] partition is not set and the cluster has no default "
                                        "partition (partitions: {})",
                                        names)
                          : fmt::format("partition '{}' does not exist (partitions: {})", name, names)});
  return {};
}

void check_partition(const Study& study, const std::map<std::string, std::string>& p, PreflightReport& r) {
  const SlurmSpec& sl = study.slurm;
  const std::string name = p.at("PartitionName");
  const std::string state = p.count("State") ? p.at("State") : "?";
  if (state != "UP")
    r.checks.push_back(
        {"partition", Result::kFailed, fmt::format("partition '{}' is {}, not UP", name, state)});
  else
    r.checks.push_back({"partition", Result::kOk, fmt::format("'{}' is UP", name)});
  std::optional<double> max_min;
  try {
    if (p.count("MaxTime")) max_min = parse_slurm_minutes(p.at("MaxTime"));
  } catch (const std::invalid_argument&) {
  }
  if (max_min && sl.time_limit_min > *max_min)
    r.checks.push_back(
        {"time limit", Result::kFailed,
         fmt::format("[slurm] time_limit_min = {:g} is above partition '{}''s MaxTime {} ({:g} min): "
                     "sbatch would refuse every trial",
                     sl.time_limit_min, name, p.at("MaxTime"), *max_min)});
  else
    r.checks.push_back({"time limit", Result::kOk,
                        fmt::format("{} per trial (partition MaxTime {})", slurm_time(sl.time_limit_min),
                                    p.count("MaxTime") ? p.at("MaxTime") : "?")});
  std::vector<std::string> slow;  // every engine whose start-up budget the time limit does not exceed
  for (const auto& e : study.engines)
    if (sl.time_limit_min * 60 <= e.ready_timeout_s)
      slow.push_back(fmt::format("{} ({:g} s)", e.name, e.ready_timeout_s));
  if (!slow.empty())
    r.checks.push_back(
        {"time limit", Result::kWarning,
         fmt::format("time_limit_min = {:g} is not longer than the start-up budget "
                     "(ready_timeout_s) of engine{} {}: a slow start-up ends as time_limit, with "
                     "no scenario run",
                     sl.time_limit_min, slow.size() > 1 ? "s" : "", fmt::join(slow, ", "))});
  const int nodes = sl.nodes(study.hardware.gpu_count);
  if (p.count("MaxNodes") && p.at("MaxNodes") != "UNLIMITED") {
    try {
      if (std::stoi(p.at("MaxNodes")) < nodes)
        r.checks.push_back({"nodes", Result::kFailed,
                            fmt::format("a trial needs {} nodes; partition '{}' allows {} per job (MaxNodes)",
                                        nodes, name, p.at("MaxNodes"))});
    } catch (const std::exception&) {
    }
  }
}

void check_gres(const Study& study, const std::string& partition, const SlurmPreflightOptions& o,
                PreflightReport& r) {
  const SlurmSpec& sl = study.slurm;
  const int nodes = sl.nodes(study.hardware.gpu_count);
  const int per_node = std::min(sl.gpus(study.hardware.gpu_count), sl.gpus_per_node);
  const auto res =
      detail::run_command({o.sinfo, "-h", "-N", "-p", partition, "-o", "%N|%G"}, o.command_timeout_s);
  if (res.exit_code != 0) {
    r.checks.push_back({"GRES", Result::kFailed,
                        fmt::format("`{} -N -p {}` failed: {}", o.sinfo, partition, first_line(res.err))});
    return;
  }
  std::map<std::string, int> node_gpus;  // sinfo -N prints a node once per partition
  std::istringstream in(res.out);
  for (std::string line; std::getline(in, line);) {
    const auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    node_gpus[line.substr(0, bar)] = gres_count(line.substr(bar + 1), sl.gres_name);
  }
  int fit = 0, most = 0;
  for (const auto& [node, n] : node_gpus) {
    fit += n >= per_node;
    most = std::max(most, n);
  }
  const std::string ask = fmt::format("--gres={}:{} on {} node(s)", sl.gres_name, per_node, nodes);
  if (fit < nodes)
    r.checks.push_back(
        {"GRES", Result::kFailed,
         fmt::format("a trial asks for {}, but {} of the {} node(s) of partition '{}' have {} {} "
                     "GPU(s) (the most on one node: {}); set [slurm] gpus_per_node / gpus_per_trial "
                     "or gres_name",
                     ask, fit, node_gpus.size(), partition, per_node, sl.gres_name, most)});
  else
    r.checks.push_back({"GRES", Result::kOk, fmt::format("{}: {} node(s) of '{}' fit", ask, fit, partition)});
}

}  // namespace

PreflightReport run_slurm_preflight(const Study& study, const SlurmPreflightOptions& o) {
  PreflightReport r;
  const auto p = find_partition(study, o, r);
  if (p.empty()) return r;
  check_partition(study, p, r);
  check_gres(study, p.at("PartitionName"), o, r);
  if (study.slurm.nodes(study.hardware.gpu_count) > 1)
    for (const auto& e : study.engines)
      if (const auto& m = engines::engine_module(e.kind); m.multi_node_one_job)
        r.checks.push_back(
            {"engine " + e.name, Result::kWarning,
             fmt::format("multi-node {} (one MPI job owning the allocation's tasks) is not launched by "
                         "target slurm: its trials whose launch spans more than one node of {} GPUs are "
                         "not submitted (each says so); those on one node are",
                         m.product_name, study.slurm.gpus_per_node)});
  return r;
}

}  // namespace servelab::tune
