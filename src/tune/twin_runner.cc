// The twin runner: sim::predict in-process, metrics exactly as bench computes them.
#include "tune/twin_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <variant>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/engines/engines.h"
#include "servelab/tokenizer/tokenizer.h"
#include "servelab/metrics/metrics.h"
#include "servelab/report/report.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/sim.h"
#include "tune/datasets.h"
#include "tune/metrics_convert.h"

namespace servelab::tune {

namespace {

struct ScenarioArgs {
  std::string dataset = "random";
  int num_prompts = 1000;
  int input_len = 1024, output_len = 128;  // vLLM bench serve defaults for random
  double request_rate = std::numeric_limits<double>::infinity();
  double burstiness = 1.0;
  std::optional<int> max_concurrency;
  std::uint64_t seed = 0;
  std::string dataset_path;
  std::map<std::string, double> goodput;  ///< --goodput KEY:VALUE ... (ttft, tpot, e2el → ms)
};

ScenarioArgs parse_args(const std::vector<std::string>& args) {
  ScenarioArgs a;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string k = args[i], v;
    if (auto eq = k.find('='); eq != std::string::npos && k.rfind("--", 0) == 0) {
      v = k.substr(eq + 1);
      k = k.substr(0, eq);
    } else if (i + 1 < args.size()) {
      v = args[i + 1];
    }
    auto take = [&]() -> const std::string& {
      if (args[i].find('=') == std::string::npos) ++i;
      return v;
    };
    if (k == "--goodput") {  // bench's list option: KEY:VALUE pairs up to the next flag
      for (; i + 1 < args.size() && args[i + 1].rfind("--", 0) != 0; ++i) {
        const auto colon = args[i + 1].find(':');
        try {
          if (colon == std::string::npos) throw std::invalid_argument("no ':'");
          a.goodput[args[i + 1].substr(0, colon)] = std::stod(args[i + 1].substr(colon + 1));
        } catch (const std::exception&) {
          throw std::invalid_argument(fmt::format("bad value '{}' for --goodput (KEY:VALUE)", args[i + 1]));
        }
      }
      continue;
    }
    try {
      if (k == "--dataset-name") a.dataset = take();
      else if (k == "--dataset-path") a.dataset_path = take();
      else if (k == "--num-prompts") a.num_prompts = std::stoi(take());
      else if (k == "--random-input-len") a.input_len = std::stoi(take());
      else if (k == "--random-output-len") a.output_len = std::stoi(take());
      else if (k == "--request-rate") a.request_rate = std::stod(take());
      else if (k == "--burstiness") a.burstiness = std::stod(take());
      else if (k == "--max-concurrency") a.max_concurrency = std::stoi(take());
      else if (k == "--seed") a.seed = std::stoull(take());
    } catch (const std::exception&) {
      throw std::invalid_argument(fmt::format("bad value '{}' for {}", v, k));
    }
  }
  return a;
}

// The ShareGPT file of a scenario when it is present: the --dataset-path as given, else the same file name
// in the data directory or the cache (<cache>/data/, where `make deps` downloads ShareGPT_V3).
std::optional<std::filesystem::path> sharegpt_file(const ScenarioArgs& a) {
  if (a.dataset != "sharegpt" || a.dataset_path.empty()) return std::nullopt;
  return detail::resolve_dataset_file(a.dataset_path, nullptr);
}

// vLLM's sharegpt sampling of a real file (first two turns, BOS-inclusive lengths, filters, shuffle) with
// the model's tokenizer, as `bench serve` would send it. Cached: the study runs it once per file.
std::vector<sim::WorkloadRequest> sample_sharegpt(const std::filesystem::path& file, const ScenarioArgs& a,
                                                  const std::string& model) {
  static std::mutex mu;
  static std::map<std::string, std::vector<sim::WorkloadRequest>> cache;
  const std::string key = fmt::format("{}|{}|{}|{}", file.string(), a.num_prompts, a.seed, model);
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  dataset::DatasetOptions o;
  o.dataset_name = "sharegpt";
  o.dataset_path = file.string();
  o.num_prompts = a.num_prompts;
  o.seed = a.seed;
  const auto tok = tokenizer::load_tokenizer(model);
  std::vector<sim::WorkloadRequest> out;
  for (const auto& r : dataset::sample_requests(o, tok)) out.push_back({r.prompt_len, r.output_len});
  return cache.emplace(key, std::move(out)).first->second;
}

std::vector<sim::WorkloadRequest> workload(const Scenario& sc, const ScenarioArgs& a, const model::ModelSpec& m,
                                          const std::string& model) {
  if (a.dataset == "random") return sim::random_fixed(a.num_prompts, a.input_len, a.output_len);
  if (auto file = sharegpt_file(a)) return sample_sharegpt(*file, a, model);
  if (a.dataset == "sharegpt") return sim::sharegpt_workload(m, a.num_prompts);
  return sim::scenario_workload(sc.id, m);  // throws naming the id
}

TrialStatus classify(const std::string& reason) {
  std::string r = reason;
  std::transform(r.begin(), r.end(), r.begin(), ::tolower);
  if (r.find("out of memory") != std::string::npos || r.find("oom") != std::string::npos ||
      r.find("memory") != std::string::npos)
    return TrialStatus::kOutOfMemory;
  if (r.find("runtime") != std::string::npos || r.find("run time") != std::string::npos ||
      r.find("run-time") != std::string::npos)
    return TrialStatus::kCrashed;
  return TrialStatus::kStartupRefused;
}

}  // namespace

