// Sharded schedules: the --shard spec, the partition, --max-concurrency parts, --start-at, the shard record.
#include "bench/shard.h"

#include <fmt/format.h>

#include <bit>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <stdexcept>

#include "servelab/common/python_json.h"
#include "servelab/common/redact.h"

namespace servelab::bench {
namespace {

constexpr std::uint64_t kFnvOffset = 14695981039346656037ull;  // FNV-1a 64 (Fowler, Noll, Vo)
constexpr std::uint64_t kFnvPrime = 1099511628211ull;

struct Fnv {
  std::uint64_t h = kFnvOffset;
  void bytes(const void* p, std::size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnvPrime;
  }
  void str(const std::string& s) {
    const std::uint64_t n = s.size();
    bytes(&n, sizeof n);
    bytes(s.data(), s.size());
  }
  template <class T>
  void value(T v) {
    bytes(&v, sizeof v);
  }
};

int parse_int(const std::string& text, std::string_view part, const std::string& whole) {
  int v = 0;
  const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
  if (part.empty() || ec != std::errc() || p != part.data() + part.size())
    throw ConfigError(
        fmt::format("--shard {}: expected I/N with integers I and N (e.g. 0/2), got '{}'", whole, text));
  return v;
}

template <class T>
T get(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) throw std::runtime_error(fmt::format("request record: missing \"{}\"", key));
  try {
    return j.at(key).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::runtime_error(fmt::format("request record: \"{}\" has the wrong type", key));
  }
}

// An integer field of a request record, in [lo, hi] (nlohmann's get<int> would wrap 2^31 or truncate 1.5).
std::int64_t record_int(const nlohmann::json& j, const char* key, std::int64_t lo, std::int64_t hi) {
  if (!j.contains(key)) throw std::runtime_error(fmt::format("request record: missing \"{}\"", key));
  const auto& v = j.at(key);
  const bool fits =
      v.is_number_integer() && !(v.is_number_unsigned() && v.get<std::uint64_t>() > std::uint64_t(hi));
  const std::int64_t x = fits ? v.get<std::int64_t>() : 0;
  if (!fits || x < lo || x > hi)
    throw std::runtime_error(
        fmt::format("request record: \"{}\" must be an integer in [{}, {}]", key, lo, hi));
  return x;
}

// A time field of a request record, s: finite and >= 0, or exactly -1 ("not measured") when
// `unset_allowed`. A negative TTFT or latency would be averaged into the report as if measured.
double record_seconds(const nlohmann::json& j, const char* key, bool unset_allowed) {
  const double v = get<double>(j, key);
  if (!std::isfinite(v) || (v < 0 && !(unset_allowed && v == -1.0)))
    throw std::runtime_error(fmt::format("request record: \"{}\" is {:.6g} s, must be {}", key, v,
                                         unset_allowed ? "-1 (not measured) or >= 0" : ">= 0"));
  return v;
}

}  // namespace

ShardSpec parse_shard_spec(const std::string& text) {
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw ConfigError(
        fmt::format("--shard {}: expected I/N (0-based shard index / number of shards, e.g. 0/2)", text));
  ShardSpec s;
  s.index = parse_int(text, std::string_view(text).substr(0, slash), text);
  s.count = parse_int(text, std::string_view(text).substr(slash + 1), text);
  if (s.count < 1 || s.count > 4096)
    throw ConfigError(
        fmt::format("--shard {}: the number of shards must be in [1, 4096], got {}", text, s.count));
  if (s.index < 0 || s.index >= s.count)
    throw ConfigError(fmt::format("--shard {}: the index is 0-based and must be in [0, {}], got {}", text,
                                  s.count - 1, s.index));
  return s;
}

std::vector<std::size_t> shard_indices(std::size_t num_requests, const ShardSpec& spec) {
  std::vector<std::size_t> out;
  const auto count = static_cast<std::size_t>(spec.count);
  out.reserve(num_requests / count + 1);
  for (auto i = static_cast<std::size_t>(spec.index); i < num_requests; i += count) out.push_back(i);
  return out;
}

int shard_max_concurrency(int total, const ShardSpec& spec) {
  if (total < spec.count)
    throw ConfigError(
        fmt::format("--max-concurrency {} with --shard {}/{}: each shard needs at least one slot "
                    "(give --max-concurrency {} or more, or fewer shards)",
                    total, spec.index, spec.count, spec.count));
  return total / spec.count + (spec.index < total % spec.count ? 1 : 0);
}

void check_start_at(double start_wall_s, double now_wall_s) {
  if (!std::isfinite(start_wall_s))
    throw ConfigError(fmt::format("--start-at {}: not a finite time (Unix seconds)", start_wall_s));
  if (start_wall_s <= now_wall_s)
    throw ConfigError(
        fmt::format("--start-at {:.3f}: that time has passed ({:.3f} s ago, now {:.3f}); give a "
                    "time far enough ahead for every shard to load its tokenizer and data set, "
                    "e.g. $(($(date +%s) + 60))",
                    start_wall_s, now_wall_s - start_wall_s, now_wall_s));
  if (start_wall_s - now_wall_s > kMaxStartAheadS)
    throw ConfigError(
        fmt::format("--start-at {:.3f}: {:.0f} s ahead, more than the {:.0f} s accepted (Unix "
                    "seconds expected, not milliseconds)",
                    start_wall_s, start_wall_s - now_wall_s, kMaxStartAheadS));
}

