// `servelab sim run | validate | calibrate`: the engine twin on the command line.
//   sim run [--hardware 8xH200] [--engine-version V] [--scenario ID | bench serve workload flags] -- <launch>
//   sim validate [--corpus ../shared/reference] [--per-point] [--split all|study|gpu|release]
//   sim calibrate [--corpus ../shared/reference --corpus ../shared/reference/inferencemax] [--write
//   src/sim/calibration.json]
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command_registry.h"
#include "cli/hub_fetch.h"
#include "cli/op_data.h"
#include "servelab/bench/config.h"
#include "servelab/common/paths.h"
#include "servelab/common/text.h"
#include "servelab/dataset/dataset.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/metrics/metrics.h"
#include "servelab/model/model.h"
#include "servelab/ops/op_store.h"
#include "servelab/report/report.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/sim.h"
#include "servelab/sim/uncertainty.h"
#include "servelab/sim/validate.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::cli {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

struct SimRunArgs {
  std::string hardware = "8xH200";
  std::string network;
  std::string engine_version;
  std::string calibration;
  std::string scenario;
  std::string model_config;
  bool explain = false;
  std::vector<std::string> launch;
  bench::RunOptions bench;
  std::vector<std::string> client_only_flags;  ///< bench flags given that the twin has no use for
};

