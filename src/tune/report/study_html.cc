// The self-contained HTML report (report.html, beside report.md): a summary first (the recommended
// command(s) with a copy button, the objective value with its CI or twin error band, the gain chain, the
// generalization table), then charts with labelled axes (throughput per trial with every failure marked by
// its class, TTFT/TPOT distributions of baseline vs recommended, objective vs TPOT with the recommended
// point; for studies with [load] / [slo]: throughput, TTFT and TPOT p50/p99 against load per configuration
// and the output tok/s per GPU vs per user plane with its Pareto front and the recommended point), a
// sortable table of every trial, and the full Markdown report with its raw bench blocks folded.
// Works offline: Chart.js is inlined (scripts/deps.sh CHARTJS_VERSION), no network URL.
//
// To add a chart: build an html::LineChart / ScatterChart / BarChart in charts_section() and append
// `charts.add(c)` (html_charts.h shows the few lines it takes).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>
#include <tuple>

#include "servelab/common/redact.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/search/evaluations.h"
#include "servelab/tune/store/tally.h"
#include "tune/report/html_charts.h"
#include "tune/report/html_markdown.h"
#include "tune/report/study_report.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {

namespace {

using html::esc;

std::string num(double v) {
  return std::isfinite(v) ? fmt::format("{:.2f}", v) : "—";
}

/// What the twin's band on an objective labelled `metric` is the band of ("total tok/s", "mean TTFT", ...).
std::string band_subject(const Evaluation& e, const char* key, const TwinBand& band) {
  std::string what = "total tok/s";
  if (key == kBandTtftMetric) what = "mean TTFT";
  if (key == kBandTpotMetric) what = "mean TPOT";
  if (key == kBandGoodputKey && e.slo && e.slo->goodput_band_pct)
    what = "request goodput, propagated from its TTFT and TPOT bands";
  if (band.unmodelled_count > 0) what += ", at least ±100% on an unmodelled kernel path";
  return what;
}

/// "7610.35 ± 2283 (±30%: the twin's error band of total tok/s, ...)", "3.20 (2.19 to 5.67, −32%/+77%: ...)",
/// "812.40 ± 3.10 (95% CI, 3 runs)", ... The band is the report's one rule (twin_band_key, prediction_band).
std::string value_text(const Evaluation& e, const std::string& metric) {
  if (!e.feasible || e.objective.n == 0) return "—";
  const Estimate& x = e.objective;
  if (e.predicted) {
    const char* key = twin_band_key(metric);
    const TwinBand band = prediction_band(e, key, 0);
    if (!band.pct)
      return fmt::format("{:.2f} (predicted; the twin gave no error band for this launch)", x.mean);
    const std::string subject = band_subject(e, key, band);
    if (band.down_pct && band.up_pct)
      return fmt::format("{:.2f} ({:.2f} to {:.2f}, {}: the twin's error band of {}, leave-one-study-out)",
                         x.mean, band.low(x.mean), band.high(x.mean), band.text(), subject);
    return fmt::format("{:.2f} ± {:.0f} ({}: the twin's error band of {}, leave-one-study-out)", x.mean,
                       x.mean * *band.pct / 100, band.text(), subject);
  }
  if (x.n >= 2) return fmt::format("{:.2f} ± {:.2f} (95% CI, Student t, {} runs)", x.mean, x.ci95_half, x.n);
  return fmt::format("{:.2f} (one run: no confidence interval; repeats ≥ 2 give one)", x.mean);
}

std::string est_cell(const Estimate& e, bool predicted) {
  if (e.n == 0) return "—";
  if (e.n >= 2 && !predicted) return fmt::format("{:.2f} ± {:.2f}", e.mean, e.ci95_half);
  return num(e.mean);
}

void command_card(std::ostringstream& h, const std::string& id, const std::string& title,
                  const std::string& shell, const std::string& value_line) {
  h << "<div class=\"cmd\"><div class=\"cmdhead\"><b>" << esc(title)
    << "</b> <button class=\"copy\" data-copy=\"" << id << "\" type=\"button\">copy</button></div><pre id=\""
    << id << "\">" << esc(shell) << "</pre>";
  if (!value_line.empty()) h << "<p>" << value_line << "</p>";
  h << "</div>\n";
}

void gain_chain(std::ostringstream& h, const SearchOutcome& o, const std::string& metric) {
  const GainTable g = gain_table(o);
  if (g.rows.empty()) return;
  h << "<h3>Gain chain</h3>\n<p>From the best baseline ("
    << esc(o.best_baseline.config.engine + " " + o.best_baseline.label) << ", "
    << num(o.best_baseline.objective.mean) << ") to the best configuration ("
    << esc(o.best.config.engine + " " + o.best.label) << ", " << num(o.best.objective.mean)
    << "); each step relative "
    << "to the one before.</p>\n<table class=\"summary\"><tr><th>step</th><th>" << esc(metric)
    << " gain</th></tr>\n";
  for (const auto& r : g.rows)
    h << "<tr><td>" << esc(r.optimization) << "</td><td class=\"n\">" << pct(r.gain_pct) << "</td></tr>\n";
  if (!g.no_gain.empty())
    h << "<tr><td>" << esc(fmt::format("{}", fmt::join(g.no_gain, ", "))) << "</td><td>no gain</td></tr>\n";
  h << "<tr><th>total over the baseline</th><th class=\"n\">" << pct(g.total_pct) << "</th></tr></table>\n";
}

void generalization(std::ostringstream& h, const SearchOutcome& o, const std::string& metric,
                    bool predicted) {
  if (o.generalization.empty()) return;
  h << "<h3>Generalization: baseline vs best on every scenario</h3>\n<table "
       "class=\"summary\"><tr><th>scenario</th>"
    << "<th>baseline " << esc(metric) << "</th><th>best " << esc(metric) << "</th><th>change</th></tr>\n";
  for (const auto& r : o.generalization) {
    h << "<tr><td>" << esc(r.scenario) << "</td><td class=\"n\">"
      << (r.baseline_failure.empty() ? est_cell(r.baseline, predicted) : "failed: " + esc(r.baseline_failure))
      << "</td><td class=\"n\">"
      << (r.best_failure.empty() ? est_cell(r.best, predicted) : "failed: " + esc(r.best_failure))
      << "</td><td class=\"n"
      << (!r.baseline.n || !r.best.n ? ""
          : r.change_pct < 0         ? " neg"
                                     : " pos")
      << "\">" << (r.baseline.n && r.best.n ? pct(r.change_pct) : "—") << "</td></tr>\n";
  }
  h << "</table>\n";
}

/// "engine label" of the configurations of a tie, comma-separated, HTML-escaped.
std::string tie_names(const TwinVerdict& v) {
  std::string out;
  for (const auto& t : v.measure)
    out += (out.empty() ? "" : ", ") + esc(t.eval->config.engine + " " + t.eval->label);
  return out;
}

/// A twin study whose top pick is not clear of the band (tune/twin_verdict.h): the set to measure, each with
/// its prediction, band and why.
void measure_table(std::ostringstream& h, const TwinVerdict& v, const std::string& metric) {
  h << "<h3>Measure these</h3>\n<p>" << tie_names(v)
    << " — their predicted advantages are inside the twin's error "
    << "band" << (v.any_unknown ? " or unknown (no band)" : "")
    << ". The rule: the top pick wins only when its low "
    << "end, prediction × (1 − band), clears every other prediction's high end, prediction × (1 + band)"
    << (v.any_unknown ? "; a prediction without a band counts as unknown, never as certain" : "")
    << (v.any_unmodelled
            ? fmt::format("; a prediction on a kernel path the twin has no figure for gets at least ±{:.0f}%",
                          kUnmodelledBandPct)
            : "")
    << ".</p>\n<table class=\"summary\"><tr><th>#</th><th>engine</th><th>config</th><th>" << esc(metric)
    << " (predicted)</th><th>band</th><th>why</th></tr>\n";
  for (std::size_t i = 0; i < v.measure.size(); ++i) {
    const TwinTie& t = v.measure[i];
    std::string band = t.band.text();
    if (t.band.unmodelled_count > 0)
      band += " (unmodelled: " +
              (t.band.unmodelled.empty() ? fmt::format("{} path(s)", t.band.unmodelled_count)
                                         : fmt::format("{}", fmt::join(t.band.unmodelled, "; "))) +
              ")";
    // "#": the number a row's why cites ("the same prediction as #2"), as in report.md.
    h << "<tr><td class=\"n\">" << i + 1 << "</td><td>" << esc(t.eval->config.engine) << "</td><td>"
      << esc(t.eval->label) << "</td><td class=\"n\">" << num(t.eval->objective.mean) << "</td><td>"
      << esc(band) << "</td><td>" << esc(t.why) << "</td></tr>\n";
  }
  h << "</table>\n";
  if (const std::string unseen = v.unseen_text(); !unseen.empty()) h << "<p>" << esc(unseen) << "</p>\n";
  if (const std::string safest = v.safest_text(); !safest.empty()) h << "<p>" << esc(safest) << "</p>\n";
}

/// The configurations ranked above the best on the objective's scenarios that broke a [[constraints]] bound
/// or failed on another scenario (SearchOutcome::passed_over), or the warning that none tried holds
/// everywhere.
static void passed_over(std::ostringstream& h, const SearchOutcome& o) {
  if (o.passed_over.empty()) return;
  h << "<p class=\"warn\">"
    << (none_passed_over_holds(o)
            ? "<b>No configuration tried meets every bound on every scenario</b>: the best on the "
              "objective's "
              "scenarios and the next ones all break a [[constraints]] bound or fail on another scenario."
            : "<b>Passed over</b>: ranked above the best on the objective's scenarios, but broke a "
              "[[constraints]] bound or failed on another scenario (a bound holds on every scenario).")
    << "</p>\n<ul>\n";
  for (size_t i = 0; i < o.passed_over.size() && i < kPassedOverListed; ++i) {
    const Evaluation& e = o.passed_over[i];
    h << "<li>" << esc(e.config.engine + " " + e.label) << ": " << esc(failure_decision_text(e)) << "</li>\n";
  }
  if (o.passed_over.size() > kPassedOverListed)
    h << "<li>and " << o.passed_over.size() - kPassedOverListed << " more</li>\n";
  h << "</ul>\n";
}

void summary_section(std::ostringstream& h, const ReportInput& in) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  // What Evaluation::objective holds, by its own name and unit ("Request goodput under the SLOs (req/s)" for
  // a goodput study, tune/load.h); per-scenario figures (generalization) stay [objective].metric.
  const std::string metric = primary_objective_label(s);
  const std::string on = load_objective_is_primary(s)
                             ? load_analysis_scenario(s)
                             : fmt::format("{}", fmt::join(s.objective.scenarios, ", "));
  h << "<section id=\"summary\"><h2>Summary</h2>\n<p>Objective: maximise <b>" << esc(metric) << "</b> on "
    << esc(on) << " — " << esc(s.model) << " on " << s.hardware.gpu_count << " × " << esc(s.hardware.gpu)
    << ", " << esc(tally_trials(s, in.trials).text()) << " (" << strategy_name(o.strategy)
    << " search).</p>\n";
  if (ran_but_infeasible(o.best)) {
    h << "<p class=\"warn\">"
      << (o.complete ? "" : "<b>Partial study</b>: the search stopped before it finished. ")
      << "No configuration tried" << (o.complete ? "" : " so far")
      << " meets every [[constraints]] bound: there is no recommendation. The best on the objective, "
      << esc(o.best.config.engine + " " + o.best.label) << ", is " << esc(failure_decision_text(o.best))
      << ".</p>\n";
    passed_over(h, o);
  } else if (!o.best.feasible && !o.complete) {
    h << "<p class=\"warn\"><b>Partial study</b>: the search stopped before any configuration succeeded, so "
         "there is no recommendation yet (<code>servelab tune --resume</code> continues it).</p>\n";
  } else if (!o.best.feasible) {
    h << "<p class=\"warn\">No configuration succeeded: there is no recommendation. The trial table below "
         "lists every "
         "failure with its reason.</p>\n";
  } else if (!o.complete) {  // stopped before the search finished: no answer yet (report.md says the same)
    h << "<p class=\"warn\"><b>Partial study</b>: the search stopped before it finished, so there is no "
         "recommendation yet (<code>servelab tune --resume</code> finishes it). The best so far: "
      << esc(o.best.config.engine + " " + o.best.label) << " — " << esc(metric) << ": <b>"
      << esc(value_text(o.best, metric)) << "</b>.</p>\n";
  } else {
    const std::string rec = o.recommended_command.shell();
    const Evaluation& re = o.recommended_eval;
    const TwinVerdict verdict = twin_verdict(s, o);
    const bool tie = verdict.kind == TwinVerdict::Kind::kTie;
    if (tie)
      h << "<p class=\"warn\"><b>No single winner: measure these</b> — the twin cannot tell "
        << verdict.measure.size()
        << " configurations apart (table below). The command below is <b>provisional</b>: the twin's top "
           "pick after the rule, until they are measured.</p>\n";
    command_card(h, "cmd-recommended",
                 fmt::format("Recommended launch command (rule: {})", recommendation_rule_name(o.rule)), rec,
                 esc(metric) + ": <b>" +
                     esc(re.feasible ? value_text(re, metric) : failure_decision_text(re)) + "</b>");
    if (o.alternative) {  // the other side of the trade-off the rule made (search.h AlternativeCommand)
      const Evaluation& ae = o.alternative->eval;
      command_card(
          h, "cmd-alternative", "Alternative: " + o.alternative->title, o.alternative->command.shell(),
          esc(metric) + ": <b>" + esc(ae.feasible ? value_text(ae, metric) : failure_decision_text(ae)) +
              "</b> (the trade-off: “Recommended launch command” below).");
    } else if (o.best.shell != rec)
      command_card(h, "cmd-best", "Best on the objective (" + o.best.config.engine + " " + o.best.label + ")",
                   o.best.shell,
                   esc(metric) + ": <b>" + esc(value_text(o.best, metric)) +
                       "</b> — not recommended: "
                       "the recommendation rule dropped a knob (see “Recommended launch command” below).");
    if (tie) measure_table(h, verdict, metric);
    if (!verdict.top_bound_doubts.empty())
      h << "<p class=\"warn\"><b>A bound the twin cannot vouch for</b>: the top pick meets every constraint "
           "on the prediction, but the twin's error band reaches past "
        << (verdict.top_bound_doubts.size() == 1 ? "one" : "some") << ": "
        << esc(fmt::format("{}", fmt::join(verdict.top_bound_doubts, "; ")))
        << ". Measure it before relying on it.</p>\n";
    passed_over(h, o);
    gain_chain(h, o, metric);
    generalization(h, o, s.objective.metric, s.target == Target::kTwin);
  }
  h << "</section>\n";
}

