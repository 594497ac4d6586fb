// The report's load sections: load curves, SLO search, Pareto front, objectives, cost (study_report.h).
#include <fmt/format.h>

#include <algorithm>
#include <sstream>

#include "servelab/tune/load/load.h"
#include "tune/report/study_report.h"
#include "tune/search/twin_verdict.h"

namespace servelab::tune {

namespace {

std::string cell(const std::map<std::string, double>& m, const std::string& k, const char* f = "{:.2f}") {
  auto it = m.find(k);
  return it == m.end() ? "—" : fmt::format(fmt::runtime(f), it->second);
}

std::string escape(std::string s) {
  std::string out;
  for (char c : s) out += c == '|' ? std::string("\\|") : c == '\n' ? std::string(" ") : std::string(1, c);
  return out;
}

/// `value` (ms) with the fewest decimals (0 to 4) that show it above `bound`: 50.04 against 50, not "50".
std::string above_bound_text(double value, double bound) {
  for (int d = 0; d < 4; ++d) {
    const std::string t = fmt::format("{:.{}f}", value, d);
    if (std::stod(t) > bound) return t;
  }
  return fmt::format("{:.4f}", value);
}

std::string config_name(const std::string& engine, const std::string& label) {
  return engine + " " + label;
}

void curves_section(std::ostringstream& md, const LoadOutcome& L, bool predicted) {
  if (L.curves.empty() ||
      std::all_of(L.curves.begin(), L.curves.end(), [](const LoadCurve& c) { return c.points.empty(); }))
    return;
  md << "## Load curves (scenario `" << L.scenario << "`)\n\n"
     << "Each configuration at every load point of the sweep ("
     << (predicted ? "predicted by the twin" : "measured")
     << "; mean over repeats). Latencies in ms; tok/s/GPU = " << fmt::format("output tok/s ÷ {} GPUs", L.gpus)
     << "; tok/s/user = output tok/s ÷ concurrency.\n\n";
  for (const auto& c : L.curves) {
    if (c.points.empty()) continue;
    md << "### " << escape(config_name(c.engine, c.label)) << "\n\n"
       << "| load | req/s | output tok/s | total tok/s | TTFT mean | TTFT p50 | TTFT p99 | TPOT mean | TPOT "
          "p50 | "
          "TPOT p99 | ITL mean | ITL p50 | ITL p99 | tok/s/GPU | tok/s/user |\n"
       << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& p : c.points) {
      md << "| " << p.load.text() << " | ";
      if (p.status != TrialStatus::kOk) {
        md << "failed (" << trial_status_name(p.status) << "): " << escape(p.reason) << " |||||||||||||\n";
        continue;
      }
      const auto& m = p.metrics;
      md << cell(m, "Request throughput (req/s)") << " | "
         << cell(m, "Output token throughput (tok/s)", "{:.1f}") << " | "
         << cell(m, "Total Token throughput (tok/s)", "{:.1f}");
      for (const char* name : {"TTFT", "TPOT", "ITL"})
        for (const char* stat : {"Mean", "Median", "P99"})
          md << " | " << cell(m, fmt::format("{} {} (ms)", stat, name));
      md << fmt::format(" | {:.1f} | ", p.output_tok_s_per_gpu)
         << (p.load.kind == LoadKind::kConcurrency ? fmt::format("{:.1f}", p.output_tok_s_per_user) : "—")
         << " |\n";
    }
    md << "\n";
  }
}

/// The lowest value above the answer that did not count as meeting the SLOs, with why when it did not
/// simply miss one: saturated, or met them on a run too short to count (new-user trial: a short run that met
/// every SLO was listed as "lowest failing").
std::string not_meeting_cell(const SloResult& r) {
  if (!r.min_failing) return "—";
  std::string why;
  for (const auto& p : r.probes)
    if (p.value == *r.min_failing && !p.superseded)
      why = !p.failure.empty() ? " (the run failed)"
            : p.saturated      ? " (saturated)"
            : p.short_run      ? " (met the SLOs on a run too short to count)"
                               : "";
  return fmt::format("{:g}{}", *r.min_failing, why);
}

/// The share of the requests served at the goodput's load point that met every per-request SLO (request
/// goodput / request throughput of that run), "—" without one.
std::string share_cell(const SloResult& r) {
  const auto it = r.metrics.find("Request throughput (req/s)");
  if (!r.goodput_found || it == r.metrics.end() || !(it->second > 0)) return "—";
  return fmt::format("{:.0f}%", std::min(100.0, 100 * r.request_goodput_req_s / it->second));
}

void slo_section(std::ostringstream& md, const Study& s, const LoadOutcome& L) {
  if (L.slo.empty()) return;
  const bool rate = s.slo.variable == LoadKind::kRequestRate;
  md << "## SLO search: the highest " << (rate ? "request rate" : "concurrency") << " meeting every SLO\n\n"
     << "SLOs on `" << s.slo.scenario << "`:";
  for (const auto& t : s.slo.targets) md << " " << slo_target_text(t) << ";";
  md << fmt::format(
      " bracket (×2 from the start value, ×1.25 first when the twin gave it), then the root of the SLO "
      "margin's chord, to {:g}%, then narrow the load that served the most goodput when it lies lower (at "
      "most {} runs). A run counts only when it is steady: at least {:g} prompts per request in flight (a "
      "shorter run is rerun longer, up to {} prompts){}. Request goodput: requests meeting every per-request "
      "SLO (ttft, tpot, e2el targets, as vLLM's --goodput) per second; a configuration's goodput is the "
      "maximum over its steady runs that met every SLO, at the load shown; token goodput: request goodput × "
      "mean output tokens per request. Like vLLM's, it is per second of the whole run, the drain after the "
      "last arrival included, so it lies below the offered load even when every request meets the SLOs: the "
      "share column is the served requests that met every per-request SLO.\n\n",
      s.slo.tolerance_pct, s.slo.max_runs, s.slo.min_prompts_per_in_flight, s.slo.max_prompts,
      rate ? fmt::format(", and not saturated (at the last arrival no more than {:g}% of the run's requests "
                         "still in flight beyond what a server keeping up holds, arrival rate × the early "
                         "requests' mean E2EL; and the median TTFT of the last quarter of arrivals no more "
                         "than {:g}% of half the arrival span above the first quarter's)",
                         s.slo.tolerance_pct, s.slo.tolerance_pct)
           : "");
  md << "| config | max " << (rate ? "req/s" : "concurrency")
     << " meeting SLOs | lowest not meeting them | runs | "
     << "request goodput (req/s) | goodput at | share meeting SLOs | token goodput (tok/s) | note "
        "|\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : L.slo) {
    std::string runs = std::to_string(r.runs);
    if (r.twin_start)
      runs += fmt::format(" (started at the twin's {:g}, {} twin runs)", *r.twin_start, r.twin_runs);
    md << "| " << escape(config_name(r.engine, r.label)) << " | "
       << (r.found ? fmt::format("**{:g}**", r.max_passing) : "none") << " | " << escape(not_meeting_cell(r))
       << " | " << runs << " | " << goodput_cell(r) << " | "
       << (r.goodput_found ? LoadPoint{r.variable, r.goodput_at}.text() : "—") << " | " << share_cell(r)
       << " | " << (r.goodput_found ? fmt::format("{:.1f}", r.token_goodput_tok_s) : "—") << " | "
       << escape(r.note) << " |\n";
  }
  md << "\nRuns of each search, in order (✓ meets every SLO, ✗ does not or was saturated; goodput served, "
        "req/s):\n\n";
  for (const auto& r : L.slo) {
    std::vector<std::string> runs;
    for (const auto& p : r.probes) {
      std::string one = fmt::format("{:g} {}", p.value, p.passed && !p.saturated ? "✓" : "✗");
      if (p.failure.empty()) one += fmt::format(" {:.2f}", p.goodput_req_s);
      if (p.saturated) one += " (saturated)";
      if (p.superseded) one += fmt::format(" ({} prompts: short, rerun longer)", p.num_prompts);
      if (p.short_run) one += fmt::format(" ({} prompts: short)", p.num_prompts);
      if (p.step == "longer" && !p.superseded && !p.short_run)
        one += fmt::format(" ({} prompts)", p.num_prompts);
      if (!p.failure.empty())
        one += " (" + escape(p.failure.substr(0, 80)) + ")";
      else if (!p.passed)  // the targets it missed
        for (const auto& t : s.slo.targets)
          if (auto v = p.slo_values_ms.find(t.key); v != p.slo_values_ms.end() && v->second > t.max_ms)
            // As many decimals as it takes to show the value above its bound (50.04 > 50, not 50 > 50).
            one += fmt::format(" ({} {} > {:g})", t.key, above_bound_text(v->second, t.max_ms), t.max_ms);
      runs.push_back(one);
    }
    md << "- " << escape(config_name(r.engine, r.label)) << ": " << fmt::format("{}", fmt::join(runs, ", "))
       << "\n";
  }
  md << "\n";
}

