#include "servelab/tune/targets/preflight.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>

#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/tokenizer/tokenizer.h"
#include "servelab/tune/study/space.h"
#include "tune/targets/datasets.h"
#include "tune/targets/engine_process.h"

namespace servelab::tune {

namespace fs = std::filesystem;
using Result = PreflightCheck::Result;

const char* preflight_result_name(Result r) {
  switch (r) {
    case Result::kOk:
      return "ok";
    case Result::kWarning:
      return "warning";
    case Result::kFailed:
      return "FAILED";
    case Result::kSkipped:
      return "skipped";
  }
  return "?";
}

bool PreflightReport::ok() const {
  for (const auto& c : checks)
    if (c.result == Result::kFailed) return false;
  return true;
}

std::string PreflightReport::text() const {
  std::string out;
  for (const auto& c : checks)
    out += fmt::format("  [{}] {}: {}\n", preflight_result_name(c.result), c.name, c.detail);
  return out;
}

PreflightOptions PreflightOptions::from_process() {
  PreflightOptions o;
  o.env = common::environment_map();
  o.cwd = fs::current_path();
  return o;
}

namespace {

struct Captured {
  int status = -1;  ///< wait status
  bool timed_out = false;
  std::string output;  ///< stdout and stderr, interleaved
};

/// Runs argv (argv[0] already resolved) with `env`, capturing its output, killed after `timeout_s`.
Captured run_capture(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                     double timeout_s) {
  Captured c;
  std::vector<std::string> env_store;
  for (const auto& [k, v] : env) env_store.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> a = argv;
  for (auto& s : a) args.push_back(s.data());
  args.push_back(nullptr);
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return c;
  const int null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const pid_t pid = fork();
  if (pid < 0) {
    close(out[0]);
    close(out[1]);
    close(null_fd);
    return c;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(null_fd, 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    execve(args[0], args.data(), envp.data());
    _exit(127);
  }
  close(out[1]);
  close(null_fd);
  const auto t0 = std::chrono::steady_clock::now();
  char buf[4096];
  for (;;) {
    const double left =
        timeout_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (left <= 0) {
      c.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd p{out[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(std::min(left, 0.5) * 1000) + 1) <= 0) continue;
    const ssize_t n = read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    if (c.output.size() < (1u << 20)) c.output.append(buf, static_cast<size_t>(n));
  }
  close(out[0]);
  waitpid(pid, &c.status, 0);
  return c;
}

std::string first_version(const std::string& text) {
  static const std::regex kVersion(R"((\d+\.\d+[0-9A-Za-z.+\-]*))");
  std::smatch m;
  return std::regex_search(text, m, kVersion) ? m[1].str() : "";
}

std::string clipped_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  for (char& ch : s)
    if (ch == '\n') ch = ' ';
  return s.size() > 300 ? s.substr(0, 297) + "..." : s;
}

std::string env_get(const std::map<std::string, std::string>& env, const std::string& k) {
  auto it = env.find(k);
  return it == env.end() ? "" : it->second;
}

/// Every config of `engine` the search can launch with one knob changed (plus the baseline): together they
/// carry every flag the study can render for that engine.
std::vector<Rendered> single_knob_configs(const Study& study, const std::string& engine) {
  std::vector<Rendered> out;
  out.push_back(render(study, CandidateConfig{engine, {}}));
  for (const auto& k : study.knobs)
    for (const auto& v : k.values) {
      if (v.label == k.baseline) continue;
      CandidateConfig c{engine, {{k.name, v.label}}};
      if (!check_config(study, c)) out.push_back(render(study, c));
    }
  return out;
}

void check_engine(const Study& study, const EngineSpec& spec, const PreflightOptions& o, PreflightReport& r,
                  int* standins) {
  const std::string name = "engine " + spec.name;
  const Rendered base = render(study, CandidateConfig{spec.name, {}});
  std::string exe;
  try {
    exe = detail::find_executable(base.argv.at(0), env_get(o.env, "PATH"));
  } catch (const std::exception& e) {
    r.checks.push_back({name, Result::kFailed, e.what()});
    return;
  }
  std::map<std::string, std::string> env = o.env;
  for (const auto& [k, v] : spec.env) env[k] = v;
  std::vector<std::string> ask;
  std::string how;
  const bool python_module = base.argv.size() >= 3 && base.argv[1] == "-m";
  const std::string package = engines::engine_module(spec.kind).version_probe_package;
  if (!package.empty() && python_module) {
    ask = {exe, "-c",
           fmt::format("import {0}; print({0}.__version__); "
                       "print('servelab stand-in' if getattr({0}, '__servelab_standin__', False) else '')",
                       package)};
    how = fmt::format("{0} -c \"import {1}; print({1}.__version__)\"", base.argv[0], package);
  } else {
    ask = {exe, "--version"};
    how = base.argv[0] + " --version";
  }
  const Captured c = run_capture(ask, env, o.command_timeout_s);
  const std::string version = first_version(c.output);
  if (c.timed_out || !WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0 || version.empty()) {
    r.checks.push_back(
        {name, Result::kFailed,
         fmt::format("`{}` {} ({}); the engine is not usable as installed", how,
                     c.timed_out ? fmt::format("did not answer in {:g} s", o.command_timeout_s) : "failed",
                     clipped_line(c.output).empty() ? "no output" : clipped_line(c.output))});
    return;
  }
  r.engine_versions[spec.name] = version;
  const bool standin = c.output.find("servelab stand-in") != std::string::npos;
  if (standin) ++*standins;
  if (version != spec.version) {
    const char* kind = engines::engine_kind_name(spec.kind);
    r.checks.push_back({name, Result::kFailed,
                        fmt::format("the study says {} {} but `{}` reports {} ({}); install {} {} or set the "
                                    "engine's version in the study to what is installed",
                                    kind, spec.version, how, version, exe, kind, spec.version)});
    return;
  }
  r.checks.push_back(
      {name, Result::kOk,
       fmt::format("{} {}{}", exe, version, standin ? " (servelab stand-in: serves the twin)" : "")});
}

/// The most GPUs one launch of the study takes (engines' own parsing of each rendered command).
int largest_launch_gpus(const Study& study) {
  int most = 1;
  for (const auto& e : study.engines)
    for (const auto& cmd : single_knob_configs(study, e.name)) {
      try {
        most = std::max(most, engines::parse_launch_command(cmd.argv, cmd.env).gpus_used());
      } catch (const std::exception&) {
        // A command the engine refuses is a trial failure, not a pre-flight one.
      }
    }
  return most;
}

/// One GPU as `nvidia-smi --query-gpu=index,name,memory.total,memory.used,driver_version` lists it (MiB).
struct SmiGpu {
  std::string index, name, driver;
  double total_mib = 0, used_mib = 0;
};

/// The GPUs of nvidia-smi's CSV output (noheader, nounits); lines it cannot read are skipped.
std::vector<SmiGpu> parse_smi_gpus(const std::string& csv) {
  std::vector<SmiGpu> gpus;
  std::istringstream lines(csv);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string cell;
    while (std::getline(ls, cell, ',')) {
      const auto a = cell.find_first_not_of(' ');
      f.push_back(a == std::string::npos ? "" : cell.substr(a));
    }
    if (f.size() < 5) continue;
    try {
      gpus.push_back({f[0], f[1], f[4], std::stod(f[2]), std::stod(f[3])});
    } catch (const std::exception&) {
    }
  }
  return gpus;
}

/// Why `gpus` cannot run the study: fewer than `need`, less memory than 90% of [hardware] gpu_memory_gb,
/// more than 5% of a GPU's memory already in use. Empty when they can.
std::vector<std::string> gpu_problems(const Study& study, const std::vector<SmiGpu>& gpus, int need) {
  std::vector<std::string> problems;
  if (static_cast<int>(gpus.size()) < need)
    problems.push_back(fmt::format("{} GPU(s) here, the largest launch needs {}", gpus.size(), need));
  for (const auto& g : gpus) {
    const double gb = g.total_mib * 1048576.0 / 1e9;
    if (gb < 0.9 * study.hardware.gpu_memory_gb)
      problems.push_back(fmt::format("GPU {} has {:.0f} GB, the study assumes {:.0f} GB", g.index, gb,
                                     study.hardware.gpu_memory_gb));
    if (g.used_mib > 0.05 * g.total_mib)
      problems.push_back(
          fmt::format("GPU {} already has {:.1f} GiB in use (another process: `nvidia-smi` shows it; "
                      "stop it first)",
                      g.index, g.used_mib / 1024));
  }
  return problems;
}

void check_gpus(const Study& study, const PreflightOptions& o, PreflightReport& r) {
  if (r.standins) {
    r.checks.push_back(
        {"GPUs", Result::kSkipped, "every engine is a servelab stand-in (the twin needs no GPU)"});
    return;
  }
  const int need = largest_launch_gpus(study);
  const std::string want =
      fmt::format("{} x {} with {:.0f} GB ({:.0f} GiB) each", need, study.hardware.gpu,
                  study.hardware.gpu_memory_gb, study.hardware.gpu_memory_gb * 1e9 / 1073741824.0);
  std::string smi;
  try {
    smi = detail::find_executable(o.nvidia_smi, env_get(o.env, "PATH"));
  } catch (const std::exception&) {
    r.checks.push_back(
        {"GPUs", Result::kFailed,
         fmt::format("{} not found on PATH: no NVIDIA driver here; the study's largest launch needs {}",
                     o.nvidia_smi, want)});
    return;
  }
  const Captured q = run_capture({smi, "--query-gpu=index,name,memory.total,memory.used,driver_version",
                                  "--format=csv,noheader,nounits"},
                                 o.env, o.command_timeout_s);
  if (q.timed_out || !WIFEXITED(q.status) || WEXITSTATUS(q.status) != 0) {
    r.checks.push_back(
        {"GPUs", Result::kFailed, fmt::format("nvidia-smi failed: {}", clipped_line(q.output))});
    return;
  }
  const std::vector<SmiGpu> gpus = parse_smi_gpus(q.output);
  const Captured header = run_capture({smi}, o.env, o.command_timeout_s);
  std::smatch m;
  if (std::regex_search(header.output, m, std::regex(R"(CUDA Version:\s*([0-9.]+))"))) r.gpu["cuda"] = m[1];
  if (gpus.empty()) {
    r.checks.push_back(
        {"GPUs", Result::kFailed, fmt::format("nvidia-smi lists no GPU; the study needs {}", want)});
    return;
  }
  r.gpu["gpu_model"] = gpus[0].name;
  r.gpu["gpu_count"] = std::to_string(gpus.size());
  r.gpu["gpu_memory_mib"] = fmt::format("{:.0f}", gpus[0].total_mib);
  r.gpu["driver"] = gpus[0].driver;
  const std::vector<std::string> problems = gpu_problems(study, gpus, need);
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "; ") + p;
    r.checks.push_back({"GPUs", Result::kFailed, all});
    return;
  }
  const bool same_model = gpus[0].name.find(study.hardware.gpu) != std::string::npos;
  r.checks.push_back(
      {"GPUs", same_model ? Result::kOk : Result::kWarning,
       fmt::format("{} x {} ({:.0f} MiB, driver {}, CUDA {}); largest launch needs {}{}", gpus.size(),
                   gpus[0].name, gpus[0].total_mib, gpus[0].driver, r.gpu.count("cuda") ? r.gpu["cuda"] : "?",
                   need,
                   same_model ? "" : fmt::format("; the study was written for {}", study.hardware.gpu))});
}