std::chrono::steady_clock::time_point steady_at_wall(double start_wall_s) {
  const auto wall_now = std::chrono::system_clock::now();
  const auto steady_now = std::chrono::steady_clock::now();
  const double ahead_s = start_wall_s - std::chrono::duration<double>(wall_now.time_since_epoch()).count();
  return steady_now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(ahead_s));
}

std::string shard_request_id_prefix(std::int64_t seed, double start_wall_s) {
  Fnv f;
  f.value(seed);
  f.value(start_wall_s);
  return fmt::format("bench-{:08x}-", static_cast<std::uint32_t>(f.h ^ (f.h >> 32)));
}

std::string workload_fingerprint(std::span<const client::PlannedRequest> requests,
                                 std::span<const double> schedule_s) {
  Fnv f;
  f.value(static_cast<std::uint64_t>(requests.size()));
  for (const auto& r : requests) {
    f.str(r.prompt);
    f.value(static_cast<std::uint64_t>(r.prompt_token_ids.size()));
    f.bytes(r.prompt_token_ids.data(), r.prompt_token_ids.size() * sizeof(std::int32_t));
    f.str(r.messages_json);
    f.value(r.prompt_len);
    f.value(r.output_len);
  }
  for (double t : schedule_s) f.value(std::bit_cast<std::uint64_t>(t));
  return fmt::format("{:016x}", f.h);
}

ShardPlan make_shard_plan(const ShardSpec& spec, double start_at_s,
                          std::span<const client::PlannedRequest> requests,
                          std::span<const double> schedule_s) {
  if (requests.size() != schedule_s.size())
    throw std::invalid_argument(
        fmt::format("shard plan: {} requests but {} send times", requests.size(), schedule_s.size()));
  ShardPlan p;
  p.record.spec = spec;
  p.record.start_at_s = start_at_s;
  p.record.fingerprint = workload_fingerprint(requests, schedule_s);
  p.record.num_requests = requests.size();
  p.record.indices = shard_indices(requests.size(), spec);
  for (std::size_t i : p.record.indices) {
    p.requests.push_back(requests[i]);
    p.schedule_s.push_back(schedule_s[i]);
  }
  return p;
}

bool sleep_until_before(double start_wall_s, double lead_s, std::stop_token stop) {
  std::mutex mu;
  std::condition_variable_any cv;
  std::unique_lock lock(mu);
  const auto until = steady_at_wall(start_wall_s - lead_s);
  cv.wait_until(lock, stop, until, [] { return false; });
  return !stop.stop_requested();
}

nlohmann::ordered_json request_to_json(const metrics::RequestOutput& o) {
  nlohmann::ordered_json j;
  j["success"] = o.success;
  j["failure"] = metrics::failure_kind_name(o.failure);
  j["http_status"] = o.http_status;
  j["error"] = o.error;
  j["prompt_len"] = o.prompt_len;
  j["dataset_prompt_len"] = o.dataset_prompt_len;
  j["output_tokens"] = o.output_tokens;
  j["expected_output_len"] = o.output_len;
  j["intended_send_time_s"] = o.intended_send_time_s;
  j["dispatch_time_s"] = o.dispatch_time_s;
  j["send_time_s"] = o.send_time_s;
  j["wire_time_s"] = o.wire_time_s;
  j["ttft_s"] = o.ttft_s;
  j["ttfct_s"] = o.ttfct_s;
  j["itl_s"] = o.itl_s;
  j["chunk_tokens"] = o.chunk_tokens;
  j["latency_s"] = o.latency_s;
  j["reasoning_tokens"] = o.reasoning_tokens;
  j["usage_prompt_tokens"] = o.usage_prompt_tokens;
  j["usage_completion_tokens"] = o.usage_completion_tokens;
  j["tokenizer_output_tokens"] = o.tokenizer_output_tokens;
  j["usage_rejected"] =
      o.usage_rejected ? nlohmann::ordered_json(*o.usage_rejected) : nlohmann::ordered_json();
  j["generated_text"] = o.generated_text;
  j["request_id"] = o.request_id;
  return j;
}