void pareto_section(std::ostringstream& md, const LoadOutcome& L) {
  if (L.pareto.empty()) return;
  md << "## Pareto front: output tok/s per GPU against output tok/s per user\n\n"
     << fmt::format(
            "Every concurrency point of the {} configuration(s) with load curves (the search's "
            "baselines, best, recommended and top ones, at most 8; not every configuration it ran). ",
            L.curves.size())
     << "Per user = output tok/s ÷ concurrency and per GPU = "
     << fmt::format("output tok/s ÷ {} GPUs", L.gpus)
     << ", as `vllm bench sweep plot_pareto` (user count = max_concurrency). A point is on the front when no "
        "other "
        "point is higher on both.\n\n"
     << "| config | load | tok/s/user | tok/s/GPU | on front |\n|---|---|---|---|---|\n";
  std::vector<const ParetoPoint*> pts;
  for (const auto& p : L.pareto) pts.push_back(&p);
  std::stable_sort(pts.begin(), pts.end(), [](const ParetoPoint* a, const ParetoPoint* b) {
    return a->on_front != b->on_front ? a->on_front : a->output_tok_s_per_user < b->output_tok_s_per_user;
  });
  for (const ParetoPoint* p : pts)
    md << "| " << escape(config_name(p->engine, p->label)) << " | " << p->load.text() << " | "
       << fmt::format("{:.1f} | {:.1f} | ", p->output_tok_s_per_user, p->output_tok_s_per_gpu)
       << (p->recommended ? (p->on_front ? "**yes (recommended)**" : "no (recommended)")
           : p->on_front  ? "yes"
                          : "")
       << " |\n";
  md << "\n";
}

