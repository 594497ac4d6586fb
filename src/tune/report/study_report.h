// servelab/tune: the study report. Markdown in the shape of the reference study, a self-contained HTML page
// of the same with charts (Chart.js inlined), and CSV/JSON exports of every trial.
#pragma once

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "servelab/tune/search/search.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/study/study.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {

/// Inputs of every report artefact.
struct ReportInput {
  const Study* study = nullptr;
  const SearchOutcome* outcome = nullptr;
  std::vector<TrialRecord> trials;  ///< every trial of the study (store order)
  std::map<std::string, std::string> environment;
};

/// One row of the "gains along the greedy path" table.
struct GainRow {
  std::string optimization;  ///< "engine (vllm baseline → sglang baseline)" or "parallelism=tp8-dp8-dpattn"
  double gain_pct = 0.0;     ///< relative to the step before, percent
};

/// The greedy-path table: the engine change (best baseline → the path's engine's baseline) when the path's
/// engine is another, then each kept step relative to the one before, then the knobs tried without gain,
/// then the total of the best config over the best baseline (the product of the rows). `no_gain` lists knob
/// names.
struct GainTable {
  std::vector<GainRow> rows;
  std::vector<std::string> no_gain;
  double total_pct = 0.0;
};
GainTable gain_table(const SearchOutcome& outcome);

/// Indices of the Pareto-optimal points (higher throughput, lower TPOT), sorted by TPOT. Points are
/// (tpot_ms, throughput).
std::vector<size_t> pareto_front(const std::vector<std::pair<double, double>>& points);

/// The Markdown report.
std::string render_markdown(const ReportInput& in);

/// The load sections of the Markdown report (load curves, SLO search, Pareto front, objectives, cost per 1M
/// tokens) from `in.outcome->load`; "" for a study without a load analysis. (tune/load_report.cc)
std::string render_load_markdown(const ReportInput& in);

/// The SLO table's goodput cell: the repeats' 95% CI when measured more than once, else the twin's band
/// ("53.26 (23.30 to 67.64, twin band −56%/+27%)", its ends as goodput_band states them: at least ±100% on
/// an unmodelled kernel path); "—" without goodput.
std::string goodput_cell(const SloResult& r);

/// The HTML page (study_html.cc): summary first (recommended command(s), objective value with CI or twin
/// band, gain chain, generalization), charts, a sortable table of every trial, then the Markdown's content
/// with its raw bench blocks folded. `chart_js` is the Chart.js UMD source inlined into the page (if empty,
/// the page says the charts are unavailable and where to get the library). Links to engine logs are
/// relative to `report_dir` when the log lies under it. Every text but the library passes
/// common::redact_text.
std::string render_html(const ReportInput& in, const std::string& markdown, const std::string& chart_js,
                        const std::filesystem::path& report_dir = {});

/// CSV: one row per (trial, scenario); trials without scenarios get one row with an empty scenario.
std::string trials_csv(const std::vector<TrialRecord>& trials);
/// JSON array of every trial with its command, status, reason and per-scenario metrics.
std::string trials_json(const std::vector<TrialRecord>& trials);

/// summary.json: the study's answer named by its objective — {"study", "target", "complete", "objective":
/// {"name": primary_objective_label ("Request goodput under the SLOs (req/s)"), "unit" ("req/s"),
/// "scenario"}, "best" and "recommended": {"engine", "config", "command", "feasible", "predicted", "value"
/// (in the objective's unit; null without one), "runs", "ci95_half" (measured, ≥ 2 runs; else null),
/// "failure" when infeasible, "band": null or a prediction's twin error band {"low", "high" (objective's
/// unit), "text" ("±20%", "−32%/+77%")}}, "verdict": {"kind": "incomplete" (the search did not finish,
/// whatever it found so far) | "none" (finished; no recommendation) | "measured" | "winner" |
/// "measure_these", "measure_these": [{"engine", "config", "why"}], "bound_doubts": [text, ...] (the
/// [[constraints]] bounds the top pick meets only inside the twin's band)} (twin_verdict.h), "passed_over":
/// the configurations of SearchOutcome::passed_over in the form of "best", and for a load objective
/// "per_configuration": [{"engine", "config", "value", "at", "why"}] (every configuration, failed ones with
/// their failure). (study_summary.cc)
std::string summary_json(const ReportInput& in);

