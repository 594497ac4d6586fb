// servelab/sim: the engine twin. Predicts, in virtual time and from first principles, how a real engine
// launch (vLLM 0.13, SGLang 0.5.6.post2, TensorRT-LLM 1.2.0rc5) serves DeepSeek-V3.2 on a node of GPUs:
// memory plan -> KV capacity -> the engine's scheduler -> per-step operator times -> per-request timings.
// The output is the same std::vector<metrics::RequestOutput> that bench's HTTP client produces, so the
// same metrics and report code apply.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "engines/engine_config.h"
#include "engines/engines.h"
#include "metrics/request_output.h"
#include "sim/hardware.h"
#include "sim/memory_plan.h"
#include "sim/model_config.h"
#include "sim/step_time.h"

namespace servelab::sim {

/// One request of a workload, as the twin needs it: lengths only (the twin never looks at text).
/// `prompt_len` counts tokens as the benchmark reports them (vLLM: tokenizer(prompt) incl. BOS);
/// `output_len` is the requested max tokens (bench sends ignore_eos=false; the twin generates exactly
/// output_len tokens).
struct WorkloadRequest {
  int prompt_len = 0;  ///< tokens
  int output_len = 0;  ///< tokens
};

/// How requests are released, as `bench serve`: --request-rate (req/s, inf = all at t=0), --burstiness
/// (gamma shape; 1 = Poisson), --max-concurrency (client-side cap), --seed (arrival draws). Send times
/// come from client::arrival_schedule, the same schedule bench uses.
struct WorkloadOptions {
  double request_rate = std::numeric_limits<double>::infinity();  ///< req/s
  double burstiness = 1.0;
  std::optional<int> max_concurrency;
  std::uint64_t seed = 0;
  /// Replaces the embedded calibration.json entry of the engine (used by the fit and for what-ifs).
  std::optional<Calibration> calibration;
};

/// The twin's own view of a run (what a benchmark client cannot see).
struct TwinView {
  MemoryPlan memory;                 ///< per-GPU memory plan of the launch
  double duration_s = 0.0;           ///< virtual time from first send to last token
  long long steps = 0;               ///< engine forward steps (per DP rank group, lock-step counted once)
  double prefill_time_s = 0.0;       ///< step time spent in steps that carried prefill tokens
  double decode_time_s = 0.0;        ///< step time spent in pure-decode steps
  double idle_time_s = 0.0;          ///< time with nothing to run
  double mean_batch_requests = 0.0;  ///< running requests per rank, averaged over steps
  int max_batch_requests = 0;        ///< most running requests on one rank
  double mean_step_tokens = 0.0;     ///< query tokens per rank per step, averaged over steps
  double kv_peak_fraction = 0.0;     ///< peak KV blocks in use / KV blocks (max over ranks)
  long long preemptions = 0;         ///< requests preempted (vLLM recompute / SGLang retract)
  double mean_step_ms = 0.0;         ///< average step time (ms)
  /// Time per operator class summed over steps (s): gemm_attn, gemm_dense, moe, attention, indexer,
  /// communication, cpu/launch overhead.
  double attn_proj_s = 0, dense_s = 0, moe_s = 0, attention_s = 0, indexer_s = 0, comm_s = 0, overhead_s = 0;
  double mtp_acceptance = 0.0;       ///< draft-token acceptance used (0 without speculative decoding)
};

/// A successful prediction: per-request outputs (virtual clock, t = 0 at the first send) and the twin's view.
struct Prediction {
  std::vector<metrics::RequestOutput> outputs;
  TwinView twin;
};

/// A launch the twin predicts will not serve the workload: start-up refusal, run-time error or OOM.
/// `reason` is the engine's own message format where one is known.
struct Failure {
  std::string reason;
};

using PredictResult = std::variant<Prediction, Failure>;

/// Predicts `requests` served by the launch `engine` on `cluster` (the model from `model`). The config is
/// completed with engines::resolve_defaults() and checked with engines::check_launch() first (start-up
/// refusals and config-only run-time errors come back as Failure, as does out-of-memory from the plan).
/// Deterministic: same inputs -> bit-identical outputs. Thread-safety: pure function, reentrant.
/// Throws std::invalid_argument for inputs that are not a launch at all (e.g. more GPUs than the cluster
/// has is a Failure, but a negative prompt length throws).
PredictResult predict(const engines::EngineConfig& engine, const Cluster& cluster, const ModelConfig& model,
                      std::span<const WorkloadRequest> requests, const WorkloadOptions& options);

/// predict() with the built-in DeepSeek-V3.2 model.
PredictResult predict(const engines::EngineConfig& engine, const Cluster& cluster,
                      std::span<const WorkloadRequest> requests, const WorkloadOptions& options);

/// The engines module's view of a model / node (for engines::check_launch and resolve_defaults).
engines::ModelTraits model_traits(const ModelConfig& model);
engines::HardwareTraits hardware_traits(const Cluster& cluster);

/// The twin run online, for `sim serve`: requests are submitted as they arrive (virtual time, seconds
/// since the server started) and the same schedulers and step-time model as predict() decide when each
/// output token leaves. A step starts when the previous one ends (or, when idle, when a request arrives)
/// and takes the requests that arrived by its start; its tokens leave at its end.
/// Thread-safety: not thread-safe; the server drives it from one event-loop thread.
class OnlineTwin {
 public:
  /// Builds the twin of `engine` on `cluster`; returns a Failure (start-up refusal, OOM, too few GPUs)
  /// exactly as predict() would for that launch.
  static std::variant<std::unique_ptr<OnlineTwin>, Failure> create(const engines::EngineConfig& engine,
                                                                   const Cluster& cluster,
                                                                   const ModelConfig& model);
  ~OnlineTwin();
  OnlineTwin(const OnlineTwin&) = delete;
  OnlineTwin& operator=(const OnlineTwin&) = delete;

