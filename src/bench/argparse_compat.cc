// servelab/bench: vLLM FlexibleArgumentParser + argparse long-flag reading (see argparse_compat.h).
#include "servelab/bench/argparse_compat.h"

#include <algorithm>

#include "servelab/bench/config.h"

namespace servelab::bench {

std::vector<std::string> normalize_long_flags(const std::vector<std::string>& args,
                                              const std::vector<std::string>& long_flags) {
  std::vector<std::string> out;
  out.reserve(args.size());
  bool positional_only = false;
  for (const std::string& arg : args) {
    if (positional_only || arg.size() <= 2 || arg.compare(0, 2, "--") != 0) {
      positional_only = positional_only || arg == "--";
      out.push_back(arg);
      continue;
    }
    // vLLM: `--key=value` -> key with '_' -> '-'; `--key` -> the whole token.
    const std::size_t eq = arg.find('=');
    std::string key = arg.substr(0, eq);
    std::replace(key.begin(), key.end(), '_', '-');
    const std::string rest = eq == std::string::npos ? std::string() : arg.substr(eq);
    const std::string token = key + rest;
    // argparse: the exact token, or the exact option before '=', wins over prefixes.
    const auto is_flag = [&long_flags](const std::string& s) {
      return std::find(long_flags.begin(), long_flags.end(), s) != long_flags.end();
    };
    if (is_flag(token) || is_flag(key)) {
      out.push_back(token);
      continue;
    }
    std::vector<std::string> matches;
    for (const std::string& flag : long_flags)
      if (flag.compare(0, key.size(), key) == 0) matches.push_back(flag);
    if (matches.size() > 1) {
      std::string list;
      for (const std::string& m : matches) list += (list.empty() ? "" : ", ") + m;
      throw ConfigError("ambiguous option: " + token + " could match " + list);
    }
    out.push_back(matches.size() == 1 ? matches.front() + rest : token);
  }
  return out;
}

std::vector<std::string> parse_bench_args(CLI::App& app, const std::vector<std::string>& args) {
  std::vector<std::string> flags;
  for (const CLI::Option* o : app.get_options())
    for (const std::string& name : o->get_lnames()) flags.push_back("--" + name);
  std::vector<std::string> reversed = normalize_long_flags(args, flags);
  std::reverse(reversed.begin(), reversed.end());  // CLI11 takes the argument vector in reverse order
  app.parse(reversed);
  return app.remaining();
}

namespace {

std::size_t edit_distance(const std::string& a, const std::string& b) {
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

}  // namespace

std::string closest_long_flag(const CLI::App& app, const std::string& flag) {
  const std::string name = flag.substr(0, flag.find('='));
  std::string best;
  std::size_t best_d = 3;
  for (const CLI::Option* o : app.get_options())
    for (const auto& l : o->get_lnames())
      if (const std::size_t d = edit_distance(name, "--" + l); d < best_d) best_d = d, best = "--" + l;
  return best;
}

const char* vllm_flag_not_implemented(const std::string& flag) {
  // vllm bench serve 0.13 flags (shared/reference/vllm-bench-serve.md) servelab's bench does not implement,
  // and why (new-user trial: a copied command line failed on "unrecognized arguments: --profile", which
  // reads like a typo).
  static const std::pair<const char*, const char*> kNotImplemented[] = {
      {"--profile",
       "it starts the server's torch profiler (POST /start_profile); servelab measures from the "
       "client only"},
      {"--plot-timeline", "it plots with plotly; --save-detailed writes the per-request times to plot from"},
      {"--timeline-itl-thresholds", "it colours --plot-timeline's plot, which servelab does not draw"},
      {"--plot-dataset-stats", "it plots with matplotlib; --save-detailed writes the per-request lengths"},
      {"--lora-modules",
       "it sends each request to a LoRA adapter drawn with Python's random; not implemented"},
      {"--lora-assignment", "it goes with --lora-modules, which servelab does not implement"},
      {"--enable-multimodal-chat",
       "multimodal chat content from a dataset is not implemented (random-mm is)"},
      {"--chat-template-kwargs", "servelab renders no dataset's chat template client-side with arguments"},
      {"--random-batch-size", "it batches prompts for embedding endpoints; servelab benchmarks generation"},
      {"--skip-tokenizer-init",
       "servelab counts every length with the tokenizer, as bench serve does by "
       "default"},
      {"--use-beam-search", "vLLM's OpenAI request functions refuse beam search too"},
  };
  const std::string name = flag.substr(0, flag.find('='));
  for (const auto& [f, why] : kNotImplemented)
    if (name == f) return why;
  return nullptr;
}

std::string unrecognized_arguments(const CLI::App& app, const std::vector<std::string>& extras) {
  std::string joined, hint;
  for (const auto& e : extras) joined += (joined.empty() ? "" : " ") + e;
  for (const auto& e : extras) {
    if (e.rfind("--", 0) != 0) continue;
    if (const char* why = vllm_flag_not_implemented(e))
      hint = " (" + e.substr(0, e.find('=')) +
             " is a vllm bench serve flag servelab does not implement: " + why + ")";
    else if (const std::string best = closest_long_flag(app, e); !best.empty())
      hint = " (did you mean " + best + "?)";
    break;
  }
  return "unrecognized arguments: " + joined + hint;
}

}  // namespace servelab::bench
