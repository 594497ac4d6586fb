// servelab/bench: reading `bench serve` arguments as vLLM's parser does. vLLM parses with
// FlexibleArgumentParser (vllm/utils/argparse_utils.py, 0.13), an argparse.ArgumentParser that first
// rewrites every `--key[=value]` token with '_' -> '-' in the key, then leaves the rest to Python
// argparse, whose `allow_abbrev=True` default accepts any unambiguous prefix of a long flag
// (argparse.py `_parse_optional` / `_get_option_tuples`, CPython 3.11/3.12).
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace servelab::bench {

/// Rewrites the long-flag tokens of `args` (argv after the subcommand, in order) so that a parser
/// knowing exactly `long_flags` (each with its leading "--", e.g. "--num-prompts", in registration order)
/// sees the full flag names. Per token, as vLLM + argparse do:
///  - after a token "--" nothing is touched (argparse: all positional);
///  - a token "--key" or "--key=value" (more than two characters) gets '_' -> '-' in `key` (vLLM);
///  - an exact flag, or an exact flag before '=', stays as it is (an exact match always wins, so
///    "--tokenizer" is --tokenizer even though "--tokenizer-mode" exists);
///  - otherwise, if exactly one flag starts with `key`, `key` is replaced by that flag ("--num-prompt 10"
///    -> "--num-prompts 10", "--num-p=10" -> "--num-prompts=10");
///  - if several do: throws ConfigError "ambiguous option: --random could match --random-input-len,
///    --random-output-len, ..." (argparse's message: the token as rewritten, matches in `long_flags` order);
///  - if none does, it stays (to be reported as unrecognized).
/// Tokens not starting with "--" (values, "-1", "-h") are unchanged.
std::vector<std::string> normalize_long_flags(const std::vector<std::string>& args,
                                              const std::vector<std::string>& long_flags);

/// Parses `args` (argv after `serve`, in order) into the options of `app` (normally registered by
/// add_bench_flags, with CLI11's --help) after normalize_long_flags over every long name of `app`.
/// Returns the arguments nobody consumed (unknown flags and their values), in order, when `app` allows
/// extras. Throws ConfigError (ambiguous prefix) or CLI::ParseError (help, bad value, bad choice,
/// unexpected extras when `app` does not allow them).
std::vector<std::string> parse_bench_args(CLI::App& app, const std::vector<std::string>& args);

/// The long option of `app` closest to `flag` ("--name", any "=value" dropped) within 2 edits (Levenshtein),
/// as "--name"; "" when none is that close.
std::string closest_long_flag(const CLI::App& app, const std::string& flag);

/// Why servelab's bench does not implement `flag` ("--profile" or "--profile=x"), a flag of vllm bench serve
/// 0.13; nullptr for any other flag.
const char* vllm_flag_not_implemented(const std::string& flag);

/// argparse's message for arguments nobody consumed (`extras`, in order, as parse_bench_args returns them):
/// "unrecognized arguments: --num-promptz 200 (did you mean --num-prompts?)", the hint for the first long
/// flag among them that is within 2 edits of one of `app`'s, or why servelab does not implement it when it
/// is a flag of vllm bench serve (vllm_flag_not_implemented).
std::string unrecognized_arguments(const CLI::App& app, const std::vector<std::string>& extras);

}  // namespace servelab::bench
