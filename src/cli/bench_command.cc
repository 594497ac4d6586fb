// `servelab bench serve ...`: the drop-in `vllm bench serve` (flags of vLLM 0.13; see docs/bench.md).
// Ctrl-C (SIGINT) or SIGTERM: stop issuing, cancel in-flight requests, print and save the report marked
// interrupted, exit 130 (143 on SIGTERM). A second Ctrl-C exits at once. A run in which every request failed
// prints and saves its report, then exits 1 with the reason.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "cli/command_registry.h"
#include "cli/flag_suggest.h"
#include "servelab/bench/argparse_compat.h"
#include "servelab/bench/bench.h"
#include "servelab/bench/status.h"
#include "servelab/common/stop_signals.h"
#include "servelab/engines/engine_module.h"

namespace {

using servelab::bench::RunOptions;

// argparse's message for arguments nobody consumed: "error: unrecognized arguments: --num-prompt 5",
// plus the closest known flag. Exits 2 (argparse's status).
void reject_unrecognized(const CLI::App& serve, const std::vector<std::string>& extras) {
  std::fprintf(stderr, "servelab bench serve: error: %s\n",
               servelab::bench::unrecognized_arguments(serve, extras).c_str());
  throw servelab::cli::ExitRequest{2};
}

// argparse's wording for a value CLI11 could not convert or a choice it refused (new-user trial: "Could not
// convert: --num-prompts = 3,1.5", exit 104, quoting an earlier valid value): "argument --num-prompts:
// invalid int value: '1.5'" and "argument --backend: invalid choice: 'foo' (choose from 'openai', ...)".
// argparse keeps the last of a repeated flag, so the last value is the one named. nullopt: another error.
std::optional<std::string> argparse_wording(const CLI::App& parser, const CLI::ParseError& e) {
  const std::string what = e.what();
  static const std::string kConvert = "Could not convert: ";
  if (dynamic_cast<const CLI::ConversionError*>(&e) && what.rfind(kConvert, 0) == 0) {
    const auto eq = what.find(" = ", kConvert.size());
    if (eq == std::string::npos) return std::nullopt;
    const std::string name = what.substr(kConvert.size(), eq - kConvert.size());
    std::string value = what.substr(eq + 3);
    if (const auto comma = value.rfind(','); comma != std::string::npos) value = value.substr(comma + 1);
    const CLI::Option* opt = parser.get_option_no_throw(name);
    const std::string type = opt ? opt->get_type_name() : "";
    const char* kind = type == "INT" || type == "UINT" ? "int " : type == "FLOAT" ? "float " : "";
    return fmt::format("argument {}: invalid {}value: '{}'", name, kind, value);
  }
  static const std::regex kChoice(R"(^(--[A-Za-z0-9-]+): (.*) not in \{(.*)\}$)");
  std::smatch m;
  if (dynamic_cast<const CLI::ValidationError*>(&e) && std::regex_match(what, m, kChoice)) {
    std::string choices;
    std::stringstream in(m[3].str());
    for (std::string c; std::getline(in, c, ',');) choices += (choices.empty() ? "'" : ", '") + c + "'";
    return fmt::format("argument {}: invalid choice: '{}' (choose from {})", m[1].str(), m[2].str(), choices);
  }
  return std::nullopt;
}

void run_bench_serve(const RunOptions& config) {
  std::stop_source stop;
  servelab::bench::BenchResult result;
  int interrupted_status = 130;  // 128 + the signal: 130 Ctrl-C, 143 SIGTERM
  {
    // Ctrl-C/SIGTERM on a watcher thread (created before the client's I/O threads, which inherit the mask).
    servelab::common::StopOnSignals signals(
        [&stop] { stop.request_stop(); },
        "\nInterrupted: stopping new requests and cancelling in-flight ones; the report will be marked "
        "interrupted. Press Ctrl-C again to exit immediately.\n",
        "\nInterrupted twice: exiting now.\n");
    try {
      result = servelab::bench::run(config, stop.get_token());
    } catch (const servelab::bench::ConfigError& e) {
      std::fprintf(stderr, "servelab bench serve: error: %s\n", e.what());
      throw servelab::cli::ExitRequest{2};
    } catch (const servelab::bench::BenchError& e) {
      std::fprintf(stderr, "servelab bench serve: error: %s\n", e.what());
      throw servelab::cli::ExitRequest{1};
    }
    interrupted_status = signals.exit_status();
  }
  if (result.interrupted) throw servelab::cli::ExitRequest{interrupted_status};
  // The report was printed (and saved): a run in which nothing succeeded still fails the command.
  const std::string all_failed =
      servelab::bench::all_failed_message(config, result.outputs, result.interrupted);
  if (!all_failed.empty()) {
    std::fprintf(stderr, "servelab bench serve: error: %s\n", all_failed.c_str());
    throw servelab::cli::ExitRequest{1};
  }
}

}  // namespace

SERVELAB_REGISTER_COMMAND("bench", 20, [](CLI::App& root) {
  auto* bench = root.add_subcommand("bench", "Benchmark a running OpenAI-compatible server (vllm bench).");
  bench->require_subcommand(1);
  static constexpr const char* kServeHelp =
      "Drop-in `vllm bench serve` (vLLM 0.13 flags, defaults and report). Where newer vLLM changed a "
      "default, the flag's help says so. Flags are read as vLLM reads them: '_' as '-' (--num_prompts), "
      "unambiguous prefixes (--num-prompt), --flag=value. See docs/bench.md.";
  auto* serve = bench->add_subcommand("serve", kServeHelp);
  // CLI11 only collects the arguments (in order); they are read by a parser holding the flags, after
  // vLLM's '_' -> '-' and argparse's prefix matching (bench/argparse_compat.h). --help goes there too.
  serve->set_help_flag();
  serve->allow_extras();
  serve->prefix_command();
  serve->callback([serve] {
    RunOptions config;
    CLI::App parser{kServeHelp, "servelab bench serve"};
    servelab::bench::add_bench_flags(parser, config);
    parser.allow_extras();  // unknown flags are named below, in argparse's wording
    std::vector<std::string> extras;
    try {
      extras = servelab::bench::parse_bench_args(parser, serve->remaining());
    } catch (const servelab::bench::ConfigError& e) {
      std::fprintf(stderr, "servelab bench serve: error: %s\n", e.what());
      throw servelab::cli::ExitRequest{2};
    } catch (const CLI::ParseError& e) {
      if (const auto m = argparse_wording(parser, e)) {
        std::fprintf(stderr, "servelab bench serve: error: %s\n", m->c_str());
        throw servelab::cli::ExitRequest{2};  // argparse's status
      }
      throw servelab::cli::ExitRequest{parser.exit(e)};
    }
    if (!extras.empty()) reject_unrecognized(parser, extras);
    config.server_metric_names = servelab::engines::server_metric_names();  // how /metrics is read
    run_bench_serve(config);
  });
});
