// servelab/tune: the load points of a study as scenarios. A load point of a scenario is a scenario of its
// own, id "<scenario>@<tag>" ("sharegpt-1000@c16", "sharegpt-1000@r2.5"), whose bench args are the
// scenario's with `--max-concurrency N` or `--request-rate R` set; so trial keys, the results cache, --resume
// and the database carry the load point without a schema change. Also the names of the SLO targets and of
// the primary objective. Pure functions of the study file; the runs at those points are load/load.h's.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// "<scenario>@<tag>" for a load point of `scenario`.
std::string load_scenario_id(const std::string& scenario, const LoadPoint& load);

/// Splits "<scenario>@<tag>" into the scenario id and its load point; nullopt for an id without a load tag
/// (or a malformed tag).
std::optional<std::pair<std::string, LoadPoint>> split_load_scenario_id(const std::string& id);

/// The scenario behind `id`: a study scenario, or a load point of one. A load point's args are the
/// scenario's without --max-concurrency / --request-rate, plus the load flag, plus `--goodput` pairs from
/// [slo] (ttft/tpot/e2el targets; the strictest per metric) unless the scenario or [objective] sets SLOs.
/// Throws std::out_of_range for an unknown scenario.
Scenario load_scenario(const Study& study, const std::string& id);

/// Load points swept on `scenario`: its own `load`, else [load].
std::vector<LoadPoint> load_points(const Study& study, const Scenario& scenario);

/// The scenario of the load analysis: [slo].scenario if set, else the first objective scenario.
std::string load_analysis_scenario(const Study& study);

/// Does the primary objective ([[objectives]][0]) need the load analysis per configuration (slo_goodput,
/// tokens_per_gpu)? Then the search compares configurations on it (apply_primary_objective).
bool load_objective_is_primary(const Study& study);

/// The name of what Evaluation::objective holds: [objective].metric, or the primary [[objectives]] entry when
/// it is a load objective ("Request goodput under the SLOs (req/s)", "Output tok/s per GPU at ≥ 30 tok/s per
/// user"). Per-scenario values (Evaluation::per_scenario) stay [objective].metric.
std::string primary_objective_label(const Study& study);

/// An SLO target's statistic and metric without the unit ("P99 TTFT" of "P99 TTFT (ms)").
std::string slo_target_name(const SloTarget& target);

/// An SLO target as people write it: its statistic and metric with the unit once ("P99 TTFT ≤ 2000 ms").
std::string slo_target_text(const SloTarget& target);

}  // namespace servelab::tune
