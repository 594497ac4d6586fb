#include "sim/validate.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include "engines/engines.h"
#include "metrics/metrics.h"

namespace servelab::sim {
namespace {

std::vector<std::string> whitespace_split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += ch;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

double ape(double predicted, double measured) { return 100.0 * std::fabs(predicted - measured) / measured; }

// Distinctive phrases that identify a failure's cause; two failure texts have the same reason when they are
// equal or share one of these.
bool same_reason(const std::string& measured, const std::string& predicted) {
  if (measured == predicted) return true;
  static const char* kKeys[] = {"log-sum-exp", "DeepGEMM", "out of memory", "KV cache memory",
                                "sparse not supported"};
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  const std::string m = lower(measured), p = lower(predicted);
  for (const char* k : kKeys) {
    const std::string key = lower(k);
    if (m.find(key) != std::string::npos && p.find(key) != std::string::npos) return true;
  }
  // The study records vLLM's OOM as "out of memory"; the twin prints vLLM's own KV-cache message.
  if (m.find("memory") != std::string::npos && p.find("kv cache memory") != std::string::npos) return true;
  return false;
}

}  // namespace

std::variant<engines::EngineConfig, Failure> parse_study_launch(const std::string& command,
                                                                const std::vector<std::string>& env) {
  try {
    const auto env_map = engines::parse_env_assignments(env);
    try {
      return engines::parse_launch_command(engines::split_command_line(command), env_map);
    } catch (const std::exception&) {
      // Study commands carry JSON values unquoted (`--speculative-config {"method":"mtp",...}`): shell
      // word splitting would strip the JSON's quotes, so retry with plain whitespace splitting.
      return engines::parse_launch_command(whitespace_split(command), env_map);
    }
  } catch (const std::exception& e) {
    return Failure{e.what()};
  }
}

PredictResult predict_study_entry(const std::string& command, const std::vector<std::string>& env,
                                  const std::string& scenario, const Cluster& cluster) {
  auto parsed = parse_study_launch(command, env);
  if (auto* f = std::get_if<Failure>(&parsed)) return *f;
  const auto workload = scenario_workload(scenario);
  return predict(std::get<engines::EngineConfig>(parsed), cluster, workload, WorkloadOptions{});
}

HeadlineMetrics headline(const Prediction& p) {
  const auto m = metrics::compute_metrics(p.outputs, std::max(p.twin.duration_s, 1e-9), metrics::MetricsOptions{});
  HeadlineMetrics h;
  h.total_tok_s = m.total_token_throughput;
  h.output_tok_s = m.output_throughput;
  h.mean_ttft_ms = m.ttft.mean_ms;
  h.mean_tpot_ms = m.tpot.mean_ms;
  h.duration_s = m.duration_s;
  h.completed = m.completed;
  return h;
}

ValidationReport validate(const std::filesystem::path& path, const Cluster& cluster) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot open measurements file " + path.string());
  nlohmann::json j;
  try {
    in >> j;
  } catch (const std::exception& e) {
    throw std::runtime_error("measurements file " + path.string() + ": invalid JSON: " + e.what());
  }
  if (!j.is_array()) throw std::runtime_error("measurements file " + path.string() + ": top level is not an array");
  ValidationReport rep;
  double s_total = 0, s_out = 0, s_ttft = 0, s_tpot = 0;
  for (std::size_t i = 0; i < j.size(); ++i) {
    const auto& e = j[i];
    ValidationRow row;
    try {
      row.engine = e.at("engine").get<std::string>();
      row.config = e.at("config").get<std::string>();
      row.scenario = e.at("scenario").get<std::string>();
      row.command = e.at("command").get<std::string>();
      for (const auto& v : e.value("env", nlohmann::json::array())) row.env.push_back(v.get<std::string>());
    } catch (const std::exception& ex) {
      throw std::runtime_error(fmt::format("measurements file {}: entry [{}]: {}", path.string(), i, ex.what()));
    }
    if (e.contains("failure")) row.measured_failure = e.at("failure").get<std::string>();
    if (e.contains("metrics") && e.at("metrics").is_string()) row.withheld = true;
    if (e.contains("metrics") && e.at("metrics").is_object()) {
      const auto& m = e.at("metrics");
      HeadlineMetrics h;
      h.total_tok_s = m.at("Total Token throughput (tok/s)").get<double>();
      h.output_tok_s = m.at("Output token throughput (tok/s)").get<double>();
      h.mean_ttft_ms = m.at("Mean TTFT (ms)").get<double>();
      h.mean_tpot_ms = m.at("Mean TPOT (ms)").get<double>();
      h.duration_s = m.at("Benchmark duration (s)").get<double>();
      h.completed = static_cast<int>(m.at("Successful requests").get<double>());
      row.measured = h;
    }
    const auto r = predict_study_entry(row.command, row.env, row.scenario, cluster);
    if (const auto* f = std::get_if<Failure>(&r)) {
      row.predicted_failure = f->reason;
    } else {
      const auto& p = std::get<Prediction>(r);
      row.predicted = headline(p);
      row.twin = p.twin;
    }
    if (row.measured_failure) {
      ++rep.failures_released;
      if (row.predicted_failure) {
        ++rep.failures_reproduced;
        row.failure_same_reason = same_reason(*row.measured_failure, *row.predicted_failure);
        rep.failures_same_reason += row.failure_same_reason;
      }
    }
    if (row.measured && row.predicted && row.scenario == "sharegpt-1000") {
      ++rep.compared;
      s_total += ape(row.predicted->total_tok_s, row.measured->total_tok_s);
      s_out += ape(row.predicted->output_tok_s, row.measured->output_tok_s);
      s_ttft += ape(row.predicted->mean_ttft_ms, row.measured->mean_ttft_ms);
      s_tpot += ape(row.predicted->mean_tpot_ms, row.measured->mean_tpot_ms);
    }
    rep.rows.push_back(std::move(row));
  }
  if (rep.compared > 0) {
    rep.mape_total_tok_s = s_total / rep.compared;
    rep.mape_output_tok_s = s_out / rep.compared;
    rep.mape_ttft = s_ttft / rep.compared;
    rep.mape_tpot = s_tpot / rep.compared;
  }
  // Winner and engine order by the best total throughput per engine (released ShareGPT rows only; a
  // config whose measurement is released counts with its measured and its predicted value).
  std::map<std::string, double> best_m, best_p;
  double top_m = -1, top_p = -1;
  for (const auto& row : rep.rows) {
    if (!(row.measured && row.predicted && row.scenario == "sharegpt-1000")) continue;
    best_m[row.engine] = std::max(best_m[row.engine], row.measured->total_tok_s);
    best_p[row.engine] = std::max(best_p[row.engine], row.predicted->total_tok_s);
    if (row.measured->total_tok_s > top_m) top_m = row.measured->total_tok_s, rep.measured_winner = row.engine + "/" + row.config;
    if (row.predicted->total_tok_s > top_p) top_p = row.predicted->total_tok_s, rep.predicted_winner = row.engine + "/" + row.config;
  }
  auto order = [](const std::map<std::string, double>& best) {
    std::vector<std::pair<double, std::string>> v;
    for (const auto& [k, x] : best) v.push_back({x, k});
    std::sort(v.rbegin(), v.rend());
    std::string s;
    for (const auto& [x, k] : v) s += (s.empty() ? "" : " > ") + k;
    return s;
  };
  rep.measured_engine_order = order(best_m);
  rep.predicted_engine_order = order(best_p);
  rep.same_engine_order = rep.measured_engine_order == rep.predicted_engine_order;
  rep.same_winner = !rep.measured_winner.empty() && rep.measured_winner == rep.predicted_winner;
  return rep;
}

