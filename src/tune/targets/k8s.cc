// `tune --target k8s --render DIR` (see k8s.h): Job / LeaderWorkerSet manifests written with yaml-cpp.
// Kubernetes fields used: batch/v1 Job (backoffLimit, template.spec.restartPolicy Never), native sidecar
// containers (initContainers[].restartPolicy Always, Kubernetes >= 1.29 on by default: the main containers
// start after the sidecar's startupProbe succeeds, and the Job completes when they end), LeaderWorkerSet
// v1 (spec.replicas, leaderWorkerTemplate.{size, restartPolicy, leaderTemplate, workerTemplate}; its pods
// get LWS_LEADER_ADDRESS, LWS_GROUP_SIZE and LWS_WORKER_INDEX: lws.sigs.k8s.io docs, "Environment
// variables"), GPUs as the NVIDIA device plugin's extended resource (resources.limits nvidia.com/gpu).
#include "servelab/tune/targets/k8s.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <set>
#include <stdexcept>

#include "servelab/common/printable.h"
#include "servelab/common/redact.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/multinode.h"
#include "servelab/hub/hub.h"
#include "servelab/tune/search/search.h"
#include "servelab/tune/study/study.h"

namespace servelab::tune {

namespace {

using Argv = std::vector<std::string>;
constexpr const char* kHeadToken = "@@LWS_LEADER_ADDRESS@@";

/// A variable whose value is a credential: its name says so (common::is_credential_name: HF_TOKEN, ...) or
/// its value carries one (a URL with a password: HF_ENDPOINT=https://user:pass@mirror).
bool is_secret_env(const std::string& name, const std::string& value) {
  return common::is_credential_name(name) || common::redact_url(value) != value;
}

/// POSIX sh single-quoting (a word left bare when it has only safe characters).
std::string sh(const std::string& s) {
  if (!s.empty() &&
      s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-./=:,+@%") ==
          std::string::npos)
    return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

/// Marks a variable of the pod's environment inside an argument that sh_line writes: "@@ENV:NAME@@".
std::string env_token(const std::string& name) {
  return "@@ENV:" + name + "@@";
}

/// A command as one sh line; kHeadToken becomes "${LWS_LEADER_ADDRESS}" and env_token(NAME) "${NAME}"
/// (expanded by the pod's shell, outside any quotes).
std::string sh_line(const Argv& argv) {
  std::string out;
  for (const auto& a : argv) {
    std::string q = sh(a);
    const bool quoted = q.front() == '\'';
    auto expand = [&](std::size_t p, std::size_t len, const std::string& var) {
      const std::string ref = "\"${" + var + "}\"";
      q.replace(p, len, quoted ? "'" + ref + "'" : ref);
    };
    for (auto p = q.find(kHeadToken); p != std::string::npos; p = q.find(kHeadToken))
      expand(p, std::string(kHeadToken).size(), "LWS_LEADER_ADDRESS");
    for (auto p = q.find("@@ENV:"); p != std::string::npos; p = q.find("@@ENV:")) {
      const auto end = q.find("@@", p + 6);
      if (end == std::string::npos) break;
      expand(p, end + 2 - p, q.substr(p + 6, end - p - 6));
    }
    out += (out.empty() ? "" : " ") + q;
  }
  return out;
}

/// How a command reaches the container: as exec-form `command` items (Kubernetes expands "$(NAME)" in
/// them from the container's environment) or inside an `sh -c` script (the shell expands "${NAME}").
enum class CommandForm { kExec, kShell };

/// The name of the variable that carries a credential of a command line: "SERVELAB_SECRET_" + the flag or
/// header name it belongs to in upper case ("--api-key" -> SERVELAB_SECRET_API_KEY, "Authorization=..." ->
/// SERVELAB_SECRET_AUTHORIZATION); "SERVELAB_SECRET_<n>" when the value has no name (a URL's userinfo).
std::string secret_variable(const Argv& argv, std::size_t i, int n) {
  std::string flag;
  const std::string& a = argv[i];
  if (const auto eq = a.find_first_of("=:"); eq != std::string::npos && eq > 0 && a.find("://") != eq)
    flag = a.substr(0, eq);
  else if (i > 0 && argv[i - 1].rfind("-", 0) == 0)
    flag = argv[i - 1];
  if (flag == "--header" || flag == "-H") flag.clear();  // `--header NAME=VALUE`: the name is in the item
  std::string name;
  for (char ch : flag) {
    if (std::isalnum(static_cast<unsigned char>(ch)))
      name += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    else if (!name.empty() && name.back() != '_')
      name += '_';
  }
  while (!name.empty() && name.back() == '_') name.pop_back();
  return "SERVELAB_SECRET_" + (name.empty() ? std::to_string(n) : name);
}

/// `argv` with every credential common::redact_args hides replaced by a reference to a variable of the
/// container's environment (secret_variable), added to `env` with an empty value: emit_env then fills it
/// from the credentials Secret (its name holds "SECRET", a credential name), so no credential is written
/// into a manifest. The references are "$(NAME)" in exec form, env_token(NAME) in a script (sh_line).
Argv secret_refs(const Argv& argv, std::map<std::string, std::string>& env, CommandForm form) {
  const Argv hidden = common::redact_args(argv);
  Argv out = argv;
  int unnamed = 0;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    if (hidden[i] == argv[i]) continue;
    std::string item = hidden[i];
    int occurrence = 0;
    for (auto p = item.find(common::kRedacted); p != std::string::npos; p = item.find(common::kRedacted, p)) {
      std::string var = secret_variable(argv, i, ++unnamed);
      if (++occurrence > 1) var += "_" + std::to_string(occurrence);
      env[var] = "";
      const std::string ref = form == CommandForm::kExec ? "$(" + var + ")" : env_token(var);
      item.replace(p, common::kRedacted.size(), ref);
      p += ref.size();
    }
    out[i] = item;
  }
  return out;
}

/// The credential variables of `env` (common::is_credential_name): the keys the Secret must hold.
std::set<std::string> credential_keys(const std::map<std::string, std::string>& env) {
  std::set<std::string> out;
  for (const auto& [k, v] : env)
    if (is_secret_env(k, v)) out.insert(k);
  return out;
}

/// A DNS-1123 label piece: lower case, [a-z0-9-], no leading/trailing '-', at most `max` characters.
std::string dns_piece(const std::string& s, std::size_t max) {
  std::string out;
  for (char ch : s) {
    const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (ok)
      out += c;
    else if (!out.empty() && out.back() != '-')
      out += '-';
  }
  if (out.size() > max) out.resize(max);
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

void emit_kv(YAML::Emitter& y, const std::string& k, const std::string& v) {
  y << YAML::Key << k << YAML::Value << YAML::DoubleQuoted << v;
}

void emit_labels(YAML::Emitter& y, const std::map<std::string, std::string>& labels) {
  y << YAML::Key << "labels" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : labels) emit_kv(y, k, v);
  y << YAML::EndMap;
}

/// A sequence of strings: double-quoted, or a literal block (`|`) for a multi-line script.
void emit_strings(YAML::Emitter& y, const std::string& key, const Argv& v) {
  y << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& s : v) y << (s.find('\n') == std::string::npos ? YAML::DoubleQuoted : YAML::Literal) << s;
  y << YAML::EndSeq;
}

/// env: credentials (is_secret_env) come from the Secret `secret`, never written here.
void emit_env(YAML::Emitter& y, const std::map<std::string, std::string>& env, const std::string& secret) {
  if (env.empty()) return;
  y << YAML::Key << "env" << YAML::Value << YAML::BeginSeq;
  for (const auto& [k, v] : env) {
    y << YAML::BeginMap;
    emit_kv(y, "name", k);
    if (is_secret_env(k, v)) {
      y << YAML::Key << "valueFrom" << YAML::Value << YAML::BeginMap << YAML::Key << "secretKeyRef"
        << YAML::Value << YAML::BeginMap;
      emit_kv(y, "name", secret);
      emit_kv(y, "key", k);
      y << YAML::EndMap << YAML::EndMap;
    } else {
      emit_kv(y, "value", v);
    }
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
}

void emit_mounts(YAML::Emitter& y, const std::vector<std::pair<std::string, std::string>>& mounts) {
  y << YAML::Key << "volumeMounts" << YAML::Value << YAML::BeginSeq;
  for (const auto& [name, path] : mounts) {
    y << YAML::BeginMap;
    emit_kv(y, "name", name);
    emit_kv(y, "mountPath", path);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
}

/// What the engine container of one pod runs.
struct EngineContainer {
  Argv command;  ///< exec form, or {"sh", "-c", script}
  std::map<std::string, std::string> env;
  int gpus = 0;
  bool http = false;     ///< serves the API: ports and (sidecar) startupProbe
  bool sidecar = false;  ///< native sidecar (initContainers, restartPolicy Always)
};

struct Ctx {
  const Study& study;
  const TrialRequest& trial;
  const EngineSpec& engine;
  const K8sSpec& k8s;
  std::string image;
  std::set<std::string>* secret_keys;  ///< collects the keys the credentials Secret must hold
};

void emit_engine(YAML::Emitter& y, const Ctx& c, const EngineContainer& e) {
  y << YAML::BeginMap;
  emit_kv(y, "name", "engine");
  emit_kv(y, "image", c.image);
  if (e.sidecar) emit_kv(y, "restartPolicy", "Always");
  emit_strings(y, "command", e.command);
  emit_env(y, e.env, c.k8s.credentials_secret);
  for (const auto& k : credential_keys(e.env)) c.secret_keys->insert(k);
  if (e.http) {
    y << YAML::Key << "ports" << YAML::Value << YAML::BeginSeq << YAML::BeginMap << YAML::Key
      << "containerPort" << YAML::Value << c.study.port;
    emit_kv(y, "name", "http");
    y << YAML::EndMap << YAML::EndSeq;
    // The API is ready when its first ready path answers 200 (engines' /health); budget = ready_timeout_s.
    const int period_s = 10;
    const int failures = std::max(1, static_cast<int>((c.engine.ready_timeout_s + period_s - 1) / period_s));
    y << YAML::Key << "startupProbe" << YAML::Value << YAML::BeginMap << YAML::Key << "httpGet" << YAML::Value
      << YAML::BeginMap;
    emit_kv(y, "path", c.engine.ready_paths.empty() ? "/health" : c.engine.ready_paths.front());
    y << YAML::Key << "port" << YAML::Value << c.study.port << YAML::EndMap;
    y << YAML::Key << "periodSeconds" << YAML::Value << period_s << YAML::Key << "failureThreshold"
      << YAML::Value << failures << YAML::EndMap;
  }
  y << YAML::Key << "resources" << YAML::Value << YAML::BeginMap << YAML::Key << "limits" << YAML::Value
    << YAML::BeginMap << YAML::Key << c.k8s.gpu_resource << YAML::Value << e.gpus << YAML::EndMap
    << YAML::EndMap;
  std::vector<std::pair<std::string, std::string>> mounts = {{"dshm", "/dev/shm"}};
  if (!c.k8s.model_cache_claim.empty()) mounts.emplace_back("model-cache", "/root/.cache/huggingface");
  emit_mounts(y, mounts);
  y << YAML::EndMap;
}

/// The benchmark container's script: every scenario of the trial with `servelab bench serve` against the
/// engine on localhost, each result saved as /results/<name>/<scenario>.json, then DONE.
/// Credentials of the bench flags (--header Authorization=..., an API key in --extra-body) become
/// variables added to `env` (secret_refs).
std::string bench_script(const Ctx& c, const std::string& name, bool stay,
                         std::map<std::string, std::string>& env) {
  const std::string dir = "/results/" + name;
  std::string s = "set -e\nmkdir -p " + sh(dir) + "\n";
  for (const auto& sc : c.trial.scenarios) {
    Argv a = {"servelab", "bench", "serve"};
    a.insert(a.end(), c.study.bench_common_args.begin(), c.study.bench_common_args.end());
    a.insert(a.end(), {"--model", c.study.model});
    for (const auto& [k, v] : c.study.objective.slo_ms)
      a.insert(a.end(), {"--goodput", fmt::format("{}:{}", k, v)});
    a.insert(a.end(), sc.args.begin(), sc.args.end());
    a.insert(a.end(), {"--base-url", fmt::format("http://127.0.0.1:{}", c.study.port),
                       "--ready-check-timeout-sec", fmt::format("{:.0f}", c.engine.ready_timeout_s),
                       "--save-result", "--result-dir", dir, "--result-filename", sc.id + ".json"});
    s += sh_line(secret_refs(a, env, CommandForm::kShell)) + "\n";
  }
  s += "touch " + sh(dir + "/DONE") + "\n";
  // A LeaderWorkerSet pod restarts containers that exit: the benchmark stays (idle) once done.
  if (stay) s += "exec sleep infinity\n";
  return s;
}

/// The engine's variables that tell `bench serve` how to reach the Hugging Face Hub for the model's
/// tokenizer (a gated model's token, a mirror, offline mode; hub::kHubEnvironmentVariables): the benchmark
/// container gets them too.
bool hub_env(const std::string& name) {
  return std::find(std::begin(hub::kHubEnvironmentVariables), std::end(hub::kHubEnvironmentVariables),
                   name) != std::end(hub::kHubEnvironmentVariables);
}

void emit_bench(YAML::Emitter& y, const Ctx& c, const std::string& name, bool stay) {
  y << YAML::BeginMap;
  emit_kv(y, "name", "bench");
  emit_kv(y, "image", c.k8s.bench_image);
  std::map<std::string, std::string> env;
  emit_strings(y, "command", {"sh", "-c", bench_script(c, name, stay, env)});
  // The tokenizer of a random or ShareGPT scenario comes from the Hub (or the cache the engine filled): the
  // bench container gets the engine's Hub variables (a token from the Secret) and the model cache's claim.
  for (const auto& [k, v] : c.trial.env)
    if (hub_env(k)) env.emplace(k, v);
  emit_env(y, env, c.k8s.credentials_secret);
  for (const auto& k : credential_keys(env)) c.secret_keys->insert(k);
  std::vector<std::pair<std::string, std::string>> mounts = {{"results", "/results"}};
  if (!c.k8s.model_cache_claim.empty()) mounts.emplace_back("model-cache", "/root/.cache/huggingface");
  emit_mounts(y, mounts);
  y << YAML::EndMap;
}

void emit_volumes(YAML::Emitter& y, const Ctx& c, bool results) {
  y << YAML::Key << "volumes" << YAML::Value << YAML::BeginSeq;
  y << YAML::BeginMap;
  emit_kv(y, "name", "dshm");
  y << YAML::Key << "emptyDir" << YAML::Value << YAML::BeginMap;
  emit_kv(y, "medium", "Memory");
  emit_kv(y, "sizeLimit", fmt::format("{}Gi", c.k8s.shm_gb));
  y << YAML::EndMap << YAML::EndMap;
  auto claim = [&](const std::string& name, const std::string& claim_name) {
    y << YAML::BeginMap;
    emit_kv(y, "name", name);
    y << YAML::Key << "persistentVolumeClaim" << YAML::Value << YAML::BeginMap;
    emit_kv(y, "claimName", claim_name);
    y << YAML::EndMap << YAML::EndMap;
  };
  if (results) {
    if (c.k8s.results_claim.empty()) {
      y << YAML::BeginMap;
      emit_kv(y, "name", "results");
      y << YAML::Key << "emptyDir" << YAML::Value << YAML::BeginMap << YAML::EndMap << YAML::EndMap;
    } else {
      claim("results", c.k8s.results_claim);
    }
  }
  if (!c.k8s.model_cache_claim.empty()) claim("model-cache", c.k8s.model_cache_claim);
  y << YAML::EndSeq;
}

void emit_metadata(YAML::Emitter& y, const Ctx& c, const std::string& name,
                   const std::map<std::string, std::string>& labels) {
  y << YAML::Key << "metadata" << YAML::Value << YAML::BeginMap;
  emit_kv(y, "name", name);
  emit_kv(y, "namespace", c.k8s.ns);
  emit_labels(y, labels);
  y << YAML::Key << "annotations" << YAML::Value << YAML::BeginMap;
  emit_kv(y, "servelab.io/trial-key", c.trial.trial_key);
  emit_kv(y, "servelab.io/config", c.trial.config_key);
  Rendered shown;
  shown.argv = common::redact_args(c.trial.argv);
  shown.env = common::redact_env(c.trial.env);
  emit_kv(y, "servelab.io/command", shown.shell());
  y << YAML::EndMap << YAML::EndMap;
}

std::string render_job(const Ctx& c, const std::string& name,
                       const std::map<std::string, std::string>& labels, int gpus) {
  YAML::Emitter y;
  y << YAML::BeginMap;
  emit_kv(y, "apiVersion", "batch/v1");
  emit_kv(y, "kind", "Job");
  emit_metadata(y, c, name, labels);
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "backoffLimit" << YAML::Value
    << 0;
  y << YAML::Key << "template" << YAML::Value << YAML::BeginMap << YAML::Key << "metadata" << YAML::Value
    << YAML::BeginMap;
  emit_labels(y, labels);
  y << YAML::EndMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
  emit_kv(y, "restartPolicy", "Never");
  y << YAML::Key << "initContainers" << YAML::Value << YAML::BeginSeq;
  std::map<std::string, std::string> env = c.trial.env;
  const Argv command = secret_refs(c.trial.argv, env, CommandForm::kExec);
  emit_engine(y, c, EngineContainer{command, env, gpus, true, true});
  y << YAML::EndSeq << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq;
  emit_bench(y, c, name, false);
  y << YAML::EndSeq;
  emit_volumes(y, c, true);
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

/// One node's launch as a container command (setup commands, then exec of its process); its credentials
/// become variables added to `env` (secret_refs).
Argv node_command(const engines::NodeLaunch& n, const std::string& wait_for_head,
                  std::map<std::string, std::string>& env) {
  std::string script = wait_for_head;
  for (const auto& s : n.setup) script += sh_line(secret_refs(s, env, CommandForm::kShell)) + "\n";
  script += "exec " + sh_line(secret_refs(n.argv, env, CommandForm::kShell)) + "\n";
  return {"sh", "-c", script};
}

std::string render_lws(const Ctx& c, const std::string& name,
                       const std::map<std::string, std::string>& labels, engines::MultiNodeRequest req,
                       int& gpus_per_pod) {
  req.head_address = kHeadToken;
  req.node_rank = 0;
  const engines::NodeLaunch head = engines::render_node_launch(req);
  // Workers share one template: the script picks the node's launch by LWS_WORKER_INDEX (1..nodes-1).
  std::string workers = "case \"${LWS_WORKER_INDEX}\" in\n";
  int worker_gpus = 0;
  std::map<std::string, std::string> worker_env;
  for (int rank = 1; rank < req.nodes; ++rank) {
    req.node_rank = rank;
    const engines::NodeLaunch n = engines::render_node_launch(req);
    worker_gpus = std::max(worker_gpus, n.gpus);
    for (const auto& [k, v] : n.env) worker_env[k] = v;
    std::string wait;
    if (n.after_head_setup)  // Ray workers join a running head: wait for its port to accept connections
      wait = fmt::format(
          "until python3 -c 'import socket,sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), "
          "5)' "
          "\"${{LWS_LEADER_ADDRESS}}\" {} 2>/dev/null; do sleep 5; done\n",
          req.port);
    workers += fmt::format("  {})\n    {}", rank, wait.empty() ? "" : wait + "    ");
    for (const auto& s : n.setup)
      workers += sh_line(secret_refs(s, worker_env, CommandForm::kShell)) + "\n    ";
    workers += "exec " + sh_line(secret_refs(n.argv, worker_env, CommandForm::kShell)) + " ;;\n";
  }
  workers += "  *) echo \"unexpected LWS_WORKER_INDEX=${LWS_WORKER_INDEX}\" >&2; exit 1 ;;\nesac\n";
  gpus_per_pod = std::max(head.gpus, worker_gpus);

  YAML::Emitter y;
  y << YAML::BeginMap;
  emit_kv(y, "apiVersion", "leaderworkerset.x-k8s.io/v1");
  emit_kv(y, "kind", "LeaderWorkerSet");
  emit_metadata(y, c, name, labels);
  y << YAML::Key << "spec" << YAML::Value << YAML::BeginMap << YAML::Key << "replicas" << YAML::Value << 1;
  y << YAML::Key << "leaderWorkerTemplate" << YAML::Value << YAML::BeginMap << YAML::Key << "size"
    << YAML::Value << req.nodes;
  emit_kv(y, "restartPolicy", "RecreateGroupOnPodRestart");
  auto pod = [&](const char* key, bool leader) {
    y << YAML::Key << key << YAML::Value << YAML::BeginMap << YAML::Key << "metadata" << YAML::Value
      << YAML::BeginMap;
    emit_labels(y, labels);
    y << YAML::EndMap << YAML::Key << "spec" << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "containers" << YAML::Value << YAML::BeginSeq;
    if (leader) {
      std::map<std::string, std::string> head_env = head.env;
      const Argv command = node_command(head, "", head_env);
      emit_engine(y, c, EngineContainer{command, head_env, head.gpus, true, false});
      emit_bench(y, c, name, true);
    } else {
      emit_engine(y, c, EngineContainer{{"sh", "-c", workers}, worker_env, worker_gpus, false, false});
    }
    y << YAML::EndSeq;
    emit_volumes(y, c, leader);
    y << YAML::EndMap << YAML::EndMap;
  };
  pod("leaderTemplate", true);
  pod("workerTemplate", false);
  y << YAML::EndMap << YAML::EndMap << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace

K8sManifest render_k8s_trial(const Study& study, const TrialRequest& trial, int index) {
  const EngineSpec& engine = study.engine(trial.engine);
  const K8sSpec& k8s = study.k8s;
  auto refuse = [&](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument(fmt::format("trial {} ({}): {}", index, trial.config_key, why));
  };
  if (k8s.bench_image.empty()) throw refuse("no [k8s] bench_image (an image with servelab on PATH)");
  auto img = k8s.images.find(engine.name);
  if (img == k8s.images.end() || img->second.empty())
    throw refuse(
        fmt::format("no image for engine {}: set [k8s.images] {} = \"...\"", engine.name, engine.name));
  engines::LaunchConfig parsed;
  try {
    parsed = engines::parse_launch_command(trial.argv, trial.env, engine.version);
  } catch (const std::exception& e) {
    throw refuse(std::string("cannot read the launch's GPUs from its command: ") + e.what());
  }
  const int gpus = parsed.gpus_used();
  const int per_node = study.hardware.gpus_per_node;
  const int nodes = engines::nodes_for_gpus(gpus, per_node);
  if (nodes > study.hardware.nodes)
    throw refuse(fmt::format("{} GPUs need {} nodes of {}; [hardware] has {}", gpus, nodes, per_node,
                             study.hardware.nodes));
  K8sManifest m;
  m.name = fmt::format("{}-{:03d}-{}", dns_piece(study.name, 36), index, dns_piece(engine.name, 10));
  m.nodes = nodes;
  const std::map<std::string, std::string> labels = {{"app.kubernetes.io/name", "servelab"},
                                                     {"app.kubernetes.io/component", "trial"},
                                                     {"servelab.io/study", dns_piece(study.name, 63)},
                                                     {"servelab.io/engine", dns_piece(engine.name, 63)},
                                                     {"servelab.io/trial", m.name}};
  std::set<std::string> secret_keys;
  const Ctx c{study, trial, engine, k8s, img->second, &secret_keys};
  if (nodes == 1) {
    m.kind = "Job";
    m.gpus_per_pod = gpus;
    m.yaml = render_job(c, m.name, labels, gpus);
    m.secret_keys.assign(secret_keys.begin(), secret_keys.end());
    return m;
  }
  if (const auto& m = engines::engine_module(parsed.kind); m.multi_node_one_job)
    throw refuse(
        fmt::format("{} over {} nodes runs as one MPI job, which needs an MPI launcher across "
                    "pods (e.g. the Kubeflow MPI Operator): not rendered; use --target slurm",
                    m.product_name, nodes));
  engines::MultiNodeRequest req;
  req.kind = parsed.kind;
  req.engine_version = engine.version;
  req.argv = trial.argv;
  req.env = trial.env;
  req.nodes = nodes;
  req.gpus_per_node = per_node;
  req.port = k8s.rendezvous_port;
  m.kind = "LeaderWorkerSet";
  try {
    m.yaml = render_lws(c, m.name, labels, req, m.gpus_per_pod);
    m.secret_keys.assign(secret_keys.begin(), secret_keys.end());
  } catch (const std::invalid_argument& e) {
    throw refuse(e.what());
  }
  return m;
}

namespace {

/// The files an earlier render_k8s_study wrote into `dir`: trials.tsv and each manifest it lists (its first
/// column + ".yaml"); empty when `dir` has no trials.tsv.
std::set<std::string> rendered_files(const std::filesystem::path& dir) {
  std::set<std::string> owned;
  std::ifstream tsv(dir / "trials.tsv");
  std::string line;
  if (!tsv || !std::getline(tsv, line) || line.rfind("name\tkind\t", 0) != 0) return owned;
  owned.insert("trials.tsv");
  while (std::getline(tsv, line)) {
    const std::string name = line.substr(0, line.find('\t'));
    if (!name.empty() && name.find('/') == std::string::npos) owned.insert(name + ".yaml");
  }
  return owned;
}

}  // namespace

K8sRenderResult render_k8s_study(const Study& study, const std::filesystem::path& dir, TrialRunner planner) {
  namespace fs = std::filesystem;
  if (fs::exists(dir)) {
    if (!fs::is_directory(dir))
      throw std::invalid_argument(fmt::format("{} exists and is not a directory", dir.string()));
    // Only what an earlier render wrote is replaced: its trials.tsv and the manifests that file lists. Any
    // other file, a .yaml of the user's own included, makes the directory foreign: refused, nothing deleted.
    const std::set<std::string> owned = rendered_files(dir);
    for (const auto& f : fs::directory_iterator(dir))
      if (!owned.count(f.path().filename().string()))
        throw std::invalid_argument(fmt::format(
            "{} holds {}, which tune --render did not write{}: use an empty or new directory", dir.string(),
            common::printable(f.path().filename().string()),
            owned.empty() ? " (no trials.tsv of an earlier render)" : " (not listed in its trials.tsv)"));
    for (const auto& f : fs::directory_iterator(dir)) fs::remove(f.path());
  }
  fs::create_directories(dir);
  std::vector<TrialRequest> trials;
  TrialRunner capture = [&](const TrialRequest& r) {
    trials.push_back(r);
    return planner(r);
  };
  Evaluator ev(study, capture, RunnerKind::kK8sPlan, nullptr, {}, nullptr, nullptr, {});
  run_search(study, ev, &ev);
  K8sRenderResult out;
  // A file a scenario names (a dataset, a tokenizer file) is read by the benchmark container, from its image:
  // said once per file, since tune cannot tell whether the image has it.
  for (const auto& sc : study.scenarios)
    for (std::size_t i = 0; i < sc.args.size(); ++i) {
      std::string flag = sc.args[i], value;
      if (const auto eq = flag.find('='); flag.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = flag.substr(eq + 1);  // --dataset-path=x
        flag.resize(eq);
      } else if (i + 1 < sc.args.size()) {
        value = sc.args[i + 1];
      }
      if (flag == "--dataset-path" || (flag == "--tokenizer" && !value.empty() && fs::exists(value)))
        out.warnings.push_back(fmt::format(
            "scenario {}: {} {} is read inside the benchmark container: the bench image must have it at that "
            "path{}",
            sc.id, flag, value,
            fs::path(value).is_relative() ? " (relative to the container's working directory)" : ""));
    }
  std::ofstream tsv(dir / "trials.tsv");
  tsv << "name\tkind\tnodes\tgpus_per_pod\tconfig\ttrial_key\n";
  int index = 0;
  for (const auto& t : trials) {
    ++index;
    try {
      K8sManifest m = render_k8s_trial(study, t, index);
      std::ofstream(dir / (m.name + ".yaml")) << m.yaml;
      tsv << fmt::format("{}\t{}\t{}\t{}\t{}\t{}\n", m.name, m.kind, m.nodes, m.gpus_per_pod, t.config_key,
                         t.trial_key);
      for (const auto& k : m.secret_keys) out.secret_keys.insert(k);
      out.manifests.push_back(std::move(m));
    } catch (const std::invalid_argument& e) {
      out.skipped.emplace_back(t.trial_key, e.what());
    }
  }
  if (!tsv) throw std::runtime_error("cannot write " + (dir / "trials.tsv").string());
  return out;
}

}  // namespace servelab::tune