// ---- Shared by the Markdown report's files (study_report.cc, study_report_verdict.cc) ----

/// "812.40 ± 3.10" (measured, >= 2 runs), "812.40" (one run), + " (predicted)" for the twin's; "—" without
/// a value.
std::string est_text(const Estimate& e, bool predicted);
/// Text for a Markdown table cell or line: '|' escaped, newlines as spaces, as entities a '<' that could open
/// raw HTML (before a letter, '/', '!' or '?') and a '>' that is not a comparison's ("<= 2 s" stays).
std::string md_escape(std::string s);
/// The twin's error band of an evaluation (its first scenario's band metrics), one paragraph; "" when the
/// numbers are not the twin's.
std::string band_text(const Evaluation& e);
/// The rule that chose the recommended command, in words.
std::string rule_text(const Study& s);
/// One command with its objective value (CI when measured with repeats, the twin's band when predicted).
void command_text(std::ostringstream& md, const std::string& title, const Rendered& cmd, const Evaluation& e,
                  const std::string& metric);
/// "Summary", first in the report: the recommended command (provisional with "Measure these" when the twin
/// cannot tell its top pick from others; none for a partial study or when nothing holds) and the finalists.
void summary_text(std::ostringstream& md, const Study& s, const SearchOutcome& o, const std::string& metric,
                  const TwinVerdict& v);
/// The configurations ranked above the best that broke a [[constraints]] bound or failed elsewhere
/// (SearchOutcome::passed_over, at most kPassedOverListed named), or that none tried holds everywhere.
void passed_over_text(std::ostringstream& md, const SearchOutcome& o);
/// "Best configuration" and "Generalization": the best config's command and result, baseline vs best on
/// every scenario.
void best_text(std::ostringstream& md, const Study& s, const SearchOutcome& o, const std::string& metric,
               const TwinVerdict& v);
/// "Recommended launch command": the rule, each knob's verdict, the command(s).
void recommendation_text(std::ostringstream& md, const Study& s, const SearchOutcome& o,
                         const std::string& metric, const TwinVerdict& v);

/// Path of the Chart.js UMD build in the npm cache (cache_dir()/npm/node_modules/chart.js/dist/chart.umd.js).
std::filesystem::path chart_js_path();

/// What an evaluation that is not feasible ended as: "infeasible" when its runs completed but broke a
/// [[constraints]] bound (status ok), else its trial status name ("oom", "startup_refused", ...).
const char* failure_kind(const Evaluation& e);
/// failure_kind(e) + ": " + e.reason: the text every report artefact gives a failed or infeasible evaluation.
std::string failure_decision_text(const Evaluation& e);
/// Whether `e` is a configuration (it has a key: a search with no best yet has none) whose runs succeeded but
/// break a [[constraints]] bound: no recommendation, and not "nothing succeeded" either (a partial study's
/// best may be either, or nothing yet).
bool ran_but_infeasible(const Evaluation& e);

/// How many of SearchOutcome::passed_over a report names (the twin may have tried every candidate); the rest
/// are counted.
inline constexpr size_t kPassedOverListed = 10;

/// A signed percentage with two decimals ("+1.23%"), the report's gain figures (markdown and HTML alike).
std::string pct(double v);

/// Writes report.md, report.html, trials.csv, trials.json and summary.json into `dir`. Throws
/// std::runtime_error naming the file on I/O errors.
void write_report_files(const ReportInput& in, const std::filesystem::path& dir);

}  // namespace servelab::tune
