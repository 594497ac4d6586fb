// servelab/tune: the study file (STUDY.toml), parsed. One readable file says what a study measures:
// model, hardware, engines, the knob space, the scenarios, the objective, constraints, the search strategy,
// repeats and the target. See studies/deepseek-v3.2-h200x8.toml for a complete, commented example.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/tune/study/k8s_spec.h"
#include "servelab/tune/study/load_spec.h"

namespace servelab::tune {

/// A study file that cannot be used. `what()` names the file, the TOML path (e.g. `knobs.layout.values[2]`)
/// and the line, then the problem.
struct StudyError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The study cannot start in this setup (its directory is in use or holds results, a pre-flight check
/// failed): what() names the problem and the fix. Nothing was launched and nothing was changed.
struct TuneSetupError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Where trials run: the engine twin in-process (`twin`, every number "predicted"), real engines on
/// this machine (`local`), or real engines in Slurm jobs, one job per trial (`slurm`, docs/cluster.md).
enum class Target { kTwin, kLocal, kSlurm };
const char* target_name(Target target);

/// How one engine is launched and checked.
struct EngineSpec {
  std::string name;  ///< study-wide id ("vllm", "sglang", "trtllm")
  engines::EngineKind kind =
      engines::EngineKind::kVllm;          ///< engine family (TOML: "vllm" | "sglang" | "trtllm")
  std::string version;                     ///< e.g. "0.13.0"
  std::vector<std::string> command;        ///< launch template; placeholders {model} {port} {host}
  std::vector<std::string> base_flags;     ///< flags every config of this engine carries
  std::map<std::string, std::string> env;  ///< environment every config of this engine carries
  std::vector<std::string> ready_paths = {"/health", "/v1/models"};  ///< all must answer HTTP 200
  double ready_timeout_s = 1800.0;  ///< start-up budget before "not ready in time"
  double stop_grace_s = 30.0;       ///< SIGTERM → SIGKILL grace period
  /// Check every rendered command with the engine's own CLI rules (engines::parse_launch_command) before
  /// launch. Turn off for wrapper scripts the parser does not know.
  bool check_flags = true;
};

/// One value of a knob. Scalar knobs carry their value in field "value"; layouts carry tp, dp, ep,
/// dp_attention, dcp. `label` names it in reports and trial keys ("tp8-dp8-dpattn", "32768").
struct KnobValue {
  std::string label;
  std::map<std::string, std::string> fields;  ///< field → value as text ("8", "true", "fp8_e4m3")
  bool is_default = false;                    ///< renders nothing: the engine's own default
};

/// A piece of an engine's rendering of a knob: emitted when `when` holds for the value's fields.
/// `when` grammar: "" (always) | "field" (true/non-zero/non-empty) | "!field" | "field OP literal" with OP
/// one of == != > < >= <=. `{field}` in flags/env values is replaced by the field's text.
struct RenderPart {
  std::string when;
  std::vector<std::string> flags;
  std::map<std::string, std::string> env;
  std::string reject;  ///< if set: the value is invalid on this engine, with this reason
};

/// Kind of a knob's values, checked when the study is read.
enum class KnobType { kLayout, kInt, kFloat, kString, kBool };

/// A typed knob, named once, with one rendering per engine. An engine without a rendering cannot take a
/// non-default value of the knob (it is skipped by greedy, pruned by grid, with that reason).
struct Knob {
  std::string name;  ///< e.g. "parallelism", "context_length"
  KnobType type = KnobType::kString;
  std::string description;
  std::vector<KnobValue> values;  ///< values[0] is the baseline value unless `baseline` names another
  std::string baseline;           ///< label of the baseline value
  std::map<std::string, std::vector<RenderPart>> render;  ///< engine name → parts
  /// engine name → where its render is written ("study.toml:18: knobs[0] (layout).render.vllm"), the prefix
  /// of a message about it; no entry for a knob not read from a file.
  std::map<std::string, std::string> render_origin;
  /// Lower values of this (int/float) knob need less GPU memory (a smaller chunked-prefill size, a lower
  /// memory fraction, fewer running requests): when a value of another knob runs out of memory or is refused
  /// at start-up, greedy retries it once with this knob one value lower than the best-so-far's.
  bool lower_saves_memory = false;
  /// A knob whose name is a credential (common::is_credential_name: api_key, hf_token): its value labels
  /// are "<redacted-N>" (N = the value's 1-based position; `baseline` may name either form) and this holds
  /// each value's field text with its label, so that redact_study_secrets can hide them where they are
  /// rendered. Empty for any other knob.
  std::vector<std::pair<std::string, std::string>> secret_values;
  /// Label → index in `values`, filled by the study parser (a lookup per config was a scan of every value:
  /// planning 30,000 values of one knob was quadratic). May be empty or stale (a hand-built Knob): users
  /// check values[i].label and fall back to a scan.
  std::unordered_map<std::string, std::size_t> value_index;
};

/// A `bench serve` argument set: one workload.
struct Scenario {
  std::string id;  ///< e.g. "sharegpt-1000"
  std::string description;
  std::vector<std::string> args;  ///< bench serve flags, after substituting {data_dir}
  double weight = 1.0;            ///< weight in the geometric-mean objective
  /// `load = {concurrency = [...], request_rate = [...]}`: this scenario's load sweep instead of [load]
  /// (`load = {}` sweeps nothing on it).
  std::optional<LoadSpec> load;
  /// Where `args` are written ("study.toml:47: scenarios[0].args"), the prefix of an error about them; ""
  /// for a scenario not read from a file.
  std::string args_origin;
};

/// What "better" means.
struct Objective {
  enum class Kind { kThroughput, kGoodput, kGeomean };
  Kind kind = Kind::kThroughput;
  std::string metric = "Total Token throughput (tok/s)";  ///< vLLM console label, maximised
  std::map<std::string, double> slo_ms;  ///< goodput SLOs: "ttft" | "tpot" | "e2el" → ms (vLLM --goodput)
  std::vector<std::string> scenarios;    ///< scenarios the search optimises on (geomean: weighted by weight)
};

/// A bound a config must meet to be chosen (e.g. P99 TTFT ≤ 30000 ms on every search scenario).
struct Constraint {
  std::string metric;  ///< vLLM console label
  std::optional<double> min, max;
};

enum class Strategy { kGreedy, kGrid, kTwinGuided };
const char* strategy_name(Strategy strategy);
/// The strategy of a study that names none: twin-guided on the local target (the twin ranks, the node
/// measures only what can win), greedy on the twin (predictions are cheap and greedy's path explains the
/// gains).
Strategy default_strategy(Target target);

struct SearchSpec {
  Strategy strategy = Strategy::kGreedy;
  std::vector<std::string> knob_order;  ///< greedy order (default: file order)
  int top_k = 5;                        ///< twin-guided: configs measured on the target
  int max_trials = 2000;                ///< grid/twin-guided refuse bigger spaces
  double min_gain_pct = 0.5;            ///< with one run per point, a gain must exceed this to count
  bool ablation = true;                 ///< check each kept knob on every scenario (recommendation rule)
  bool strategy_set = false;            ///< the study file names `strategy` (else default_strategy(target))
  /// Twin-guided: the twin's error band on the objective, ± percent, used for configs whose prediction
  /// carries no band of its own (kBandTokSMetric); 0 = none stated (then only the top_k are measured).
  double twin_band_pct = 0.0;
};

/// How the recommended command is chosen from the ablation of the best config (see docs/study.md).
enum class RecommendationRule {
  kTradeOff,      ///< keep every significant knob, unless it loses on a scenario and gains < threshold_pct
  kObjective,     ///< keep every knob that is significant on the objective
  kNoRegression,  ///< keep a knob only if it is significant and loses on no scenario
};
const char* recommendation_rule_name(RecommendationRule rule);

struct RecommendationSpec {
  RecommendationRule rule = RecommendationRule::kTradeOff;
  /// trade_off: a knob whose removal costs at least this much on the objective (percent) is kept even when
  /// it loses on a secondary scenario; both commands are then shown.
  double threshold_pct = 5.0;
};

struct Hardware {
  /// GPU model (required, no default): a row of the GPU table (hardware::gpu_by_name) or, for a GPU the table
  /// lacks (local/Slurm targets only), any name with gpu_memory_gb given.
  std::string gpu;
  int gpu_count = 8;  ///< GPUs in all: nodes x gpus_per_node
  /// Nodes of gpus_per_node GPUs: a layout using more GPUs than one node holds spans
  /// ceil(used / gpus_per_node) nodes (the twin's NxMxGPU form; tune --target k8s renders a
  /// LeaderWorkerSet for it). [hardware] may give any two of gpu_count, nodes, gpus_per_node; gpu_count
  /// alone splits as the twin's --hardware COUNTxGPU does (16 x H100 = 2 nodes of 8).
  int nodes = 1;
  int gpus_per_node = 8;
  /// Memory per GPU, GB (10^9 bytes): derived from the GPU table (GpuSpec::memory_bytes / 1e9, the one
  /// source; H200: 150.8); the study's own value only for a GPU the table lacks.
  double gpu_memory_gb = 0.0;
  std::string interconnect = "NVLink";
};

/// The `[slurm]` section: how each trial becomes a Slurm job (target `slurm`, docs/cluster.md). A trial
/// that needs more GPUs than `gpus_per_node` gets ceil(gpus / gpus_per_node) nodes.
struct SlurmSpec {
  std::string partition;          ///< sbatch --partition ("" = the cluster's default partition)
  std::string account;            ///< sbatch --account ("" = none)
  std::string qos;                ///< sbatch --qos ("" = none)
  std::string gres_name = "gpu";  ///< the GRES the GPUs are requested as: --gres=<gres_name>:<per node>
  int gpus_per_trial = 0;         ///< GPUs one trial uses (0 = hardware.gpu_count)
  /// gpus_per_trial was given in [slurm]: every trial asks for exactly that (a test cluster, GPUs shared
  /// out differently); else each trial asks for what its own launch uses (tune::slurm_allocation).
  bool gpus_per_trial_given = false;
  int gpus_per_node = 8;           ///< GPUs of one node of the partition
  double time_limit_min = 60;      ///< sbatch --time of every trial, minutes (a job past it: "time_limit")
  int max_parallel = 4;            ///< most trial jobs queued or running at once
  std::vector<std::string> setup;  ///< shell lines run in the batch script first (module load, conda, ...)
  std::vector<std::string> sbatch_args;  ///< extra sbatch options, one per element ("--constraint=h100")
  std::string servelab;                  ///< servelab executable on the nodes ("" = this tune's own binary)
  double poll_interval_s = 10;           ///< how often tune asks squeue about its jobs, s
  bool requeue = true;                   ///< sbatch --requeue: a preempted or failed-node job runs again
  bool configured = false;               ///< the study has a [slurm] section

  int gpus(int hardware_gpu_count) const { return gpus_per_trial > 0 ? gpus_per_trial : hardware_gpu_count; }
  /// Nodes one trial allocates: ceil(gpus / gpus_per_node).
  int nodes(int hardware_gpu_count) const {
    return (gpus(hardware_gpu_count) + gpus_per_node - 1) / gpus_per_node;
  }
};

/// The whole study.
struct Study {
  std::string name;  ///< also the output directory name under out/
  std::string goal;
  std::string model;  ///< model id ("deepseek-ai/DeepSeek-V3.2")
  /// [model] config: the model's config.json for the twin ({data_dir} substituted; "" = resolve `model`
  /// from the data dir, the built-ins and the Hugging Face cache). Its ModelOpt quantization beside it is
  /// read as engines read it: hf_quant_config.json for a config.json, NAME_hf_quant_config.json for a
  /// NAME_config.json (the layout of model-configs/aic).
  std::string model_config;
  Hardware hardware;
  std::vector<EngineSpec> engines;
  std::vector<Knob> knobs;
  std::vector<Scenario> scenarios;
  std::vector<std::string> bench_common_args;  ///< added to every scenario (backend, endpoint, ...)
  /// Where bench_common_args are written ("study.toml:27: bench.common_args"), the prefix of an error that
  /// they cause; "" when not read from a file.
  std::string bench_common_args_origin;
  std::vector<std::string> warmup_args;  ///< bench args of the warm-up run (local target)
  Objective objective;
  std::vector<Constraint> constraints;
  LoadSpec load;                 ///< [load]: load points of every scenario without its own
  SloSpec slo;                   ///< [slo]: targets of the SLO search (empty: none)
  std::optional<CostSpec> cost;  ///< [cost]
  /// [[objectives]]: what the report shows, the first one optimised by the search; empty = the [objective]
  /// table alone (max of its metric).
  std::vector<ObjectiveSpec> objectives;
  SearchSpec search;
  RecommendationSpec recommendation;
  int repeats = 1;
  Target target = Target::kTwin;
  std::string host = "127.0.0.1";
  int port = 8000;
  SlurmSpec slurm;  ///< the [slurm] section (target slurm)
  /// Rehearsal: every scenario's --num-prompts was multiplied by this (scale_prompts); 1 = the study as
  /// written. Recorded with the results, shown in the report, and a resumed run must use the same value.
  double prompts_scale = 1.0;
  K8sSpec k8s;              ///< [k8s]: images and volumes of `tune --target k8s --render DIR`
  std::string source_text;  ///< the TOML as read (stored in the results database)
  std::filesystem::path source_path;

  const EngineSpec& engine(const std::string& name) const;  ///< throws std::out_of_range
  const Knob& knob(const std::string& name) const;          ///< throws std::out_of_range
  const Scenario& scenario(const std::string& id) const;    ///< throws std::out_of_range
};

/// `text` with every value of a credential-named knob (Knob::secret_values, ≥ common::kMinSecretBytes
/// bytes) replaced by its "<redacted-N>" label, then through common::redact_text. The study's TOML stored
/// this way parses back to the same labels.
std::string redact_study_secrets(const Study& study, std::string_view text);

/// Parses a study from TOML text. `origin` names the source in errors. `{data_dir}` in scenario args is
/// replaced by `data_dir`. Throws StudyError ("<origin>:<line>: <toml.path>: problem").
Study parse_study(const std::string& toml_text, const std::string& origin,
                  const std::filesystem::path& data_dir);

/// Reads and parses a study file. Throws StudyError (also when the file cannot be read).
Study load_study(const std::filesystem::path& path, const std::filesystem::path& data_dir);

/// The study with every scenario's (and the warm-up's) `--num-prompts N` replaced by max(1, ceil(N ×
/// scale)) and `prompts_scale` set: a smaller rehearsal of the same study (engines, knobs, phases,
/// scenarios) whose numbers are labelled as such. A scenario without --num-prompts gets bench's default
/// (1000) scaled. Throws std::invalid_argument unless 0 < scale ≤ 1.
Study scale_prompts(Study study, double scale);

/// `--num-prompts` of a scenario's args (bench serve's default 1000 when absent or unreadable).
int scenario_num_prompts(const Scenario& scenario);

/// Maps a short metric name ("total_token_throughput", "ttft_p99_ms", ...) or a vLLM console label to the
/// console label. Throws StudyError naming the unknown metric.
std::string metric_label(const std::string& name);

/// Whether the engine twin predicts anything in `study`: its target is the twin, its search is twin-guided,
/// or it has [slo] targets (the twin brackets each SLO search before a measured target runs it).
bool twin_predicts(const Study& study);

/// The engines of `study` whose `version` the twin does not model (a newer release, or a typo), each as
/// (engine name, engines::unmodelled_release_warning's text); empty where the twin predicts nothing
/// (twin_predicts). Throws std::invalid_argument "engine NAME: version: ..." for a version that is no
/// release number ("nightly"): the twin cannot predict it.
std::vector<std::pair<std::string, std::string>> unmodelled_version_warnings(const Study& study);

}  // namespace servelab::tune