/// Up to `max_points` points of the empirical CDF of `xs` (x = sample in ms, y = % of requests ≤ x).
std::vector<html::Point> cdf(std::vector<double> xs, size_t max_points = 200) {
  std::vector<html::Point> pts;
  xs.erase(std::remove_if(xs.begin(), xs.end(), [](double v) { return !std::isfinite(v); }), xs.end());
  if (xs.empty()) return pts;
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size(), step = std::max<size_t>(1, n / max_points);
  for (size_t i = 0; i < n; i += step) pts.push_back({xs[i], 100.0 * static_cast<double>(i + 1) / n, ""});
  if (pts.back().y < 100.0) pts.push_back({xs.back(), 100.0, ""});
  return pts;
}

/// The result of scenario `id` in trial `t`, or null.
const ScenarioResult* result_of(const TrialRecord& t, const std::string& id) {
  for (const auto& r : t.outcome.scenarios)
    if (r.scenario_id == id) return &r;
  return nullptr;
}

/// The value of `key` in `r`'s metrics, or null.
const double* metric_of(const ScenarioResult* r, const std::string& key) {
  if (!r) return nullptr;
  auto it = r->metrics.find(key);
  return it == r->metrics.end() ? nullptr : &it->second;
}

std::string charts_section(const ReportInput& in, html::ChartSet& charts) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  const std::string& metric = s.objective.metric;
  const std::string& scen = s.objective.scenarios.front();
  const std::string tag = s.target == Target::kTwin ? " (predicted)" : "";
  std::ostringstream h;

  html::BarChart bars;  // every trial of the objective scenario, failures marked with their class
  bars.title = metric + tag + " per trial on " + scen + " (× = failed trial)";
  bars.x_title = "trial # (as in the trial table; colour = engine)";
  bars.y_title = metric;
  bars.page_unit = "trials";
  html::ScatterChart sc;  // objective vs mean TPOT, the Pareto front and the recommended point
  sc.title = metric + tag + " against mean TPOT on " + scen;
  sc.x_title = "mean TPOT (ms)";
  sc.y_title = metric;
  sc.front_name = "Pareto front (higher " + metric + " at lower TPOT)";
  std::map<std::string, size_t> engine_series;
  std::vector<std::pair<double, double>> pts;  // (mean TPOT, objective) of every point, trial order
  std::vector<std::string> pts_labels;
  for (size_t i = 0; i < in.trials.size(); ++i) {
    const TrialRecord& t = in.trials[i];
    const std::string what =
        t.engine + " " + t.config_label + (t.repeat ? fmt::format(" (run {})", t.repeat + 1) : "");
    const ScenarioResult* r = result_of(t, scen);
    if (t.outcome.status != TrialStatus::kOk) {
      const std::string cls = trial_status_name(t.outcome.status);
      bars.bars.push_back(
          {fmt::format("#{} {}", i + 1, cls), t.engine, std::nullopt, cls, what + ": " + t.outcome.reason});
      continue;
    }
    const double* m = metric_of(r, metric);
    if (!m) continue;  // a trial of other scenarios (generalization)
    bars.bars.push_back({fmt::format("#{}", i + 1), t.engine, *m, "", what});
    const double* tp = metric_of(r, "Mean TPOT (ms)");
    if (!tp) continue;
    auto slot = engine_series.try_emplace(t.engine, sc.series.size());
    if (slot.second) sc.series.push_back({t.engine, {}});
    sc.series[slot.first->second].points.push_back({*tp, *m, what});
    pts.push_back({*tp, *m});
    pts_labels.push_back(what);
  }
  for (size_t i : pareto_front(pts)) sc.front.push_back({pts[i].first, pts[i].second, pts_labels[i]});

  const Evaluation& rec = o.recommended_eval;  // (an infeasible one has no point and no distribution)
  if (auto it = rec.first.find(scen); it != rec.first.end() && rec.feasible) {
    const double* m = metric_of(&it->second, metric);
    const double* tp = metric_of(&it->second, "Mean TPOT (ms)");
    if (m && tp)
      sc.marked = html::Point{*tp, *m, rec.config.engine + " " + rec.label}, sc.marked_name = "recommended";
  }
  if (!bars.bars.empty()) h << charts.add(bars);
  if (!pts.empty()) h << charts.add(sc);

  // TTFT / TPOT distributions of the best baseline, the recommended and (when different) the best config.
  std::vector<std::pair<std::string, const Evaluation*>> evals = {{"baseline", &o.best_baseline},
                                                                  {"recommended", &rec}};
  if (o.best.key != rec.key) evals.push_back({"best", &o.best});
  for (int k = 0; k < 2; ++k) {
    html::LineChart c;
    c.title = std::string(k ? "TPOT" : "TTFT") + " distribution" + tag + " on " + scen +
              ": baseline vs recommended";
    c.x_title = std::string(k ? "TPOT" : "TTFT") + " (ms)";
    c.y_title = "requests at or below (%)";
    c.step = true;
    for (const auto& named : evals) {
      const Evaluation& e = *named.second;
      auto it = e.first.find(scen);
      if (!e.feasible || it == e.first.end()) continue;
      auto points = cdf(k ? it->second.tpot_ms : it->second.ttft_ms);
      if (!points.empty())
        c.series.push_back({named.first + ": " + e.config.engine + " " + e.label, std::move(points),
                            e.config.engine + " " + e.label});
    }
    if (!c.series.empty()) h << charts.add(c);
  }
  return h.str();
}

