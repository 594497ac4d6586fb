// The HTML report's chart builders (html_charts.h): specs as JSON and the runtime that draws them with
// Chart.js 4 (scripts/deps.sh CHARTJS_VERSION).
#include "tune/html_charts.h"

#include <fmt/format.h>

#include <cmath>

#include "servelab/common/redact.h"

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

nlohmann::json series_json(const std::vector<Series>& series) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : series) a.push_back({{"name", s.name}, {"points", points_json(s.points)}});
  return a;
}

nlohmann::json head(const char* kind, const std::string& title, const std::string& x, const std::string& y) {
  return {{"kind", kind}, {"title", title}, {"x_title", x}, {"y_title", y}};
}

// Draws every spec of SL_CHARTS on its canvas. Series colours: engines keep their colour on every chart.
// No animation: a screenshot or a test sees the final chart at once.
constexpr const char* kChartRuntime = R"js(
(function () {
  const ENGINE = {vllm: '#1f77b4', sglang: '#d62728', trtllm: '#2ca02c'};
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf'];
  const color = (name, i) => ENGINE[name] || PALETTE[i % PALETTE.length];
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
    line: s => ({type: 'scatter',
      data: {datasets: s.series.map((r, i) => ({label: r.name, data: r.points, showLine: true,
        stepped: s.step ? 'after' : false, borderColor: color(r.name, i), backgroundColor: color(r.name, i),
        pointRadius: s.step ? 0 : 3, borderWidth: 2}))},
      options: base(s, axes(s, s.log_x ? 'logarithmic' : 'linear'), c => c.dataset.label + ' ' + pointText(c.raw))}),
    scatter: s => {
      const ds = s.series.map((r, i) => ({label: r.name, data: r.points, backgroundColor: color(r.name, i),
                                          pointRadius: 4}));
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
      const groups = [...new Set(s.bars.map(b => b.group))];
      const ds = groups.map((g, i) => ({type: 'bar', label: g, grouped: false, backgroundColor: color(g, i),
        data: s.bars.map(b => b.group === g && b.value !== null ? b.value : null)}));
      if (s.bars.some(b => b.value === null))
        ds.push({type: 'line', label: 'failed trial (class and reason in the tooltip)', showLine: false,
                 pointStyle: 'crossRot', pointRadius: 9, pointBorderWidth: 3, borderColor: '#d00',
                 backgroundColor: '#d00', data: s.bars.map(b => b.value === null ? 0 : null)});
      const label = c => {
        const b = s.bars[c.dataIndex];
        const first = b.value === null ? 'failed: ' + b.failure : c.dataset.label + ': ' + num(b.value);
        return b.tooltip ? [first, b.tooltip] : first;
      };
      const scales = axes(s, 'category');
      scales.x.ticks = {autoSkip: false, font: {size: 10}};  // every failure tick names its class
      return {type: 'bar', data: {labels: s.bars.map(b => b.label), datasets: ds},
              options: base(s, scales, label)};
    }};
  for (const s of SL_CHARTS) new Chart(document.getElementById(s.id), build[s.kind](s));
})();
)js";

}  // namespace

std::string esc(const std::string& s) {
  std::string o;
  o.reserve(s.size());
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

std::string script_safe_json(std::string text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    if (c == '<') out += "\\u003c";
    else out += c;
  }
  return out;
}

std::string ChartSet::canvas(nlohmann::json spec) {
  const std::string id = fmt::format("chart-{}", specs_.size());
  spec["id"] = id;
  specs_.push_back(std::move(spec));
  return fmt::format("<div class=\"chart\"><canvas id=\"{}\" role=\"img\" aria-label=\"{}\"></canvas></div>\n", id,
                     esc(specs_.back()["title"].get<std::string>()));
}

std::string ChartSet::add(const LineChart& c) {
  nlohmann::json j = head("line", c.title, c.x_title, c.y_title);
  j["series"] = series_json(c.series);
  j["log_x"] = c.log_x;
  j["step"] = c.step;
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
    bars.push_back({{"label", b.label}, {"group", b.group}, {"value", drawn ? nlohmann::json(*b.value) : nullptr},
                    {"failure", drawn ? "" : (b.failure.empty() ? "no value" : b.failure)}, {"tooltip", b.tooltip}});
  }
  j["bars"] = std::move(bars);
  return canvas(std::move(j));
}

std::string ChartSet::script(const std::string& chart_js) const {
  if (specs_.empty()) return "";
  std::string lib = chart_js;  // "</script" can only occur inside a string of the library
  for (size_t p = lib.find("</script"); p != std::string::npos; p = lib.find("</script", p + 3))
    lib.replace(p, 2, "<\\/");
  // A failure reason quoting an engine's log may hold invalid UTF-8: replaced (U+FFFD), never a throw.
  const std::string specs = specs_.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return "<script>\n" + lib + "\n</script>\n<script>\nconst SL_CHARTS = " + script_safe_json(common::redact_text(specs)) +
         ";\n" + kChartRuntime + "</script>\n";
}

}  // namespace servelab::tune::html
