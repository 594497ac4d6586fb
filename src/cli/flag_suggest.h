// servelab/cli (private): unknown long flags of a subcommand and the launch separator (the "did you mean"
// hint is bench::closest_long_flag).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace servelab::cli {

/// The first word of argv[first, last) that looks like a long option ("--name" or "--name=value") and is
/// not one of `app`'s, or "" when every one is known. Stops at a bare "--".
inline std::string first_unknown_flag(const CLI::App& app, int first, int last, char** argv) {
  for (int i = first; i < last; ++i) {
    const std::string t = argv[i];
    if (t == "--") break;
    if (t.size() <= 2 || t.rfind("--", 0) != 0) continue;
    const std::string name = t.substr(0, t.find('='));
    if (name == "--help") continue;
    if (app.get_option_no_throw(name) == nullptr) return name;
  }
  return "";
}

/// argv with the launch separator kept: CLI11 lets `--` end an unlimited list option's values and eats it
/// (App::_parse_arg), so `--goodput ttft:500 tpot:25 -- vllm serve Qwen/Qwen3-32B -tp 2` would leave the
/// launch to be parsed as the subcommand's own flags ("unexpected argument -tp"). When the last option
/// before the first `--` at or after `first` takes a list, the separator is doubled: the first ends its
/// values, the second marks the launch. Otherwise argv as it is. The pointers are argv's own.
inline std::vector<char*> keep_launch_separator(const CLI::App& app, int first, int argc, char** argv) {
  std::vector<char*> out(argv, argv + argc);
  int sep = first;
  while (sep < argc && std::string(argv[sep]) != "--") ++sep;
  if (sep == argc) return out;
  for (int i = sep - 1; i >= first; --i) {
    const std::string t = argv[i];
    if (t.size() < 2 || t[0] != '-') continue;  // a value
    const CLI::Option* o = app.get_option_no_throw(t.substr(0, t.find('=')));
    if (o != nullptr && o->get_items_expected_max() > 1) out.insert(out.begin() + sep, argv[sep]);
    break;
  }
  return out;
}

}  // namespace servelab::cli
