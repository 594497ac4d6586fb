// `servelab sim serve [--hardware 8xH200] [--host H] [--port P] [--time-scale X] -- <engine launch command>`:
// the engine twin as an OpenAI-compatible server. Tokens leave at the times the twin's schedulers and
// step-time model predict for the launch (the same OnlineTwin/Simulator as `sim run`).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_registry.h"
#include "cli/hub_fetch.h"
#include "cli/op_data.h"
#include "servelab/common/paths.h"
#include "servelab/common/stop_signals.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/sim.h"
#include "servelab/simserve/simserve.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::cli {
namespace {

struct SimServeArgs {
  std::string hardware = "8xH200";
  std::string op_data = kOpDataDefault;  ///< --op-data (cli/op_data.h)
  std::string engine_version;
  std::string calibration;
  std::string host = "127.0.0.1";
  int port = -1;  // -1: the launch command's port (its --port, else the engine's default)
  double time_scale = 1.0;
  std::uint64_t seed = 0;
  std::string tokenizer;
  std::string model_config;
  double reasoning_fraction = 0.5;
  int default_max_tokens = 0;
  double startup_delay_s = 0.0;
  std::string ready_lines;
  double crash_after_s = 0.0;
  std::string crash_message = "RuntimeError: CUDA error: an illegal memory access was encountered";
  std::vector<std::string> launch;
};

/// Set once SIGINT/SIGTERM arrived (by the StopOnSignals watcher thread); read by the start-up delay and
/// the crash-injection timer, which may outlive the watcher.
std::atomic<bool> g_stop_requested{false};

/// The server a signal stops, once attached; a signal before that (while the twin and tokenizer load)
/// stops it as soon as it is attached.
class StopTarget {
 public:
  /// From the signal watcher: stop the attached server (Server::stop locks and allocates: never from a
  /// signal handler).
  void stop() {
    std::lock_guard lock(mu_);
    requested_ = true;
    g_stop_requested = true;
    if (server_) server_->stop();
  }
  void attach(simserve::Server* server) {
    std::lock_guard lock(mu_);
    server_ = server;
    if (server_ && requested_) server_->stop();
  }

