// servelab/bench: `bench serve` flags (vLLM 0.13 names, defaults, help) and their validation.
#include "bench/config.h"

#include "common/redact.h"
#include "report/python_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>

namespace servelab::bench {
namespace {

using report::python_float_repr;

std::string strip(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    std::size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join(const std::vector<std::string>& v, std::string_view sep) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i) out += sep;
    out += v[i];
  }
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Python repr of a str (single quotes unless the text holds one and no double quote).
std::string py_str(const std::string& s) {
  char q = (s.find('\'') != std::string::npos && s.find('"') == std::string::npos) ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += c;
    }
  }
  out += q;
  return out;
}
template <class T>
std::string py_opt(const std::optional<T>& v);
template <>
std::string py_opt(const std::optional<std::string>& v) {
  return v ? py_str(*v) : "None";
}
template <>
std::string py_opt(const std::optional<int>& v) {
  return v ? std::to_string(*v) : "None";
}
template <>
std::string py_opt(const std::optional<double>& v) {
  return v ? python_float_repr(*v) : "None";
}
std::string py_bool(bool b) { return b ? "True" : "False"; }
std::string py_list(const std::vector<std::string>& v) {
  if (v.empty()) return "None";
  std::vector<std::string> q;
  for (const auto& s : v) q.push_back(py_str(s));
  return "[" + join(q, ", ") + "]";
}

// RFC 9110 token characters: what a header field name may hold.
bool is_header_name(std::string_view name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string random_hex8() {
  std::random_device rd;
  return fmt::format("{:08x}", static_cast<std::uint32_t>(rd()));
}

// Registers an option whose value lands in a std::optional (Python None when absent).
template <class T>
CLI::Option* add_optional(CLI::App& app, const std::string& name, std::optional<T>& target,
                          const std::string& help) {
  return app.add_option_function<T>(
      name, [&target](const T& v) { target = v; }, help);
}

}  // namespace

double parse_python_float(const std::string& text, const std::string& flag) {
  std::string s = lower(strip(text));
  std::string body = s;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body = body.substr(1);
  }
  if (body == "inf" || body == "infinity") return neg ? -INFINITY : INFINITY;
  if (body == "nan") return NAN;
  // Python float(): digits with optional '.', optional exponent, '_' between digits (ignored here).
  bool ok = !body.empty() && body.find_first_not_of("0123456789.e+-_") == std::string::npos &&
            (std::isdigit(static_cast<unsigned char>(body[0])) || body[0] == '.');
  double value = 0.0;
  if (ok) {
    std::string digits;
    for (char c : s)
      if (c != '_') digits += c;
    const char* begin = digits.c_str();
    if (*begin == '+') ++begin;
    auto [ptr, ec] = std::from_chars(begin, digits.c_str() + digits.size(), value);
    ok = ec == std::errc() && ptr == digits.c_str() + digits.size();
  }
  if (!ok) throw ConfigError(fmt::format("argument {}: invalid float value: '{}'", flag, text));
  return value;
}

