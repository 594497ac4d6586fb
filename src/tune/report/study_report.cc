// The Markdown report, the greedy-path gain table and the Pareto front (the summary, best-configuration and
// recommendation sections: study_report_verdict.cc; trials.csv/json: study_export.cc).
#include "tune/report/study_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/common/redact.h"
#include "servelab/common/utf8.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/search/evaluations.h"
#include "servelab/tune/store/tally.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {

std::string est_text(const Estimate& e, bool predicted) {
  if (e.n == 0) return "—";
  std::string s =
      e.n >= 2 ? fmt::format("{:.2f} ± {:.2f}", e.mean, e.ci95_half) : fmt::format("{:.2f}", e.mean);
  return predicted ? s + " (predicted)" : s;
}

std::string md_escape(std::string s) {
  std::string out;
  bool in_tag = false;  // after a '<' that could open raw HTML, until the '>' that closes it
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i], next = i + 1 < s.size() ? s[i + 1] : '\0';
    // A viewer that passes HTML through would open "<!--", "<?", "</x" or a tag "<x": those '<' and the
    // '>' that closes them are escaped; "<=" and "< 2" open nothing (CommonMark raw HTML starts with '<'
    // then a letter, '/', '!' or '?') and stay readable in the Markdown source (new-user trial: "p99 TTFT
    // &lt;= 2 s" in the Goal); a '>' first would start a block quote.
    if (c == '|') {
      out += "\\|";
    } else if (c == '\n') {
      out += ' ';
    } else if (c == '<' && (std::isalpha(static_cast<unsigned char>(next)) || next == '/' || next == '!' ||
                            next == '?')) {
      out += "&lt;";
      in_tag = true;
    } else if (c == '>' && (in_tag || out.empty())) {
      out += "&gt;";
      in_tag = false;
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

const TrialRecord* first_trial(const ReportInput& in, const Evaluation& e) {
  for (const auto& k : e.trial_keys)
    for (const auto& t : in.trials)
      if (t.trial_key == k) return &t;
  return nullptr;
}

void result_block(std::ostringstream& md, const Evaluation& e, const std::string& scenario) {
  auto it = e.first.find(scenario);
  if (it == e.first.end()) return;
  md << "```\n";
  if (e.predicted) md << "# PREDICTED by the engine twin (not measured)\n";
  if (!it->second.result_block.empty()) {
    md << it->second.result_block;
    if (it->second.result_block.back() != '\n') md << "\n";
  } else {
    for (const auto& [k, v] : it->second.metrics) md << fmt::format("{:<40} {:.2f}\n", k + ":", v);
  }
  md << "```\n";
}

void failure_text(std::ostringstream& md, const ReportInput& in, const Evaluation& e) {
  md << fmt::format("**{}**: {}\n", failure_kind(e), e.reason);
  if (const TrialRecord* t = first_trial(in, e); t && !t->outcome.log_tail.empty()) {
    md << "\n<details><summary>engine log (tail)</summary>\n\n```\n" << t->outcome.log_tail;
    if (t->outcome.log_tail.back() != '\n') md << "\n";
    md << "```\n</details>\n";
  }
}

std::string slo_text(const Study& s) {
  std::string out;
  for (const auto& [k, v] : s.objective.slo_ms)
    out += fmt::format("{}{} ≤ {} ms", out.empty() ? "" : ", ", k, v);
  return out;
}

}  // namespace

