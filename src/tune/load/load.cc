// Load curves: a configuration measured at every load point of a scenario (see load.h).
#include "servelab/tune/load/load.h"

#include "tune/load/load_detail.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace servelab::tune {

double round_value(LoadKind kind, double x) {
  if (kind == LoadKind::kConcurrency) return std::max(1.0, std::round(x));
  return std::stod(fmt::format("{:.4g}", x));
}

std::vector<std::map<std::string, double>> repeat_metrics(const Study& study, const Evaluator& evaluator,
                                                          const std::string& key, const std::string& id) {
  std::vector<std::map<std::string, double>> out;
  for (int rep = 0; rep < study.repeats; ++rep) {
    const TrialRecord* record = evaluator.find(key, id, rep);
    if (!record) continue;
    const ScenarioResult* found = nullptr;
    for (const auto& sc : record->outcome.scenarios)
      if (sc.scenario_id == id) found = &sc;
    if (found) out.push_back(found->metrics);
  }
  return out;
}

std::map<std::string, double> mean_metrics(const Study& study, const Evaluator& evaluator,
                                           const Evaluation& e, const std::string& id) {
  std::map<std::string, std::pair<double, int>> acc;
  for (const auto& m : repeat_metrics(study, evaluator, e.key, id))
    for (const auto& [k, v] : m) acc[k].first += v, acc[k].second += 1;
  std::map<std::string, double> out;
  for (const auto& [k, s] : acc) out[k] = s.first / s.second;
  return out;
}

LoadCurve measure_curve(const Study& study, Evaluator& evaluator, const CandidateConfig& config,
                        const std::string& scenario) {
  LoadCurve curve;
  curve.engine = config.engine;
  curve.config_key = config_key(study, normalize(study, config));
  curve.label = config_label(study, normalize(study, config));
  curve.scenario = scenario;
  const std::vector<LoadPoint> points = load_points(study, study.scenario(scenario));
  if (points.empty()) return curve;
  std::vector<std::string> ids;
  for (const LoadPoint& lp : points) ids.push_back(load_scenario_id(scenario, lp));
  // One evaluation of every point: the points a cache lacks run as one trial (one engine launch).
  const Evaluation e = evaluator.evaluate(config, ids, "load");
  for (size_t i = 0; i < points.size(); ++i) {
    LoadPointResult p;
    p.load = points[i];
    p.scenario_id = ids[i];
    p.predicted = e.predicted;
    const LoadPoint& lp = p.load;
    if (auto f = e.scenario_failure.find(p.scenario_id); f != e.scenario_failure.end()) {
      p.status = e.status == TrialStatus::kOk ? TrialStatus::kError : e.status;
      p.reason = f->second;
    } else if (p.metrics = mean_metrics(study, evaluator, e, p.scenario_id); p.metrics.empty()) {
      p.status =
          e.status == TrialStatus::kOk ? TrialStatus::kError : e.status;  // e.g. rejected before launch
      p.reason = e.reason.empty() ? "no result" : e.reason;
    } else {
      const double out = p.metrics.count("Output token throughput (tok/s)")
                             ? p.metrics.at("Output token throughput (tok/s)")
                             : 0;
      p.output_tok_s_per_gpu = out / study.hardware.gpu_count;
      if (lp.kind == LoadKind::kConcurrency) p.output_tok_s_per_user = out / lp.value;
    }
    curve.points.push_back(std::move(p));
  }
  return curve;
}

}  // namespace servelab::tune