/// A study that optimises a load objective (request goodput under the SLOs, tok/s per GPU at a per-user
/// floor): that objective per analysed configuration, in its own name and unit, the configurations' colours
/// as on the load charts; a configuration without a value (no load met the SLOs) is marked with why.
std::string objective_per_config_chart(const ReportInput& in, html::ChartSet& charts) {
  const LoadOutcome& lo = in.outcome->load;
  if (!load_objective_is_primary(*in.study) || lo.objectives.empty()) return "";
  const ObjectiveResult& r = lo.objectives.front();
  html::BarChart c;
  c.title = primary_objective_label(*in.study) + (in.study->target == Target::kTwin ? " (predicted)" : "") +
            " per configuration on " + lo.scenario;
  c.x_title = "configuration (colour = configuration, as on the load charts)";
  c.y_title = primary_objective_label(*in.study);
  c.page_unit = "configurations";
  c.failure_name = "no value (why in the tooltip)";
  for (const ObjectiveValue& v : r.values) {
    const std::string config = v.engine + " " + v.label;
    if (v.feasible)
      c.bars.push_back({config, config, v.value, "", "at " + v.at});
    else
      c.bars.push_back({config, config, std::nullopt, "no value", v.why});
  }
  return c.bars.empty() ? "" : charts.add(c);
}

