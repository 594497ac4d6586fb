// The load points of a study as scenarios of their own, and the names of its SLO targets and primary
// objective (see load_points.h): pure functions of the study file; the runs are load.cc's.
#include "servelab/tune/study/load_points.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace servelab::tune {

std::string LoadPoint::tag() const {
  std::string t = kind == LoadKind::kConcurrency ? fmt::format("c{}", static_cast<long>(value))
                                                 : fmt::format("r{:g}", value);
  if (num_prompts > 0) t += fmt::format("n{}", num_prompts);
  return t;
}

std::string LoadPoint::text() const {
  std::string t = kind == LoadKind::kConcurrency ? fmt::format("concurrency {}", static_cast<long>(value))
                                                 : fmt::format("{:g} req/s", value);
  if (num_prompts > 0) t += fmt::format(", {} prompts", num_prompts);
  return t;
}

std::vector<LoadPoint> LoadSpec::points() const {
  std::vector<LoadPoint> out;
  for (int c : concurrency) out.push_back({LoadKind::kConcurrency, double(c)});
  for (double r : request_rate) out.push_back({LoadKind::kRequestRate, r});
  return out;
}

std::string load_scenario_id(const std::string& scenario, const LoadPoint& load) {
  return scenario + "@" + load.tag();
}

std::optional<std::pair<std::string, LoadPoint>> split_load_scenario_id(const std::string& id) {
  const auto at = id.rfind('@');
  if (at == std::string::npos || at + 2 > id.size()) return std::nullopt;
  const char kind = id[at + 1];
  if (kind != 'c' && kind != 'r') return std::nullopt;
  std::string num = id.substr(at + 2);
  double v = 0;
  long n = 0;
  try {
    if (const auto np = num.find('n'); np != std::string::npos) {  // "r2.5n2400": a run of 2400 prompts
      const std::string count = num.substr(np + 1);
      size_t used = 0;
      n = std::stol(count, &used);
      if (used != count.size() || n < 1 || n > 100000000 || count[0] == '+') return std::nullopt;
      num.resize(np);
    }
    size_t used = 0;
    v = std::stod(num, &used);
    if (used != num.size() || !(v > 0)) return std::nullopt;
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return std::pair{id.substr(0, at), LoadPoint{kind == 'c' ? LoadKind::kConcurrency : LoadKind::kRequestRate,
                                               v, static_cast<int>(n)}};
}

namespace {

/// `args` without `flag V` / `flag=V`.
std::vector<std::string> without_flag(const std::vector<std::string>& args, const std::string& flag) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == flag) {
      ++i;
      continue;
    }
    if (args[i].rfind(flag + "=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

bool has_flag(const std::vector<std::string>& args, const std::string& flag) {
  return std::any_of(args.begin(), args.end(),
                     [&](const std::string& a) { return a == flag || a.rfind(flag + "=", 0) == 0; });
}

}  // namespace

Scenario load_scenario(const Study& study, const std::string& id) {
  const auto split = split_load_scenario_id(id);
  if (!split) return study.scenario(id);
  Scenario sc = study.scenario(split->first);
  const LoadPoint& lp = split->second;
  sc.id = id;
  sc.args = without_flag(without_flag(sc.args, "--max-concurrency"), "--request-rate");
  if (lp.kind == LoadKind::kConcurrency)
    sc.args.insert(sc.args.end(), {"--max-concurrency", fmt::format("{}", long(lp.value))});
  else
    sc.args.insert(sc.args.end(), {"--request-rate", fmt::format("{:g}", lp.value)});
  if (lp.num_prompts > 0) {
    sc.args = without_flag(sc.args, "--num-prompts");
    sc.args.insert(sc.args.end(), {"--num-prompts", std::to_string(lp.num_prompts)});
  }
  if (!has_flag(sc.args, "--goodput") && study.objective.slo_ms.empty()) {
    std::map<std::string, double> per_request;  // vLLM's --goodput keys; the strictest target per metric
    for (const auto& t : study.slo.targets) {
      if (t.metric == "itl") continue;  // vLLM's goodput has no per-request ITL
      auto [it, fresh] = per_request.emplace(t.metric, t.max_ms);
      if (!fresh) it->second = std::min(it->second, t.max_ms);
    }
    for (const auto& [k, v] : per_request)
      sc.args.insert(sc.args.end(), {"--goodput", fmt::format("{}:{:g}", k, v)});
  }
  return sc;
}

std::vector<LoadPoint> load_points(const Study& study, const Scenario& scenario) {
  return scenario.load ? scenario.load->points() : study.load.points();
}

std::string load_analysis_scenario(const Study& study) {
  return study.slo.targets.empty() ? study.objective.scenarios.front() : study.slo.scenario;
}

std::string slo_target_name(const SloTarget& t) {
  std::string what = t.label;  // "P99 TTFT (ms)"
  if (const size_t unit = what.rfind(" (ms)"); unit != std::string::npos) what.erase(unit);
  return what;
}

std::string slo_target_text(const SloTarget& t) {
  return fmt::format("{} ≤ {:g} ms", slo_target_name(t), t.max_ms);
}

bool load_objective_is_primary(const Study& study) {
  if (study.objectives.empty()) return false;
  const auto k = study.objectives.front().kind;
  return k == ObjectiveSpec::Kind::kSloGoodput || k == ObjectiveSpec::Kind::kTokensPerGpu;
}

std::string primary_objective_label(const Study& study) {
  if (!load_objective_is_primary(study)) return study.objective.metric;
  const ObjectiveSpec& o = study.objectives.front();
  if (o.kind == ObjectiveSpec::Kind::kSloGoodput) return "Request goodput under the SLOs (req/s)";
  return fmt::format("Output tok/s per GPU at ≥ {:g} tok/s per user", o.min_tokens_per_s_per_user);
}

}  // namespace servelab::tune
