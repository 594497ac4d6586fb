// A small study and a deterministic fake runner shared by the tune tests.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"

namespace servelab::tune::testing {

/// The SL_CHARTS array a report.html page draws (its chart specs), or null when the page has none.
inline nlohmann::json chart_specs(const std::string& page) {
  const std::string start = "const SL_CHARTS = ";
  const size_t a = page.find(start);
  if (a == std::string::npos) return nullptr;
  const size_t b = page.find(";\n", a);
  return nlohmann::json::parse(page.substr(a + start.size(), b - a - start.size()));
}

/// The value of `flag` in a scenario's bench arguments (0 when absent).
inline double arg_value(const std::vector<std::string>& args, const std::string& flag) {
  for (size_t i = 0; i + 1 < args.size(); ++i)
    if (args[i] == flag) return std::stod(args[i + 1]);
  return 0;
}

/// What a twin-like runner reports for `sc` run at `rate` req/s: P99 TTFT = `ms_per_req_s` x rate; every
/// request meets the run's own --goodput TTFT bound when the P99 does, half of them otherwise; error bands
/// of +-20% TTFT, +-10% TPOT and +-5% tok/s (the twin's goodput band is propagated from them).
inline ScenarioResult twin_like_slo_result(const Scenario& sc, double rate, double ms_per_req_s) {
  double bound = 1e9;
  for (size_t i = 0; i + 1 < sc.args.size(); ++i)
    if (sc.args[i] == "--goodput" && sc.args[i + 1].rfind("ttft:", 0) == 0)
      bound = std::stod(sc.args[i + 1].substr(5));
  ScenarioResult r;
  r.scenario_id = sc.id;
  r.metrics["P99 TTFT (ms)"] = ms_per_req_s * rate;
  r.metrics["Request throughput (req/s)"] = rate;
  r.metrics["Request goodput (req/s)"] = ms_per_req_s * rate <= bound ? rate : 0.5 * rate;
  r.metrics["Total Token throughput (tok/s)"] = 300 * rate;
  r.metrics["Successful requests"] = arg_value(sc.args, "--num-prompts");
  r.metrics["Total generated tokens"] = 1000;
  r.metrics[kBandTtftMetric] = 20;
  r.metrics[kBandTpotMetric] = 10;
  r.metrics[kBandTokSMetric] = 5;
  return r;
}

/// Two engines (a: vLLM-like, b: SGLang-like), three knobs, two scenarios; 8 GPUs.
inline const char* kSmallStudy = R"toml(
[study]
name = "small"
goal = "test study"
target = "twin"

[model]
id = "org/model"

[hardware]
gpu = "H200"
gpu_count = 8

[bench]
common_args = ["--backend", "openai-chat"]

[[engines]]
name = "a"
kind = "vllm"
version = "1.0"
command = ["vllm", "serve", "{model}", "--port", "{port}"]

[[engines]]
name = "b"
kind = "sglang"
version = "2.0"
command = ["python3", "-m", "sglang.launch_server", "--model-path", "{model}"]
base_flags = ["--chat-template", "x.jinja"]

[[knobs]]
name = "layout"
type = "layout"
values = [{tp = 8}, {tp = 4, dp = 2}, {tp = 3}]
render.a = [{flags = ["-tp", "{tp}"]}, {when = "dp > 1", flags = ["-dp", "{dp}"]}]
render.b = [{flags = ["--tp-size", "{tp}"]}, {when = "dp > 1", flags = ["--dp-size", "{dp}"]}]

[[knobs]]
name = "ctx"
type = "int"
values = ["default", 32768]
render.a = [{flags = ["--max-model-len", "{value}"]}]
render.b = [{flags = ["--context-length={value}"]}]

[[knobs]]
name = "flag"
type = "bool"
values = [false, true]
render.b = [{when = "value", env = {B_FLAG = "1"}}]

[[scenarios]]
id = "s1"
args = ["--dataset-name", "random", "--num-prompts", "10"]

[[scenarios]]
id = "s2"
args = ["--dataset-name", "random", "--num-prompts", "20"]

[objective]
scenarios = ["s1"]
)toml";

/// Throughput the fake engine "measures" for a config key on a scenario (see search_test.cc for the
/// hand-computed path).
inline double fake_throughput(const std::string& key, const std::string& scenario) {
  const bool b = key.rfind("b{", 0) == 0;
  const bool layout = key.find("layout=tp4-dp2") != std::string::npos;
  const bool ctx = key.find("ctx=32768") != std::string::npos;
  const bool flag = key.find("flag=true") != std::string::npos;
  double v = b ? 90 : 100;
  if (layout) v *= b ? 1.5 : 1.2;
  if (ctx) v *= b ? 1.10 : 1.003;
  if (flag) v *= 0.9;
  if (scenario == "s2") {
    v *= 0.5;
    if (ctx && b) v *= 0.95 / 1.10;
  }
  return v;
}

/// A runner returning fake_throughput (and TPOT = 10000 / throughput ms) for every scenario.
inline TrialRunner fake_runner(int* launches = nullptr) {
  return [launches](const TrialRequest& req) {
    if (launches) ++*launches;
    TrialOutcome out;
    for (const auto& sc : req.scenarios) {
      ScenarioResult r;
      r.scenario_id = sc.id;
      const double v = fake_throughput(req.config_key, sc.id);
      r.metrics["Total Token throughput (tok/s)"] = v;
      r.metrics["Mean TPOT (ms)"] = 10000.0 / v;
      r.metrics["Successful requests"] = 10;
      r.ttft_ms = {v, v + 1};
      r.tpot_ms = {1, 2};
      out.scenarios.push_back(r);
    }
    return out;
  };
}

}  // namespace servelab::tune::testing
