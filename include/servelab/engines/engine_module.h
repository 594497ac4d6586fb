// servelab/engines: the engine table. Everything servelab knows about one engine (vLLM, SGLang,
// TensorRT-LLM) that code outside the engine's folder (src/engines/<engine>/) needs is a field or a hook of
// its EngineModule: how it is started (program words, model flag, container images, environment), its
// releases and their fitted families, parse/render, its option-file spelling, its own start-up errors,
// its multi-node launch and refusals, request admission, the twin's CPU-cost priors, pre-flight's version
// probe, the prefix-cache reset and the names of its `/metrics` quantities. Code elsewhere asks the module
// (engine_module(kind)) instead of branching on EngineKind, so a new engine is one more registered module:
// register_engine_module() checks that every hook is set (a missing one fails at start-up, never falls back
// to another engine).
//
// Thread-safety: engine_modules()/engine_module() may be called from any thread; register_engine_module()
// only at start-up, before any other thread uses the table.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/launch.h"
#include "servelab/engines/multinode.h"
#include "servelab/metrics/server_metric_names.h"

namespace servelab::engines {

/// One way an engine is started: `EXECUTABLE [SUBCOMMAND] args` or `python -m MODULE args`.
struct EngineProgram {
  std::string recorded;       ///< LaunchConfig::program for this form: "vllm serve", "trtllm-serve"
  std::string executable;     ///< argv[0]'s basename ("vllm", "trtllm-serve"); "" for `python -m MODULE`
  std::string subcommand;     ///< the word after the executable ("serve"); "" = none
  bool subcommand_optional;   ///< the subcommand may be left out (`trtllm-serve [serve]`)
  std::string python_module;  ///< MODULE of `python -m MODULE` ("sglang.launch_server"); "" otherwise
  std::string model_flag;     ///< how the model is passed: "" positional, "--model-path", "--model"
};

/// The engine's container images (`docker|podman run ... IMAGE`).
struct EngineImages {
  /// Words of an image's repository that make it the engine's own image, whose tag names the engine's
  /// release ("vllm" in vllm/vllm-openai, "tensorrt-llm"); an image naming none (nvidia/cuda) names none.
  std::vector<std::string> repository_words;
  /// Words of an image's repository whose entrypoint is the engine's canonical program (programs[0]), so
  /// that the words after the image are its arguments ("vllm-openai": `vllm serve`); empty = none.
  std::vector<std::string> entrypoint_words;
};

/// The engine's option file (vLLM/SGLang `--config`, TensorRT-LLM `--extra_llm_api_options`).
struct EngineConfigFile {
  const char* flag;                 ///< "--config", "--extra_llm_api_options"
  std::string LaunchConfig::*path;  ///< the LaunchConfig field holding its path
  bool keys_dashed;                 ///< CLI-option files: `a_b` keys are spelled `--a-b` (SGLang)
  bool false_as_no_flag;            ///< CLI-option files: `key: false` is `--no-key` (vLLM)
  /// Applies the file's YAML text to a launch (see engines.h apply_config_yaml). Throws
  /// std::invalid_argument naming the YAML line or key, EngineArgError for an option of no release.
  LaunchConfig (*apply)(const LaunchConfig& config, const std::string& yaml_text);
};

/// The fixed priors of the twin's CPU-cost fields that differ by engine (sim/calibration.h; the other
/// fields' priors are the same for every engine).
struct EngineCpuPrior {
  double cpu_step_ms;     ///< engine-loop CPU time per step (ms)
  double api_request_ms;  ///< API-server time per request (ms)
};

/// The oldest release of an engine that can load a model architecture: every earlier release predates the
/// architecture (or the engine's support for it) and stops at start-up. A bound, not a claim that
/// `first_release` itself loads it: entries come from publication dates, cited in `source`.
struct ArchitectureRelease {
  const char* architecture;   ///< config.json architectures[0] ("Qwen3_5ForConditionalGeneration")
  const char* first_release;  ///< "0.16.0": releases before it cannot load the architecture
  const char* source;         ///< why: publication dates and release dates, each tagged [recalled]/[src]
};

/// One modelled release of an engine and the key of its fitted parameters.
struct EngineRelease {
  std::string version;  ///< "0.13.0"
  /// Its fitted-parameter family ("vllm-0.11"), the key of the twin's fitted parameters; a release between
  /// modelled ones takes a neighbour's (launch.h ResolvedLaunch::version_family).
  std::string family;

