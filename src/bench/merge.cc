// bench merge: shard results → the one-client report (bench/merge.h).
#include "servelab/bench/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "bench/shard.h"
#include "servelab/bench/config.h"
#include "servelab/common/printable.h"

namespace servelab::bench {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr std::int64_t kMaxShards = 4096;         // as --shard I/N accepts (parse_shard_spec)
constexpr std::int64_t kMaxRequests = 1LL << 31;  // requests of one schedule (--num-prompts is an int)

// The config keys every shard must agree on (they define the schedule and the report).
constexpr const char* kSameConfig[] = {"seed",
                                       "dataset_name",
                                       "num_prompts",
                                       "request_rate",
                                       "burstiness",
                                       "max_concurrency",
                                       "ramp_up_strategy",
                                       "self_timed",
                                       "percentile_metrics",
                                       "metric_percentiles",
                                       "goodput",
                                       "backend",
                                       "label",
                                       "model_id",
                                       "tokenizer_id",
                                       "metadata"};

const json& shard_of(const ShardInput& s) {
  return s.result["servelab"]["shard"];
}

template <class T>
T field(const ShardInput& s, const json& obj, const char* key) {
  if (!obj.contains(key)) throw MergeError(fmt::format("{}: servelab.shard has no \"{}\"", s.name, key));
  try {
    return obj.at(key).get<T>();
  } catch (const json::exception&) {
    throw MergeError(fmt::format("{}: servelab.shard \"{}\" has the wrong type", s.name, key));
  }
}

// An integer of servelab.shard in [lo, hi], checked before anything is sized by it (a shard count of 0
// divides by zero, 2^31 shards or requests would be allocated; get<int> would wrap 2^31 or truncate 1.5).
std::int64_t shard_int(const ShardInput& s, const json& obj, const char* key, std::int64_t lo,
                       std::int64_t hi) {
  if (!obj.contains(key)) throw MergeError(fmt::format("{}: servelab.shard has no \"{}\"", s.name, key));
  const json& v = obj.at(key);
  const auto refuse = [&](const std::string& got) {
    return MergeError(
        fmt::format("{}: servelab.shard \"{}\" must be an integer in [{}, {}]{}", s.name, key, lo, hi, got));
  };
  if (!v.is_number_integer()) throw refuse("");
  if (v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi))
    throw refuse(fmt::format(", got {}", v.get<std::uint64_t>()));
  const std::int64_t x = v.get<std::int64_t>();
  if (x < lo || x > hi) throw refuse(fmt::format(", got {}", x));
  return x;
}

// A number of servelab.shard (ms or s): finite and >= 0 when `non_negative`.
double shard_number(const ShardInput& s, const json& obj, const char* path, const char* key,
                    bool non_negative) {
  const double v = field<double>(s, obj, key);
  if (!std::isfinite(v) || (non_negative && v < 0))
    throw MergeError(fmt::format("{}: servelab.shard.{}{} is {:.6g}, must be {}", s.name, path, key, v,
                                 non_negative ? "a finite number >= 0" : "a finite number"));
  return v;
}

// Each shard's clock group: shards with one clock_id share one offset (the best-measured one).
std::vector<AppliedClock> applied_clocks(const std::vector<ShardInput>& shards) {
  std::vector<AppliedClock> out;
  for (const auto& s : shards) {
    const json& c = field<json>(s, shard_of(s), "clock");
    AppliedClock a;
    a.shard = static_cast<int>(shard_int(s, shard_of(s), "index", 0, kMaxShards - 1));
    a.name = s.name;
    a.clock.offset_ms = shard_number(s, c, "clock.", "offset_ms", false);
    a.clock.uncertainty_ms = shard_number(s, c, "clock.", "uncertainty_ms", true);
    a.clock.method = field<std::string>(s, c, "method");
    a.clock.reference = field<std::string>(s, c, "reference");
    a.clock.clock_id = field<std::string>(s, c, "clock_id");
    a.clock.synchronized = field<bool>(s, c, "synchronized");
    out.push_back(a);
  }
  for (auto& a : out) {
    const AppliedClock* best = &a;
    for (const auto& b : out)
      if (!a.clock.clock_id.empty() && b.clock.clock_id == a.clock.clock_id &&
          b.clock.uncertainty_ms < best->clock.uncertainty_ms)
        best = &b;
    a.applied_offset_ms = best->clock.offset_ms;
    a.applied_uncertainty_ms = best->clock.uncertainty_ms;
  }
  return out;
}

