// servelab/sim: the engine twin. Predicts, in virtual time and from first principles, how a real engine
// launch (vLLM, SGLang, TensorRT-LLM, by version) serves a model (any architecture src/model knows) on a
// cluster of GPUs (src/hardware): the engine's resolved behaviour (src/engines) -> memory plan -> the
// engine's scheduler per DP rank -> per-operator step times -> per-request timings. The output is the
// same std::vector<metrics::RequestOutput> that bench's HTTP client produces, so the same metrics and
// report code apply; every prediction carries an error band from leave-one-study-out validation.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "servelab/schedule/schedule.h"

#include "servelab/engines/engine_config.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/metrics/request_output.h"
#include "servelab/model/model.h"
#include "servelab/sim/calibration.h"
#include "servelab/sim/memory_plan.h"
#include "servelab/sim/trace.h"
#include "servelab/sim/uncertainty.h"

namespace servelab::sim {

/// One request of a workload: lengths only (the twin never looks at text). `prompt_len` counts tokens as
/// the benchmark reports them (tokenizer(prompt), no chat template); `output_len` is the number of tokens
/// the request generates (max_tokens; the twin cannot predict an early EOS). Requests of one
/// `prefix_group` (>= 0) begin with the same `shared_prefix_len` prompt tokens (a dataset's shared prefix:
/// prefix_repetition, --random-prefix-len), which an engine that caches prefixes prefills once.
struct WorkloadRequest {
  int prompt_len = 0;         ///< tokens
  int output_len = 0;         ///< tokens
  int prefix_group = -1;      ///< requests sharing a prompt prefix; -1: none
  int shared_prefix_len = 0;  ///< tokens of the prompt, from its start, shared within prefix_group
};

/// How requests are released, as `bench serve`: --request-rate (req/s, inf = all at t = 0),
/// --burstiness (gamma shape; 1 = Poisson), or evenly spaced (guidellm --profile constant);
/// --max-concurrency (client-side cap); --seed (arrival draws).
struct WorkloadOptions {
  double request_rate = std::numeric_limits<double>::infinity();  ///< req/s
  double burstiness = 1.0;
  bool constant_arrivals = false;  ///< evenly spaced sends at 1/rate
  /// bench serve's --ramp-up-strategy / --ramp-up-start-rps / --ramp-up-end-rps (integer req/s): the rate of
  /// request i moves from start to end (schedule::arrival_schedule); request_rate is then +inf, as vLLM
  /// requires.
  schedule::RampUp ramp_up = schedule::RampUp::kNone;
  int ramp_up_start_rps = 0, ramp_up_end_rps = 0;
  std::optional<int> max_concurrency;
  std::uint64_t seed = 0;
  /// Tokens the chat template adds around each prompt; nullopt = the model's own (openai-chat), 0 for
  /// the completions endpoint.
  std::optional<int> chat_template_tokens;
  /// Replaces the embedded calibration table (the fit, what-ifs).
  std::optional<CalibrationTable> calibration;
  /// When set, the run's trace is written here (fit.cc re-times it).
  Trace* trace = nullptr;
  /// Record every token's inter-token latency and chunk size (RequestOutput::itl_s, chunk_tokens). Off,
  /// the outputs hold TTFT, latency and token counts only: enough for the headline metrics (throughput,
  /// mean TTFT and TPOT, identical), not for ITL percentiles (validation and fits run so).
  bool per_token_timings = true;
};

/// The twin's own view of a run (what a benchmark client cannot see).
struct TwinView {
  MemoryPlan memory;            ///< per-GPU memory plan of the launch
  double duration_s = 0.0;      ///< virtual time from t = 0 (metrics/request_output.h) to the last token
  long long steps = 0;          ///< engine steps (pipeline ticks; lock-stepped DP ranks counted once)
  double prefill_time_s = 0.0;  ///< time in steps that carried prefill tokens
  double decode_time_s = 0.0;   ///< time in pure-decode steps
  double idle_time_s = 0.0;     ///< time with nothing to run
  /// Pipeline parallelism: time in ticks that finished no micro-batch (the pipeline filling and draining)
  /// and the wait of each tick for its slowest stage; prefill + decode + idle + this = duration_s (s). 0
  /// without PP (prefill + decode + idle = duration_s).
  double pipeline_bubble_s = 0.0;
  /// Batches that ran: one per engine step without PP; under PP the micro-batches, each of which passes
  /// every stage (a pipeline with fewer micro-batches in flight than stages has ticks that finish none).
  long long micro_batches = 0;
  double mean_batch_requests = 0.0;    ///< running requests per rank, averaged over micro_batches
  int max_batch_requests = 0;          ///< most running requests on one rank
  double mean_step_tokens = 0.0;       ///< query tokens per rank per batch, averaged over micro_batches
  double kv_peak_fraction = 0.0;       ///< peak KV bytes in use / pool (max over ranks)
  long long preemptions = 0;           ///< requests preempted (vLLM recompute / SGLang retract)
  long long cached_tokens_reused = 0;  ///< tokens a preempted request found still in the prefix cache
  /// Prompt tokens a request found in the prefix cache from an earlier request of its prefix group (not
  /// prefilled); 0 without shared prefixes or with prefix caching off.
  long long shared_prefix_tokens_reused = 0;
  double mean_step_ms = 0.0;    ///< average step time (ms; under PP a micro-batch's stage time)
  long long graphed_steps = 0;  ///< batches that replayed a full CUDA graph (under PP: micro-batches)
  /// Batches (under PP: micro-batches) whose layers replayed torch.compile piecewise CUDA graphs, attention
  /// launched eagerly (vLLM's PIECEWISE mode; FULL_AND_PIECEWISE above its full-graph sizes); not in
  /// graphed_steps.
  long long piecewise_steps = 0;
  /// Steps in which attention-DP context balancing (engines::SchedulerPolicy::dp_balance) held back the
  /// contexts some rank had to start; 0 without it.
  long long contexts_held_steps = 0;
  /// Steps in which a waiting prompt (chunked prefill off: it runs whole) did not fit the token budget left
  /// after the running requests' generation tokens, though the whole budget holds it: it waits until fewer
  /// requests decode (a prompt as long as max_num_tokens waits for every decode to finish). Counted per DP
  /// rank, so with DP attention it may exceed the steps. 0 with chunked prefill.
  long long contexts_over_budget_steps = 0;
  int largest_context_over_budget = 0;  ///< the longest such prompt (tokens still to prefill)
  int step_token_budget = 0;            ///< the step's token budget those prompts waited for (tokens)
  /// Kernel time per operator class summed over steps (s; measured where use_measured_operators gave a
  /// table, else the roofline; each step's classes scaled as its kernel time is by the fitted kernel
  /// scale, so classes + comm_s + overhead_s add up to the busy time), communication and CPU / launch
  /// overhead. attention_s is softmax attention (cores and KV reads), linear_attention_s the
  /// linear-attention cores (gated DeltaNet) of hybrid models.
  double attention_s = 0, linear_s = 0, moe_s = 0, lm_head_s = 0, draft_s = 0, comm_s = 0, overhead_s = 0;
  double linear_attention_s = 0;
  /// Elementwise kernels (norms, residual adds, RoPE, KV-cache writes, SwiGLU) as their bytes over HBM
  /// bandwidth (s): with measured operators only, 0 on the roofline.
  double elementwise_s = 0;
  double spec_acceptance = 0.0;  ///< draft-token acceptance used (0 without speculative decoding)
  /// With measured operators (use_measured_operators): per operator kind, the table and release it came
  /// from or why it stayed the roofline; the lookups made and how many lay outside the measured grid
  /// (answered by scaling the nearest measured point).
  std::vector<std::string> measured_operators;
  long long measured_lookups = 0, extrapolated_lookups = 0;
};

/// Which fitted parameters a prediction used and how far to trust it.
struct PredictionContext {
  engines::ResolvedLaunch launch;  ///< the launch as the engine resolves it (notes, inert flags)
  CalibrationKey key;
  CalibrationLevel level = CalibrationLevel::kPrior;
  Calibration calibration;
  ErrorBand band;  ///< from leave-one-study-out residuals of the prediction's class
};

/// A successful prediction: per-request outputs (virtual clock; t = 0 as metrics/request_output.h) and the
/// twin's view.
struct Prediction {
  std::vector<metrics::RequestOutput> outputs;
  TwinView twin;
  PredictionContext context;
};

/// A launch the twin predicts will not serve the workload: start-up refusal, run-time error or OOM.
/// `message` is the engine's own message format where one is known.
struct PredictedFailure {
  std::string message;
  enum class Kind { kStartup, kRuntime, kOutOfMemory, kUnsupported } kind = Kind::kStartup;
};

using PredictResult = std::variant<Prediction, PredictedFailure>;

/// Predicts `requests` served by the launch `engine` of `model` on `cluster`: engines::resolve_launch
/// (refusals come back as PredictedFailure), the memory plan (OOM as PredictedFailure), then the simulation.
/// Deterministic: same inputs -> bit-identical outputs. Thread-safety: pure function, reentrant.
/// Throws std::invalid_argument for inputs that are not a workload (a prompt or output length < 1).
PredictResult predict(const engines::LaunchConfig& engine, const hardware::ClusterSpec& cluster,
                      const model::ModelSpec& model, std::span<const WorkloadRequest> requests,
                      const WorkloadOptions& options);

/// The refusal of a cluster whose GPU the twin does not model (hardware::GpuSpec::modelled == false:
/// "the twin does not model MI300X: <its unsupported_reason>", Kind::kUnsupported), else nullopt. predict()
/// and the corpus fit refuse with it; a caller may ask before it draws a workload.
std::optional<PredictedFailure> gpu_not_modelled(const hardware::ClusterSpec& cluster);

/// predict()'s verdict on a launch that needs no workload: the GPU not modelled (gpu_not_modelled), what
/// engines::resolve_launch predicts from the launch alone (a start-up refusal, or a failure known to come at
/// the first step, e.g. vLLM -dcp with FlashMLA sparse) or the memory plan's out-of-memory, each as
/// predict() returns it; nullopt when the twin predicts the engine serves. A caller may ask before it draws a
/// workload (`sim run`: a dataset of thousands of long prompts takes seconds to tokenize). Thread-safety:
/// pure function.
std::optional<PredictedFailure> startup_failure(const engines::LaunchConfig& engine,
                                                const hardware::ClusterSpec& cluster,
                                                const model::ModelSpec& model);

/// predict() for a launch already resolved for `cluster`.
PredictResult predict_resolved(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                               std::span<const WorkloadRequest> requests, const WorkloadOptions& options);

/// The fitted class of a resolved launch on a cluster.
CalibrationKey calibration_key(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster);

/// Headline metrics of a prediction, through the same metrics::compute_metrics bench uses.
HeadlineMetrics headline(const Prediction& p);

/// One engine's (DP rank's) live state in the names of vLLM's Prometheus metrics (vllm/v1/metrics/loggers.py,
/// 0.13), for `sim serve`'s GET /metrics. Counters count since the twin started.
struct EngineLiveMetrics {
  double kv_cache_usage = 0.0;    ///< vllm:kv_cache_usage_perc: KV bytes in use / pool of the rank, [0, 1]
  int num_requests_running = 0;   ///< vllm:num_requests_running: requests in the running batch
  int num_requests_waiting = 0;   ///< vllm:num_requests_waiting: requests queued at the scheduler
  long long num_preemptions = 0;  ///< vllm:num_preemptions_total (vLLM recompute / SGLang retract)
  /// vllm:prefix_cache_queries_total / _hits_total, tokens: counted when a waiting request is admitted with
  /// prefix caching on (queries += tokens to hold, hits += tokens found cached; the twin caches only the
  /// blocks of preempted requests, not prefixes shared between requests).
  long long prefix_cache_queries = 0, prefix_cache_hits = 0;
  /// vllm:spec_decode_num_drafts_total / num_draft_tokens_total / num_accepted_tokens_total: per decode
  /// step of a request with speculative decoding, one draft of (verify tokens - 1) draft tokens.
  long long spec_decode_num_drafts = 0, spec_decode_num_draft_tokens = 0, spec_decode_num_accepted_tokens = 0;
};

/// The twin run online, for `sim serve`: requests are submitted as they arrive (virtual time, seconds
/// since the server started) and the same event loop, schedulers and step model as predict() decide when
/// each output token leaves: the same requests sent at the same times get the same TTFT, TPOT and E2E
/// latency as predict() (tests/sim/online_twin_test.cc). A step starts when the previous one ends (or, when
/// idle, when the API server hands a request over) and takes the requests handed over by its start; it is
/// formed only once the caller's clock reaches its start. Its tokens leave at its end (a first token
/// Calibration::first_token_ms later).
/// Thread-safety: not thread-safe; the server drives it from one event-loop thread.
class OnlineTwin {
 public:
  /// Builds the twin of `engine` on `cluster`; returns a PredictedFailure (start-up refusal, OOM, too few
  /// GPUs) exactly as predict() would for that launch. `calibration` replaces the embedded table (what-ifs),
  /// as WorkloadOptions::calibration does.
  static std::variant<std::unique_ptr<OnlineTwin>, PredictedFailure> create(
      const engines::LaunchConfig& engine, const hardware::ClusterSpec& cluster,
      const model::ModelSpec& model, const std::optional<CalibrationTable>& calibration = std::nullopt);
  ~OnlineTwin();
  OnlineTwin(const OnlineTwin&) = delete;
  OnlineTwin& operator=(const OnlineTwin&) = delete;

