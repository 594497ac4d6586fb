// Launch wrappers in front of an engine command: `env`, NAME=value words, `mpirun`/`mpiexec` (TensorRT-LLM's
// documented start and InferenceMAX's: `mpirun -n 1 --oversubscribe --allow-run-as-root trtllm-serve ...`),
// `srun`, and `docker|podman run ... IMAGE <engine command>`.
#include <optional>
#include <regex>

#include "engines/engines_detail.h"
#include "engines/version.h"
#include "servelab/engines/engine_module.h"

namespace servelab::engines::detail {
namespace {

/// A shell-style `NAME=value` word.
bool is_assignment(const std::string& word) {
  static const std::regex kAssignment("[A-Za-z_][A-Za-z0-9_]*=.*");
  return std::regex_match(word, kAssignment);
}

/// `K=V` into env (a bare `K` is a name to pass through: nothing to record).
void assign(const std::string& kv, std::map<std::string, std::string>& env) {
  if (!is_assignment(kv)) return;
  const auto eq = kv.find('=');
  env[kv.substr(0, eq)] = kv.substr(eq + 1);
}

/// The option value of `--name=value` or `name value` forms: `a` is argv[i]; advances i past a separate
/// value. Empty when `a` is not `name`.
bool option_value(const std::vector<std::string>& argv, std::size_t& i, const std::string& name,
                  std::string& value) {
  const std::string& a = argv[i];
  if (a == name && i + 1 < argv.size()) {
    value = argv[++i];
    return true;
  }
  if (a.rfind(name + "=", 0) == 0) {
    value = a.substr(name.size() + 1);
    return true;
  }
  return false;
}

/// Whether a `docker|podman run` option word stands alone: a flag that takes no value (docker run --help,
/// podman run --help: --rm, -d, -it, ...) or an option written with its value (`--ipc=host`, `-p8000:8000`).
/// Every other option's value is the next word (`--gpus all`, `-p 8000:8000`).
bool container_option_alone(const std::string& word) {
  static const std::regex kShortFlags("-[dtiPq]+");
  static const char* kLong[] = {"--rm",
                                "--detach",
                                "--init",
                                "--interactive",
                                "--tty",
                                "--privileged",
                                "--publish-all",
                                "--quiet",
                                "--read-only",
                                "--no-healthcheck",
                                "--oom-kill-disable",
                                "--sig-proxy",
                                "--help",
                                "--replace",
                                "--rmi",
                                "--no-hosts",
                                "--env-host",
                                "--disable-content-trust"};
  if (word.find('=') != std::string::npos || std::regex_match(word, kShortFlags)) return true;
  if (word.size() > 2 && word[1] != '-') return true;  // -p8000:8000
  for (const char* f : kLong)
    if (word == f) return true;
  return false;
}

/// The canonical program words of the engine whose image's entrypoint starts it (`vllm serve` for
/// vllm/vllm-openai), or none.
std::vector<std::string> entrypoint_program(const std::string& image) {
  for (const auto& m : engine_modules())
    for (const auto& word : m.images.entrypoint_words)
      if (image.find(word) != std::string::npos) {
        const EngineProgram& p = m.programs.front();
        std::vector<std::string> words = {p.executable};
        if (!p.subcommand.empty()) words.push_back(p.subcommand);
        return words;
      }
  return {};
}

/// `docker|podman run [options] IMAGE [command]` from argv[i] (at "docker"): records the environment its
/// options pass (-e/--env K=V) into env and its words (through the image) and image into w, and the program
/// the container supplies (--entrypoint's value, or the engine's canonical program for an image whose
/// entrypoint starts it, EngineImages::entrypoint_words, given no engine command). Returns the index after
/// the image, or nullopt when no image follows the options.
std::optional<std::size_t> strip_container_run(const std::vector<std::string>& argv, std::size_t i,
                                               std::map<std::string, std::string>& env, LaunchWrapper& w) {
  const std::size_t start = i;
  std::string entrypoint;
  for (i += 2; i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-'; ++i) {
    std::string v;
    if (option_value(argv, i, "-e", v) || option_value(argv, i, "--env", v)) {
      assign(v, env);
    } else if (option_value(argv, i, "--entrypoint", v)) {
      entrypoint = v;
    } else if (argv[i].rfind("-e", 0) == 0 && argv[i].rfind("--", 0) != 0) {
      assign(argv[i].substr(2), env);  // -eK=V
    } else if (!container_option_alone(argv[i])) {
      ++i;  // the option's value
    }
  }
  if (i >= argv.size()) return std::nullopt;
  w.image = argv[i++];
  w.words.insert(w.words.end(), argv.begin() + static_cast<std::ptrdiff_t>(start),
                 argv.begin() + static_cast<std::ptrdiff_t>(i));
  const bool command_follows =
      i < argv.size() && (is_engine_program(argv[i]) || program_basename(argv[i]) == "env");
  if (!entrypoint.empty())
    w.program = {entrypoint};
  else if (!command_follows)
    // An image whose entrypoint is the engine's program (EngineImages::entrypoint_words): the words after
    // the image are its arguments.
    w.program = entrypoint_program(w.image);
  // No engine command after the "image" (an option this table does not know took it as its value): the
  // caller's older reading (the image is the last word before the engine program) is tried instead.
  if (w.program.empty() && (!command_follows || is_engine_program(w.image))) return std::nullopt;
  return i;
}

}  // namespace

std::string engine_image_tag(const std::string& image) {
  const auto colon = image.rfind(':');
  if (colon == std::string::npos || image.find('/', colon) != std::string::npos) return "";
  // Only an engine's own image names the engine's release (nvidia/cuda:12.4.1 names CUDA's).
  const std::string repo = image.substr(0, colon);
  bool engine_image = false;
  for (const auto& m : engine_modules())
    for (const auto& word : m.images.repository_words)
      engine_image = engine_image || repo.find(word) != std::string::npos;
  return engine_image ? image.substr(colon + 1) : "";
}

std::string image_tag_version(const std::string& image) {
  std::string tag = engine_image_tag(image);
  if (!tag.empty() && tag[0] == 'v') tag.erase(0, 1);
  tag = tag.substr(0, tag.find('-'));
  try {
    EngineVersion::parse(tag);
  } catch (const std::invalid_argument&) {
    return "";
  }
  return tag;
}

std::string program_basename(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool is_python(const std::string& basename) {
  static const std::regex kPython("python[0-9.]*");
  return std::regex_match(basename, kPython);
}

bool is_engine_program(const std::string& word) {
  const std::string b = program_basename(word);
  if (is_python(b)) return true;
  for (const auto& m : engine_modules())
    for (const auto& p : m.programs)
      if (!p.executable.empty() && b == p.executable) return true;
  return false;
}

LaunchWrapper strip_launch_wrappers(const std::vector<std::string>& argv,
                                    std::map<std::string, std::string>& env) {
  LaunchWrapper w;
  std::size_t i = 0;
  while (i < argv.size() && w.program.empty()) {
    const std::string prog = program_basename(argv[i]);
    if (is_assignment(argv[i])) {
      assign(argv[i++], env);
      continue;
    }
    if (prog == "env") {
      ++i;
      while (i < argv.size() && argv[i].size() > 1 && argv[i][0] == '-') i += argv[i] == "-u" ? 2 : 1;
      continue;
    }
    if ((prog == "docker" || prog == "podman") && i + 1 < argv.size() && argv[i + 1] == "run") {
      LaunchWrapper container = w;
      std::map<std::string, std::string> container_env = env;
      if (auto next = strip_container_run(argv, i, container_env, container)) {
        w = std::move(container);
        env = std::move(container_env);
        i = *next;
        continue;
      }
    }
    const bool mpi = prog == "mpirun" || prog == "mpiexec" || prog == "orterun";
    const bool slurm = prog == "srun";
    const bool container = prog == "docker" || prog == "podman";
    if (!mpi && !slurm && !(container && i + 1 < argv.size() && argv[i + 1] == "run")) break;
    const std::size_t start = i;
    i += container ? 2 : 1;
    // The wrapper's options up to the engine program; the environment they give the engine is recorded
    // (mpirun -x K=V, srun --export=K=V,..., docker -e/--env K=V, when the container's options did not
    // parse).
    while (i < argv.size() && !is_engine_program(argv[i]) && program_basename(argv[i]) != "env") {
      std::string v;
      if ((mpi && option_value(argv, i, "-x", v)) ||
          (container && (option_value(argv, i, "-e", v) || option_value(argv, i, "--env", v)))) {
        assign(v, env);
      } else if (slurm && option_value(argv, i, "--export", v)) {
        std::size_t from = 0;
        while (true) {
          const auto comma = v.find(',', from);
          assign(v.substr(from, comma == std::string::npos ? std::string::npos : comma - from), env);
          if (comma == std::string::npos) break;
          from = comma + 1;
        }
      } else if (container && argv[i][0] != '-') {
        w.image = argv[i];  // the image is the last word before the engine program (option values precede)
      }
      ++i;
    }
    w.words.insert(w.words.end(), argv.begin() + static_cast<std::ptrdiff_t>(start),
                   argv.begin() + static_cast<std::ptrdiff_t>(i));
  }
  w.first = i;
  return w;
}

}  // namespace servelab::engines::detail