GainTable gain_table(const SearchOutcome& o) {
  GainTable t;
  if (!o.best.feasible || !o.best_baseline.feasible) return t;
  t.total_pct = change_pct(o.best_baseline.objective.mean, o.best.objective.mean);
  const EnginePath* path = nullptr;
  if (o.strategy == Strategy::kGreedy) {
    for (const auto& p : o.engines)
      if (p.engine == o.best.config.engine && p.best.key == o.best.key) path = &p;
    // The grid check found better than greedy: greedy's own path (its best engine's), then the grid's step.
    if (!path && o.grid_check)
      for (const auto& p : o.engines)
        if (p.best.feasible && (!path || p.best.objective.mean > path->best.objective.mean)) path = &p;
  }
  if (!path) {  // not greedy's path
    t.rows.push_back({fmt::format("{} {} → {} {}", o.best_baseline.config.engine, o.best_baseline.label,
                                  o.best.config.engine, o.best.label),
                      t.total_pct});
    return t;
  }
  // A path of another engine than the best baseline's starts with the engine change on its own row (baseline
  // to baseline), so each knob's row is that knob's own gain on its engine: crediting the engine change to
  // the path's first knob read "parallelism=tp8-ep8 (trtllm baseline → vllm ...) -0.80%" for a kept step.
  // When that baseline failed, the first kept step is measured from the best baseline and says so.
  double prev = o.best_baseline.objective.mean;
  const bool switched = path->engine != o.best_baseline.config.engine;
  if (switched && path->baseline.feasible) {
    t.rows.push_back(
        {fmt::format("engine ({} baseline → {} baseline)", o.best_baseline.config.engine, path->engine),
         change_pct(prev, path->baseline.objective.mean)});
    prev = path->baseline.objective.mean;
  }
  bool from_other_engine = switched && !path->baseline.feasible;
  for (const auto& s : path->steps) {
    if (!s.kept) continue;
    std::string label = s.knob + "=" + s.value;
    if (from_other_engine)
      label += fmt::format(" ({} {} → {} {}; the {} baseline failed)", o.best_baseline.config.engine,
                           o.best_baseline.label, path->engine, s.eval.label, path->engine);
    t.rows.push_back({std::move(label), change_pct(prev, s.eval.objective.mean)});
    prev = s.eval.objective.mean;
    from_other_engine = false;
  }
  if (path->best.key != o.best.key)
    t.rows.push_back({fmt::format("grid check: {} {} → {} {}", path->engine, path->best.label,
                                  o.best.config.engine, o.best.label),
                      change_pct(path->best.objective.mean, o.best.objective.mean)});
  for (const auto& s : path->steps) {
    bool kept_knob = false;
    for (const auto& x : path->steps) kept_knob = kept_knob || (x.kept && x.knob == s.knob);
    if (!kept_knob && std::find(t.no_gain.begin(), t.no_gain.end(), s.knob) == t.no_gain.end())
      t.no_gain.push_back(s.knob);
  }
  return t;
}

std::vector<size_t> pareto_front(const std::vector<std::pair<double, double>>& pts) {
  std::vector<size_t> idx(pts.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return pts[a].first != pts[b].first ? pts[a].first < pts[b].first : pts[a].second > pts[b].second;
  });
  std::vector<size_t> front;
  double best = -1e300;
  for (size_t i : idx)
    if (pts[i].second > best) {
      front.push_back(i);
      best = pts[i].second;
    }
  return front;
}

// The twin's error band of an evaluation (its first scenario's band metrics), one paragraph; "" when the
// numbers are not the twin's.
std::string band_text(const Evaluation& e) {
  for (const auto& scenario : e.first) {
    const ScenarioResult& r = scenario.second;  // (not a structured binding: clang 14 cannot capture one)
    const auto tok = r.metrics.find(kBandTokSMetric);
    if (tok == r.metrics.end()) continue;
    auto get = [&](const char* k) {
      const auto it = r.metrics.find(k);
      return it == r.metrics.end() ? 0.0 : it->second;
    };
    std::string s = fmt::format(
        "Twin error band (leave-one-study-out residuals of this launch's class): ±{:.0f}% total tok/s, "
        "±{:.0f}% "
        "mean TTFT, ±{:.0f}% mean TPOT.",
        tok->second, get(kBandTtftMetric), get(kBandTpotMetric));
    if (e.slo && e.slo->goodput_band_pct)
      s += fmt::format(
          " Propagated to the goodput (the SLO search with each bound shifted by its metric's band, and at "
          "least the throughput band at that load): {:.2f} to {:.2f} req/s ({}).",
          e.slo->goodput_low_req_s, e.slo->goodput_high_req_s, prediction_band(e, kBandGoodputKey, 0).text());
    // The twin's notes under its result block (twin_runner.cc): its warnings, then what it assumed.
    std::string warnings, assumed;
    for (std::size_t at = 0; (at = r.result_block.find(kTwinNotePrefix, at)) != std::string::npos;) {
      at += std::string_view(kTwinNotePrefix).size();
      const std::size_t end = r.result_block.find('\n', at);
      const std::string note = r.result_block.substr(at, end == std::string::npos ? end : end - at);
      (note.rfind("warning: ", 0) == 0 ? warnings : assumed) += "\n- " + md_escape(note);
    }
    if (const double w = get(kTwinWarningsMetric); w > 0)
      s += fmt::format(
          " **The twin gave {:.0f} warning(s) for this launch** (outside its validation corpus or on a "
          "kernel path it has no figure for){}",
          w, warnings.empty() ? ": `servelab sim run` on the command prints them." : ":\n" + warnings);
    if (!assumed.empty()) s += "\n\nThe twin assumed:\n" + assumed;
    return s + "\n\n";
  }
  return "";
}

