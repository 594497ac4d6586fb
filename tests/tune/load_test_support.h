// Shared by the load-dimension tests (load_test.cc, load_objectives_test.cc): the small study with extra
// sections, a fake engine with a hand-built latency curve, and the SLO section they use.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "servelab/tune/load/load.h"
#include "servelab/tune/tune.h"
#include "test_study.h"

namespace servelab::tune::testing {

inline Study small(const std::string& extra) {
  return parse_study(std::string(kSmallStudy) + extra, "small.toml", "/data");
}

/// A fake engine whose P99 TTFT is `ttft_ms_of(config key, load)` and whose output tok/s is 10 × load
/// (load = the request rate or the concurrency of the scenario's args, 1 when neither).
inline TrialRunner curve_runner(std::function<double(const std::string&, double)> ttft_ms_of, int* launches,
                                std::vector<TrialRequest>* seen = nullptr) {
  return [=](const TrialRequest& req) {
    ++*launches;
    if (seen) seen->push_back(req);
    TrialOutcome out;
    for (const auto& sc : req.scenarios) {
      double load = arg_value(sc.args, "--request-rate");
      if (load == 0) load = arg_value(sc.args, "--max-concurrency");
      if (load == 0) load = 1;
      ScenarioResult r;
      r.scenario_id = sc.id;
      r.metrics["P99 TTFT (ms)"] = ttft_ms_of(req.config_key, load);
      r.metrics["Mean TPOT (ms)"] = 10;
      r.metrics["Output token throughput (tok/s)"] = 10 * load;
      r.metrics["Total Token throughput (tok/s)"] = 30 * load;
      r.metrics["Request throughput (req/s)"] = load;
      r.metrics["Request goodput (req/s)"] = 0.9 * load;
      r.metrics["Successful requests"] = arg_value(sc.args, "--num-prompts");
      r.metrics["Total generated tokens"] = 1000;
      out.scenarios.push_back(r);
    }
    return out;
  };
}

inline std::vector<double> probe_values(const SloResult& r) {
  std::vector<double> v;
  for (const auto& p : r.probes) v.push_back(p.value);
  return v;
}

inline const char* kSlo = "\n[slo]\np99_ttft_ms = 2000\nmean_tpot_ms = 50\ntolerance_pct = 5\n";

}  // namespace servelab::tune::testing