  /// A request with `prompt_tokens` (as the engine counts them, chat template included) and
  /// `output_len` to generate arrives at `now_s`, normally >= the last advance_to's `t_s`. An earlier one
  /// (a caller that read it late) joins no step already formed; it is sent no earlier than the previous
  /// submit, and the API server counts its work from its own clock when that is later. Returns the
  /// engine's refusal text (refusal()) or nullopt when admitted; an admitted request emits
  /// admitted_output() tokens. Ids are the caller's and must be unique.
  std::optional<std::string> submit(std::uint64_t id, int prompt_tokens, int output_len, double now_s);
  /// The engine's refusal of a request of `prompt_tokens` asking `output_len` (context too long:
  /// engines::check_request; SGLang, a prompt its rank's KV pool cannot hold:
  /// engines::SchedulerPolicy::request_len_from_pool), or nullopt.
  std::optional<std::string> refusal(int prompt_tokens, int output_len) const;
  /// The tokens an admitted request emits: `output_len`, or fewer where the engine clips max_new_tokens to
  /// its rank's KV pool (engines::SchedulerPolicy::request_len_from_pool).
  int admitted_output(int prompt_tokens, int output_len) const;
  /// Drops a request (its client went away); frees its KV after the step in flight.
  void cancel(std::uint64_t id);
  /// Applies every event at or before `t_s` (steps that end, steps that start, API-server hand-offs) and
  /// calls emit(id, output_index, t_emit_s) for each token due by `t_s` (t_emit_s <= t_s), in time
  /// order. A request the engine aborts (more KV than a rank holds) is reported with output_index = -1.
  void advance_to(double t_s, const std::function<void(std::uint64_t, int, double)>& emit);
  /// When the next event happens (virtual s): a token due, the end of the step in flight, or the hand-off
  /// or send an idle engine waits for; +inf when idle with nothing pending.
  double next_event_s();
  /// The engine's context limit (tokens) after its defaults.
  int max_model_len() const;
  /// The twin's view so far (steps, batch sizes, KV peak, preemptions).
  TwinView view();
  /// The live state of each DP rank now (the last applied step), for GET /metrics.
  std::vector<EngineLiveMetrics> live_metrics() const;
  /// Whether the launch caches prefixes / decodes speculatively (which /metrics families exist).
  bool prefix_caching() const;
  bool speculative() const;
  /// The launch's context (resolution notes, calibration class, error band).
  const PredictionContext& context() const;

