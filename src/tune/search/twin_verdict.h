// servelab/tune (private): whether the twin's top pick is a winner or a tie to measure (issue 29 §4). A
// prediction carries the twin's leave-one-study-out error band; when the top pick's advantage over another
// configuration lies inside the two bands, the twin cannot tell them apart and the report says "measure
// these" instead of naming a winner. Used by the report (study_report.cc, study_html.cc) and by twin-guided
// search (one band rule for both).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "servelab/sim/uncertainty.h"
#include "servelab/tune/search/search.h"
#include "servelab/tune/study/study.h"

namespace servelab::tune {

/// Least ± band (percent) of a prediction on a kernel path the twin has no figure for
/// (kTwinUnmodelledMetric > 0, engines::ResolvedLaunch::unmodelled): the prediction is the physics at its
/// class's parameters, and the corpus runs of such paths measured 4–20× off it, so its value may be off by
/// all of itself: lower bound 0, upper bound twice the prediction. Such a configuration is never ranked
/// first on its prediction alone.
inline constexpr double kUnmodelledBandPct = sim::kUnmodelledBandMinPct;

/// The band the rule uses for one prediction.
struct TwinBand {
  /// ± percent the rule uses; nullopt = unknown (the twin gave none and search.twin_band_pct is not set).
  std::optional<double> pct;
  /// Names of the launch's kernel paths without a figure (kTwinUnmodelledPathPrefix keys); when
  /// `unmodelled_count` > 0, `pct` is at least kUnmodelledBandPct.
  std::vector<std::string> unmodelled;
  int unmodelled_count = 0;  ///< kTwinUnmodelledMetric (paths without a figure; names may be fewer)
  /// An asymmetric band's sides, − and + percent of the prediction (the goodput's: SloResult's low and high
  /// ends); nullopt = `pct` both ways. `pct` is then the larger side.
  std::optional<double> down_pct, up_pct;

  /// The low and high ends of `value` (in its unit) under the band; `pct` must be set.
  double low(double value) const { return value * (1 - down_pct.value_or(*pct) / 100); }
  double high(double value) const { return value * (1 + up_pct.value_or(*pct) / 100); }
  /// "±20%", or "−32%/+77%" for an asymmetric band; "none (unknown)" without one.
  std::string text() const;
};

/// The band metric key of an objective labelled `metric`: a TTFT metric → kBandTtftMetric, a TPOT metric →
/// kBandTpotMetric, the SLO goodput objective → kBandGoodputKey, anything else (throughput, tokens per GPU)
/// → kBandTokSMetric.
const char* twin_band_key(const std::string& metric);

/// The twin's band on a goodput its SLO search propagated (SloResult::goodput_band_pct, low and high ends as
/// the two sides); `pct` unset when the search has none (measured, or no latency band).
TwinBand goodput_band(const SloResult& result);

/// The band of prediction `e`: for kBandGoodputKey the goodput band its SLO search propagated
/// (Evaluation::slo, SloResult::goodput_band_pct), else the largest kBandTokSMetric; for other keys the
/// largest `band_key` metric over the scenarios of e.first; else
/// `fallback_pct` when > 0 (search.twin_band_pct), else unknown; widened to at least kUnmodelledBandPct
/// (and then known) when some scenario ran on an unmodelled kernel path.
TwinBand prediction_band(const Evaluation& e, const char* band_key, double fallback_pct);

/// Is the top pick's advantage over `other` inside their bands (values in the objective's unit, bands in
/// ± percent, ≥ 0)? The rule: the two intervals value × (1 ± band) overlap. Higher is better (throughput,
/// goodput: what tune maximises): best × (1 − b_best) ≤ other × (1 + b_other), i.e. the top pick's low end
/// does not clear the other's high end. Lower is better (TTFT, TPOT): best × (1 + b_best) ≥ other × (1 −
/// b_other). Touching intervals count as inside. An other that is predicted better than `best` is inside.
bool advantage_inside_bands(double best, double best_band_pct, double other, double other_band_pct,
                            bool higher_is_better);

/// One configuration in the set the twin cannot tell apart.
struct TwinTie {
  const Evaluation* eval = nullptr;  ///< into the SearchOutcome the verdict was made from
  TwinBand band;
  /// Why it is in the set, with the numbers: "the twin's top pick", "inside the bands: 135.00 × (1 + 10%) =
  /// 148.50 ≥ 148.50 × (1 − 10%) = 133.65", "no error band: its advantage is unknown", "the same
  /// prediction as #1 (...) on s1: ..." (equal figures on the scenarios both were predicted on), ...
  std::string why;
  /// The study's scenarios it was not predicted on (the search scores the objective's scenarios; only the
  /// top pick and the baselines run every one): a launch there may fail or rank otherwise.
  std::vector<std::string> unseen;
};

/// The verdict on the twin's top pick (SearchOutcome::best) against every other feasible prediction of the
/// search (ranked, baselines, greedy steps, each engine's best, the grid check's best, the recommended and
/// alternative commands; one per configuration), and against the [[constraints]] where the twin's band of a
/// bounded metric reaches across its bound: a configuration that breaks bounds only inside their bands is a
/// candidate too, and a top pick that meets one only inside its band is not a clear winner.
struct TwinVerdict {
  enum class Kind {
    kNotPredicted,  ///< the best is measured, or nothing succeeded: the rule does not apply
    kClear,         ///< the top pick's advantage clears every other prediction's band: a single winner
    kTie,           ///< some advantage is inside the bands or unknown: "measure these"
  };
  Kind kind = Kind::kNotPredicted;
  /// kTie: the top pick first, then every configuration it cannot be told apart from on the objective, or
  /// that breaks bounds only inside their bands, or the best after a top pick with a doubtful bound; highest
  /// prediction first. Empty otherwise.
  std::vector<TwinTie> measure;
  bool any_unknown = false;     ///< some prediction in `measure` has no band
  bool any_unmodelled = false;  ///< some prediction in `measure` runs on an unmodelled kernel path
  /// Each [[constraints]] bound the top pick meets on the prediction while the twin's band of that metric
  /// reaches past it, with the numbers (none when no configuration holds on every scenario).
  std::vector<std::string> top_bound_doubts;
  /// `measure` holds a configuration for a bound rather than for its objective: one that breaks bounds only
  /// inside their bands, or the best after a top pick with a doubtful bound.
  bool any_bound_doubt = false;
  /// "Not checked everywhere: #2, #3 were not predicted on s2 (...): ... measure it there too." from each
  /// TwinTie::unseen; empty when every member was predicted on every scenario.
  std::string unseen_text() const;
  /// "Highest low end: #3 (vllm tp1-dp8-ep8) at least 23150.00 (26550.00 × (1 − 13%)); the top pick's band
  /// reaches down to 237.93." when a member other than the top pick has the highest low end (prediction ×
  /// (1 − band)) and every member has a band; empty otherwise. What the set guarantees at worst, beside the
  /// top pick's best case (new-user trial: the provisional command went to a ±99% pick over a ±13% one
  /// 5% below it).
  std::string safest_text() const;
};

/// Applies the rule to `outcome` (maximising Evaluation::objective, as the search does; the band of the
/// objective's metric by twin_band_key, search.twin_band_pct as the fallback). The top pick with an unknown
/// band ties with every other prediction; another prediction with an unknown band ties with the top pick.
/// Pointers in the result point into `outcome`, which must outlive it.
TwinVerdict twin_verdict(const Study& study, const SearchOutcome& outcome);

}  // namespace servelab::tune