std::string twin_view_block(const sim::TwinView& v) {
  std::string s;
  auto row = [&](const std::string& k, const std::string& val) {
    s += fmt::format("{:<42} {:<10}\n", k, val);
  };
  s += fmt::format("{:=^52}\n", " Engine twin view ");
  const auto& m = v.memory;
  const auto& l = m.layout;
  row("GPUs / nodes / DP ranks:", fmt::format("{} / {} / {}", l.gpus, l.nodes, l.dp_ranks));
  row("TP attention / dense / PP:", fmt::format("{} / {} / {}", l.attn_tp, l.dense_tp, l.pp));
  row("Experts (TP slices x EP) / all-to-all:",
      fmt::format("{} x {} / {}", l.moe_tp, l.moe_ep, engines::moe_a2a_name(l.a2a)));
  row("Weights per GPU (GiB):", fmt::format("{:.2f}", m.weight_bytes / kGiB));
  if (m.draft_weight_bytes > 0)
    row("  of which draft (GiB):", fmt::format("{:.2f}", m.draft_weight_bytes / kGiB));
  row("Activations + reserve per GPU (GiB):",
      fmt::format("{:.2f}", (m.activation_bytes + m.reserved_bytes) / kGiB));
  row("KV pool per GPU (GiB):", fmt::format("{:.2f}", m.kv_budget_bytes / kGiB));
  // What the plan decided beyond the rule above (a context lowered to fit, a pool raised to one request
  // within the plan's uncertainty): new-user trial, a 10.00 GiB pool where the rule gives 8.55, unexplained.
  for (const auto& n : m.notes) s += "  memory plan: " + n + "\n";
  if (m.kv_swa_pool_bytes_per_token > 0) {
    row("KV bytes per token (full + window pools):", fmt::format("{:.0f}", m.kv_bytes_per_token));
    row("  of which window-layer pools:", fmt::format("{:.0f}", m.kv_swa_pool_bytes_per_token));
  } else {
    row("KV bytes per token (full-context layers):", fmt::format("{:.0f}", m.kv_bytes_per_token));
  }
  if (m.kv_window_bytes_per_token > 0)
    row("KV bytes per token (window layers):",
        fmt::format("{:.0f} (window {})", m.kv_window_bytes_per_token, m.window_tokens));
  if (m.state_bytes_per_request > 0)
    row("Recurrent state per request (MiB):", fmt::format("{:.2f}", m.state_bytes_per_request / (1 << 20)));
  if (m.state_slots > 0)
    row("State-pool slots / running cap:", fmt::format("{} / {}", m.state_slots, m.max_running_from_states));
  row("KV tokens per DP rank:", fmt::format("{}", m.kv_tokens_per_rank));
  row("Peak KV use (fraction of pool):", fmt::format("{:.3f}", v.kv_peak_fraction));
  // Under PP an engine step is a pipeline tick (one micro-batch enters, one leaves), and each micro-batch's
  // time counts once, when it leaves the last stage: the rows say so.
  // CUDA graphs are counted per batch run: under PP per micro-batch, not per tick.
  const bool pp = v.memory.layout.pp > 1;
  if (pp) {
    row("Pipeline ticks:", fmt::format("{}", v.steps));
    row("Micro-batches run / on full CUDA graphs:", fmt::format("{} / {}", v.micro_batches, v.graphed_steps));
  } else {
    row("Engine steps / on full CUDA graphs:", fmt::format("{} / {}", v.steps, v.graphed_steps));
  }
  if (v.piecewise_steps > 0)
    row(pp ? "Micro-batches on piecewise CUDA graphs:" : "Steps on piecewise CUDA graphs:",
        fmt::format("{}", v.piecewise_steps));
  row(pp ? "Mean stage time per micro-batch (ms):" : "Mean step time (ms):",
      fmt::format("{:.2f}", v.mean_step_ms));
  row("Mean / max running requests per rank:",
      fmt::format("{:.1f} / {}", v.mean_batch_requests, v.max_batch_requests));
  row(pp ? "Mean query tokens per rank per micro-batch:" : "Mean query tokens per rank per step:",
      fmt::format("{:.1f}", v.mean_step_tokens));
  row("Preemptions:", fmt::format("{}", v.preemptions));
  if (v.shared_prefix_tokens_reused > 0)
    row("Prompt tokens from cached shared prefixes:", fmt::format("{}", v.shared_prefix_tokens_reused));
  row(pp ? "Stage time, prefill micro-batches (s):" : "Time in prefill steps (s):",
      fmt::format("{:.2f}", v.prefill_time_s));
  row(pp ? "Stage time, decode-only micro-batches (s):" : "Time in decode-only steps (s):",
      fmt::format("{:.2f}", v.decode_time_s));
  row("Idle time (s):", fmt::format("{:.2f}", v.idle_time_s));
  if (v.contexts_held_steps > 0)
    row("Steps contexts waited (attention DP):", fmt::format("{}", v.contexts_held_steps));
  if (v.contexts_over_budget_steps > 0) {
    row("Steps a whole prompt waited for budget:", fmt::format("{}", v.contexts_over_budget_steps));
    s += fmt::format(
        "  (chunked prefill off: a prompt runs whole in one step, and one of up to {} tokens fits the step's "
        "token budget ({} tokens: max_num_tokens / max_num_batched_tokens) only beside fewer running "
        "requests' tokens, so it waited for them to finish; enable chunked prefill or raise the budget)\n",
        v.largest_context_over_budget, v.step_token_budget);
  }
  if (v.memory.layout.pp > 1)
    row("Pipeline fill, drain and stage waits (s):", fmt::format("{:.2f}", v.pipeline_bubble_s));
  if (v.spec_acceptance > 0) row("Draft acceptance (fraction):", fmt::format("{:.2f}", v.spec_acceptance));
  s += fmt::format("{:-^52}\n", " Kernel time by operator class (s) ");
  row("Attention core + KV reads:", fmt::format("{:.2f}", v.attention_s));
  if (v.linear_attention_s > 0)
    row("Linear attention (gated DeltaNet):", fmt::format("{:.2f}", v.linear_attention_s));
  row("Dense linears (projections, FFN):", fmt::format("{:.2f}", v.linear_s));
  row("Routed experts (MoE):", fmt::format("{:.2f}", v.moe_s));
  row("LM head + sampler:", fmt::format("{:.2f}", v.lm_head_s));
  if (v.elementwise_s > 0) row("Norms, RoPE, KV writes, SwiGLU:", fmt::format("{:.2f}", v.elementwise_s));
  if (v.draft_s > 0) row("Speculative draft:", fmt::format("{:.2f}", v.draft_s));
  row("Collectives:", fmt::format("{:.2f}", v.comm_s));
  row("CPU + launch overhead:", fmt::format("{:.2f}", v.overhead_s));
  if (!v.measured_operators.empty()) {
    s += fmt::format("{:-^52}\n", " Measured operators (--op-data) ");
    for (const auto& n : v.measured_operators) s += n + "\n";
    row("Table lookups / outside the measured grid:",
        fmt::format(
            "{} / {}{}", v.measured_lookups, v.extrapolated_lookups,
            v.extrapolated_lookups > 0
                ? " (extrapolated: the nearest measured point, or another layout's or GPU's row, rescaled)"
                : ""));
  }
  s += std::string(52, '=') + "\n";
  return s;
}

/// What `sim run` predicts for: the cluster, the engine launch resolved with its config files, the served
/// model and the resolved bench serve workload flags.
struct SimRunInputs {
  hardware::ClusterSpec cluster;
  engines::LaunchConfig engine;
  std::string model_revision;  ///< the launch's --revision ("" = default branch)
  model::ModelSpec model;
  bench::ResolvedConfig resolved;
  std::string release_note;  ///< why the predicted release is not the module default ("" = it is)
};

