// `servelab compare`: reading bench result files back, the Mann-Whitney U test, and the side-by-side text.
#include "servelab/report/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>

#include "servelab/common/printable.h"
#include "servelab/common/python_json.h"

namespace servelab::report {

namespace {

/// Benchmark keys that must be numbers (or null), with their vLLM console label, in display order.
struct Row {
  const char* key;
  const char* label;
};
constexpr Row kCountRows[] = {
    {"completed", "Successful requests"},
    {"failed", "Failed requests"},
    {"duration", "Benchmark duration (s)"},
    {"total_input_tokens", "Total input tokens"},
    {"total_output_tokens", "Total generated tokens"},
    {"request_throughput", "Request throughput (req/s)"},
    {"request_goodput", "Request goodput (req/s)"},
    {"output_throughput", "Output token throughput (tok/s)"},
    {"total_token_throughput", "Total Token throughput (tok/s)"},
    {"max_output_tokens_per_s", "Peak output token throughput (tok/s)"},
    {"max_concurrent_requests", "Peak concurrent requests"},
};
constexpr Row kLatencyMetrics[] = {{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"itl", "ITL"}, {"e2el", "E2EL"}};

const std::regex& latency_key() {
  static const std::regex re(R"(^(mean|median|std|p([0-9]+(\.[0-9]+)?))_(ttft|tpot|itl|e2el)_ms$)");
  return re;
}

/// Longest key the latency pattern is tried on: std::regex matches recursively, so a 50,000-character key
/// overflowed the stack; the longest real key ("p99.99_ttft_ms" and the like) is far shorter.
constexpr size_t kMaxMetricKeyBytes = 64;

bool is_numeric_key(const std::string& key) {
  for (const auto& r : kCountRows)
    if (key == r.key) return true;
  return key == "num_prompts" || (key.size() <= kMaxMetricKeyBytes && std::regex_match(key, latency_key()));
}

/// A JSON value for a message: its text, bounded and escaped.
std::string shown(const nlohmann::json& v) {
  return common::printable(v.dump());
}

/// Per-request times (s) and benchmark values are durations, counts and rates: never negative.
double non_negative(double x, const std::string& name, const std::string& what) {
  if (!std::isfinite(x) || x < 0)
    throw std::runtime_error(fmt::format("{}: {} is {:.6g}, must be a finite number >= 0", name, what, x));
  return x;
}

double number_at(const nlohmann::json& arr, size_t i, const std::string& name, const char* key) {
  const auto& v = arr[i];
  if (!v.is_number())
    throw std::runtime_error(fmt::format("{}: {}[{}] is not a number: {}", name, key, i, shown(v)));
  return non_negative(v.get<double>(), name, fmt::format("{}[{}]", key, i));
}

const nlohmann::json& array_of(const nlohmann::json& j, const char* key, size_t n, const std::string& name) {
  const auto& a = j.at(key);
  if (!a.is_array()) throw std::runtime_error(fmt::format("{}: '{}' is not an array", name, key));
  if (a.size() != n)
    throw std::runtime_error(fmt::format("{}: '{}' has {} entries, 'ttfts' has {}", name, key, a.size(), n));
  return a;
}

/// The per-request samples of a --save-detailed result (arrays in seconds).
void read_detailed(const nlohmann::json& j, const std::string& name, SavedRun& run) {
  const auto& ttfts = j.at("ttfts");
  if (!ttfts.is_array()) throw std::runtime_error(name + ": 'ttfts' is not an array");
  const size_t n = ttfts.size();
  for (const char* k : {"itls", "output_lens"})
    if (!j.contains(k)) throw std::runtime_error(fmt::format("{}: has 'ttfts' but no '{}'", name, k));
  const auto& itls = array_of(j, "itls", n, name);
  const auto& lens = array_of(j, "output_lens", n, name);
  const nlohmann::json* errors = j.contains("errors") ? &array_of(j, "errors", n, name) : nullptr;
  const nlohmann::json* latencies = j.contains("latencies") ? &array_of(j, "latencies", n, name) : nullptr;
  run.detailed = true;
  for (size_t i = 0; i < n; ++i) {
    const double ttft_s = number_at(ttfts, i, name, "ttfts");
    const bool ok = errors ? (*errors)[i].is_string() && (*errors)[i].get<std::string>().empty() : ttft_s > 0;
    if (!ok) continue;
    if (!itls[i].is_array()) throw std::runtime_error(fmt::format("{}: itls[{}] is not an array", name, i));
    double decode_s = 0;
    for (size_t k = 0; k < itls[i].size(); ++k) {
      const auto& g = itls[i][k];
      if (!g.is_number())
        throw std::runtime_error(fmt::format("{}: itls[{}][{}] is not a number", name, i, k));
      non_negative(g.get<double>(), name, fmt::format("itls[{}][{}]", i, k));
      decode_s += g.get<double>();
      run.itl_ms.push_back(g.get<double>() * 1000.0);
    }
    if (latencies) {
      const double latency_s = number_at(*latencies, i, name, "latencies");
      if (latency_s < ttft_s)
        throw std::runtime_error(fmt::format("{}: latencies[{}] ({:.6g} s) is below ttfts[{}] ({:.6g} s)",
                                             name, i, latency_s, i, ttft_s));
      decode_s = latency_s - ttft_s;
    }
    const double out_len = number_at(lens, i, name, "output_lens");
    run.ttft_ms.push_back(ttft_s * 1000.0);
    if (out_len > 1) run.tpot_ms.push_back(decode_s * 1000.0 / (out_len - 1));
  }
}

std::string value_text(double v) {
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v == std::round(v) && std::abs(v) < 1e15 ? fmt::format("{:.0f}", v) : fmt::format("{:.2f}", v);
}

std::string change_text(double base, double v) {
  if (base == 0 || !std::isfinite(base) || !std::isfinite(v)) return "";
  return fmt::format(" ({:+.1f}%)", (v - base) / base * 100.0);
}

/// Run names longer than this are replaced by [1], [2], ... in the table header (with a legend).
constexpr size_t kMaxHeader = 24;

std::string p_text(double p) {
  return p < 1e-4 ? "p < 0.0001" : fmt::format("p = {:.4f}", p);
}

double median(std::vector<double> xs) {
  std::sort(xs.begin(), xs.end());
  const size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

/// The rows of the table: (label, key, with change %).
struct TableRow {
  std::string label, key;
  bool text = false;
};

std::vector<TableRow> table_rows(const std::vector<SavedRun>& runs) {
  auto any_number = [&](const std::string& k) {
    return std::any_of(runs.begin(), runs.end(), [&](const SavedRun& r) { return r.numbers.count(k) > 0; });
  };
  auto any_text = [&](const std::string& k) {
    return std::any_of(runs.begin(), runs.end(), [&](const SavedRun& r) { return r.texts.count(k) > 0; });
  };
  std::vector<TableRow> rows;
  for (const auto& [k, label] :
       std::vector<std::pair<std::string, std::string>>{{"backend", "Backend"},
                                                        {"model_id", "Model"},
                                                        {"label", "Label"},
                                                        {"date", "Date"},
                                                        {"request_rate", "Request rate (req/s)"},
                                                        {"max_concurrency", "Max request concurrency"}})
    if (any_text(k)) rows.push_back({label, k, true});
  // Other scalar keys whose values differ between the runs (--metadata such as deployment=..., the
  // tokenizer, the endpoint): what tells the columns apart (new-user trial: three runs of different
  // deployments had identical headers).
  std::set<std::string> other_keys;
  for (const auto& r : runs)
    for (const auto& [k, v] : r.other) other_keys.insert(k);
  for (const auto& k : other_keys) {
    auto value_of = [&](const SavedRun& r) {
      auto it = r.other.find(k);
      return it == r.other.end() ? std::string("-") : it->second;
    };
    if (std::any_of(runs.begin(), runs.end(),
                    [&](const SavedRun& r) { return value_of(r) != value_of(runs[0]); }))
      rows.push_back({common::printable(k), "other:" + k, true});
  }
  if (any_number("num_prompts") || any_text("num_prompts"))
    rows.push_back({"Number of prompts", "num_prompts", true});
  for (const auto& r : kCountRows)
    if (any_number(r.key)) rows.push_back({r.label, r.key, false});
  for (const auto& m : kLatencyMetrics) {
    std::vector<std::pair<double, std::string>> pcts;  // percentile keys of this metric, by percentile
    for (const auto& run : runs)
      for (const auto& entry : run.numbers) {
        std::smatch sm;
        if (std::regex_match(entry.first, sm, latency_key()) && sm[4] == m.key && sm[2].matched) {
          const std::pair<double, std::string> p{std::stod(sm[2].str()), sm[2].str()};
          if (std::find(pcts.begin(), pcts.end(), p) == pcts.end()) pcts.push_back(p);
        }
      }
    std::sort(pcts.begin(), pcts.end());
    const std::string key = m.key;
    if (any_number("mean_" + key + "_ms"))
      rows.push_back({fmt::format("Mean {} (ms)", m.label), "mean_" + key + "_ms"});
    if (any_number("median_" + key + "_ms"))
      rows.push_back({fmt::format("Median {} (ms)", m.label), "median_" + key + "_ms"});
    for (const auto& p : pcts)
      rows.push_back({fmt::format("P{} {} (ms)", p.second, m.label), "p" + p.second + "_" + key + "_ms"});
  }
  return rows;
}

std::string cell(const SavedRun& run, const SavedRun& base, const TableRow& row, bool first) {
  if (row.text) {
    if (row.key.rfind("other:", 0) == 0) {
      auto o = run.other.find(row.key.substr(6));
      return o == run.other.end() ? "-" : o->second;
    }
    if (auto t = run.texts.find(row.key); t != run.texts.end()) return t->second;
    auto n = run.numbers.find(row.key);
    return n != run.numbers.end() && n->second ? value_text(*n->second) : "-";
  }
  auto n = run.numbers.find(row.key);
  if (n == run.numbers.end() || !n->second) return "-";
  std::string s = value_text(*n->second);
  if (!first)
    if (auto b = base.numbers.find(row.key); b != base.numbers.end() && b->second)
      s += change_text(*b->second, *n->second);
  return s;
}

void significance(std::ostringstream& out, const std::vector<SavedRun>& runs) {
  const SavedRun& base = runs.front();
  out << fmt::format("\nPer-request latency against {} (Mann-Whitney U, two-sided, {:g}% level):\n",
                     base.name, kAlpha * 100);
  if (!base.detailed) {
    out << fmt::format(
        "  not tested: {} has no per-request samples (bench serve --save-detailed keeps them)\n", base.name);
  } else {
    for (size_t i = 1; i < runs.size(); ++i) {
      const SavedRun& r = runs[i];
      if (!r.detailed) {
        out << fmt::format(
            "  {}: not tested: no per-request samples (bench serve --save-detailed keeps them)\n", r.name);
        continue;
      }
      if (base.interrupted || r.interrupted) {
        out << fmt::format(
            "  {}: not tested: {} was interrupted (its requests are the early part of the schedule, not a "
            "sample of the whole run)\n",
            r.name, base.interrupted ? base.name : r.name);
        continue;
      }
      for (int k = 0; k < 3; ++k) {
        const char* what = k == 0 ? "TTFT" : k == 1 ? "TPOT" : "ITL";
        const auto& a = k == 0 ? base.ttft_ms : k == 1 ? base.tpot_ms : base.itl_ms;
        const auto& b = k == 0 ? r.ttft_ms : k == 1 ? r.tpot_ms : r.itl_ms;
        out << fmt::format("  {} {:<4} ", r.name, what);
        if (a.size() < kMinSamplesForTest || b.size() < kMinSamplesForTest) {
          out << fmt::format("not tested: {} and {} samples (the test needs {} on each side)\n", a.size(),
                             b.size(), kMinSamplesForTest);
          continue;
        }
        const MannWhitney t = mann_whitney_u(a, b);
        const double ma = median(a), mb = median(b);
        out << fmt::format("median {:.2f} -> {:.2f} ms{}, n = {} / {}, z = {:.2f}, {}: {}\n", ma, mb,
                           change_text(ma, mb), a.size(), b.size(), t.z, p_text(t.p_value),
                           t.p_value < kAlpha ? "significant" : "not significant");
      }
    }
  }
  out << "Throughput: one value per run, not tested (a single run has no estimate of its run-to-run noise; "
         "repeat "
         "the runs to test it, see docs/bench.md).\n";
}

/// What is wrong with JSON `text` that nlohmann refused, in words and bounded: its messages carry an
/// internal id ("[json.exception.parse_error.101]") and echo the last token read (a 300-digit number whole).
/// `text` is one line of a JSON Lines file when `one_line` (then only the column is given).
std::string json_problem(const nlohmann::json::exception& e, std::string_view text, bool one_line) {
  if (const auto* p = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
    const size_t at = std::min<size_t>(p->byte > 0 ? p->byte - 1 : 0, text.size());
    const size_t line = 1 + static_cast<size_t>(std::count(
                                text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
    const size_t newline = at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
    const size_t column = newline == std::string_view::npos ? at + 1 : at - newline;
    return one_line ? fmt::format("syntax error at column {}", column)
                    : fmt::format("syntax error at line {}, column {}", line, column);
  }
  if (e.id == 406) return "a number too large for a double";
  return "unreadable JSON";
}

}  // namespace

SavedRun parse_saved_run(const nlohmann::json& j, const std::string& name) {
  if (!j.is_object())
    throw std::runtime_error(name + ": not a JSON object (a bench serve result is one object)");
  if (!j.contains("completed") && !j.contains("request_throughput"))
    throw std::runtime_error(name +
                             ": not a bench serve result (no 'completed' or 'request_throughput' key)");
  SavedRun run;
  run.name = name;
  for (const auto& [raw_key, v] : j.items()) {
    const std::string key = raw_key == "request_goodput:" ? "request_goodput" : raw_key;
    if (key == "request_rate" || key == "max_concurrency") {
      run.texts[key] = v.is_number()   ? value_text(v.get<double>())
                       : v.is_string() ? v.get<std::string>()
                                       : "-";
    } else if (key == "backend" || key == "model_id" || key == "date" || key == "label") {
      if (v.is_string()) run.texts[key] = v.get<std::string>();
    } else if (is_numeric_key(key)) {
      if (v.is_null()) {
        run.numbers[key] = std::nullopt;
      } else if (v.is_number()) {
        run.numbers[key] = non_negative(v.get<double>(), name, "'" + raw_key + "'");
      } else if (v.is_string() && key == "num_prompts") {
        // vLLM writes --metadata over its own keys (result_json.update): such a file is its result as saved
        // (new-user trial: `--metadata num_prompts=abc` made the whole file unreadable here). A benchmark
        // figure that is text stays an error: the comparison rests on it.
        run.texts[key] = common::printable(v.get<std::string>());
        run.caveats.push_back(
            fmt::format("a result whose '{}' is text ({}), not a number (--metadata overwrote it)",
                        common::printable(raw_key), shown(v)));
      } else {
        throw std::runtime_error(fmt::format("{}: '{}' is not a number: {}", name, raw_key, shown(v)));
      }
    } else if ((v.is_string() || v.is_number()) && key.rfind("servelab", 0) != 0) {
      run.other[key] = v.is_string() ? common::printable(v.get<std::string>()) : shown(v);  // --metadata, ...
    }
  }
  if (j.contains("ttfts")) read_detailed(j, name, run);
  if (auto p = j.find("servelab_engine_twin_prediction"); p != j.end() && p->is_boolean() && p->get<bool>())
    run.caveats.push_back("a prediction of the servelab engine twin (sim run), not a measurement");
  if (auto ext = j.find("servelab"); ext != j.end() && ext->is_object()) {
    if (auto inv = ext->find("invalid");
        inv != ext->end() && inv->is_string() && !inv->get<std::string>().empty())
      run.caveats.push_back("marked INVALID by bench serve: " + inv->get<std::string>());
    if (auto it = ext->find("interrupted"); it != ext->end() && it->is_boolean() && it->get<bool>()) {
      run.interrupted = true;
      const auto completed = run.numbers.find("completed"), prompts = run.numbers.find("num_prompts");
      const bool counted = completed != run.numbers.end() && completed->second &&
                           prompts != run.numbers.end() && prompts->second;
      run.caveats.push_back(fmt::format(
          "an interrupted run (stopped by a signal before its schedule ended{}): its figures cover only the "
          "part that ran",
          counted ? fmt::format("; {:g} of {:g} prompts completed", *completed->second, *prompts->second)
                  : ""));
    }
  }
  return run;
}

std::vector<SavedRun> load_saved_runs(const std::filesystem::path& path) {
  const std::string file = path.string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw std::runtime_error("cannot read " + file + ": no such file");
  if (std::filesystem::is_directory(path, ec))
    throw std::runtime_error("cannot read " + file + ": a directory");
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + file);
  // Python's json writes NaN / Infinity for non-finite floats: read as missing figures, with a caveat.
  int python_constants = 0;
  const std::string text = common::python_nonfinite_to_null(ss.str(), &python_constants);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw std::runtime_error(file + ": empty file");
  auto noted = [&](SavedRun run) {
    if (python_constants > 0)
      run.caveats.push_back(fmt::format(
          "{} NaN / Infinity value{} in the file (Python's json writes them; JSON has none): read as missing",
          python_constants, python_constants == 1 ? "" : "s"));
    return run;
  };
  // Errors name the file as given; the runs are named by the file name (the column header).
  const std::string name = path.filename().string();
  try {
    SavedRun run = noted(parse_saved_run(nlohmann::json::parse(text), file));
    run.name = name;
    return {run};
  } catch (const nlohmann::json::exception& whole) {  // parse_error, or out_of_range for a 400-digit number
    // JSON Lines: one result object per line (--append-result).
    std::vector<nlohmann::json> objects;
    std::istringstream lines(text);
    std::string line;
    for (int no = 1; std::getline(lines, line); ++no) {
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      try {
        objects.push_back(nlohmann::json::parse(line));
      } catch (const nlohmann::json::exception& e) {
        if (no == 1)
          throw std::runtime_error(fmt::format("{}: not JSON: {}", file, json_problem(whole, text, false)));
        throw std::runtime_error(fmt::format("{}:{}: not JSON: {}", file, no, json_problem(e, line, true)));
      }
    }
    std::vector<SavedRun> runs;
    for (size_t i = 0; i < objects.size(); ++i) {
      const std::string suffix = objects.size() > 1 ? fmt::format("#{}", i + 1) : "";
      runs.push_back(noted(parse_saved_run(objects[i], file + suffix)));
      runs.back().name = name + suffix;
    }
    return runs;
  }
}

MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  MannWhitney r;
  r.n1 = a.size();
  r.n2 = b.size();
  if (a.empty() || b.empty()) return r;
  std::vector<std::pair<double, bool>> all;  // (value, from a)
  all.reserve(a.size() + b.size());
  for (double x : a) all.push_back({x, true});
  for (double x : b) all.push_back({x, false});
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  const double n = static_cast<double>(all.size());
  double rank_sum_a = 0, ties = 0;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i),
                 rank = (static_cast<double>(i + j) + 1) / 2;  // 1-based average
    ties += t * t * t - t;
    for (size_t k = i; k < j; ++k)
      if (all[k].second) rank_sum_a += rank;
    i = j;
  }
  const double n1 = static_cast<double>(r.n1), n2 = static_cast<double>(r.n2);
  r.u1 = rank_sum_a - n1 * (n1 + 1) / 2;
  const double var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (var <= 0) return r;  // every value equal
  const double diff = r.u1 - n1 * n2 / 2;
  r.z = diff == 0 ? 0.0 : (diff > 0 ? 1 : -1) * (std::abs(diff) - 0.5) / std::sqrt(var);
  r.p_value = std::min(1.0, std::erfc((std::abs(diff) - 0.5) / std::sqrt(var) / std::sqrt(2.0)));
  return r;
}

