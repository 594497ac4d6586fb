// servelab/engines: real engine launch commands (vLLM 0.10.2-0.24.0, SGLang 0.5.3-0.5.14, TensorRT-LLM
// 1.0.0-1.2.0rc5; flags per release) parsed into LaunchConfig and rendered back to argv. The resolution of a
// launch for a model and a cluster (defaults by version, refusals, layout, scheduler, kernels) is
// launch.h's resolve_launch, the one implementation of every engine rule.
//
// Thread-safety: every function here is pure (no shared state); call from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "servelab/engines/engine_config.h"

namespace servelab::engines {

/// A launch command the engine itself would refuse while parsing its arguments or environment.
/// what() is the engine's own final error line, e.g.
///   vLLM/SGLang (argparse): "vllm: error: unrecognized arguments: --foo" (reported by the top-level
///                           `vllm` parser), "vllm serve: error: argument --max-num-seqs: invalid int value:
///                           'x'", "launch_server.py: error: unrecognized arguments: --foo"
///   TensorRT-LLM (click):   "Error: No such option: --foo"
///                           "Error: Invalid value for '--tp_size': 'x' is not a valid integer."
///   Python exceptions:      "ValueError: invalid literal for int() with base 10: 'false'"
///   (VLLM_USE_DEEP_GEMM)
struct EngineArgError : std::runtime_error {
  EngineArgError(EngineKind kind, std::string message);
  EngineKind kind;
  /// The release whose flags the launch was checked against (set by parse_launch_command: the version
  /// asked, an image's tag, else the module's default; "" when thrown elsewhere).
  std::string release;
  /// The launch's words the release does not know (argparse's "unrecognized arguments", click's "No such
  /// option"), as written; empty for every other error.
  std::vector<std::string> unrecognized;
};

/// Parses a real launch command and its environment, as the engine's own CLI does.
///
/// `argv` is the command exactly as a shell would pass it (argv[0] = program), optionally preceded by
/// `env` and/or `NAME=value` words (as render_command() writes them; they override `env`). Recognised forms:
///   vllm serve [MODEL] ...                                     (vLLM, FlexibleArgumentParser)
///   python[3[.x]] -m sglang.launch_server ... / sglang serve ...  (SGLang, argparse)
///   trtllm-serve [serve] MODEL ...                             (TensorRT-LLM, click)
/// argv[0] may be a path (/usr/bin/python3, ./venv/bin/vllm). Argparse engines accept aliases,
/// `--flag=value`, unique-prefix abbreviations (allow_abbrev=True), vLLM's `--no-<flag>`, `--snake_case`
/// keys, `--json-arg.key value` and `-O3`; click (TRT-LLM) accepts exact names and `--flag=value` only.
/// JSON values (--speculative-config, --compilation-config) are parsed. Real flags servelab does not
/// model are accepted and listed in LaunchConfig::unmodelled_options.
/// `env` is the process environment; every VLLM_*, SGLANG_*, SGL_*, TRTLLM_*, TLLM_*, NCCL_*,
/// CUDA_VISIBLE_DEVICES entry is copied to LaunchConfig::env and the modelled ones are applied
/// (VLLM_USE_DEEP_GEMM, VLLM_ATTENTION_BACKEND, SGLANG_ENABLE_JIT_DEEPGEMM, TRTLLM_DG_ENABLED).
///
/// The result holds explicit values plus the engine defaults that depend on nothing but the engine
/// (see vllm_defaults.h, sglang_defaults.h, trtllm_defaults.h); knobs whose default depends on the model
/// or GPU stay unset/0 until resolve_launch().
/// Throws EngineArgError (unknown flag, bad value, bad choice, missing value) with the engine's own message
/// format; std::invalid_argument when argv is not one of the launch forms above.
///
/// `version` is the engine release the command is for ("0.11.0", "0.5.3.post3", "1.2.0rc1"; "" = the
/// module's default version, engine_module(kind).default_version). Each flag exists in the releases its
/// spec names (cli_parser.h FlagSpec::versions): a flag the release lacks fails as that release's CLI
/// would (argparse "unrecognized arguments", click "No such option"). Releases between or beyond the
/// modelled ones use the flags of their position in the order (EngineVersion). Throws
/// std::invalid_argument for a malformed version.
LaunchConfig parse_launch_command(const std::vector<std::string>& argv,
                                  const std::map<std::string, std::string>& env = {},
                                  const std::string& version = "");

/// Splits a shell command line into argv (POSIX sh word splitting: whitespace, '...', "...", \ escapes;
/// no expansion). Throws std::invalid_argument on an unterminated quote.
std::vector<std::string> split_command_line(const std::string& command);

/// Parses environment assignments "NAME=value" (value may be shell-quoted: VLLM_ATTENTION_BACKEND="X").
/// Throws std::invalid_argument naming the entry when it has no '=' or an empty name.
std::map<std::string, std::string> parse_env_assignments(const std::vector<std::string>& assignments);

/// Renders a config back to a launch argv that parse_launch_command() maps to an equal config
/// (modelled fields, unmodelled options and model; env is not part of argv: see LaunchConfig::env).
/// Emits the engine's canonical spelling, only for values that differ from what a bare
/// `<program> MODEL` parses to, so tune can change a field and render the command.
/// Program: config.program (as launched), else "vllm serve", "python3 -m sglang.launch_server",
/// "trtllm-serve". Throws EngineArgError only if the config holds a value the engine rejects.
std::vector<std::string> to_argv(const LaunchConfig& config);

/// The environment to launch `config` with: config.env plus the modelled engine variables set to the
/// config's values (VLLM_USE_DEEP_GEMM / SGLANG_ENABLE_JIT_DEEPGEMM / TRTLLM_DG_ENABLED = "0" when
/// deep_gemm is false; vLLM's VLLM_ATTENTION_BACKEND = attention_backend unless --attention-backend was
/// used). parse_launch_command(to_argv(c), to_env(c)) reproduces c.
std::map<std::string, std::string> to_env(const LaunchConfig& config);

/// to_argv() joined into one shell-safe line (arguments quoted with '...' where needed), env assignments
/// (sorted) first: `VLLM_USE_DEEP_GEMM=0 vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8`.
std::string render_command(const LaunchConfig& config);

/// Applies an engine option file (the caller reads it: LaunchConfig::config_file /
/// extra_llm_api_options name the path):
///   vLLM/SGLang `--config FILE.yaml`: each key is a CLI option (`tensor_parallel_size: 8` ->
///     `--tensor-parallel-size 8`; true -> bare flag; false -> `--no-` (vLLM); lists -> several values;
///     mappings -> JSON), inserted before the command-line options so the command line wins; the command
///     is re-parsed, so a bad key fails as the engine would (EngineArgError).
///   TRT-LLM `--extra_llm_api_options FILE.yaml`: LLM API arguments that override the CLI —
///     tensor/pipeline/moe_expert_parallel_size, enable_attention_dp (dp = tp), max_batch_size,
///     max_num_tokens, max_seq_len, enable_chunked_prefill, kv_cache_config.{free_gpu_memory_fraction,
///     dtype, enable_block_reuse, tokens_per_block}, cuda_graph_config.{max_batch_size, batch_sizes,
///     enable_padding} (null disables CUDA graphs), moe_config.backend, speculative_config.{decoding_type,
///     num_nextn_predict_layers}, disable_overlap_scheduler, stream_interval; other keys go to
///     config_file_options.
/// YAML: the subset engine files use (block mappings, scalars, [flow] and block lists of scalars).
/// Throws std::invalid_argument naming the YAML line or key on anything else.
LaunchConfig apply_config_yaml(const LaunchConfig& config, const std::string& yaml_text);

/// Reads the option file the launch names (vLLM/SGLang --config, TRT-LLM --extra_llm_api_options) and
/// applies it with apply_config_yaml; `config` unchanged when it names none. Throws std::runtime_error
/// naming the flag and path when the file cannot be read or its YAML is not understood, EngineArgError when
/// a key is not an option of that engine release. Reads the file system; otherwise pure.
LaunchConfig apply_config_files(const LaunchConfig& config);

/// YAML text for TRT-LLM's --extra_llm_api_options holding the knobs its CLI cannot express
/// (enable_attention_dp, cuda_graph_config, kv_cache_config.dtype/enable_block_reuse/tokens_per_block,
/// moe_config.backend, speculative_config) plus config_file_options. tune writes it to a file and sets
/// extra_llm_api_options to the path; apply_config_yaml(config, text) reproduces those fields.
std::string render_extra_llm_api_options(const LaunchConfig& config);

/// When a launch fails.
enum class FailurePhase { kStartup, kRuntime };

/// "startup", "runtime".
const char* failure_phase_name(FailurePhase phase);

/// A launch the engine refuses (start-up) or that dies under load (run time).
struct LaunchFailure {
  FailurePhase phase = FailurePhase::kStartup;
  std::string message;  ///< the engine's text (verbatim == true) or servelab's description (false)
  /// true when `message` is exactly the engine's output / the reason recorded in the reference study
  /// (seed-measurements.json); false for servelab's description of a rule whose exact text is unverified.
  bool verbatim = false;
  std::string rule;  ///< short id of the rule that fired, e.g. "vllm.attention_backend.invalid"
};

}  // namespace servelab::engines