/// The SLO targets of `study` on `metric` ("ttft", "tpot") as horizontal lines: "SLO: P99 TTFT ≤ 2000 ms".
std::vector<html::Threshold> slo_lines(const Study& study, const std::string& metric) {
  std::vector<html::Threshold> lines;
  for (const SloTarget& t : study.slo.targets) {
    if (t.metric != metric) continue;
    lines.push_back({t.max_ms, "SLO: " + slo_target_text(t)});
  }
  return lines;
}

/// One chart of load analysis: a metric's statistics (one line each, dashed by statistic) against load.
struct LoadMetricChart {
  std::string title, y_title, slo_metric;  ///< slo_metric: the SLO targets drawn ("ttft", "tpot", "" none)
  std::vector<std::tuple<std::string, std::string, html::Dash>> series;  ///< (suffix, console label, dash)
};

/// The load charts' metrics; a TTFT or TPOT SLO on another statistic (mean TPOT) adds its line, so the
/// threshold is read against the statistic it bounds.
std::vector<LoadMetricChart> load_metric_charts(const Study& study) {
  std::vector<LoadMetricChart> charts = {
      {"Output token throughput",
       "output tok/s",
       "",
       {{"", "Output token throughput (tok/s)", html::Dash::kSolid}}},
      {"TTFT",
       "TTFT (ms)",
       "ttft",
       {{" p50", "Median TTFT (ms)", html::Dash::kSolid}, {" p99", "P99 TTFT (ms)", html::Dash::kDashed}}},
      {"TPOT",
       "TPOT (ms)",
       "tpot",
       {{" p50", "Median TPOT (ms)", html::Dash::kSolid}, {" p99", "P99 TPOT (ms)", html::Dash::kDashed}}}};
  for (LoadMetricChart& c : charts)
    for (const SloTarget& t : study.slo.targets) {
      if (t.metric != c.slo_metric) continue;
      bool shown = false;
      for (const auto& ser : c.series) shown = shown || std::get<1>(ser) == t.label;
      if (!shown) c.series.emplace_back(" " + t.stat, t.label, html::Dash::kDotted);
    }
  return charts;
}

