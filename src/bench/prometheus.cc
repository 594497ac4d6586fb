#include "servelab/bench/prometheus.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace servelab::bench::prometheus {
namespace {

constexpr std::size_t kKeptSkipped = 20;

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}
bool name_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == ':';
}
bool name_char(char c) {
  return name_start(c) || std::isdigit(static_cast<unsigned char>(c));
}
bool label_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool label_char(char c) {
  return label_start(c) || std::isdigit(static_cast<unsigned char>(c));
}

std::string_view trim_left(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = trim_left(s);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

bool equals_nocase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

// Reads a metric name at the front of `s`; empty when there is none.
std::string_view take_name(std::string_view& s, bool (*start)(char), bool (*rest)(char)) {
  if (s.empty() || !start(s.front())) return {};
  std::size_t n = 1;
  while (n < s.size() && rest(s[n])) ++n;
  std::string_view name = s.substr(0, n);
  s.remove_prefix(n);
  return name;
}

// Splits off the next blank-separated token.
std::string_view take_token(std::string_view& s) {
  s = trim_left(s);
  std::size_t n = 0;
  while (n < s.size() && !is_blank(s[n])) ++n;
  std::string_view t = s.substr(0, n);
  s.remove_prefix(n);
  return t;
}

// HELP text: `\\` and `\n` are escapes; any other backslash stays as written (expfmt).
std::string unescape_help(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
      out.push_back(s[i + 1] == 'n' ? '\n' : '\\');
      ++i;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

std::optional<MetricType> type_named(std::string_view t) {
  if (t == "counter") return MetricType::kCounter;
  if (t == "gauge") return MetricType::kGauge;
  if (t == "histogram") return MetricType::kHistogram;
  if (t == "summary") return MetricType::kSummary;
  if (t == "untyped" || t == "unknown") return MetricType::kUntyped;  // "unknown": OpenMetrics' spelling
  return std::nullopt;
}

// A `#` line. Returns an error text, or "" when the line is fine (HELP/TYPE recorded, or a comment).
std::string comment_line(std::string_view rest, Exposition& out) {
  rest = trim_left(rest.substr(1));  // past '#'
  std::string_view keyword = take_token(rest);
  if (keyword != "HELP" && keyword != "TYPE") return "";  // a comment (also OpenMetrics' "# EOF")
  rest = trim_left(rest);
  std::string_view name = take_name(rest, name_start, name_char);
  if (name.empty()) return "# " + std::string(keyword) + " without a valid metric name";
  if (!rest.empty() && !is_blank(rest.front()))
    return "invalid character in the metric name of # " + std::string(keyword);
  Family& f = out.families[std::string(name)];
  if (keyword == "HELP") {
    if (!rest.empty()) rest.remove_prefix(1);  // the one blank separating name and text
    f.help = unescape_help(rest);
    return "";
  }
  std::string_view type = trim(rest);
  auto t = type_named(type);
  if (!t) return "unknown metric type '" + std::string(type) + "' for " + std::string(name);
  if (f.type != MetricType::kUntyped && f.type != *t) return "second # TYPE line for " + std::string(name);
  f.type = *t;
  return "";
}

// The `{...}` label set at the front of `s` (past the '{'). Returns an error text or "".
std::string take_labels(std::string_view& s, Sample& sample) {
  for (;;) {
    s = trim_left(s);
    if (!s.empty() && s.front() == '}') {
      s.remove_prefix(1);
      return "";
    }
    std::string_view key = take_name(s, label_start, label_char);
    if (key.empty()) return "invalid label name";
    s = trim_left(s);
    if (s.empty() || s.front() != '=') return "expected '=' after label " + std::string(key);
    s = trim_left(s.substr(1));
    if (s.empty() || s.front() != '"') return "expected '\"' to open the value of label " + std::string(key);
    s.remove_prefix(1);
    std::string value;
    bool closed = false;
    while (!s.empty()) {
      const char c = s.front();
      s.remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c != '\\') {
        value.push_back(c);
        continue;
      }
      if (s.empty()) break;
      const char e = s.front();
      s.remove_prefix(1);
      if (e == '\\' || e == '"')
        value.push_back(e);
      else if (e == 'n')
        value.push_back('\n');
      else
        return "invalid escape '\\" + std::string(1, e) + "' in the value of label " + std::string(key);
    }
    if (!closed) return "unterminated value of label " + std::string(key);
    for (const auto& [k, v] : sample.labels)
      if (k == key) return "duplicate label " + std::string(key);
    sample.labels.emplace_back(std::string(key), std::move(value));
    s = trim_left(s);
    if (!s.empty() && s.front() == ',') {
      s.remove_prefix(1);
      continue;
    }
    if (!s.empty() && s.front() == '}') continue;
    return "expected ',' or '}' after the value of label " + std::string(key);
  }
}

// A sample line. Returns an error text or "" (sample appended).
std::string sample_line(std::string_view s, Exposition& out) {
  Sample sample;
  std::string_view name = take_name(s, name_start, name_char);
  if (name.empty()) return "invalid metric name";
  sample.name = std::string(name);
  if (!s.empty() && !is_blank(s.front()) && s.front() != '{') return "invalid character in the metric name";
  s = trim_left(s);
  if (!s.empty() && s.front() == '{') {
    s.remove_prefix(1);
    if (std::string err = take_labels(s, sample); !err.empty()) return err;
  }
  std::string_view value = take_token(s);
  if (value.empty()) return "missing value";
  auto v = parse_value(value);
  if (!v) return "invalid value '" + std::string(value) + "'";
  sample.value = *v;
  std::string_view ts = take_token(s);
  if (!ts.empty() && ts.front() != '#') {
    std::int64_t t = 0;
    auto [p, ec] = std::from_chars(ts.data(), ts.data() + ts.size(), t);
    if (ec != std::errc() || p != ts.data() + ts.size()) return "invalid timestamp '" + std::string(ts) + "'";
    sample.timestamp_ms = t;
    ts = take_token(s);
  }
  // OpenMetrics exemplar (`# {trace_id="..."} 1.0`) ignored; anything else is not the format.
  if (!ts.empty() && ts.front() != '#') return "unexpected text after the value: '" + std::string(ts) + "'";
  out.samples.push_back(std::move(sample));
  return "";
}

}  // namespace

