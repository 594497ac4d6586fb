// servelab/bench: `bench serve` flag parsing helpers, validation (resolve), the Namespace(...) repr and the
// dataset options; the flag registration (add_bench_flags) is in config_flags.cc.
#include "servelab/bench/config.h"
#include "bench/shard.h"

#include "servelab/common/printable.h"
#include "servelab/common/python_json.h"
#include "servelab/common/redact.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <random>
#include "servelab/common/text.h"

namespace servelab::bench {
namespace {

using common::python_float_repr;

std::string strip(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
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
std::string py_bool(bool b) {
  return b ? "True" : "False";
}
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
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

std::string random_hex8() {
  std::random_device rd;
  return fmt::format("{:08x}", static_cast<std::uint32_t>(rd()));
}

}  // namespace

double parse_python_float(const std::string& text, const std::string& flag) {
  std::string s = common::ascii_lower(strip(text));
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
  if (!ok)
    throw ConfigError(fmt::format("argument {}: invalid float value: '{}'", flag, common::printable(text)));
  return value;
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
          "milliseconds. (got '" +
          pair + "')");
    const std::string& name = parts[0];
    if (!contains(kGoodputMetrics, name))
      throw ConfigError(
          fmt::format("Invalid metric name found, {}: {}. The service level objective name should be one of "
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
      throw ConfigError("Invalid header value: a line break in --header '" +
                        common::redact_header_item(item) + "'");
    out.emplace_back(std::move(key), std::move(value));
  }
  return out;
}

namespace {
// timed_trace and --multi-turn flag combinations.
void validate_session_flags(const RunOptions& c) {
  if (c.dataset_name == "timed_trace" && c.backend == "openai-chat")
    throw ConfigError(
        "--dataset-name timed_trace sends token-id prompts: use --backend openai or vllm "
        "(the completions API), not openai-chat");
  if (c.self_timed && c.dataset_name != "timed_trace")
    throw ConfigError("--self-timed is only for --dataset-name timed_trace");
  if (!(c.timed_trace_sec_multiplier > 0) || c.timed_trace_sec_multiplier > 1e6)
    throw ConfigError(fmt::format("--timed-trace-sec-multiplier must be > 0 and at most 1e6 (got {})",
                                  python_float_repr(c.timed_trace_sec_multiplier)));
  if (c.self_timed && c.ramp_up_strategy)
    throw ConfigError(
        "--self-timed sends at the trace's times: it cannot be combined with --ramp-up-strategy");
  const bool session_flags = c.multi_turn_history != "server" || c.multi_turn_think_time_ms != 0.0 ||
                             c.multi_turn_max_turns || c.session_concurrency;
  if (!c.multi_turn) {
    if (session_flags)
      throw ConfigError(
          "--multi-turn-history, --multi-turn-think-time-ms, --multi-turn-max-turns and "
          "--session-concurrency "
          "need --multi-turn");
    return;
  }
  if (c.dataset_name != "sharegpt")
    throw ConfigError(fmt::format(
        "--multi-turn reads ShareGPT conversations: use --dataset-name sharegpt (got {})", c.dataset_name));
  if (c.backend != "openai-chat")
    throw ConfigError(
        "--multi-turn sends chat messages: use --backend openai-chat --endpoint /v1/chat/completions");
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

// --shard / --start-at / --clock-reference (bench/shard.h): what a shard needs and what it cannot do yet.
void check_shard_flags(const RunOptions& c) {
  if (!c.shard) {
    if (c.start_at) throw ConfigError("--start-at needs --shard I/N (for one host: --shard 0/1)");
    if (c.clock_reference) throw ConfigError("--clock-reference needs --shard I/N");
    return;
  }
  const ShardSpec spec = parse_shard_spec(*c.shard);
  if (!c.start_at)
    throw ConfigError(
        fmt::format("--shard {} needs --start-at EPOCH_S, the common start time of every shard", *c.shard));
  if (!c.save_result || !c.save_detailed)
    throw ConfigError(
        fmt::format("--shard {} needs --save-result and --save-detailed: bench merge joins the "
                    "shards' per-request records",
                    *c.shard));
  if (c.append_result)
    throw ConfigError(
        "--shard with --append-result: a shard result must be a file of its own (bench merge "
        "reads one result per file)");
  if (c.multi_turn)
    throw ConfigError("--shard with --multi-turn is not supported (sessions are not sharded yet)");
  if (c.ramp_up_strategy)
    throw ConfigError(
        "--shard with --ramp-up-strategy is not supported (the merged report's rps_change_events "
        "are not rebuilt yet)");
  if (c.max_concurrency && *c.max_concurrency > 0) shard_max_concurrency(*c.max_concurrency, spec);
}
}  // namespace

namespace {

// --backend and --endpoint: a supported backend whose API the endpoint is (chat vs completions).
void check_backend_and_endpoint(const RunOptions& c) {
  if (!contains(kBackends, c.backend))
    throw ConfigError(
        fmt::format("--backend: '{}' is not supported (choose from {})", c.backend, join(kBackends, ", ")));
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
    throw ConfigError(
        fmt::format("OpenAI Completions API URL must end with 'completions' or 'profile'. (--endpoint '{}')",
                    c.endpoint));
  }
}

// --tokenizer-mode: one of vLLM's modes, and one servelab implements (a Hugging Face tokenizer.json).
void check_tokenizer_mode(const RunOptions& c) {
  if (!contains(kTokenizerModes, c.tokenizer_mode))
    throw ConfigError(fmt::format("--tokenizer-mode: '{}' is not one of {}", c.tokenizer_mode,
                                  join(kTokenizerModes, ", ")));
  if (c.tokenizer_mode == "mistral")
    throw ConfigError(
        "--tokenizer-mode mistral is not supported: it loads Mistral's mistral_common tokenizer (tekken.json "
        "or a "
        "SentencePiece tokenizer.model.v*), which servelab does not implement. servelab reads a Hugging Face "
        "tokenizer.json (most Mistral repositories ship one): use --tokenizer-mode auto");
  if (c.tokenizer_mode == "custom")
    throw ConfigError(
        "--tokenizer-mode custom is not supported: it instantiates a Python tokenizer class registered in "
        "vLLM's TokenizerRegistry under the --tokenizer name, and servelab runs no Python. Use "
        "--tokenizer-mode "
        "auto with a tokenizer.json");
}

// --port, --header and --metadata (KEY=VALUE, stripped).
void resolve_connection(const RunOptions& c, ResolvedConfig& r) {
  if (c.port <= 0 || c.port > 65535) throw ConfigError(fmt::format("--port {} is not a TCP port", c.port));
  r.headers = parse_headers(c.header);
  for (const auto& item : c.metadata) {
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw ConfigError("Invalid metadata format. Please use KEY=VALUE format. (--metadata '" + item + "')");
    r.metadata.emplace_back(strip(item.substr(0, eq)), strip(item.substr(eq + 1)));
  }
}

// --dataset-name, --dataset-path, --seed, --num-prompts and the multi-turn flags.
void check_dataset_choice(const RunOptions& c) {
  if (contains(kDatasetsNotSupported, c.dataset_name))
    throw ConfigError(
        fmt::format("--dataset-name {} is a vLLM dataset servelab does not support yet "
                    "(supported: {})",
                    c.dataset_name, join(kDatasets, ", ")));
  if (!contains(kDatasets, c.dataset_name))
    throw ConfigError(fmt::format("--dataset-name: unknown dataset '{}' (choose from {})", c.dataset_name,
                                  join(kDatasets, ", ")));
  bool synthetic =
      c.dataset_name == "random" || c.dataset_name == "prefix_repetition" || c.dataset_name == "random-mm";
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
}

// The per-dataset input/output lengths (tokens; --input-len/--output-len override each dataset's own flag).
void resolve_lengths(const RunOptions& c, ResolvedConfig& r) {
  r.random_input_len = c.input_len.value_or(c.random_input_len);
  r.random_output_len = c.output_len.value_or(c.random_output_len);
  r.sharegpt_output_len = c.output_len ? c.output_len : c.sharegpt_output_len;
  r.custom_output_len = c.output_len.value_or(c.custom_output_len);
  r.prefix_repetition_output_len = c.output_len.value_or(c.prefix_repetition_output_len);
  if (r.random_input_len < 0)
    throw ConfigError(fmt::format("--random-input-len must be >= 0 (got {})", r.random_input_len));
  if (r.random_output_len < 1)
    throw ConfigError(fmt::format("--random-output-len must be >= 1 (got {})", r.random_output_len));
  if (c.random_prefix_len < 0)
    throw ConfigError(fmt::format("--random-prefix-len must be >= 0 (got {})", c.random_prefix_len));
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
}

// The synthetic datasets' distributions: --random-range-ratio and random-mm's items per prompt and buckets
// (random-mm needs the openai-chat backend).
void resolve_synthetic(const RunOptions& c, ResolvedConfig& r) {
  try {
    r.random_range_ratio = dataset::parse_range_ratio(c.random_range_ratio);
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
  try {
    const dataset::DatasetOptions defaults;
    r.random_mm_limit_mm_per_prompt =
        c.random_mm_limit_mm_per_prompt ? dataset::parse_mm_limit_per_prompt(*c.random_mm_limit_mm_per_prompt)
                                        : defaults.random_mm_limit_mm_per_prompt;
    r.random_mm_bucket_config = c.random_mm_bucket_config
                                    ? dataset::parse_mm_bucket_config(*c.random_mm_bucket_config)
                                    : defaults.random_mm_bucket_config;
  } catch (const std::exception& e) {
    throw ConfigError(e.what());
  }
  if (c.dataset_name == "random-mm" && c.backend != "openai-chat")
    throw ConfigError(
        fmt::format("Multi-modal content is only supported on 'openai-chat' and 'openai-audio' "
                    "backends. (--dataset-name random-mm with --backend {})",
                    c.backend));
}

// Traffic: --request-rate (req/s, inf = all at t = 0), --burstiness, --max-concurrency and the ramp-up.
void resolve_traffic(const RunOptions& c, ResolvedConfig& r) {
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
    if (*c.ramp_up_end_rps == 0) throw ConfigError("Ramp-up end RPS must be > 0 (a rate of 0 never sends)");
  } else if (c.ramp_up_start_rps || c.ramp_up_end_rps) {
    throw ConfigError("--ramp-up-start-rps/--ramp-up-end-rps need --ramp-up-strategy linear|exponential");
  }
}

// --logprobs, --num-warmups and the time limits (s): ready check, server-metrics interval, request timeout.
void check_request_limits(const RunOptions& c) {
  if (c.logprobs && c.backend == "openai-chat")
    throw ConfigError("--logprobs is only supported by the completions backends (openai, vllm)");
  if (c.num_warmups < 0) throw ConfigError(fmt::format("--num-warmups must be >= 0 (got {})", c.num_warmups));
  if (c.ready_check_timeout_s < 0)
    throw ConfigError(
        fmt::format("--ready-check-timeout-sec must be >= 0 (got {})", c.ready_check_timeout_s));
  if (!(c.server_metrics_interval_s > 0) || c.server_metrics_interval_s > 1e6)
    throw ConfigError(fmt::format("--server-metrics-interval-s must be > 0 and at most 1e6 s (got {})",
                                  python_float_repr(c.server_metrics_interval_s)));
  if (!(c.request_timeout_s > 0) || c.request_timeout_s > 1e9)
    throw ConfigError(fmt::format("--request-timeout-s must be > 0 and at most 1e9 s (got {})",
                                  python_float_repr(c.request_timeout_s)));
}

// Reporting: --percentile-metrics (deduplicated, in order), --metric-percentiles and --goodput (ms).
void resolve_reporting(const RunOptions& c, ResolvedConfig& r) {
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
      throw ConfigError(fmt::format(
          "--metric-percentiles: Percentiles must be in the range [0, 100] (got '{}')", strip(p)));
    r.metric_percentiles.push_back(v);
  }
  r.goodput_slo_ms = parse_goodput(c.goodput);
}

}  // namespace

ResolvedConfig resolve(const RunOptions& c) {
  ResolvedConfig r;
  check_backend_and_endpoint(c);
  check_tokenizer_mode(c);
  resolve_connection(c, r);
  check_dataset_choice(c);
  resolve_lengths(c, r);
  resolve_synthetic(c, r);
  r.request_id_prefix = !c.request_id_prefix.empty() ? c.request_id_prefix
                        : c.shard && c.start_at
                            ? shard_request_id_prefix(c.seed, *c.start_at)  // same on every shard
                            : "bench-" + random_hex8() + "-";
  check_shard_flags(c);
  resolve_traffic(c, r);
  check_request_limits(c);
  // Request body: --extra-body must be a JSON object.
  if (c.extra_body) {
    nlohmann::ordered_json j = nlohmann::ordered_json::parse(*c.extra_body, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw ConfigError("argument --extra-body: not a JSON object: '" +
                        common::redact_json_text(*c.extra_body) + "'");
    r.extra_body = std::move(j);
  }
  resolve_reporting(c, r);
  return r;
}

Urls build_urls(const RunOptions& c) {
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

namespace {

// The values namespace_repr prints differently from the flag's own: secrets redacted, the rate as a float.
struct PrintedValues {
  std::vector<std::string> headers;       // --header KEY=VALUE, credential values hidden
  std::vector<std::string> metadata;      // --metadata KEY=VALUE too: a credential-named key hides its value
  std::optional<std::string> base_url;    // URL credentials hidden
  std::optional<std::string> extra_body;  // --extra-body JSON, values of credential-named keys hidden
  std::string request_rate;               // argparse type=float: printed as a float when it parses
};

PrintedValues printed_values(const RunOptions& c) {
  PrintedValues p;
  for (const auto& item : c.header) p.headers.push_back(common::redact_header_item(item));
  for (const auto& item : c.metadata) p.metadata.push_back(common::redact_header_item(item));
  if (c.base_url) p.base_url = common::redact_url(*c.base_url);
  if (c.extra_body) p.extra_body = common::redact_json_text(*c.extra_body);
  try {
    p.request_rate = python_float_repr(parse_python_float(c.request_rate, "--request-rate"));
  } catch (const ConfigError&) {
    p.request_rate = py_str(c.request_rate);
  }
  return p;
}

// argparse's Namespace fields of `bench serve`, sorted by name, each as Python's repr (a table).
std::vector<std::pair<std::string, std::string>> namespace_fields(const RunOptions& c) {
  const PrintedValues p = printed_values(c);
  return {
      {"append_result", py_bool(c.append_result)},
      {"backend", py_str(c.backend)},
      {"base_url", py_opt(p.base_url)},
      {"burstiness", python_float_repr(c.burstiness)},
      {"clock_reference", py_opt(c.clock_reference)},
      {"custom_output_len", std::to_string(c.custom_output_len)},
      {"dataset_name", py_str(c.dataset_name)},
      {"dataset_path", py_opt(c.dataset_path)},
      {"disable_shuffle", py_bool(c.disable_shuffle)},
      {"disable_tqdm", py_bool(c.disable_tqdm)},
      {"endpoint", py_str(c.endpoint)},
      {"extra_body", py_opt(p.extra_body)},
      {"frequency_penalty", py_opt(c.frequency_penalty)},
      {"goodput", py_list(c.goodput)},
      {"header", py_list(p.headers)},
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
      {"metadata", py_list(p.metadata)},
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
      {"ready_check_timeout_sec", std::to_string(c.ready_check_timeout_s)},
      {"repetition_penalty", py_opt(c.repetition_penalty)},
      {"request_id_prefix", c.request_id_prefix.empty() ? "None" : py_str(c.request_id_prefix)},
      {"request_rate", p.request_rate},
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
      {"shard", py_opt(c.shard)},
      {"sharegpt_output_len", py_opt(c.sharegpt_output_len)},
      {"skip_chat_template", py_bool(c.skip_chat_template)},
      {"sonnet_input_len", std::to_string(c.sonnet_input_len)},
      {"sonnet_output_len", std::to_string(c.sonnet_output_len)},
      {"sonnet_prefix_len", std::to_string(c.sonnet_prefix_len)},
      {"spec_bench_category", py_opt(c.spec_bench_category)},
      {"spec_bench_output_len", std::to_string(c.spec_bench_output_len)},
      {"start_at", py_opt(c.start_at)},
      {"temperature", py_opt(c.temperature)},
      {"timed_trace_sec_multiplier", python_float_repr(c.timed_trace_sec_multiplier)},
      {"tokenizer", py_opt(c.tokenizer)},
      {"tokenizer_mode", py_str(c.tokenizer_mode)},
      {"top_k", py_opt(c.top_k)},
      {"top_p", py_opt(c.top_p)},
      {"trust_remote_code", py_bool(c.trust_remote_code)},
  };
}

}  // namespace

std::string namespace_repr(const RunOptions& c) {
  const std::vector<std::pair<std::string, std::string>> kv = namespace_fields(c);
  std::string out = "Namespace(";
  for (std::size_t i = 0; i < kv.size(); ++i) {
    if (i) out += ", ";
    out += kv[i].first + "=" + kv[i].second;
  }
  return out + ")";
}

dataset::DatasetOptions dataset_options(const RunOptions& c, const ResolvedConfig& r) {
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

int shared_prefix_tokens(const RunOptions& config) {
  if (config.dataset_name == "prefix_repetition") return config.prefix_repetition_prefix_len;
  if (config.dataset_name == "random") return config.random_prefix_len;
  return 0;
}

bool fixed_random_lengths(const RunOptions& config, const ResolvedConfig& resolved) {
  return config.dataset_name == "random" && resolved.random_range_ratio.input == 0 &&
         resolved.random_range_ratio.output == 0 && config.random_prefix_len == 0;
}

RampUpRates ramp_up_rates(const RunOptions& config) {
  if (!config.ramp_up_strategy) return {};
  return {*config.ramp_up_strategy == "linear" ? schedule::RampUp::kLinear : schedule::RampUp::kExponential,
          config.ramp_up_start_rps.value_or(0), config.ramp_up_end_rps.value_or(0)};
}

}  // namespace servelab::bench