  bool operator==(const EngineRelease&) const = default;
};

/// One engine module: its CLI parser, versions, resolution and every other engine fact (file comment).
/// Every hook must be set: register_engine_module() refuses a module with a null one.
struct EngineModule {
  EngineKind kind;
  const char* name;          ///< "vllm", "sglang", "trtllm" (engine_kind_name)
  const char* product_name;  ///< the project's own spelling: "vLLM", "SGLang", "TensorRT-LLM"
  /// The releases whose flags and defaults are modelled, oldest first, each with its fitted-parameter family.
  std::vector<EngineRelease> releases;
  const char* default_version;  ///< used when neither the study nor --engine-version says
  /// The ways it is started; programs[0] is the canonical one to_argv() writes for a config without one.
  std::vector<EngineProgram> programs;
  EngineImages images;
  /// Prefixes of the environment variables the engine reads ("VLLM_"): recorded into LaunchConfig::env
  /// (with NCCL_* and CUDA_VISIBLE_DEVICES, which every engine reads).
  std::vector<std::string> env_prefixes;
  /// Parses the arguments after the program words into `config` (kind, program, argv and
  /// engine_version already set) with that version's flags. Throws EngineArgError.
  void (*parse)(const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
                LaunchConfig& config);
  /// Arguments after the program words and model that re-create `config` relative to `bare` (a bare
  /// launch of the same model). Throws EngineArgError for a value the engine rejects.
  std::vector<std::string> (*render)(const LaunchConfig& config, const LaunchConfig& bare);
  /// Sets the engine's modelled environment variables for `config` in `env` (engines.h to_env).
  void (*render_env)(const LaunchConfig& config, std::map<std::string, std::string>& env);
  std::variant<ResolvedLaunch, LaunchFailure> (*resolve)(const LaunchConfig&, const model::ModelSpec&,
                                                         const hardware::ClusterSpec&);
  /// The engine's refusal of one request, or nullopt (launch.h check_request).
  std::optional<std::string> (*check_request)(const ResolvedLaunch& launch, int prompt_tokens,
                                              int max_tokens);
  /// The engine's own start-up error when the model's `heads` attention heads do not split over `tp`
  /// attention-TP ranks (quoted verbatim), or nullopt when the engine fails later with no message of its
  /// own (servelab words the refusal, "parallel.heads_divisible").
  std::optional<std::string> (*heads_indivisible_error)(int heads, int tp);
  EngineConfigFile config_file;
  /// GPUs a launch uses when DP-attention is on: true when the attention DP ranks split the TP group's
  /// GPUs (tp * pp), false when each DP rank is a replica of its own (tp * pp * dp).
  bool dp_attention_within_tp;
  /// The nodes a launch states with its own flags (LaunchConfig::stated_node_placement), or nullopt.
  std::optional<LaunchConfig::NodePlacement> (*stated_node_placement)(const LaunchConfig& config);
  /// Node `request.node_rank`'s part of a launch over request.nodes > 1 nodes (multinode.h), from the
  /// parsed single-node launch `config`, its argv (environment words removed) and environment.
  NodeLaunch (*node_launch)(const LaunchConfig& config, const MultiNodeRequest& request,
                            std::vector<std::string> argv, const std::map<std::string, std::string>& env);
  /// True when the multi-node launch is one MPI job started once from the head that owns every node's
  /// tasks (TensorRT-LLM), so a launcher that starts one process per node (tune's Slurm and Kubernetes
  /// targets) cannot run it.
  bool multi_node_one_job;
  EngineCpuPrior cpu_prior;
  /// Pre-flight's version probe: the Python package to import and print `__version__` of when the engine
  /// is started as `python -m ...` ("sglang"); "" = run `<program> --version`.
  const char* version_probe_package;
  /// The HTTP path that empties the prefix cache between scenarios ("/reset_prefix_cache"; "" = none).
  const char* prefix_cache_reset_path;
  /// The backend whose measured operator tables time this engine's kernels (AIConfigurator's
  /// systems/data/<gpu>/<op>/<backend>/<release>: "vllm", "sglang", "trtllm"); a fork of an engine names its
  /// parent's. "" = none measured (the twin's roofline, with a note).
  const char* op_tables;
  /// How bench reads the engine's `/metrics` (metrics/server_metric_names.h): its name there, the prefix
  /// of its Prometheus names, their names per quantity, the prefix-cache counts' unit, or the keys of its
  /// iteration-stats JSON. Must name the engine and either a prefix or iteration_stats (with entry_keys).
  metrics::ServerMetricNames server_metrics;
  /// Architectures that need a release newer than some modelled ones (resolve_launch refuses a launch on an
  /// earlier release; sim run's default release moves past it). Empty = no such bound known.
  std::vector<ArchitectureRelease> architecture_releases = {};
};

/// The engine table: the built-in modules (vLLM, SGLang, TensorRT-LLM) then any registered ones.
/// References stay valid for the life of the program.
const std::deque<EngineModule>& engine_modules();

/// The modules' `/metrics` names (EngineModule::server_metrics) in table order, an entry equal to an
/// earlier one left out (a module copied from another): what bench reads a scrape with.
std::vector<metrics::ServerMetricNames> server_metric_names();

/// The module of `kind`. Throws std::logic_error when none is registered for it.
const EngineModule& engine_module(EngineKind kind);

/// "warning: ..." when `version` is none of `kind`'s modelled releases (a newer release, or a typo), naming
/// the modelled releases whose flags and defaults stand in for it; nullopt for a modelled one. What `sim run`
/// prints for such an --engine-version.
std::optional<std::string> unmodelled_release_warning(EngineKind kind, const std::string& version);

/// The module named `name` ("vllm"), or nullptr.
const EngineModule* find_engine_module(const std::string& name);

/// The bound of `architecture` on `kind`'s releases, or nullptr when the module records none.
const ArchitectureRelease* architecture_release(EngineKind kind, const std::string& architecture);

/// The release a launch of `architecture` on `kind` is predicted for when no release is given: the module's
/// default_version, or, when that predates the architecture, the oldest modelled release at or after its
/// bound (still the default when none is: resolve_launch then refuses it, naming the bound).
std::string default_version_for(EngineKind kind, const std::string& architecture);

/// A launch parsed for the release the twin predicts it on, with its served model.
struct ReleasedLaunch {
  LaunchConfig config;     ///< parsed (option files applied) with that release's flags
  model::ModelSpec model;  ///< what `model_of` gave for it
  std::string note;        ///< why the release is not the one the launch states or the default ("" = it is)
  /// Lines for the user before the prediction (stderr), each starting "note: " or "warning: ": an engine
  /// image's tag that names no release (and the release predicted instead), --engine-version overriding
  /// the release a tag names, a release that is not modelled (and whose flags and defaults stand in).
  std::vector<std::string> notices;
};

/// Parses `argv` (parse_launch_command, then apply_config_files) for the release it states: `version`
/// (--engine-version), else an engine image's tag; a rolling tag (`latest`, `nightly`) for the newest
/// modelled release, with a note. A launch that states none is parsed for
/// default_version_for(kind, model.architecture): the module's default, or the oldest modelled release that
/// can load the model, with a note saying so; when the default release lacks one of its flags, the newest
/// modelled release that has them finds its model first; when no release parses it, the error is that of the
/// release its model is predicted on (found with the words no release knows left out), not the default's.
/// ReleasedLaunch::notices says what the user should know about the release. `model_of` gives the served
/// model of a parsed launch (loading its config). Throws as parse_launch_command / apply_config_files (the
/// error of the release predicted), and what `model_of` throws.
ReleasedLaunch parse_launch_for_model(const std::vector<std::string>& argv,
                                      const std::map<std::string, std::string>& env,
                                      const std::string& version,
                                      const std::function<model::ModelSpec(const LaunchConfig&)>& model_of);

/// Adds a module to the table (a new engine, or a test's fake one). Throws std::invalid_argument naming the
/// field when a name or hook is missing, or when the kind or name is already registered.
/// Thread-safety: start-up only (see the file comment).
void register_engine_module(EngineModule module);

}  // namespace servelab::engines