// Group key of a shard's clock: its clock id, or the shard itself when it recorded none.
std::string group_of(const AppliedClock& a) {
  return a.clock.clock_id.empty() ? fmt::format("shard-{}", a.shard) : a.clock.clock_id;
}

struct Placed {
  std::vector<metrics::RequestOutput> outputs;
  double duration_s = 0.0;
};

// Puts every record at its index, shifted onto the common clock: t + (max offset - own offset), so that t = 0
// is the earliest shard start and no time becomes negative. `offsets_ms` per shard (shard order).
Placed place(const std::vector<ShardInput>& shards,
             const std::vector<std::vector<metrics::RequestOutput>>& records,
             const std::vector<double>& offsets_ms, std::size_t num_requests, double time_scale) {
  const double max_offset_ms = *std::max_element(offsets_ms.begin(), offsets_ms.end());
  Placed p;
  p.outputs.resize(num_requests);
  for (std::size_t s = 0; s < shards.size(); ++s) {
    const double shift_s = (max_offset_ms - offsets_ms[s]) / 1000.0 * time_scale;
    const auto indices = field<std::vector<std::size_t>>(shards[s], shard_of(shards[s]), "indices");
    p.duration_s = std::max(p.duration_s,
                            shard_number(shards[s], shard_of(shards[s]), "", "duration_s", true) + shift_s);
    for (std::size_t j = 0; j < indices.size(); ++j) {
      metrics::RequestOutput o = records[s][j];
      if (!metrics::never_sent(o)) {
        o.dispatch_time_s += shift_s;
        o.send_time_s += shift_s;
        if (o.wire_time_s >= 0.0) o.wire_time_s += shift_s;
      }
      p.outputs[indices[j]] = std::move(o);
    }
  }
  return p;
}

// Checks membership (count, fingerprint, config, indices); returns the full schedule's request count.
std::size_t check_together(const std::vector<ShardInput>& shards) {
  const ShardInput& first = shards.front();
  const json& f = shard_of(first);
  const int count = static_cast<int>(shard_int(first, f, "count", 1, kMaxShards));
  const auto num_requests = static_cast<std::size_t>(shard_int(first, f, "num_requests", 0, kMaxRequests));
  std::map<int, std::string> seen;
  for (const auto& s : shards) {
    const json& x = shard_of(s);
    const int index = static_cast<int>(shard_int(s, x, "index", 0, kMaxShards - 1));
    const auto own_count = shard_int(s, x, "count", 1, kMaxShards);
    if (own_count != count)
      throw MergeError(fmt::format("{}: shard {}/{} does not belong with {} (a shard of {})", s.name, index,
                                   own_count, first.name, count));
    if (index >= count)
      throw MergeError(
          fmt::format("{}: servelab.shard \"index\" {} is not below its \"count\" {}", s.name, index, count));
    const json& c0 = field<json>(first, f, "config");
    const json& c = field<json>(s, x, "config");
    for (const char* key : kSameConfig) {
      if (!c.contains(key) || !c0.contains(key) || c[key] != c0[key])
        throw MergeError(fmt::format("{}: --{} {} differs from {}'s {}: not shards of one schedule", s.name,
                                     std::string(key) == "model_id" ? "model" : key,
                                     c.contains(key) ? common::printable(c[key].dump()) : "(missing)",
                                     first.name,
                                     c0.contains(key) ? common::printable(c0[key].dump()) : "(missing)"));
    }
    for (const char* key : {"start_at_s", "server_time_scale", "engine_twin"})
      if (x.value(key, json()) != f.value(key, json()))
        throw MergeError(fmt::format("{}: {} {} differs from {}'s {}", s.name, key,
                                     common::printable(x.value(key, json()).dump()), first.name,
                                     common::printable(f.value(key, json()).dump())));
    if (field<std::string>(s, x, "fingerprint") != field<std::string>(first, f, "fingerprint"))
      throw MergeError(
          fmt::format("{}: its schedule (prompts, lengths, send times) differs from {}'s although "
                      "the flags agree (different data set file or tokenizer?)",
                      s.name, first.name));
    if (auto [it, fresh] = seen.emplace(index, s.name); !fresh)
      throw MergeError(fmt::format("{} and {} are both shard {}/{}", it->second, s.name, index, count));
    // Its share of the partition, counted before anything of that size is built.
    const std::size_t own =
        static_cast<std::size_t>(index) < num_requests
            ? (num_requests - static_cast<std::size_t>(index) - 1) / static_cast<std::size_t>(count) + 1
            : 0;
    if (!x.contains("indices") || !x["indices"].is_array() || x["indices"].size() != own)
      throw MergeError(fmt::format("{}: its request indices are not shard {}/{} of {} requests ({} expected)",
                                   s.name, index, count, num_requests, own));
    const auto indices = field<std::vector<std::size_t>>(s, x, "indices");
    if (indices != shard_indices(num_requests, ShardSpec{index, count}))
      throw MergeError(fmt::format("{}: its request indices are not shard {}/{} of {} requests", s.name,
                                   index, count, num_requests));
    if (field<json>(s, x, "requests").size() != indices.size())
      throw MergeError(
          fmt::format("{}: {} request records for {} indices", s.name, x["requests"].size(), indices.size()));
  }
  std::vector<std::string> missing;
  for (int i = 0; i < count; ++i)
    if (!seen.count(i)) missing.push_back(fmt::format("{}/{}", i, count));
  if (!missing.empty())
    throw MergeError(fmt::format("missing shard{} {} (given: {} file{})", missing.size() == 1 ? "" : "s",
                                 fmt::join(missing, ", "), shards.size(), shards.size() == 1 ? "" : "s"));
  return num_requests;
}

