// servelab/engines private: emulation of the two CLI parsers the engines use — Python argparse (vLLM,
// SGLang; Python 3.12 semantics) and click 8.1 (TensorRT-LLM) — over a table of flag specs, plus the
// Python value conversions (int(), float(), vLLM's human_readable_int) and message helpers (repr()).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "engines/version.h"
#include "servelab/engines/engine_config.h"

namespace servelab::engines::detail {

/// How an option consumes its value(s).
enum class ValueKind {
  kStoreTrue,     ///< argparse store_true / click is_flag: no value
  kBoolOptional,  ///< argparse BooleanOptionalAction: --x / --no-x
  kInt,           ///< Python int()
  kHumanInt,      ///< vLLM human_readable_int: 32k = 32000, 32K = 32768, 1m, 1M, ...
  kFloat,         ///< Python float()
  kString,        ///< any string
  kJson,          ///< JSON text (json.loads)
  kStringList,    ///< nargs='+' strings
  kIntList,       ///< nargs='+' ints
};

/// Applies parsed, validated values to a config. Booleans receive {"true"} or {"false"}.
using ApplyFn = void (*)(LaunchConfig&, const std::vector<std::string>& values);

/// One option of an engine CLI.
struct FlagSpec {
  std::vector<std::string> names;  ///< option strings in the engine's declaration order; names[0] canonical
  ValueKind kind = ValueKind::kString;
  std::vector<std::string> choices;  ///< allowed values (empty = any)
  ApplyFn apply = nullptr;           ///< nullptr = real option, not modelled (recorded in unmodelled_options)
  /// Releases that have the option; outside it the engine's CLI rejects it as unknown.
  VersionRange versions = {};
  /// Where the range comes from ("" when the option exists in every modelled release).
  const char* versions_source = "";
};

/// One row of an engine's flag table: option strings, value kind, how it applies (nullptr: a real option
/// the twin does not model) and the allowed values (empty: any).
inline FlagSpec F(std::vector<std::string> names, ValueKind kind, ApplyFn apply = nullptr,
                  std::vector<std::string> choices = {}) {
  return FlagSpec{std::move(names), kind, std::move(choices), apply};
}

/// The specs of `specs` that exist in `version` (declaration order kept).
std::vector<FlagSpec> specs_in(const std::vector<FlagSpec>& specs, const EngineVersion& version);

/// One option occurrence after parsing.
struct ParsedFlag {
  const FlagSpec* spec = nullptr;
  std::vector<std::string> values;  ///< validated values ({"true"}/{"false"} for booleans)
  bool negated = false;             ///< --no-x form
};

/// Result of parsing.
struct ParsedArgs {
  std::vector<ParsedFlag> flags;         ///< in command-line order
  std::vector<std::string> positionals;  ///< consumed positionals
};

/// argparse emulation settings.
struct ArgparseSettings {
  std::string prog;  ///< "vllm serve", "launch_server.py"
  EngineKind kind = EngineKind::kVllm;
  std::size_t max_positionals = 0;  ///< positional slots (vLLM serve: model_tag nargs='?')
  bool allow_abbrev = true;
  const FlagSpec* required = nullptr;  ///< a required option (SGLang --model-path) or nullptr
  /// Program named in "unrecognized arguments" errors when it differs from `prog`: with argparse
  /// subparsers (`vllm serve`) the top-level parser ("vllm") reports leftover arguments.
  std::string unrecognized_prog;
};

/// Parses `args` (without the program words) as argparse.ArgumentParser.parse_args would.
/// Throws EngineArgError("<prog>: error: ...") with argparse's messages.
ParsedArgs parse_argparse(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args,
                          const ArgparseSettings& settings);

/// Parses `args` as a click 8.1 command with one required positional argument named `argument_name`.
/// Throws EngineArgError("Error: ...") with click's messages.
ParsedArgs parse_click(const std::vector<FlagSpec>& specs, const std::vector<std::string>& args,
                       const std::string& argument_name, EngineKind kind);

/// Applies parsed flags: modelled ones through their ApplyFn, the others appended to
/// config.unmodelled_options; every flag's canonical name goes to config.explicit_flags.
void apply_parsed(LaunchConfig& config, const ParsedArgs& parsed);

/// Python int(text) (whitespace, sign, '_' between digits); nullopt when Python would raise.
std::optional<long long> python_int(const std::string& text);
/// Python float(text) (also inf/nan); nullopt when Python would raise.
std::optional<double> python_float(const std::string& text);
/// vLLM 0.13 `human_readable_int` (vllm/engine/arg_utils.py): plain ints, or a number with a suffix
/// k/m/g/t (decimal, may be fractional) or K/M/G/T (binary, integer only). nullopt on error.
std::optional<long long> human_readable_int(const std::string& text);
/// Python repr() of a str.
std::string python_repr(const std::string& text);
/// difflib.get_close_matches(word, possibilities, n=3, cutoff=0.6) (SequenceMatcher ratio).
std::vector<std::string> close_matches(const std::string& word,
                                       const std::vector<std::string>& possibilities);

/// Helpers for ApplyFn implementations (values already validated by the parser).
int to_int(const std::string& text);
double to_double(const std::string& text);
bool to_bool(const std::string& text);

}  // namespace servelab::engines::detail