 private:
  std::mutex mu_;
  simserve::Server* server_ = nullptr;
  bool requested_ = false;
};

// The twin's per-rank live state as /metrics serves it (vLLM names; simserve/metrics_text.h).
std::vector<simserve::EngineMetrics> engine_metrics(const sim::OnlineTwin& twin) {
  std::vector<simserve::EngineMetrics> out;
  for (const auto& e : twin.live_metrics()) {
    simserve::EngineMetrics m;
    m.kv_cache_usage = e.kv_cache_usage;
    m.num_requests_running = e.num_requests_running;
    m.num_requests_waiting = e.num_requests_waiting;
    m.num_preemptions = e.num_preemptions;
    m.prefix_cache_queries = e.prefix_cache_queries;
    m.prefix_cache_hits = e.prefix_cache_hits;
    m.spec_decode_num_drafts = e.spec_decode_num_drafts;
    m.spec_decode_num_draft_tokens = e.spec_decode_num_draft_tokens;
    m.spec_decode_num_accepted_tokens = e.spec_decode_num_accepted_tokens;
    out.push_back(m);
  }
  return out;
}

/// Sleeps `s` seconds in small steps; false if a signal asked to stop meanwhile.
bool sleep_unless_stopped(double s) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  while (std::chrono::steady_clock::now() < end) {
    if (g_stop_requested) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return !g_stop_requested;
}

/// The engine `sim serve` stands in for: its launch (with config files), the GPUs, the served model, and
/// the online twin, or, when the launch starts and then dies on its first step, the twin's reason for that.
struct ServedEngine {
  engines::LaunchConfig engine;
  hardware::ClusterSpec cluster;
  std::string model_revision;  ///< the launch's --revision ("" = default branch)
  model::ModelSpec model;
  std::unique_ptr<sim::OnlineTwin> twin;  ///< null: a run-time failure (runtime_failure says why)
  std::string runtime_failure;
};

/// Parses the launch and --hardware, loads the model's config and builds the online twin (with an
/// optional --calibration table). A launch that would not come up prints the engine's reason and exits 1.
ServedEngine load_served_engine(const SimServeArgs& a) {
  ServedEngine s;
  s.cluster = hardware::parse_cluster(a.hardware);
  s.model_revision = launch_flag_value(a.launch, "--revision");
  engines::ReleasedLaunch released;
  try {
    released = parse_served_launch(a.launch, a.engine_version, a.model_config, s.model_revision);
  } catch (const engines::EngineArgError& e) {
    std::fprintf(stderr, "%s\n", e.what());  // as the engine prints it, and exits with argparse's status
    print_release_checked(e);
    throw ExitRequest{2};
  }
  s.engine = std::move(released.config);
  s.model = std::move(released.model);
  print_release_notices(released);
  if (!released.note.empty()) std::fprintf(stderr, "%s\n", released.note.c_str());
  std::optional<sim::CalibrationTable> calibration;
  if (!a.calibration.empty())
    calibration = sim::calibration_table_from_json(common::read_file(a.calibration));
  auto created = sim::OnlineTwin::create(s.engine, s.cluster, s.model, calibration);
  if (auto* f = std::get_if<sim::PredictedFailure>(&created)) {
    if (f->kind != sim::PredictedFailure::Kind::kRuntime) {
      // The engine would not come up: say so as it would, and exit non-zero like the engine.
      std::fprintf(stderr, "%s\n", f->message.c_str());
      throw ExitRequest{1};
    }
    s.runtime_failure = f->message;
  } else {
    s.twin = std::move(std::get<std::unique_ptr<sim::OnlineTwin>>(created));
  }
  return s;
}

/// The server's options: address (the launch's port unless --port), served model names, context limit
/// (tokens), time scale, output draw and reasoning split.
simserve::ServerOptions serve_options(const SimServeArgs& a, const ServedEngine& s) {
  const auto& engine = s.engine;
  simserve::ServerOptions o;
  o.host = a.host;
  const int port = a.port >= 0 ? a.port : engine.port;
  if (port < 0 || port > 65535)
    throw std::invalid_argument(
        fmt::format("the launch command's port {} is not a TCP port (0-65535)", port));
  o.port = static_cast<unsigned short>(port);
  o.served_models =
      engine.served_model_names.empty() ? std::vector<std::string>{engine.model} : engine.served_model_names;
  o.root_model = engine.model;
  // A launch that dies on its first step has no resolved context; the server advertises the configured one.
  o.max_model_len =
      s.twin ? s.twin->max_model_len() : engine.max_model_len.value_or(s.model.max_position_embeddings);
  o.vocab_size = s.model.vocab_size;
  o.thinking_default = s.model.chat_template.thinks_by_default;
  o.max_logprobs = engine.max_logprobs.value_or(o.max_logprobs);
  o.time_scale = a.time_scale;
  o.seed = a.seed;
  o.reasoning_parser = !engine.reasoning_parser.empty();
  o.reasoning_fraction = a.reasoning_fraction;
  o.default_max_tokens = a.default_max_tokens;
  return o;
}

/// The server's engine model: the online twin, or, after a run-time failure, an engine that dies on the
/// first request with the twin's reason as its last words (as vLLM -dcp with FlashMLA sparse dies at its
/// first decode step).
simserve::Timeline serve_timeline(const ServedEngine& s) {
  if (!s.twin) {
    return simserve::Timeline{[reason = s.runtime_failure](std::uint64_t, int, int, double) {
                                std::fprintf(stderr, "%s\n", reason.c_str());
                                std::fflush(stderr);
                                std::_Exit(1);
                              },
                              [](std::uint64_t) {},
                              [](double, const std::function<void(std::uint64_t, int, double)>&) {},
                              [] { return std::numeric_limits<double>::infinity(); }};
  }
  sim::OnlineTwin* t = s.twin.get();
  simserve::Timeline timeline{
      [t](std::uint64_t id, int prompt, int output, double now) { t->submit(id, prompt, output, now); },
      [t](std::uint64_t id) { t->cancel(id); },
      [t](double ts, const std::function<void(std::uint64_t, int, double)>& emit) {
        t->advance_to(ts, emit);
      },
      [t] { return t->next_event_s(); }};
  timeline.admit = [t](int prompt, int output) {
    simserve::Admission a;
    a.refusal = t->refusal(prompt, output);
    a.output_tokens = a.refusal ? 0 : t->admitted_output(prompt, output);
    return a;
  };
  timeline.engine_metrics = [t] { return engine_metrics(*t); };
  timeline.spec_decode = s.twin->speculative();
  return timeline;
}

/// The lines on stderr once the server listens: what it twins, where, the error band and unmodelled
/// flags, then --ready-lines (what a launcher waits for).
void print_serve_banner(const SimServeArgs& a, const ServedEngine& s, const simserve::ServerOptions& o,
                        unsigned short port) {
  const auto& engine = s.engine;
  std::string models = fmt::format("model \"{}\"", o.served_models[0]);
  for (std::size_t i = 1; i < o.served_models.size(); ++i)
    models += fmt::format(", also \"{}\"", o.served_models[i]);
  const int gpus = engine.gpus_used();
  std::fprintf(stderr,
               "servelab sim serve: twin of `%s` (%s, %d GPU%s) on %s; max_model_len %d; time scale %g\n"
               "  listening on http://%s:%u  (%s; Ctrl-C stops)\n",
               engines::render_command(engine).c_str(), engines::engine_kind_name(engine.kind), gpus,
               gpus == 1 ? "" : "s", a.hardware.c_str(), o.max_model_len, o.time_scale, o.host.c_str(), port,
               models.c_str());
  if (s.twin) {
    std::fprintf(stderr, "  prediction error band (leave-one-study-out): %s\n",
                 sim::format_band(s.twin->context().band).c_str());
    for (const auto& u : s.twin->context().launch.unmodelled)
      std::fprintf(stderr, "  warning: not modelled, predictions can be far off: %s\n", u.c_str());
  }
  if (!a.ready_lines.empty()) std::fprintf(stderr, "%s\n", a.ready_lines.c_str());
  std::fflush(stderr);
}

void run_serve(const SimServeArgs& a) {
  StopTarget target;
  // First, so that Ctrl-C while the twin loads is not lost (destroyed last); a second signal exits (130).
  common::StopOnSignals signals([&target] { target.stop(); });
  if (a.launch.empty()) {
    throw std::runtime_error(
        "sim serve: give the engine's launch command after --, e.g. "
        "servelab sim serve -- vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8");
  }
  const ServedEngine served = load_served_engine(a);
  const simserve::ServerOptions o = serve_options(a, served);
  simserve::Timeline timeline = serve_timeline(served);

  std::string tok_revision = launch_flag_value(a.launch, "--tokenizer-revision");
  if (tok_revision.empty() && a.tokenizer.empty()) tok_revision = served.model_revision;
  const auto tok = tokenizer::load_tokenizer(a.tokenizer.empty() ? served.engine.model : a.tokenizer,
                                             hub_fetch(tok_revision));
  simserve::Server server(o, std::move(timeline), tok);
  const unsigned short port = server.start();
  // Start-up delay: the port is bound (connections wait in the backlog, /health gets no answer) as a real
  // engine holds its port while it loads weights.
  if (a.startup_delay_s > 0 && !sleep_unless_stopped(a.startup_delay_s)) return;
  print_serve_banner(a, served, o, port);
  if (a.crash_after_s > 0) {  // --crash-after-s: the engine dies mid-run with --crash-message
    std::thread([s = a.crash_after_s, msg = a.crash_message] {
      if (!sleep_unless_stopped(s)) return;
      std::fprintf(stderr, "%s\n", msg.c_str());
      std::fflush(stderr);
      std::_Exit(1);
    }).detach();
  }
  target.attach(&server);
  server.run();
  target.attach(nullptr);
  if (!served.twin) return;
  const auto v = served.twin->view();
  std::fprintf(stderr,
               "servelab sim serve: stopped after %lld engine steps (peak KV use %.1f%%, %lld preemptions)\n",
               v.steps, 100.0 * v.kv_peak_fraction, v.preemptions);
}

void setup_sim_serve(CLI::App& root) {
  CLI::App* sim = root.get_subcommand("sim");
  auto args = std::make_shared<SimServeArgs>();
  auto* serve = sim->add_subcommand(
      "serve",
      "Serve an OpenAI-compatible API (/health, /v1/models, /v1/completions, /v1/chat/completions) whose "
      "tokens leave when the twin of the launch command predicts");
  serve->add_option("--hardware", args->hardware, "GPU node, e.g. 8xH200")->capture_default_str();
  serve->add_option("--calibration", args->calibration,
                    "a calibration.json to use instead of the embedded fit (what-ifs; see sim calibrate)");
  serve->add_option(
      "--engine-version", args->engine_version,
      "engine version whose flags and defaults apply (default: the release an engine image's tag names, else "
      "the engine module's default, or the oldest modelled release that can load the model's "
      "architecture when the default predates it)");
  serve
      ->add_option("--host", args->host,
                   "Bind address. The twin binds loopback unless told here; the launch command's --host is "
                   "recorded, not used")
      ->capture_default_str();
  serve
      ->add_option(
          "--port", args->port,
          "Port, 0-65535; 0 binds a free one (default: the launch command's --port, else the engine's "
          "default)")
      ->check(CLI::Range(0, 65535));
  serve->add_option("--time-scale", args->time_scale, "Run this many times faster than real time (> 0)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](const std::string& v) -> std::string {
            double x = 0;
            try {
              x = std::stod(v);
            } catch (const std::exception&) {
              return "--time-scale " + v + " is not a number";
            }
            return x > 0 && std::isfinite(x) ? "" : "--time-scale must be a number > 0, got " + v;
          },
          "> 0"));
  serve->add_option("--seed", args->seed, "Seed of the output-token draws (a request's `seed` overrides)")
      ->capture_default_str();
  serve->add_option("--tokenizer", args->tokenizer,
                    "Tokenizer for prompt counting (default: the launch's model)");
  serve->add_option("--model-config", args->model_config,
                    "HF config.json of the served model (default: from the launch); a ModelOpt "
                    "hf_quant_config.json beside it is read as engines do");
  serve
      ->add_option(
          "--reasoning-fraction", args->reasoning_fraction,
          "With the launch's --reasoning-parser and a thinking request, the share of output tokens "
          "streamed as reasoning_content. A chat request thinks when its chat_template_kwargs "
          "(thinking / enable_thinking) say so, else as the model's template does by default "
          "(Qwen3, Qwen3.5, GLM, gpt-oss, DeepSeek-R1, MiniMax-M2 think; DeepSeek-V3.2, Llama do not)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  serve
      ->add_option("--default-max-tokens", args->default_max_tokens,
                   "Output tokens when a request sets no max_tokens (0: up to the end of the context). The "
                   "twin has no language model to emit EOS, so a request always runs to its budget")
      ->capture_default_str();
  serve
      ->add_option(
          "--startup-delay-s", args->startup_delay_s,
          "Hold the port this many seconds before answering, as an engine loading its weights (stand-ins)")
      ->check(CLI::Range(0.0, 86400.0));
  serve->add_option(
      "--ready-lines", args->ready_lines,
      "Text to print on stderr once serving, e.g. an engine's start-up lines (newlines allowed)");
  serve
      ->add_option("--crash-after-s", args->crash_after_s,
                   "Crash injection: exit 1 this many seconds after becoming ready, printing --crash-message")
      ->check(CLI::Range(0.0, 1e9));
  serve->add_option("--crash-message", args->crash_message, "Last line printed by --crash-after-s")
      ->capture_default_str();
  serve->add_option("launch", args->launch, "the engine's launch command, after --");
  add_op_data_option(*serve, args->op_data);
  serve->callback([args] {
    apply_op_data(args->op_data);
    run_serve(*args);
  });
}

}  // namespace

SERVELAB_REGISTER_COMMAND("sim serve", 41,
                          setup_sim_serve);  // after "sim" (order 40), which creates the group

}  // namespace servelab::cli
