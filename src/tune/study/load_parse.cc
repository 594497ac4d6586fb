// Parsing of [load], a scenario's `load`, [slo], [cost] and [[objectives]] (see load_parse.h).
#include "tune/study/load_parse.h"

#include "servelab/tune/study/load_points.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <regex>
#include <set>
#include <sstream>

namespace servelab::tune::detail {

namespace {

[[noreturn]] void fail(const std::string& origin, const toml::node* node, const std::string& path,
                       const std::string& msg) {
  const int line = node ? static_cast<int>(node->source().begin.line) : 0;
  if (line > 0) throw StudyError(fmt::format("{}:{}: {}: {}", origin, line, path, msg));
  throw StudyError(fmt::format("{}: {}: {}", origin, path, msg));
}

void check_keys(const std::string& origin, const toml::table& t, const std::string& path,
                const std::set<std::string>& allowed) {
  for (const auto& [k, v] : t)
    if (!allowed.count(std::string(k.str())))
      fail_unknown_key(origin, &v, path + "." + std::string(k.str()),
                       fmt::format("{}", fmt::join(allowed, ", ")));
}

/// A finite number at t[key] (nullopt when absent).
std::optional<double> number(const std::string& origin, const toml::table& t, const std::string& key,
                             const std::string& path) {
  const toml::node* n = t.get(key);
  if (!n) return std::nullopt;
  if (!n->is_number() || !std::isfinite(*n->value<double>()))
    fail(origin, n, path + "." + key, "must be a number");
  return *n->value<double>();
}

double positive(const std::string& origin, const toml::table& t, const std::string& key,
                const std::string& path, double fallback) {
  const auto v = number(origin, t, key, path);
  if (!v) return fallback;
  if (!(*v > 0)) fail(origin, t.get(key), path + "." + key, fmt::format("{} must be > 0", *v));
  return *v;
}

/// `t[key]`, an integer in lo..hi, else `fallback` when absent; fails naming `path.key` otherwise.
int integer_in(const std::string& origin, const toml::table& t, const std::string& key,
               const std::string& path, int64_t lo, int64_t hi, int fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_integer() || *n->value<int64_t>() < lo || *n->value<int64_t>() > hi)
    fail(origin, n, path + "." + key, fmt::format("must be an integer in {}..{}", lo, hi));
  return static_cast<int>(*n->value<int64_t>());
}

std::string text(const std::string& origin, const toml::table& t, const std::string& key,
                 const std::string& path, const std::string& fallback) {
  const toml::node* n = t.get(key);
  if (!n) return fallback;
  if (!n->is_string()) fail(origin, n, path + "." + key, "must be a string");
  return *n->value<std::string>();
}

/// The console label of an SLO key "<stat>_<metric>_ms" (vLLM sweep serve_sla's form), or a message.
std::optional<SloTarget> slo_target(const std::string& key) {
  static const std::regex kSlo(R"((mean|median|p(\d{1,2}(?:\.\d+)?))_(ttft|tpot|itl|e2el)_ms)");
  std::smatch m;
  if (!std::regex_match(key, m, kSlo)) return std::nullopt;
  SloTarget t;
  t.key = key;
  t.stat = m[1];
  t.metric = m[3];
  std::string name = t.metric;
  std::transform(name.begin(), name.end(), name.begin(), ::toupper);
  const std::string stat = t.stat == "mean"     ? "Mean"
                           : t.stat == "median" ? "Median"
                                                : "P" + std::string(m[2]);
  t.label = fmt::format("{} {} (ms)", stat, name);
  return t;
}

/// The percentiles bench serve reports for `args` (--metric-percentiles, default 99), as numbers; empty when
/// a value does not read as one (bench reports that itself).
std::vector<double> reported_percentiles(const std::vector<std::string>& args) {
  std::string list = "99";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--metric-percentiles" && i + 1 < args.size()) list = args[i + 1];
    if (args[i].rfind("--metric-percentiles=", 0) == 0) list = args[i].substr(21);
  }
  std::vector<double> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) {
    try {
      out.push_back(std::stod(item));
    } catch (const std::exception&) {
      return {};
    }
  }
  return out;
}

