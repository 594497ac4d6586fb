// The self-contained HTML report: the Markdown converted (the subset render_markdown emits) plus Chart.js
// charts with the data embedded as JSON.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tune/study_report.h"

namespace servelab::tune {

namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

/// Inline markup: `code`, **bold**; everything else escaped.
std::string inline_md(const std::string& s) {
  std::string o;
  bool code = false, bold = false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '`') {
      o += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && s.compare(i, 2, "**") == 0) {
      o += bold ? "</b>" : "<b>";
      bold = !bold;
      ++i;
    } else if (!code && s.compare(i, 2, "\\|") == 0) {
      o += "|";
      ++i;
    } else {
      o += esc(std::string(1, s[i]));
    }
  }
  if (code) o += "</code>";
  if (bold) o += "</b>";
  return o;
}

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string cur;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == '|') {
      cur += "\\|";
      ++i;
    } else if (line[i] == '|') {
      size_t a = cur.find_first_not_of(' '), b = cur.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

std::string md_to_html(const std::string& md) {
  std::istringstream in(md);
  std::ostringstream h;
  std::string line;
  bool in_code = false, in_table = false, in_list = false, table_head = false;
  auto close_blocks = [&] {
    if (in_table) h << "</table>\n";
    if (in_list) h << "</ul>\n";
    in_table = in_list = false;
  };
  while (std::getline(in, line)) {
    if (line.rfind("```", 0) == 0) {
      if (!in_code) close_blocks();
      h << (in_code ? "</pre>\n" : "<pre>");
      in_code = !in_code;
      continue;
    }
    if (in_code) {
      h << esc(line) << "\n";
      continue;
    }
    if (line.rfind("|", 0) == 0) {
      if (line.rfind("|---", 0) == 0) continue;
      if (!in_table) {
        close_blocks();
        h << "<table>\n";
        in_table = table_head = true;
      }
      h << "<tr>";
      for (const auto& c : split_row(line)) h << (table_head ? "<th>" : "<td>") << inline_md(c) << (table_head ? "</th>" : "</td>");
      h << "</tr>\n";
      table_head = false;
      continue;
    }
    if (line.rfind("- ", 0) == 0) {
      if (!in_list) {
        close_blocks();
        h << "<ul>\n";
        in_list = true;
      }
      h << "<li>" << inline_md(line.substr(2)) << "</li>\n";
      continue;
    }
    close_blocks();
    if (line.empty()) continue;
    int level = 0;
    while (level < static_cast<int>(line.size()) && line[level] == '#') ++level;
    if (level > 0 && level < 7 && line.size() > static_cast<size_t>(level) && line[level] == ' ') {
      h << fmt::format("<h{0}>{1}</h{0}>\n", level, inline_md(line.substr(level + 1)));
    } else if (line.rfind("> ", 0) == 0) {
      h << "<blockquote>" << inline_md(line.substr(2)) << "</blockquote>\n";
    } else if (line.rfind("<details>", 0) == 0 || line.rfind("</details>", 0) == 0) {
      h << line << "\n";  // emitted by render_markdown itself
    } else {
      h << "<p>" << inline_md(line) << "</p>\n";
    }
  }
  close_blocks();
  if (in_code) h << "</pre>\n";
  return h.str();
}

/// Histogram of samples over [lo, hi] in 20 equal bins (shared by the series of one chart).
nlohmann::json histogram(const std::vector<double>& xs, double lo, double hi) {
  nlohmann::json j = {{"labels", nlohmann::json::array()}, {"counts", nlohmann::json::array()}};
  const int bins = 20;
  const double w = hi > lo ? (hi - lo) / bins : 1.0;
  std::vector<int> c(bins, 0);
  for (double x : xs) c[std::clamp(static_cast<int>((x - lo) / w), 0, bins - 1)]++;
  for (int i = 0; i < bins; ++i) {
    j["labels"].push_back(fmt::format("{:.0f}", lo + (i + 0.5) * w));
    j["counts"].push_back(c[i]);
  }
  return j;
}

}  // namespace

