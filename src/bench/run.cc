// servelab/bench: the `bench serve` orchestration, in vLLM 0.13's `main_async` / `benchmark` order.
#include <unistd.h>

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <memory>

#include "bench/http_get.h"
#include "bench/progress.h"
#include "bench/ramp_up.h"
#include "bench/server_clock.h"
#include "bench/shard.h"
#include "bench/workload.h"
#include "servelab/bench/bench.h"
#include "servelab/bench/status.h"
#include "servelab/client/client.h"
#include "servelab/client/session.h"
#include "servelab/common/python_json.h"
#include "servelab/common/redact.h"
#include "servelab/dataset/dataset.h"
#include "servelab/dataset/multi_turn.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::bench {
namespace {

// Console printer honouring RunIo::quiet.
struct Printer {
  const RunIo& io;
  template <class... Args>
  void line(fmt::format_string<Args...> f, Args&&... args) const {
    if (io.quiet) return;
    std::string s = fmt::format(f, std::forward<Args>(args)...);
    s += '\n';
    std::fputs(s.c_str(), io.out);
    std::fflush(io.out);
  }
  void raw(const std::string& s) const {
    if (io.quiet) return;
    std::fputs(s.c_str(), io.out);
    std::fflush(io.out);
  }
};

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// --shard: this host's part of (planned, schedule), its clock offset measured (and printed); then sleeps
// until 1 s before --start-at. Throws BenchError when the clock reference fails or a stop comes first.
ShardPlan plan_shard(const RunOptions& config, const ShardSpec& spec,
                     std::span<const client::PlannedRequest> planned, std::span<const double> schedule,
                     int max_concurrency, const Printer& print, std::stop_token stop) {
  ShardPlan shard = make_shard_plan(spec, *config.start_at, planned, schedule);
  print.line(
      "Shard {}/{} (0-based): {} of {} requests (index mod {} == {}), schedule t = 0 at {:.3f} (Unix s); "
      "maximum request concurrency of this shard: {}",
      spec.index, spec.count, shard.requests.size(), planned.size(), spec.count, spec.index, *config.start_at,
      max_concurrency > 0 ? std::to_string(max_concurrency) : std::string("None"));
  try {
    shard.record.clock =
        config.clock_reference ? measure_ntp_offset(*config.clock_reference) : kernel_clock_estimate();
  } catch (const std::exception& e) {
    throw BenchError(e.what());
  }
  const ClockOffset& c = shard.record.clock;
  print.line("Clock offset: {:+.3f} ms +/- {:.3f} ms ({}{}{})", c.offset_ms, c.uncertainty_ms, c.method,
             c.reference.empty() ? "" : " against " + c.reference,
             c.method != "kernel" ? ""
             : c.synchronized     ? ", synchronized, offset assumed 0"
                                  : ", NOT synchronized, offset assumed 0");
  if (!sleep_until_before(*config.start_at, 1.0, stop))
    throw BenchError("interrupted while waiting for --start-at; nothing was measured");
  return shard;
}

}  // namespace