metrics::RequestOutput request_from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::runtime_error("request record: not a JSON object");
  metrics::RequestOutput o;
  o.success = get<bool>(j, "success");
  const auto failure = get<std::string>(j, "failure");
  bool known = false;
  for (std::size_t k = 0; k <= static_cast<std::size_t>(metrics::FailureKind::kCancelled); ++k) {
    const auto kind = static_cast<metrics::FailureKind>(k);
    if (failure == metrics::failure_kind_name(kind)) o.failure = kind, known = true;
  }
  if (!known) throw std::runtime_error(fmt::format("request record: unknown \"failure\" '{}'", failure));
  constexpr std::int64_t kIntMax = std::numeric_limits<std::int32_t>::max();
  o.http_status = static_cast<int>(record_int(j, "http_status", 0, 999));
  o.error = get<std::string>(j, "error");
  o.prompt_len = static_cast<int>(record_int(j, "prompt_len", -1, kIntMax));
  o.dataset_prompt_len = static_cast<int>(record_int(j, "dataset_prompt_len", -1, kIntMax));
  o.output_tokens = static_cast<int>(record_int(j, "output_tokens", 0, kIntMax));
  o.output_len = static_cast<int>(record_int(j, "expected_output_len", -1, kIntMax));
  o.intended_send_time_s = record_seconds(j, "intended_send_time_s", false);
  o.dispatch_time_s = record_seconds(j, "dispatch_time_s", false);
  o.send_time_s = record_seconds(j, "send_time_s", false);
  o.wire_time_s = record_seconds(j, "wire_time_s", true);
  o.ttft_s = record_seconds(j, "ttft_s", false);
  o.ttfct_s = record_seconds(j, "ttfct_s", true);
  o.itl_s = get<std::vector<double>>(j, "itl_s");
  for (std::size_t k = 0; k < o.itl_s.size(); ++k)
    if (!std::isfinite(o.itl_s[k]) || o.itl_s[k] < 0)
      throw std::runtime_error(
          fmt::format("request record: \"itl_s\"[{}] is {:.6g} s, must be >= 0", k, o.itl_s[k]));
  o.chunk_tokens = get<std::vector<std::int32_t>>(j, "chunk_tokens");
  o.latency_s = record_seconds(j, "latency_s", false);
  o.reasoning_tokens = static_cast<int>(record_int(j, "reasoning_tokens", -1, kIntMax));
  o.usage_prompt_tokens = static_cast<int>(record_int(j, "usage_prompt_tokens", -1, kIntMax));
  o.usage_completion_tokens = static_cast<int>(record_int(j, "usage_completion_tokens", -1, kIntMax));
  o.tokenizer_output_tokens = static_cast<int>(record_int(j, "tokenizer_output_tokens", -1, kIntMax));
  if (j.contains("usage_rejected") && !j["usage_rejected"].is_null())
    o.usage_rejected = get<std::int64_t>(j, "usage_rejected");
  o.generated_text = get<std::string>(j, "generated_text");
  o.request_id = get<std::string>(j, "request_id");
  return o;
}

nlohmann::ordered_json shard_json(const ShardRecord& rec, const RunOptions& c, const ResolvedConfig& r,
                                  const std::string& model_id, const std::string& tokenizer_id,
                                  std::span<const metrics::RequestOutput> outputs) {
  using nlohmann::ordered_json;
  auto opt = [](const auto& v) { return v ? ordered_json(*v) : ordered_json(); };
  ordered_json config;
  config["seed"] = c.seed;
  config["dataset_name"] = c.dataset_name;
  config["num_prompts"] = c.num_prompts;
  config["request_rate"] = common::python_float_repr(r.request_rate);  // "40" and "40.0" are one rate
  config["burstiness"] = c.burstiness;
  config["max_concurrency"] = opt(c.max_concurrency);
  config["ramp_up_strategy"] = opt(c.ramp_up_strategy);
  config["self_timed"] = c.self_timed;
  config["percentile_metrics"] = c.percentile_metrics.value_or("ttft,tpot,itl");
  config["metric_percentiles"] = c.metric_percentiles;
  config["goodput"] = c.goodput;
  config["backend"] = c.backend;
  config["label"] = opt(c.label);
  config["model_id"] = model_id;
  config["tokenizer_id"] = tokenizer_id;
  ordered_json metadata = ordered_json::array();
  for (const auto& [k, v] : r.metadata)
    metadata.push_back({k, common::is_credential_name(k) ? std::string(common::kRedacted) : v});
  config["metadata"] = std::move(metadata);

  ordered_json j;
  j["index"] = rec.spec.index;
  j["count"] = rec.spec.count;
  j["start_at_s"] = rec.start_at_s;
  j["fingerprint"] = rec.fingerprint;
  j["num_requests"] = rec.num_requests;
  j["max_concurrency"] =
      rec.shard_max_concurrency > 0 ? ordered_json(rec.shard_max_concurrency) : ordered_json();
  j["duration_s"] = rec.duration_s;
  j["server_time_scale"] = rec.server_time_scale;
  j["engine_twin"] = rec.engine_twin;
  j["clock"] = {{"offset_ms", rec.clock.offset_ms}, {"uncertainty_ms", rec.clock.uncertainty_ms},
                {"method", rec.clock.method},       {"reference", rec.clock.reference},
                {"clock_id", rec.clock.clock_id},   {"synchronized", rec.clock.synchronized}};
  j["config"] = std::move(config);
  j["indices"] = rec.indices;
  ordered_json requests = ordered_json::array();
  for (const auto& o : outputs) requests.push_back(request_to_json(o));
  j["requests"] = std::move(requests);
  return j;
}

}  // namespace servelab::bench