// Latency and throughput against load per configuration (one colour per configuration, a dash per
// statistic, the SLO thresholds drawn), and the tok/s/GPU vs tok/s/user plane with its Pareto front
// (SearchOutcome::load, filled by analyze_load). One chart per (metric, load kind) present.
std::string load_charts(const ReportInput& in, html::ChartSet& charts) {
  const LoadOutcome& lo = in.outcome->load;
  if (!lo.enabled) return "";
  const std::string tag = in.study->target == Target::kTwin ? " (predicted)" : "";
  std::ostringstream h;
  h << objective_per_config_chart(in, charts);
  for (LoadKind kind : {LoadKind::kConcurrency, LoadKind::kRequestRate}) {
    const bool conc = kind == LoadKind::kConcurrency;
    for (const LoadMetricChart& m : load_metric_charts(*in.study)) {
      html::LineChart c;
      c.title = m.title + tag + " against " + (conc ? "concurrency" : "request rate") + " on " + lo.scenario;
      c.x_title = conc ? "concurrency (requests in flight)" : "request rate (req/s)";
      c.y_title = m.y_title;
      c.log_x = true;
      for (const LoadCurve& curve : lo.curves)
        for (const auto& [suffix, label, dash] : m.series) {
          html::Series ser{
              curve.engine + " " + curve.label + suffix, {}, curve.engine + " " + curve.label, dash};
          for (const LoadPointResult& p : curve.points) {
            auto it = p.metrics.find(label);
            if (p.load.kind != kind || p.status != TrialStatus::kOk || it == p.metrics.end()) continue;
            ser.points.push_back({p.load.value, it->second, p.load.text()});
          }
          if (!ser.points.empty()) c.series.push_back(std::move(ser));
        }
      if (c.series.empty()) continue;
      c.thresholds = slo_lines(*in.study, m.slo_metric);
      h << charts.add(c);
    }
  }
  html::ScatterChart p;
  p.title = "Output tok/s per GPU against output tok/s per user" + tag + " on " + lo.scenario;
  p.x_title = "output tok/s per user (output tok/s ÷ concurrency)";
  p.y_title = "output tok/s per GPU";
  p.front_name = "Pareto front";
  std::map<std::string, size_t> series_of;  // one series (one colour) per configuration
  std::vector<const ParetoPoint*> front;
  for (const ParetoPoint& pt : lo.pareto) {
    const std::string config = pt.engine + " " + pt.label, what = config + " at " + pt.load.text();
    auto slot = series_of.try_emplace(config, p.series.size());
    if (slot.second) p.series.push_back({config, {}, config});
    p.series[slot.first->second].points.push_back({pt.output_tok_s_per_user, pt.output_tok_s_per_gpu, what});
    if (pt.on_front) front.push_back(&pt);
    if (pt.recommended)
      p.marked = html::Point{pt.output_tok_s_per_user, pt.output_tok_s_per_gpu, what},
      p.marked_name = "recommended";
  }
  std::sort(front.begin(), front.end(), [](const ParetoPoint* a, const ParetoPoint* b) {
    return a->output_tok_s_per_user < b->output_tok_s_per_user;
  });
  for (const ParetoPoint* pt : front)
    p.front.push_back({pt->output_tok_s_per_user, pt->output_tok_s_per_gpu,
                       pt->engine + " " + pt->label + " at " + pt->load.text()});
  if (!p.series.empty()) h << charts.add(p);
  return h.str();
}