report::RunInfo run_info(const std::vector<ShardInput>& shards) {
  const ShardInput& first = shards.front();
  const json& c = shard_of(first)["config"];
  report::RunInfo run;
  for (const auto& s : shards) run.date = std::max(run.date, s.result.value("date", std::string()));
  run.backend = c["backend"].get<std::string>();
  if (!c["label"].is_null()) run.label = c["label"].get<std::string>();
  run.model_id = c["model_id"].get<std::string>();
  run.tokenizer_id = c["tokenizer_id"].get<std::string>();
  run.num_prompts = c["num_prompts"].get<int>();
  for (const auto& kv : c["metadata"])
    run.metadata.emplace_back(kv[0].get<std::string>(), kv[1].get<std::string>());
  run.request_rate = parse_python_float(c["request_rate"].get<std::string>(), "--request-rate");
  run.burstiness = c["burstiness"].get<double>();
  if (!c["max_concurrency"].is_null()) run.max_concurrency = c["max_concurrency"].get<int>();
  run.arrivals_from_data = c["self_timed"].get<bool>();
  for (const auto& s : shards)
    if (s.result["servelab"].contains("interrupted")) {
      const json& v = s.result["servelab"]["interrupted"];
      if (!v.is_boolean())
        throw MergeError(fmt::format("{}: servelab.interrupted must be true or false", s.name));
      run.interrupted = run.interrupted || v.get<bool>();
    }
  return run;
}

std::vector<std::string> block_lines(const std::string& block) {
  std::vector<std::string> lines;
  std::istringstream in(block);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

}  // namespace

ShardInput read_shard_file(const std::filesystem::path& path) {
  ShardInput s;
  s.name = path.string();
  std::ifstream f(path, std::ios::binary);
  if (!f) throw MergeError(fmt::format("{}: cannot open", s.name));
  std::stringstream buf;
  buf << f.rdbuf();
  s.result = json::parse(buf.str(), nullptr, false);
  if (s.result.is_discarded() || !s.result.is_object())
    throw MergeError(
        fmt::format("{}: not one JSON object (a --save-result file of bench serve --shard)", s.name));
  if (!s.result.contains("servelab") || !s.result["servelab"].contains("shard"))
    throw MergeError(
        fmt::format("{}: no detailed shard results (servelab.shard): run bench serve with --shard I/N "
                    "--start-at EPOCH_S --save-result --save-detailed",
                    s.name));
  if (!s.result["servelab"]["shard"].contains("requests") ||
      !s.result["servelab"]["shard"]["requests"].is_array())
    throw MergeError(fmt::format("{}: servelab.shard has no per-request records", s.name));
  return s;
}

