// servelab/tune: the load dimension. A load point of a scenario is a scenario of its own
// (study/load_points.h: its id, its args). On top: the load curve of a configuration, the SLO
// search (bracket, then interpolate, as `vllm bench sweep serve_sla`, on steady runs, then the goodput peak),
// the Pareto front, cost per 1M tokens, and the objectives of [[objectives]].
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "servelab/tune/search/search.h"
#include "servelab/tune/study/load_points.h"

namespace servelab::tune {

/// Measures `config` at every load point of `scenario`: one evaluate of them all, so the points without a
/// cached result run as one trial (one engine launch on --target local). A failed point has its status and
/// reason and no metrics.
LoadCurve measure_curve(const Study& study, Evaluator& evaluator, const CandidateConfig& config,
                        const std::string& scenario);

/// The SLO search of `config` on [slo].scenario (docs/study.md, "Goodput" and "The search"): the highest
/// [slo].variable value whose steady run (SloProbe::steady: long enough for its load, not saturated) meets
/// every [slo] target, then the load that served the most goodput. Start at [slo].start (else the guide's
/// answer: evaluator.load_guide(), the twin on --target local; else 1); ×2 (1.25 first from the twin) while
/// runs pass, ÷2 while they fail; then the root of the SLO margins' chord (Illinois rule) kept inside
/// [lo·(1+tol), hi/(1+tol)], until max failing / max passing ≤ 1 + tolerance (concurrency: hi − lo ≤ 1);
/// then, while a lower load served more goodput, halve the wider gap around it to the tolerance. Runs planned
/// or rerun with more prompts get `<scenario>@<tag>n<prompts>` ids. At most [slo].max_runs runs. A run
/// without a verdict (trial_status_judges_config false) stops the search with nothing found and `note` naming
/// it. On the twin (evaluator.predicts()), a goodput found gets its band propagated from the prediction's
/// TTFT and TPOT bands (SloResult::goodput_band_pct: two more searches, trials of phase "slo-band", not
/// stored), recorded with evaluator.record_goodput_band (the store's goodput_bands); a replaying evaluator
/// (`servelab report`) cannot run them and takes the recorded band instead, when its goodput is the same.
/// Either way the band is then widened to at least the prediction's throughput band at that load.
SloResult slo_search(const Study& study, Evaluator& evaluator, const CandidateConfig& config);

/// The goodput of an SLO search (issue 30): over `r.probes` that passed, are steady (SloProbe::steady) and
/// have metrics in `metrics_at` (load → metrics), the one with the highest SloProbe::goodput_req_s (the first
/// tried on a tie) sets goodput_found, goodput_at, request_goodput_req_s, token_goodput_tok_s and metrics.
/// None: those stay false / 0 / empty, and when only unsteady runs passed `note` says so. The highest passing
/// load (max_passing) is not changed.
void choose_goodput_point(SloResult& r, const std::map<double, std::map<std::string, double>>& metrics_at);

/// Flags of the points on the Pareto front when both coordinates are maximised: a point is on the front
/// when no other point is ≥ on both and > on one. Equal points are both on it.
std::vector<bool> pareto_front_max(const std::vector<std::pair<double, double>>& points);

/// $ per 10⁶ tokens: usd_per_gpu_hour × gpus / 3600 / tok_s × 10⁶. 0 when tok_s ≤ 0.
double usd_per_million_tokens(double usd_per_gpu_hour, int gpus, double tok_s);

/// The search's hook (Evaluator::evaluate): when load_objective_is_primary, replaces `evaluation.objective`
/// with the primary objective of its config (SLO goodput or tok/s per GPU at the per-user floor, from its
/// own load runs), or makes it infeasible with the reason. Does nothing for a load-point evaluation.
void apply_primary_objective(const Study& study, Evaluator& evaluator, Evaluation& evaluation,
                             const std::vector<std::string>& scenario_ids);

/// Whether the study has a load analysis after its search (analyze_load): a load sweep ([load] or a
/// scenario's own non-empty `load`), an SLO search or [[objectives]]. Its runs are outside the search's plan.
bool has_load_analysis(const Study& study);

/// The load analysis after the search: curves (and SLO searches) of the engine baselines, the best and
/// recommended configs and the top of the ranking (at most 8 configs), the Pareto front, the objectives and
/// the cost, into `outcome.load`. Nothing for a study without [load], [slo] and [[objectives]]. Throws
/// Interrupted when stopped.
void analyze_load(const Study& study, Evaluator& target, SearchOutcome& outcome);

}  // namespace servelab::tune