std::string td_num(const std::map<std::string, double>* m, const std::string& key) {
  if (!m) return "<td class=\"n\"></td>";
  auto it = m->find(key);
  if (it == m->end() || !std::isfinite(it->second)) return "<td class=\"n\"></td>";
  return fmt::format("<td class=\"n\" data-v=\"{}\">{:.2f}</td>", it->second, it->second);
}

std::string log_link(const std::string& log_path, const std::filesystem::path& report_dir) {
  if (log_path.empty()) return "";
  namespace fs = std::filesystem;
  const fs::path p(log_path);
  std::error_code ec;
  if (!fs::exists(p, ec)) return "";  // the twin names a log path but writes none
  fs::path rel = report_dir.empty() ? fs::path() : p.lexically_relative(report_dir);
  const std::string href =
      !rel.empty() && rel.native().rfind("..", 0) != 0 ? rel.generic_string() : p.generic_string();
  return "<a href=\"" + esc(href) + "\">" + esc(p.filename().string()) + "</a>";
}

void trial_table(std::ostringstream& h, const ReportInput& in, const std::filesystem::path& report_dir) {
  const std::string& metric = in.study->objective.metric;
  h << "<section id=\"trials\"><h2>Every trial</h2>\n<p>One row per trial and scenario; click a column "
       "header to "
       "sort (again to reverse).</p>\n<div class=\"scroll\"><table class=\"sortable\" "
       "id=\"trial-table\"><thead><tr>";
  for (const std::string& col : std::vector<std::string>{
           "#", "engine", "config", "phase", "run", "scenario", metric, "mean TTFT (ms)", "P99 TTFT (ms)",
           "mean TPOT (ms)", "P99 TPOT (ms)", "status", "failure reason", "log"})
    h << "<th>" << esc(col) << "</th>";
  h << "</tr></thead><tbody>\n";
  for (size_t i = 0; i < in.trials.size(); ++i) {
    const TrialRecord& t = in.trials[i];
    const bool ok = t.outcome.status == TrialStatus::kOk;
    const size_t rows = std::max<size_t>(1, t.outcome.scenarios.size());
    for (size_t k = 0; k < rows; ++k) {
      const ScenarioResult* r = k < t.outcome.scenarios.size() ? &t.outcome.scenarios[k] : nullptr;
      const auto* m = r ? &r->metrics : nullptr;
      h << "<tr" << (ok ? "" : " class=\"fail\"") << "><td class=\"n\" data-v=\"" << i + 1 << "\">" << i + 1
        << "</td><td>" << esc(t.engine) << "</td><td>" << esc(t.config_label) << "</td><td>" << esc(t.phase)
        << "</td><td class=\"n\" data-v=\"" << t.repeat + 1 << "\">" << t.repeat + 1 << "</td><td>"
        << (r ? esc(r->scenario_id) : "") << "</td>" << td_num(m, metric) << td_num(m, "Mean TTFT (ms)")
        << td_num(m, "P99 TTFT (ms)") << td_num(m, "Mean TPOT (ms)") << td_num(m, "P99 TPOT (ms)") << "<td>"
        << trial_status_name(t.outcome.status) << "</td><td>" << esc(t.outcome.reason) << "</td><td>"
        << log_link(t.log_path, report_dir) << "</td></tr>\n";
    }
  }
  h << "</tbody></table></div></section>\n";
}

