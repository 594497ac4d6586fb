// servelab/cli: the registry of subcommands. Each `src/cli/<name>_command.cc` registers itself with
// SERVELAB_REGISTER_COMMAND, so adding a subcommand never edits main.cc.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace servelab::cli {

/// A subcommand: `setup` adds it (and its options/callback) to the root app. `order` sorts `--help`.
struct Command {
  std::string name;
  int order = 100;
  std::function<void(CLI::App& root)> setup;
};

/// All registered commands. Thread-safety: filled during static initialisation, read-only afterwards.
std::vector<Command>& command_registry();

/// Registers a command at static-initialisation time; returns true (for the static initialiser).
bool register_command(Command command);

/// Exit code a subcommand asks for; thrown from a callback to end the program with `code` after the
/// message (if any) was printed to stderr. Used instead of std::exit so destructors run.
struct ExitRequest {
  int code = 0;
};

}  // namespace servelab::cli

#define SERVELAB_CLI_CONCAT2(a, b) a##b
#define SERVELAB_CLI_CONCAT(a, b) SERVELAB_CLI_CONCAT2(a, b)
/// Usage at namespace scope in a .cc compiled into the servelab executable:
///   SERVELAB_REGISTER_COMMAND("tokenize", 10, [](CLI::App& root) { ... });
#define SERVELAB_REGISTER_COMMAND(NAME, ORDER, SETUP)                            \
  static const bool SERVELAB_CLI_CONCAT(servelab_cmd_registered_, __COUNTER__) = \
      ::servelab::cli::register_command(::servelab::cli::Command{NAME, ORDER, SETUP})