void check_port(const Study& study, PreflightReport& r) {
  const std::string who = detail::describe_port_holders(study.port);
  if (who.empty())
    r.checks.push_back({"port", Result::kOk, fmt::format("{} is free", study.port)});
  else
    r.checks.push_back(
        {"port", Result::kFailed,
         fmt::format("{} is in use by {}; stop it or set [study] port to a free port", study.port, who)});
}

void check_datasets(const Study& study, PreflightReport& r) {
  std::vector<std::pair<std::string, std::vector<std::string>>> sets;
  for (const auto& sc : study.scenarios) sets.push_back({"dataset " + sc.id, sc.args});
  if (!study.warmup_args.empty()) sets.push_back({"dataset warm-up", study.warmup_args});
  for (const auto& [name, args] : sets) {
    const std::string given = detail::dataset_path_arg(args);
    std::string kind = "random";
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == "--dataset-name") kind = args[i + 1];
    if (given.empty()) {
      if (kind == "sharegpt" || kind == "custom")
        r.checks.push_back(
            {name, Result::kFailed, fmt::format("--dataset-name {} needs --dataset-path", kind)});
      else
        r.checks.push_back({name, Result::kOk, fmt::format("{} (generated, no file)", kind)});
      continue;
    }
    std::vector<std::string> tried;
    if (auto f = detail::resolve_dataset_file(given, &tried)) {
      r.checks.push_back({name, Result::kOk, f->string()});
      continue;
    }
    std::string where;
    for (const auto& t : tried) where += (where.empty() ? "" : ", ") + t;
    const std::string file = fs::path(given).filename().string();
    r.checks.push_back(
        {name, Result::kFailed,
         fmt::format(
             "{} not found (tried {}); {}", file, where,
             file == "ShareGPT_V3_unfiltered_cleaned_split.json"
                 ? "`make deps` downloads it into " + (common::cache_dir() / "data").string() +
                       " where the network allows; or copy it into $SERVELAB_DATA_DIR"
                 : "put it at that path or in $SERVELAB_DATA_DIR (" + common::data_dir().string() + ")")});
  }
}

