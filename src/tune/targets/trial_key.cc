// Runner kinds and trial keys (trial_key.h).
#include "servelab/tune/targets/trial_key.h"

#include <fmt/format.h>

#include <charconv>

namespace servelab::tune {

RunnerKind runner_kind(Target target) {
  switch (target) {
    case Target::kTwin:
      return RunnerKind::kTwin;
    case Target::kLocal:
      return RunnerKind::kLocal;
    case Target::kSlurm:
      return RunnerKind::kSlurm;
  }
  return RunnerKind::kLocal;
}

const char* runner_tag(RunnerKind kind) {
  switch (kind) {
    case RunnerKind::kTwin:
      return "twin";
    case RunnerKind::kLocal:
      return "local";
    case RunnerKind::kSlurm:
      return "slurm";
    case RunnerKind::kK8sPlan:
      return "k8s-plan";
  }
  return "?";
}

std::optional<RunnerKind> runner_kind_from_tag(std::string_view tag) {
  for (RunnerKind k : {RunnerKind::kTwin, RunnerKind::kLocal, RunnerKind::kSlurm, RunnerKind::kK8sPlan})
    if (tag == runner_tag(k)) return k;
  return std::nullopt;
}

bool runner_predicts(RunnerKind kind) {
  return kind == RunnerKind::kTwin;
}

std::string TrialKey::to_string() const {
  std::string out = fmt::format("{}|{}|", runner_tag(runner), config_key);
  if (std::holds_alternative<Rejected>(what)) return out + "rejected";
  if (std::holds_alternative<Release>(what)) return out + "release";
  const Run& run = std::get<Run>(what);
  for (std::size_t i = 0; i < run.scenario_ids.size(); ++i) out += (i ? "+" : "") + run.scenario_ids[i];
  return out + fmt::format("|r{}", run.repeat);
}

namespace {

/// "r<N>" as Evaluator has always written a repeat ("r0", "r12"); nullopt for anything else ("r01", "r-1").
std::optional<int> parse_repeat_field(std::string_view field) {
  if (field.size() < 2 || field[0] != 'r' || (field[1] == '0' && field.size() > 2)) return std::nullopt;
  int n = 0;
  const char* end = field.data() + field.size();
  const auto [ptr, ec] = std::from_chars(field.data() + 1, end, n);
  if (ec != std::errc() || ptr != end || n < 0) return std::nullopt;
  return n;
}

}  // namespace

std::optional<TrialKey> TrialKey::parse(std::string_view text) {
  const std::size_t first = text.find('|');
  const std::size_t last = text.rfind('|');
  if (first == std::string_view::npos || last == first) return std::nullopt;
  const auto runner = runner_kind_from_tag(text.substr(0, first));
  if (!runner) return std::nullopt;
  TrialKey key;
  key.runner = *runner;
  const std::string_view field = text.substr(last + 1);
  std::size_t config_end = last;
  if (field == "rejected") {
    key.what = Rejected{};
  } else if (field == "release") {
    key.what = Release{};
  } else {
    const auto repeat = parse_repeat_field(field);
    config_end = text.rfind('|', last - 1);
    if (!repeat || config_end == first) return std::nullopt;
    Run run;
    run.repeat = *repeat;
    std::string_view ids = text.substr(config_end + 1, last - config_end - 1);
    while (!ids.empty()) {
      const std::size_t plus = ids.find('+');
      run.scenario_ids.emplace_back(ids.substr(0, plus));
      ids = plus == std::string_view::npos ? std::string_view() : ids.substr(plus + 1);
      if (plus != std::string_view::npos && ids.empty()) run.scenario_ids.emplace_back();  // "a+": "a", ""
    }
    key.what = std::move(run);
  }
  key.config_key = std::string(text.substr(first + 1, config_end - first - 1));
  return key;
}

}  // namespace servelab::tune
