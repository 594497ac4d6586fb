// servelab/bench: `bench serve` flag registration (add_bench_flags: vLLM 0.13 names, defaults, help).
#include "servelab/bench/config.h"

#include <optional>
#include <string>

namespace servelab::bench {
namespace {

// Registers an option whose value lands in a std::optional (Python None when absent).
template <class T>
CLI::Option* add_optional(CLI::App& app, const std::string& name, std::optional<T>& target,
                          const std::string& help) {
  return app.add_option_function<T>(
      name, [&target](const T& v) { target = v; }, help);
}

}  // namespace

void add_bench_flags(CLI::App& app, RunOptions& c) {
  // Connection / target.
  app.add_option("--backend", c.backend,
                 "Request function: openai and vllm post to the completions API, openai-chat to the "
                 "chat completions API (the endpoint is not switched: pass --endpoint "
                 "/v1/chat/completions).")
      ->check(CLI::IsMember(kBackends))
      ->capture_default_str();
  add_optional(app, "--base-url", c.base_url, "Server or API base url if not using http host and port.");
  app.add_option("--host", c.host, "Server host (used when --base-url is not given).")->capture_default_str();
  app.add_option("--port", c.port, "Server port.")->capture_default_str();
  app.add_option("--endpoint", c.endpoint, "API endpoint.")->capture_default_str();
  app.add_option("--header", c.header,
                 "Key-value pairs (e.g. --header x-additional-info=0.3.3) for headers to be passed with "
                 "each request. These headers override per-backend constants and values set via "
                 "environment variables. Repeating --header accumulates (argparse would keep the last).");
  app.add_flag("--insecure", c.insecure, "Disable TLS certificate verification for https URLs.");
  add_optional(app, "--model", c.model,
               "Name of the model. If not specified, the first model from GET {base_url}/v1/models is "
               "used (its `id` as the request model name, its `root` as the model id).");
  add_optional(app, "--served-model-name", c.served_model_name,
               "The model name used in the API. If not specified, the model name is the same as --model.");
  add_optional(
      app, "--tokenizer", c.tokenizer,
      "Name or path of the tokenizer (tokenizer.json file, a directory holding it, or a Hugging Face "
      "id: from the local cache, else downloaded from the Hub into it), if not using the default "
      "(the model id).");
  add_optional(
      app, "--revision", c.revision,
      "Hugging Face Hub revision (branch, tag or commit) of the tokenizer of a Hub id (default: main).");
  app.add_flag("--trust-remote-code", c.trust_remote_code,
               "Accepted for drop-in compatibility; servelab runs no Python tokenizer code.");
  app.add_option("--tokenizer-mode", c.tokenizer_mode,
                 "The tokenizer mode (vLLM 0.13). auto and slow are the same here: servelab reads the "
                 "tokenizer.json (Hugging Face's fast-tokenizer file; there is no slow variant of it). "
                 "deepseek_v32 renders chat prompts (custom dataset) with DeepSeek-V3.2's encoding. mistral "
                 "(mistral_common: tekken.json / SentencePiece) and custom (a Python tokenizer class) are "
                 "refused: servelab cannot run them.")
      ->check(CLI::IsMember(kTokenizerModes))
      ->capture_default_str();

  // Workload.
  app.add_option(
         "--dataset-name", c.dataset_name,
         "Name of the dataset to benchmark on: sharegpt, random, prefix_repetition, custom, sonnet, "
         "burstgpt, spec_bench, random-mm, hf, timed_trace (other vLLM dataset names are reported as not "
         "supported).")
      ->capture_default_str();
  add_optional(app, "--dataset-path", c.dataset_path,
               "Path to the dataset file (sharegpt: JSON list of conversations; custom, spec_bench: JSONL; "
               "sonnet: text; burstgpt: CSV; hf: a dataset id in the local HF cache, or its folder).");
  app.add_option("--num-prompts", c.num_prompts, "Number of prompts to process.")->capture_default_str();
  app.add_option("--seed", c.seed, "Seed of the dataset sampling and arrival-time RNGs.")
      ->capture_default_str();
  add_optional(app, "--input-len", c.input_len,
               "General input length for datasets (maps to --random-input-len).");
  add_optional(app, "--output-len", c.output_len,
               "General output length for datasets (maps to --random-output-len, --sharegpt-output-len, "
               "--custom-output-len and --prefix-repetition-output-len).");
  app.add_option("--random-input-len", c.random_input_len,
                 "Number of input tokens per request (the tokenizer's special tokens included).")
      ->capture_default_str();
  app.add_option("--random-output-len", c.random_output_len, "Number of output tokens per request.")
      ->capture_default_str();
  app.add_option("--random-range-ratio", c.random_range_ratio,
                 "Range ratio for sampling input/output length, a float in [0, 1) or JSON "
                 "{\"input\": a, \"output\": b}: lengths are uniform in [len*(1-r), len*(1+r)].")
      ->capture_default_str();
  app.add_option(
         "--random-prefix-len", c.random_prefix_len,
         "Number of fixed prefix tokens before the random context (added on top of the input length).")
      ->capture_default_str();
  add_optional(app, "--sharegpt-output-len", c.sharegpt_output_len,
               "Output length for each request. Overrides the output length from the ShareGPT dataset.");
  app.add_option("--custom-output-len", c.custom_output_len,
                 "Number of output tokens per request, used only for the custom dataset (-1: the per-row "
                 "output_tokens).")
      ->capture_default_str();
  app.add_flag("--skip-chat-template", c.skip_chat_template,
               "Skip applying the chat template (custom dataset).");
  app.add_option("--prefix-repetition-prefix-len", c.prefix_repetition_prefix_len,
                 "Number of prefix tokens per request (prefix_repetition dataset).")
      ->capture_default_str();
  app.add_option("--prefix-repetition-suffix-len", c.prefix_repetition_suffix_len,
                 "Number of suffix tokens per request (prefix_repetition dataset).")
      ->capture_default_str();
  app.add_option("--prefix-repetition-num-prefixes", c.prefix_repetition_num_prefixes,
                 "Number of distinct prefixes (prefix_repetition dataset).")
      ->capture_default_str();
  app.add_option("--prefix-repetition-output-len", c.prefix_repetition_output_len,
                 "Number of output tokens per request (prefix_repetition dataset).")
      ->capture_default_str();
  app.add_option("--sonnet-input-len", c.sonnet_input_len,
                 "Number of input tokens per request, used only for sonnet dataset.")
      ->capture_default_str();
  app.add_option("--sonnet-output-len", c.sonnet_output_len,
                 "Number of output tokens per request, used only for sonnet dataset.")
      ->capture_default_str();
  app.add_option("--sonnet-prefix-len", c.sonnet_prefix_len,
                 "Number of prefix tokens per request, used only for sonnet dataset.")
      ->capture_default_str();
  app.add_option("--spec-bench-output-len", c.spec_bench_output_len,
                 "Num of output tokens per request, used only for spec bench dataset.")
      ->capture_default_str();
  add_optional(app, "--spec-bench-category", c.spec_bench_category,
               "Category for spec bench dataset. If None, use all categories.");
  app.add_option("--random-mm-base-items-per-request", c.random_mm_base_items_per_request,
                 "Base number of multimodal items per request for random-mm.")
      ->capture_default_str();
  app.add_option("--random-mm-num-mm-items-range-ratio", c.random_mm_num_mm_items_range_ratio,
                 "Range ratio r in [0, 1] for sampling items per request: uniform in [floor(n*(1-r)), "
                 "ceil(n*(1+r))], capped by the sum of the per-modality limits.")
      ->capture_default_str();
  add_optional(
      app, "--random-mm-limit-mm-per-prompt", c.random_mm_limit_mm_per_prompt,
      "Per-modality hard caps for items per request, JSON (default {\"image\": 255, \"video\": 1}).");
  add_optional(
      app, "--random-mm-bucket-config", c.random_mm_bucket_config,
      "The bucket config: a dict (H, W, T) -> probability, e.g. {(256, 256, 1): 0.5, (720, 1280, 1): "
      "0.5, (720, 1280, 16): 0.0} (the default); T = 1 is an image (video is not supported).");
  add_optional(app, "--hf-subset", c.hf_subset, "Subset of the HF dataset (a folder of that name).");
  add_optional(app, "--hf-split", c.hf_split, "Split of the HF dataset.");
  add_optional(app, "--hf-name", c.hf_name,
               "Name of the dataset on HuggingFace (e.g., 'philschmid/mt-bench'). Specify this if your "
               "dataset-path is a local path.");
  add_optional(app, "--hf-output-len", c.hf_output_len,
               "Output length for each request. Overrides the output lengths from the sampled HF dataset.");
  app.add_flag("--no-stream", c.no_stream, "Do not load the dataset in streaming mode.");
  app.add_flag("--no-oversample", c.no_oversample,
               "Do not oversample if the dataset has fewer samples than --num-prompts.");
  app.add_flag("--disable-shuffle", c.disable_shuffle,
               "Disable shuffling of dataset samples for deterministic ordering.");
  app.add_option("--request-id-prefix", c.request_id_prefix,
                 "Prefix of the x-request-id header (default: bench-<8 random hex>-); id = prefix + index.");
  app.add_flag("--self-timed", c.self_timed,
               "timed_trace: send each request at its trace timestamp (x --timed-trace-sec-multiplier) "
               "instead of on the --request-rate schedule.");
  app.add_option_function<std::string>(
         "--timed-trace-sec-multiplier",
         [&c](const std::string& v) {
           c.timed_trace_sec_multiplier = parse_python_float(v, "--timed-trace-sec-multiplier");
         },
         "timed_trace with --self-timed: seconds per trace timestamp unit (0.001 = Mooncake milliseconds in "
         "real time; 0.0005 replays twice as fast, 0.002 twice as slow).")
      ->default_str("0.001");
  app.add_flag(
      "--multi-turn", c.multi_turn,
      "sharegpt + openai-chat: benchmark whole conversations (servelab): every user turn is sent with "
      "its history, the next turn once the previous one finished; --num-prompts counts conversations.");
  app.add_option("--multi-turn-history", c.multi_turn_history,
                 "Assistant messages of a turn's history: server (the server's actual answers, as vLLM's "
                 "benchmarks/multi_turn) or dataset (the recorded answers).")
      ->check(CLI::IsMember({"server", "dataset"}))
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--multi-turn-think-time-ms",
         [&c](const std::string& v) {
           c.multi_turn_think_time_ms = parse_python_float(v, "--multi-turn-think-time-ms");
         },
         "Think time between the end of a turn and the intended send of the next one, ms.")
      ->default_str("0.0");
  add_optional(app, "--multi-turn-max-turns", c.multi_turn_max_turns,
               "Keep only the first N user turns of every conversation.");
  add_optional(
      app, "--session-concurrency", c.session_concurrency,
      "Conversations in progress at once (--multi-turn); a conversation waits for a free session before "
      "its first turn. Default: no limit.");