std::string twin_data_note(const Study& study) {
  std::string out;
  for (const auto& sc : study.scenarios) {
    ScenarioArgs a = parse_args(sc.args);
    const auto file = sharegpt_file(a);
    std::string what = a.dataset == "random"
                           ? fmt::format("{} × {}/{} tokens (fixed lengths)", a.num_prompts, a.input_len, a.output_len)
                       : file ? fmt::format("vLLM's sharegpt sampling of the real file {} ({} prompts, seed {})",
                                            file->string(), a.num_prompts, a.seed)
                           : a.dataset == "sharegpt" && a.num_prompts == 1000
                                 ? "the twin's ShareGPT-1000 workload (request lengths from real ShareGPT "
                                   "conversations in shared/data, see scripts/calibrate_sharegpt1000.js)"
                                 : "the twin's workload table for this id";
    out += fmt::format("{}{}: {}", out.empty() ? "" : "; ", sc.id, what);
  }
  return out;
}

namespace {

/// What every twin trial of a study shares: the cluster, the study's goodput SLOs, the served model (or
/// why it could not be resolved) and each engine's version.
struct TwinSetup {
  hardware::ClusterSpec cluster;
  metrics::MetricsOptions mopt;
  std::string model;
  std::map<std::string, std::string> versions;  ///< study engine name -> engine version
  std::optional<model::ModelSpec> spec;
  std::string model_error;
};

/// A scenario the twin could not predict: the trial status it stands for and why.
struct ScenarioFailure {
  TrialStatus status;
  std::string reason;
};

TwinSetup twin_setup(const Study& study) {
  TwinSetup t{hardware::parse_cluster(
      fmt::format("{}x{}x{}", study.hardware.nodes, study.hardware.gpus_per_node, study.hardware.gpu))};
  for (const auto& e : study.engines) t.versions[e.name] = e.version;
  // The served model, once: a model the twin cannot resolve fails every trial with the reason.
  try {
    hub::FetchRequest fetch;  // a Hub id nothing local knows: its config.json from the Hub, as an engine would
    fetch.download = true;
    t.spec = model::resolve_model(study.model, fetch);
  } catch (const std::exception& e) {
    t.model_error = e.what();
  }
  if (auto it = study.objective.slo_ms.find("ttft"); it != study.objective.slo_ms.end()) t.mopt.goodput.ttft_ms = it->second;
  if (auto it = study.objective.slo_ms.find("tpot"); it != study.objective.slo_ms.end()) t.mopt.goodput.tpot_ms = it->second;
  if (auto it = study.objective.slo_ms.find("e2el"); it != study.objective.slo_ms.end()) t.mopt.goodput.e2el_ms = it->second;
  t.model = study.model;
  return t;
}

/// Scenario `sc`'s result from the twin's prediction `p` with metrics `m`: bench's console block, the
/// prediction's error band (%) and warning count.
ScenarioResult predicted_result(const TwinSetup& t, const Scenario& sc, const ScenarioArgs& a, std::size_t num_prompts,
                                const sim::Prediction& p, const metrics::BenchmarkMetrics& m) {
  report::RunInfo run;
  run.backend = "openai-chat";
  run.model_id = t.model;
  run.num_prompts = static_cast<int>(num_prompts);
  run.request_rate = a.request_rate;
  run.burstiness = a.burstiness;
  run.max_concurrency = a.max_concurrency;
  auto result = scenario_result(sc.id, m, p.outputs, report::format_console_block(run, m, metrics::PercentileMetrics{}));
  const auto& band = p.context.band;
  result.metrics[kBandTokSMetric] = band.total_tok_s_pct;
  result.metrics[kBandTtftMetric] = band.ttft_pct;
  result.metrics[kBandTpotMetric] = band.tpot_pct;
  result.metrics[kTwinWarningsMetric] = double(band.warnings.size() + p.context.launch.unmodelled.size());
  const auto& unmodelled = p.context.launch.unmodelled;
  result.metrics[kTwinUnmodelledMetric] = double(unmodelled.size());
  for (const auto& why : unmodelled) {  // the path's name: its reason up to the first ": "
    std::size_t cut = std::min({why.find(": "), why.size(), std::size_t{160}});
    while (cut > 0 && cut < why.size() && (static_cast<unsigned char>(why[cut]) & 0xC0) == 0x80)
      --cut;  // UTF-8
    const std::string name = why.substr(0, cut);
    result.metrics[kTwinUnmodelledPathPrefix + name] = 1;
  }
  return result;
}

/// The twin's prediction of scenario `sc` on the engine launched as `cfg`: its result, or why there is none.
std::variant<ScenarioResult, ScenarioFailure> predict_scenario(const TwinSetup& t, const engines::LaunchConfig& cfg,
                                                               const Scenario& sc) {
  ScenarioArgs a;
  std::vector<sim::WorkloadRequest> reqs;
  try {
    a = parse_args(sc.args);
    reqs = workload(sc, a, *t.spec, t.model);
  } catch (const std::exception& e) {
    return ScenarioFailure{TrialStatus::kError, fmt::format("scenario {}: {}", sc.id, e.what())};
  }
  sim::WorkloadOptions wo;
  wo.request_rate = a.request_rate;
  wo.burstiness = a.burstiness;
  wo.max_concurrency = a.max_concurrency;
  wo.seed = a.seed;
  sim::PredictResult pr;
  try {
    pr = sim::predict(cfg, t.cluster, *t.spec, reqs, wo);
  } catch (const std::exception& e) {
    return ScenarioFailure{TrialStatus::kError, fmt::format("engine twin error on {}: {}", sc.id, e.what())};
  }
  if (auto* f = std::get_if<sim::PredictedFailure>(&pr)) return ScenarioFailure{classify(f->message), f->message};
  const auto& p = std::get<sim::Prediction>(pr);
  double duration = p.twin.duration_s;
  if (!(duration > 0))
    for (const auto& o : p.outputs) duration = std::max(duration, o.send_time_s + o.latency_s);
  if (!(duration > 0))
    return ScenarioFailure{TrialStatus::kRequestsFailed, "the twin predicted no completed request for " + sc.id};
  metrics::MetricsOptions scenario_mopt = t.mopt;  // a scenario's own --goodput wins, as in bench
  if (a.goodput.count("ttft")) scenario_mopt.goodput.ttft_ms = a.goodput.at("ttft");
  if (a.goodput.count("tpot")) scenario_mopt.goodput.tpot_ms = a.goodput.at("tpot");
  if (a.goodput.count("e2el")) scenario_mopt.goodput.e2el_ms = a.goodput.at("e2el");
  metrics::BenchmarkMetrics m = metrics::compute_metrics(p.outputs, duration, scenario_mopt);
  if (m.completed == 0)
    return ScenarioFailure{TrialStatus::kRequestsFailed,
                           fmt::format("no request of scenario {} succeeded ({} failed)", sc.id, m.failed)};
  return predicted_result(t, sc, a, reqs.size(), p, m);
}

/// One twin trial: the launch command parsed as the engine would, then each scenario predicted on its own
/// (a failure on one is recorded, the first one is the trial's status, and the others still run).
TrialOutcome predict_trial(const TwinSetup& t, const TrialRequest& req) {
  TrialOutcome out;
  out.predicted = true;
  const auto t0 = std::chrono::steady_clock::now();
  if (!t.spec) {
    out.status = TrialStatus::kError;
    out.reason = "engine twin: " + t.model_error;
    return out;
  }
  engines::LaunchConfig cfg;
  try {
    const auto v = t.versions.find(req.engine);
    cfg = engines::apply_config_files(
        engines::parse_launch_command(req.argv, req.env, v == t.versions.end() ? std::string() : v->second));
  } catch (const std::exception& e) {
    out.status = TrialStatus::kStartupRefused;
    out.reason = e.what();
    return out;
  }
  for (const auto& sc : req.scenarios) {
    auto r = predict_scenario(t, cfg, sc);
    if (auto* f = std::get_if<ScenarioFailure>(&r)) {
      if (out.status == TrialStatus::kOk) {
        out.status = f->status;
        out.reason = std::move(f->reason);
      }
      continue;
    }
    out.scenarios.push_back(std::move(std::get<ScenarioResult>(r)));
  }
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace

TrialRunner make_twin_runner(const Study& study) {
  const TwinSetup setup = twin_setup(study);
  return [setup](const TrialRequest& req) -> TrialOutcome { return predict_trial(setup, req); };
}

}  // namespace servelab::tune