bool looks_like_file(const std::string& v) {
  for (const char* ext : {".jinja", ".j2", ".json", ".yaml", ".yml", ".txt", ".py"})
    if (v.size() > std::strlen(ext) && v.compare(v.size() - std::strlen(ext), std::strlen(ext), ext) == 0)
      return true;
  return v.find('/') != std::string::npos && v.find('{') == std::string::npos &&
         v.find(' ') == std::string::npos;
}

void check_flag_files(const Study& study, const PreflightOptions& o, PreflightReport& r) {
  std::set<std::string> seen;
  int checked = 0;
  for (const auto& e : study.engines) {
    for (const auto& cmd : single_knob_configs(study, e.name)) {
      std::vector<std::pair<std::string, std::string>> files;
      try {
        const auto cfg = engines::parse_launch_command(cmd.argv, cmd.env);
        if (!cfg.chat_template.empty() && looks_like_file(cfg.chat_template))
          files.push_back({"--chat-template", cfg.chat_template});
        if (!cfg.config_file.empty()) files.push_back({"--config", cfg.config_file});
        if (!cfg.extra_llm_api_options.empty())
          files.push_back({"--extra_llm_api_options", cfg.extra_llm_api_options});
      } catch (const std::exception&) {
        // A command the engine refuses is a trial failure (recorded as such), not a pre-flight one.
      }
      for (size_t i = 0; i + 1 < cmd.argv.size(); ++i)
        if (cmd.argv[i] == "--tool-call-parser-plugin") files.push_back({cmd.argv[i], cmd.argv[i + 1]});
      for (const auto& [flag, value] : files) {
        if (!seen.insert(e.name + flag + value).second) continue;
        ++checked;
        const fs::path p = (fs::path(value).is_absolute() || o.cwd.empty() ? fs::path(value) : o.cwd / value)
                               .lexically_normal();
        std::error_code ec;
        if (fs::is_regular_file(p, ec))
          r.checks.push_back({"file " + flag, Result::kOk, fmt::format("{} ({})", p.string(), e.name)});
        else
          r.checks.push_back(
              {"file " + flag, Result::kFailed,
               fmt::format("{} {} {}: no such file{}; the engine would refuse to start. Put the file "
                           "there or fix the path in the study",
                           e.name, flag, value,
                           fs::path(value).is_absolute()
                               ? ""
                               : " (relative to " + o.cwd.string() + ", where tune launches engines)")});
      }
    }
  }
  if (checked == 0) r.checks.push_back({"files in flags", Result::kOk, "none named"});
}