/// Parses --hardware/--network and the launch command (an engine argument error exits with status 2),
/// loads the model's config and resolves the workload flags. Throws for workloads the twin cannot predict
/// offline (--multi-turn, timed_trace).
SimRunInputs load_sim_run_inputs(const SimRunArgs& a) {
  SimRunInputs in;
  in.cluster = hardware::parse_cluster(a.hardware);
  if (!a.network.empty()) in.cluster.network = hardware::parse_network(a.network);
  in.model_revision = launch_flag_value(a.launch, "--revision");
  try {
    auto released = parse_served_launch(a.launch, a.engine_version, a.model_config, in.model_revision);
    print_release_notices(released);
    in.engine = std::move(released.config);
    in.model = std::move(released.model);
    in.release_note = std::move(released.note);
  } catch (const engines::EngineArgError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    print_release_checked(e);
    throw ExitRequest{2};
  }
  in.resolved = bench::resolve(a.bench);
  if (a.bench.multi_turn)
    throw std::runtime_error(
        "sim run does not predict --multi-turn workloads (each turn's prompt holds the server's earlier "
        "answers); "
        "run them against the twin with `servelab sim serve` and `servelab bench serve --multi-turn`");
  if (a.bench.dataset_name == "timed_trace")
    throw std::runtime_error(
        "sim run does not predict --dataset-name timed_trace workloads yet (its help lists bench serve's "
        "datasets); replay the trace against the twin with `servelab sim serve` and `servelab bench serve "
        "--dataset-name timed_trace --self-timed`");
  return in;
}

/// The requests (prompt and output lengths, tokens) of the predicted benchmark, with the name printed for
/// it and an optional note on how it was drawn.
struct SimWorkload {
  std::vector<sim::WorkloadRequest> requests;
  std::string name, note;
};

/// The workload: a --scenario, the built-in ShareGPT length distribution (sharegpt without a dataset
/// file), random's fixed lengths (bench::fixed_random_lengths), or the bench serve dataset sampled with the
/// model's tokenizer (a tokenizer that cannot be loaded
/// is an error that says how to do without one).
SimWorkload load_sim_workload(const SimRunArgs& a, const SimRunInputs& in) {
  SimWorkload w;
  if (!a.scenario.empty()) {
    w.requests = sim::scenario_workload(a.scenario, in.model, &w.note);
    w.name = a.scenario;
  } else if (a.bench.dataset_name == "sharegpt" && !a.bench.dataset_path) {
    w.requests = sim::sharegpt_workload(in.model, a.bench.num_prompts, &w.note);
    w.name = "sharegpt";
  } else if (bench::fixed_random_lengths(a.bench, in.resolved)) {
    // Exactly the lengths bench serve draws, without its tokenizer (new-user trial: offline, sim run asked
    // the Hub for a tokenizer where tune's twin, given the same flags, needed none).
    w.requests =
        sim::random_fixed(a.bench.num_prompts, in.resolved.random_input_len, in.resolved.random_output_len);
    w.name = "random";
  } else {
    const std::string tok_id = a.bench.tokenizer.value_or(a.bench.model.value_or(in.engine.model));
    std::optional<tokenizer::Tokenizer> loaded;
    try {
      std::string tok_revision =
          a.bench.revision.value_or(launch_flag_value(a.launch, "--tokenizer-revision"));
      if (tok_revision.empty() && !a.bench.tokenizer) tok_revision = in.model_revision;
      loaded.emplace(tokenizer::load_tokenizer(tok_id, hub_fetch(tok_revision)));
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string(e.what()) + "\nThe --dataset-name " + a.bench.dataset_name +
                               " workload is drawn with the model's tokenizer: pass --tokenizer FILE, or use "
                               "--scenario (e.g. random-1024in-128out, sharegpt-1000), which needs none.");
    }
    const auto& tok = *loaded;
    std::vector<std::string> warnings;  // as bench serve prints its dataset's warnings
    for (const auto& s : dataset::sample_requests(dataset_options(a.bench, in.resolved), tok, &warnings))
      w.requests.push_back({s.prompt_len, s.output_len, s.prefix_group, s.shared_prefix_len});
    for (const auto& warning : warnings) std::fprintf(stderr, "WARNING: %s\n", warning.c_str());
    w.name = a.bench.dataset_name;
  }
  return w;
}

/// "--name" of every long name of the options given on `run` (count > 0) that `match` accepts, in the
/// order CLI11 lists them.
template <class Match>
std::vector<std::string> given_options(const CLI::App& run, Match match) {
  std::vector<std::string> given;
  for (const CLI::Option* o : run.get_options()) {
    if (o->count() == 0) continue;
    for (const std::string& name : o->get_lnames())
      if (match(name)) given.push_back("--" + name);
  }
  return given;
}

