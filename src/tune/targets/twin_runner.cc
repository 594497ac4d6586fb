// The twin runner: sim::predict in-process, metrics exactly as bench computes them.
#include "tune/targets/twin_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <variant>

#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/metrics/metrics.h"
#include "servelab/model/model.h"
#include "servelab/report/report.h"
#include "servelab/sim/sim.h"
#include "servelab/tokenizer/tokenizer.h"
#include "servelab/tune/study/load_points.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/targets/targets.h"
#include "tune/targets/datasets.h"
#include "tune/targets/metrics_convert.h"

namespace servelab::tune {

namespace {

/// A scenario's bench options as the twin reads them: bench's own parse of the arguments the local target
/// passes (parse_scenario_bench_args), then bench::resolve (request rate, random lengths, goodput SLOs).
struct TwinScenario {
  bench::RunOptions opts;
  bench::ResolvedConfig resolved;
};

TwinScenario twin_scenario(const std::vector<std::string>& common, const Scenario& sc,
                           const std::string& common_origin) {
  TwinScenario t{parse_scenario_bench_args(common, sc, {}, common_origin), {}};
  try {
    t.resolved = bench::resolve(t.opts);
  } catch (const std::exception& e) {
    throw std::invalid_argument(fmt::format("{}scenario {}: bench serve arguments: {}",
                                            sc.args_origin.empty() ? "" : sc.args_origin + ": ", sc.id,
                                            e.what()));
  }
  return t;
}

/// The dataset file a scenario names when it exists (its --dataset-path, already resolved as every target
/// resolves it: tune/datasets.h).
std::optional<std::filesystem::path> dataset_file(const bench::RunOptions& o) {
  std::error_code ec;
  if (!o.dataset_path || !std::filesystem::is_regular_file(*o.dataset_path, ec)) return std::nullopt;
  return std::filesystem::path(*o.dataset_path);
}

/// The tokenizer bench serve draws a dataset with: --tokenizer, else --model (the study's model).
std::string tokenizer_id(const bench::RunOptions& o, const std::string& model) {
  return o.tokenizer.value_or(o.model.value_or(model));
}

/// How the twin builds a scenario's requests, as `sim run` does.
enum class WorkloadKind {
  kFixed,  ///< random with no range or prefix: fixed lengths (--random-input-len / --random-output-len)
  kBuiltinShareGpt,  ///< sharegpt without its file: the built-in lengths of the model's tokenizer family
  kSampled,          ///< any dataset file: bench's sampling with the scenario's tokenizer
};

WorkloadKind workload_kind(const bench::RunOptions& o, const bench::ResolvedConfig& r) {
  // Fixed lengths are what bench draws for random without a range or a prefix, no tokenizer needed; a
  // --random-range-ratio or --random-prefix-len varies them, so bench's own draw decides (as in `sim run`).
  if (bench::fixed_random_lengths(o, r)) return WorkloadKind::kFixed;
  if (o.dataset_name == "sharegpt" && !dataset_file(o)) return WorkloadKind::kBuiltinShareGpt;
  return WorkloadKind::kSampled;
}

/// The requests of scenario `s` (id `id`). A tokenizer that cannot be loaded throws TuneSetupError with the
/// loader's whole message and what to do: it would fail every trial of the study.
std::vector<sim::WorkloadRequest> build_workload(const std::string& id, const TwinScenario& s,
                                                 const model::ModelSpec& m, const std::string& model) {
  const bench::RunOptions& o = s.opts;
  switch (workload_kind(o, s.resolved)) {
    case WorkloadKind::kFixed:
      return sim::random_fixed(o.num_prompts, s.resolved.random_input_len, s.resolved.random_output_len);
    case WorkloadKind::kBuiltinShareGpt:
      return sim::sharegpt_workload(m, o.num_prompts);
    case WorkloadKind::kSampled:
      break;
  }
  const std::string tok_id = tokenizer_id(o, model);
  std::optional<tokenizer::Tokenizer> tok;
  try {
    hub::FetchRequest fetch;  // as `sim run` and bench serve: a Hub id nothing local has is downloaded
    fetch.download = true;
    tok.emplace(tokenizer::load_tokenizer(tok_id, fetch));
  } catch (const std::exception& e) {
    throw TuneSetupError(fmt::format(
        "scenario {}: the engine twin cannot load the tokenizer \"{}\": {}\n"
        "The twin draws the --dataset-name {} workload{} with the tokenizer bench serve would use "
        "(--tokenizer, else the study's model). Fix: put its tokenizer.json where the list above looks "
        "(e.g. the Hugging Face cache), or give --tokenizer FILE or ORG/NAME in the scenario's args or in "
        "[bench] common_args{}.",
        id, tok_id, e.what(), o.dataset_name, o.dataset_path ? " of " + *o.dataset_path : "",
        o.dataset_name == "sharegpt"
            ? ". (The twin's built-in ShareGPT lengths of the model's tokenizer family stand in only for a "
              "--dataset-path that is not on this machine, docs/study.md; `servelab sim run --scenario "
              "sharegpt-<N>` predicts with them.)"
            : ""));
  }
  std::vector<sim::WorkloadRequest> out;
  for (const auto& r : dataset::sample_requests(bench::dataset_options(o, s.resolved), *tok))
    out.push_back({r.prompt_len, r.output_len});
  return out;
}

/// The trial status of a predicted failure, by the twin's own kind: a memory plan that does not fit is out
/// of memory; an engine's refusal at start-up is refused, even when its text names memory ("GPU memory
/// fraction 1.5 is outside (0, 1]" read as out of memory and was retried "to save memory", new-user trial);
/// a failure under load is a crash; a launch the twin does not model is refused (the twin cannot start it).
TrialStatus classify(const sim::PredictedFailure& f) {
  switch (f.kind) {
    case sim::PredictedFailure::Kind::kOutOfMemory:
      return TrialStatus::kOutOfMemory;
    case sim::PredictedFailure::Kind::kRuntime:
      return TrialStatus::kCrashed;
    case sim::PredictedFailure::Kind::kStartup:
    case sim::PredictedFailure::Kind::kUnsupported:
      break;
  }
  return TrialStatus::kStartupRefused;
}

}  // namespace

std::string twin_data_note(const Study& study) {
  std::string out;
  const std::vector<std::string> common = bench_common_args(study);
  for (const auto& sc : study.scenarios) {
    std::string what;
    try {
      const TwinScenario s = twin_scenario(common, sc, study.bench_common_args_origin);
      const bench::RunOptions& o = s.opts;
      switch (workload_kind(o, s.resolved)) {
        case WorkloadKind::kFixed:
          what = fmt::format("{} × {}/{} tokens (fixed lengths)", o.num_prompts, s.resolved.random_input_len,
                             s.resolved.random_output_len);
          break;
        case WorkloadKind::kBuiltinShareGpt:
          what = fmt::format(
              "the twin's built-in ShareGPT lengths ({} prompts; request lengths from real ShareGPT "
              "conversations counted with the model's tokenizer family, see "
              "scripts/calibrate_sharegpt1000.js){}",
              o.num_prompts, o.dataset_path ? ": " + *o.dataset_path + " was not found" : "");
          break;
        case WorkloadKind::kSampled:
          what = fmt::format("bench's {} sampling{} ({} prompts, seed {}) with the tokenizer {}",
                             o.dataset_name, o.dataset_path ? " of the real file " + *o.dataset_path : "",
                             o.num_prompts, o.seed, tokenizer_id(o, study.model));
      }
    } catch (const std::exception& e) {
      what = e.what();
    }
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
  std::vector<std::string> common;  ///< bench_common_args(study): what every scenario's args follow
  std::string common_origin;        ///< Study::bench_common_args_origin
  /// Each study scenario's requests by scenario id, built once (a load point "id@c16" draws the same ones).
  std::map<std::string, std::shared_ptr<const std::vector<sim::WorkloadRequest>>> workloads;
  /// Why a scenario has no workload, by scenario id (only where the twin only guides: twin_is_required).
  std::map<std::string, std::string> workload_errors;
};

/// Whether the study cannot go on without the twin's predictions: the twin is its target, or its search
/// ranks on the twin (twin-guided). Where the twin only guides the SLO searches of a local study, what it
/// cannot predict fails its predictions only (the searches then start without its answer).
bool twin_is_required(const Study& study) {
  return study.target == Target::kTwin || study.search.strategy == Strategy::kTwinGuided;
}

/// A scenario the twin could not predict: the trial status it stands for and why.
struct ScenarioFailure {
  TrialStatus status;
  std::string reason;
};

/// Builds every scenario's requests into `t.workloads` before any trial: what cannot be built (bench refuses
/// an argument, the tokenizer cannot be loaded) would fail every trial one by one, so it stops the study
/// here, once, with the whole message (TuneSetupError).
void prepare_workloads(const Study& study, TwinSetup& t) {
  for (const auto& sc : study.scenarios) {
    try {
      TwinScenario s;
      try {
        s = twin_scenario(t.common, sc, t.common_origin);
      } catch (const std::exception& e) {
        throw TuneSetupError(e.what());  // "scenario ID: bench serve arguments: ..."
      }
      try {
        t.workloads[sc.id] = std::make_shared<const std::vector<sim::WorkloadRequest>>(
            build_workload(sc.id, s, *t.spec, t.model));
      } catch (const TuneSetupError&) {
        throw;
      } catch (const std::exception& e) {
        throw TuneSetupError(
            fmt::format("scenario {}: the engine twin cannot draw its workload: {}", sc.id, e.what()));
      }
    } catch (const TuneSetupError& e) {
      if (twin_is_required(study)) throw;
      t.workload_errors[sc.id] = e.what();
    }
  }
}

/// The study's cluster ([hardware]). Throws std::invalid_argument for a GPU or shape the twin does not know.
hardware::ClusterSpec study_cluster(const Study& study) {
  return hardware::parse_cluster(
      fmt::format("{}x{}x{}", study.hardware.nodes, study.hardware.gpus_per_node, study.hardware.gpu));
}

/// The served model: [model] config when given, else the model id resolved as an engine would (with
/// `download`, a Hub id nothing local knows gets its config.json from the Hub). Throws with the reason.
model::ModelSpec study_model_spec(const Study& study, bool download) {
  hub::FetchRequest fetch;
  fetch.download = download;
  return study.model_config.empty() ? model::resolve_model(study.model, fetch)
                                    : model::load_config_with_modelopt(study.model_config);
}

TwinSetup twin_setup(const Study& study) {
  TwinSetup t{study_cluster(study)};
  for (const auto& e : study.engines) t.versions[e.name] = e.version;
  // The served model, once: a model the twin cannot resolve fails every trial with the reason.
  try {
    t.spec = study_model_spec(study, true);
  } catch (const std::exception& e) {
    t.model_error = study.model_config.empty() ? e.what() : "[model] config: " + std::string(e.what());
  }
  if (auto it = study.objective.slo_ms.find("ttft"); it != study.objective.slo_ms.end())
    t.mopt.goodput.ttft_ms = it->second;
  if (auto it = study.objective.slo_ms.find("tpot"); it != study.objective.slo_ms.end())
    t.mopt.goodput.tpot_ms = it->second;
  if (auto it = study.objective.slo_ms.find("e2el"); it != study.objective.slo_ms.end())
    t.mopt.goodput.e2el_ms = it->second;
  t.model = study.model;
  t.common = bench_common_args(study);
  t.common_origin = study.bench_common_args_origin;
  if (!t.spec && twin_is_required(study))  // every trial would fail with it, one by one
    throw TuneSetupError(
        fmt::format("the engine twin cannot resolve the model {}: {}", study.model, t.model_error));
  if (t.spec) prepare_workloads(study, t);
  return t;
}

/// Scenario `sc`'s result from the twin's prediction `p` with metrics `m`: bench's console block, the
/// prediction's error band (%) and warning count.
ScenarioResult predicted_result(const TwinSetup& t, const Scenario& sc, const TwinScenario& a,
                                std::size_t num_prompts, const sim::Prediction& p,
                                const metrics::BenchmarkMetrics& m) {
  report::RunInfo run;
  run.backend = "openai-chat";
  run.model_id = t.model;
  run.num_prompts = static_cast<int>(num_prompts);
  run.request_rate = a.resolved.request_rate;
  run.burstiness = a.opts.burstiness;
  run.max_concurrency = a.opts.max_concurrency;
  auto result = scenario_result(sc.id, m, p.outputs,
                                report::format_console_block(run, m, metrics::PercentileMetrics{}));
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
  // What `sim run` prints beside the numbers, under the block (the report shows each configuration's block
  // and lists the warnings in its Summary): a new-user trial found "the twin gave 1 warning(s)" with no way
  // to read it, and an MTP gain whose draft acceptance was nowhere in the report.
  std::string notes;
  for (const auto& w : band.warnings) notes += fmt::format("{}warning: {}\n", kTwinNotePrefix, w);
  for (const auto& u : unmodelled)
    notes += fmt::format("{}warning: not modelled, this prediction can be far off: {}\n", kTwinNotePrefix, u);
  if (const auto& sp = p.context.launch.speculative)
    notes += fmt::format(
        "{}assumed draft acceptance {:.2f} per draft token at batch 1 ({}), lowered at large "
        "batch: speculative decoding's gain scales with it\n",
        kTwinNotePrefix, sp->acceptance, sp->acceptance_source);
  if (!notes.empty()) {
    if (!result.result_block.empty() && result.result_block.back() != '\n') result.result_block += '\n';
    result.result_block += notes;
  }
  return result;
}

/// The twin's prediction of scenario `sc` on the engine launched as `cfg`: its result, or why there is none.
std::variant<ScenarioResult, ScenarioFailure> predict_scenario(const TwinSetup& t,
                                                               const engines::LaunchConfig& cfg,
                                                               const Scenario& sc) {
  TwinScenario a;
  std::shared_ptr<const std::vector<sim::WorkloadRequest>> reqs;
  try {
    a = twin_scenario(t.common, sc, t.common_origin);  // this load point's rate and concurrency
    const auto split = split_load_scenario_id(sc.id);
    const std::string base = split ? split->first : sc.id;
    if (auto e = t.workload_errors.find(base); e != t.workload_errors.end())
      return ScenarioFailure{TrialStatus::kError, e->second};
    // A load point with its own --num-prompts (the SLO search's longer runs) draws its own workload; the
    // scenario's, drawn once, has the scenario's length.
    const bool own_length = split && split->second.num_prompts > 0;
    auto it = own_length ? t.workloads.end() : t.workloads.find(base);
    reqs = it != t.workloads.end() ? it->second
                                   : std::make_shared<const std::vector<sim::WorkloadRequest>>(
                                         build_workload(sc.id, a, *t.spec, t.model));
  } catch (const std::exception& e) {
    return ScenarioFailure{TrialStatus::kError, fmt::format("scenario {}: {}", sc.id, e.what())};
  }
  sim::WorkloadOptions wo;
  wo.request_rate = a.resolved.request_rate;
  wo.burstiness = a.opts.burstiness;
  wo.max_concurrency = a.opts.max_concurrency;
  wo.seed = static_cast<std::uint64_t>(a.opts.seed);
  const bench::RampUpRates ramp = bench::ramp_up_rates(a.opts);  // a scenario's ramp-up, as bench sends it
  wo.ramp_up = ramp.kind;
  wo.ramp_up_start_rps = ramp.start_rps;
  wo.ramp_up_end_rps = ramp.end_rps;
  if (a.opts.endpoint.find("chat") == std::string::npos) wo.chat_template_tokens = 0;  // as `sim run`
  sim::PredictResult pr;
  try {
    pr = sim::predict(cfg, t.cluster, *t.spec, *reqs, wo);
  } catch (const std::exception& e) {
    return ScenarioFailure{TrialStatus::kError, fmt::format("engine twin error on {}: {}", sc.id, e.what())};
  }
  if (auto* f = std::get_if<sim::PredictedFailure>(&pr)) return ScenarioFailure{classify(*f), f->message};
  const auto& p = std::get<sim::Prediction>(pr);
  double duration = p.twin.duration_s;
  if (!(duration > 0))
    for (const auto& o : p.outputs) duration = std::max(duration, o.send_time_s + o.latency_s);
  if (!(duration > 0))
    return ScenarioFailure{TrialStatus::kRequestsFailed,
                           "the twin predicted no completed request for " + sc.id};
  metrics::MetricsOptions scenario_mopt = t.mopt;  // a scenario's own --goodput wins, as in bench
  const auto& slo = a.resolved.goodput_slo_ms;
  if (slo.count("ttft")) scenario_mopt.goodput.ttft_ms = slo.at("ttft");
  if (slo.count("tpot")) scenario_mopt.goodput.tpot_ms = slo.at("tpot");
  if (slo.count("e2el")) scenario_mopt.goodput.e2el_ms = slo.at("e2el");
  metrics::BenchmarkMetrics m = metrics::compute_metrics(p.outputs, duration, scenario_mopt);
  if (m.completed == 0)
    return ScenarioFailure{TrialStatus::kRequestsFailed,
                           fmt::format("no request of scenario {} succeeded ({} failed)", sc.id, m.failed)};
  return predicted_result(t, sc, a, reqs->size(), p, m);
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
    // A study that names no release of the engine gets what sim run gets: the release an image tag names,
    // else the module's default or the oldest modelled release past the model's architecture bound.
    const auto v = t.versions.find(req.engine);
    cfg =
        engines::parse_launch_for_model(req.argv, req.env, v == t.versions.end() ? std::string() : v->second,
                                        [&](const engines::LaunchConfig&) { return *t.spec; })
            .config;
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

std::vector<ModelRefusal> model_refusals(const Study& study) {
  std::vector<ModelRefusal> out;
  std::optional<model::ModelSpec> spec;
  hardware::ClusterSpec cluster;
  try {
    cluster = study_cluster(study);
    // On the twin, the model the twin resolves anyway (its config from the Hub when nothing local has it);
    // elsewhere only what is on this machine: the first trial says what the engine finds.
    spec = study_model_spec(study, study.target == Target::kTwin);
  } catch (const std::exception&) {
    return out;
  }
  for (const auto& e : study.engines) {
    if (e.version.empty() || !e.check_flags) continue;
    try {
      const Rendered r = render(study, CandidateConfig{e.name, {}});
      const engines::LaunchConfig cfg =
          engines::parse_launch_for_model(r.argv, r.env, e.version, [&](const engines::LaunchConfig&) {
            return *spec;
          }).config;
      const auto resolved = engines::resolve_launch(cfg, *spec, cluster);
      if (const auto* f = std::get_if<engines::LaunchFailure>(&resolved)) {
        if (f->rule.ends_with(".architecture.release")) out.push_back({e.name, f->message});
      }
    } catch (const std::exception&) {
      // A command the CLI refuses: check_engine_flags says it.
    }
  }
  return out;
}

TrialRunner make_twin_runner(const Study& study) {
  const TwinSetup setup = twin_setup(study);
  return [setup](const TrialRequest& req) -> TrialOutcome { return predict_trial(setup, req); };
}

}  // namespace servelab::tune