std::pair<std::string, std::string> discover_first_model(
    const std::string& base_url, const std::vector<std::pair<std::string, std::string>>& headers,
    bool insecure, std::string* body) {
  const std::string url = base_url + "/v1/models";
  const std::string shown = common::redact_url(url);  // messages never print URL credentials
  auto all_headers = headers;
  bool has_auth = false;
  for (const auto& [k, v] : headers) {
    std::string lk = k;
    for (auto& ch : lk) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    has_auth = has_auth || lk == "authorization";
  }
  if (const char* key = std::getenv("OPENAI_API_KEY"); key && *key && !has_auth)
    all_headers.emplace_back("Authorization", std::string("Bearer ") + key);
  detail::HttpGetResult res;
  try {
    res = detail::http_get(url, all_headers, insecure, 30.0);
  } catch (const std::exception& e) {
    throw BenchError(fmt::format("model discovery (no --model given): {}", e.what()));
  }
  if (res.status != 200)
    throw BenchError(fmt::format("model discovery: GET {} returned HTTP {} {} (pass --model to skip it)",
                                 shown, res.status, res.reason));
  if (body) *body = res.body;
  nlohmann::json j = nlohmann::json::parse(res.body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw BenchError(fmt::format("model discovery: GET {} did not return a JSON object", shown));
  if (!j.contains("data") || !j["data"].is_array() || j["data"].empty())
    throw BenchError(fmt::format(
        "No models found on the server at {}. Make sure the server is running and has models loaded.",
        common::redact_url(base_url)));
  const auto& first = j["data"][0];
  if (!first.is_object() || !first.contains("id") || !first["id"].is_string())
    throw BenchError(fmt::format("model discovery: GET {}: data[0].id is missing or not a string", shown));
  std::string id = first["id"].get<std::string>();
  std::string root =
      first.contains("root") && first["root"].is_string() ? first["root"].get<std::string>() : id;
  return {id, root};
}

nlohmann::ordered_json sampling_body(const RunOptions& c) {
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  if (c.top_p) body["top_p"] = *c.top_p;
  if (c.top_k) body["top_k"] = *c.top_k;
  if (c.min_p) body["min_p"] = *c.min_p;
  if (c.temperature) body["temperature"] = *c.temperature;
  if (c.frequency_penalty) body["frequency_penalty"] = *c.frequency_penalty;
  if (c.presence_penalty) body["presence_penalty"] = *c.presence_penalty;
  if (c.repetition_penalty) body["repetition_penalty"] = *c.repetition_penalty;
  if (!c.temperature) body["temperature"] = 0.0;  // vLLM 0.13: default to greedy decoding
  if (c.extra_body) {
    auto extra = nlohmann::ordered_json::parse(*c.extra_body, nullptr, false);
    if (extra.is_discarded() || !extra.is_object())
      throw ConfigError("argument --extra-body: not a JSON object: '" +
                        common::redact_json_text(*c.extra_body) + "'");
    for (const auto& [k, v] : extra.items()) body[k] = v;
  }
  return body;
}

namespace {

// What the stages of one `bench serve` run hand each other, in the order they fill it.
struct RunContext {
  const RunOptions& config;
  const RunIo& io;
  std::stop_token stop;
  Printer print;
  BenchResult& result;
  // validate_arguments
  ResolvedConfig r;
  metrics::MetricsOptions metrics_options;
  metrics::PercentileMetrics selected;
  std::optional<ShardSpec> shard_spec;  // --shard: this host sends one shard of the schedule (bench/shard.h)
  // identify_model
  Urls urls;
  std::optional<std::string> models_body;  // GET /v1/models, when discovery fetched it
  // load_run_tokenizer, prepare_workload, make_client_options
  std::shared_ptr<const tokenizer::Tokenizer> tok;
  detail::Workload work;
  client::ClientOptions opts;
  client::PlannedRequest test_input;
  // plan_schedule
  detail::ServerClock clock;
  double k = 1.0;  // server time scale (engine time = wall time × k)
  client::ArrivalOptions arrival;
  std::vector<double> schedule;
  std::optional<ShardPlan>
      shard;  // --shard: this host's part, its clock measured, up to 1 s before the start
  // run_timed_load
  client::ClientOptions timed_opts;
  client::LoadResult load;
  double client_stall_ms = 0.0;
  std::optional<detail::ScheduleWindow> lag;
  // report_metrics
  std::optional<detail::SessionMetrics> sessions;
};

// --result-dir is made and checked writable before the run (vLLM makes it after the run: a new-user trial
// lost a finished run's JSON to an unwritable directory, exit 1 after the report).
void check_result_dir(const RunOptions& config) {
  if ((!config.save_result && !config.append_result) || !config.result_dir || config.result_dir->empty())
    return;
  const std::filesystem::path dir = *config.result_dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw ConfigError(
        fmt::format("--result-dir {}: cannot create it: {} (checked before the run, so that no "
                    "result is lost)",
                    dir.string(), ec.message()));
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw ConfigError(
        fmt::format("--result-dir {}: not writable (checked before the run, so that no result is "
                    "lost)",
                    dir.string()));
}

// Stage 1: print(args), then validate: resolved flags, metric options, the --shard spec, --start-at and
// --result-dir.
void validate_arguments(RunContext& x) {
  const RunOptions& config = x.config;
  x.print.line("{}", namespace_repr(config));
  x.r = resolve(config);
  try {
    x.metrics_options.percentiles = x.r.metric_percentiles;
    x.metrics_options.goodput = metrics::parse_goodput(config.goodput);
    x.selected = metrics::parse_percentile_metrics(config.percentile_metrics.value_or("ttft,tpot,itl"));
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  x.metrics_options.input_tokens = metrics::InputTokenSource::kDataset;  // vLLM 0.13 sums the dataset count
  if (config.shard) {
    x.shard_spec = parse_shard_spec(*config.shard);
    check_start_at(
        *config.start_at,
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  }
  check_result_dir(config);
}

// Stage 2: URLs and headers, then the model: --model, or the server's first model (GET /v1/models).
void identify_model(RunContext& x) {
  const RunOptions& config = x.config;
  x.urls = build_urls(config);
  if (!config.model) {
    x.print.line("Model not specified, fetching first model from server...");
    auto [name, id] =
        discover_first_model(x.urls.base_url, x.r.headers, config.insecure, &x.models_body.emplace());
    x.result.model_name = name;
    x.result.model_id = id;
    x.print.line("First model name: {}, first model id: {}", name, id);
  } else {
    x.result.model_id = *config.model;
    x.result.model_name = config.served_model_name.value_or(*config.model);
  }
}

// Stage 3: the tokenizer (--tokenizer, else the model id); a Hub id not in the cache is downloaded.
void load_run_tokenizer(RunContext& x) {
  x.result.tokenizer_id = x.config.tokenizer.value_or(x.result.model_id);
  try {
    hub::FetchRequest fetch;  // a Hub id not in the cache is downloaded into it, as vLLM would
    fetch.revision = x.config.revision.value_or("");
    fetch.download = true;
    const RunIo& io = x.io;
    if (!io.quiet)
      fetch.log = [&io](const std::string& line) { std::fprintf(io.progress, "%s\n", line.c_str()); };
    x.tok =
        std::make_shared<const tokenizer::Tokenizer>(tokenizer::load_tokenizer(x.result.tokenizer_id, fetch));
    // What the loader accepted against the reference's rules (docs/tokenizer.md: "nothing is silent").
    if (!io.quiet)
      for (const auto& w : x.tok->load_warnings())
        std::fprintf(io.progress, "Tokenizer %s: %s\n", x.result.tokenizer_id.c_str(), w.c_str());
  } catch (const std::exception& e) {
    throw BenchError(fmt::format("--tokenizer {}: {}", x.result.tokenizer_id, e.what()));
  }
}

// Stage 4: the dataset's requests (and, for multi-turn, its conversations and the server-usage prompt count).
void prepare_workload(RunContext& x) {
  const RunOptions& config = x.config;
  try {
    x.work = detail::build_workload(config, x.r, *x.tok);
  } catch (const std::exception& e) {
    throw BenchError(fmt::format("dataset {}: {}", config.dataset_name, e.what()));
  }
  const std::vector<client::PlannedRequest>& planned = x.work.requests();
  if (planned.empty()) throw BenchError(fmt::format("dataset {} produced no requests", config.dataset_name));
  for (const auto& w : x.work.warnings) x.print.line("WARNING: {}", w);
  if (x.work.multi_turn) {
    x.print.line("Multi-turn: {} conversations, {} turns", x.work.multi_turn->plan.sessions.size(),
                 planned.size());
    // Turns carry chat templates and histories the client does not count: report the server's prompt tokens.
    x.metrics_options.input_tokens = metrics::InputTokenSource::kServerUsage;
  }
}

// Stage 5: client options (sampling parameters + temperature 0.0 default, headers, endpoint, ignore_eos,
// the shard's share of --max-concurrency) and the test input (request 0 without its id).
void make_client_options(RunContext& x) {
  const RunOptions& config = x.config;
  // ignore_eos forced for the random dataset on OpenAI-compatible backends (vLLM 0.13, PR #28227), and for
  // timed_trace (newer vLLM), whose output lengths are the trace's.
  bool ignore_eos = config.ignore_eos;
  if ((config.dataset_name == "random" || config.dataset_name == "timed_trace") && !ignore_eos) {
    ignore_eos = true;
    x.print.line("ignore_eos is forced on for the {} dataset (as vLLM {}does).", config.dataset_name,
                 config.dataset_name == "random" ? "0.13 " : "");
  }
  client::ClientOptions& opts = x.opts;
  opts.api_url = x.urls.api_url;
  opts.endpoint =
      config.backend == "openai-chat" ? client::Endpoint::kChatCompletions : client::Endpoint::kCompletions;
  opts.model = x.result.model_name;
  opts.headers = x.r.headers;
  opts.ignore_eos = ignore_eos;
  opts.logprobs = config.logprobs;
  opts.extra_body = sampling_body(config);
  opts.max_concurrency = config.max_concurrency.value_or(0);
  if (x.shard_spec && opts.max_concurrency > 0)
    opts.max_concurrency = shard_max_concurrency(opts.max_concurrency, *x.shard_spec);
  opts.request_timeout_s = config.request_timeout_s;
  opts.insecure = config.insecure;
  opts.keep_generated_text = config.save_detailed;
  opts.retokenize = [tok = x.tok](std::string_view text) {
    return static_cast<int>(tok->encode(text, /*add_special_tokens=*/false).size());
  };
  x.test_input = x.work.requests().front();
  x.test_input.request_id.clear();  // vLLM: the test/warm-up input carries no request id
}

// Stage 6: the ready check with request 0 (retried until --ready-check-timeout-sec), then the warm-ups:
// copies of request 0, all at t = 0, through the same concurrency limit. Throws BenchError on failure/stop.
void check_ready_and_warm_up(RunContext& x) {
  const RunOptions& config = x.config;
  const RunIo& io = x.io;
  x.print.line("Starting initial single prompt test run...");
  if (config.ready_check_timeout_s > 0) {
    x.print.line("Waiting for endpoint to become up in {} seconds", config.ready_check_timeout_s);
    int attempts = 0;
    // vLLM shows this wait as a tqdm bar on stderr; servelab says why each attempt failed and the time left.
    auto on_failed_attempt = [&](const client::ReadyAttempt& a) {
      attempts = a.attempt;
      if (io.quiet) return;
      std::fputs((ready_attempt_line(a) + "\n").c_str(), io.progress);
      std::fflush(io.progress);
    };
    metrics::RequestOutput test = client::wait_until_ready(x.opts, x.test_input, config.ready_check_timeout_s,
                                                           5.0, x.stop, on_failed_attempt);
    if (x.stop.stop_requested())
      throw BenchError("interrupted during the endpoint ready check; nothing was measured");
    if (!test.success)
      throw BenchError(fmt::format(
          "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: {} "
          "({} attempt{} in {} s, --ready-check-timeout-sec){}",
          test.error, attempts, attempts == 1 ? "" : "s", config.ready_check_timeout_s,
          backend_hint(config, test)));
    x.print.line("Initial test run completed.");
  } else {
    x.print.line("Skipping endpoint ready check.");
  }
  if (config.num_warmups > 0) {
    x.print.line("Warming up with {} requests...", config.num_warmups);
    std::vector<client::PlannedRequest> warm(static_cast<std::size_t>(config.num_warmups), x.test_input);
    std::vector<double> zeros(warm.size(), 0.0);
    client::run_load(x.opts, warm, zeros, {}, x.stop);
    if (x.stop.stop_requested()) throw BenchError("interrupted during warm-up; nothing was measured");
    x.print.line("Warmup run completed.");
  }
}

// Stage 7: the arrival schedule (s from t = 0): prints the traffic parameters, detects a time-scaled engine
// twin (send at K × the rate so that the engine sees the requested rate in its own time; server_clock.h),
// draws the arrivals (or takes the trace's times), then, with --shard, this host's part of it.
void plan_schedule(RunContext& x) {
  const RunOptions& config = x.config;
  x.print.line("Starting main benchmark run...");
  if (config.ramp_up_strategy) {
    x.print.line("Traffic ramp-up strategy: {}.", *config.ramp_up_strategy);
    x.print.line("Will increase RPS from {} to {} RPS over the duration of the benchmark.",
                 *config.ramp_up_start_rps, *config.ramp_up_end_rps);
  } else {
    x.print.line("Traffic request rate: {}", common::python_float_repr(x.r.request_rate));
  }
  x.print.line("Burstiness factor: {} ({})", common::python_float_repr(config.burstiness),
               config.burstiness == 1.0 ? "Poisson process" : "Gamma distribution");
  x.print.line("Maximum request concurrency: {}",
               config.max_concurrency ? std::to_string(*config.max_concurrency) : std::string("None"));

  x.clock = x.stop.stop_requested() ? detail::ServerClock{}
            : x.models_body         ? detail::server_clock_from_models(*x.models_body)
                            : detail::probe_server_clock(x.urls.base_url, x.r.headers, config.insecure);
  x.result.server_time_scale = x.clock.time_scale;
  x.result.engine_twin = x.clock.engine_twin;
  if (x.clock.time_scale != 1.0)
    x.print.line(
        "Server time scale: {:g} (servelab engine twin): requests are sent at {:g} x the rate and every "
        "time in the report is engine time (wall x {:g}); the progress lines on stderr count wall-clock time",
        x.clock.time_scale, x.clock.time_scale, x.clock.time_scale);
  const double k = x.k = x.clock.time_scale;
  std::vector<client::PlannedRequest>& planned = x.work.requests();
  client::ArrivalOptions& arrival = x.arrival;
  arrival.num_requests = x.work.multi_turn ? x.work.multi_turn->plan.sessions.size() : planned.size();
  arrival.request_rate = x.r.request_rate * k;
  arrival.burstiness = config.burstiness;
  arrival.seed = static_cast<std::uint32_t>(config.seed);
  const RampUpRates ramp = ramp_up_rates(config);
  arrival.ramp_up = ramp.kind;
  arrival.ramp_up_start_rps = ramp.start_rps * k;
  arrival.ramp_up_end_rps = ramp.end_rps * k;
  try {
    x.schedule = client::arrival_schedule(arrival);
  } catch (const std::invalid_argument& e) {
    throw ConfigError(e.what());
  }
  if (config.self_timed) {  // trace times are engine time: a twin K times faster gets them K times sooner
    x.schedule = x.work.trace_send_s;
    for (double& t : x.schedule) t /= k;
    x.print.line(
        "Self-timed: requests are sent at their trace timestamps x {} s ({} requests, the last at {:.3f} s)",
        common::python_float_repr(config.timed_trace_sec_multiplier), x.schedule.size(),
        x.work.trace_send_s.back());
  }
  if (x.work.multi_turn) x.work.multi_turn->plan.think_time_s /= k;
  if (x.shard_spec)
    x.shard = plan_shard(config, *x.shard_spec, planned, x.schedule, x.opts.max_concurrency, x.print, x.stop);
}

// Progress of the timed run: tqdm's bar on a terminal; otherwise (CI logs, nohup) a log line every 5 s.
struct RunProgress {
  std::unique_ptr<detail::ProgressBar> bar;
  std::unique_ptr<detail::ProgressLog> log;
  client::ProgressCallback callback;  // empty when neither is shown

  RunProgress(const RunOptions& config, const RunIo& io, std::size_t num_requests) {
    const bool show_progress = !io.quiet && (io.force_progress || !config.disable_tqdm);
    const bool on_terminal = io.force_progress || isatty(fileno(io.progress));
    if (show_progress && on_terminal) bar = std::make_unique<detail::ProgressBar>(io.progress, num_requests);
    if (show_progress && !on_terminal) log = std::make_unique<detail::ProgressLog>(io.progress, num_requests);
    if (bar) callback = [b = bar.get()](std::size_t done, std::size_t) { b->update(done); };
    if (log) callback = [l = log.get()](std::size_t done, std::size_t) { l->update(done); };
  }
  void finish() {
    if (bar) bar->finish();
    if (log) log->finish();
  }
};

// The timed run's client options: pre-opened connections (--preconnect: up to --max-concurrency, at most
// one per request) and, with --shard, t = 0 at --start-at (BenchError when that has already passed).
client::ClientOptions timed_options(const RunContext& x, std::size_t num_requests) {
  const RunOptions& config = x.config;
  client::ClientOptions timed_opts = x.opts;  // the warm-ups and the ready check connect on demand
  if (config.preconnect) {
    const std::size_t limit = static_cast<std::size_t>(x.opts.max_concurrency);
    timed_opts.preconnect = limit > 0 ? std::min(limit, num_requests) : num_requests;
  }
  if (x.shard) {
    if (std::chrono::system_clock::now().time_since_epoch() >=
        std::chrono::duration<double>(*config.start_at))
      throw BenchError(
          fmt::format("shard {}: the ready check and warm-ups ended after --start-at {:.3f}; nothing "
                      "was measured (give a later start time)",
                      *config.shard, *config.start_at));
    timed_opts.start_at = steady_at_wall(*config.start_at);
  }
  return timed_opts;
}

// Stage 8: the timed run, with the twin's stall monitor and schedule window and the server-metrics scraper
// around it; fills the result's outputs (engine time), duration (s, engine time) and ramp-up events.
void run_timed_load(RunContext& x) {
  const RunOptions& config = x.config;
  BenchResult& result = x.result;
  std::vector<client::PlannedRequest>& planned = x.work.requests();
  std::vector<client::PlannedRequest>& sent = x.shard ? x.shard->requests : planned;
  const std::vector<double>& sent_schedule = x.shard ? x.shard->schedule_s : x.schedule;
  RunProgress progress(config, x.io, sent.size());
  std::optional<detail::StallMonitor> stalls;
  if (x.clock.engine_twin) {
    detail::read_schedule_window(x.urls.base_url, x.r.headers, config.insecure);  // starts a new window
    stalls.emplace();
  }
  // Server metrics: one scrape now, then a thread of its own every interval, one more after the run.
  std::optional<detail::ServerMetricsScraper> scraper;
  if (!config.no_server_metrics && !x.stop.stop_requested()) {
    scraper.emplace(x.urls.base_url, x.r.headers, config.insecure, config.server_metrics_interval_s, x.k,
                    config.server_metric_names);
    scraper->start_run();
  }
  x.timed_opts = timed_options(x, sent.size());
  try {
    x.load = x.work.multi_turn
                 ? client::run_sessions(x.timed_opts, planned, x.work.multi_turn->plan, x.schedule,
                                        progress.callback, x.stop)
                 : client::run_load(x.timed_opts, sent, sent_schedule, progress.callback, x.stop);
  } catch (const std::invalid_argument& e) {  // an OS limit the run cannot fit in (descriptors, ports)
    throw BenchError(e.what());
  }
  client::LoadResult& load = x.load;
  if (config.preconnect) {
    x.print.line("Pre-opened {} of {} connections in {:.2f} s before the run.", load.preconnected,
                 x.timed_opts.preconnect, load.preconnect_s);
    for (const auto& w : load.warnings)
      if (w.starts_with("pre-opened")) x.print.line("WARNING: {}", w);
  }
  x.client_stall_ms = stalls ? stalls->stop() : 0.0;
  if (scraper) result.server_metrics = scraper->stop();
  progress.finish();
  if (config.ramp_up_strategy) {
    // vLLM stamps its events with datetime.now(): map the steady clock of the run onto the wall clock.
    const double wall_now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double start_wall = wall_now - seconds_since(load.start);
    std::vector<double> dispatched;  // the requests sent before a stop (a never-sent one has dispatch time 0)
    for (const auto& o : load.outputs) {
      if (metrics::never_sent(o)) break;
      dispatched.push_back(start_wall + o.dispatch_time_s);
    }
    client::ArrivalOptions user_rates = x.arrival;  // the user's rates, not a twin's scaled ones
    user_rates.ramp_up_start_rps = *config.ramp_up_start_rps;
    user_rates.ramp_up_end_rps = *config.ramp_up_end_rps;
    result.run.rps_change_events = rps_change_events(user_rates, start_wall, dispatched);
  }
  result.interrupted = load.interrupted;
  result.duration_s = load.duration_s;
  if (!(result.duration_s > 0) || !std::isfinite(result.duration_s)) {
    // Nothing completed (e.g. stopped before the first send): the wall time of the attempt.
    result.duration_s = std::max(seconds_since(load.start), 1e-9);
  }
  result.duration_s *= x.k;
  result.outputs = std::move(load.outputs);
  detail::to_engine_time(result.outputs, x.k);
  if (x.clock.engine_twin)
    x.lag = detail::read_schedule_window(x.urls.base_url, x.r.headers, config.insecure);
  if (x.lag) result.schedule_lag = ScheduleLag{x.lag->tokens, x.lag->mean_ms(), x.lag->lag_max_ms};
}

// Stage 9: the failed requests (capped to 10), the metrics, the run's description and the console report
// (vLLM's block + servelab's extras, sessions, the twin's schedule validity, server metrics), printed.
void report_metrics(RunContext& x) {
  const RunOptions& config = x.config;
  BenchResult& result = x.result;
  // The failed requests the block counts: one a stop kept from being sent is "Not sent", not failed (a
  // Ctrl-C with --max-concurrency listed ten "not sent" lines under "Failed requests: 2").
  std::vector<const metrics::RequestOutput*> failed;
  for (const auto& o : result.outputs)
    if (!o.success && !metrics::never_sent(o)) failed.push_back(&o);
  if (!failed.empty()) {
    x.print.line("Failed requests during benchmark run detected (capping to 10):");
    for (std::size_t i = 0; i < failed.size() && i < 10; ++i)
      x.print.line("Error {}: [{}] {}", i, metrics::failure_kind_name(failed[i]->failure), failed[i]->error);
  }
  result.metrics = metrics::compute_metrics(result.outputs, result.duration_s, x.metrics_options);

  result.run.date = report::current_date_string();
  result.run.backend = config.backend;
  result.run.label = config.label;
  result.run.model_id = result.model_id;
  result.run.tokenizer_id = result.tokenizer_id;
  result.run.num_prompts = config.num_prompts;
  result.run.metadata = x.r.metadata;
  for (auto& [key, v] : result.run.metadata)
    if (common::is_credential_name(key)) v = std::string(common::kRedacted);
  result.run.request_rate = x.r.request_rate;
  result.run.arrivals_from_data = config.self_timed || config.multi_turn;
  result.run.burstiness = config.burstiness;
  result.run.max_concurrency = config.max_concurrency;
  if (config.ramp_up_strategy)
    result.run.ramp_up =
        report::RampUp{*config.ramp_up_strategy, *config.ramp_up_start_rps, *config.ramp_up_end_rps};
  result.run.interrupted = result.interrupted;

  result.console_report = report::format_console_block(result.run, result.metrics, x.selected) +
                          report::format_console_extras(result.run, result.metrics);
  if (x.work.multi_turn) {
    x.sessions = detail::session_metrics(*x.work.multi_turn, result.outputs, result.duration_s,
                                         x.r.metric_percentiles);
    result.console_report += detail::format_session_metrics(*x.sessions, x.work.multi_turn->history,
                                                            config.multi_turn_think_time_ms,
                                                            config.session_concurrency.value_or(0));
  }
  const double k = x.k;
  if (x.lag)
    result.invalid_reason =
        detail::schedule_invalid_reason(*x.lag, result.duration_s, result.metrics, k, x.client_stall_ms);
  if (x.clock.engine_twin) {
    result.console_report += fmt::format(
        "Engine twin (servelab sim serve) at time scale {:g}: times, rates and throughputs are engine time "
        "(wall x {:g})\n",
        k, k);
    if (result.schedule_lag)
      result.console_report += fmt::format(
          "Twin schedule lag (engine ms): mean {:.2f}, max {:.2f}, last {:.2f} over {} tokens; admission "
          "wait "
          "max {:.2f}; client oversleep mean {:.3f} wall ms\n",
          result.schedule_lag->mean_ms, result.schedule_lag->max_ms, x.lag->lag_last_ms,
          result.schedule_lag->tokens, x.lag->admission_wait_max_ms, x.client_stall_ms);
    if (!result.invalid_reason.empty())
      result.console_report += "INVALID RUN: " + result.invalid_reason + "\n";
    // sim serve's twin is handed each prompt's token count, not its text: prefixes the dataset shares by
    // construction are prefilled in full every time, where a prefix-caching engine (and `sim run`) reuses
    // them.
    if (shared_prefix_tokens(config) > 0)
      result.console_report +=
          "Warning: the engine twin behind sim serve does not share prompt prefixes (it is handed token "
          "counts, not prompts): every shared prefix of this dataset was prefilled in full, where a "
          "prefix-caching engine reuses it; `servelab sim run` with the same dataset flags models the "
          "reuse\n";
  }
  if (result.server_metrics) result.console_report += format_server_metrics(*result.server_metrics);
  x.print.raw(result.console_report);
}

// Stage 10: the result JSON (vLLM's fields + the "servelab" object: twin, shard, preconnect, server metrics,
// sessions, timed trace).
void build_result_json(RunContext& x) {
  const RunOptions& config = x.config;
  BenchResult& result = x.result;
  const double k = x.k;
  report::ReportOptions report_options;
  report_options.percentile_metrics = x.selected;
  report_options.save_detailed = config.save_detailed;
  result.result_json = report::make_result_json(result.run, result.metrics, result.outputs, report_options);
  if (!result.result_json.contains("servelab")) return;
  auto& ext = result.result_json["servelab"];
  if (x.clock.engine_twin) {
    ext["server_time_scale"] = k;
    if (result.schedule_lag)
      ext["twin_schedule_lag_ms"] = {{"mean", result.schedule_lag->mean_ms},
                                     {"max", result.schedule_lag->max_ms},
                                     {"tokens", result.schedule_lag->tokens}};
    ext["invalid"] = result.invalid_reason.empty() ? nlohmann::ordered_json(nullptr)
                                                   : nlohmann::ordered_json(result.invalid_reason);
  }
  if (x.shard) {
    x.shard->record.duration_s = result.duration_s;
    x.shard->record.server_time_scale = k;
    x.shard->record.engine_twin = x.clock.engine_twin;
    x.shard->record.shard_max_concurrency = x.opts.max_concurrency;
    ext["shard"] =
        shard_json(x.shard->record, config, x.r, result.model_id, result.tokenizer_id, result.outputs);
  }
  if (config.preconnect)
    ext["preconnect"] = {{"connections", x.timed_opts.preconnect},
                         {"opened", x.load.preconnected},
                         {"seconds", x.load.preconnect_s}};
  if (result.server_metrics) ext["server_metrics"] = server_metrics_json(*result.server_metrics);
  if (x.sessions)
    ext["multi_turn"] =
        detail::session_metrics_json(*x.sessions, x.work.multi_turn->history, config.multi_turn_think_time_ms,
                                     config.session_concurrency.value_or(0));
  if (config.dataset_name == "timed_trace")
    ext["timed_trace"] = {{"self_timed", config.self_timed},
                          {"sec_multiplier", config.timed_trace_sec_multiplier},
                          {"block_tokens", dataset::kTraceBlockTokens}};
}

// Stage 11: --save-result / --append-result: the JSON result file (vLLM's file name unless given).
void save_result(RunContext& x) {
  const RunOptions& config = x.config;
  if (!config.save_result && !config.append_result) return;
  auto path =
      report::result_path(x.result.run, config.result_dir.value_or(""), config.result_filename.value_or(""));
  report::write_result_file(path, x.result.result_json, config.append_result);
  x.result.result_path = path;
  x.print.line("Result saved to {}", path.string());
}

}  // namespace

BenchResult run(const RunOptions& config, std::stop_token stop, const RunIo& io) {
  BenchResult result;
  RunContext x{.config = config, .io = io, .stop = stop, .print = Printer{io}, .result = result};
  validate_arguments(x);
  identify_model(x);
  load_run_tokenizer(x);
  prepare_workload(x);
  make_client_options(x);
  check_ready_and_warm_up(x);
  plan_schedule(x);
  run_timed_load(x);
  report_metrics(x);
  build_result_json(x);
  save_result(x);
  return result;
}

}  // namespace servelab::bench
