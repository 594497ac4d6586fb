// The study's trials as files: trials.csv (one row per scenario result) and trials.json (study_report.h).
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "servelab/tune/load/load.h"
#include "tune/report/study_report.h"

namespace servelab::tune {

std::string trials_csv(const std::vector<TrialRecord>& trials) {
  static const std::vector<std::string> kCols = {"Successful requests",
                                                 "Benchmark duration (s)",
                                                 "Total input tokens",
                                                 "Total generated tokens",
                                                 "Request throughput (req/s)",
                                                 "Request goodput (req/s)",
                                                 "Output token throughput (tok/s)",
                                                 "Total Token throughput (tok/s)",
                                                 "Mean TTFT (ms)",
                                                 "Median TTFT (ms)",
                                                 "P99 TTFT (ms)",
                                                 "Mean TPOT (ms)",
                                                 "Median TPOT (ms)",
                                                 "P99 TPOT (ms)",
                                                 "Mean ITL (ms)",
                                                 "Median ITL (ms)",
                                                 "P99 ITL (ms)"};
  auto q = [](const std::string& s) {
    if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
    std::string o = "\"";
    for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
    return o + "\"";
  };
  // `load`: the load point of a load-sweep / SLO-search trial ("concurrency 16", "2.5 req/s"), else empty.
  std::string out =
      "trial_key,engine,config,phase,repeat,status,reason,predicted,wall_s,command,scenario,load";
  for (const auto& c : kCols) out += "," + q(c);
  out += "\n";
  for (const auto& t : trials) {
    std::string head =
        fmt::format("{},{},{},{},{},{},{},{},{:.3f},{}", q(t.trial_key), q(t.engine), q(t.config_label),
                    q(t.phase), t.repeat, trial_status_name(t.outcome.status), q(t.outcome.reason),
                    t.outcome.predicted ? 1 : 0, t.outcome.wall_s, q(t.shell));
    if (t.outcome.scenarios.empty()) {
      out += head + ",,";
      for (size_t i = 0; i < kCols.size(); ++i) out += ",";
      out += "\n";
    }
    for (const auto& s : t.outcome.scenarios) {
      const auto load = split_load_scenario_id(s.scenario_id);
      out += head + "," + q(s.scenario_id) + "," + (load ? q(load->second.text()) : "");
      for (const auto& c : kCols) {
        auto it = s.metrics.find(c);
        out += it == s.metrics.end() ? "," : fmt::format(",{}", it->second);
      }
      out += "\n";
    }
  }
  return out;
}

std::string trials_json(const std::vector<TrialRecord>& trials) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& t : trials) {
    nlohmann::json j = {{"trial_key", t.trial_key},
                        {"engine", t.engine},
                        {"config_key", t.config_key},
                        {"config", t.config_label},
                        {"phase", t.phase},
                        {"repeat", t.repeat},
                        {"status", trial_status_name(t.outcome.status)},
                        {"reason", t.outcome.reason},
                        {"predicted", t.outcome.predicted},
                        {"engine_reused", t.outcome.engine_reused},
                        {"wall_s", t.outcome.wall_s},
                        {"argv", t.argv},
                        {"env", t.env},
                        {"command", t.shell}};
    nlohmann::json sc = nlohmann::json::object();
    nlohmann::json load = nlohmann::json::object();  // scenario id → its load point (load-sweep trials)
    for (const auto& s : t.outcome.scenarios) {
      sc[s.scenario_id] = s.metrics;
      if (const auto lp = split_load_scenario_id(s.scenario_id))
        load[s.scenario_id] = {
            {"scenario", lp->first},
            {"kind", lp->second.kind == LoadKind::kConcurrency ? "concurrency" : "request_rate"},
            {"value", lp->second.value}};
    }
    j["scenarios"] = sc;
    j["load"] = load;
    arr.push_back(j);
  }
  // An engine's log can put invalid UTF-8 into a reason: replaced (U+FFFD), never a failed report.
  return arr.dump(1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace servelab::tune