std::string format_validation(const ValidationReport& rep) {
  std::string s;
  s += "servelab sim validate: the engine twin against the reference study's released measurements\n";
  s += "(measured / predicted / error; withheld measurements show the prediction only)\n\n";
  s += fmt::format("{:<7} {:<38} {:<22} {:>21} {:>21} {:>23} {:>21}\n", "engine", "config", "scenario",
                   "total tok/s", "output tok/s", "mean TTFT ms", "mean TPOT ms");
  for (const auto& r : rep.rows) {
    s += fmt::format("{:<7} {:<38} {:<22} ", r.engine, r.config, r.scenario);
    if (r.measured_failure || (r.predicted_failure && !r.withheld)) {
      s += fmt::format("FAILURE {}\n", r.measured_failure && r.predicted_failure
                                           ? (r.failure_same_reason ? "reproduced, same reason" : "reproduced, other reason")
                                       : r.measured_failure ? "NOT reproduced (twin predicts it runs)"
                                                            : "predicted but the measurement ran");
      if (r.measured_failure) s += fmt::format("        measured:  {}\n", *r.measured_failure);
      if (r.predicted_failure) s += fmt::format("        predicted: {}\n", *r.predicted_failure);
      continue;
    }
    if (r.withheld) {
      if (r.predicted_failure) {
        s += fmt::format("withheld; predicted failure: {}\n", *r.predicted_failure);
      } else {
        s += fmt::format("withheld; predicted {:.0f} tok/s, {:.0f} output tok/s, TTFT {:.0f} ms, TPOT {:.1f} ms\n",
                         r.predicted->total_tok_s, r.predicted->output_tok_s, r.predicted->mean_ttft_ms,
                         r.predicted->mean_tpot_ms);
      }
      continue;
    }
    const auto& m = *r.measured;
    const auto& p = *r.predicted;
    auto cell = [](double a, double b, int prec) {
      return fmt::format("{:.{}f}/{:.{}f} {:+4.0f}%", a, prec, b, prec, 100.0 * (b - a) / a);
    };
    s += fmt::format("{:>21} {:>21} {:>23} {:>21}\n", cell(m.total_tok_s, p.total_tok_s, 0),
                     cell(m.output_tok_s, p.output_tok_s, 0), cell(m.mean_ttft_ms, p.mean_ttft_ms, 0),
                     cell(m.mean_tpot_ms, p.mean_tpot_ms, 0));
  }
  s += fmt::format("\nMAPE over {} released ShareGPT runs: total tok/s {:.1f}% (target <= 10%), output tok/s "
                   "{:.1f}%, mean TTFT {:.1f}% (target <= 25%), mean TPOT {:.1f}% (target <= 25%)\n",
                   rep.compared, rep.mape_total_tok_s, rep.mape_output_tok_s, rep.mape_ttft, rep.mape_tpot);
  s += fmt::format("Failures: {} released, {} reproduced, {} with the same reason\n", rep.failures_released,
                   rep.failures_reproduced, rep.failures_same_reason);
  s += fmt::format("Winner: measured {}, predicted {} ({})\n", rep.measured_winner, rep.predicted_winner,
                   rep.same_winner ? "same" : "DIFFERENT");
  s += fmt::format("Engine order: measured {}, predicted {} ({})\n", rep.measured_engine_order,
                   rep.predicted_engine_order, rep.same_engine_order ? "same" : "DIFFERENT");
  return s;
}

}  // namespace servelab::sim