  /// A request with `prompt_tokens` (as the engine counts them, chat template included) and
  /// `output_tokens` to generate arrives at `now_s`. Returns the engine's refusal text (context too long)
  /// or nullopt when admitted. Ids are the caller's and must be unique.
  std::optional<std::string> submit(std::uint64_t id, int prompt_tokens, int output_tokens, double now_s);
  /// Drops a request (its client went away); frees its KV blocks after the step in flight.
  void cancel(std::uint64_t id);
  /// Applies every step that ends at or before `t_s`, calling emit(id, output_index, t_emit_s) for each
  /// token in time order. A request the engine aborts (more KV than a rank holds) is reported with
  /// output_index = -1.
  void advance_to(double t_s, const std::function<void(std::uint64_t, int, double)>& emit);
  /// End time (virtual s) of the step in flight, planning it if the engine has work; +inf when idle.
  double next_event_s();
  /// The engine's context limit (tokens) after its defaults.
  int max_model_len() const;
  /// The twin's view so far (steps, batch sizes, KV peak, preemptions).
  TwinView view();

  struct Impl;

 private:
  explicit OnlineTwin(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// The study's `sharegpt-1000` workload (see scripts/calibrate_sharegpt1000.js for how it is built from
/// shared/data): 1000 requests, 219,111 prompt tokens, 197,162 output tokens.
std::span<const WorkloadRequest> sharegpt_1000();

/// A fixed-length random scenario as `vllm bench serve --dataset-name random --random-range-ratio 0`:
/// `num_prompts` requests of exactly `input_len` / `output_len` tokens.
std::vector<WorkloadRequest> random_fixed(int num_prompts, int input_len, int output_len);

/// The workload of a study scenario id ("sharegpt-1000", "random-2000in-100out", ...).
/// Throws std::invalid_argument naming the id when unknown.
std::vector<WorkloadRequest> scenario_workload(const std::string& scenario_id);

}  // namespace servelab::sim