std::string render_html(const ReportInput& in, const std::string& markdown, const std::string& chart_js) {
  const Study& s = *in.study;
  const SearchOutcome& o = *in.outcome;
  const std::string& metric = s.objective.metric;
  const std::string& scen = s.objective.scenarios.front();
  const bool predicted = s.target == Target::kTwin;
  const std::string tag = predicted ? " (predicted)" : "";

  // Data for the charts.
  nlohmann::json per_trial = nlohmann::json::array();
  std::vector<std::pair<double, double>> pts;
  nlohmann::json pts_meta = nlohmann::json::array();
  for (const auto& t : in.trials) {
    for (const auto& r : t.outcome.scenarios) {
      if (r.scenario_id != scen) continue;
      auto m = r.metrics.find(metric);
      auto tp = r.metrics.find("Mean TPOT (ms)");
      if (m == r.metrics.end()) continue;
      per_trial.push_back({{"engine", t.engine}, {"label", t.config_label}, {"value", m->second}});
      if (tp != r.metrics.end()) {
        pts.push_back({tp->second, m->second});
        pts_meta.push_back({{"engine", t.engine}, {"label", t.config_label}});
      }
    }
  }
  nlohmann::json scatter = nlohmann::json::array();
  for (size_t i = 0; i < pts.size(); ++i)
    scatter.push_back({{"x", pts[i].first}, {"y", pts[i].second}, {"engine", pts_meta[i]["engine"]},
                       {"label", pts_meta[i]["label"]}});
  nlohmann::json front = nlohmann::json::array();
  for (size_t i : pareto_front(pts)) front.push_back({{"x", pts[i].first}, {"y", pts[i].second}});
  nlohmann::json dists = nlohmann::json::object();
  double lo[2] = {1e300, 1e300}, hi[2] = {-1e300, -1e300};
  for (const auto* e : {&o.best_baseline, &o.best}) {
    auto it = e->first.find(scen);
    if (it == e->first.end()) continue;
    for (double x : it->second.ttft_ms) lo[0] = std::min(lo[0], x), hi[0] = std::max(hi[0], x);
    for (double x : it->second.tpot_ms) lo[1] = std::min(lo[1], x), hi[1] = std::max(hi[1], x);
  }
  for (const auto* e : {&o.best_baseline, &o.best}) {
    auto it = e->first.find(scen);
    if (it == e->first.end() || it->second.ttft_ms.empty()) continue;
    const std::string name = (e == &o.best ? "best: " : "baseline: ") + e->config.engine + " " + e->label;
    dists[name] = {{"ttft", histogram(it->second.ttft_ms, lo[0], hi[0])},
                   {"tpot", histogram(it->second.tpot_ms, lo[1], hi[1])}};
  }
  nlohmann::json data = {{"metric", metric + tag}, {"scenario", scen}, {"trials", per_trial},
                         {"scatter", scatter}, {"front", front}, {"dists", dists}};
  std::string data_text = data.dump();
  // Never let data close the script element.
  for (size_t p = data_text.find("</"); p != std::string::npos; p = data_text.find("</", p + 3))
    data_text.replace(p, 2, "<\\/");

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" << esc(s.name)
    << " — servelab study</title>\n<style>body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;"
       "padding:0 1em;color:#222}table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
       "padding:3px 8px;font-size:90%}th{background:#f3f3f3}pre{background:#f7f7f7;padding:8px;overflow-x:auto;"
       "font-size:85%}code{background:#f3f3f3}blockquote{border-left:4px solid #d33;margin:1em 0;padding:.5em 1em;"
       "background:#fff4f4}.chart{max-width:1100px;margin:1em 0}</style>\n</head><body>\n";
  if (predicted)
    h << "<blockquote><b>PREDICTED</b>: every number on this page comes from servelab's engine twin, not from a "
         "measurement.</blockquote>\n";
  h << "<h2>Charts</h2>\n";
  if (chart_js.empty()) {
    h << "<p>Charts unavailable: Chart.js was not found in servelab's cache (" << esc(chart_js_path().string())
      << "); run <code>make deps</code> and <code>servelab report DIR</code> again.</p>\n";
  } else {
    h << "<div class=\"chart\"><canvas id=\"c_trials\"></canvas></div>\n"
         "<div class=\"chart\"><canvas id=\"c_pareto\"></canvas></div>\n"
         "<div class=\"chart\"><canvas id=\"c_ttft\"></canvas></div>\n"
         "<div class=\"chart\"><canvas id=\"c_tpot\"></canvas></div>\n";
  }
  h << md_to_html(markdown);
  h << "<h2>Export</h2><p>Every trial: <a href=\"trials.csv\">trials.csv</a>, <a href=\"trials.json\">trials.json"
       "</a>, <code>results.sqlite</code>.</p>\n";
  if (!chart_js.empty()) {
    std::string lib = chart_js;
    for (size_t p = lib.find("</script"); p != std::string::npos; p = lib.find("</script", p + 3))
      lib.replace(p, 2, "<\\/");
    h << "<script>\n" << lib << "\n</script>\n";
    h << "<script>\nconst D = " << data_text << ";\n" << R"js(
const palette = {vllm:'#1f77b4', sglang:'#d62728', trtllm:'#2ca02c'};
const color = e => palette[e] || '#9467bd';
new Chart(document.getElementById('c_trials'), {type:'bar',
  data:{labels:D.trials.map((t,i)=>(i+1)+' '+t.engine+' '+t.label),
        datasets:[{label:D.metric+' on '+D.scenario, data:D.trials.map(t=>t.value),
                   backgroundColor:D.trials.map(t=>color(t.engine))}]},
  options:{plugins:{title:{display:true,text:'Throughput per trial, by engine (colour)'}},
           scales:{x:{ticks:{display:false}}}}});
const engines = [...new Set(D.scatter.map(p=>p.engine))];
new Chart(document.getElementById('c_pareto'), {type:'scatter',
  data:{datasets:[...engines.map(e=>({label:e, data:D.scatter.filter(p=>p.engine===e),
                                      backgroundColor:color(e)})),
                  {label:'Pareto front', type:'line', data:D.front, borderColor:'#000', showLine:true,
                   fill:false, pointRadius:0}]},
  options:{plugins:{title:{display:true,text:D.metric+' vs mean TPOT (ms) on '+D.scenario},
                    tooltip:{callbacks:{label:c=>(c.raw.label||'')+' ('+c.raw.x.toFixed(1)+' ms, '+c.raw.y.toFixed(1)+')'}}},
           scales:{x:{title:{display:true,text:'mean TPOT (ms)'}},y:{title:{display:true,text:D.metric}}}}});
function dist(id, key, title) {
  const names = Object.keys(D.dists);
  if (!names.length) return;
  new Chart(document.getElementById(id), {type:'bar',
    data:{labels:D.dists[names[0]][key].labels,
          datasets:names.map((n,i)=>({label:n+' (x: bin centre, ms)', data:D.dists[n][key].counts,
                                      backgroundColor:i? 'rgba(214,39,40,.6)':'rgba(31,119,180,.6)'}))},
    options:{plugins:{title:{display:true,text:title}}}});
}
dist('c_ttft','ttft','TTFT distribution (requests per bin) on '+D.scenario);
dist('c_tpot','tpot','TPOT distribution (requests per bin) on '+D.scenario);
)js" << "</script>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

}  // namespace servelab::tune
