// summary.json (study_report.h): the study's answer in one small JSON object, named by its objective.
#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <set>

#include "servelab/tune/load/load.h"
#include "servelab/tune/search/evaluations.h"
#include "tune/report/study_report.h"
#include "tune/search/twin_verdict.h"

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
nlohmann::json summary_config(const Evaluation& e, const std::string& label) {
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
  // A run that completed but broke a [[constraints]] bound is infeasible, not a failure of its status "ok".
  if (!e.feasible) j["failure"] = failure_decision_text(e);
  j["band"] = nullptr;  // a prediction's error band (twin_verdict.h), in the objective's unit
  if (valued && e.predicted)
    if (const TwinBand b = prediction_band(e, twin_band_key(label), 0); b.pct)
      j["band"] = {{"low", b.low(e.objective.mean)}, {"high", b.high(e.objective.mean)}, {"text", b.text()}};
  return j;
}

/// The verdict on the study's top pick: "incomplete" (the study stopped before its search finished, e.g.
/// Ctrl-C, whatever its trials so far did: the best so far is no verdict; `--resume` finishes it), "none" (a
/// finished search where no configuration succeeded and met every bound on every scenario — the best on the
/// objective's scenarios included, when it broke a bound on another: no recommendation), else the twin's:
/// "measured" (the best is measured), "winner" (clear of every band) or "measure_these" with the
/// configurations it cannot tell apart.
nlohmann::json summary_verdict(const Study& s, const SearchOutcome& o) {
  const TwinVerdict v = twin_verdict(s, o);
  nlohmann::json j;
  j["kind"] = !o.complete                                     ? "incomplete"
              : !o.best.feasible || none_passed_over_holds(o) ? "none"
              : v.kind == TwinVerdict::Kind::kTie             ? "measure_these"
              : v.kind == TwinVerdict::Kind::kClear           ? "winner"
                                                              : "measured";
  nlohmann::json set = nlohmann::json::array();
  for (const TwinTie& t : v.measure)
    set.push_back({{"engine", t.eval->config.engine}, {"config", t.eval->label}, {"why", t.why}});
  j["measure_these"] = std::move(set);
  j["bound_doubts"] = v.top_bound_doubts;  // bounds the top pick meets only inside the twin's band
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
  j["best"] = summary_config(o.best, label);
  // The best on the objective's scenarios that breaks a bound on another is no answer: infeasible there,
  // with why, its objective value kept (new-user trial: "feasible": true and verdict "winner" beside a
  // report.md saying no configuration meets every bound).
  if (none_passed_over_holds(o)) {
    j["best"]["feasible"] = false;
    j["best"]["failure"] = failure_decision_text(o.passed_over.front());
  }
  j["recommended"] = summary_config(o.recommended_eval, label);
  j["verdict"] = summary_verdict(s, o);
  j["recommended"]["command"] = o.recommended_command.shell();
  // Ranked above the best on the objective's scenarios, but broke a [[constraints]] bound or failed on
  // another scenario (SearchOutcome::passed_over); when the first is the best itself, none tried holds.
  nlohmann::json passed = nlohmann::json::array();
  for (const Evaluation& e : o.passed_over) passed.push_back(summary_config(e, label));
  j["passed_over"] = std::move(passed);
  if (load_primary && !o.load.objectives.empty()) {  // the load objective of every analysed configuration
    nlohmann::json rows = nlohmann::json::array();
    for (const ObjectiveValue& v : o.load.objectives.front().values)
      rows.push_back({{"engine", v.engine},
                      {"config", v.label},
                      {"value", v.feasible ? nlohmann::json(v.value) : nlohmann::json(nullptr)},
                      {"at", v.at},
                      {"why", v.why}});
    // Configurations that never reached the load analysis (refused, out of memory, ...): their failure.
    std::set<std::string> listed;
    for (const ObjectiveValue& v : o.load.objectives.front().values) listed.insert(v.config_key);
    for (const Evaluation& e : o.ranked)
      if (!e.key.empty() && !e.feasible && listed.insert(e.key).second)
        rows.push_back({{"engine", e.config.engine},
                        {"config", e.label},
                        {"value", nullptr},
                        {"at", ""},
                        {"why", fmt::format("{}: {}", trial_status_name(e.status), e.reason)}});
    j["per_configuration"] = std::move(rows);
  }
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace servelab::tune
