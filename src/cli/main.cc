// servelab: one binary, subcommands registered by src/cli/*_command.cc.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>

#include "cli/command_registry.h"
#include "cli/flag_suggest.h"
#include "servelab/bench/argparse_compat.h"

namespace servelab::cli {
std::vector<Command>& command_registry() {
  static std::vector<Command> commands;
  return commands;
}
bool register_command(Command command) {
  command_registry().push_back(std::move(command));
  return true;
}
}  // namespace servelab::cli

int main(int argc, char** argv) {
  using namespace servelab::cli;
  CLI::App app{
      "servelab: find the highest-throughput way to serve an LLM on your GPUs, and prove it.\n"
      "  servelab tokenize    count tokens exactly as the server's Hugging Face tokenizer does\n"
      "  servelab bench serve drop-in `vllm bench serve`\n"
      "  servelab sim         the engine twin: predict or serve an engine launch, any supported model and "
      "GPU\n"
      "  servelab tune        run a study (STUDY.toml) on real engines or the twin",
      "servelab"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "servelab 0.1.0");
  auto& commands = command_registry();
  std::stable_sort(commands.begin(), commands.end(),
                   [](const Command& a, const Command& b) { return a.order < b.order; });
  for (auto& c : commands) c.setup(app);
  // An unknown first word is named as such (CLI11 alone says "A subcommand is required").
  const auto subs = app.get_subcommands([](CLI::App*) { return true; });
  if (argc > 1 && argv[1][0] != '-' &&
      std::none_of(subs.begin(), subs.end(), [&](CLI::App* sub) { return sub->check_name(argv[1]); })) {
    std::string valid;
    for (const CLI::App* sub : subs)
      if (!sub->get_group().empty())
        valid += (valid.empty() ? "" : ", ") + sub->get_name();  // not the hidden
    std::fprintf(stderr, "servelab: unknown subcommand '%s'; valid subcommands: %s (servelab --help)\n",
                 argv[1], valid.c_str());
    return static_cast<int>(CLI::ExitCodes::ExtrasError);
  }
  // A subcommand that takes an engine launch after `--` (sim run, sim serve): a mistyped flag of its own
  // before the `--` is named (CLI11 alone would blame the launch words after it). Without a `--` the
  // subcommand's own check says to add one.
  CLI::App* leaf = &app;
  std::string path = "servelab";
  int at = 1;
  for (; at < argc; ++at) {
    const auto next = leaf->get_subcommands([&](CLI::App* s) { return s->check_name(argv[at]); });
    if (argv[at][0] == '-' || next.empty()) break;
    leaf = next.front();
    path += " " + leaf->get_name();
  }
  const bool separated =
      std::any_of(argv + at, argv + argc, [](const char* a) { return std::string(a) == "--"; });
  if (leaf != &app && separated && leaf->get_option_no_throw("launch") != nullptr) {
    if (const std::string bad = first_unknown_flag(*leaf, at, argc, argv); !bad.empty()) {
      const std::string best = servelab::bench::closest_long_flag(*leaf, bad);
      std::fprintf(stderr, "%s: unknown option %s%s before the engine's launch command (%s --help)\n",
                   path.c_str(), bad.c_str(), best.empty() ? "" : (" (did you mean " + best + "?)").c_str(),
                   path.c_str());
      return 2;
    }
  }
  std::vector<char*> args(argv, argv + argc);
  if (leaf != &app && separated && leaf->get_option_no_throw("launch") != nullptr)
    args = keep_launch_separator(*leaf, at, argc, argv);
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    // Help and --version exit 0; every usage error exits 2, as argparse (and so vLLM's own CLI) does,
    // not with CLI11's per-kind codes (105 for a value out of range, ...).
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const ExitRequest& r) {
    return r.code;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
