// The HTML report's chart builders (html_charts.h): specs as JSON and the runtime that draws them with
// Chart.js 4 (scripts/deps.sh CHARTJS_VERSION).
#include "tune/report/html_charts.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>

#include "servelab/common/redact.h"
#include "servelab/engines/engine_module.h"

namespace servelab::tune::html {

namespace {

nlohmann::json points_json(const std::vector<Point>& points) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& p : points) {
    if (!std::isfinite(p.x) || !std::isfinite(p.y)) continue;  // nothing to draw (JSON has no NaN)
    a.push_back({{"x", p.x}, {"y", p.y}, {"label", p.label}});
  }
  return a;
}

const char* dash_name(Dash d) {
  return d == Dash::kDashed ? "dashed" : d == Dash::kDotted ? "dotted" : "solid";
}

// Engines keep one colour on every chart, by their place in the engine table (Tableau 10's blue, red and
// green, then Tableau 20's light tones); configurations take the other palette, which has none of the
// engines' colours, nor black (failure marks) nor grey (thresholds): Tableau 10's rest, then Tableau 20's
// darker tones.
constexpr const char* kEnginePalette[] = {"#1f77b4", "#d62728", "#2ca02c", "#aec7e8", "#ff9896", "#98df8a"};
constexpr const char* kConfigPalette[] = {"#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
                                          "#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#e6550d",
                                          "#5254a3", "#b5cf6b", "#de9ed6", "#3b6e5f"};

nlohmann::json head(const char* kind, const std::string& title, const std::string& x, const std::string& y) {
  return {{"kind", kind}, {"title", title}, {"x_title", x}, {"y_title", y}};
}