  struct Impl;

 private:
  explicit OnlineTwin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Switches the step model to measured operator tables (the ops module: NVIDIA AIConfigurator's silicon
/// data, imported by make deps) for every simulation started afterwards: GEMM, attention, MLA, MoE and
/// all-reduce times come from the tables of the launch's GPU, engine and nearest measured release of its
/// line (ms per call, interpolated along the shape; not divided by the fitted kernel scale, they are
/// measurements), the roofline where no table measures an operator. An empty path switches back to the
/// roofline, which is the library's default; the command line (`--op-data`, default `default`) switches the
/// tables on. Throws std::runtime_error if the store cannot be opened.
/// Thread-safety: call before simulations start; one already running keeps the store it began with.
void use_measured_operators(const std::filesystem::path& store_dir);

/// A fixed-length random scenario as `vllm bench serve --dataset-name random --random-range-ratio 0`:
/// `num_prompts` requests of exactly `input_len` / `output_len` tokens. Throws std::invalid_argument for
/// a count or length < 1.
std::vector<WorkloadRequest> random_fixed(int num_prompts, int input_len, int output_len);

/// The twin's ShareGPT workload: `num_prompts` requests (cycled from the 1000 of the reference study's
/// sharegpt-1000 construction, see scripts/calibrate_sharegpt1000.js) with prompt and output lengths
/// counted for `model`: the DeepSeek-V3 token counts scaled by the model's tokens per character relative
/// to DeepSeek's, when the model's tokenizer is resolvable (else DeepSeek's counts, said in `note`).
std::vector<WorkloadRequest> sharegpt_workload(const model::ModelSpec& model, int num_prompts,
                                               std::string* note = nullptr);

/// The reference study's `sharegpt-1000` workload (DeepSeek-V3 counts): 219,111 prompt tokens,
/// 197,162 output tokens.
std::span<const WorkloadRequest> sharegpt_1000();

/// Scales a workload so that its prompt and output token totals match `total_prompt` / `total_output`
/// (largest-remainder rounding, every length >= 1). 0 leaves that side unchanged.
std::vector<WorkloadRequest> scale_workload(std::vector<WorkloadRequest> w, long long total_prompt,
                                            long long total_output);

/// The workload of a study scenario id ("sharegpt-1000", "random-2000in-100out-n500", ...) for `model`:
/// sharegpt-N is sharegpt_workload(model, N) (N >= 1); random-<in>in-<out>out has fixed lengths and N
/// prompts with -nN, else 1000 (`vllm bench serve`'s default --num-prompts). Throws std::invalid_argument
/// naming the id when unknown or N < 1. `note` (optional) receives sharegpt_workload's note (its source,
/// and that lengths repeat past the built-in prompts); random scenarios leave it unchanged.
std::vector<WorkloadRequest> scenario_workload(const std::string& scenario_id, const model::ModelSpec& model,
                                               std::string* note = nullptr);

}  // namespace servelab::sim