void add_bench_flags(CLI::App& app, BenchConfig& c) {
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
  add_optional(app, "--tokenizer", c.tokenizer,
               "Name or path of the tokenizer (tokenizer.json file, a directory holding it, or a Hugging Face "
               "id: from the local cache, else downloaded from the Hub into it), if not using the default "
               "(the model id).");
  add_optional(app, "--revision", c.revision,
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
  app.add_option("--dataset-name", c.dataset_name,
                 "Name of the dataset to benchmark on: sharegpt, random, prefix_repetition, custom, sonnet, "
                 "burstgpt, spec_bench, random-mm, hf, timed_trace (other vLLM dataset names are reported as not "
                 "supported).")
      ->capture_default_str();
  add_optional(app, "--dataset-path", c.dataset_path,
               "Path to the dataset file (sharegpt: JSON list of conversations; custom, spec_bench: JSONL; "
               "sonnet: text; burstgpt: CSV; hf: a dataset id in the local HF cache, or its folder).");
  app.add_option("--num-prompts", c.num_prompts, "Number of prompts to process.")->capture_default_str();
  app.add_option("--seed", c.seed, "Seed of the dataset sampling and arrival-time RNGs.")->capture_default_str();
  add_optional(app, "--input-len", c.input_len, "General input length for datasets (maps to --random-input-len).");
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
  app.add_option("--random-prefix-len", c.random_prefix_len,
                 "Number of fixed prefix tokens before the random context (added on top of the input length).")
      ->capture_default_str();
  add_optional(app, "--sharegpt-output-len", c.sharegpt_output_len,
               "Output length for each request. Overrides the output length from the ShareGPT dataset.");
  app.add_option("--custom-output-len", c.custom_output_len,
                 "Number of output tokens per request, used only for the custom dataset (-1: the per-row "
                 "output_tokens).")
      ->capture_default_str();
  app.add_flag("--skip-chat-template", c.skip_chat_template, "Skip applying the chat template (custom dataset).");
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
  add_optional(app, "--random-mm-limit-mm-per-prompt", c.random_mm_limit_mm_per_prompt,
               "Per-modality hard caps for items per request, JSON (default {\"image\": 255, \"video\": 1}).");
  add_optional(app, "--random-mm-bucket-config", c.random_mm_bucket_config,
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
  app.add_flag("--no-oversample", c.no_oversample, "Do not oversample if the dataset has fewer samples than --num-prompts.");
  app.add_flag("--disable-shuffle", c.disable_shuffle, "Disable shuffling of dataset samples for deterministic ordering.");
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
  app.add_flag("--multi-turn", c.multi_turn,
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
  add_optional(app, "--session-concurrency", c.session_concurrency,
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
  app.add_option("--ready-check-timeout-sec", c.ready_check_timeout_sec,
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

  // Sampling / request body.
  app.add_flag("--ignore-eos", c.ignore_eos,
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
  add_optional(app, "--result-filename", c.result_filename,
               "File name of the JSON result (default: {label}-{rate}qps[-concurrency{N}]-{model}-{date}.json).");
  app.add_option("--metadata", c.metadata,
                 "Key-value pairs (e.g. --metadata version=0.3.3 tp=1) recorded in the JSON result.");
  add_optional(app, "--label", c.label, "Prefix of the result file name (default: the backend).");
  app.add_flag("--disable-tqdm", c.disable_tqdm, "Disable the progress bar (it is shown only on a terminal).");

  // argparse semantics: a repeated single-value flag keeps its last value (CLI11 would reject it).
  for (CLI::Option* o : app.get_options())
    if (o->get_items_expected_max() <= 1) o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
}

std::map<std::string, double> parse_goodput(const std::vector<std::string>& pairs) {
  std::map<std::string, double> out;
  for (const auto& pair : pairs) {
    auto parts = split(pair, ':');
    double value = 0.0;
    bool ok = parts.size() == 2;
    if (ok) {
      try {
        value = parse_python_float(parts[1], "--goodput");
      } catch (const ConfigError&) {
        ok = false;
      }
    }
    if (!ok)
      throw ConfigError(
          "Invalid format found for service level objectives. Specify service level objectives for goodput "
          "as \"KEY:VALUE\" pairs, where the key is a metric name, and the value is a number in "
          "milliseconds. (got '" + pair + "')");
    const std::string& name = parts[0];
    if (!contains(kGoodputMetrics, name))
      throw ConfigError(fmt::format(
          "Invalid metric name found, {}: {}. The service level objective name should be one of "
          "['ttft', 'tpot', 'e2el']. ",
          name, python_float_repr(value)));
    if (value < 0 || std::isnan(value))
      throw ConfigError(fmt::format(
          "Invalid value found, {}: {}. The service level objective value should be non-negative.", name,
          python_float_repr(value)));
    out[name] = value;
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> parse_headers(const std::vector<std::string>& items) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("Invalid header format. Please use KEY=VALUE format. (--header '" +
                        common::redact_header_item(item) + "')");
    std::string key = strip(item.substr(0, eq)), value = strip(item.substr(eq + 1));
    if (!is_header_name(key))
      throw ConfigError("Invalid header name '" + common::redact_text(key) +
                        "' (letters, digits and !#$%&'*+-.^_`|~ only; use KEY=VALUE). (--header '" +
                        common::redact_header_item(item) + "')");
    if (value.find_first_of("\r\n") != std::string::npos)
      throw ConfigError("Invalid header value: a line break in --header '" + common::redact_header_item(item) + "'");
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

namespace {
// timed_trace and --multi-turn flag combinations.
void validate_session_flags(const BenchConfig& c) {
  if (c.dataset_name == "timed_trace" && c.backend == "openai-chat")
    throw ConfigError("--dataset-name timed_trace sends token-id prompts: use --backend openai or vllm "
                      "(the completions API), not openai-chat");
  if (c.self_timed && c.dataset_name != "timed_trace")
    throw ConfigError("--self-timed is only for --dataset-name timed_trace");
  if (!(c.timed_trace_sec_multiplier > 0) || c.timed_trace_sec_multiplier > 1e6)
    throw ConfigError(fmt::format("--timed-trace-sec-multiplier must be > 0 and at most 1e6 (got {})",
                                  python_float_repr(c.timed_trace_sec_multiplier)));
  if (c.self_timed && c.ramp_up_strategy)
    throw ConfigError("--self-timed sends at the trace's times: it cannot be combined with --ramp-up-strategy");
  const bool session_flags = c.multi_turn_history != "server" || c.multi_turn_think_time_ms != 0.0 ||
                             c.multi_turn_max_turns || c.session_concurrency;
  if (!c.multi_turn) {
    if (session_flags)
      throw ConfigError(
          "--multi-turn-history, --multi-turn-think-time-ms, --multi-turn-max-turns and --session-concurrency "
          "need --multi-turn");
    return;
  }
  if (c.dataset_name != "sharegpt")
    throw ConfigError(fmt::format("--multi-turn reads ShareGPT conversations: use --dataset-name sharegpt (got {})",
                                  c.dataset_name));
  if (c.backend != "openai-chat")
    throw ConfigError("--multi-turn sends chat messages: use --backend openai-chat --endpoint /v1/chat/completions");
  if (c.multi_turn_history != "server" && c.multi_turn_history != "dataset")
    throw ConfigError("--multi-turn-history: '" + c.multi_turn_history + "' not in {server, dataset}");
  if (!(c.multi_turn_think_time_ms >= 0) || c.multi_turn_think_time_ms > 1e9)
    throw ConfigError(fmt::format("--multi-turn-think-time-ms must be in [0, 1e9] (got {})",
                                  python_float_repr(c.multi_turn_think_time_ms)));
  if (c.multi_turn_max_turns && *c.multi_turn_max_turns < 1)
    throw ConfigError(fmt::format("--multi-turn-max-turns must be >= 1 (got {})", *c.multi_turn_max_turns));
  if (c.session_concurrency && *c.session_concurrency < 1)
    throw ConfigError(fmt::format("--session-concurrency must be >= 1 (got {})", *c.session_concurrency));
}
}  // namespace

ResolvedConfig resolve(const BenchConfig& c) {
  ResolvedConfig r;
  if (!contains(kBackends, c.backend))
    throw ConfigError(fmt::format("--backend: '{}' is not supported (choose from {})", c.backend,
                                  join(kBackends, ", ")));
  if (c.backend == "openai-chat") {
    if (!ends_with(c.endpoint, "chat/completions"))
      throw ConfigError(fmt::format(
          "OpenAI Chat Completions API URL must end with 'chat/completions'. (--endpoint '{}'; the "
          "openai-chat backend needs --endpoint /v1/chat/completions)",
          c.endpoint));
  } else if (ends_with(c.endpoint, "chat/completions")) {
    // vLLM accepts this and every request then fails (a "prompt" body on the chat API); say so up front, as
    // for the reverse case above.
    throw ConfigError(fmt::format(
        "--backend {} sends completions requests (a \"prompt\" body), but --endpoint '{}' is the chat "
        "completions API: use --backend openai-chat for it (or --endpoint /v1/completions)",
        c.backend, c.endpoint));
  } else if (!ends_with(c.endpoint, "completions") && !ends_with(c.endpoint, "profile")) {
    throw ConfigError(fmt::format(
        "OpenAI Completions API URL must end with 'completions' or 'profile'. (--endpoint '{}')", c.endpoint));
  }
  if (!contains(kTokenizerModes, c.tokenizer_mode))
    throw ConfigError(fmt::format("--tokenizer-mode: '{}' is not one of {}", c.tokenizer_mode,
                                  join(kTokenizerModes, ", ")));
  if (c.tokenizer_mode == "mistral")
    throw ConfigError(
        "--tokenizer-mode mistral is not supported: it loads Mistral's mistral_common tokenizer (tekken.json or a "
        "SentencePiece tokenizer.model.v*), which servelab does not implement. servelab reads a Hugging Face "
        "tokenizer.json (most Mistral repositories ship one): use --tokenizer-mode auto");
  if (c.tokenizer_mode == "custom")
    throw ConfigError(
        "--tokenizer-mode custom is not supported: it instantiates a Python tokenizer class registered in "
        "vLLM's TokenizerRegistry under the --tokenizer name, and servelab runs no Python. Use --tokenizer-mode "
        "auto with a tokenizer.json");
  if (c.port <= 0 || c.port > 65535) throw ConfigError(fmt::format("--port {} is not a TCP port", c.port));
  r.headers = parse_headers(c.header);
  for (const auto& item : c.metadata) {
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("Invalid metadata format. Please use KEY=VALUE format. (--metadata '" + item + "')");
    r.metadata.emplace_back(strip(item.substr(0, eq)), strip(item.substr(eq + 1)));
  }

  // Dataset.
  if (contains(kDatasetsNotSupported, c.dataset_name))
    throw ConfigError(fmt::format("--dataset-name {} is a vLLM dataset servelab does not support yet "
                                  "(supported: {})",
                                  c.dataset_name, join(kDatasets, ", ")));
  if (!contains(kDatasets, c.dataset_name))
    throw ConfigError(fmt::format("--dataset-name: unknown dataset '{}' (choose from {})", c.dataset_name,
                                  join(kDatasets, ", ")));
  bool synthetic = c.dataset_name == "random" || c.dataset_name == "prefix_repetition" ||
                   c.dataset_name == "random-mm";
  if (synthetic && c.dataset_path)
    throw ConfigError(fmt::format("--dataset-path is not used with --dataset-name {} (got '{}')",
                                  c.dataset_name, *c.dataset_path));
  if (!synthetic && !c.dataset_path)
    throw ConfigError(fmt::format(
        "dataset_path must be provided for loading the dataset. (--dataset-name {} needs --dataset-path)",
        c.dataset_name));
  if (c.seed < 0 || c.seed > 4294967295LL)  // numpy np.random.seed's range (legacy MT19937)
    throw ConfigError(fmt::format("--seed {}: Seed must be between 0 and 2**32 - 1", c.seed));
  if (c.num_prompts < 1) throw ConfigError(fmt::format("--num-prompts must be >= 1 (got {})", c.num_prompts));
  validate_session_flags(c);
  r.random_input_len = c.input_len.value_or(c.random_input_len);
  r.random_output_len = c.output_len.value_or(c.random_output_len);
  r.sharegpt_output_len = c.output_len ? c.output_len : c.sharegpt_output_len;
  r.custom_output_len = c.output_len.value_or(c.custom_output_len);
  r.prefix_repetition_output_len = c.output_len.value_or(c.prefix_repetition_output_len);
  if (r.random_input_len < 0) throw ConfigError(fmt::format("--random-input-len must be >= 0 (got {})", r.random_input_len));
  if (r.random_output_len < 1) throw ConfigError(fmt::format("--random-output-len must be >= 1 (got {})", r.random_output_len));
  if (c.random_prefix_len < 0) throw ConfigError(fmt::format("--random-prefix-len must be >= 0 (got {})", c.random_prefix_len));
  if (r.sharegpt_output_len && *r.sharegpt_output_len < 1)
    throw ConfigError(fmt::format("--sharegpt-output-len must be >= 1 (got {})", *r.sharegpt_output_len));
  if (r.custom_output_len != -1 && r.custom_output_len < 1)
    throw ConfigError(fmt::format("--custom-output-len must be -1 or >= 1 (got {})", r.custom_output_len));
  if (c.prefix_repetition_prefix_len < 0 || c.prefix_repetition_suffix_len < 0 ||
      c.prefix_repetition_num_prefixes < 1 || r.prefix_repetition_output_len < 1)
    throw ConfigError(fmt::format(
        "--prefix-repetition-*: prefix-len and suffix-len must be >= 0, num-prefixes and output-len >= 1 "
        "(got {}, {}, {}, {})",
        c.prefix_repetition_prefix_len, c.prefix_repetition_suffix_len, c.prefix_repetition_num_prefixes,
        r.prefix_repetition_output_len));
  if (c.dataset_name == "prefix_repetition" && c.num_prompts < c.prefix_repetition_num_prefixes)
    throw ConfigError(fmt::format("num_requests ({}) must be greater than or equal to num_prefixes ({})",
                                  c.num_prompts, c.prefix_repetition_num_prefixes));
  try {
    r.random_range_ratio = dataset::parse_range_ratio(c.random_range_ratio);
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
  try {
    const dataset::DatasetOptions defaults;
    r.random_mm_limit_mm_per_prompt = c.random_mm_limit_mm_per_prompt
                                          ? dataset::parse_mm_limit_per_prompt(*c.random_mm_limit_mm_per_prompt)
                                          : defaults.random_mm_limit_mm_per_prompt;
    r.random_mm_bucket_config = c.random_mm_bucket_config ? dataset::parse_mm_bucket_config(*c.random_mm_bucket_config)
                                                          : defaults.random_mm_bucket_config;
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
  if (c.dataset_name == "random-mm" && c.backend != "openai-chat")
    throw ConfigError(fmt::format("Multi-modal content is only supported on 'openai-chat' and 'openai-audio' "
                                  "backends. (--dataset-name random-mm with --backend {})",
                                  c.backend));
  r.request_id_prefix = c.request_id_prefix.empty() ? "bench-" + random_hex8() + "-" : c.request_id_prefix;

  // Traffic.
  r.request_rate = parse_python_float(c.request_rate, "--request-rate");
  if (!(r.request_rate > 0))
    throw ConfigError(fmt::format("--request-rate must be > 0 or inf (got {})", c.request_rate));
  if (!(c.burstiness > 0))
    throw ConfigError(fmt::format("A positive burstiness factor is expected, but given {}.",
                                  python_float_repr(c.burstiness)));
  if (c.max_concurrency && *c.max_concurrency <= 0)
    throw ConfigError(fmt::format("--max-concurrency must be greater than 0 (got {})", *c.max_concurrency));
  if (c.ramp_up_strategy) {
    if (*c.ramp_up_strategy != "linear" && *c.ramp_up_strategy != "exponential")
      throw ConfigError("--ramp-up-strategy: '" + *c.ramp_up_strategy + "' not in {linear, exponential}");
    if (!std::isinf(r.request_rate))
      throw ConfigError(
          "When using ramp-up, do not specify --request-rate. The request rate will be controlled by ramp-up "
          "parameters. Please remove the --request-rate argument.");
    if (!c.ramp_up_start_rps || !c.ramp_up_end_rps)
      throw ConfigError(
          "When using --ramp-up-strategy, both --ramp-up-start-rps and --ramp-up-end-rps must be specified");
    if (*c.ramp_up_start_rps < 0 || *c.ramp_up_end_rps < 0)
      throw ConfigError("Ramp-up start and end RPS must be non-negative");
    if (*c.ramp_up_start_rps > *c.ramp_up_end_rps)
      throw ConfigError("Ramp-up start RPS must be less than end RPS");
    if (*c.ramp_up_strategy == "exponential" && *c.ramp_up_start_rps == 0)
      throw ConfigError("For exponential ramp-up, the start RPS cannot be 0.");
    if (*c.ramp_up_end_rps == 0)
      throw ConfigError("Ramp-up end RPS must be > 0 (a rate of 0 never sends)");
  } else if (c.ramp_up_start_rps || c.ramp_up_end_rps) {
    throw ConfigError("--ramp-up-start-rps/--ramp-up-end-rps need --ramp-up-strategy linear|exponential");
  }
  if (c.logprobs && c.backend == "openai-chat")
    throw ConfigError("--logprobs is only supported by the completions backends (openai, vllm)");
  if (c.num_warmups < 0) throw ConfigError(fmt::format("--num-warmups must be >= 0 (got {})", c.num_warmups));
  if (c.ready_check_timeout_sec < 0)
    throw ConfigError(fmt::format("--ready-check-timeout-sec must be >= 0 (got {})", c.ready_check_timeout_sec));
  if (!(c.server_metrics_interval_s > 0) || c.server_metrics_interval_s > 1e6)
    throw ConfigError(fmt::format("--server-metrics-interval-s must be > 0 and at most 1e6 s (got {})",
                                  python_float_repr(c.server_metrics_interval_s)));
  if (!(c.request_timeout_s > 0) || c.request_timeout_s > 1e9)
    throw ConfigError(fmt::format("--request-timeout-s must be > 0 and at most 1e9 s (got {})",
                                  python_float_repr(c.request_timeout_s)));

  // Request body.
  if (c.extra_body) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(*c.extra_body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw ConfigError("argument --extra-body: not a JSON object: '" + *c.extra_body + "'");
    r.extra_body = std::move(j);
  }

  // Reporting.
  for (const auto& m : split(c.percentile_metrics.value_or("ttft,tpot,itl"), ',')) {
    std::string name = strip(m);
    if (!contains(kPercentileMetrics, name))
      throw ConfigError(fmt::format("--percentile-metrics: unknown metric '{}' (choose from {})", name,
                                    join(kPercentileMetrics, ", ")));
    if (!contains(r.percentile_metrics, name)) r.percentile_metrics.push_back(name);
  }
  for (const auto& p : split(c.metric_percentiles, ',')) {
    double v = parse_python_float(p, "--metric-percentiles");
    if (!(v >= 0 && v <= 100))
      throw ConfigError(fmt::format("--metric-percentiles: Percentiles must be in the range [0, 100] (got '{}')",
                                    strip(p)));
    r.metric_percentiles.push_back(v);
  }
  r.goodput_slo_ms = parse_goodput(c.goodput);
  return r;
}

Urls build_urls(const BenchConfig& c) {
  Urls u;
  if (c.base_url) {
    u.base_url = *c.base_url;
  } else {
    std::string host = c.host;
    if (host.find(':') != std::string::npos && !(host.size() > 1 && host.front() == '['))
      host = "[" + host + "]";
    u.base_url = fmt::format("http://{}:{}", host, c.port);
  }
  u.api_url = u.base_url + c.endpoint;
  return u;
}

namespace {

/// repr() of the parsed --random-mm-bucket-config dict (vLLM's argparse type returns the dict).
std::string mm_bucket_repr(const std::optional<std::string>& text) {
  std::vector<dataset::MultiModalBucket> buckets = dataset::DatasetOptions{}.random_mm_bucket_config;
  if (text) {
    try {
      buckets = dataset::parse_mm_bucket_config(*text);
    } catch (const std::exception&) {
      return py_str(*text);
    }
  }
  std::string out = "{";
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    const auto& b = buckets[i];
    out += fmt::format("{}({}, {}, {}): {}", i ? ", " : "", b.height, b.width, b.num_frames,
                       python_float_repr(b.probability));
  }
  return out + "}";
}

/// repr() of the parsed --random-mm-limit-mm-per-prompt dict.
std::string mm_limit_repr(const std::optional<std::string>& text) {
  std::vector<std::pair<std::string, int>> limits = dataset::DatasetOptions{}.random_mm_limit_mm_per_prompt;
  if (text) {
    try {
      limits = dataset::parse_mm_limit_per_prompt(*text);
    } catch (const std::exception&) {
      return py_str(*text);
    }
  }
  std::string out = "{";
  for (std::size_t i = 0; i < limits.size(); ++i)
    out += fmt::format("{}{}: {}", i ? ", " : "", py_str(limits[i].first), limits[i].second);
  return out + "}";
}

}  // namespace

std::string namespace_repr(const BenchConfig& c) {
  std::vector<std::string> headers;
  for (const auto& item : c.header) headers.push_back(common::redact_header_item(item));
  std::vector<std::string> metadata;  // KEY=VALUE too: a credential-named key hides its value
  for (const auto& item : c.metadata) metadata.push_back(common::redact_header_item(item));
  const std::optional<std::string> base_url =
      c.base_url ? std::optional<std::string>(common::redact_url(*c.base_url)) : std::nullopt;
  std::string request_rate;  // argparse type=float: printed as a float when it parses
  try {
    request_rate = python_float_repr(parse_python_float(c.request_rate, "--request-rate"));
  } catch (const ConfigError&) {
    request_rate = py_str(c.request_rate);
  }
  std::vector<std::pair<std::string, std::string>> kv = {
      {"append_result", py_bool(c.append_result)},
      {"backend", py_str(c.backend)},
      {"base_url", py_opt(base_url)},
      {"burstiness", python_float_repr(c.burstiness)},
      {"custom_output_len", std::to_string(c.custom_output_len)},
      {"dataset_name", py_str(c.dataset_name)},
      {"dataset_path", py_opt(c.dataset_path)},
      {"disable_shuffle", py_bool(c.disable_shuffle)},
      {"disable_tqdm", py_bool(c.disable_tqdm)},
      {"endpoint", py_str(c.endpoint)},
      {"extra_body", py_opt(c.extra_body)},
      {"frequency_penalty", py_opt(c.frequency_penalty)},
      {"goodput", py_list(c.goodput)},
      {"header", py_list(headers)},
      {"hf_name", py_opt(c.hf_name)},
      {"hf_output_len", py_opt(c.hf_output_len)},
      {"hf_split", py_opt(c.hf_split)},
      {"hf_subset", py_opt(c.hf_subset)},
      {"host", py_str(c.host)},
      {"ignore_eos", py_bool(c.ignore_eos)},
      {"input_len", py_opt(c.input_len)},
      {"insecure", py_bool(c.insecure)},
      {"label", py_opt(c.label)},
      {"logprobs", py_opt(c.logprobs)},
      {"max_concurrency", py_opt(c.max_concurrency)},
      {"metadata", py_list(metadata)},
      {"metric_percentiles", py_str(c.metric_percentiles)},
      {"min_p", py_opt(c.min_p)},
      {"model", py_opt(c.model)},
      {"multi_turn", py_bool(c.multi_turn)},
      {"multi_turn_history", py_str(c.multi_turn_history)},
      {"multi_turn_max_turns", py_opt(c.multi_turn_max_turns)},
      {"multi_turn_think_time_ms", python_float_repr(c.multi_turn_think_time_ms)},
      {"no_oversample", py_bool(c.no_oversample)},
      {"no_server_metrics", py_bool(c.no_server_metrics)},
      {"no_stream", py_bool(c.no_stream)},
      {"num_prompts", std::to_string(c.num_prompts)},
      {"num_warmups", std::to_string(c.num_warmups)},
      {"output_len", py_opt(c.output_len)},
      {"percentile_metrics", py_opt(c.percentile_metrics)},
      {"port", std::to_string(c.port)},
      {"preconnect", py_bool(c.preconnect)},
      {"prefix_repetition_num_prefixes", std::to_string(c.prefix_repetition_num_prefixes)},
      {"prefix_repetition_output_len", std::to_string(c.prefix_repetition_output_len)},
      {"prefix_repetition_prefix_len", std::to_string(c.prefix_repetition_prefix_len)},
      {"prefix_repetition_suffix_len", std::to_string(c.prefix_repetition_suffix_len)},
      {"presence_penalty", py_opt(c.presence_penalty)},
      {"ramp_up_end_rps", py_opt(c.ramp_up_end_rps)},
      {"ramp_up_start_rps", py_opt(c.ramp_up_start_rps)},
      {"ramp_up_strategy", py_opt(c.ramp_up_strategy)},
      {"random_input_len", std::to_string(c.random_input_len)},
      {"random_mm_base_items_per_request", std::to_string(c.random_mm_base_items_per_request)},
      {"random_mm_bucket_config", mm_bucket_repr(c.random_mm_bucket_config)},
      {"random_mm_limit_mm_per_prompt", mm_limit_repr(c.random_mm_limit_mm_per_prompt)},
      {"random_mm_num_mm_items_range_ratio", python_float_repr(c.random_mm_num_mm_items_range_ratio)},
      {"random_output_len", std::to_string(c.random_output_len)},
      {"random_prefix_len", std::to_string(c.random_prefix_len)},
      {"random_range_ratio", py_str(c.random_range_ratio)},
      {"ready_check_timeout_sec", std::to_string(c.ready_check_timeout_sec)},
      {"repetition_penalty", py_opt(c.repetition_penalty)},
      {"request_id_prefix", c.request_id_prefix.empty() ? "None" : py_str(c.request_id_prefix)},
      {"request_rate", request_rate},
      {"request_timeout_s", python_float_repr(c.request_timeout_s)},
      {"result_dir", py_opt(c.result_dir)},
      {"result_filename", py_opt(c.result_filename)},
      {"revision", py_opt(c.revision)},
      {"save_detailed", py_bool(c.save_detailed)},
      {"save_result", py_bool(c.save_result)},
      {"seed", std::to_string(c.seed)},
      {"self_timed", py_bool(c.self_timed)},
      {"served_model_name", py_opt(c.served_model_name)},
      {"server_metrics_interval_s", python_float_repr(c.server_metrics_interval_s)},
      {"session_concurrency", py_opt(c.session_concurrency)},
      {"sharegpt_output_len", py_opt(c.sharegpt_output_len)},
      {"skip_chat_template", py_bool(c.skip_chat_template)},
      {"sonnet_input_len", std::to_string(c.sonnet_input_len)},
      {"sonnet_output_len", std::to_string(c.sonnet_output_len)},
      {"sonnet_prefix_len", std::to_string(c.sonnet_prefix_len)},
      {"spec_bench_category", py_opt(c.spec_bench_category)},
      {"spec_bench_output_len", std::to_string(c.spec_bench_output_len)},
      {"temperature", py_opt(c.temperature)},
      {"timed_trace_sec_multiplier", python_float_repr(c.timed_trace_sec_multiplier)},
      {"tokenizer", py_opt(c.tokenizer)},
      {"tokenizer_mode", py_str(c.tokenizer_mode)},
      {"top_k", py_opt(c.top_k)},
      {"top_p", py_opt(c.top_p)},
      {"trust_remote_code", py_bool(c.trust_remote_code)},
  };
  std::string out = "Namespace(";
  for (std::size_t i = 0; i < kv.size(); ++i) {
    if (i) out += ", ";
    out += kv[i].first + "=" + kv[i].second;
  }
  return out + ")";
}

dataset::DatasetOptions dataset_options(const BenchConfig& c, const ResolvedConfig& r) {
  dataset::DatasetOptions d;
  d.dataset_name = c.dataset_name;
  d.dataset_path = c.dataset_path;
  d.num_prompts = c.num_prompts;
  d.seed = c.seed;
  d.input_len = c.input_len;
  d.output_len = c.output_len;
  d.random_input_len = c.random_input_len;
  d.random_output_len = c.random_output_len;
  d.random_range_ratio = r.random_range_ratio;
  d.random_prefix_len = c.random_prefix_len;
  d.sharegpt_output_len = c.sharegpt_output_len;
  d.custom_output_len = c.custom_output_len;
  d.skip_chat_template = c.skip_chat_template;
  d.tokenizer_mode = c.tokenizer_mode;
  d.prefix_repetition_prefix_len = c.prefix_repetition_prefix_len;
  d.prefix_repetition_suffix_len = c.prefix_repetition_suffix_len;
  d.prefix_repetition_num_prefixes = c.prefix_repetition_num_prefixes;
  d.prefix_repetition_output_len = c.prefix_repetition_output_len;
  d.sonnet_input_len = c.sonnet_input_len;
  d.sonnet_output_len = c.sonnet_output_len;
  d.sonnet_prefix_len = c.sonnet_prefix_len;
  d.spec_bench_output_len = c.spec_bench_output_len;
  d.spec_bench_category = c.spec_bench_category;
  d.random_mm_base_items_per_request = c.random_mm_base_items_per_request;
  d.random_mm_num_mm_items_range_ratio = c.random_mm_num_mm_items_range_ratio;
  d.random_mm_limit_mm_per_prompt = r.random_mm_limit_mm_per_prompt;
  d.random_mm_bucket_config = r.random_mm_bucket_config;
  d.hf_subset = c.hf_subset;
  d.hf_split = c.hf_split;
  d.hf_name = c.hf_name;
  d.hf_output_len = c.hf_output_len;
  d.no_stream = c.no_stream;
  d.backend = c.backend;
  d.no_oversample = c.no_oversample;
  d.disable_shuffle = c.disable_shuffle;
  d.request_id_prefix = r.request_id_prefix;
  return d;
}


}  // namespace servelab::bench