// Draws every spec of SL_CHARTS on its canvas, each series in the colour ChartSet::colour gave its key (a
// dataset's slKey names it, for a reader or a test). Bar charts with more bars than their page size show one
// page at a time with buttons. No animation: a screenshot or a test sees the final chart at once.
constexpr const char* kChartRuntime = R"js(
(function () {
  const DASH = {solid: [], dashed: [7, 4], dotted: [2, 3]};
  const num = v => Math.abs(v) >= 100 ? v.toFixed(0) : Math.abs(v) >= 1 ? v.toFixed(2) : v.toPrecision(3);
  const pointText = p => (p.label ? p.label + ': ' : '') + '(' + num(p.x) + ', ' + num(p.y) + ')';
  const axes = (s, xType) => ({
    x: {type: xType, title: {display: true, text: s.x_title}},
    y: {title: {display: true, text: s.y_title}, beginAtZero: s.kind === 'bar'}});
  const base = (s, scales, tooltipLabel) => ({
    animation: false, maintainAspectRatio: false, scales: scales,
    plugins: {title: {display: true, text: s.title, font: {size: 15}},
              tooltip: {callbacks: {label: tooltipLabel}}}});
  const build = {
    line: s => {
      const ds = s.series.map(r => ({label: r.name, slKey: r.key, data: r.points, showLine: true,
        stepped: s.step ? 'after' : false, borderColor: r.colour, backgroundColor: r.colour,
        borderDash: DASH[r.dash], pointRadius: s.step ? 0 : 3, borderWidth: 2}));
      const all = s.series.flatMap(r => r.points);
      const xs = all.map(p => p.x), ys = all.map(p => p.y).concat(s.thresholds.filter(t => !t.vertical).map(t => t.value));
      for (const t of s.thresholds) {  // a limit across the whole chart
        const data = t.vertical ? [{x: t.value, y: Math.min(0, ...ys)}, {x: t.value, y: Math.max(...ys)}]
                                : [{x: Math.min(...xs), y: t.value}, {x: Math.max(...xs), y: t.value}];
        ds.push({label: t.label, slKey: 'threshold', data: data.map(p => ({...p, label: t.label})), showLine: true,
                 borderColor: s.threshold_colour, backgroundColor: s.threshold_colour, borderDash: [10, 5],
                 pointRadius: 0, borderWidth: 1.5});
      }
      return {type: 'scatter', data: {datasets: ds},
              options: base(s, axes(s, s.log_x ? 'logarithmic' : 'linear'), c => c.dataset.label + ' ' + pointText(c.raw))};
    },
    scatter: s => {
      const ds = s.series.map(r => ({label: r.name, slKey: r.key, data: r.points, backgroundColor: r.colour,
                                     borderColor: r.colour, pointRadius: 4}));
      if (s.front.length)
        ds.push({label: s.front_name, data: s.front, showLine: true, borderColor: '#000', pointRadius: 0,
                 borderWidth: 1.5});
      if (s.marked)
        ds.push({label: s.marked_name, data: [s.marked], pointStyle: 'star', pointRadius: 14, borderWidth: 2.5,
                 borderColor: '#000', backgroundColor: '#ffd700'});
      return {type: 'scatter', data: {datasets: ds},
              options: base(s, axes(s, 'linear'), c => c.dataset.label + ' ' + pointText(c.raw))};
    },
    bar: s => {
      const groups = [...new Map(s.bars.map(b => [b.group, b.colour])).entries()];
      const ds = groups.map(([g, colour]) => ({type: 'bar', label: g, slKey: g, grouped: false,
        backgroundColor: colour, borderColor: colour,
        data: s.bars.map(b => b.group === g && b.value !== null ? b.value : null)}));
      if (s.bars.some(b => b.value === null))
        ds.push({type: 'line', label: s.failure_name, slKey: 'failure', showLine: false,
                 pointStyle: 'crossRot', pointRadius: 9, pointBorderWidth: 3, borderColor: s.failure_colour,
                 backgroundColor: s.failure_colour, data: s.bars.map(b => b.value === null ? 0 : null)});
      const label = c => {
        const b = s.bars[c.dataIndex];
        const first = b.value === null ? 'failed: ' + b.failure : c.dataset.label + ': ' + num(b.value);
        return b.tooltip ? [first, b.tooltip] : first;
      };
      const scales = axes(s, 'category');
      scales.x.ticks = {autoSkip: false, font: {size: 10}};  // every failure tick names its class
      if (s.bars.length > s.page_size) scales.x.min = 0, scales.x.max = s.page_size - 1;
      return {type: 'bar', data: {labels: s.bars.map(b => b.label), datasets: ds},
              options: base(s, scales, label)};
    }};
  // Buttons above a paged bar chart: one page of ticks at a time (the x scale's min / max window).
  const pager = (s, chart) => {
    const n = s.bars.length, size = s.page_size, nav = document.createElement('div');
    nav.className = 'pager';
    const prev = document.createElement('button'), next = document.createElement('button'),
          text = document.createElement('span');
    prev.type = next.type = 'button';
    prev.textContent = '◀ previous'; next.textContent = 'next ▶';
    prev.className = 'page-prev'; next.className = 'page-next'; text.className = 'page-text';
    let first = 0;
    const show = () => {
      chart.options.scales.x.min = first;
      chart.options.scales.x.max = Math.min(n, first + size) - 1;
      chart.update();
      text.textContent = ' ' + s.page_unit + ' ' + (first + 1) + '–' + Math.min(n, first + size) + ' of ' + n + ' ';
      prev.disabled = first === 0; next.disabled = first + size >= n;
    };
    prev.addEventListener('click', () => { first = Math.max(0, first - size); show(); });
    next.addEventListener('click', () => { first = Math.min(first + size, size * Math.floor((n - 1) / size)); show(); });
    nav.append(prev, text, next);
    chart.canvas.parentNode.before(nav);
    show();
  };
  for (const s of SL_CHARTS) {
    const chart = new Chart(document.getElementById(s.id), build[s.kind](s));
    if (s.kind === 'bar' && s.bars.length > s.page_size) pager(s, chart);
  }
})();
)js";

}  // namespace

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string script_safe_json(std::string text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

std::string ChartSet::canvas(nlohmann::json spec) {
  const std::string id = fmt::format("chart-{}", specs_.size());
  spec["id"] = id;
  specs_.push_back(std::move(spec));
  return fmt::format(
      "<div class=\"chart\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n", id,
      esc(specs_.back()["title"].get<std::string>()));
}

std::string ChartSet::colour(const std::string& key) {
  const auto& engines = engines::engine_modules();
  for (std::size_t i = 0; i < engines.size(); ++i)
    if (key == engines[i].name) return kEnginePalette[i % std::size(kEnginePalette)];
  auto it = colours_.find(key);
  if (it == colours_.end()) {
    const size_t n = std::size(kConfigPalette);
    it = colours_.emplace(key, kConfigPalette[colours_.size() % n]).first;
  }
  return it->second;
}

nlohmann::json ChartSet::series_json(const std::vector<Series>& series) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : series) {
    const std::string& key = s.key.empty() ? s.name : s.key;
    a.push_back({{"name", s.name},
                 {"key", key},
                 {"colour", colour(key)},
                 {"dash", dash_name(s.dash)},
                 {"points", points_json(s.points)}});
  }
  return a;
}