namespace {

// Every shard's per-request records, shard order.
std::vector<std::vector<metrics::RequestOutput>> read_records(const std::vector<ShardInput>& shards) {
  std::vector<std::vector<metrics::RequestOutput>> records;
  for (const auto& s : shards) {
    auto& rs = records.emplace_back();
    const json& requests = shard_of(s)["requests"];
    for (std::size_t j = 0; j < requests.size(); ++j) {
      try {
        rs.push_back(request_from_json(requests[j]));
      } catch (const std::runtime_error& e) {
        throw MergeError(fmt::format("{}: servelab.shard.requests[{}]: {}", s.name, j, e.what()));
      }
    }
  }
  return records;
}

// What the shards share and what the recomputations need.
struct MergeInputs {
  const std::vector<ShardInput>& shards;
  const std::vector<std::vector<metrics::RequestOutput>>& records;
  std::size_t num_requests = 0;
  metrics::MetricsOptions options;
};

// Sets m.skew_uncertainty_ms (the two largest group uncertainties) and m.clock_sensitive_rows: the rows of
// the vLLM block `block` that change when one clock group moves by ± its uncertainty. Returns the group
// count.
std::size_t clock_sensitivity(const MergeInputs& in, const std::vector<double>& offsets,
                              const std::string& block, MergeResult& m) {
  std::set<std::string> groups, sensitive;
  for (const auto& a : m.clocks) groups.insert(group_of(a));
  double u_max = 0.0, u_second = 0.0;
  for (const auto& g : groups) {
    double u = 0.0;
    for (const auto& a : m.clocks)
      if (group_of(a) == g) u = a.applied_uncertainty_ms;
    if (u > u_max)
      u_second = u_max, u_max = u;
    else if (u > u_second)
      u_second = u;
  }
  m.skew_uncertainty_ms = groups.size() > 1 ? u_max + u_second : 0.0;
  if (groups.size() < 2) return groups.size();  // one clock: a common shift changes nothing
  const auto base = block_lines(block);
  for (const auto& g : groups) {
    for (double sign : {-1.0, 1.0}) {
      std::vector<double> moved = offsets;
      for (std::size_t s = 0; s < m.clocks.size(); ++s)
        if (group_of(m.clocks[s]) == g) moved[s] += sign * m.clocks[s].applied_uncertainty_ms;
      Placed p = place(in.shards, in.records, moved, in.num_requests, m.server_time_scale);
      const auto lines = block_lines(report::format_console_block(
          m.run, metrics::compute_metrics(p.outputs, p.duration_s, in.options), m.selected));
      for (std::size_t i = 0; i < base.size() && i < lines.size(); ++i)
        if (lines[i] != base[i]) sensitive.insert(base[i].substr(0, base[i].find(':') + 1));
    }
  }
  m.clock_sensitive_rows.assign(sensitive.begin(), sensitive.end());
  return groups.size();
}

// The lines after servelab's extras: the twin label (as bench serve prints it), each shard's clock, the skew.
std::string merge_lines(const MergeInputs& in, const MergeResult& m, double max_offset_ms,
                        std::size_t groups) {
  std::string out;
  if (m.engine_twin)
    out += fmt::format(
        "Engine twin (servelab sim serve) at time scale {:g}: times, rates and throughputs are engine time "
        "(wall x {:g})\n",
        m.server_time_scale, m.server_time_scale);
  out += fmt::format("{:=^50}\n", " Merged shards ");
  out += fmt::format("{:<40} {:<10}\n", "Shards:", in.shards.size());
  for (std::size_t s = 0; s < m.clocks.size(); ++s) {
    const auto& a = m.clocks[s];
    out += fmt::format(
        "Shard {}/{} ({}): {} requests, clock offset {:+.3f} ms +/- {:.3f} ms ({}{}{}), shifted {:+.3f} ms\n",
        a.shard, in.shards.size(), a.name, in.records[s].size(), a.applied_offset_ms,
        a.applied_uncertainty_ms, a.clock.method,
        a.clock.reference.empty() ? "" : " against " + a.clock.reference,
        a.clock.method == "kernel" && !a.clock.synchronized ? ", not synchronized" : "",
        max_offset_ms - a.applied_offset_ms);
  }
  out += fmt::format("{:<40} {:<10.3f}\n", "Clock skew corrected (ms):", m.skew_ms);
  out += fmt::format("{:<40} {:<10.3f}\n", "Clock skew uncertainty (ms):", m.skew_uncertainty_ms);
  if (groups == 1) out += "All shards ran on one host clock: their times are exactly comparable.\n";
  if (!m.clock_sensitive_rows.empty())
    out += fmt::format(
        "WARNING: the clock uncertainty can change these printed rows: {}; measure each shard's offset "
        "against "
        "a closer NTP server (--clock-reference) for exact values.\n",
        fmt::join(m.clock_sensitive_rows, " "));
  return out;
}

// servelab.merge of the merged result JSON.
ordered_json merge_json(const MergeResult& m, const json& first, double max_offset_ms) {
  ordered_json shards = ordered_json::array();
  for (const auto& a : m.clocks)
    shards.push_back({{"index", a.shard},
                      {"file", a.name},
                      {"offset_ms", a.applied_offset_ms},
                      {"uncertainty_ms", a.applied_uncertainty_ms},
                      {"method", a.clock.method},
                      {"clock_id", a.clock.clock_id},
                      {"shift_ms", max_offset_ms - a.applied_offset_ms}});
  return {{"start_at_s", first["start_at_s"]},
          {"shards", std::move(shards)},
          {"skew_ms", m.skew_ms},
          {"skew_uncertainty_ms", m.skew_uncertainty_ms},
          {"clock_sensitive_rows", m.clock_sensitive_rows}};
}

}  // namespace

