// The Slurm target's pure parts: job states and their classes, Slurm's time and GRES texts, the batch
// script, and the trial files exchanged with the node (REQUEST.json, RESULT.json).
#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/multinode.h"
#include "servelab/tune/targets/slurm.h"

namespace servelab::tune {

namespace {

std::string base_state(std::string s) {
  // sacct prints "CANCELLED by 1000"; squeue may add "+" (e.g. "COMPLETING+" in some versions).
  if (auto sp = s.find(' '); sp != std::string::npos) s.resize(sp);
  while (!s.empty() && s.back() == '+') s.pop_back();
  return s;
}

std::string shell_quote(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
          std::string::npos)
    return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  if (out.size() > 120) out = out.substr(0, 120) + fmt::format("_{:x}", std::hash<std::string>{}(s));
  return out;
}

}  // namespace

bool slurm_state_live(const std::string& state) {
  static const std::set<std::string> kLive = {
      "PENDING",      "CONFIGURING", "RUNNING",   "COMPLETING", "SUSPENDED", "REQUEUED",      "REQUEUE_FED",
      "REQUEUE_HOLD", "RESIZING",    "SIGNALING", "STAGE_OUT",  "STOPPED",   "RESV_DEL_HOLD", "SPECIAL_EXIT"};
  return kLive.count(base_state(state)) > 0;
}

std::optional<TrialStatus> slurm_state_failure(const std::string& state) {
  const std::string s = base_state(state);
  if (s == "TIMEOUT" || s == "DEADLINE") return TrialStatus::kJobTimeLimit;
  if (s == "NODE_FAIL" || s == "BOOT_FAIL") return TrialStatus::kJobNodeFail;
  if (s == "PREEMPTED") return TrialStatus::kJobPreempted;
  if (s == "OUT_OF_MEMORY") return TrialStatus::kJobOutOfMemory;
  if (s == "CANCELLED") return TrialStatus::kJobCancelled;
  return std::nullopt;
}

std::map<std::string, SlurmJobState> parse_slurm_states(const std::string& text) {
  std::map<std::string, SlurmJobState> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty()) continue;
    const auto a = line.find('|');
    if (a == std::string::npos) continue;
    const auto b = line.find('|', a + 1);
    SlurmJobState st;
    st.state = base_state(line.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1));
    if (b != std::string::npos) st.detail = line.substr(b + 1);
    out[line.substr(0, a)] = st;
  }
  return out;
}

std::string slurm_time(double minutes) {
  if (!(minutes > 0))
    throw std::invalid_argument(fmt::format("a Slurm time limit must be > 0 min, not {}", minutes));
  const long total = static_cast<long>(std::ceil(minutes * 60 - 1e-9));
  return fmt::format("{}-{:02}:{:02}:{:02}", total / 86400, total % 86400 / 3600, total % 3600 / 60,
                     total % 60);
}

std::optional<double> parse_slurm_minutes(const std::string& text) {
  if (text == "UNLIMITED" || text == "INFINITE" || text == "NONE" || text == "Partition_Limit")
    return std::nullopt;
  // Slurm's formats: "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S".
  static const std::regex kTime(R"(^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$)");
  std::smatch m;
  if (!std::regex_match(text, m, kTime)) throw std::invalid_argument("not a Slurm time: '" + text + "'");
  const double days = m[1].matched ? std::stod(m[1]) : 0;
  const double a = std::stod(m[2]);
  const bool b = m[3].matched, c = m[4].matched;
  double min = 0;
  if (m[1].matched) {  // D-H[:M[:S]]
    min = days * 1440 + a * 60 + (b ? std::stod(m[3]) : 0) + (c ? std::stod(m[4]) / 60 : 0);
  } else if (c) {  // H:M:S
    min = a * 60 + std::stod(m[3]) + std::stod(m[4]) / 60;
  } else if (b) {  // M:S
    min = a + std::stod(m[3]) / 60;
  } else {  // M
    min = a;
  }
  return min;
}

