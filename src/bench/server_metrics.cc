#include "servelab/bench/server_metrics.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <condition_variable>
#include <limits>
#include <map>
#include <mutex>
#include <thread>

#include "bench/http_get.h"
#include "servelab/common/redact.h"

namespace servelab::bench {
namespace {

using Field = std::optional<double> ServerSample::*;
using ordered_json = nlohmann::ordered_json;

// Per metric name: the sum and the max over its series (one per engine / label set), finite values only.
struct Acc {
  double sum = 0.0;
  double max = -std::numeric_limits<double>::infinity();
};

using NameList = std::vector<std::string> metrics::ServerMetricNames::*;

// The first of the engines' names for one quantity (every engine's list, in the engines' order) present.
std::optional<double> first_of(const std::map<std::string, Acc, std::less<>>& by_name,
                               const std::vector<metrics::ServerMetricNames>& engines, NameList list,
                               bool take_max) {
  for (const auto& e : engines)
    for (const std::string& n : e.*list)
      if (auto it = by_name.find(n); it != by_name.end()) return take_max ? it->second.max : it->second.sum;
  return std::nullopt;
}

// Each quantity of a sample, the engines' names for it, and whether its series take the max (else the sum).
struct Quantity {
  Field field;
  NameList names;
  bool take_max;
};
constexpr Quantity kQuantities[] = {
    {&ServerSample::kv_cache_usage, &metrics::ServerMetricNames::kv_cache_usage, true},
    {&ServerSample::num_requests_running, &metrics::ServerMetricNames::num_requests_running, false},
    {&ServerSample::num_requests_waiting, &metrics::ServerMetricNames::num_requests_waiting, false},
    {&ServerSample::preemptions_total, &metrics::ServerMetricNames::preemptions_total, false},
    {&ServerSample::prefix_cache_queries_total, &metrics::ServerMetricNames::prefix_cache_queries_total,
     false},
    {&ServerSample::prefix_cache_hits_total, &metrics::ServerMetricNames::prefix_cache_hits_total, false},
    {&ServerSample::prefix_cache_hit_rate, &metrics::ServerMetricNames::prefix_cache_hit_rate, false},
    {&ServerSample::spec_decode_num_drafts_total, &metrics::ServerMetricNames::spec_decode_num_drafts_total,
     false},
    {&ServerSample::spec_decode_draft_tokens_total,
     &metrics::ServerMetricNames::spec_decode_draft_tokens_total, false},
    {&ServerSample::spec_decode_accepted_tokens_total,
     &metrics::ServerMetricNames::spec_decode_accepted_tokens_total, false},
    {&ServerSample::spec_decode_acceptance_length, &metrics::ServerMetricNames::spec_decode_acceptance_length,
     true},
};

void add(std::optional<double>& total, std::optional<double> v) {
  if (v) total = total.value_or(0.0) + *v;
}

// The number at `path` (object keys joined by '.') in `o`; nullopt when a key is missing, a step is not an
// object, the value is not a number, or the path is "" (the engine does not report it).
std::optional<double> number(const nlohmann::json& o, std::string_view path) {
  if (path.empty()) return std::nullopt;
  const nlohmann::json* at = &o;
  for (;;) {
    const std::size_t dot = path.find('.');
    const std::string_view key = path.substr(0, dot);
    if (!at->is_object()) return std::nullopt;
    auto it = at->find(std::string(key));
    if (it == at->end()) return std::nullopt;
    at = &*it;
    if (dot == std::string_view::npos) break;
    path.remove_prefix(dot + 1);
  }
  if (!at->is_number()) return std::nullopt;
  return at->get<double>();
}

// An entry of an iteration-stats array is the engine's when it is an object carrying one of its entry keys.
bool is_iteration_entry(const nlohmann::json& entry, const metrics::IterationStatsKeys& keys) {
  return entry.is_object() && std::any_of(keys.entry_keys.begin(), keys.entry_keys.end(),
                                          [&entry](const std::string& k) { return entry.contains(k); });
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::optional<GaugeStats> gauge_stats(const std::vector<ServerSample>& samples, Field f) {
  GaugeStats g;
  double sum = 0.0;
  for (const auto& s : samples) {
    if (s.phase != ServerSample::Phase::kDuring || !(s.*f)) continue;
    g.max = g.samples == 0 ? *(s.*f) : std::max(g.max, *(s.*f));
    sum += *(s.*f);
    ++g.samples;
  }
  if (g.samples == 0) return std::nullopt;
  g.mean = sum / static_cast<double>(g.samples);
  return g;
}

void append_note(std::string& note, const std::string& text) {
  if (!note.empty()) note += "; ";
  note += text;
}

// last - first over the samples carrying the counter; nullopt (and a note) when it went backwards.
std::optional<double> counter_delta(ServerMetrics& m, Field f, std::string_view name) {
  const ServerSample* first = nullptr;
  const ServerSample* last = nullptr;
  for (const auto& s : m.samples) {
    if (!(s.*f)) continue;
    if (!first) first = &s;
    last = &s;
  }
  if (!first || first == last) return std::nullopt;
  const double d = *(last->*f) - *(first->*f);
  if (d < 0) {
    append_note(m.note, fmt::format("counter {} went backwards ({:g} -> {:g}: server restarted?), no delta",
                                    name, *(first->*f), *(last->*f)));
    return std::nullopt;
  }
  return d;
}

std::optional<double> mean_during(const std::vector<ServerSample>& samples, Field f) {
  auto g = gauge_stats(samples, f);
  return g ? std::optional<double>(g->mean) : std::nullopt;
}

const char* phase_name(ServerSample::Phase p) {
  switch (p) {
    case ServerSample::Phase::kBefore:
      return "before";
    case ServerSample::Phase::kDuring:
      return "during";
    case ServerSample::Phase::kAfter:
      return "after";
  }
  return "during";
}

ordered_json opt(const std::optional<double>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json gauge_json(const std::optional<GaugeStats>& g) {
  if (!g) return nullptr;
  return {{"max", g->max}, {"mean", g->mean}, {"samples", g->samples}};
}

}  // namespace

ServerSample reduce_exposition(const prometheus::Exposition& e,
                               const std::vector<metrics::ServerMetricNames>& names, std::string* engine,
                               std::string* prefix_cache_unit) {
  std::map<std::string, Acc, std::less<>> by_name;
  std::vector<bool> seen(names.size(), false);  // per engine: a metric name carries its prefix
  for (const auto& s : e.samples) {
    for (std::size_t i = 0; i < names.size(); ++i)
      seen[i] = seen[i] || (!names[i].prefix.empty() && s.name.rfind(names[i].prefix, 0) == 0);
    if (!std::isfinite(s.value)) continue;  // NaN (an empty window) / ±Inf carry no level
    Acc& a = by_name[s.name];
    a.sum += s.value;
    a.max = std::max(a.max, s.value);
  }
  const auto found = std::find(seen.begin(), seen.end(), true);
  const metrics::ServerMetricNames* detected =
      found == seen.end() ? nullptr : &names[static_cast<std::size_t>(found - seen.begin())];
  if (engine) *engine = detected ? detected->engine : "";
  if (prefix_cache_unit) *prefix_cache_unit = detected ? detected->prefix_cache_unit : "";
  ServerSample out;
  for (const Quantity& q : kQuantities) out.*(q.field) = first_of(by_name, names, q.names, q.take_max);
  // A pair only: hits without queries (or the reverse) cannot make a rate.
  if (!out.prefix_cache_queries_total || !out.prefix_cache_hits_total)
    out.prefix_cache_queries_total = out.prefix_cache_hits_total = std::nullopt;
  return out;
}

std::optional<ServerSample> reduce_iteration_stats(std::string_view body,
                                                   const metrics::IterationStatsKeys& keys,
                                                   ServerSample& totals) {
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return std::nullopt;
  for (const auto& it : j)
    if (!is_iteration_entry(it, keys)) return std::nullopt;
  for (const auto& it : j) {
    add(totals.spec_decode_num_drafts_total, number(it, keys.spec_decode_num_drafts));
    add(totals.spec_decode_draft_tokens_total, number(it, keys.spec_decode_draft_tokens));
    add(totals.spec_decode_accepted_tokens_total, number(it, keys.spec_decode_accepted_tokens));
  }
  ServerSample out;
  out.spec_decode_num_drafts_total = totals.spec_decode_num_drafts_total;
  out.spec_decode_draft_tokens_total = totals.spec_decode_draft_tokens_total;
  out.spec_decode_accepted_tokens_total = totals.spec_decode_accepted_tokens_total;
  if (j.empty()) return out;  // no iteration since the previous GET: nothing new to read
  const auto& newest = j.back();
  out.num_requests_running = number(newest, keys.num_requests_running);
  out.num_requests_waiting = number(newest, keys.num_requests_waiting);
  const auto used = number(newest, keys.kv_cache_blocks_used);
  const auto total = number(newest, keys.kv_cache_blocks_total);
  if (used && total && *total > 0) out.kv_cache_usage = *used / *total;
  const auto hits = number(newest, keys.prefix_cache_hits);
  const auto misses = number(newest, keys.prefix_cache_misses);
  if (hits && misses) {
    out.prefix_cache_hits_total = *hits;
    out.prefix_cache_queries_total = *hits + *misses;
  }
  return out;
}

void summarize_server_metrics(ServerMetrics& m) {
  m.kv_cache_usage = gauge_stats(m.samples, &ServerSample::kv_cache_usage);
  m.num_requests_running = gauge_stats(m.samples, &ServerSample::num_requests_running);
  m.num_requests_waiting = gauge_stats(m.samples, &ServerSample::num_requests_waiting);
  m.preemptions = counter_delta(m, &ServerSample::preemptions_total, "preemptions");
  m.prefix_cache_queries =
      counter_delta(m, &ServerSample::prefix_cache_queries_total, "prefix-cache queries");
  m.prefix_cache_hits = counter_delta(m, &ServerSample::prefix_cache_hits_total, "prefix-cache hits");
  m.prefix_cache_hit_rate = std::nullopt;
  if (m.prefix_cache_queries && m.prefix_cache_hits && *m.prefix_cache_queries > 0)
    m.prefix_cache_hit_rate = *m.prefix_cache_hits / *m.prefix_cache_queries;
  else if (!m.prefix_cache_queries)
    m.prefix_cache_hit_rate = mean_during(m.samples, &ServerSample::prefix_cache_hit_rate);
  m.spec_decode_num_drafts =
      counter_delta(m, &ServerSample::spec_decode_num_drafts_total, "spec-decode drafts");
  m.spec_decode_draft_tokens =
      counter_delta(m, &ServerSample::spec_decode_draft_tokens_total, "spec-decode draft tokens");
  m.spec_decode_accepted_tokens =
      counter_delta(m, &ServerSample::spec_decode_accepted_tokens_total, "spec-decode accepted tokens");
  m.spec_decode_acceptance_rate = m.spec_decode_acceptance_length = std::nullopt;
  if (m.spec_decode_draft_tokens && m.spec_decode_accepted_tokens && *m.spec_decode_draft_tokens > 0)
    m.spec_decode_acceptance_rate = *m.spec_decode_accepted_tokens / *m.spec_decode_draft_tokens;
  if (m.spec_decode_num_drafts && m.spec_decode_accepted_tokens && *m.spec_decode_num_drafts > 0)
    m.spec_decode_acceptance_length = 1.0 + *m.spec_decode_accepted_tokens / *m.spec_decode_num_drafts;
  else
    m.spec_decode_acceptance_length = mean_during(m.samples, &ServerSample::spec_decode_acceptance_length);
  const bool during = std::any_of(m.samples.begin(), m.samples.end(), [](const ServerSample& s) {
    return s.phase == ServerSample::Phase::kDuring;
  });
  if (m.available && !during)
    append_note(m.note,
                fmt::format("no scrape fell inside the run (every {:g} s): no KV-cache or queue figures; "
                            "lower --server-metrics-interval-s",
                            m.interval_s));
}

std::string format_server_metrics(const ServerMetrics& m) {
  std::string out;
  auto line = [&out](std::string_view label, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<40} {}\n", label, value);
  };
  fmt::format_to(std::back_inserter(out), "{:-^50}\n", " server metrics (/metrics) ");
  if (!m.available) {
    out += "Server metrics not available: " + m.note + "\n";
    out.append(50, '=');
    out.push_back('\n');
    return out;
  }
  std::size_t during = 0;
  for (const auto& s : m.samples) during += s.phase == ServerSample::Phase::kDuring;
  // The count of scrapes taken during the run first (it is what the figures below rest on), then all of
  // them with the one before and the one after (new-user trial: "Scrapes (during the run): 2 (0, ...)").
  line("Scrapes during the run:",
       fmt::format("{} (of {} with the ones before and after; every {:g} s; engine names: {})", during,
                   m.samples.size(), m.interval_s, m.engine.empty() ? "unknown" : m.engine));
  if (m.kv_cache_usage)
    line("KV-cache usage max/mean (%):",
         fmt::format("{:.2f} / {:.2f}", 100 * m.kv_cache_usage->max, 100 * m.kv_cache_usage->mean));
  if (m.num_requests_running)
    line("Running requests max/mean:",
         fmt::format("{:g} / {:.2f}", m.num_requests_running->max, m.num_requests_running->mean));
  if (m.num_requests_waiting)
    line("Waiting requests max/mean:",
         fmt::format("{:g} / {:.2f}", m.num_requests_waiting->max, m.num_requests_waiting->mean));
  if (m.preemptions) line("Preemptions:", fmt::format("{:.0f}", *m.preemptions));
  if (m.prefix_cache_hit_rate) {
    std::string detail = m.prefix_cache_queries ? fmt::format(" ({:.0f} of {:.0f} {})", *m.prefix_cache_hits,
                                                              *m.prefix_cache_queries, m.prefix_cache_unit)
                                                : std::string(" (mean of the server's hit-rate gauge)");
    line("Prefix-cache hit rate (%):", fmt::format("{:.2f}{}", 100 * *m.prefix_cache_hit_rate, detail));
  }
  if (m.spec_decode_acceptance_rate)
    line("Spec-decode acceptance rate (%):",
         fmt::format("{:.2f} ({:.0f} of {:.0f} draft tokens)", 100 * *m.spec_decode_acceptance_rate,
                     *m.spec_decode_accepted_tokens, *m.spec_decode_draft_tokens));
  if (m.spec_decode_acceptance_length)
    line("Spec-decode acceptance length:", fmt::format("{:.2f}", *m.spec_decode_acceptance_length));
  if (m.scrapes_failed > 0) line("Failed scrapes:", std::to_string(m.scrapes_failed));
  if (m.skipped_lines > 0) line("Malformed /metrics lines (skipped):", std::to_string(m.skipped_lines));
  if (!m.note.empty()) out += "Server metrics note: " + m.note + "\n";
  out.append(50, '=');
  out.push_back('\n');
  return out;
}

ordered_json server_metrics_json(const ServerMetrics& m) {
  ordered_json j = ordered_json::object();
  j["url"] = m.url;
  j["engine"] = m.engine.empty() ? ordered_json(nullptr) : ordered_json(m.engine);
  j["interval_s"] = m.interval_s;
  j["available"] = m.available;
  j["note"] = m.note.empty() ? ordered_json(nullptr) : ordered_json(m.note);
  j["scrapes"] = m.samples.size();
  j["failed_scrapes"] = m.scrapes_failed;
  j["skipped_lines"] = m.skipped_lines;
  j["kv_cache_usage"] = gauge_json(m.kv_cache_usage);
  j["num_requests_running"] = gauge_json(m.num_requests_running);
  j["num_requests_waiting"] = gauge_json(m.num_requests_waiting);
  j["preemptions"] = opt(m.preemptions);
  j["prefix_cache_queries"] = opt(m.prefix_cache_queries);
  j["prefix_cache_hits"] = opt(m.prefix_cache_hits);
  j["prefix_cache_hit_rate"] = opt(m.prefix_cache_hit_rate);
  j["spec_decode_num_drafts"] = opt(m.spec_decode_num_drafts);
  j["spec_decode_draft_tokens"] = opt(m.spec_decode_draft_tokens);
  j["spec_decode_accepted_tokens"] = opt(m.spec_decode_accepted_tokens);
  j["spec_decode_acceptance_rate"] = opt(m.spec_decode_acceptance_rate);
  j["spec_decode_acceptance_length"] = opt(m.spec_decode_acceptance_length);
  static constexpr std::pair<const char*, Field> kColumns[] = {
      {"kv_cache_usage", &ServerSample::kv_cache_usage},
      {"num_requests_running", &ServerSample::num_requests_running},
      {"num_requests_waiting", &ServerSample::num_requests_waiting},
      {"preemptions_total", &ServerSample::preemptions_total},
      {"prefix_cache_queries_total", &ServerSample::prefix_cache_queries_total},
      {"prefix_cache_hits_total", &ServerSample::prefix_cache_hits_total},
      {"prefix_cache_hit_rate", &ServerSample::prefix_cache_hit_rate},
      {"spec_decode_num_drafts_total", &ServerSample::spec_decode_num_drafts_total},
      {"spec_decode_draft_tokens_total", &ServerSample::spec_decode_draft_tokens_total},
      {"spec_decode_accepted_tokens_total", &ServerSample::spec_decode_accepted_tokens_total},
      {"spec_decode_acceptance_length", &ServerSample::spec_decode_acceptance_length}};
  ordered_json cols = ordered_json::object();
  ordered_json phase = ordered_json::array(), t = ordered_json::array();
  for (const auto& s : m.samples) {
    phase.push_back(phase_name(s.phase));
    t.push_back(s.t_s);
  }
  cols["phase"] = std::move(phase);
  cols["t_s"] = std::move(t);
  for (const auto& col : kColumns) {
    ordered_json a = ordered_json::array();
    for (const auto& s : m.samples) a.push_back(opt(s.*(col.second)));
    cols[col.first] = std::move(a);
  }
  j["samples"] = std::move(cols);
  return j;
}

namespace detail {
namespace {

// Reads an iteration-stats JSON answer with the first engine of `names` (table order) whose keys it carries,
// into `out`; an empty array (no iteration since the last GET) names its engine only when one engine alone
// serves such JSON. False when no engine's keys fit (or there is nowhere to keep the totals).
bool read_iteration_stats(std::string_view body, const std::vector<metrics::ServerMetricNames>& names,
                          ServerSample* totals, ScrapeResult& out) {
  if (!totals) return false;
  const auto serves_json = [](const metrics::ServerMetricNames& n) { return n.iteration_stats.has_value(); };
  for (const auto& n : names) {
    if (!n.iteration_stats) continue;
    auto s = reduce_iteration_stats(body, *n.iteration_stats, *totals);
    if (!s) continue;
    out.sample = std::move(s);
    const bool empty = trim(trim(body).substr(1)).front() == ']';  // a JSON array: "[" ... "]"
    if (!empty || std::count_if(names.begin(), names.end(), serves_json) == 1) {
      out.engine = n.engine;
      out.prefix_cache_unit = n.prefix_cache_unit;
    }
    return true;
  }
  return false;
}

}  // namespace

ScrapeResult scrape_metrics(const std::string& url,
                            const std::vector<std::pair<std::string, std::string>>& headers, bool insecure,
                            const std::vector<metrics::ServerMetricNames>& names,
                            ServerSample* iteration_totals) {
  ScrapeResult out;
  const std::string shown = common::redact_url(url);
  auto all = headers;
  all.emplace_back("Accept", "text/plain;version=0.0.4;q=0.9,*/*;q=0.1");
  HttpGetResult res;
  try {
    res = http_get(url, all, insecure, 5.0);
  } catch (const std::exception& e) {
    out.error = e.what();
    return out;
  }
  if (res.status != 200) {
    out.error = fmt::format("GET {} returned HTTP {} {}", shown, res.status, res.reason);
    return out;
  }
  const std::string_view body = trim(res.body);
  if (!body.empty() && (body.front() == '[' || body.front() == '{')) {
    if (read_iteration_stats(body, names, iteration_totals, out)) return out;
    std::string json_engines;  // the engines that serve iteration stats, by name
    for (const auto& n : names)
      if (n.iteration_stats) json_engines += (json_engines.empty() ? "" : ", ") + n.engine;
    out.error = fmt::format("GET {} answered JSON that is neither Prometheus text nor iteration stats ({})",
                            shown, json_engines.empty() ? "no engine serves them" : json_engines);
    return out;
  }
  if (!body.empty() && body.front() == '<') {
    out.error = fmt::format("GET {} answered HTML, not the Prometheus text format", shown);
    return out;
  }
  const prometheus::Exposition e = prometheus::parse(res.body);
  if (e.samples.empty()) {
    out.error =
        e.skipped.empty()
            ? fmt::format("GET {} answered no Prometheus samples ({} bytes)", shown, res.body.size())
            : fmt::format("GET {} is not in the Prometheus text format ({} malformed lines; line {}: {})",
                          shown, e.skipped_count, e.skipped[0].line, e.skipped[0].reason);
    return out;
  }
  out.skipped_lines = e.skipped_count;
  out.sample = reduce_exposition(e, names, &out.engine, &out.prefix_cache_unit);
  return out;
}

struct ServerMetricsScraper::State {
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  bool insecure = false;
  double time_scale = 1.0;
  std::vector<metrics::ServerMetricNames> names;
  std::mutex mu;  // guards result, done, iteration_totals
  std::condition_variable cv;
  bool done = false;
  ServerMetrics result;
  ServerSample iteration_totals;  // running spec-decode sums of iteration-stats JSON
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::thread thread;