namespace {

MergeResult merge_checked_shards(const std::vector<ShardInput>& shards, bool save_detailed);

}  // namespace

MergeResult merge_shards(const std::vector<ShardInput>& shards, bool save_detailed) {
  if (shards.empty()) throw MergeError("no shard results given");
  try {
    return merge_checked_shards(shards, save_detailed);
  } catch (const json::exception&) {
    // Every field is read through a check that names it; this is the net under one that is not, so that
    // nlohmann's internal message ("[json.exception.type_error.302] ...") never reaches the user.
    std::vector<std::string> names;
    for (const auto& s : shards) names.push_back(s.name);
    throw MergeError(fmt::format("{}: a servelab.shard value has the wrong type", fmt::join(names, ", ")));
  }
}

namespace {

MergeResult merge_checked_shards(const std::vector<ShardInput>& shards, bool save_detailed) {
  const std::vector<std::vector<metrics::RequestOutput>> records = read_records(shards);
  MergeInputs in{shards, records, check_together(shards), {}};
  MergeResult m;
  const json& first = shard_of(shards.front());
  m.server_time_scale = shard_number(shards.front(), first, "", "server_time_scale", true);
  if (m.server_time_scale == 0)
    throw MergeError(
        fmt::format("{}: servelab.shard.server_time_scale is 0, must be > 0", shards.front().name));
  m.engine_twin = first.contains("engine_twin") && field<bool>(shards.front(), first, "engine_twin");
  m.clocks = applied_clocks(shards);
  std::vector<double> offsets;
  for (const auto& a : m.clocks) offsets.push_back(a.applied_offset_ms);
  const double max_offset_ms = *std::max_element(offsets.begin(), offsets.end());
  m.skew_ms = max_offset_ms - *std::min_element(offsets.begin(), offsets.end());

  const json& c = first["config"];
  try {
    in.options.percentiles = metrics::parse_metric_percentiles(c["metric_percentiles"].get<std::string>());
    in.options.goodput = metrics::parse_goodput(c["goodput"].get<std::vector<std::string>>());
    m.selected = metrics::parse_percentile_metrics(c["percentile_metrics"].get<std::string>());
  } catch (const std::exception& e) {
    throw MergeError(fmt::format("{}: servelab.shard.config: {}", shards.front().name, e.what()));
  }
  in.options.input_tokens =
      metrics::InputTokenSource::kDataset;  // as bench serve (multi-turn is not sharded)
  try {
    m.run = run_info(shards);
  } catch (const json::exception&) {  // a type error's text names nlohmann's internals, not the file
    throw MergeError(
        fmt::format("{}: servelab.shard.config: backend, model_id and tokenizer_id must be strings, "
                    "label a string or null, num_prompts an integer, request_rate a string, "
                    "burstiness a number, max_concurrency an integer or null, metadata [key, "
                    "value] string pairs",
                    shards.front().name));
  } catch (const ConfigError& e) {
    throw MergeError(fmt::format("{}: servelab.shard.config: {}", shards.front().name, e.what()));
  }
  Placed placed = place(shards, records, offsets, in.num_requests, m.server_time_scale);
  m.outputs = std::move(placed.outputs);
  m.metrics = metrics::compute_metrics(m.outputs, placed.duration_s, in.options);
  const std::string block = report::format_console_block(m.run, m.metrics, m.selected);
  const std::size_t groups = clock_sensitivity(in, offsets, block, m);
  m.console_report =
      block + report::format_console_extras(m.run, m.metrics) + merge_lines(in, m, max_offset_ms, groups);

  report::ReportOptions ro;
  ro.percentile_metrics = m.selected;
  ro.save_detailed = save_detailed;
  m.result_json = report::make_result_json(m.run, m.metrics, m.outputs, ro);
  auto& x = m.result_json["servelab"];
  if (m.server_time_scale != 1.0) x["server_time_scale"] = m.server_time_scale;
  x["merge"] = merge_json(m, first, max_offset_ms);
  return m;
}

}  // namespace

}  // namespace servelab::bench