std::map<std::string, std::string> parse_scontrol_line(const std::string& line) {
  std::map<std::string, std::string> out;
  std::istringstream in(line);
  std::string word;
  while (in >> word) {
    const auto eq = word.find('=');
    if (eq == std::string::npos || eq == 0) continue;
    out[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return out;
}

int gres_count(const std::string& gres, const std::string& name) {
  int total = 0;
  std::istringstream in(gres);
  std::string item;
  while (std::getline(in, item, ',')) {
    if (auto p = item.find('('); p != std::string::npos) item.resize(p);  // "(S:0-1)" socket binding
    std::vector<std::string> parts;
    std::istringstream ip(item);
    for (std::string f; std::getline(ip, f, ':');) parts.push_back(f);
    if (parts.size() < 2 || parts[0] != name) continue;
    try {
      total += std::stoi(parts.back());
    } catch (const std::exception&) {
    }
  }
  return total;
}

SlurmJobFiles slurm_job_files(const std::filesystem::path& slurm_dir, const std::string& trial_key) {
  SlurmJobFiles f;
  f.dir = slurm_dir / sanitize(trial_key);
  f.request = f.dir / "REQUEST.json";
  f.result = f.dir / "RESULT.json";
  f.script = f.dir / "job.sh";
  f.output = f.dir / "slurm-%j.out";
  return f;
}

SlurmAllocation slurm_allocation(const Study& study, const TrialRequest& request) {
  const SlurmSpec& sl = study.slurm;
  const EngineSpec& engine = study.engine(request.engine);
  engines::LaunchConfig parsed;
  try {
    parsed = engines::parse_launch_command(request.argv, request.env, engine.version);
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("cannot read the launch's GPUs from its command: ") + e.what());
  }
  SlurmAllocation a;
  a.gpus = sl.gpus_per_trial_given ? sl.gpus_per_trial : std::max(1, parsed.gpus_used());
  if (!sl.gpus_per_trial_given && a.gpus > study.hardware.gpu_count)
    throw std::invalid_argument(
        fmt::format("the launch uses {} GPUs; the study has {} ([hardware] gpu_count)", a.gpus,
                    study.hardware.gpu_count));
  a.nodes = engines::nodes_for_gpus(a.gpus, sl.gpus_per_node);
  a.gpus_per_node = a.nodes == 1 ? a.gpus : sl.gpus_per_node;
  if (a.nodes > 1 && a.gpus % sl.gpus_per_node != 0)
    throw std::invalid_argument(
        fmt::format("the trial asks for {} GPUs, which do not fill whole nodes of {} "
                    "([slurm] gpus_per_node): a multi-node trial uses every GPU of "
                    "its nodes",
                    a.gpus, sl.gpus_per_node));
  if (const auto& m = engines::engine_module(engine.kind); a.nodes > 1 && m.multi_node_one_job)
    throw std::invalid_argument(fmt::format(
        "the trial asks for {} GPUs on {} nodes: multi-node {} (one MPI job owning the allocation's tasks) "
        "is not launched by target slurm (docs/cluster.md section 5)",
        a.gpus, a.nodes, m.product_name));
  return a;
}

std::string slurm_batch_script(const Study& study, const SlurmJobFiles& files, const std::string& servelab,
                               const std::string& job_name, const SlurmAllocation& alloc) {
  const SlurmSpec& sl = study.slurm;
  const int nodes = alloc.nodes;
  const int per_node = alloc.gpus_per_node;
  if (files.dir.string().find_first_of(" \t\n'\"") != std::string::npos)
    throw std::invalid_argument(
        "the output directory's path holds spaces or quotes, which the #SBATCH --output line cannot carry: "
        "'" +
        files.dir.string() + "'");
  for (const auto& [key, value] : {std::pair<const char*, const std::string&>{"partition", sl.partition},
                                   {"account", sl.account},
                                   {"qos", sl.qos}})
    if (value.find_first_of(" \t\n'\"") != std::string::npos)
      throw std::invalid_argument(fmt::format(
          "[slurm] {} = '{}' holds whitespace or quotes, which an #SBATCH line cannot carry", key, value));
  std::string s = "#!/bin/bash\n";
  s += fmt::format("#SBATCH --job-name={}\n", job_name);
  if (!sl.partition.empty()) s += fmt::format("#SBATCH --partition={}\n", sl.partition);
  if (!sl.account.empty()) s += fmt::format("#SBATCH --account={}\n", sl.account);
  if (!sl.qos.empty()) s += fmt::format("#SBATCH --qos={}\n", sl.qos);
  s += fmt::format("#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n", nodes);
  s += fmt::format("#SBATCH --gres={}:{}\n", sl.gres_name, per_node);
  s += fmt::format("#SBATCH --time={}\n", slurm_time(sl.time_limit_min));
  s += fmt::format("#SBATCH --output={}\n", files.output.string());
  s += sl.requeue ? "#SBATCH --requeue\n" : "#SBATCH --no-requeue\n";
  for (const auto& a : sl.sbatch_args) s += "#SBATCH " + a + "\n";
  s += "# Written by servelab tune (target slurm, docs/cluster.md): one trial of study " + study.name + ".\n";
  s += "set -e\n";
  // A requeued job starts again from here: the previous run's result is not this run's.
  s += "rm -f " + shell_quote(files.result.string()) + "\n";
  for (const auto& line : sl.setup) s += line + "\n";
  // One task per node; the head (node 0) runs the trial, srun --wait ends the rest 30 s after it.
  s += fmt::format("srun --nodes={} --ntasks-per-node=1 --wait=30 {} tune-trial {} --out {}\n", nodes,
                   shell_quote(servelab), shell_quote(files.request.string()),
                   shell_quote(files.result.string()));
  return s;
}

namespace {

nlohmann::json scenario_json(const ScenarioResult& r) {
  return {{"scenario_id", r.scenario_id},   {"metrics", r.metrics},
          {"ttft_ms", r.ttft_ms},           {"tpot_ms", r.tpot_ms},
          {"result_block", r.result_block}, {"invalid_reason", r.invalid_reason}};
}

}  // namespace

std::string trial_request_json(const Study& study, const TrialRequest& req) {
  nlohmann::json scenarios = nlohmann::json::array();
  for (const auto& sc : req.scenarios)
    scenarios.push_back(
        {{"id", sc.id}, {"description", sc.description}, {"args", sc.args}, {"weight", sc.weight}});
  nlohmann::json j = {
      {"servelab_trial_request", 1},
      {"study_toml", study.source_text},
      {"study_path", study.source_path.string()},
      {"prompts_scale", study.prompts_scale},
      {"port", study.port},
      {"trial_key", req.trial_key},
      {"engine", req.engine},
      {"config_key", req.config_key},
      {"knobs", req.knobs},
      {"scenarios", scenarios},
      {"repeat", req.repeat},
      {"log_path", req.log_path.string()},
  };
  return j.dump(2) + "\n";
}

std::string trial_outcome_json(const TrialOutcome& o) {
  nlohmann::json scenarios = nlohmann::json::array();
  for (const auto& r : o.scenarios) scenarios.push_back(scenario_json(r));
  nlohmann::json j = {{"servelab_trial_result", 1}, {"status", trial_status_name(o.status)},
                      {"reason", o.reason},         {"log_tail", o.log_tail},
                      {"scenarios", scenarios},     {"predicted", o.predicted},
                      {"wall_s", o.wall_s}};
  return j.dump(2) + "\n";
}

TrialOutcome read_trial_outcome(const std::filesystem::path& path) {
  std::string text;
  try {
    text = common::read_file(path);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot read trial result " + path.string() + ": " + e.what());
  }
  try {
    const auto j = nlohmann::json::parse(text);
    if (!j.contains("servelab_trial_result")) throw std::runtime_error("not a servelab trial result");
    TrialOutcome o;
    o.status = trial_status_from_name(j.at("status").get<std::string>());
    o.reason = j.at("reason").get<std::string>();
    o.log_tail = j.at("log_tail").get<std::string>();
    o.predicted = j.at("predicted").get<bool>();
    o.wall_s = j.at("wall_s").get<double>();
    for (const auto& s : j.at("scenarios")) {
      ScenarioResult r;
      r.scenario_id = s.at("scenario_id").get<std::string>();
      r.metrics = s.at("metrics").get<std::map<std::string, double>>();
      r.ttft_ms = s.at("ttft_ms").get<std::vector<double>>();
      r.tpot_ms = s.at("tpot_ms").get<std::vector<double>>();
      r.result_block = s.at("result_block").get<std::string>();
      r.invalid_reason = s.at("invalid_reason").get<std::string>();
      o.scenarios.push_back(std::move(r));
    }
    return o;
  } catch (const std::exception& e) {
    throw std::runtime_error("malformed trial result " + path.string() + ": " + e.what());
  }
}

}  // namespace servelab::tune
