// Launch command dispatch, shell splitting/quoting, environment, to_argv/render_command.
#include <algorithm>
#include <charconv>

#include "engines/engines_detail.h"
#include "engines/version.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"

namespace servelab::engines {
namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

[[noreturn]] void not_a_launch(const std::vector<std::string>& argv) {
  throw std::invalid_argument("not an engine launch command: '" + joined(argv) +
                              "' (expected `vllm serve`, `python3 -m sglang.launch_server`, `sglang serve`, "
                              "`python3 -m vllm.entrypoints.openai.api_server` or `trtllm-serve`, optionally "
                              "after `env`, NAME=value, "
                              "`mpirun ...`, `srun ...` or `docker run ... IMAGE`)");
}

std::string shell_quote(const std::string& s) {
  if (s.empty()) return "''";
  bool safe = std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) ||
           std::string("@%+=:,./-_").find(c) != std::string::npos;
  });
  if (safe) return s;
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// Program words for a config (its recorded program, else the canonical one for its engine).
std::vector<std::string> program_words(const LaunchConfig& c) {
  std::string program = c.program;
  if (program.empty()) {
    program = c.kind == EngineKind::kVllm     ? "vllm serve"
              : c.kind == EngineKind::kSglang ? "python3 -m sglang.launch_server"
                                              : "trtllm-serve";
  }
  std::vector<std::string> words;
  std::size_t start = 0;
  while (start < program.size()) {
    auto sp = program.find(' ', start);
    if (sp == std::string::npos) sp = program.size();
    words.push_back(program.substr(start, sp - start));
    start = sp + 1;
  }
  return words;
}

// How the model is passed for a program.
std::vector<std::string> model_words(const LaunchConfig& c) {
  if (c.kind == EngineKind::kSglang) return {"--model-path", c.model};
  if (c.program.find("api_server") != std::string::npos) return {"--model", c.model};
  return {c.model};
}

}  // namespace

namespace detail {

std::string format_number(double value) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // Python str(1.0) == "1.0"
  return s;
}

void record_env(const std::map<std::string, std::string>& env, LaunchConfig& config) {
  static const char* kPrefixes[] = {"VLLM_", "SGLANG_", "SGL_", "TRTLLM_", "TLLM_", "NCCL_"};
  for (const auto& [k, v] : env) {
    bool keep = k == "CUDA_VISIBLE_DEVICES";
    for (const char* p : kPrefixes) keep = keep || k.rfind(p, 0) == 0;
    if (keep) config.env[k] = v;
  }
}

}  // namespace detail

LaunchConfig parse_launch_command(const std::vector<std::string>& argv_in,
                                  const std::map<std::string, std::string>& env_in,
                                  const std::string& version) {
  // Leading `NAME=value` words (and an `env` program) set environment variables, as in a shell
  // command line or render_command(); they override `env_in`. A launcher in front (mpirun, srun, docker
  // run) is kept as the config's wrapper, and the environment it passes is recorded too.
  std::map<std::string, std::string> env = env_in;
  const detail::LaunchWrapper wrap = detail::strip_launch_wrappers(argv_in, env);
  std::vector<std::string> argv(argv_in.begin() + static_cast<std::ptrdiff_t>(wrap.first), argv_in.end());
  if (wrap.supplies_program) argv.insert(argv.begin(), {"vllm", "serve"});
  if (argv.empty()) {
    if (!wrap.words.empty()) not_a_launch(argv_in);
    throw std::invalid_argument("empty launch command");
  }
  LaunchConfig c;
  c.argv = argv;
  c.wrapper = wrap.words;
  c.wrapper_supplies_program = wrap.supplies_program;
  if (!version.empty()) {
    EngineVersion::parse(version);  // throws std::invalid_argument naming a malformed version
    c.engine_version = version;
  }
  detail::record_env(env, c);
  auto parse_with = [&](EngineKind kind, const std::vector<std::string>& args) {
    c.kind = kind;
    engine_module(kind).parse(args, env, c);
  };
  const std::string prog = detail::program_basename(argv[0]);
  std::vector<std::string> rest;
  if (prog == "vllm") {
    if (argv.size() < 2 || argv[1] != "serve") not_a_launch(argv);
    c.program = "vllm serve";
    rest.assign(argv.begin() + 2, argv.end());
    parse_with(EngineKind::kVllm, rest);
  } else if (prog == "sglang") {
    if (argv.size() < 2 || argv[1] != "serve") not_a_launch(argv);
    c.program = "sglang serve";
    rest.assign(argv.begin() + 2, argv.end());
    parse_with(EngineKind::kSglang, rest);
  } else if (prog == "trtllm-serve") {
    std::size_t start = 1;
    if (argv.size() > 1 && argv[1] == "serve") start = 2;
    c.program = "trtllm-serve";
    rest.assign(argv.begin() + static_cast<std::ptrdiff_t>(start), argv.end());
    parse_with(EngineKind::kTrtllm, rest);
  } else if (detail::is_python(prog)) {
    // python [interpreter options] -m MODULE args...
    std::size_t i = 1;
    std::string module;
    while (i < argv.size()) {
      const std::string& a = argv[i];
      if (a == "-m" && i + 1 < argv.size()) {
        module = argv[i + 1];
        i += 2;
        break;
      }
      if (a.rfind("-m", 0) == 0 && a.size() > 2) {
        module = a.substr(2);
        ++i;
        break;
      }
      if (a == "-X" || a == "-W") {
        i += 2;
        continue;
      }
      if (a.size() > 1 && a[0] == '-') {
        ++i;
        continue;
      }
      break;
    }
    rest.assign(argv.begin() + static_cast<std::ptrdiff_t>(std::min(i, argv.size())), argv.end());
    if (module == "sglang.launch_server") {
      c.program = "python3 -m sglang.launch_server";
      parse_with(EngineKind::kSglang, rest);
    } else if (module == "vllm.entrypoints.openai.api_server") {
      c.program = "python3 -m vllm.entrypoints.openai.api_server";
      parse_with(EngineKind::kVllm, rest);
    } else {
      not_a_launch(argv);
    }
  } else {
    not_a_launch(argv);
  }
  return c;
}

