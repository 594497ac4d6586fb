// servelab/bench: the configuration of one `servelab bench serve` run — vLLM 0.13's `vllm bench serve`
// flags (same names, defaults, types, choices, validation messages), parsed into plain values.
// Spec: ../shared/reference/vllm-bench-serve.md §1 (read with its change table: 0.13 behaviour by default).
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "servelab/dataset/dataset.h"
#include "servelab/metrics/server_metric_names.h"
#include "servelab/schedule/schedule.h"

#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace servelab::bench {

/// Backends servelab implements: `openai` and `vllm` post to /v1/completions, `openai-chat` to
/// /v1/chat/completions (vLLM's OPENAI_COMPATIBLE_BACKENDS).
inline const std::vector<std::string> kBackends = {"openai", "openai-chat", "vllm"};
/// Datasets servelab implements (vLLM names). Other vLLM dataset names are rejected with a clear message.
inline const std::vector<std::string> kDatasets = {"sharegpt", "random",     "prefix_repetition", "custom",
                                                   "sonnet",   "burstgpt",   "spec_bench",        "random-mm",
                                                   "hf",       "timed_trace"};
/// vLLM 0.13's other `--dataset-name` choices (recognised only to say they are not supported yet).
inline const std::vector<std::string> kDatasetsNotSupported = {"random-rerank", "custom_audio",
                                                               "custom_image", "speed_bench"};
/// vLLM 0.13's `--tokenizer-mode` choices (vllm/config/model.py TokenizerMode).
inline const std::vector<std::string> kTokenizerModes = {"auto", "slow", "mistral", "deepseek_v32", "custom"};
/// Metric names accepted by `--percentile-metrics` (vLLM 0.13: ttft, tpot, itl, e2el).
inline const std::vector<std::string> kPercentileMetrics = {"ttft", "tpot", "itl", "e2el"};
/// SLO names accepted by `--goodput` (vLLM `check_goodput_args` VALID_NAMES).
inline const std::vector<std::string> kGoodputMetrics = {"ttft", "tpot", "e2el"};

/// Every `servelab bench serve` flag, as the user gave it (vLLM's argparse namespace). `std::nullopt`
/// is Python's `None`. Fill with `add_bench_flags` + CLI11, or directly (tune builds one in-process), then
/// call `resolve()` to validate and derive the typed values.
struct RunOptions {
  // --- connection / target
  std::string backend = "openai";
  std::optional<std::string> base_url;  ///< if set: api_url = base_url + endpoint
  std::string host = "127.0.0.1";
  int port = 8000;
  std::string endpoint = "/v1/completions";      ///< not switched for openai-chat (vLLM)
  std::vector<std::string> header;               ///< KEY=VALUE, split on the first '='
  bool insecure = false;                         ///< https without certificate verification
  std::optional<std::string> model;              ///< absent: GET {base_url}/v1/models, first entry
  std::optional<std::string> served_model_name;  ///< request `model` field (default: --model)
  std::optional<std::string> tokenizer;          ///< default: the model id
  /// Hugging Face Hub revision (branch, tag or commit) of the tokenizer fetched for a repository id
  /// (servelab; vLLM's bench serve has none, `vllm serve` has --revision); absent: "main".
  std::optional<std::string> revision;
  bool trust_remote_code = false;  ///< accepted for drop-in compatibility; no effect
  /// --tokenizer-mode (vLLM 0.13 choices, kTokenizerModes): auto and slow are the same here (servelab reads
  /// tokenizer.json, which has no slow/fast variants); deepseek_v32 renders chat prompts with DeepSeek-V3.2's
  /// encoding; mistral and custom are refused by resolve() (they need Python tokenizers servelab lacks).
  std::string tokenizer_mode = "auto";