const char* failure_kind(const Evaluation& e) {
  return e.status == TrialStatus::kOk ? "infeasible" : trial_status_name(e.status);
}

bool ran_but_infeasible(const Evaluation& e) {
  return !e.feasible && e.status == TrialStatus::kOk && !e.key.empty();
}

std::string failure_decision_text(const Evaluation& e) {
  return std::string(failure_kind(e)) + ": " + e.reason;
}

// "knob=value" of a step, with the other knobs a retry changed.
static std::string step_change(const Step& st) {
  std::string out = st.knob + "=" + st.value;
  for (const auto& kv : st.retried_with) out += " + " + kv.first + "=" + kv.second;
  return st.retried_with.empty() ? out : out + " (retry)";
}

// Greedy's retries of values that failed alone: what was retried, with what, and why.
static void retries_text(std::ostringstream& md, const EnginePath& p) {
  bool any = false;
  for (const auto& st : p.steps) {
    if (st.retried_with.empty()) continue;
    if (!any)
      md << "Retried together (knobs interact: a value that fails alone may fit with other settings):\n\n";
    any = true;
    md << "- " << md_escape(st.retry_why) << ": " << md_escape(step_change(st)) << " → "
       << md_escape(st.decision) << "\n";
  }
  if (any) md << "\n";
}

// Twin-guided: what it measured and the configuration runs it saved against a grid.
static void twin_guided_text(std::ostringstream& md, const Study& s, const TwinGuidedSummary& t) {
  md << fmt::format(
      "Twin-guided search: the twin ranked all {} configurations ({} launchable, {} of them predicted "
      "to fail); {} were measured on the target, so it saved **{} configuration runs** against a grid "
      "({} launchable × {} run(s) − what it ran; `tune --dry-run` prints the engine launches of "
      "both). Stopped: {}.\n\n",
      t.grid_points, t.launchable, t.predicted_failures, t.measured, t.launches_saved, t.launchable,
      s.target == Target::kTwin ? 1 : s.repeats, md_escape(t.stop));
}

// On the twin: greedy's best against the grid's.
static void grid_check_text(std::ostringstream& md, const SearchOutcome& o, const std::string& metric) {
  const GridCheck& g = *o.grid_check;
  md << "## Greedy vs grid (twin)\n\n";
  if (!g.run) {
    md << "The grid was not run to check greedy's answer: " << g.not_run
       << ". Greedy may have missed a combination of knobs that only wins together.\n\n";
    return;
  }
  const std::string what =
      g.neighbourhood > 0
          ? fmt::format(
                "the {} configurations one or two knob changes from each engine's best (the full grid has {} "
                "points, more than search.max_trials)",
                g.neighbourhood, g.points)
          : fmt::format("the full grid ({} points)", g.points);
  if (!g.disagrees) {
    md << fmt::format(
        "Checked on the twin: {} {} no better configuration than greedy's beyond the noise "
        "(best {} {}, {:+.2f}%).\n\n",
        what, g.neighbourhood > 0 ? "hold" : "holds", g.grid_best.config.engine, g.grid_best.label,
        g.gap_pct);
    return;
  }
  md << fmt::format(
      "**Greedy and the grid disagree**: {} finds {} {} at **{:.2f}** {}, "
      "{:+.2f}% over greedy's {} {} ({:.2f}). Greedy changes one knob at a time, so a combination "
      "that only wins together can escape it. The best configuration and the recommendation below are the "
      "grid's; its command:\n\n```\n{}\n```\n\n",
      what, g.grid_best.config.engine, g.grid_best.label, g.grid_best.objective.mean, metric, g.gap_pct,
      g.greedy_best.config.engine, g.greedy_best.label, g.greedy_best.objective.mean, g.grid_best.shell);
}

