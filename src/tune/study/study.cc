// The study's names (targets, strategies, rules, metrics), lookups, --prompts-scale and load_study; the
// STUDY.toml parser itself is study_parse.cc.
#include "servelab/tune/study/study.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "servelab/common/paths.h"
#include "servelab/common/redact.h"
#include "servelab/engines/engine_module.h"

namespace servelab::tune {

std::string ObjectiveSpec::name() const {
  switch (kind) {
    case Kind::kThroughput:
      return "throughput";
    case Kind::kSloGoodput:
      return "slo_goodput";
    case Kind::kTokensPerGpu:
      return "tokens_per_gpu";
    case Kind::kMinLatency:
      return "min_latency";
    case Kind::kCost:
      return "cost";
  }
  return "?";
}

const char* target_name(Target target) {
  switch (target) {
    case Target::kTwin:
      return "twin";
    case Target::kLocal:
      return "local";
    case Target::kSlurm:
      return "slurm";
  }
  return "?";
}

const char* strategy_name(Strategy strategy) {
  switch (strategy) {
    case Strategy::kGreedy:
      return "greedy";
    case Strategy::kGrid:
      return "grid";
    case Strategy::kTwinGuided:
      return "twin-guided";
  }
  return "?";
}

Strategy default_strategy(Target target) {
  // Real GPUs (local or Slurm) cost money per launch: the twin ranks first. On the twin itself, greedy
  // explains each gain (and the grid check covers what it misses).
  return target == Target::kTwin ? Strategy::kGreedy : Strategy::kTwinGuided;
}

const char* recommendation_rule_name(RecommendationRule rule) {
  switch (rule) {
    case RecommendationRule::kTradeOff:
      return "trade_off";
    case RecommendationRule::kObjective:
      return "objective";
    case RecommendationRule::kNoRegression:
      return "no_regression";
  }
  return "?";
}

const EngineSpec& Study::engine(const std::string& n) const {
  for (const auto& e : engines)
    if (e.name == n) return e;
  throw std::out_of_range("study has no engine '" + n + "'");
}
const Knob& Study::knob(const std::string& n) const {
  for (const auto& k : knobs)
    if (k.name == n) return k;
  throw std::out_of_range("study has no knob '" + n + "'");
}
std::string redact_study_secrets(const Study& study, std::string_view text) {
  std::vector<std::pair<std::string, std::string>> secrets;
  for (const auto& k : study.knobs)
    for (const auto& sv : k.secret_values)
      if (sv.first.size() >= common::kMinSecretBytes) secrets.push_back(sv);
  std::sort(secrets.begin(), secrets.end(),
            [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  std::string out(text);
  for (const auto& [value, label] : secrets)
    for (size_t at = out.find(value); at != std::string::npos; at = out.find(value, at + label.size()))
      out.replace(at, value.size(), label);
  return common::redact_text(out);
}

const Scenario& Study::scenario(const std::string& id) const {
  for (const auto& s : scenarios)
    if (s.id == id) return s;
  throw std::out_of_range("study has no scenario '" + id + "'");
}

int scenario_num_prompts(const Scenario& sc) {
  for (size_t i = 0; i < sc.args.size(); ++i) {
    std::string v;
    if (sc.args[i] == "--num-prompts" && i + 1 < sc.args.size())
      v = sc.args[i + 1];
    else if (sc.args[i].rfind("--num-prompts=", 0) == 0)
      v = sc.args[i].substr(14);
    else
      continue;
    try {
      return std::max(1, std::stoi(v));
    } catch (const std::exception&) {
      return 1000;  // bench serve reports the bad value itself
    }
  }
  return 1000;
}

std::string metric_label(const std::string& name) {
  static const std::map<std::string, std::string> kAliases = {
      {"total_token_throughput", "Total Token throughput (tok/s)"},
      {"output_throughput", "Output token throughput (tok/s)"},
      {"request_throughput", "Request throughput (req/s)"},
      {"request_goodput", "Request goodput (req/s)"},
      {"successful_requests", "Successful requests"},
      {"ttft_mean_ms", "Mean TTFT (ms)"},
      {"ttft_median_ms", "Median TTFT (ms)"},
      {"ttft_p99_ms", "P99 TTFT (ms)"},
      {"tpot_mean_ms", "Mean TPOT (ms)"},
      {"tpot_median_ms", "Median TPOT (ms)"},
      {"tpot_p99_ms", "P99 TPOT (ms)"},
      {"itl_mean_ms", "Mean ITL (ms)"},
      {"itl_median_ms", "Median ITL (ms)"},
      {"itl_p99_ms", "P99 ITL (ms)"},
      {"e2el_mean_ms", "Mean E2EL (ms)"},
      {"e2el_p99_ms", "P99 E2EL (ms)"},
  };
  auto it = kAliases.find(name);
  if (it != kAliases.end()) return it->second;
  for (const auto& [alias, label] : kAliases)
    if (label == name) return label;
  std::string known;
  for (const auto& [alias, label] : kAliases) known += (known.empty() ? "" : ", ") + alias;
  throw StudyError(fmt::format("unknown metric '{}' (known: {})", name, known));
}

namespace {

std::vector<std::string> scale_num_prompts(std::vector<std::string> args, double scale) {
  auto scaled = [scale](const std::string& v) {
    long n = 0;
    try {
      n = std::stol(v);
    } catch (const std::exception&) {
      return v;  // bench reports the bad value itself
    }
    return std::to_string(std::max(1L, static_cast<long>(std::ceil(static_cast<double>(n) * scale - 1e-9))));
  };
  bool found = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--num-prompts" && i + 1 < args.size()) {
      args[i + 1] = scaled(args[i + 1]);
      found = true;
    } else if (args[i].rfind("--num-prompts=", 0) == 0) {
      args[i] = "--num-prompts=" + scaled(args[i].substr(14));
      found = true;
    }
  }
  if (!found) args.insert(args.end(), {"--num-prompts", scaled("1000")});  // bench serve's default
  return args;
}

}  // namespace

Study scale_prompts(Study study, double scale) {
  if (!(scale > 0 && scale <= 1))
    throw std::invalid_argument(fmt::format("--prompts-scale {} must be in (0, 1]", scale));
  if (scale == 1) return study;
  for (auto& sc : study.scenarios) sc.args = scale_num_prompts(sc.args, scale);
  if (!study.warmup_args.empty()) study.warmup_args = scale_num_prompts(study.warmup_args, scale);
  study.prompts_scale = scale;
  return study;
}

Study load_study(const std::filesystem::path& path, const std::filesystem::path& data_dir) {
  std::string text;
  try {
    text = common::read_file(path);
  } catch (const std::exception& e) {
    throw StudyError(std::string("cannot read study file: ") + e.what());
  }
  Study s = parse_study(text, path.string(), data_dir);
  s.source_path = path;
  return s;
}

bool twin_predicts(const Study& study) {
  return study.target == Target::kTwin || study.search.strategy == Strategy::kTwinGuided ||
         !study.slo.targets.empty();
}

std::vector<std::pair<std::string, std::string>> unmodelled_version_warnings(const Study& study) {
  std::vector<std::pair<std::string, std::string>> out;
  if (!twin_predicts(study)) return out;
  for (const auto& e : study.engines) {
    if (e.version.empty()) continue;
    try {
      if (auto w = engines::unmodelled_release_warning(e.kind, e.version)) out.emplace_back(e.name, *w);
    } catch (const std::invalid_argument& ex) {
      throw std::invalid_argument(fmt::format("engine {}: version: {}", e.name, ex.what()));
    }
  }
  return out;
}

}  // namespace servelab::tune