std::vector<fs::path> hub_dirs(const std::map<std::string, std::string>& env) {
  std::vector<fs::path> dirs;
  if (auto v = env_get(env, "HF_HUB_CACHE"); !v.empty()) dirs.emplace_back(v);
  if (auto v = env_get(env, "HF_HOME"); !v.empty()) dirs.push_back(fs::path(v) / "hub");
  if (auto v = env_get(env, "XDG_CACHE_HOME"); !v.empty())
    dirs.push_back(fs::path(v) / "huggingface" / "hub");
  if (auto v = env_get(env, "HOME"); !v.empty())
    dirs.push_back(fs::path(v) / ".cache" / "huggingface" / "hub");
  return dirs;
}

/// "" when `dir` holds a usable checkpoint (config.json and every safetensors shard its index names), else
/// what is missing.
std::string checkpoint_problem(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) return "no config.json";
  const fs::path index = dir / "model.safetensors.index.json";
  if (fs::is_regular_file(index, ec)) {
    std::string text;
    try {
      text = common::read_file(index);
    } catch (const std::exception& e) {
      return e.what();
    }
    static const std::regex kShard(R"re("([^"]+\.safetensors)")re");
    std::set<std::string> shards;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), kShard); it != std::sregex_iterator(); ++it)
      shards.insert((*it)[1]);
    int missing = 0;
    std::string first;
    for (const auto& s : shards)
      if (!fs::exists(dir / s, ec)) {
        if (missing++ == 0) first = s;
      }
    if (missing)
      return fmt::format("{} of {} weight shards missing (first: {})", missing, shards.size(), first);
    return "";
  }
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".safetensors" || e.path().extension() == ".bin") return "";
  return "no *.safetensors weights";
}