/// --scenario names the whole workload (its requests' lengths and count); a dataset flag given beside it
/// would be ignored without a word, so it is refused (exit 2) naming the flags. The arrival flags
/// (--request-rate, --burstiness, --max-concurrency, --seed) apply to a scenario and stay allowed.
void refuse_workload_flags_beside_scenario(const CLI::App& run, const std::string& scenario) {
  if (scenario.empty()) return;
  static constexpr std::array<std::string_view, 11> kWorkloadPrefixes = {
      "dataset-", "num-prompts", "input-len",          "output-len", "random-",    "sharegpt-",
      "sonnet-",  "custom-",     "prefix-repetition-", "hf-",        "spec-bench-"};
  const auto flags = given_options(run, [](const std::string& name) {
    return std::any_of(kWorkloadPrefixes.begin(), kWorkloadPrefixes.end(),
                       [&](std::string_view p) { return name.rfind(p, 0) == 0; });
  });
  if (flags.empty()) return;
  const std::string given = fmt::format("{}", fmt::join(flags, ", "));
  std::fprintf(stderr,
               "servelab sim run: --scenario %s sets the workload (every request's prompt and output length "
               "and their count), so %s would be ignored: drop %s, or drop --scenario and describe the "
               "workload with the dataset flags\n",
               scenario.c_str(), given.c_str(), given.find(',') == std::string::npos ? "it" : "them");
  throw ExitRequest{2};
}

/// The bench serve flags given on `run` that change nothing in a prediction: the twin has no server to
/// connect to (--base-url, --header, --preconnect, --ready-check-timeout-sec, ...), runs no warm-up and one
/// schedule (--num-warmups, --shard, --start-at), never times a request out (--request-timeout-s) and has
/// no sampler (--temperature, --top-p, ..., --logprobs, --extra-body). Each is named in a note.
std::vector<std::string> client_only_flags(const CLI::App& run) {
  static constexpr std::array<std::string_view, 22> kClientOnly = {"base-url",
                                                                   "host",
                                                                   "port",
                                                                   "header",
                                                                   "insecure",
                                                                   "preconnect",
                                                                   "num-warmups",
                                                                   "shard",
                                                                   "start-at",
                                                                   "ntp-server",
                                                                   "request-timeout-s",
                                                                   "temperature",
                                                                   "top-p",
                                                                   "top-k",
                                                                   "min-p",
                                                                   "frequency-penalty",
                                                                   "presence-penalty",
                                                                   "repetition-penalty",
                                                                   "logprobs",
                                                                   "extra-body",
                                                                   "ready-check-timeout-sec",
                                                                   "use-beam-search"};
  return given_options(run, [](const std::string& name) {
    return std::find(kClientOnly.begin(), kClientOnly.end(), name) != kClientOnly.end();
  });
}

/// The twin's workload options: arrivals (rate, burstiness, ramp-up, concurrency cap, seed), the chat
/// template's tokens (none on /v1/completions) and an optional --calibration table.
sim::WorkloadOptions sim_workload_options(const SimRunArgs& a, const bench::ResolvedConfig& r) {
  sim::WorkloadOptions opt;
  opt.request_rate = r.request_rate;
  opt.burstiness = a.bench.burstiness;
  opt.max_concurrency = a.bench.max_concurrency;
  opt.seed = static_cast<std::uint64_t>(a.bench.seed);
  const bench::RampUpRates ramp = bench::ramp_up_rates(a.bench);  // bench serve's arrivals, in the twin
  opt.ramp_up = ramp.kind;
  opt.ramp_up_start_rps = ramp.start_rps;
  opt.ramp_up_end_rps = ramp.end_rps;
  if (a.bench.endpoint.find("chat") == std::string::npos) opt.chat_template_tokens = 0;
  if (!a.calibration.empty())
    opt.calibration = sim::calibration_table_from_json(common::read_file(a.calibration));
  return opt;
}

/// Whether a --model-config's model (its `_name_or_path`) names another checkpoint than the launch's model:
/// their last path components differ, case aside. A config without a name (its id is the file path) or a
/// launch that serves a local path is not compared.
bool model_config_names_another_model(const std::string& launch_model, const std::string& config_id) {
  auto last = [](const std::string& s) {
    const std::size_t slash = s.find_last_of('/');
    return common::ascii_lower(slash == std::string::npos ? s : s.substr(slash + 1));
  };
  if (config_id.empty() || launch_model.empty() || config_id.ends_with(".json")) return false;
  if (launch_model.front() == '/' || launch_model.front() == '.') return false;
  return last(launch_model) != last(config_id);
}