// The rule that chose the recommended command, in words.
std::string rule_text(const Study& s) {
  // Without the ablation no knob was tested alone: the rule had nothing to decide on.
  if (!s.search.ablation)
    return "No knob was tested: the study turns the ablation off (`[search] ablation = false`), so the "
           "recommended command is the best configuration with every knob it has, whether or not each one "
           "helps; set `ablation = true` to test each knob and apply the study's rule";
  switch (s.recommendation.rule) {
    case RecommendationRule::kNoRegression:
      return "Rule `no_regression`: a knob of the best configuration is kept only if removing it costs a "
             "significant amount on the objective (more than the noise) **and** it does not lose on any "
             "scenario; "
             "a knob without which the configuration fails is kept.";
    case RecommendationRule::kObjective:
      return "Rule `objective`: every knob whose removal costs a significant amount on the objective (more "
             "than "
             "the noise) is kept, whatever it does on the other scenarios; a knob without which the "
             "configuration "
             "fails is kept.";
    case RecommendationRule::kTradeOff:
      break;
  }
  return fmt::format(
      "Rule `trade_off` (default): every knob whose removal costs a significant amount on the objective is "
      "kept, "
      "unless it loses on some scenario and gains less than {:g}% on the objective; a knob without which the "
      "configuration fails is kept. When a knob is kept despite a loss, the command that loses on no "
      "scenario is "
      "shown too.",
      s.recommendation.threshold_pct);
}

// One command with its objective value (CI when measured with repeats, the twin's band when predicted).
void command_text(std::ostringstream& md, const std::string& title, const Rendered& cmd, const Evaluation& e,
                  const std::string& metric) {
  md << "**" << title << "**";
  if (e.feasible)
    md << ": " << metric << " **" << est_text(e.objective, e.predicted) << "**";
  else if (e.status != TrialStatus::kOk || !e.reason.empty())
    md << ": " << md_escape(failure_decision_text(e));
  md << "\n\n```\n" << cmd.shell() << "\n```\n\n";
  if (e.feasible) md << band_text(e);
}

/// Whether an engine log was written at `path` (a stored study of an older servelab may name a log its
/// twin never wrote; the report names only files that exist).
static bool log_exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

// The failures table: one row per (engine, config, kind, reason) with how many trials ended so (a
// not-ready engine retried on every repeat is one row, not three), then each failure's last log lines once.
static void failures_text(std::ostringstream& md, const ReportInput& in) {
  md << "## Failures\n\n";
  std::vector<std::pair<const TrialRecord*, int>> rows;
  int check_failures = 0;  // of the configurations predicted only to check greedy against the grid
  for (const auto& t : in.trials) {
    if (t.outcome.status == TrialStatus::kOk) continue;
    if (t.phase == "grid-check") {
      ++check_failures;
      continue;
    }
    auto same = std::find_if(rows.begin(), rows.end(), [&](const std::pair<const TrialRecord*, int>& r) {
      return r.first->engine == t.engine && r.first->config_key == t.config_key &&
             r.first->outcome.status == t.outcome.status && r.first->outcome.reason == t.outcome.reason;
    });
    if (same == rows.end())
      rows.emplace_back(&t, 1);
    else
      ++same->second;
  }
  if (rows.empty())
    md << "None.\n";
  else
    md << "| engine | config | kind | reason | trials | engine log |\n|---|---|---|---|---|---|\n";
  for (const auto& [t, count] : rows)
    md << "| " << t->engine << " | " << md_escape(t->config_label) << " | "
       << trial_status_name(t->outcome.status) << " | " << md_escape(t->outcome.reason) << " | " << count
       << " | " << (log_exists(t->log_path) ? "`" + md_escape(t->log_path) + "`" : "") << " |\n";
  if (check_failures > 0)
    md << fmt::format(
        "\n{} more predicted failure(s) among the configurations run only to check greedy against the "
        "grid (phase `grid-check` in trials.csv).\n",
        check_failures);
  // The last lines of each failed engine's log: what the engine said, without opening the files.
  for (const auto& row : rows) {
    const TrialRecord& t = *row.first;
    if (t.outcome.log_tail.empty()) continue;
    std::string tail = t.outcome.log_tail;  // the last 12 lines
    size_t cut = tail.size();
    for (int n = 0; n < 13 && cut != std::string::npos && cut > 0; ++n) cut = tail.rfind('\n', cut - 1);
    if (cut != std::string::npos && cut > 0) tail = tail.substr(cut + 1);
    md << "\n<details><summary>" << t.engine << " " << md_escape(t.config_label) << " ("
       << trial_status_name(t.outcome.status) << "): last lines of the engine log</summary>\n\n```\n"
       << tail << (tail.empty() || tail.back() == '\n' ? "" : "\n") << "```\n</details>\n";
  }
}

