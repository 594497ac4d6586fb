// The twin's top pick against its error band: a single winner, or "measure these" (tune/twin_verdict.h).
#include "tune/search/twin_verdict.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "servelab/tune/search/evaluations.h"
#include "servelab/tune/study/load_points.h"

namespace servelab::tune {

const char* twin_band_key(const std::string& metric) {
  if (metric.find("TTFT") != std::string::npos) return kBandTtftMetric;
  if (metric.find("TPOT") != std::string::npos) return kBandTpotMetric;
  if (metric.find("goodput under the SLOs") != std::string::npos) return kBandGoodputKey;
  return kBandTokSMetric;
}

TwinBand goodput_band(const SloResult& r) {
  TwinBand b;
  if (!r.goodput_band_pct || !(r.request_goodput_req_s > 0)) return b;
  b.pct = *r.goodput_band_pct;
  b.down_pct = (1 - r.goodput_low_req_s / r.request_goodput_req_s) * 100;
  b.up_pct = (r.goodput_high_req_s / r.request_goodput_req_s - 1) * 100;
  // A prediction on a kernel path the twin has no figure for: at least kUnmodelledBandPct either way, as
  // prediction_band floors it (new-user trial: "±100% (unmodelled path)" in the Summary beside "−56%/+27%"
  // for the same goodput in the SLO table).
  if (const auto it = r.metrics.find(kTwinUnmodelledMetric); it != r.metrics.end() && it->second > 0) {
    b.unmodelled_count = static_cast<int>(it->second);
    b.pct = std::max(*b.pct, kUnmodelledBandPct);
    b.down_pct = std::max(*b.down_pct, kUnmodelledBandPct);
    b.up_pct = std::max(*b.up_pct, kUnmodelledBandPct);
  }
  return b;
}

TwinBand prediction_band(const Evaluation& e, const char* band_key, double fallback_pct) {
  TwinBand b;
  if (std::string_view(band_key) == kBandGoodputKey) {
    if (e.slo) b = goodput_band(*e.slo);
    band_key = kBandTokSMetric;  // without a propagated band: the throughput band, as before issue 30 §2
  }
  const bool propagated = b.pct.has_value();
  const std::string prefix = kTwinUnmodelledPathPrefix;
  for (const auto& scenario : e.first) {
    for (const auto& [key, value] : scenario.second.metrics) {
      if (key == band_key && !propagated)
        b.pct = std::max(b.pct.value_or(0.0), value);
      else if (key == kTwinUnmodelledMetric)
        b.unmodelled_count = std::max(b.unmodelled_count, static_cast<int>(value));
      else if (key.rfind(prefix, 0) == 0 && value > 0) {
        const std::string name = key.substr(prefix.size());
        if (std::find(b.unmodelled.begin(), b.unmodelled.end(), name) == b.unmodelled.end())
          b.unmodelled.push_back(name);
      }
    }
  }
  b.unmodelled_count = std::max(b.unmodelled_count, static_cast<int>(b.unmodelled.size()));
  if (!b.pct && fallback_pct > 0) b.pct = fallback_pct;
  if (b.unmodelled_count > 0) {
    b.pct = std::max(b.pct.value_or(0.0), kUnmodelledBandPct);
    if (b.down_pct) b.down_pct = std::max(*b.down_pct, kUnmodelledBandPct);
    if (b.up_pct) b.up_pct = std::max(*b.up_pct, kUnmodelledBandPct);
  }
  return b;
}

std::string TwinBand::text() const {
  if (!pct) return "none (unknown)";
  if (down_pct && up_pct && std::abs(*down_pct - *up_pct) >= 0.5)
    return fmt::format("−{:.0f}%/+{:.0f}%", *down_pct, *up_pct);
  return fmt::format("±{:.0f}%", *pct);
}

bool advantage_inside_bands(double best, double best_band_pct, double other, double other_band_pct,
                            bool higher_is_better) {
  const double bb = best_band_pct / 100, bo = other_band_pct / 100;
  return higher_is_better ? best * (1 - bb) <= other * (1 + bo) : best * (1 + bb) >= other * (1 - bo);
}

namespace {

/// The evaluations of `o` that `keep` accepts, one per configuration: the search's (distinct_evaluations),
/// then those of `extra` (when given), then every configuration the grid check predicted; best first.
std::vector<const Evaluation*> predictions(const SearchOutcome& o,
                                           const std::function<bool(const Evaluation&)>& keep,
                                           const std::vector<Evaluation>* extra = nullptr) {
  std::vector<const Evaluation*> out =
      distinct_evaluations(o, EvaluationOrder::kRankingFirstThenChosen, keep);
  std::set<std::string> seen;
  for (const Evaluation* e : out) seen.insert(e->key);
  auto add = [&](const std::vector<Evaluation>& more) {
    for (const auto& e : more)
      if (keep(e) && seen.insert(e.key).second) out.push_back(&e);
  };
  if (extra) add(*extra);
  if (o.grid_check) add(o.grid_check->ranked);
  sort_best_first(out);
  return out;
}

/// Every feasible prediction of `o` on the objective, one per configuration, the top pick excluded: the
/// search's evaluations, then every configuration the grid check predicted (a trial user found two inside
/// the band, above some listed ones, left out of "Measure these"; the report lists the first few and counts
/// the rest).
std::vector<const Evaluation*> verdict_candidates(const SearchOutcome& o) {
  // A configuration passed over for breaking a bound or failing on another scenario is no candidate (its
  // objective-only evaluations still read feasible), unless it is the best itself (none held everywhere).
  std::set<std::string> broke;
  for (const auto& p : o.passed_over)
    if (p.key != o.best.key) broke.insert(p.key);
  return predictions(o, [&](const Evaluation& e) {
    return !e.key.empty() && e.key != o.best.key && !broke.count(e.key) && e.feasible && e.predicted &&
           e.objective.n > 0;
  });
}

/// Why `other` (band `ob`) ties with the top pick `best` (band `bb`), or "" when the top pick clears it.
std::string tie_reason(const Evaluation& best, const TwinBand& bb, const Evaluation& other,
                       const TwinBand& ob) {
  const double x = best.objective.mean, y = other.objective.mean;
  if (!bb.pct) return "the top pick has no error band: its advantage is unknown";
  if (!ob.pct)
    return "no error band (the twin gave none, search.twin_band_pct is not set): its gap is unknown";
  if (bb.low(x) > ob.high(y)) return "";  // advantage_inside_bands with each side's own width
  const double up = ob.up_pct.value_or(*ob.pct), down = bb.down_pct.value_or(*bb.pct);
  // The widths the rule used, to four significant digits (the band column rounds them to whole percent):
  // a reader redoing the products gets the printed ones (new-user trial: "3045.60 × (1 + 14%) = 3484.16"
  // with a band of 14.4%).
  std::string why =
      fmt::format("inside the bands: {:.2f} × (1 + {:.4g}%) = {:.2f} ≥ {:.2f} × (1 − {:.4g}%) = {:.2f}", y,
                  up, ob.high(y), x, down, bb.low(x));
  if (ob.unmodelled_count > 0) why += "; unmodelled kernel path: band at least ±100%";
  return why;
}

/// Whether `a` and `b` predicted the same on every scenario: the same scenarios, each with equal benchmark
/// figures (the console metrics; servelab's own keys aside). The twin is deterministic, so two launches
/// whose differences change nothing it models come out equal to the last digit.
bool same_prediction(const Evaluation& a, const Evaluation& b) {
  if (a.first.size() != b.first.size() || a.first.empty()) return false;
  auto figures = [](const ScenarioResult& r) {
    std::map<std::string, double> m;
    for (const auto& [k, v] : r.metrics)
      if (!k.starts_with("servelab:")) m.emplace(k, v);
    return m;
  };
  for (const auto& [id, ra] : a.first) {
    const auto it = b.first.find(id);
    if (it == b.first.end() || figures(ra) != figures(it->second)) return false;
  }
  return a.objective.mean == b.objective.mean;
}

/// The twin's band key of a [[constraints]] metric (by its console label): TTFT and TPOT/ITL their own,
/// throughputs the tok/s band; nullptr for what the twin gives no band of (request counts, E2EL, ...):
/// such a bound is taken as predicted (review: a successful_requests bound got the tok/s band).
const char* constraint_band_key(const std::string& metric) {
  if (metric.find("TTFT") != std::string::npos) return kBandTtftMetric;
  if (metric.find("TPOT") != std::string::npos || metric.find("ITL") != std::string::npos)
    return kBandTpotMetric;
  if (metric.find("throughput") != std::string::npos) return kBandTokSMetric;
  return nullptr;
}

/// How a prediction stands against the study's [[constraints]] once the twin's band of each bounded metric
/// (constraint_band_key) is taken into account; a bound without a band is taken as predicted.
struct ConstraintDoubt {
  bool broken = false;             ///< the prediction breaks some bound
  bool broken_outside = false;     ///< ... by more than its band (or one without a band): it does
  std::vector<std::string> texts;  ///< every bound the band reaches across, with the numbers
};

/// One side of a bound (`is_max`: value ≤ bound, else value ≥ bound) of metric `metric` on scenario `id`
/// against value `v` with band `b` (a fraction; 0 = none), added to `d`.
void judge_bound(ConstraintDoubt& d, const std::string& metric, const std::string& id, double v, double b,
                 double bound, bool is_max) {
  const double lo = v * (1 - b), hi = v * (1 + b);
  const bool breaks = is_max ? v > bound : v < bound;
  const bool crosses =
      b > 0 && (is_max ? (breaks ? lo <= bound : hi > bound) : (breaks ? hi >= bound : lo < bound));
  d.broken = d.broken || breaks;
  if (breaks && !crosses) d.broken_outside = true;
  if (!crosses) return;
  const char* rel = is_max ? "≤" : "≥";
  d.texts.push_back(
      breaks ? fmt::format("{} on {} = {:.2f} breaks {} {:g} on the prediction, inside its ±{:.4g}% "
                           "band: {:.2f} × (1 {} {:.4g}%) = {:.2f} {} {:g}",
                           metric, id, v, rel, bound, b * 100, v, is_max ? "−" : "+", b * 100,
                           is_max ? lo : hi, rel, bound)
             : fmt::format("{} on {} = {:.2f} meets {} {:g} on the prediction, but its ±{:.4g}% "
                           "band reaches past it: {:.2f} × (1 {} {:.4g}%) = {:.2f}",
                           metric, id, v, rel, bound, b * 100, v, is_max ? "+" : "−", b * 100,
                           is_max ? hi : lo));
}

ConstraintDoubt constraint_doubt(const Study& study, const Evaluation& e) {
  ConstraintDoubt d;
  for (const auto& c : study.constraints)
    for (const auto& [id, r] : e.first) {
      const auto it = r.metrics.find(c.metric);
      if (it == r.metrics.end()) continue;
      const char* key = constraint_band_key(c.metric);
      const auto band = key ? r.metrics.find(key) : r.metrics.end();
      const double b = band != r.metrics.end() && band->second > 0 ? band->second / 100 : 0;
      if (c.max) judge_bound(d, c.metric, id, it->second, b, *c.max, true);
      if (c.min) judge_bound(d, c.metric, id, it->second, b, *c.min, false);
    }
  return d;
}

/// Predictions left out as infeasible only by bounds their bands reach across, that could still be the
/// answer: their objective above the top pick's, or inside the bands (new-user trial: a configuration 0.5%
/// below the top pick, predicted P99 TTFT 5658 ms against 5000 with a ±43% band, was dropped from "Measure
/// these" as infeasible).
std::vector<TwinTie> ties_past_bounds(const Study& study, const SearchOutcome& o, const char* key,
                                      double fallback, const TwinBand& best_band) {
  const std::vector<const Evaluation*> evals = predictions(
      o,
      [&](const Evaluation& e) {
        return !e.key.empty() && e.key != o.best.key && !e.feasible && e.status == TrialStatus::kOk &&
               e.predicted && e.objective.n > 0;
      },
      &o.passed_over);
  std::vector<TwinTie> out;
  for (const Evaluation* e : evals) {
    const ConstraintDoubt d = constraint_doubt(study, *e);
    if (!d.broken || d.broken_outside || d.texts.empty()) continue;
    TwinBand band = prediction_band(*e, key, fallback);
    std::string why = e->objective.mean >= o.best.objective.mean
                          ? fmt::format("{:.2f} is at or above the top pick's {:.2f}", e->objective.mean,
                                        o.best.objective.mean)
                          : tie_reason(o.best, best_band, *e, band);
    if (why.empty()) continue;
    out.push_back({e, std::move(band), fmt::format("{}; {}", fmt::join(d.texts, "; "), why)});
  }
  return out;
}

}  // namespace

TwinVerdict twin_verdict(const Study& study, const SearchOutcome& o) {
  TwinVerdict v;
  if (!o.best.feasible || !o.best.predicted || o.best.objective.n == 0) return v;
  const char* key = twin_band_key(primary_objective_label(study));
  const double fallback = study.search.twin_band_pct;
  const TwinBand best_band = prediction_band(o.best, key, fallback);
  v.kind = TwinVerdict::Kind::kClear;
  std::vector<TwinTie> ties;
  const std::vector<const Evaluation*> feasible = verdict_candidates(o);
  for (const Evaluation* e : feasible) {
    TwinBand band = prediction_band(*e, key, fallback);
    std::string why = tie_reason(o.best, best_band, *e, band);
    if (why.empty()) continue;
    ties.push_back({e, std::move(band), std::move(why)});
  }
  // Bounds against the band: not when no configuration holds on every scenario (the best breaks a bound on
  // another: the report says there is no answer, and a doubt on its objective's scenarios means nothing).
  ConstraintDoubt top_doubt;
  if (!none_passed_over_holds(o)) {
    for (auto& t : ties_past_bounds(study, o, key, fallback, best_band)) {
      v.any_bound_doubt = true;
      ties.push_back(std::move(t));
    }
    // The top pick meets a bound only on the prediction, its band reaching past it: not a winner, and the
    // best configuration after it stays in the set in case it breaks the bound.
    top_doubt = constraint_doubt(study, o.best);
    v.top_bound_doubts = top_doubt.texts;
    if (!top_doubt.texts.empty() && !feasible.empty() &&
        std::none_of(ties.begin(), ties.end(),
                     [&](const TwinTie& t) { return t.eval == feasible.front(); })) {
      v.any_bound_doubt = true;
      ties.insert(ties.begin(), {feasible.front(), prediction_band(*feasible.front(), key, fallback),
                                 "the best after the top pick, should the top pick break its bound"});
    }
  }
  if (ties.empty()) return v;
  std::stable_sort(ties.begin(), ties.end(), [](const TwinTie& a, const TwinTie& b) {
    return a.eval->objective.mean > b.eval->objective.mean;
  });
  for (const auto& t : ties) {
    v.any_unknown = v.any_unknown || !t.band.pct;
    v.any_unmodelled = v.any_unmodelled || t.band.unmodelled_count > 0;
  }
  v.kind = TwinVerdict::Kind::kTie;
  std::string top = "the twin's top pick";
  if (!best_band.pct)
    top += " (no error band: unknown, not certain)";
  else if (best_band.unmodelled_count > 0)
    top += " (unmodelled kernel path: band at least ±100%)";
  if (!top_doubt.texts.empty()) top += fmt::format("; {}", fmt::join(top_doubt.texts, "; "));
  v.any_unknown = v.any_unknown || !best_band.pct;
  v.any_unmodelled = v.any_unmodelled || best_band.unmodelled_count > 0;
  v.measure.push_back({&o.best, best_band, top, {}});
  for (auto& t : ties) {
    // A launch whose prediction equals an earlier one's on the scenarios both were predicted on (a knob that
    // changes nothing the twin models there: a running-request cap above the prompts sent) is said to be so,
    // naming them; it stays in the set, since a real engine may still tell them apart.
    for (std::size_t i = 0; i < v.measure.size(); ++i)
      if (same_prediction(*t.eval, *v.measure[i].eval)) {
        std::vector<std::string> on;
        for (const auto& [id, r] : t.eval->first) on.push_back(id);
        t.why = fmt::format(
            "the same prediction as #{} ({}) on {}: the twin models no effect of what differs there", i + 1,
            v.measure[i].eval->label,
            on.size() == study.scenarios.size() ? std::string("every scenario")
                                                : fmt::format("{}", fmt::join(on, ", ")));
        break;
      }
    // The search scores a configuration on the objective's scenarios; only the best and the baselines run
    // the others (new-user trial: a context_length of 8,192 in the set, "the same prediction as #1 on every
    // scenario", fails every request of the study's 32,000-token scenario). Say what it was not predicted on.
    for (const auto& sc : study.scenarios)
      if (!t.eval->first.count(sc.id) && !t.eval->scenario_failure.count(sc.id)) t.unseen.push_back(sc.id);
    v.measure.push_back(std::move(t));
  }
  return v;
}

/// Numbers as "#n" with runs of three or more as ranges: "#2–#42, #44–#214", "#2, #3" (`numbers` ascending).
static std::string number_runs(const std::vector<std::size_t>& numbers) {
  std::string out;
  for (std::size_t i = 0; i < numbers.size();) {
    std::size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    if (j < i + 2) j = i;  // two in a row stay a list: "#2, #3"
    out += fmt::format("{}#{}", out.empty() ? "" : ", ", numbers[i]);
    if (j > i) out += fmt::format("–#{}", numbers[j]);
    i = j + 1;
  }
  return out;
}

std::string TwinVerdict::unseen_text() const {
  std::map<std::string, std::vector<std::size_t>> by;  // scenarios -> the set's numbers (#2 = 2)
  for (std::size_t i = 0; i < measure.size(); ++i)
    if (!measure[i].unseen.empty())
      by[fmt::format("{}", fmt::join(measure[i].unseen, ", "))].push_back(i + 1);
  std::string out;
  for (const auto& [scenarios, which] : by)
    out += fmt::format("{}{}{} {} not predicted on {}", out.empty() ? "" : "; ", number_runs(which),
                       which.size() > 3 ? fmt::format(" ({} configurations)", which.size()) : "",
                       which.size() == 1 ? "was" : "were", scenarios);
  if (out.empty()) return out;
  return "Not checked everywhere: " + out +
         " (the search predicts a configuration on the objective's scenarios; only the top pick and the "
         "baselines run every scenario): a launch there may fail or rank otherwise, so measure it there too.";
}

std::string TwinVerdict::safest_text() const {
  if (measure.size() < 2) return "";
  for (const auto& t : measure)
    if (!t.band.pct) return "";
  std::size_t best = 0;
  for (std::size_t i = 1; i < measure.size(); ++i)
    if (measure[i].band.low(measure[i].eval->objective.mean) >
        measure[best].band.low(measure[best].eval->objective.mean))
      best = i;
  if (best == 0) return "";
  const TwinTie& t = measure[best];
  const double y = t.eval->objective.mean;
  return fmt::format(
      "Highest low end: #{} ({} {}) at least {:.2f} ({:.2f} × (1 − {:.4g}%)); the top pick's band reaches "
      "down "
      "to {:.2f}.",
      best + 1, t.eval->config.engine, t.eval->label, t.band.low(y), y, t.band.down_pct.value_or(*t.band.pct),
      measure[0].band.low(measure[0].eval->objective.mean));
}

}  // namespace servelab::tune