std::vector<std::string> split_command_line(const std::string& command) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  for (std::size_t i = 0; i < command.size(); ++i) {
    char ch = command[i];
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else if (ch == '\'') {
      auto end = command.find('\'', i + 1);
      if (end == std::string::npos)
        throw std::invalid_argument("unterminated ' quote in command: " + command);
      cur += command.substr(i + 1, end - i - 1);
      i = end;
      in_word = true;
    } else if (ch == '"') {
      std::size_t j = i + 1;
      for (; j < command.size() && command[j] != '"'; ++j) {
        if (command[j] == '\\' && j + 1 < command.size() &&
            std::string("$`\"\\\n").find(command[j + 1]) != std::string::npos) {
          if (command[j + 1] != '\n') cur += command[j + 1];
          ++j;
        } else {
          cur += command[j];
        }
      }
      if (j >= command.size()) throw std::invalid_argument("unterminated \" quote in command: " + command);
      i = j;
      in_word = true;
    } else if (ch == '\\') {
      if (i + 1 < command.size()) {
        if (command[i + 1] != '\n') cur += command[i + 1];
        ++i;
      }
      in_word = true;
    } else {
      cur += ch;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

std::map<std::string, std::string> parse_env_assignments(const std::vector<std::string>& assignments) {
  std::map<std::string, std::string> env;
  for (const auto& a : assignments) {
    auto eq = a.find('=');
    if (eq == std::string::npos || eq == 0)
      throw std::invalid_argument("environment entry '" + a + "' is not NAME=value");
    std::string raw = a.substr(eq + 1);
    auto words = split_command_line(raw);
    if (words.size() > 1)
      throw std::invalid_argument("environment entry '" + a + "': value has unquoted whitespace");
    env[a.substr(0, eq)] = words.empty() ? "" : words[0];
  }
  return env;
}

std::map<std::string, std::string> to_env(const LaunchConfig& c) {
  std::map<std::string, std::string> env = c.env;
  const char* dg_key = c.kind == EngineKind::kVllm     ? "VLLM_USE_DEEP_GEMM"
                       : c.kind == EngineKind::kSglang ? "SGLANG_ENABLE_JIT_DEEPGEMM"
                                                       : "TRTLLM_DG_ENABLED";
  if (!c.deep_gemm)
    env[dg_key] = "0";
  else if (env.count(dg_key) || (c.kind == EngineKind::kSglang && env.count("SGL_ENABLE_JIT_DEEPGEMM")))
    env[dg_key] = "1";
  // vLLM before 0.11.1 has no --all2all-backend: the all-to-all travels in the environment.
  if (c.kind == EngineKind::kVllm && !c.moe_a2a_backend.empty() && !c.engine_version.empty() &&
      !version_at_least(c.engine_version, "0.11.1"))
    env["VLLM_ALL2ALL_BACKEND"] = c.moe_a2a_backend;
  if (c.kind == EngineKind::kVllm && !c.is_explicit("--attention-backend")) {
    if (c.attention_backend.empty())
      env.erase("VLLM_ATTENTION_BACKEND");
    else
      env["VLLM_ATTENTION_BACKEND"] = c.attention_backend;
  }
  return env;
}

std::vector<std::string> to_argv(const LaunchConfig& c) {
  std::vector<std::string> argv = c.wrapper;
  if (!c.wrapper_supplies_program) {
    const auto prog = program_words(c);
    argv.insert(argv.end(), prog.begin(), prog.end());
  }
  std::vector<std::string> model = model_words(c);
  argv.insert(argv.end(), model.begin(), model.end());
  std::vector<std::string> bare_argv = program_words(c);
  bare_argv.insert(bare_argv.end(), model.begin(), model.end());
  LaunchConfig bare = parse_launch_command(bare_argv, {}, c.engine_version);
  std::vector<std::string> rest = c.kind == EngineKind::kVllm     ? detail::render_vllm(c, bare)
                                  : c.kind == EngineKind::kSglang ? detail::render_sglang(c, bare)
                                                                  : detail::render_trtllm(c, bare);
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

std::string render_command(const LaunchConfig& c) {
  std::string out;
  for (const auto& [k, v] : to_env(c)) out += k + "=" + shell_quote(v) + " ";
  std::vector<std::string> argv = to_argv(c);
  for (std::size_t i = 0; i < argv.size(); ++i) out += (i ? " " : "") + shell_quote(argv[i]);
  return out;
}

}  // namespace servelab::engines