/// A pNN target the scenario's bench run does not report (--metric-percentiles lacks NN) would fail every
/// run of every configuration: refused at load.
void check_slo_percentiles(const std::string& origin, const toml::table& t, const Study& s) {
  std::vector<std::string> args = s.bench_common_args;
  const Scenario& sc = s.scenario(s.slo.scenario);
  args.insert(args.end(), sc.args.begin(), sc.args.end());
  const std::vector<double> reported = reported_percentiles(args);
  if (reported.empty()) return;
  for (const SloTarget& target : s.slo.targets) {
    if (target.stat.empty() || target.stat[0] != 'p') continue;
    const double want = std::stod(target.stat.substr(1));
    if (std::any_of(reported.begin(), reported.end(), [&](double x) { return std::abs(x - want) < 1e-9; }))
      continue;
    fail(origin, t.get(target.key), "slo." + target.key,
         fmt::format(
             "scenario '{}' does not report the {} percentile: bench serve prints only P99 by default; "
             "add \"--metric-percentiles\", \"{}\" to its args (or [bench] common_args)",
             s.slo.scenario, target.stat.substr(1),
             target.stat.substr(1) == "99" ? "99" : target.stat.substr(1) + ",99"));
  }
}

void parse_slo(const toml::table& root, const std::string& origin, Study& s) {
  const toml::node* n = root.get("slo");
  if (!n) return;
  if (!n->is_table()) fail(origin, n, "slo", "must be a table, e.g. [slo] p99_ttft_ms = 2000");
  const auto& t = *n->as_table();
  static const std::set<std::string> kSettings = {
      "search",     "scenario",      "start",    "min_value",
      "max_value",  "tolerance_pct", "max_runs", "min_prompts_per_in_flight",
      "max_prompts"};
  for (const auto& [k, v] : t) {
    const std::string key(k.str());
    if (kSettings.count(key)) continue;
    auto target = slo_target(key);
    if (!target && v.is_table() && std::regex_match(key, std::regex(R"(p\d{1,2})")))
      fail(origin, &v, "slo." + key,
           fmt::format("TOML reads the dot of a fractional percentile as a table: quote the key, e.g. "
                       "\"{}.9_ttft_ms\" = 2000",
                       key));
    if (!target)
      fail(origin, &v, "slo." + key,
           fmt::format(
               "unknown key: an SLO is <stat>_<metric>_ms with stat mean, median or pNN and metric ttft, "
               "tpot, itl or e2el (e.g. p99_ttft_ms = 2000); settings: {}",
               fmt::join(kSettings, ", ")));
    target->max_ms = positive(origin, t, key, "slo", 0);
    s.slo.targets.push_back(*target);
  }
  if (s.slo.targets.empty()) fail(origin, n, "slo", "names no SLO target (e.g. p99_ttft_ms = 2000)");
  const std::string var = text(origin, t, "search", "slo", "request_rate");
  if (var == "request_rate")
    s.slo.variable = LoadKind::kRequestRate;
  else if (var == "concurrency")
    s.slo.variable = LoadKind::kConcurrency;
  else
    fail(origin, t.get("search"), "slo.search", "must be \"request_rate\" or \"concurrency\"");
  s.slo.scenario = text(origin, t, "scenario", "slo", s.objective.scenarios.front());
  if (std::none_of(s.scenarios.begin(), s.scenarios.end(),
                   [&](const Scenario& x) { return x.id == s.slo.scenario; }))
    fail(origin, t.get("scenario"), "slo.scenario", "no scenario with id '" + s.slo.scenario + "'");
  if (t.get("start")) s.slo.start = positive(origin, t, "start", "slo", 1);
  s.slo.min_value =
      positive(origin, t, "min_value", "slo", s.slo.variable == LoadKind::kConcurrency ? 1 : 0.01);
  s.slo.max_value = positive(origin, t, "max_value", "slo", s.slo.max_value);
  if (s.slo.min_value >= s.slo.max_value)
    fail(origin, t.get("min_value"), "slo.min_value",
         fmt::format("{} is not below max_value {}", s.slo.min_value, s.slo.max_value));
  if (s.slo.start && (*s.slo.start < s.slo.min_value || *s.slo.start > s.slo.max_value))
    fail(origin, t.get("start"), "slo.start",
         fmt::format("{} is outside min_value..max_value ({}..{})", *s.slo.start, s.slo.min_value,
                     s.slo.max_value));
  s.slo.tolerance_pct = positive(origin, t, "tolerance_pct", "slo", s.slo.tolerance_pct);
  if (s.slo.tolerance_pct > 100) fail(origin, t.get("tolerance_pct"), "slo.tolerance_pct", "must be ≤ 100");
  s.slo.max_runs = integer_in(origin, t, "max_runs", "slo", 3, 1000, s.slo.max_runs);
  s.slo.min_prompts_per_in_flight =
      positive(origin, t, "min_prompts_per_in_flight", "slo", s.slo.min_prompts_per_in_flight);
  if (s.slo.min_prompts_per_in_flight > 1000)
    fail(origin, t.get("min_prompts_per_in_flight"), "slo.min_prompts_per_in_flight", "must be ≤ 1000");
  s.slo.max_prompts = integer_in(origin, t, "max_prompts", "slo", 1, 10000000, s.slo.max_prompts);
  check_slo_percentiles(origin, t, s);
  if (t.get("max_prompts")) {  // the search never runs shorter than the scenario as written
    const auto sc = std::find_if(s.scenarios.begin(), s.scenarios.end(),
                                 [&](const Scenario& x) { return x.id == s.slo.scenario; });
    if (const int written = scenario_num_prompts(*sc); s.slo.max_prompts < written)
      fail(origin, t.get("max_prompts"), "slo.max_prompts",
           fmt::format("{} is below the --num-prompts {} of scenario '{}': the SLO search runs at least the "
                       "scenario's prompts, so raise max_prompts or lower --num-prompts",
                       s.slo.max_prompts, written, s.slo.scenario));
  }
}