constexpr const char* kStyle =
    "body{font-family:system-ui,sans-serif;max-width:1240px;margin:1.5em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:.8em 0}td,th{border:1px solid #ccc;padding:3px 8px;font-size:90%;"
    "vertical-align:top}th{background:#f3f3f3}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}"
    "td.neg{color:#b00}td.pos{color:#070}tr.fail td{background:#fff4f4}"
    "table.sortable th{cursor:pointer;user-select:none}table.sortable "
    "th[aria-sort=ascending]::after{content:' ▲'}"
    "table.sortable th[aria-sort=descending]::after{content:' ▼'}"
    "pre{background:#f7f7f7;padding:8px;overflow-x:auto;font-size:85%;white-space:pre-wrap;word-break:break-"
    "all}"
    "code{background:#f3f3f3}blockquote{border-left:4px solid #d33;margin:1em 0;padding:.5em 1em;"
    "background:#fff4f4}.chart{position:relative;height:380px;margin:1em 0 2em}"
    ".cmd{border:1px solid #9bc;border-radius:6px;padding:.5em 1em;margin:1em 0;background:#f5faff}"
    ".cmd pre{background:#fff;margin:.4em 0}.warn{color:#b00;font-weight:bold}"
    "details.raw>summary{cursor:pointer;color:#456}.pager{margin:.4em 0 0;font-size:90%}"
    "#trial-table{font-size:90%}.scroll{overflow-x:auto}"
    "#trial-table td:nth-child(13){min-width:16em;max-width:32em}";