/// The notes above everything: predicted numbers (twin), a partial study, stand-ins, a time scale, a reduced
/// workload.
static void notices_text(std::ostringstream& md, const ReportInput& in) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  const bool twin = s.target == Target::kTwin;
  if (twin)
    md << "> **Target: twin.** Every number in this report is **predicted** by servelab's engine twin "
          "(`sim`), not measured on GPUs.\n\n";
  if (!o.complete)
    md << "> **Partial report**: some trials of the study have not run yet (`servelab tune --resume`).\n\n";
  if (const std::string inv = tally_trials(s, in.trials).invalid_notice(); !inv.empty())
    md << "> **Invalid trials**: " << md_escape(inv) << "\n\n";
  // What the numbers are: stand-ins, time-scaled engine time, a reduced rehearsal.
  bool standins = false;
  for (const auto& [k, v] : in.environment)
    standins = standins || (k.rfind("engine.", 0) == 0 && v.find("stand-in") != std::string::npos);
  double time_scale = 1;
  for (const auto& t : in.trials)
    for (const auto& sc : t.outcome.scenarios)
      if (auto it = sc.metrics.find(kTimeScaleMetric); it != sc.metrics.end()) time_scale = it->second;
  if (standins)
    md << "> **Rehearsal on engine stand-ins** (tools/standins): the engines were servelab's twin behind the "
          "engines' command lines; every number is the twin's prediction, served over HTTP and measured by "
          "bench.\n\n";
  if (time_scale != 1)
    md << fmt::format(
        "> **Time scale {:g}**: the servers ran {:g} times faster than real time; every time, rate and "
        "throughput below is engine time (wall × {:g}).\n\n",
        time_scale, time_scale, time_scale);
  if (s.prompts_scale != 1)
    md << fmt::format(
        "> **Reduced workload**: every scenario's --num-prompts × {:g} (`--prompts-scale`); numbers are "
        "not comparable with the full study.\n\n",
        s.prompts_scale);
}

/// "Goal": the study's goal, the objective (`metric`, SLOs, scenarios) and the constraints.
static void goal_text(std::ostringstream& md, const Study& s, const std::string& metric) {
  md << "## Goal\n\n"
     << (s.goal.empty() ? "Find the best serving configuration." : md_escape(s.goal)) << "\n\n";
  md << "Objective: maximise **" << metric << "**";
  if (s.objective.kind == Objective::Kind::kGoodput) md << " (goodput under SLOs: " << slo_text(s) << ")";
  if (load_objective_is_primary(s)) {  // the first [[objectives]] entry, on the load analysis' scenario
    std::string slos;
    for (const auto& t : s.slo.targets) slos += (slos.empty() ? "" : ", ") + slo_target_text(t);
    if (!slos.empty()) md << " (SLOs: " << slos << ")";
    md << " on scenario `" << load_analysis_scenario(s) << "`";
  } else if (s.objective.scenarios.size() == 1)
    md << " on scenario `" << s.objective.scenarios[0] << "`";
  else
    md << ", weighted geometric mean over scenarios "
       << fmt::format("`{}`", fmt::join(s.objective.scenarios, "`, `"));
  md << ".\n";
  for (const auto& c : s.constraints)
    md << "Constraint: " << c.metric << (c.max ? fmt::format(" ≤ {}", *c.max) : "")
       << (c.min ? fmt::format(" ≥ {}", *c.min) : "") << ".\n";
}