ObjectiveSpec parse_objective(const toml::table& t, const std::string& origin, const std::string& p) {
  check_keys(origin, t, p, {"kind", "min_tokens_per_s_per_user", "max_concurrency", "metric"});
  ObjectiveSpec o;
  const std::string kind = text(origin, t, "kind", p, "");
  using K = ObjectiveSpec::Kind;
  if (kind == "throughput")
    o.kind = K::kThroughput;
  else if (kind == "slo_goodput")
    o.kind = K::kSloGoodput;
  else if (kind == "tokens_per_gpu")
    o.kind = K::kTokensPerGpu;
  else if (kind == "min_latency")
    o.kind = K::kMinLatency;
  else if (kind == "cost")
    o.kind = K::kCost;
  else
    fail(origin, t.get("kind") ? t.get("kind") : &t, p + ".kind",
         "must be throughput, slo_goodput, tokens_per_gpu, min_latency or cost");
  const auto only_for = [&](const char* key, K k) {
    if (t.get(key) && o.kind != k)
      fail(origin, t.get(key), p + "." + key, "does not apply to kind '" + kind + "'");
  };
  only_for("min_tokens_per_s_per_user", K::kTokensPerGpu);
  only_for("max_concurrency", K::kMinLatency);
  only_for("metric", K::kMinLatency);
  if (o.kind == K::kTokensPerGpu)
    o.min_tokens_per_s_per_user = positive(origin, t, "min_tokens_per_s_per_user", p, 0);
  if (o.kind == K::kTokensPerGpu && !t.get("min_tokens_per_s_per_user"))
    fail(origin, &t, p + ".min_tokens_per_s_per_user",
         "tokens_per_gpu needs a per-user floor (tok/s), e.g. 30");
  if (o.kind == K::kMinLatency) {
    const toml::node* c = t.get("max_concurrency");
    if (!c || !c->is_integer() || *c->value<int64_t>() < 1)
      fail(origin, c ? c : &t, p + ".max_concurrency", "min_latency needs max_concurrency, an integer ≥ 1");
    o.max_concurrency = static_cast<int>(*c->value<int64_t>());
    const std::string metric = text(origin, t, "metric", p, "e2el_mean_ms");
    try {
      o.metric = metric_label(metric);
    } catch (const StudyError& e) {
      fail(origin, t.get("metric"), p + ".metric", e.what());
    }
    if (o.metric.find("(ms)") == std::string::npos)
      fail(origin, t.get("metric"), p + ".metric", "'" + metric + "' is not a latency (ms)");
  }
  return o;
}

/// Cross-checks of the objectives against [load], [slo] and [cost].
void check_objectives(const toml::array& nodes, const std::string& origin, const Study& s) {
  bool has_concurrency = !s.load.concurrency.empty();
  for (const auto& sc : s.scenarios)
    has_concurrency = has_concurrency || (sc.load && !sc.load->concurrency.empty());
  for (size_t i = 0; i < s.objectives.size(); ++i) {
    const ObjectiveSpec& o = s.objectives[i];
    const std::string p = fmt::format("objectives[{}]", i);
    const toml::node* node = nodes.get(i);
    using K = ObjectiveSpec::Kind;
    if (o.kind == K::kSloGoodput && s.slo.targets.empty())
      fail(origin, node, p, "slo_goodput needs an [slo] table with targets (e.g. p99_ttft_ms = 2000)");
    if (o.kind == K::kCost && !s.cost) fail(origin, node, p, "cost needs [cost] usd_per_gpu_hour = ...");
    if ((o.kind == K::kTokensPerGpu || o.kind == K::kMinLatency) && !has_concurrency)
      fail(origin, node, p, "'" + o.name() + "' needs concurrency load points ([load] concurrency = [...])");
    if (i == 0 && !o.maximised())
      fail(origin, node, p,
           "'" + o.name() +
               "' is minimised and cannot be the primary objective (the search maximises the first "
               "one); list it after a maximised one (cost per 1M tokens falls where tokens_per_gpu rises)");
  }
}

}  // namespace

