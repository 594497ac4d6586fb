// Launch command dispatch, shell splitting/quoting, environment, to_argv/render_command.
#include <algorithm>
#include <charconv>

#include "engines/engines_detail.h"
#include "engines/version.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {
namespace {

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

// The programs of every registered engine, as a user types them: "`vllm serve`, ... or `trtllm-serve`".
std::string expected_programs() {
  std::vector<std::string> forms;
  for (const auto& m : engine_modules())
    for (const auto& p : m.programs)
      forms.push_back("`" + (p.python_module.empty() ? p.recorded : "python3 -m " + p.python_module) + "`");
  std::string out;
  for (std::size_t i = 0; i < forms.size(); ++i)
    out += (i == 0 ? "" : i + 1 == forms.size() ? " or " : ", ") + forms[i];
  return out;
}

[[noreturn]] void not_a_launch(const std::vector<std::string>& argv) {
  // A launch quoted as one argument ('vllm serve m -tp 2') reaches here as one word with spaces.
  const bool one_quoted_word = argv.size() == 1 && argv[0].find_first_of(" \t") != std::string::npos;
  throw std::invalid_argument(
      "not an engine launch command: '" + joined(argv) + "' (expected " + expected_programs() +
      ", optionally after `env`, NAME=value, `mpirun ...`, `srun ...` or `docker run ... IMAGE`)" +
      (one_quoted_word ? "; it came as one quoted argument: give the command unquoted after --, as you would "
                         "type it to start the engine"
                       : ""));
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

// The module's way of starting that `c` was launched with (its recorded program), else its canonical one.
const EngineProgram& program_of(const LaunchConfig& c) {
  const EngineModule& m = engine_module(c.kind);
  for (const auto& p : m.programs)
    if (p.recorded == c.program) return p;
  return m.programs.front();
}

// Program words for a config (its recorded program, else the canonical one for its engine).
std::vector<std::string> program_words(const LaunchConfig& c) {
  const std::string program = c.program.empty() ? program_of(c).recorded : c.program;
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
  const std::string& flag = program_of(c).model_flag;
  if (!flag.empty()) return {flag, c.model};
  // Given as `--model M` where a positional would do (vllm/vllm-openai images are documented so): kept.
  if (c.is_explicit("--model")) return {"--model", c.model};
  return {c.model};
}

// The index of the first argument after `python [interpreter options] -m MODULE`, and MODULE ("" when
// there is no -m).
std::size_t python_module_args(const std::vector<std::string>& argv, std::string& module) {
  std::size_t i = 1;
  while (i < argv.size()) {
    const std::string& a = argv[i];
    if (a == "-m" && i + 1 < argv.size()) {
      module = argv[i + 1];
      return i + 2;
    }
    if (a.rfind("-m", 0) == 0 && a.size() > 2) {
      module = a.substr(2);
      return i + 1;
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
  return std::min(i, argv.size());
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
  for (const auto& [k, v] : env) {
    bool keep = k == "CUDA_VISIBLE_DEVICES" || k.rfind("NCCL_", 0) == 0;
    for (const auto& m : engine_modules())
      for (const auto& p : m.env_prefixes) keep = keep || k.rfind(p, 0) == 0;
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
  std::map<std::string, std::string> launch_env;  // the variables the launch line itself sets
  const detail::LaunchWrapper wrap = detail::strip_launch_wrappers(argv_in, launch_env);
  std::map<std::string, std::string> env = env_in;
  for (const auto& [k, v] : launch_env) env[k] = v;
  std::vector<std::string> argv(argv_in.begin() + static_cast<std::ptrdiff_t>(wrap.first), argv_in.end());
  argv.insert(argv.begin(), wrap.program.begin(), wrap.program.end());
  if (argv.empty()) {
    if (!wrap.words.empty()) not_a_launch(argv_in);
    throw std::invalid_argument("empty launch command");
  }
  LaunchConfig c;
  c.argv = argv;
  c.wrapper = wrap.words;
  c.wrapper_program_words = wrap.program.size();
  c.image_version = detail::image_tag_version(wrap.image);
  if (!version.empty()) {
    EngineVersion::parse(version);  // throws std::invalid_argument naming a malformed version
    c.engine_version = version;
  } else {
    c.engine_version = c.image_version;  // the image's release, else (empty) the module's default
  }
  detail::record_env(env, c);
  for (const auto& [k, v] : launch_env)
    if (!c.env.count(k)) c.dropped_env.push_back(k);
  // The engine is the module one of whose programs the command starts with (engine_module.h).
  const std::string prog = detail::program_basename(argv[0]);
  std::string module;
  const std::size_t after_module = detail::is_python(prog) ? python_module_args(argv, module) : 0;
  for (const EngineModule& m : engine_modules()) {
    for (const EngineProgram& p : m.programs) {
      std::size_t start = 0;
      if (!p.executable.empty() && prog == p.executable) {
        start = 1;
        if (!p.subcommand.empty()) {
          const bool has = argv.size() > 1 && argv[1] == p.subcommand;
          if (!has && !p.subcommand_optional) not_a_launch(argv);
          start += has ? 1 : 0;
        }
      } else if (!p.python_module.empty() && !module.empty() && module == p.python_module) {
        start = after_module;
      } else {
        continue;
      }
      c.kind = m.kind;
      c.program = p.recorded;
      try {
        m.parse(std::vector<std::string>(argv.begin() + static_cast<std::ptrdiff_t>(start), argv.end()), env,
                c);
      } catch (EngineArgError& e) {
        e.release = c.engine_version.empty() ? m.default_version : c.engine_version;
        throw;
      }
      return c;
    }
  }
  not_a_launch(argv);
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
  engine_module(c.kind).render_env(c, env);
  return env;
}

std::vector<std::string> to_argv(const LaunchConfig& c) {
  std::vector<std::string> argv = c.wrapper;
  const auto prog = program_words(c);
  argv.insert(argv.end(),
              prog.begin() + static_cast<std::ptrdiff_t>(std::min(c.wrapper_program_words, prog.size())),
              prog.end());
  std::vector<std::string> model = model_words(c);
  argv.insert(argv.end(), model.begin(), model.end());
  std::vector<std::string> bare_argv = program_words(c);
  bare_argv.insert(bare_argv.end(), model.begin(), model.end());
  LaunchConfig bare = parse_launch_command(bare_argv, {}, c.engine_version);
  std::vector<std::string> rest = engine_module(c.kind).render(c, bare);
  argv.insert(argv.end(), rest.begin(), rest.end());
  return argv;
}

std::string render_command(const LaunchConfig& c) {
  // A variable the wrapper passes itself (docker -e K=V, mpirun -x K=V) is not written again in front.
  std::map<std::string, std::string> wrapper_env;
  detail::strip_launch_wrappers(c.wrapper, wrapper_env);
  std::string out;
  for (const auto& [k, v] : to_env(c)) {
    const auto w = wrapper_env.find(k);
    if (w == wrapper_env.end() || w->second != v) out += k + "=" + shell_quote(v) + " ";
  }
  std::vector<std::string> argv = to_argv(c);
  for (std::size_t i = 0; i < argv.size(); ++i) out += (i ? " " : "") + shell_quote(argv[i]);
  return out;
}

}  // namespace servelab::engines