/// "Setup": model, hardware, engines, target, search, runs per point, the recorded environment.
static void setup_text(std::ostringstream& md, const ReportInput& in) {
  const Study& s = *in.study;
  const bool twin = s.target == Target::kTwin;
  md << "\n## Setup\n\n";
  md << "- Model: " << md_escape(s.model) << "\n";
  md << fmt::format("- Hardware: {} × {} ({:.0f} GB = {:.0f} GiB each), {}\n", s.hardware.gpu_count,
                    s.hardware.gpu, s.hardware.gpu_memory_gb, s.hardware.gpu_memory_gb * 1e9 / (1ull << 30),
                    s.hardware.interconnect);
  md << "- Engines:";
  for (size_t i = 0; i < s.engines.size(); ++i)
    md << (i ? "," : "") << " " << md_escape(s.engines[i].name + " " + s.engines[i].version);
  md << "\n";
  // A release the twin does not model (a newer one, or a typo) is predicted with another's flags and
  // defaults: the report says which, as the console did at the start.
  try {
    for (const auto& [engine, warning] : unmodelled_version_warnings(s))
      md << "  - **" << md_escape(engine) << "**: " << md_escape(warning) << "\n";
  } catch (const std::invalid_argument&) {  // no release number: tune refused the study before running it
  }
  md << "- Target: " << target_name(s.target)
     << (twin ? " (servelab's engine twin, predictions)" : " (real engines)") << "\n";
  md << "- Search: " << strategy_name(s.search.strategy)
     << (s.search.strategy_set ? "" : fmt::format(" (the default on the {} target)", target_name(s.target)));
  const int runs = twin ? 1 : s.repeats;
  md << ", " << runs << " run(s) per point";
  if (twin && s.repeats > 1)
    md << fmt::format(" (the twin's predictions are deterministic: repeats = {} applies to measured targets)",
                      s.repeats);
  else if (runs >= 2)
    md << " (mean ± 95% CI, Student t; gains tested with Welch's t-test at 5%)";
  else
    md << fmt::format(" (one run: a gain must exceed {}% to count)", s.search.min_gain_pct);
  md << "\n- Cost: " << tally_trials(s, in.trials).text() << "\n";
  for (const auto& [k, v] : in.environment)
    if (k.rfind("data", 0) == 0 || k == "host" || k == "servelab" || k == "study_sha256" ||
        k == "gpu_model" || k == "gpu_count" || k == "driver" || k == "cuda" || k.rfind("engine.", 0) == 0 ||
        k == "prompts_scale" || k == "wall_started")
      md << "- " << k << ": " << v << "\n";
}

/// "Workload scenarios": the scenarios' bench arguments and the full bench commands (secrets redacted).
static void scenarios_text(std::ostringstream& md, const Study& s) {
  md << "\n### Workload scenarios\n\n| id | description | bench serve arguments |\n|---|---|---|\n";
  for (const auto& sc : s.scenarios)
    md << "| " << sc.id << " | " << md_escape(sc.description) << " | `"
       << md_escape(fmt::format("{}", fmt::join(sc.args, " "))) << "` |\n";
  md << "\nBench commands:\n\n";
  for (const auto& sc : s.scenarios)
    md << "- `servelab bench serve --model " << s.model << " "
       << fmt::format("{}", fmt::join(common::redact_args(s.bench_common_args), " ")) << " "
       << fmt::format("{}", fmt::join(common::redact_args(sc.args), " ")) << "`\n";
}

/// Values of a knob the "Knobs searched" table lists before "… and N more" (the baseline is always shown).
constexpr std::size_t kKnobValuesShown = 12;