void fail_unknown_key(const std::string& origin, const toml::node* node, const std::string& path,
                      const std::string& allowed) {
  const int line = node ? static_cast<int>(node->source().begin.line) : 0;
  const std::string m = "unknown key " + path + " (allowed: " + allowed + ")";
  if (line > 0) throw StudyError(fmt::format("{}:{}: {}", origin, line, m));
  throw StudyError(fmt::format("{}: {}", origin, m));
}

std::optional<LoadSpec> parse_load_table(const toml::table& parent, const std::string& key,
                                         const std::string& path, const std::string& origin) {
  const toml::node* n = parent.get(key);
  if (!n) return std::nullopt;
  const std::string p = path.empty() ? key : path + "." + key;
  if (!n->is_table()) fail(origin, n, p, "must be a table, e.g. {concurrency = [1, 4, 16]}");
  const auto& t = *n->as_table();
  check_keys(origin, t, p, {"concurrency", "request_rate"});
  LoadSpec spec;
  for (const char* k : {"concurrency", "request_rate"}) {
    const toml::node* a = t.get(k);
    if (!a) continue;
    if (!a->is_array()) fail(origin, a, p + "." + k, "must be an array of numbers");
    size_t i = 0;
    for (const auto& e : *a->as_array()) {
      const std::string ep = fmt::format("{}.{}[{}]", p, k, i++);
      if (std::string(k) == "concurrency") {
        if (!e.is_integer() || *e.value<int64_t>() < 1 || *e.value<int64_t>() > 1000000)
          fail(origin, &e, ep, "a concurrency must be an integer in 1..1000000");
        const int c = static_cast<int>(*e.value<int64_t>());
        if (std::count(spec.concurrency.begin(), spec.concurrency.end(), c))
          fail(origin, &e, ep, fmt::format("duplicate concurrency {}", c));
        spec.concurrency.push_back(c);
      } else {
        if (!e.is_number() || !(*e.value<double>() > 0) || !std::isfinite(*e.value<double>()))
          fail(origin, &e, ep, "a request rate must be a finite number > 0 (req/s)");
        const double r = *e.value<double>();
        if (std::count(spec.request_rate.begin(), spec.request_rate.end(), r))
          fail(origin, &e, ep, fmt::format("duplicate request rate {}", r));
        spec.request_rate.push_back(r);
      }
    }
  }
  return spec;
}

void parse_load_sections(const toml::table& root, const std::string& origin, Study& s) {
  if (auto l = parse_load_table(root, "load", "", origin)) s.load = *l;
  parse_slo(root, origin, s);
  if (const toml::node* n = root.get("cost")) {
    if (!n->is_table()) fail(origin, n, "cost", "must be a table: [cost] usd_per_gpu_hour = 3.5");
    check_keys(origin, *n->as_table(), "cost", {"usd_per_gpu_hour"});
    if (!n->as_table()->get("usd_per_gpu_hour"))
      fail(origin, n, "cost.usd_per_gpu_hour", "missing ($ per GPU-hour)");
    s.cost = CostSpec{positive(origin, *n->as_table(), "usd_per_gpu_hour", "cost", 0)};
  }
  const toml::node* on = root.get("objectives");
  if (!on) return;
  if (!on->is_array_of_tables() || on->as_array()->empty())
    fail(origin, on, "objectives",
         "must be [[objectives]] tables, e.g. [[objectives]] kind = \"slo_goodput\"");
  size_t i = 0;
  for (const auto& e : *on->as_array()) {
    const std::string p = fmt::format("objectives[{}]", i++);
    ObjectiveSpec o = parse_objective(*e.as_table(), origin, p);
    for (const auto& prev : s.objectives)
      if (prev.name() == o.name() && o.kind != ObjectiveSpec::Kind::kTokensPerGpu &&
          o.kind != ObjectiveSpec::Kind::kMinLatency)
        fail(origin, &e, p + ".kind", "objective '" + o.name() + "' is named twice");
    s.objectives.push_back(o);
  }
  check_objectives(*on->as_array(), origin, s);
}

}  // namespace servelab::tune::detail