std::string format_comparison(const std::vector<SavedRun>& runs) {
  if (runs.size() < 2) throw std::invalid_argument("compare needs at least two runs");
  const auto rows = table_rows(runs);
  std::vector<std::vector<std::string>> cells(rows.size());
  size_t label_w = 6;
  std::vector<size_t> col_w(runs.size());
  for (size_t c = 0; c < runs.size(); ++c) col_w[c] = runs[c].name.size();
  for (size_t i = 0; i < rows.size(); ++i) {
    label_w = std::max(label_w, rows[i].label.size());
    for (size_t c = 0; c < runs.size(); ++c) {
      cells[i].push_back(cell(runs[c], runs.front(), rows[i], c == 0));
      col_w[c] = std::max(col_w[c], cells[i].back().size());
    }
  }
  // Long run names (paths, JSON Lines runs) become [1], [2], ... with a legend above the table.
  const bool legend =
      std::any_of(runs.begin(), runs.end(), [](const SavedRun& r) { return r.name.size() > kMaxHeader; });
  std::ostringstream out;
  // Runs that are not plain measurements (a twin prediction, an invalid run): said before the table.
  for (const auto& r : runs)
    for (const auto& c : r.caveats) out << "WARNING: " << r.name << " is " << c << "\n";
  std::vector<std::string> heads;
  for (size_t c = 0; c < runs.size(); ++c) {
    heads.push_back(legend ? fmt::format("[{}]", c + 1) : runs[c].name);
    if (legend) out << fmt::format("[{}] {}\n", c + 1, runs[c].name);
    if (legend) col_w[c] = heads.back().size();
  }
  for (size_t i = 0; legend && i < rows.size(); ++i)
    for (size_t c = 0; c < runs.size(); ++c) col_w[c] = std::max(col_w[c], cells[i][c].size());
  if (legend) out << "\n";
  out << fmt::format("{:<{}}", "metric", label_w);
  for (size_t c = 0; c < runs.size(); ++c) out << fmt::format("  {:>{}}", heads[c], col_w[c]);
  out << "\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    out << fmt::format("{:<{}}", rows[i].label, label_w);
    for (size_t c = 0; c < runs.size(); ++c) out << fmt::format("  {:>{}}", cells[i][c], col_w[c]);
    out << "\n";
  }
  out << fmt::format("(change in % against {})\n", heads.front());
  significance(out, runs);
  return out.str();
}

}  // namespace servelab::report
