// The engine twin's speed (issue 4 §5):
//  (1) predicting the study's 1000-prompt ShareGPT run (vLLM -tp 8 baseline): target <= 50 ms;
//  (2) every distinct launch of the study (seed-measurements.json) x its six scenarios: target <= 10 s.
// Reference measured in the same run: metrics::compute_metrics over the predicted ShareGPT outputs (what
// `bench serve` itself spends to summarise the same run). Prints times, the ratio to the reference and to
// the targets, and the speed-up over the real benchmark's measured 72.75 s.
// Reproduce: cmake --build <build> --target sim_bench && <build>/benchmarks/sim_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/paths.h"
#include "metrics/metrics.h"
#include "sim/sim.h"
#include "sim/validate.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  using namespace servelab;
  const sim::Cluster cluster = sim::parse_cluster("8xH200");
  const auto baseline = std::get<engines::EngineConfig>(
      sim::parse_study_launch("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --tokenizer-mode deepseek_v32 "
                              "--reasoning-parser deepseek_v3", {}));
  // (1) best of 5 predictions of sharegpt-1000.
  double best = 1e9;
  sim::Prediction last;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = sim::predict(baseline, cluster, sim::sharegpt_1000(), {});
    best = std::min(best, seconds_since(t0));
    last = std::get<sim::Prediction>(std::move(r));
  }
  double ref = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = metrics::compute_metrics(last.outputs, last.twin.duration_s, {});
    ref = std::min(ref, seconds_since(t0));
    if (m.completed != 1000) return 1;
  }
  std::printf("sharegpt-1000, vLLM -tp 8: predict %.1f ms (target <= 50 ms: %.2fx of budget); "
              "compute_metrics on its outputs %.2f ms (ratio %.1fx); real run 72.75 s -> %.0fx faster than real time\n",
              best * 1e3, best / 0.050, ref * 1e3, best / ref, 72.75 / best);

  // (2) every distinct study launch x six scenarios.
  nlohmann::json j;
  std::ifstream(common::source_dir().parent_path() / "shared/reference/seed-measurements.json") >> j;
  std::set<std::pair<std::string, std::string>> launches;
  for (const auto& e : j) {
    std::string env;
    for (const auto& v : e.value("env", nlohmann::json::array())) env += v.get<std::string>() + " ";
    launches.insert({e.at("command").get<std::string>(), env});
  }
  const char* scenarios[] = {"sharegpt-1000",        "random-128in-4out",     "random-2000in-100out",
                             "random-4000in-200out", "random-32000in-100out", "random-1000in-2000out"};
  int runs = 0, failures = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [cmd, env_line] : launches) {
    std::vector<std::string> env;
    std::string cur;
    for (char c : env_line) {
      if (c == ' ') {
        if (!cur.empty()) env.push_back(cur), cur.clear();
      } else {
        cur += c;
      }
    }
    for (const char* s : scenarios) {
      const auto r = sim::predict_study_entry(cmd, env, s, cluster);
      ++runs;
      failures += std::holds_alternative<sim::Failure>(r);
    }
  }
  const double all = seconds_since(t0);
  std::printf("study: %zu distinct launches x 6 scenarios = %d predictions (%d predicted failures) in %.2f s "
              "(target <= 10 s: %.2fx of budget)\n",
              launches.size(), runs, failures, all, all / 10.0);
  return 0;
}