/// "Knobs searched": each knob's values (the baseline in bold; the first kKnobValuesShown and the baseline,
/// then how many more) and the study's description of it.
static void knobs_text(std::ostringstream& md, const Study& s) {
  if (s.knobs.empty()) return;
  md << "\n### Knobs searched\n\n| knob | values (baseline in bold) | description |\n|---|---|---|\n";
  for (const auto& k : s.knobs) {
    std::string values;
    std::size_t shown = 0;
    for (std::size_t i = 0; i < k.values.size(); ++i) {
      const auto& v = k.values[i];
      const bool base = v.label == k.baseline;
      if (i >= kKnobValuesShown && !base) continue;
      if (!values.empty()) values += ", ";
      values += base ? "**" + md_escape(v.label) + "**" : md_escape(v.label);
      ++shown;
    }
    if (shown < k.values.size()) values += fmt::format(" … and {} more", k.values.size() - shown);
    md << "| " << md_escape(k.name) << " | " << values << " | " << md_escape(k.description) << " |\n";
  }
}

/// "Baselines": each engine's baseline command and result (or failure).
static void baselines_text(std::ostringstream& md, const ReportInput& in, const std::string& metric) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  md << "\n## Baselines\n\n";
  for (const auto& p : o.engines) {
    md << "### " << p.engine << " " << s.engine(p.engine).version << " — baseline\n\n";
    md << "```\n" << p.baseline.shell << "\n```\n\n";
    if (p.baseline.feasible) {
      md << metric << ": **" << est_text(p.baseline.objective, p.baseline.predicted) << "**\n\n";
      result_block(md, p.baseline, s.objective.scenarios.front());
    } else {
      failure_text(md, in, p.baseline);
    }
    md << "\n";
  }
}

/// The greedy search: each engine's steps, every step's command and result, the gains along the path and
/// the grid check.
static void greedy_text(std::ostringstream& md, const ReportInput& in, const std::string& metric) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  md << "## Optimizations tried (greedy, one knob at a time on top of the best so far)\n\n";
  for (const auto& p : o.engines) {
    md << "### " << p.engine << "\n\n| # | change | " << metric
       << " | vs best so far | decision |\n|---|---|---|---|---|\n";
    int i = 1;
    for (const auto& st : p.steps)
      md << "| " << i++ << " | " << md_escape(step_change(st)) << " | "
         << (st.eval.feasible ? est_text(st.eval.objective, st.eval.predicted) : "failed") << " | "
         << (st.eval.feasible ? pct(st.gain_pct) : "—") << " | " << md_escape(st.decision) << " |\n";
    md << "\n";
    retries_text(md, p);
    i = 1;
    for (const auto& st : p.steps) {
      md << "#### " << p.engine << " #" << i++ << ": " << step_change(st) << "\n\n```\n"
         << st.eval.shell << "\n```\n\n";
      if (st.eval.feasible)
        result_block(md, st.eval, s.objective.scenarios.front());
      else
        failure_text(md, in, st.eval);
      md << "\n";
    }
  }
  GainTable g = gain_table(o);
  md << "## Gains along the greedy path\n\nEach step relative to the step before it.\n\n"
     << "| optimization | " << metric << " gain |\n|---|---|\n";
  for (const auto& r : g.rows) md << "| " << md_escape(r.optimization) << " | " << pct(r.gain_pct) << " |\n";
  if (!g.no_gain.empty()) md << "| " << fmt::format("{}", fmt::join(g.no_gain, ", ")) << " | no gain |\n";
  md << "| total over the baseline | " << pct(g.total_pct) << " |\n\n";
  if (o.grid_check) grid_check_text(md, o, metric);
}

/// The ranked configurations of the grid or twin-guided search (and the twin-guided details).
static void ranked_text(std::ostringstream& md, const Study& s, const SearchOutcome& o,
                        const std::string& metric) {
  md << "## Ranked configurations (" << strategy_name(o.strategy) << ")\n\n| rank | engine | config | "
     << metric << " |\n|---|---|---|---|\n";
  int i = 1;
  for (const auto& e : o.ranked)
    md << "| " << i++ << " | " << e.config.engine << " | " << md_escape(e.label) << " | "
       << (e.feasible ? est_text(e.objective, e.predicted) : "failed: " + md_escape(e.reason)) << " |\n";
  md << "\n";
  if (o.twin_guided) twin_guided_text(md, s, *o.twin_guided);
}