void objectives_section(std::ostringstream& md, const LoadOutcome& L) {
  if (L.objectives.empty()) return;
  md << "## Objectives\n\nThe search optimised the first; each is evaluated over the configurations with "
        "load curves above (at most 8 of those the search ran; the SLO goodput over every configuration "
        "with an SLO search), so \"best\" is the best of those.\n\n";
  for (size_t i = 0; i < L.objectives.size(); ++i) {
    const auto& o = L.objectives[i];
    md << "### " << (i == 0 ? "Primary: " : "") << o.title << " (" << o.unit << ")\n\n";
    if (o.best >= 0)
      md << fmt::format("Best of those: **{}**: {:.2f} {} at {}.\n\n",
                        escape(config_name(o.values[o.best].engine, o.values[o.best].label)),
                        o.values[o.best].value, o.unit, o.values[o.best].at);
    else
      md << "No configuration meets it.\n\n";
    md << "| config | value | at |\n|---|---|---|\n";
    std::vector<const ObjectiveValue*> rows;  // best first (the objective's direction), infeasible last
    for (const auto& v : o.values) rows.push_back(&v);
    std::stable_sort(rows.begin(), rows.end(), [&](const ObjectiveValue* a, const ObjectiveValue* b) {
      if (a->feasible != b->feasible) return a->feasible;
      return a->feasible && (o.spec.maximised() ? a->value > b->value : a->value < b->value);
    });
    for (const ObjectiveValue* v : rows)
      md << "| " << escape(config_name(v->engine, v->label)) << " | "
         << (v->feasible ? fmt::format("{:.2f}", v->value) : "— (" + escape(v->why) + ")") << " | " << v->at
         << " |\n";
    md << "\n";
  }
}

void cost_section(std::ostringstream& md, const LoadOutcome& L) {
  if (L.cost.empty() || !L.usd_per_gpu_hour) return;
  md << "## Cost per 1M tokens\n\n"
     << fmt::format(
            "${:g} per GPU-hour × {} GPUs = ${:g} per hour; $/1M tokens = $/hour ÷ 3600 ÷ tok/s × 10⁶, at "
            "the highest-throughput load point of each configuration with load curves.\n\n",
            *L.usd_per_gpu_hour, L.gpus, *L.usd_per_gpu_hour * L.gpus)
     << "| config | at | output tok/s | $/1M output tokens | total tok/s | $/1M total tokens "
        "|\n|---|---|---|---|---|---|\n";
  for (const auto& c : L.cost)
    md << "| " << escape(config_name(c.engine, c.label)) << " | " << c.at
       << fmt::format(" | {:.1f} | {:.4f} | {:.1f} | {:.4f} |\n", c.output_tok_s, c.usd_per_1m_output_tokens,
                      c.total_tok_s, c.usd_per_1m_total_tokens);
  md << "\n";
}

}  // namespace

/// A configuration's goodput with its band: the repeats' 95% CI when measured more than once, the twin's
/// propagated band ("3.20 (2.41–3.90, twin band ±25%)") when predicted; "—" without goodput.
std::string goodput_cell(const SloResult& r) {
  if (!r.goodput_found) return "—";
  if (r.goodput_repeats_req_s.size() > 1)
    return fmt::format("{:.2f} ± {:.2f}", r.request_goodput_req_s,
                       estimate(r.goodput_repeats_req_s).ci95_half);
  if (const TwinBand band = goodput_band(r); band.pct)  // written as the Summary's band column
    return fmt::format("{:.2f} ({:.2f} to {:.2f}, twin band {})", r.request_goodput_req_s,
                       std::max(0.0, band.low(r.request_goodput_req_s)), band.high(r.request_goodput_req_s),
                       band.text());
  return fmt::format("{:.2f}", r.request_goodput_req_s);
}

std::string render_load_markdown(const ReportInput& in) {
  const LoadOutcome& L = in.outcome->load;
  if (!L.enabled) return "";
  std::ostringstream md;
  curves_section(md, L, in.study->target == Target::kTwin);
  slo_section(md, *in.study, L);
  pareto_section(md, L);
  objectives_section(md, L);
  cost_section(md, L);
  return md.str();
}

}  // namespace servelab::tune
