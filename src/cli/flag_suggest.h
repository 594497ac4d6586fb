// servelab/cli (private): "did you mean" for a mistyped flag of a subcommand.
#pragma once

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace servelab::cli {

/// Levenshtein distance between `a` and `b` (characters).
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

/// The long option of `app` closest to `flag` ("--name", any "=value" dropped) within 2 edits, as
/// "--name"; "" when none is that close.
inline std::string closest_flag(const CLI::App& app, const std::string& flag) {
  const std::string name = flag.substr(0, flag.find('='));
  std::string best;
  std::size_t best_d = 3;
  for (const CLI::Option* o : app.get_options())
    for (const auto& l : o->get_lnames())
      if (const std::size_t d = edit_distance(name, "--" + l); d < best_d) best_d = d, best = "--" + l;
  return best;
}

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