  // Traffic shaping.
  app.add_option("--request-rate", c.request_rate,
                 "Number of requests per second. If this is inf, then all the requests are sent at time 0. "
                 "Otherwise, we use Poisson process or gamma distribution to synthesize the request "
                 "arrival times.")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--burstiness", [&c](const std::string& v) { c.burstiness = parse_python_float(v, "--burstiness"); },
         "Burstiness factor of the request generation (gamma shape; 1 = Poisson process, < 1 burstier, "
         "> 1 more uniform). Only used when --request-rate is not inf.")
      ->default_str("1.0");
  add_optional(app, "--max-concurrency", c.max_concurrency,
               "Maximum number of concurrent requests (client-side limit; requests wait for a slot and "
               "their TTFT/E2EL exclude that wait, as in vLLM).");
  add_optional(app, "--ramp-up-strategy", c.ramp_up_strategy,
               "Ramp-up strategy: linear or exponential. The request rate goes from --ramp-up-start-rps to "
               "--ramp-up-end-rps over the run.")
      ->check(CLI::IsMember({"linear", "exponential"}));
  add_optional(app, "--ramp-up-start-rps", c.ramp_up_start_rps, "Starting request rate for ramp-up (RPS).");
  add_optional(app, "--ramp-up-end-rps", c.ramp_up_end_rps, "Ending request rate for ramp-up (RPS).");
  app.add_option("--num-warmups", c.num_warmups, "Number of warmup requests (copies of request 0).")
      ->capture_default_str();
  app.add_option("--ready-check-timeout-sec", c.ready_check_timeout_s,
                 "Maximum time to wait for the endpoint to become ready, in seconds: request 0 is sent every "
                 "5 s until it succeeds. Default 600 as in vLLM 0.13; newer vLLM defaults to 0 (no test "
                 "request); pass 0 for that.")
      ->capture_default_str();
  app.add_option_function<std::string>(
         "--request-timeout-s",
         [&c](const std::string& v) { c.request_timeout_s = parse_python_float(v, "--request-timeout-s"); },
         "Per-request deadline in seconds from send (connect included); a request still streaming then "
         "fails as a timeout. Default 21600 (6 h), vLLM's fixed aiohttp timeout (servelab extension).")
      ->default_str("21600.0");
  app.add_option_function<std::string>(
         "--server-metrics-interval-s",
         [&c](const std::string& v) {
           c.server_metrics_interval_s = parse_python_float(v, "--server-metrics-interval-s");
         },
         "Scrape the server's Prometheus /metrics (KV-cache usage, running/waiting requests, preemptions, "
         "prefix-cache hits, spec-decode acceptance; vLLM, SGLang and TensorRT-LLM names) before the run, "
         "every this many seconds during it and after it (servelab extension).")
      ->default_str("1.0");
  app.add_flag("--no-server-metrics", c.no_server_metrics,
               "Do not scrape the server's /metrics (servelab extension).");
  app.add_flag(
      "--preconnect", c.preconnect,
      "Open the connections the timed run needs (min(--max-concurrency, --num-prompts)) right before it "
      "starts, after the warm-ups, so that a burst (--request-rate inf) finds them open instead of "
      "opening thousands at once inside the measured run; TTFT then excludes the TCP/TLS connect, "
      "as on a kept-alive connection (servelab extension).");
  add_optional(app, "--shard", c.shard,
               "I/N: send shard I (0-based, as SLURM_PROCID) of N of the schedule one client would send: the "
               "same seed, data set and arrival times, the requests with index mod N == I; --max-concurrency "
               "is split between the shards. Needs --start-at, --save-result and --save-detailed; join the "
               "shards with `servelab bench merge` (servelab extension).");
  app.add_option_function<std::string>(
      "--start-at", [&c](const std::string& v) { c.start_at = parse_python_float(v, "--start-at"); },
      "With --shard: the wall-clock time (Unix seconds, e.g. $(($(date +%s) + 60))) at which the schedule's "
      "t = 0 is on every shard; refused when past or more than 24 h ahead (servelab extension).");
  add_optional(app, "--clock-reference", c.clock_reference,
               "With --shard: NTP server (HOST or HOST:PORT) this host's clock offset is measured against "
               "before the run; bench merge applies it. Without it the kernel's own error estimate is "
               "recorded and the offset taken as 0 (servelab extension).");

  // Sampling / request body.
  app.add_flag(
      "--ignore-eos", c.ignore_eos,
      "Set ignore_eos in every request. Forced on for --dataset-name random (vLLM 0.13, PR #28227).");
  add_optional(app, "--temperature", c.temperature,
               "Temperature sampling parameter. When not given, temperature 0.0 (greedy) is sent, as vLLM "
               "0.13 does (newer vLLM sends none).");
  add_optional(app, "--top-p", c.top_p, "Top-p sampling parameter.");
  add_optional(app, "--top-k", c.top_k, "Top-k sampling parameter.");
  add_optional(app, "--min-p", c.min_p, "Min-p sampling parameter.");
  add_optional(app, "--frequency-penalty", c.frequency_penalty, "Frequency penalty sampling parameter.");
  add_optional(app, "--presence-penalty", c.presence_penalty, "Presence penalty sampling parameter.");
  add_optional(app, "--repetition-penalty", c.repetition_penalty, "Repetition penalty sampling parameter.");
  add_optional(app, "--logprobs", c.logprobs,
               "Number of logprobs-per-token to request (completions backends; sent as null when not given, "
               "as vLLM).");
  add_optional(app, "--extra-body", c.extra_body,
               "A JSON object merged into every request body; its keys override the sampling flags.");

  // Reporting.
  add_optional(app, "--percentile-metrics", c.percentile_metrics,
               "Comma-separated list of selected metrics to report statistics for: ttft, tpot, itl, e2el. "
               "Default: ttft,tpot,itl. Unknown names are an error (vLLM ignores them).");
  app.add_option("--metric-percentiles", c.metric_percentiles,
                 "Comma-separated list of percentiles for selected metrics, e.g. \"25,50,75\".")
      ->capture_default_str();
  app.add_option("--goodput", c.goodput,
                 "Service level objectives for goodput as \"KEY:VALUE\" pairs, KEY in ttft, tpot, e2el and "
                 "VALUE in milliseconds; a request is good when it meets all of them (<=).");
  app.add_flag("--save-result", c.save_result, "Save the benchmark results to a JSON file.");
  app.add_flag("--save-detailed", c.save_detailed,
               "Keep the per-request arrays (input_lens, output_lens, ttfts, itls, generated_texts, errors) "
               "in the JSON file.");
  app.add_flag("--append-result", c.append_result, "Append the benchmark result to an existing JSON file.");
  add_optional(app, "--result-dir", c.result_dir, "Directory of the JSON result file (created if needed).");
  add_optional(
      app, "--result-filename", c.result_filename,
      "File name of the JSON result (default: {label}-{rate}qps[-concurrency{N}]-{model}-{date}.json).");
  app.add_option("--metadata", c.metadata,
                 "Key-value pairs (e.g. --metadata version=0.3.3 tp=1) recorded in the JSON result.");
  add_optional(app, "--label", c.label, "Prefix of the result file name (default: the backend).");
  app.add_flag("--disable-tqdm", c.disable_tqdm,
               "Disable the progress bar (it is shown only on a terminal).");

  // argparse semantics: a repeated single-value flag keeps its last value (CLI11 would reject it).
  for (CLI::Option* o : app.get_options())
    if (o->get_items_expected_max() <= 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

}  // namespace servelab::bench