// Copy buttons and the sortable table; no library, no network.
constexpr const char* kPageScript = R"js(
(function () {
  function fallbackCopy(text) {
    const t = document.createElement('textarea');
    t.value = text; document.body.appendChild(t); t.select();
    let ok = false;
    try { ok = document.execCommand('copy'); } catch (e) { ok = false; }
    t.remove(); return ok;
  }
  document.querySelectorAll('button.copy').forEach(b => b.addEventListener('click', () => {
    const text = document.getElementById(b.dataset.copy).textContent;
    const done = ok => { b.textContent = ok ? 'copied' : 'copy failed: select the text'; setTimeout(() => { b.textContent = 'copy'; }, 2000); };
    if (navigator.clipboard && window.isSecureContext)
      navigator.clipboard.writeText(text).then(() => done(true), () => done(fallbackCopy(text)));
    else done(fallbackCopy(text));
  }));
  document.querySelectorAll('table.sortable').forEach(table => {
    const heads = table.querySelectorAll('thead th');
    heads.forEach((th, col) => th.addEventListener('click', () => {
      const dir = th.getAttribute('aria-sort') === 'ascending' ? -1 : 1;
      heads.forEach(h => h.removeAttribute('aria-sort'));
      th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
      const body = table.tBodies[0];
      const key = tr => { const c = tr.cells[col]; return c.dataset.v !== undefined ? Number(c.dataset.v) : c.textContent; };
      const rows = Array.from(body.rows);
      rows.sort((a, b) => {
        const x = key(a), y = key(b);
        const xe = x === '', ye = y === '';  // empty cells last in either direction
        if (xe || ye) return xe === ye ? 0 : xe ? 1 : -1;
        if (typeof x === 'number' && typeof y === 'number') return dir * (x - y);
        return dir * String(x).localeCompare(String(y));
      });
      rows.forEach(r => body.appendChild(r));
    }));
  });
})();
)js";

}  // namespace

std::string render_html(const ReportInput& in, const std::string& markdown, const std::string& chart_js,
                        const std::filesystem::path& report_dir) {
  const Study& s = *in.study;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << esc(s.name)
    << " — servelab study</title>\n<style>" << kStyle << "</style>\n</head><body>\n<h1>" << esc(s.name)
    << "</h1>\n";
  if (s.target == Target::kTwin)
    h << "<blockquote><b>PREDICTED</b>: every number on this page comes from servelab's engine twin, not "
         "from a "
         "measurement.</blockquote>\n";
  if (!in.outcome->complete)
    h << "<blockquote><b>Partial report</b>: some trials of the study have not run yet (<code>servelab tune "
         "--resume</code>).</blockquote>\n";
  if (const std::string inv = tally_trials(s, in.trials).invalid_notice(); !inv.empty())
    h << "<blockquote><b>Invalid trials</b>: " << esc(inv) << "</blockquote>\n";
  summary_section(h, in);
  h << "<section id=\"charts\"><h2>Charts</h2>\n";
  html::ChartSet charts;
  if (chart_js.empty()) {
    h << "<p class=\"warn\">Charts unavailable: Chart.js was not found in servelab's cache ("
      << esc(chart_js_path().string())
      << "); run <code>make deps</code> and <code>servelab report DIR</code> "
      << "again.</p>\n";
  } else {
    h << charts_section(in, charts);
    h << load_charts(in, charts);  // load curves and the Pareto front (studies with [load] / [slo])
  }
  h << "</section>\n";
  trial_table(h, in, report_dir);
  h << "<section id=\"full\"><h2>Full report</h2>\n<p>The content of report.md; raw bench blocks are folded "
       "(click to open).</p>\n"
    << html::markdown_to_html(markdown) << "</section>\n";
  h << "<h2>Export</h2><p>Every trial: <a href=\"trials.csv\">trials.csv</a>, <a "
       "href=\"trials.json\">trials.json"
       "</a>, <code>results.sqlite</code>.</p>\n";
  // Every text of the page through the one redaction rule (the library is not user text).
  std::string page = in.study ? redact_study_secrets(*in.study, h.str()) : common::redact_text(h.str());
  page += "<script>" + std::string(kPageScript) + "</script>\n";
  if (!chart_js.empty()) page += charts.script(chart_js);
  page += "</body></html>\n";
  return page;
}

}  // namespace servelab::tune
