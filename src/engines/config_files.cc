// Engine option files: reading the file a launch names (EngineModule::config_file) and the CLI-option
// files of vLLM and SGLang (`--config FILE.yaml`: YAML keys are CLI options, spelled by the module). An
// engine with another kind of file applies it in its own folder (trtllm/trtllm_config_file.cc).
#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "engines/cli_parser.h"
#include "engines/engine_hooks.h"
#include "engines/engines_detail.h"
#include "engines/yaml_subset.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"

namespace servelab::engines {
namespace {

using nlohmann::json;

// vLLM FlexibleArgumentParser._pull_args_from_config / SGLang's config merger: each key becomes
// `--key`; true booleans become the bare flag, false ones `--no-key` (vLLM) or nothing (SGLang
// store_true); lists become `--key v1 v2`; mappings JSON text. [unverified: SGLang key spelling]
std::pair<std::vector<std::string>, std::vector<std::string>> yaml_to_args(const json& doc,
                                                                           const EngineConfigFile& spelling) {
  std::vector<std::string> front, lists;
  for (const auto& [key, value] : doc.items()) {
    std::string flag = "--" + key;
    if (spelling.keys_dashed) std::replace(flag.begin(), flag.end(), '_', '-');
    if (value.is_null()) continue;
    if (value.is_boolean()) {
      if (value.get<bool>())
        front.push_back(flag);
      else if (spelling.false_as_no_flag)
        front.push_back("--no-" + flag.substr(2));
    } else if (value.is_array()) {
      lists.push_back(flag);
      for (const auto& item : value) lists.push_back(detail::yaml_scalar_text(item));
    } else if (value.is_object()) {
      front.push_back(flag + "=" + value.dump());
    } else {
      front.push_back(flag + "=" + detail::yaml_scalar_text(value));
    }
  }
  return {front, lists};
}

}  // namespace

namespace detail {

LaunchConfig apply_cli_config_yaml(const LaunchConfig& config, const std::string& yaml_text) {
  json doc = parse_yaml_subset(yaml_text);
  const EngineConfigFile& spelling = engine_module(config.kind).config_file;
  if (!doc.is_object())
    throw std::invalid_argument(std::string(spelling.flag) + ": the YAML document must be a mapping");
  // Config-file options first, so that the command line overrides them (list-valued options go last,
  // where they cannot swallow a positional model).
  auto [front, lists] = yaml_to_args(doc, spelling);
  // The program's words ("vllm serve": 2), or through `-m MODULE` for a Python launch.
  std::size_t program_words =
      config.program.empty()
          ? 1
          : 1 + static_cast<std::size_t>(std::count(config.program.begin(), config.program.end(), ' '));
  for (std::size_t i = 1; i < config.argv.size() && config.program.rfind("python", 0) == 0; ++i) {
    if (config.argv[i] == "-m") {
      program_words = i + 2;
      break;
    }
    if (config.argv[i].rfind("-m", 0) == 0) {
      program_words = i + 1;
      break;
    }
  }
  std::vector<std::string> argv(
      config.argv.begin(),
      config.argv.begin() + static_cast<std::ptrdiff_t>(std::min(program_words, config.argv.size())));
  argv.insert(argv.end(), front.begin(), front.end());
  argv.insert(argv.end(),
              config.argv.begin() + static_cast<std::ptrdiff_t>(std::min(program_words, config.argv.size())),
              config.argv.end());
  argv.insert(argv.end(), lists.begin(), lists.end());
  LaunchConfig out = parse_launch_command(argv, config.env, config.engine_version);
  out.argv = config.argv;
  return out;
}

}  // namespace detail

LaunchConfig apply_config_yaml(const LaunchConfig& config, const std::string& yaml_text) {
  return engine_module(config.kind).config_file.apply(config, yaml_text);
}

LaunchConfig apply_config_files(const LaunchConfig& config) {
  const EngineConfigFile& file = engine_module(config.kind).config_file;
  const std::string& path = config.*file.path;
  if (path.empty()) return config;
  const char* flag = file.flag;
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(std::string(flag) + " " + path +
                             ": cannot read the file (the engine would not start without it)");
  std::ostringstream text;
  text << in.rdbuf();
  try {
    return apply_config_yaml(config, text.str());
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(std::string(flag) + " " + path + ": " + e.what());
  }
}

}  // namespace servelab::engines
