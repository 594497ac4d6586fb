// servelab/tune (private): what the load curves (load.cc) and the SLO search (slo_search.cc) share.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "servelab/tune/load/load.h"

namespace servelab::tune {

/// Rounds a searched value to what a run can take: an integer concurrency (≥ 1), a rate to 4 significant
/// digits (stable trial keys on --resume).
double round_value(LoadKind kind, double x);

/// The metrics of scenario `id` of the config with key `key`, one map per repeat that has a result: per
/// repeat the latest result the evaluator holds (whichever trial produced it), in repeat order.
std::vector<std::map<std::string, double>> repeat_metrics(const Study& study, const Evaluator& evaluator,
                                                          const std::string& key, const std::string& id);

/// Mean over repeats of every metric of scenario `id` of the evaluation's config: per repeat the latest
/// result the evaluator holds (as Evaluator::evaluate finds it, whichever trial produced it). Empty when the
/// evaluator holds none.
std::map<std::string, double> mean_metrics(const Study& study, const Evaluator& evaluator,
                                           const Evaluation& e, const std::string& id);

}  // namespace servelab::tune
