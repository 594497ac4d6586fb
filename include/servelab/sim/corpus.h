// servelab/sim: the validation corpus — measured serving benchmarks (the reference study's
// seed-measurements.json, the performance lab's perflab/measurements.json, and on request InferenceMAX's
// inferencemax/points.json) as one list of points, each a launch, its hardware, the benchmark run that was
// measured and what was measured.
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace servelab::sim {

/// The benchmark run of a point: what the client sent. Token totals are the run's own counts (each model's
/// tokenizer counts a dataset differently, and EOS can stop a random request early): validation replays
/// them as the workload, never the run's timings.
struct CorpusWorkload {
  std::string key;                        ///< "sharegpt-n1000", "random-4000in-200out-n500", ...
  std::string tool = "vllm bench serve";  ///< or "guidellm", "benchmark_serving.py" (InferenceMAX)
  std::string dataset = "sharegpt";       ///< "sharegpt" | "random"
  int num_prompts = 0;
  double request_rate = 0;             ///< req/s; +inf = all at once
  bool constant_arrivals = false;      ///< guidellm --profile constant: evenly spaced sends (else Poisson)
  std::optional<int> max_concurrency;  ///< client cap (vLLM --max-concurrency; guidellm's default 512)
  int input_len = 0, output_len = 0;   ///< random dataset lengths (tokens)
  /// Random dataset with lengths drawn per request uniformly from [int(len x ratio), len] (the
  /// benchmark_serving.py client of InferenceMAX, --random-range-ratio 0.8); absent = every request has
  /// input_len / output_len (scaled to the totals when known).
  std::optional<double> random_range_ratio;
  long long total_input_tokens = 0;   ///< as the run counted them (0 = unknown)
  long long total_output_tokens = 0;  ///< generated tokens of the run (0 = unknown)
};

/// What was measured (absent fields were not reported or are not comparable).
struct CorpusMeasurement {
  std::optional<double> total_tok_s;   ///< total token throughput, tok/s
  std::optional<double> output_tok_s;  ///< output token throughput, tok/s
  std::optional<double> input_tok_s;   ///< input token throughput, tok/s (InferenceMAX)
  std::optional<double> mean_ttft_ms;
  std::optional<double> p99_ttft_ms;     ///< 99th percentile TTFT, ms (kept when the mean is not comparable)
  std::optional<double> median_ttft_ms;  ///< median TTFT, ms (kept when the mean is not comparable)
  std::optional<double> mean_tpot_ms;    ///< vLLM-style TPOT (first token excluded)
  std::optional<double> mean_e2el_ms;    ///< mean end-to-end request latency, ms (InferenceMAX)
  std::optional<double> duration_s;
  std::optional<int> successful;  ///< successful requests
};

/// One measured (or failed, or withheld) configuration x workload.
struct CorpusPoint {
  std::string id;      ///< "glm-4.5-air__h100#003", "deepseek-v3.2__h200#sglang/tp8-dp8"
  std::string study;   ///< study id (the leave-one-out unit)
  std::string label;   ///< the study's name for the configuration
  std::string engine;  ///< "vllm", "sglang", "trtllm", or another engine name (mindie)
  std::string engine_version;
  std::string gpu;                ///< "H100", "A100", "H200", "Ascend-910B", "MI355X", "GB200"
  int gpu_count = 1;              ///< GPUs of the node as the study states them (InferenceMAX: TP on
                                  ///< one node; prefill + decode GPUs when disaggregated)
  std::vector<std::string> argv;  ///< launch argv (may start with NAME=value words); empty when the
                                  ///< engine flags are not known (InferenceMAX multi-node recipes)
  /// The engine's environment. InferenceMAX: the runner's launcher_env (passed into the container) with
  /// the script's env over it.
  std::map<std::string, std::string> env;
  /// Option files the launch names, file name -> text (vLLM/SGLang `--config NAME`, TRT-LLM
  /// `--extra_llm_api_options NAME`): prepare_corpus applies the text with engines::apply_config_yaml.
  std::map<std::string, std::string> config_files;
  std::string command;  ///< the launch as one line (for tables)
  CorpusWorkload workload;
  /// kUnsupported: measured, but on something the twin does not model (an AMD GPU, the ATOM engine,
  /// multi-node disaggregated serving); validate reports it as refused with `refusal`, never predicts it.
  enum class Status { kOk, kPartial, kFailed, kWithheld, kUnsupported } status = Status::kOk;
  CorpusMeasurement measured;
  std::string failure;         ///< the study's failure message (kFailed)
  std::string refusal;         ///< why the twin does not model the point (kUnsupported)
  bool disaggregated = false;  ///< prefill and decode on separate workers (InferenceMAX `disagg`)
  bool multinode = false;      ///< the deployment spans several nodes (InferenceMAX `multinode`)
  /// What the source inferred rather than read (InferenceMAX `assumed`, plus the loader's own choices).
  std::vector<std::string> assumed;
  bool suspect = false;  ///< repeats another study's block: never scored or fitted
  /// Metrics of this point that are not comparable, with the reason ("TPOT: guidellm reported ITL 0").
  std::vector<std::string> not_comparable;
  /// What to know about a point that is scored all the same ("partial run: 984 of 1000 requests
  /// succeeded": its figures are those of the requests that succeeded, and they are scored).
  std::vector<std::string> caveats;
};

/// The corpus.
struct Corpus {
  std::vector<CorpusPoint> points;
  std::vector<std::string> studies;  ///< in first-appearance order
  std::vector<std::string> sources;  ///< files read
};

/// Loads a corpus from `path`: a directory holding seed-measurements.json and/or perflab/measurements.json
/// (shared/reference) and/or points.json (shared/reference/inferencemax), or one of those files. A
/// seed-measurements.json array (one study's runs, no metadata) takes its model, node, engine releases and
/// prompt counts from the study record seed-study.md beside it ("- Model:", "- Hardware: N × GPU",
/// "- Engines: vLLM X, ..." and the "Workload scenarios" table); its study id is
/// "<model basename>__<gpu>" in lower case, as perflab's ids are.
/// InferenceMAX points (an object with "points" and "recipes"; shared/reference/inferencemax/README.md):
/// measured totals as given; points on AMD GPUs (MI300X/MI325X/MI355X), on the ATOM engine or multi-node
/// disaggregated (Dynamo-TRT, Dynamo-SGLang, SGLang PD) get Status::kUnsupported with the reason; a
/// num_prompts that depends on the runner takes the value of the point's own recipe (said in `assumed`).
/// Throws std::runtime_error naming the file and the JSON path of anything malformed, or when no file is
/// found.
Corpus load_corpus(const std::filesystem::path& path);

/// The union of several corpora (each as load_corpus reads it), points and studies in the order given: the
/// released corpora together (shared/reference and shared/reference/inferencemax). Throws
/// std::runtime_error when two of them hold a study of the same name or read the same file, or as
/// load_corpus does.
Corpus load_corpora(const std::vector<std::filesystem::path>& paths);

/// A point's sweep: its study, launch configuration (engine and release, GPU and GPU count, argv,
/// environment, option files, the launch line) and workload shape (client tool, dataset, input/output
/// lengths, range ratio, arrival process), everything but its load. Points with equal keys differ only in
/// sweep_load (or are repeats of one run).
std::string sweep_key(const CorpusPoint& c);
/// The load of a sweep point: the client concurrency cap when there is one, else the request rate (req/s).
double sweep_load(const CorpusWorkload& w);

/// A closed-loop run's TTFT tail grows at most in proportion to its concurrency: the first wave of c
/// requests waits for c prefills. mark_ttft_stalls takes, for each closed-loop point (a concurrency cap,
/// requests sent at once, its TTFT not set aside by another rule), the least p99 TTFT its sweep shows at its
/// load or a lower one, scaled to its load by the concurrency ratio (a repeat of the same load included); a
/// p99 TTFT at least kStallFactor times that reference and kStallExcessMs above it, while its median TTFT is
/// within kStallFactor of the sweep's least median scaled the same way (a queue for the KV cache lifts the
/// median with the tail; a stall does not), means some requests were held outside the engine's queues. The
/// thresholds sit in the gap of the released corpora: every such excess there is 63-74 s (InferenceMAX
/// SGLang 0.5.6 on B200: ~70 s stalls in some repeats of a configuration, not in others), every other under
/// 1.5 s.
inline constexpr double kStallFactor = 3.0;
inline constexpr double kStallExcessMs = 10'000;

/// Marks the stalled runs of `points` (see kStallFactor): their mean TTFT measures the stall, not prefill
/// and queueing, and their throughputs too (the benchmark's duration holds the stalled requests' wait: in
/// the released InferenceMAX corpus the 27 stalled runs with a repeat at the same concurrency measured
/// 0.56-0.97x, median 0.76x, of the repeat's total tok/s), so both become not comparable
/// (CorpusPoint::not_comparable says why, naming the reference point) and CorpusMeasurement::mean_ttft_ms
/// and the total / output / input tok/s are cleared (never scored or fitted; TPOT, which excludes the first
/// token, stays). load_corpus applies it.
void mark_ttft_stalls(std::vector<CorpusPoint>& points);

/// "ok", "partial", "failed", "withheld", "unsupported".
const char* corpus_status_name(CorpusPoint::Status s);

}  // namespace servelab::sim