double free_gb(const fs::path& p) {
  fs::path at = p;
  std::error_code ec;
  while (!at.empty() && !fs::exists(at, ec)) at = at.parent_path();
  struct statvfs s {};
  if (at.empty() || statvfs(at.c_str(), &s) != 0) return -1;
  return static_cast<double>(s.f_bavail) * static_cast<double>(s.f_frsize) / 1e9;
}

void check_weights(const Study& study, const PreflightOptions& o, PreflightReport& r) {
  if (r.standins) {
    r.checks.push_back(
        {"weights", Result::kSkipped, "every engine is a servelab stand-in (the twin needs no weights)"});
    return;
  }
  const std::string& model = study.model;
  std::error_code ec;
  if (fs::is_directory(model, ec)) {
    const std::string why = checkpoint_problem(model);
    r.checks.push_back({"weights", why.empty() ? Result::kOk : Result::kFailed,
                        why.empty() ? model : fmt::format("{}: {}", model, why)});
    return;
  }
  const auto slash = model.find('/');
  const std::string repo = slash == std::string::npos
                               ? "models--" + model
                               : "models--" + model.substr(0, slash) + "--" + model.substr(slash + 1);
  const auto dirs = hub_dirs(o.env);
  std::string notes;
  for (const auto& hub : dirs) {
    const fs::path snapshots = hub / repo / "snapshots";
    if (!fs::is_directory(snapshots, ec)) continue;
    for (const auto& snap : fs::directory_iterator(snapshots, ec)) {
      const std::string why = checkpoint_problem(snap.path());
      if (why.empty()) {
        r.checks.push_back({"weights", Result::kOk, snap.path().string()});
        return;
      }
      notes += fmt::format("; {}: {}", snap.path().string(), why);
    }
  }
  std::string where;
  for (const auto& d : dirs) where += (where.empty() ? "" : ", ") + d.string();
  const fs::path target = dirs.empty() ? fs::path(".") : dirs.front();
  r.checks.push_back(
      {"weights", Result::kFailed,
       fmt::format("{} is not in the Hugging Face cache ({}){}: download it before the study (`hf "
                   "download {}`; {:.0f} GB free at {}), or give a local path as [model] id",
                   model, where.empty() ? "no HF_HOME/HOME" : where, notes, model, free_gb(target),
                   target.string())});
}

void check_tokenizer(const Study& study, PreflightReport& r) {
  std::string spec = study.model;
  const auto& a = study.bench_common_args;
  for (size_t i = 0; i + 1 < a.size(); ++i)
    if (a[i] == "--tokenizer") spec = a[i + 1];
  try {
    r.checks.push_back({"tokenizer", Result::kOk, tokenizer::resolve_tokenizer_path(spec).string()});
  } catch (const std::exception& e) {
    r.checks.push_back(
        {"tokenizer", Result::kFailed,
         fmt::format("{} (bench serve counts tokens with it; `make deps` fetches DeepSeek's, or "
                     "`hf download {}`)",
                     clipped_line(e.what()), spec)});
  }
}

}  // namespace

PreflightReport run_preflight(const Study& study, const PreflightOptions& o) {
  PreflightReport r;
  int standins = 0;
  for (const auto& e : study.engines) check_engine(study, e, o, r, &standins);
  r.standins = standins == static_cast<int>(study.engines.size());
  check_gpus(study, o, r);
  check_port(study, r);
  check_datasets(study, r);
  check_flag_files(study, o, r);
  check_weights(study, o, r);
  check_tokenizer(study, r);
  return r;
}

}  // namespace servelab::tune
