// `servelab sim run | validate | calibrate`: the engine twin on the command line.
//   sim run [--hardware 8xH200] [--scenario ID | bench serve workload flags] -- <engine launch command>
//   sim validate [--hardware 8xH200] [--measurements seed-measurements.json]
//   sim calibrate [--measurements ...] [--write src/sim/calibration.json]
#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "bench/config.h"
#include "cli/command_registry.h"
#include "common/paths.h"
#include "dataset/dataset.h"
#include "engines/engines.h"
#include "metrics/metrics.h"
#include "report/report.h"
#include "sim/calibrate.h"
#include "sim/sim.h"
#include "sim/validate.h"
#include "tokenizer/tokenizer.h"

namespace servelab::cli {
namespace {

struct SimRunArgs {
  std::string hardware = "8xH200";
  std::string scenario;
  std::string model_config;
  std::vector<std::string> launch;
  bench::BenchConfig bench;
};

std::map<std::string, std::string> process_env() { return common::environment_map(); }

std::string twin_view_block(const sim::TwinView& v) {
  std::string s;
  auto row = [&](const std::string& k, const std::string& val) { s += fmt::format("{:<40} {:<10}\n", k, val); };
  s += fmt::format("{:=^50}\n", " Engine twin view ");
  const auto& m = v.memory;
  row("GPUs / DP ranks / attention TP:", fmt::format("{} / {} / {}", m.par.gpus, m.par.dp_ranks, m.par.attn_tp));
  row("Experts:", fmt::format("{} over {} GPUs", m.par.moe_ep ? "EP" : "TP-sliced", m.par.moe_group));
  row("Weights per GPU (GiB):", fmt::format("{:.2f}", m.weight_bytes / (1 << 30)));
  row("Activations + reserve per GPU (GiB):",
      fmt::format("{:.2f}", (m.activation_bytes + m.reserved_bytes) / (1 << 30)));
  row("KV pool per GPU (GiB):", fmt::format("{:.2f}", m.kv_budget_bytes / (1 << 30)));
  row("KV bytes per token:", fmt::format("{:.0f}", m.kv_bytes_per_token));
  row("KV tokens per DP rank:", fmt::format("{}", m.kv_tokens_per_rank));
  row("Peak KV use (fraction of pool):", fmt::format("{:.3f}", v.kv_peak_fraction));
  row("Forward steps:", fmt::format("{}", v.steps));
  row("Mean step time (ms):", fmt::format("{:.2f}", v.mean_step_ms));
  row("Mean / max running requests per rank:", fmt::format("{:.1f} / {}", v.mean_batch_requests, v.max_batch_requests));
  row("Mean query tokens per rank per step:", fmt::format("{:.1f}", v.mean_step_tokens));
  row("Preemptions:", fmt::format("{}", v.preemptions));
  row("Time in prefill steps (s):", fmt::format("{:.2f}", v.prefill_time_s));
  row("Time in decode-only steps (s):", fmt::format("{:.2f}", v.decode_time_s));
  row("Idle time (s):", fmt::format("{:.2f}", v.idle_time_s));
  s += fmt::format("{:-^50}\n", "Step time by operator class (s)");
  row("MLA + indexer projections:", fmt::format("{:.2f}", v.attn_proj_s));
  row("Sparse/dense attention + KV reads:", fmt::format("{:.2f}", v.attention_s));
  row("Indexer scoring:", fmt::format("{:.2f}", v.indexer_s));
  row("Routed experts (MoE):", fmt::format("{:.2f}", v.moe_s));
  row("Shared expert, dense FFN, LM head:", fmt::format("{:.2f}", v.dense_s));
  row("Collectives (NVLink):", fmt::format("{:.2f}", v.comm_s));
  row("CPU + launch overhead:", fmt::format("{:.2f}", v.overhead_s));
  if (v.mtp_acceptance > 0) row("MTP draft acceptance:", fmt::format("{:.2f}", v.mtp_acceptance));
  s += std::string(50, '=') + "\n";
  return s;
}

void run_sim_run(SimRunArgs& a) {
  if (a.launch.empty()) {
    std::fprintf(stderr, "servelab sim run: give the engine launch command after --, e.g.\n"
                         "  servelab sim run --scenario sharegpt-1000 -- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8\n");
    throw ExitRequest{2};
  }
  const sim::Cluster cluster = sim::parse_cluster(a.hardware);
  engines::EngineConfig engine;
  try {
    engine = engines::parse_launch_command(a.launch, process_env());
  } catch (const engines::EngineArgError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    throw ExitRequest{2};
  }
  const sim::ModelConfig model =
      a.model_config.empty() ? sim::resolve_model(engine.model) : sim::load_model_config(a.model_config);
  const bench::ResolvedConfig r = bench::resolve(a.bench);

  std::vector<sim::WorkloadRequest> workload;
  std::string workload_name;
  if (!a.scenario.empty()) {
    workload = sim::scenario_workload(a.scenario);
    workload_name = a.scenario;
  } else {
    const std::string tok_id = a.bench.tokenizer.value_or(a.bench.model.value_or(engine.model));
    const auto tok = tokenizer::load_tokenizer(tok_id);
    for (const auto& s : dataset::sample_requests(dataset_options(a.bench, r), tok))
      workload.push_back({s.prompt_len, s.expected_output_len});
    workload_name = a.bench.dataset_name;
  }
  sim::WorkloadOptions opt;
  opt.request_rate = r.request_rate;
  opt.burstiness = a.bench.burstiness;
  opt.max_concurrency = a.bench.max_concurrency;
  opt.seed = static_cast<std::uint64_t>(a.bench.seed);

  std::printf("Prediction of the servelab engine twin (virtual time, not a measurement)\n");
  std::printf("Launch:   %s\nHardware: %d x %s   Model: %s   Workload: %s (%zu requests)\n",
              engines::render_command(engine).c_str(), cluster.num_gpus, cluster.gpu.name.c_str(),
              model.name.c_str(), workload_name.c_str(), workload.size());
  const auto result = sim::predict(engine, cluster, model, workload, opt);
  if (const auto* f = std::get_if<sim::Failure>(&result)) {
    std::printf("Predicted failure: %s\n", f->reason.c_str());
    throw ExitRequest{1};
  }
  const auto& p = std::get<sim::Prediction>(result);
  metrics::MetricsOptions mo;
  mo.percentiles = r.metric_percentiles;
  if (auto it = r.goodput_slo_ms.find("ttft"); it != r.goodput_slo_ms.end()) mo.goodput.ttft_ms = it->second;
  if (auto it = r.goodput_slo_ms.find("tpot"); it != r.goodput_slo_ms.end()) mo.goodput.tpot_ms = it->second;
  if (auto it = r.goodput_slo_ms.find("e2el"); it != r.goodput_slo_ms.end()) mo.goodput.e2el_ms = it->second;
  const auto m = metrics::compute_metrics(p.outputs, std::max(p.twin.duration_s, 1e-9), mo);
  report::RunInfo run;
  run.backend = a.bench.backend;
  run.label = a.bench.label;
  run.model_id = engine.model;
  run.num_prompts = static_cast<int>(workload.size());
  run.request_rate = r.request_rate;
  run.burstiness = a.bench.burstiness;
  run.max_concurrency = a.bench.max_concurrency;
  const auto selected = metrics::parse_percentile_metrics(a.bench.percentile_metrics.value_or("ttft,tpot,itl"));
  std::printf("%s", report::format_console_block(run, m, selected).c_str());
  std::printf("%s", report::format_console_extras(run, m, selected).c_str());
  std::printf("%s", twin_view_block(p.twin).c_str());
  // --save-result / --append-result: the same JSON as bench serve, marked as the twin's prediction.
  if (a.bench.save_result || a.bench.append_result) {
    run.date = report::current_date_string();
    report::ReportOptions ro;
    ro.percentile_metrics = selected;
    ro.save_detailed = a.bench.save_detailed;
    auto j = report::make_result_json(run, m, p.outputs, ro);
    j["servelab_engine_twin_prediction"] = true;
    j["servelab_launch"] = engines::render_command(engine);
    const auto path = report::result_path(run, a.bench.result_dir.value_or(""), a.bench.result_filename.value_or(""));
    report::write_result_file(path, j, a.bench.append_result);
    std::printf("Result saved to %s\n", path.string().c_str());
  }
}

void setup(CLI::App& root) {
  auto* sim = root.add_subcommand("sim", "The engine twin of an engine launch on a GPU node: predict a benchmark offline (run, validate, calibrate) or serve an OpenAI-compatible API in real time (serve)");
  sim->require_subcommand(1);

  auto run_args = std::make_shared<SimRunArgs>();
  auto* run = sim->add_subcommand("run", "Predict a benchmark (bench serve workload flags) of an engine launch");
  run->add_option("--hardware", run_args->hardware, "GPU node, e.g. 8xH200, 8xH100, 8xB200")->capture_default_str();
  run->add_option("--scenario", run_args->scenario,
                  "a study workload instead of dataset flags: sharegpt-1000, random-128in-4out, "
                  "random-2000in-100out, random-4000in-200out, random-32000in-100out, random-1000in-2000out");
  run->add_option("--model-config", run_args->model_config, "HF config.json of the served model (default: from the launch)");
  bench::add_bench_flags(*run, run_args->bench);
  run->add_option("launch", run_args->launch, "the engine's launch command, after --");
  run->allow_extras();  // to say what to do about engine flags given without `--` (below)
  run->callback([run_args, run] {
    std::string extra;
    for (const auto& x : run->remaining())
      if (x != "--") extra += (extra.empty() ? "" : " ") + x;  // CLI11 keeps the separator itself
    if (!extra.empty()) {
      std::fprintf(stderr,
                   "servelab sim run: unexpected argument(s): %s\n  If they belong to the engine, put `--` before "
                   "its launch command:\n  servelab sim run [workload flags] -- vllm serve "
                   "deepseek-ai/DeepSeek-V3.2 -tp 8\n",
                   extra.c_str());
      throw ExitRequest{2};
    }
    run_sim_run(*run_args);
  });

  auto hardware = std::make_shared<std::string>("8xH200");
  auto measurements = std::make_shared<std::string>(
      (common::data_dir().parent_path() / "reference" / "seed-measurements.json").string());
  auto* val = sim->add_subcommand("validate", "Every released measurement of the reference study vs the twin");
  val->add_option("--hardware", *hardware, "GPU node")->capture_default_str();
  val->add_option("--measurements", *measurements, "seed-measurements.json")->capture_default_str();
  val->callback([hardware, measurements] {
    const auto rep = sim::validate(*measurements, sim::parse_cluster(*hardware));
    std::printf("%s", sim::format_validation(rep).c_str());
  });

  auto write = std::make_shared<std::string>();
  auto sweeps = std::make_shared<int>(12);
  auto* cal = sim->add_subcommand("calibrate", "Fit the twin's efficiency factors to the released measurements");
  cal->add_option("--hardware", *hardware, "GPU node")->capture_default_str();
  cal->add_option("--measurements", *measurements, "seed-measurements.json")->capture_default_str();
  cal->add_option("--write", *write, "write the fitted calibration.json here (else print it)");
  cal->add_option("--sweeps", *sweeps, "pattern-search sweeps per engine")->capture_default_str();
  cal->callback([hardware, measurements, write, sweeps] {
    const auto fit = sim::fit_calibration(*measurements, sim::parse_cluster(*hardware), *sweeps);
    for (const auto& [engine, before] : fit.objective_before)
      std::fprintf(stderr, "%s: %d runs, objective %.4f -> %.4f\n", engine.c_str(), fit.runs.at(engine), before,
                   fit.objective_after.at(engine));
    std::fprintf(stderr, "%d predictions\n", fit.evaluations);
    const std::string json = sim::calibration_to_json(fit.calibration);
    if (write->empty()) {
      std::printf("%s", json.c_str());
    } else {
      std::ofstream f(*write, std::ios::binary);
      if (!f) throw std::runtime_error("cannot write " + *write);
      f << json;
      std::fprintf(stderr, "wrote %s (rebuild to embed it)\n", write->c_str());
    }
  });
}

}  // namespace

SERVELAB_REGISTER_COMMAND("sim", 40, setup);

}  // namespace servelab::cli