/// The lines before the prediction: launch, hardware, model, workload, the network of a multi-node cluster
/// and GPUs the launch leaves idle.
void print_sim_run_header(const SimRunArgs& a, const SimRunInputs& in, const SimWorkload& w) {
  const auto& cluster = in.cluster;
  std::printf("Prediction of the servelab engine twin (virtual time, not a measurement)\n");
  // The model as the launch names it: a config's `_name_or_path` can be the checkpoint directory it was
  // saved from on another machine ("/opt/.../Llama-3.1-70B-Instruct/"); the Config line names the file.
  const std::string& model = in.engine.model.empty() ? in.model.id : in.engine.model;
  std::printf("Launch:   %s\nHardware: %s   Model: %s (%s)   Workload: %s (%zu requests)\n",
              engines::render_command(in.engine).c_str(), hardware::cluster_name(cluster).c_str(),
              model.c_str(), in.model.model_type.c_str(), w.name.c_str(), w.requests.size());
  std::printf("Config:   %s\n", in.model.config_source.c_str());
  if (!a.model_config.empty() && model_config_names_another_model(in.engine.model, in.model.id))
    std::printf(
        "Warning: --model-config describes %s, not the launch's model %s: the prediction is for %s's "
        "architecture, size and quantization\n",
        in.model.id.c_str(), in.engine.model.c_str(), in.model.id.c_str());
  if (!w.note.empty()) std::printf("          %s\n", w.note.c_str());
  if (!in.release_note.empty()) std::printf("Release:  %s\n", in.release_note.c_str());
  if (cluster.nodes > 1)
    std::printf("Network:  %d nodes, %d x %.0f Gb/s %s per node, %.0f%% of line rate for collectives%s\n",
                cluster.nodes, cluster.network.nics_per_node, cluster.network.nic_Bps * 8 / 1e9,
                cluster.network.kind.c_str(), cluster.network.efficiency * 100,
                a.network.empty() ? " (default; --network changes it)" : "");
  else if (!a.network.empty())
    std::printf("Note: --network %s has no effect: --hardware %s is one node (no traffic between nodes)\n",
                a.network.c_str(), a.hardware.c_str());
  if (in.engine.gpus_used() < cluster.total_gpus())
    std::printf("Note: the launch uses %d of the %d GPUs of --hardware %s (the others stay idle)\n",
                in.engine.gpus_used(), cluster.total_gpus(), a.hardware.c_str());
}

/// The calibration behind a prediction: error band, engine version, fitted class and its fallback level,
/// the launch's inert and unmodelled flags (and with --explain every resolved default).
void print_prediction_context(const SimRunArgs& a, const engines::LaunchConfig& engine,
                              const sim::PredictionContext& ctx, int failed, int requests,
                              const std::string& first_error) {
  // The band was measured on benchmarks whose requests completed: none for a run with failed requests.
  if (failed > 0)
    std::printf("Warning: %d of %d requests fail (no error band: it covers completed benchmarks)%s\n", failed,
                requests, first_error.empty() ? "" : (", e.g.: " + first_error).c_str());
  else
    std::printf("Error band (leave-one-study-out): %s\n", sim::format_band(ctx.band).c_str());
  std::printf("Engine %s %s; fitted class %s (%s)\n", engines::engine_kind_name(engine.kind),
              ctx.launch.version.c_str(), ctx.key.name().c_str(),
              ctx.level == sim::CalibrationLevel::kClass ? "fitted"
              : ctx.level == sim::CalibrationLevel::kFamily
                  ? "no data for this GPU generation: the release's pooled value"
              : ctx.level == sim::CalibrationLevel::kEngine
                  ? "no data for the class: the engine's pooled value"
                  : "no data: the prior");
  const auto& image_version = ctx.launch.config.image_version;
  if (!image_version.empty() && image_version != ctx.launch.version)
    std::printf("Note: the container image's tag names %s %s; %s is modelled (--engine-version)\n",
                engines::engine_kind_name(ctx.launch.config.kind), image_version.c_str(),
                ctx.launch.version.c_str());
  for (const auto& f : ctx.launch.inert_flags) std::printf("Note: %s has no modelled effect\n", f.c_str());
  if (!a.client_only_flags.empty()) {
    std::string names;
    for (const auto& f : a.client_only_flags) names += (names.empty() ? "" : ", ") + f;
    std::printf(
        "Note: %s %s not applied by the twin (it connects to no server, sends no request body, runs no "
        "warm-up, one schedule and no sampler, and never times a request out)\n",
        names.c_str(), a.client_only_flags.size() == 1 ? "is" : "are");
  }
  for (const auto& u : ctx.launch.unmodelled)
    std::printf("Warning: not modelled, this prediction can be far off: %s\n", u.c_str());
  if (const int shared = a.scenario.empty() ? bench::shared_prefix_tokens(a.bench) : 0; shared > 0)
    std::printf(
        ctx.launch.prefix_caching
            ? "Note: the %s dataset's %d-token shared prefixes are prefilled once per rank and reused from "
              "the prefix cache while their blocks survive (held once by the requests that reference them)\n"
            : "Note: prefix caching is off in this launch: the %s dataset's %d-token shared prefixes are "
              "prefilled with every request\n",
        a.bench.dataset_name.c_str(), shared);
  if (a.scenario.empty() && a.bench.dataset_name == "sonnet" && ctx.launch.prefix_caching)
    std::printf(
        "Warning: not modelled, this prediction can be far off: prefix caching of the sonnet dataset's "
        "shared %d-token prefix (the twin prefills every prompt token; TTFT and prefill time are upper "
        "bounds)\n",
        a.bench.sonnet_prefix_len);
  if (a.explain) {
    for (const auto& n : ctx.launch.notes) std::printf("  resolved: %s\n", n.c_str());
    // The dtype the twin sizes and times the KV cache with (the engine's flag or default resolved it).
    std::printf("  resolved: KV cache dtype %s\n", model::dtype_name(ctx.launch.kv_dtype));
  }
}