  void take(ServerSample::Phase phase) {
    const auto when = std::chrono::steady_clock::now();
    ServerSample totals;
    {
      std::lock_guard lk(mu);
      totals = iteration_totals;
    }
    ScrapeResult r = scrape_metrics(url, headers, insecure, names, &totals);
    std::lock_guard lk(mu);
    iteration_totals = totals;
    if (!r.sample) {
      ++result.scrapes_failed;
      if (result.note.empty()) result.note = r.error;
      return;
    }
    r.sample->phase = phase;
    r.sample->t_s = phase == ServerSample::Phase::kBefore
                        ? 0.0
                        : std::chrono::duration<double>(when - t0).count() * time_scale;
    result.samples.push_back(*r.sample);
    if (!r.engine.empty()) {
      result.engine = r.engine;
      result.prefix_cache_unit = r.prefix_cache_unit;
    }
    result.skipped_lines += r.skipped_lines;
  }

  void loop() {
    // Lower this thread's CPU priority (Linux: per-thread nice) so that on a loaded host the load
    // generator's threads win the CPU; a scrape is ~1 ms of work per interval.
    setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
    const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(result.interval_s));
    auto next = t0 + period;
    for (;;) {
      {
        std::unique_lock lk(mu);
        if (cv.wait_until(lk, next, [this] { return done; })) return;
      }
      take(ServerSample::Phase::kDuring);
      const auto now = std::chrono::steady_clock::now();
      while (next <= now) next += period;  // a slow scrape skips the slots it overran
    }
  }
};

ServerMetricsScraper::ServerMetricsScraper(const std::string& base_url,
                                           std::vector<std::pair<std::string, std::string>> headers,
                                           bool insecure, double interval_s, double time_scale,
                                           std::vector<metrics::ServerMetricNames> names)
    : state_(std::make_unique<State>()) {
  State& s = *state_;
  s.url = base_url + "/metrics";
  s.headers = std::move(headers);
  s.insecure = insecure;
  s.time_scale = time_scale;
  s.names = std::move(names);
  s.result.url = common::redact_url(s.url);
  s.result.interval_s = interval_s;
  s.take(ServerSample::Phase::kBefore);
  s.result.available = !s.result.samples.empty();
}

ServerMetricsScraper::~ServerMetricsScraper() {
  {
    std::lock_guard lk(state_->mu);
    state_->done = true;
  }
  state_->cv.notify_all();
  if (state_->thread.joinable()) state_->thread.join();
}

void ServerMetricsScraper::start_run() {
  State& s = *state_;
  s.t0 = std::chrono::steady_clock::now();
  if (s.result.available && !s.thread.joinable()) s.thread = std::thread([&s] { s.loop(); });
}

ServerMetrics ServerMetricsScraper::stop() {
  State& s = *state_;
  {
    std::lock_guard lk(s.mu);
    s.done = true;
  }
  s.cv.notify_all();
  if (s.thread.joinable()) s.thread.join();
  if (s.result.available) s.take(ServerSample::Phase::kAfter);
  ServerMetrics out = s.result;
  summarize_server_metrics(out);
  return out;
}

}  // namespace detail
}  // namespace servelab::bench
