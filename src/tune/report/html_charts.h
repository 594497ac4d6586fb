// servelab/tune (private to the HTML report): small, reusable chart builders on Chart.js, plus the HTML
// escaping the report uses. A chart is a plain struct filled in C++; ChartSet::add turns it into a canvas
// for the page and a JSON spec that the page's small runtime (html_charts.cc, kChartRuntime) draws with
// Chart.js after the library (inlined, no network) has loaded.
//
// Adding a chart to the report takes a few lines (study_html.cc):
//
//   html::LineChart c;                       // e.g. latency against load, one series per configuration
//   c.title = "P99 TTFT against concurrency";
//   c.x_title = "concurrency (requests in flight)";
//   c.y_title = "P99 TTFT (ms)";
//   c.log_x = true;                          // concurrency 1 … 1024
//   for (const auto& cfg : curves) c.series.push_back({cfg.label, {{1, 80.5}, {4, 95.0}, ...}});
//   page << charts.add(c);                   // the <div><canvas></div> goes where the chart should appear
//
//   html::ScatterChart p;                    // e.g. the Pareto front, recommended point marked
//   p.title = "tokens/s/GPU against tokens/s/user"; p.x_title = "tok/s per user"; p.y_title = "tok/s per
//   GPU"; p.series.push_back({"vllm", points});    // Point{x, y, label}: label is the tooltip p.front =
//   front_points; p.front_name = "Pareto front"; p.marked = html::Point{x, y, "recommended: ..."};
//   p.marked_name = "recommended"; page << charts.add(p);
//
// and once, at the end of the page, `page << charts.script(chart_js)`. Every axis has a title (with its
// unit); every point can carry a tooltip label. The browser test (tests/tune/report_browser_test.mjs) checks
// that every canvas holds a chart with data points, so a new chart is covered without a new test.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace servelab::tune::html {

/// HTML-escapes & < > " (text and attribute values).
std::string esc(const std::string& s);

/// One point; `label` is shown in its tooltip (may be empty).
struct Point {
  double x = 0.0, y = 0.0;
  std::string label;
};

/// How a line is drawn: the statistics of one configuration share its colour and differ by dash
/// (p50 solid, p99 dashed, mean dotted).
enum class Dash { kSolid, kDashed, kDotted };

/// A named series of points (drawn in the given order).
struct Series {
  std::string name;
  std::vector<Point> points;
  /// What the colour stands for (ChartSet::colour): an engine name ("vllm") or a configuration
  /// ("vllm max_running_requests=128"); empty = `name`. Series of one key have one colour on every chart.
  std::string key = {};
  Dash dash = Dash::kSolid;
};

/// A limit drawn as a grey dashed line across the chart: horizontal at y = `value` (an SLO on a latency
/// axis), or vertical at x = `value` (an SLO on a CDF's latency axis).
struct Threshold {
  double value = 0.0;
  std::string label;  ///< legend entry, e.g. "SLO: P99 TTFT ≤ 2000 ms"
  bool vertical = false;
};

/// Lines through named series of (x, y) points, x numeric (linear or log axis).
struct LineChart {
  std::string title, x_title, y_title;  ///< axis titles carry the unit, e.g. "TTFT (ms)"
  std::vector<Series> series;
  bool log_x = false;
  bool step = false;  ///< draw as a step function (a CDF)
  std::vector<Threshold> thresholds;
};

/// Points of named series, an optional front line through `front`, and one marked point (a larger star).
struct ScatterChart {
  std::string title, x_title, y_title;
  std::vector<Series> series;
  std::vector<Point> front;
  std::string front_name = "front";
  std::optional<Point> marked;
  std::string marked_name = "marked";
};

/// One bar. A bar without a value is a failure: drawn as a cross at zero in kFailureColour (no engine or
/// configuration has it) with `failure` (its class, e.g. "oom") in its tooltip and `tooltip` (the reason).
struct Bar {
  std::string label;  ///< category tick (short: "#12")
  std::string group;  ///< legend group and colour key (ChartSet::colour): the engine or the configuration
  std::optional<double> value;
  std::string failure;
  std::string tooltip;  ///< extra tooltip line (config, reason)
};

/// Bars of one value per category, coloured by group, failures marked. More bars than `page_size` are
/// paged: the chart shows `page_size` labelled ticks at a time, with buttons to the previous / next page
/// (a few hundred ticks on one axis cannot be read).
struct BarChart {
  std::string title, x_title, y_title;
  std::vector<Bar> bars;
  size_t page_size = 40;
  std::string page_unit = "bars";  ///< what the pager counts: "trials 41–80 of 491"
  std::string failure_name =
      "failed trial (class and reason in the tooltip)";  ///< legend of the failure marks
};

/// The colour of failure marks: black, which no engine or configuration colour is.
inline constexpr const char* kFailureColour = "#000000";
/// The colour of threshold lines (Threshold): grey, which no engine or configuration colour is.
inline constexpr const char* kThresholdColour = "#666666";

/// The charts of one page. Thread-safety: none (build one per page).
class ChartSet {
 public:
  /// Adds a chart; returns its HTML (a sized <canvas>) to place where the chart should appear.
  std::string add(const LineChart& chart);
  std::string add(const ScatterChart& chart);
  std::string add(const BarChart& chart);
  /// Number of charts added.
  size_t size() const { return specs_.size(); }
  /// The colour ("#rrggbb") of `key` on every chart of the page: an engine's own (vllm blue, sglang red,
  /// trtllm green), else the next unused colour of a palette disjoint from the engines', kFailureColour and
  /// kThresholdColour, kept for the key once given (reused only past the palette's 16 colours).
  std::string colour(const std::string& key);
  /// The <script> elements: `chart_js` (the Chart.js UMD build, inlined), the specs (their text through
  /// common::redact_text: labels quote configs and failure reasons) and the runtime that draws them. "" when
  /// no chart was added. `chart_js` must not be empty.
  std::string script(const std::string& chart_js) const;

 private:
  std::string canvas(nlohmann::json spec);
  nlohmann::json series_json(const std::vector<Series>& series);
  nlohmann::json specs_ = nlohmann::json::array();
  std::map<std::string, std::string> colours_;  ///< key -> colour given (engines excepted)
};

/// JSON text made safe inside a <script> element: every "<" (only possible inside a JSON string) becomes
/// "\u003c", which JavaScript reads as the same string. Neither "</script" nor "<!--" (which, followed by
/// "<script", would make the HTML parser swallow the rest of the page) can then occur in the element.
std::string script_safe_json(std::string text);

}  // namespace servelab::tune::html