void run_sim_run(SimRunArgs& a) {
  if (a.launch.empty()) {
    std::fprintf(
        stderr,
        "servelab sim run: give the engine launch command after --, e.g.\n"
        "  servelab sim run --scenario sharegpt-1000 -- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8\n");
    throw ExitRequest{2};
  }
  const SimRunInputs in = load_sim_run_inputs(a);
  const auto& r = in.resolved;
  // A launch that does not start (a GPU the twin does not model, the engine's refusal, out of memory) is
  // said before the workload is drawn: its tokenizer may be missing, and thousands of long prompts take
  // seconds to tokenize (a new user waited 13 s for an OOM).
  if (const auto f = sim::startup_failure(in.engine, in.cluster, in.model)) {
    std::printf("Predicted failure: %s\n", f->message.c_str());
    throw ExitRequest{1};
  }
  const SimWorkload w = load_sim_workload(a, in);
  const sim::WorkloadOptions opt = sim_workload_options(a, r);
  print_sim_run_header(a, in, w);
  const auto result = sim::predict(in.engine, in.cluster, in.model, w.requests, opt);
  if (const auto* f = std::get_if<sim::PredictedFailure>(&result)) {
    std::printf("Predicted failure: %s\n", f->message.c_str());
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
  run.model_id = in.engine.model;
  run.tokenizer_id = a.bench.tokenizer.value_or(run.model_id);  // as bench serve records it
  run.num_prompts = static_cast<int>(w.requests.size());
  run.request_rate = r.request_rate;
  run.burstiness = a.bench.burstiness;
  run.max_concurrency = a.bench.max_concurrency;
  if (a.bench.ramp_up_strategy)
    run.ramp_up = report::RampUp{*a.bench.ramp_up_strategy, a.bench.ramp_up_start_rps.value_or(0),
                                 a.bench.ramp_up_end_rps.value_or(0)};
  const auto selected =
      metrics::parse_percentile_metrics(a.bench.percentile_metrics.value_or("ttft,tpot,itl"));
  // A prediction on a kernel path the twin has no figure for is said before its numbers, not only after
  // them: a reader scanning the block would otherwise take a several-times-off throughput at face value.
  if (!p.context.launch.unmodelled.empty())
    std::printf(
        "Warning: this launch runs a kernel path the twin has no figure for: the numbers below can be many "
        "times off (tok/s up to %.1fx too high, band ±%.0f%%; latencies without a bound; why: after the "
        "result "
        "block)\n",
        sim::band_times_off(p.context.band.total_tok_s_pct), p.context.band.total_tok_s_pct);
  std::printf("%s", report::format_console_block(run, m, selected).c_str());
  std::printf("%s", report::format_console_extras(run, m).c_str());
  std::string first_error;
  for (const auto& o : p.outputs)
    if (!o.success && !o.error.empty()) {
      first_error = o.error;
      break;
    }
  print_prediction_context(a, in.engine, p.context, m.failed, static_cast<int>(w.requests.size()),
                           first_error);
  std::printf("%s", twin_view_block(p.twin).c_str());
  // --save-result / --append-result: the same JSON as bench serve, marked as the twin's prediction.
  if (a.bench.save_result || a.bench.append_result) {
    run.date = report::current_date_string();
    report::ReportOptions ro;
    ro.percentile_metrics = selected;
    ro.save_detailed = a.bench.save_detailed;
    auto j = report::make_result_json(run, m, p.outputs, ro);
    j["servelab_engine_twin_prediction"] = true;
    j["servelab_launch"] = engines::render_command(in.engine);
    j["servelab_engine_version"] = p.context.launch.version;  // the release predicted (see "Release:")
    // The default file name says it is the twin's ("twin-openai-...json"), so that a prediction saved
    // beside a measurement of the same run in the same second cannot replace it.
    report::RunInfo named = run;
    if (!named.label) named.label = "twin-" + run.backend;
    const auto path =
        report::result_path(named, a.bench.result_dir.value_or(""), a.bench.result_filename.value_or(""));
    report::write_result_file(path, j, a.bench.append_result);
    std::printf("Result saved to %s\n", path.string().c_str());
  }
}

// The corpus beside the data directory (shared/reference next to shared/data), as the data is found.
std::string default_corpus() {
  return (common::data_dir().parent_path() / "reference").string();
}

// Every released corpus beside the data directory: the lab's studies and InferenceMAX's points (what
// calibration.json is fitted on; sim validate's issue 29 targets are on this union).
std::vector<std::string> every_released_corpus() {
  const std::string reference = default_corpus();
  return {reference, (std::filesystem::path(reference) / "inferencemax").string()};
}

// "--corpus A --corpus B" for a report or a file's comment; " (the default)" when none was given.
std::string corpus_arguments(const std::vector<std::string>& corpus, bool defaulted) {
  std::string named;
  for (const auto& path : corpus) named += (named.empty() ? "--corpus " : " --corpus ") + path;
  return defaulted ? named + " (the default)" : named;
}

std::vector<std::filesystem::path> corpus_paths(const std::vector<std::string>& given) {
  return {given.begin(), given.end()};
}

void setup_sim(CLI::App& root) {
  auto* sim =
      root.add_subcommand("sim",
                          "The engine twin of an engine launch on GPUs: predict a benchmark offline (run, "
                          "validate, calibrate) or serve an OpenAI-compatible API in real time (serve)");
  sim->require_subcommand(1);

  auto run_args = std::make_shared<SimRunArgs>();
  auto* run =
      sim->add_subcommand("run", "Predict a benchmark (bench serve workload flags) of an engine launch");
  run->add_option("--hardware", run_args->hardware,
                  "GPUs, e.g. 8xH200, 1xA100, 16xH100 (two nodes of eight), 2x8xH100")
      ->capture_default_str();
  run->add_option("--network", run_args->network,
                  "network between nodes, e.g. 8x400G (NICs per node x Gb/s)");
  run->add_option(
      "--engine-version", run_args->engine_version,
      "engine version whose flags and defaults apply (default: the release an engine image's tag names, else "
      "the engine module's default, or the oldest modelled release that can load the model's "
      "architecture when the default predates it)");
  run->add_option("--calibration", run_args->calibration,
                  "a calibration.json to use instead of the embedded fit (what-ifs; see sim calibrate)");
  run->add_option(
      "--scenario", run_args->scenario,
      "a study workload instead of dataset flags: sharegpt-<N> (N prompts of the built-in ShareGPT lengths, "
      "e.g. sharegpt-1000), random-<in>in-<out>out[-n<N>] "
      "(N defaults to 1000, as bench serve's --num-prompts)");
  run->add_option("--model-config", run_args->model_config,
                  "HF config.json of the served model (default: from the launch); a ModelOpt "
                  "hf_quant_config.json beside it is read as engines do");
  run->add_flag("--explain", run_args->explain, "print every default and rule the engine resolution applied");
  auto op_data = std::make_shared<std::string>(kOpDataDefault);
  add_op_data_option(*run, *op_data);
  bench::add_bench_flags(*run, run_args->bench);
  run->add_option("launch", run_args->launch, "the engine's launch command, after --");
  run->allow_extras();  // to say what to do about engine flags given without `--` (below)
  run->callback([run_args, run, op_data] {
    apply_op_data(*op_data);
    std::string extra;
    for (const auto& x : run->remaining())
      if (x != "--") extra += (extra.empty() ? "" : " ") + x;  // CLI11 keeps the separator itself
    if (!extra.empty()) {
      std::fprintf(
          stderr,
          "servelab sim run: unexpected argument(s): %s\n  If they belong to the engine, put `--` before "
          "its launch command:\n  servelab sim run [workload flags] -- vllm serve "
          "deepseek-ai/DeepSeek-V3.2 -tp 8\n",
          extra.c_str());
      throw ExitRequest{2};
    }
    refuse_workload_flags_beside_scenario(*run, run_args->scenario);
    run_args->client_only_flags = client_only_flags(*run);
    run_sim_run(*run_args);
  });

  auto corpus = std::make_shared<std::vector<std::string>>(std::vector<std::string>{default_corpus()});
  auto per_point = std::make_shared<bool>(false);
  auto threads = std::make_shared<int>(0);
  auto* val = sim->add_subcommand("validate",
                                  "Held-out validation of the twin on a corpus of measured studies: leave "
                                  "one study out, one GPU type out, one "
                                  "engine release out (--split)");
  val->add_option("--corpus", *corpus,
                  "directory with seed-measurements.json and/or perflab/measurements.json, or with an "
                  "InferenceMAX points.json (../shared/reference/inferencemax), or one such file; repeat it "
                  "for the union of several (--corpus ../shared/reference --corpus "
                  "../shared/reference/inferencemax: every released corpus)")
      ->capture_default_str();
  val->add_flag("--per-point", *per_point, "print every point (measured / predicted / error)");
  auto in_sample = std::make_shared<bool>(false);
  val->add_flag("--in-sample", *in_sample,
                "also fit on every study and predict the same studies (the fit `sim calibrate` writes; NOT a "
                "held-out figure; its second round simulates every point again: ~1.7x the time)");
  val->add_option("--threads", *threads, "simulations in parallel (0 = all cores)")->capture_default_str();
  add_op_data_option(*val, *op_data);
  auto split = std::make_shared<std::string>("all");
  val->add_option(
         "--split", *split,
         "what a fold holds out: study (leave one study out only), gpu (also leave one GPU type out), "
         "release (also leave one engine release out, e.g. vllm 0.11.0), all (the three; ~20 s on 2 cores "
         "on the default corpus, study alone ~10 s; study over every released corpus ~100 s, 1.5x with "
         "--in-sample)")
      ->check(CLI::IsMember({"study", "gpu", "release", "all"}))
      ->capture_default_str();
  val->callback([corpus, per_point, threads, op_data, split, val, in_sample] {
    apply_op_data(*op_data);
    const auto c = sim::load_corpora(corpus_paths(*corpus));
    std::vector<sim::ValidationSplit> extra;
    if (*split == "gpu" || *split == "all") extra.push_back(sim::ValidationSplit::kGpu);
    if (*split == "release" || *split == "all") extra.push_back(sim::ValidationSplit::kRelease);
    const auto v = sim::validate_corpus(
        c, *threads, extra,
        [](const std::string& line) { std::fprintf(stderr, "sim validate: %s\n", line.c_str()); },
        *in_sample);
    std::printf("%s", sim::format_corpus_validation(v, *per_point,
                                                    corpus_arguments(*corpus, val->count("--corpus") == 0))
                          .c_str());
  });

  auto write = std::make_shared<std::string>();
  auto cal_corpus = std::make_shared<std::vector<std::string>>(every_released_corpus());
  auto* cal = sim->add_subcommand(
      "calibrate",
      "Fit the twin's parameters to a corpus (and compute its error bands by leaving each study out)");
  cal->add_option("--corpus", *cal_corpus,
                  "as for validate; the default is every released corpus (the lab's studies and "
                  "InferenceMAX's points), what the embedded calibration.json is fitted on")
      ->capture_default_str();
  cal->add_option("--write", *write, "write calibration.json here (else print it)");
  cal->add_option("--threads", *threads, "simulations in parallel (0 = all cores)")->capture_default_str();
  add_op_data_option(*cal, *op_data);
  cal->callback([cal_corpus, write, threads, op_data] {
    apply_op_data(*op_data);
    const auto c = sim::load_corpora(corpus_paths(*cal_corpus));
    const auto v = sim::validate_corpus(c, *threads, {}, [](const std::string& line) {
      std::fprintf(stderr, "sim calibrate: %s\n", line.c_str());
    });
    std::fprintf(stderr, "fit on %d points: objective %.3f at the priors -> %.3f\n", v.full_fit.points,
                 v.full_fit.objective_prior, v.full_fit.objective);
    // The comment names the corpora by their place beside the data directory, not this machine's paths.
    std::vector<std::string> named;
    const auto shared = common::data_dir().parent_path();
    for (const auto& path : *cal_corpus) {
      std::error_code ec;
      const auto rel = std::filesystem::relative(path, shared.parent_path(), ec);
      named.push_back(ec || rel.empty() || rel.string().rfind("..", 0) == 0 ? path : "../" + rel.string());
    }
    const std::string json = sim::calibration_json_of(
        v, corpus_arguments(named, false));  // throws when a parameter ends on a bound
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

SERVELAB_REGISTER_COMMAND("sim", 40, setup_sim);

}  // namespace servelab::cli
