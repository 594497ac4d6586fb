// bench's in-process run API for the local target: each scenario's args (plus the study's common bench
// args, the study model, host and port, and --goodput from the objective's SLOs) go through bench's own
// flag parser, then bench::run; the result is recorded like the twin's.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <stop_token>
#include <thread>

#include "servelab/bench/argparse_compat.h"
#include "servelab/bench/bench.h"
#include "servelab/bench/config.h"
#include "servelab/engines/engine_module.h"
#include "tune/targets/datasets.h"
#include "tune/targets/metrics_convert.h"
#include "tune/targets/twin_runner.h"

namespace servelab::tune {

std::vector<std::string> bench_common_args(const Study& study) {
  std::vector<std::string> common = study.bench_common_args;
  common.insert(common.end(), {"--model", study.model});
  for (const auto& [k, v] : study.objective.slo_ms)
    common.insert(common.end(), {"--goodput", fmt::format("{}:{}", k, v)});
  return common;
}

namespace {

/// `args` through bench's flag parser into `cfg`; the parser's message, or "" when they parse.
std::string bench_parse_error(const std::vector<std::string>& args, bench::RunOptions& cfg) {
  CLI::App app{"bench serve (tune)"};
  bench::add_bench_flags(app, cfg);
  app.allow_extras();  // unknown flags are named as `bench serve` names them (argparse's wording, a hint)
  try {
    // As `bench serve` reads them ('_' as '-', unambiguous prefixes).
    if (const auto extras = bench::parse_bench_args(app, args); !extras.empty())
      return bench::unrecognized_arguments(app, extras);
  } catch (const CLI::ParseError& e) {
    return e.what();
  } catch (const bench::ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

bench::RunOptions parse_scenario_bench_args(const std::vector<std::string>& common, const Scenario& sc,
                                            const std::vector<std::string>& extra,
                                            const std::string& common_origin) {
  std::vector<std::string> args = common;
  // The dataset as the twin and pre-flight find it (given path, data dir, cache): issue 10 found the
  // ShareGPT file of `make deps` used by the twin but not by local runs.
  const std::vector<std::string> scenario_args = detail::with_resolved_dataset(sc.args);
  args.insert(args.end(), scenario_args.begin(), scenario_args.end());
  args.insert(args.end(), extra.begin(), extra.end());
  bench::RunOptions cfg;
  const std::string error = bench_parse_error(args, cfg);
  if (error.empty()) return cfg;
  // The scenario's args are blamed unless the common ones fail without them ([bench] common_args).
  std::vector<std::string> alone = common;
  alone.insert(alone.end(), extra.begin(), extra.end());
  bench::RunOptions unused;
  const std::string& origin =
      !common_origin.empty() && !bench_parse_error(alone, unused).empty() ? common_origin : sc.args_origin;
  throw std::invalid_argument(fmt::format("{}scenario {}: bench serve arguments: {}",
                                          origin.empty() ? "" : origin + ": ", sc.id, error));
}

ScenarioFn bench_scenario_fn(const Study& study) {
  const std::vector<std::string> common = bench_common_args(study);
  return [common, origin = study.bench_common_args_origin](const Scenario& sc, const std::string& base_url,
                                                           const std::atomic<bool>& stop) {
    bench::RunOptions cfg = parse_scenario_bench_args(common, sc, {"--base-url", base_url}, origin);
    cfg.server_metric_names = engines::server_metric_names();  // how the engine's /metrics is read
    // Forward Ctrl-C to bench's stop token while it runs.
    std::stop_source source;
    std::jthread watch([&](std::stop_token done) {
      while (!done.stop_requested()) {
        if (stop.load()) {
          source.request_stop();
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    bench::RunIo io;
    io.quiet = true;
    bench::BenchResult r = bench::run(cfg, source.get_token(), io);
    watch.request_stop();
    ScenarioResult out = scenario_result(sc.id, r.metrics, r.outputs, r.console_report);
    out.invalid_reason = r.invalid_reason;
    if (r.server_time_scale != 1.0) out.metrics[kTimeScaleMetric] = r.server_time_scale;
    return out;
  };
}

}  // namespace servelab::tune
