// summary.json (study_report.h): the study's answer in one small JSON object, named by its objective.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "servelab/tune/load.h"
#include "tune/study_report.h"

namespace servelab::tune {

namespace {

/// The unit of an objective label: the text in its last parentheses ("req/s" of "Request goodput under the
/// SLOs (req/s)"), "" when it has none.
std::string label_unit(const std::string& label) {
  const size_t close = label.rfind(')'), open = label.rfind('(');
  if (close != label.size() - 1 || open == std::string::npos) return "";
  return label.substr(open + 1, close - open - 1);
}

/// One configuration's objective value: null when it has none (failed, infeasible), its 95% CI only when
/// measured at least twice.
nlohmann::json summary_config(const Evaluation& e) {
  nlohmann::json j = {{"engine", e.config.engine},
                      {"config", e.label},
                      {"command", e.shell},
                      {"feasible", e.feasible},
                      {"predicted", e.predicted}};
  const bool valued = e.feasible && e.objective.n > 0;
  j["value"] = valued ? nlohmann::json(e.objective.mean) : nlohmann::json(nullptr);
  j["runs"] = e.objective.n;
  j["ci95_half"] = valued && !e.predicted && e.objective.n >= 2 ? nlohmann::json(e.objective.ci95_half)
                                                                : nlohmann::json(nullptr);
  if (!e.feasible) j["failure"] = fmt::format("{}: {}", trial_status_name(e.status), e.reason);
  return j;
}

}  // namespace

std::string summary_json(const ReportInput& in) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  const std::string label = primary_objective_label(s);
  const bool load_primary = load_objective_is_primary(s);
  nlohmann::json j = {{"study", s.name}, {"target", target_name(s.target)}, {"complete", o.complete}};
  j["objective"] = {{"name", label},
                    {"unit", label_unit(label)},
                    {"scenario", load_primary ? o.load.scenario : s.objective.scenarios.front()}};
  j["best"] = summary_config(o.best);
  j["recommended"] = summary_config(o.recommended_eval);
  j["recommended"]["command"] = o.recommended_command.shell();
  if (load_primary && !o.load.objectives.empty()) {  // the load objective of every analysed configuration
    nlohmann::json rows = nlohmann::json::array();
    for (const ObjectiveValue& v : o.load.objectives.front().values)
      rows.push_back({{"engine", v.engine},
                      {"config", v.label},
                      {"value", v.feasible ? nlohmann::json(v.value) : nlohmann::json(nullptr)},
                      {"at", v.at},
                      {"why", v.why}});
    j["per_configuration"] = std::move(rows);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace servelab::tune