const std::string* Sample::label(std::string_view key) const {
  for (const auto& [k, v] : labels)
    if (k == key) return &v;
  return nullptr;
}

std::optional<double> parse_value(std::string_view t) {
  if (t.empty()) return std::nullopt;
  std::string_view body = t;
  bool negative = false;
  if (body.front() == '+' || body.front() == '-') {
    negative = body.front() == '-';
    body.remove_prefix(1);
  }
  if (equals_nocase(body, "inf") || equals_nocase(body, "infinity"))
    return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  if (equals_nocase(body, "nan")) return std::numeric_limits<double>::quiet_NaN();
  if (body.empty() || body.front() == '+' || body.front() == '-') return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v, std::chars_format::general);
  if (ec == std::errc::result_out_of_range) {
    // Go ParseFloat returns ±Inf for an overflowing value (with an error expfmt treats as fatal): a number,
    // but not one servelab can use. Refuse it rather than guess.
    return std::nullopt;
  }
  if (ec != std::errc() || p != body.data() + body.size()) return std::nullopt;
  return negative ? -v : v;
}

MetricType Exposition::type_of(std::string_view name) const {
  if (auto it = families.find(name); it != families.end() && it->second.type != MetricType::kUntyped)
    return it->second.type;
  struct Suffix {
    std::string_view text;
    bool counter, histogram;
  };
  static constexpr Suffix kSuffixes[] = {{"_total", true, false},
                                         {"_created", true, true},
                                         {"_bucket", false, true},
                                         {"_sum", false, true},
                                         {"_count", false, true}};
  for (const auto& sfx : kSuffixes) {
    if (name.size() <= sfx.text.size() || name.substr(name.size() - sfx.text.size()) != sfx.text) continue;
    const std::string_view base = name.substr(0, name.size() - sfx.text.size());
    auto it = families.find(base);
    if (it == families.end()) continue;
    const MetricType t = it->second.type;
    if (t == MetricType::kCounter && sfx.counter) return t;
    if ((t == MetricType::kHistogram || t == MetricType::kSummary) && sfx.histogram) return t;
  }
  return MetricType::kUntyped;
}

Exposition parse(std::string_view text) {
  Exposition out;
  std::size_t line_no = 0;
  while (!text.empty()) {
    const std::size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = trim_left(line);
    if (trim(line).empty()) continue;
    std::string err = line.front() == '#' ? comment_line(line, out) : sample_line(trim(line), out);
    if (err.empty()) continue;
    ++out.skipped_count;
    if (out.skipped.size() < kKeptSkipped) out.skipped.push_back({line_no, std::move(err)});
  }
  return out;
}

}  // namespace servelab::bench::prometheus