std::string ChartSet::add(const LineChart& c) {
  nlohmann::json j = head("line", c.title, c.x_title, c.y_title);
  j["series"] = series_json(c.series);
  j["log_x"] = c.log_x;
  j["step"] = c.step;
  nlohmann::json thresholds = nlohmann::json::array();
  for (const auto& t : c.thresholds)
    if (std::isfinite(t.value))
      thresholds.push_back({{"value", t.value}, {"label", t.label}, {"vertical", t.vertical}});
  j["thresholds"] = std::move(thresholds);
  j["threshold_colour"] = kThresholdColour;
  return canvas(std::move(j));
}

std::string ChartSet::add(const ScatterChart& c) {
  nlohmann::json j = head("scatter", c.title, c.x_title, c.y_title);
  j["series"] = series_json(c.series);
  j["front"] = points_json(c.front);
  j["front_name"] = c.front_name;
  j["marked"] = nullptr;
  if (c.marked) {
    nlohmann::json m = points_json({*c.marked});
    if (!m.empty()) j["marked"] = m[0];
  }
  j["marked_name"] = c.marked_name;
  return canvas(std::move(j));
}

std::string ChartSet::add(const BarChart& c) {
  nlohmann::json j = head("bar", c.title, c.x_title, c.y_title);
  nlohmann::json bars = nlohmann::json::array();
  for (const auto& b : c.bars) {
    const bool drawn = b.value && std::isfinite(*b.value);
    bars.push_back({{"label", b.label},
                    {"group", b.group},
                    {"colour", colour(b.group)},
                    {"value", drawn ? nlohmann::json(*b.value) : nullptr},
                    {"failure", drawn ? "" : (b.failure.empty() ? "no value" : b.failure)},
                    {"tooltip", b.tooltip}});
  }
  j["bars"] = std::move(bars);
  j["page_size"] = std::max<size_t>(1, c.page_size);
  j["page_unit"] = c.page_unit;
  j["failure_name"] = c.failure_name;
  j["failure_colour"] = kFailureColour;
  return canvas(std::move(j));
}

std::string ChartSet::script(const std::string& chart_js) const {
  if (specs_.empty()) return "";
  std::string lib = chart_js;  // "</script" can only occur inside a string of the library
  for (size_t p = lib.find("</script"); p != std::string::npos; p = lib.find("</script", p + 3))
    lib.replace(p, 2, "<\\/");
  // A failure reason quoting an engine's log may hold invalid UTF-8: replaced (U+FFFD), never a throw.
  const std::string specs = specs_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return "<script>\n" + lib +
         "\n</script>\n<script>\nconst SL_CHARTS = " + script_safe_json(common::redact_text(specs)) + ";\n" +
         kChartRuntime + "</script>\n";
}

}  // namespace servelab::tune::html