/// "How the twin's ranking held on the target": predicted vs measured, Spearman ρ and Kendall τ.
static void ranking_text(std::ostringstream& md, const RankingCheck& r) {
  md << "## How the twin's ranking held on the target\n\n| config | predicted | measured |\n|---|---|---|\n";
  for (size_t i = 0; i < r.keys.size(); ++i)
    md << "| " << md_escape(r.keys[i]) << " | " << fmt::format("{:.2f}", r.predicted[i]) << " | "
       << fmt::format("{:.2f}", r.measured[i]) << " |\n";
  md << fmt::format("\nSpearman ρ = {:.3f}, Kendall τ = {:.3f} over the top {}.\n\n", r.spearman, r.kendall,
                    r.keys.size());
}

std::string render_markdown(const ReportInput& in) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  const std::string metric = primary_objective_label(s);  // what Evaluation::objective holds (tune/load.h)
  const TwinVerdict verdict = twin_verdict(s, o);  // a single winner, or "measure these" (predictions only)
  std::ostringstream md;
  md << "# " << s.name << "\n\n";
  notices_text(md, in);
  summary_text(md, s, o, metric, verdict);
  goal_text(md, s, metric);
  setup_text(md, in);
  scenarios_text(md, s);
  knobs_text(md, s);
  baselines_text(md, in, metric);
  if (o.strategy == Strategy::kGreedy)
    greedy_text(md, in, metric);
  else
    ranked_text(md, s, o, metric);
  if (o.ranking) ranking_text(md, *o.ranking);
  if (ran_but_infeasible(o.best)) {
    md << "## Best configuration\n\nNone" << (o.complete ? "" : " so far")
       << ": no configuration tried meets every `[[constraints]]` bound, so there is no recommendation.\n\n";
    passed_over_text(md, o);
  } else if (!o.best.feasible && !o.complete) {
    md << "## Best configuration\n\nNone yet: the search stopped before any configuration succeeded.\n\n";
  } else if (!o.best.feasible) {
    md << "## Best configuration\n\nNo configuration succeeded: there is no best configuration and no "
          "recommendation. See the failures below.\n\n";
  } else {
    best_text(md, s, o, metric, verdict);
    recommendation_text(md, s, o, metric, verdict);
  }
  md << render_load_markdown(in);  // load curves, SLO search, Pareto front, objectives, cost (load_report.cc)
  failures_text(md, in);
  md << "\nEvery trial (command, status, metrics per scenario): `trials.csv`, `trials.json`, "
        "`results.sqlite`.\n";
  return md.str();
}

std::filesystem::path chart_js_path() {
  return common::cache_dir() / "npm" / "node_modules" / "chart.js" / "dist" / "chart.umd.js";
}

void write_report_files(const ReportInput& in, const std::filesystem::path& dir) {
  std::filesystem::create_directories(dir);
  // Every artefact through the one redaction rule (common/redact.h): the report quotes the study's bench
  // arguments, engine commands, failure reasons and log tails.
  const auto redact = [&](const std::string& text) {
    return in.study ? redact_study_secrets(*in.study, text) : common::redact_text(text);
  };
  std::vector<std::pair<std::string, std::string>> files;  // rendered first: a failure writes nothing
  const std::string md = redact(render_markdown(in));
  files.emplace_back("report.md", md);
  std::string chart;
  try {
    chart = common::read_file(chart_js_path());
  } catch (const std::exception&) {
    chart.clear();
  }
  files.emplace_back("report.html", render_html(in, md, chart, dir));
  files.emplace_back("trials.csv", redact(trials_csv(in.trials)));
  files.emplace_back("trials.json", redact(trials_json(in.trials)));
  files.emplace_back("summary.json", redact(summary_json(in)));  // last: a reader of it sees the rest done
  // Each file is written beside its place and renamed over it: a reader (or a run killed mid-write) never
  // sees a truncated one.
  for (const auto& [name, text] : files) {
    const auto p = dir / name;
    const auto tmp = dir / (name + ".tmp");
    {
      std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
      if (common::utf8_valid(text)) {
        f << text;
      } else {  // bytes of an engine's log that are not UTF-8: each ill-formed part as U+FFFD
        std::string clean;
        common::utf8_append_lossy(clean, text);
        f << clean;
      }
      f.flush();
      if (!f) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, p);
  }
}

std::string pct(double v) {
  return fmt::format("{:+.2f}%", v);
}

}  // namespace servelab::tune