  // --- workload
  std::string dataset_name = "random";
  std::optional<std::string> dataset_path;
  int num_prompts = 1000;
  std::int64_t seed = 0;
  std::optional<int> input_len;            ///< generic: maps to --random-input-len
  std::optional<int> output_len;           ///< generic: random/sharegpt/custom/prefix_repetition
  int random_input_len = 1024;             ///< tokens, including the tokenizer's special tokens
  int random_output_len = 128;             ///< tokens
  std::string random_range_ratio = "0.0";  ///< float, or JSON {"input": a, "output": b}; [0, 1)
  int random_prefix_len = 0;               ///< tokens, added on top of the sampled input length
  std::optional<int> sharegpt_output_len;  ///< tokens; fixed output length override
  int custom_output_len = 256;             ///< tokens; -1 = per-row `output_tokens`
  bool skip_chat_template = false;         ///< custom dataset: send the prompt without template
  int prefix_repetition_prefix_len = 256;  ///< tokens
  int prefix_repetition_suffix_len = 256;  ///< tokens
  int prefix_repetition_num_prefixes = 10;
  int prefix_repetition_output_len = 128;  ///< tokens
  int sonnet_input_len = 550;              ///< tokens (chat-formatted prompt, upper bound)
  int sonnet_output_len = 150;             ///< tokens
  int sonnet_prefix_len = 200;             ///< tokens
  int spec_bench_output_len = 256;         ///< tokens
  std::optional<std::string> spec_bench_category;
  int random_mm_base_items_per_request = 1;
  double random_mm_num_mm_items_range_ratio = 0.0;
  std::optional<std::string> random_mm_limit_mm_per_prompt;  ///< JSON; None = {"image": 255, "video": 1}
  std::optional<std::string> random_mm_bucket_config;        ///< Python dict literal; None = vLLM's default
  std::optional<std::string> hf_subset;                      ///< hf: a folder of that name in the dataset
  std::optional<std::string> hf_split;
  std::optional<std::string> hf_name;  ///< hf: the dataset id when --dataset-path is a folder
  std::optional<int> hf_output_len;    ///< tokens
  bool no_stream = false;              ///< hf: full-permutation shuffle instead of HF's buffer
  bool no_oversample = false;
  bool disable_shuffle = false;
  std::string request_id_prefix;  ///< empty: "bench-<8 random hex>-" chosen by resolve()
  // timed_trace (newer vLLM's names): Mooncake-style JSONL replay.
  bool self_timed = false;  ///< send at the trace's timestamps (else --request-rate)
  /// Seconds per trace timestamp unit: intended send time = timestamp × this (0.001: Mooncake's ms in real
  /// time; 0.0005 replays twice as fast).
  double timed_trace_sec_multiplier = 0.001;
  // Multi-turn conversations (servelab; vLLM has them only in benchmarks/multi_turn).
  bool multi_turn = false;                    ///< sharegpt: every user turn sent with its history
  std::string multi_turn_history = "server";  ///< "server" (actual answers) | "dataset" (recorded ones)
  double multi_turn_think_time_ms = 0.0;      ///< ms from a turn's end to the next turn's intended send
  std::optional<int> multi_turn_max_turns;    ///< keep the first N user turns of a conversation
  std::optional<int> session_concurrency;     ///< conversations in progress at once (default: no limit)

  // --- traffic shaping
  std::string request_rate = "inf";             ///< req/s, Python float syntax ("inf", "10", "2.5")
  double burstiness = 1.0;                      ///< gamma shape; 1 = Poisson
  std::optional<int> max_concurrency;           ///< client-side limit on requests in flight
  std::optional<std::string> ramp_up_strategy;  ///< "linear" | "exponential"
  std::optional<int> ramp_up_start_rps;
  std::optional<int> ramp_up_end_rps;
  int num_warmups = 0;
  int ready_check_timeout_s = 600;  ///< vLLM 0.13 default; 0 skips the test request
  /// Per-request deadline from send, seconds (vLLM: aiohttp's fixed total timeout of 6 h); a stalled
  /// stream fails as kTimeout after it instead of holding the run.
  double request_timeout_s = 6 * 3600.0;
  /// Server metrics (servelab): GET {base_url}/metrics before the timed run, every this many wall seconds
  /// during it and after it (bench/server_metrics.h); > 0.
  double server_metrics_interval_s = 1.0;
  bool no_server_metrics = false;  ///< --no-server-metrics: do not scrape /metrics at all
  /// Not a flag: the engines' /metrics names (metrics/server_metric_names.h), in the engine table's order;
  /// the CLI and tune fill them from the engine modules. Empty: no engine's names are known.
  std::vector<metrics::ServerMetricNames> server_metric_names;
  /// servelab: open the connections the timed run needs (min(--max-concurrency, requests), or all requests
  /// without a limit) right before its clock starts, after the warm-ups, so that a burst does not open
  /// them inside the measured run (client::ClientOptions::preconnect).
  bool preconnect = false;
  // --- load from several hosts (servelab; bench/shard.h, docs/bench.md "Load from several hosts")
  std::optional<std::string> shard;  ///< --shard I/N: send shard I (0-based) of N of the schedule
  std::optional<double> start_at;    ///< --start-at: Unix s at which the schedule's t = 0 is, every shard
  std::optional<std::string> clock_reference;  ///< --clock-reference HOST[:PORT]: NTP server for the offset

  // --- sampling / request body
  bool ignore_eos = false;
  std::optional<double> temperature, top_p, min_p, frequency_penalty, presence_penalty, repetition_penalty;
  std::optional<int> top_k;
  std::optional<int> logprobs;            ///< completions: "logprobs" (sent as null when unset)
  std::optional<std::string> extra_body;  ///< JSON object merged into every request body

  // --- reporting
  std::optional<std::string> percentile_metrics;  ///< comma list; default "ttft,tpot,itl"
  std::string metric_percentiles = "99";          ///< comma list of floats in [0, 100]
  std::vector<std::string> goodput;               ///< KEY:VALUE, KEY in ttft|tpot|e2el, VALUE in ms >= 0
  bool save_result = false;
  bool save_detailed = false;
  bool append_result = false;
  std::optional<std::string> result_dir;
  std::optional<std::string> result_filename;
  std::vector<std::string> metadata;  ///< KEY=VALUE copied into the JSON result
  std::optional<std::string> label;   ///< result-file prefix (default: the backend name)
  bool disable_tqdm = false;
};

/// The validated, typed view of a RunOptions (everything that does not need the network).
struct ResolvedConfig {
  double request_rate = std::numeric_limits<double>::infinity();  ///< req/s; inf = all at t = 0
  std::vector<std::pair<std::string, std::string>> headers;       ///< in the order given
  std::vector<std::pair<std::string, std::string>> metadata;      ///< in the order given
  std::map<std::string, double> goodput_slo_ms;                   ///< ttft/tpot/e2el -> ms
  std::vector<std::string> percentile_metrics;                    ///< selected metric names, in order
  std::vector<double> metric_percentiles;                         ///< e.g. {99}
  dataset::RangeRatio random_range_ratio;                         ///< --random-range-ratio, each in [0, 1)
  nlohmann::ordered_json extra_body = nlohmann::ordered_json::object();  ///< --extra-body, key order kept
  int random_input_len = 1024;                                           ///< after mapping --input-len
  int random_output_len = 128;                                           ///< after mapping --output-len
  std::optional<int> sharegpt_output_len;
  int custom_output_len = 256;
  int prefix_repetition_output_len = 128;
  std::vector<std::pair<std::string, int>> random_mm_limit_mm_per_prompt;  ///< parsed (default vLLM's)
  std::vector<dataset::MultiModalBucket> random_mm_bucket_config;          ///< parsed (default vLLM's)
  std::string request_id_prefix;  ///< as sent (generated when the flag was not given)
};

/// Thrown for an invalid flag value or combination; the message is vLLM's where vLLM has one.
struct ConfigError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

/// Registers every `bench serve` flag on `app`, bound to `config` (which must outlive parsing).
/// Choices are checked by CLI11 (its message names the flag and the allowed values).
void add_bench_flags(CLI::App& app, RunOptions& config);

/// Validates `config` (ranges, combinations, KEY=VALUE lists, JSON values) and returns the typed view.
/// Throws ConfigError naming the flag and the offending value. Does no I/O.
ResolvedConfig resolve(const RunOptions& config);

/// The dataset flags of `config` (with the resolved range ratio and request-id prefix) as the dataset
/// module's options. One mapping for bench serve, sim run and anything else taking bench's workload flags.
dataset::DatasetOptions dataset_options(const RunOptions& config, const ResolvedConfig& resolved);

/// Whether `config` draws the random dataset at fixed lengths: --dataset-name random with no range ratio and
/// no prefix, every request exactly `resolved`'s random_input_len / random_output_len tokens, which no
/// tokenizer decides (the engine twin predicts it without loading one: sim run, tune's twin).
bool fixed_random_lengths(const RunOptions& config, const ResolvedConfig& resolved);

/// Prompt tokens every request of a group shares with the others by the dataset's construction:
/// prefix_repetition's prefix, random's --random-prefix-len; 0 otherwise.
int shared_prefix_tokens(const RunOptions& config);

/// The arrival ramp-up of --ramp-up-strategy / --ramp-up-start-rps / --ramp-up-end-rps (vLLM 0.13; `resolve`
/// checks the three together). One mapping for bench serve's sender and the twin's arrivals (sim run, tune).
struct RampUpRates {
  schedule::RampUp kind = schedule::RampUp::kNone;  ///< kNone (rates 0) when the strategy is unset
  int start_rps = 0;                                ///< req/s at the run's start
  int end_rps = 0;                                  ///< req/s at its end
};
RampUpRates ramp_up_rates(const RunOptions& config);

/// Python `float(text)` for flag values: decimal/scientific, "inf"/"infinity"/"nan" in any case,
/// surrounding whitespace allowed. Throws ConfigError naming `flag` when `text` is not a number.
double parse_python_float(const std::string& text, const std::string& flag);

/// `--goodput` pairs parsed as vLLM's `check_goodput_args`. Throws ConfigError with vLLM's messages.
std::map<std::string, double> parse_goodput(const std::vector<std::string>& pairs);

/// `--header` items: split on the first '=', both sides stripped. Throws ConfigError without '='.
std::vector<std::pair<std::string, std::string>> parse_headers(const std::vector<std::string>& items);

/// The API URL (`base_url + endpoint`) and base URL (`--base-url`, else `http://{host}:{port}` with an
/// IPv6 host bracketed), as vLLM builds them.
struct Urls {
  std::string api_url;
  std::string base_url;
};
Urls build_urls(const RunOptions& config);

/// argparse's `print(args)` line: `Namespace(append_result=False, backend='openai', ...)`, keys sorted,
/// values in Python repr; credentials redacted (common/redact.h: credential-named header values, malformed
/// --header items, userinfo and credential query values of --base-url).
std::string namespace_repr(const RunOptions& config);

}  // namespace servelab::bench
