// `servelab bench serve ...`: the drop-in `vllm bench serve` (flags of vLLM 0.13; see docs/bench.md).
// Ctrl-C (SIGINT) or SIGTERM: stop issuing, cancel in-flight requests, print and save the report marked
// interrupted, exit 130. A second Ctrl-C exits at once. A run in which every request failed prints and saves
// its report, then exits 1 with the reason.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <ctime>
#include <memory>
#include <stop_token>
#include <thread>
#include <algorithm>
#include <string>
#include <vector>

#include "bench/argparse_compat.h"
#include "bench/bench.h"
#include "bench/status.h"
#include "cli/command_registry.h"

namespace {

using servelab::bench::BenchConfig;

/// Routes SIGINT/SIGTERM to a watcher thread for the lifetime of the object: the signals are blocked in
/// this thread (and so in every thread started afterwards, e.g. the client's I/O threads) and taken with
/// sigtimedwait. First signal: request_stop on `source`. Second: _exit(130) at once.
class InterruptWatcher {
 public:
  explicit InterruptWatcher(std::stop_source source) : source_(std::move(source)) {
    sigemptyset(&set_);
    sigaddset(&set_, SIGINT);
    sigaddset(&set_, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set_, &old_);
    thread_ = std::thread([this] { watch(); });
  }
  ~InterruptWatcher() {
    done_.store(true);
    thread_.join();
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  InterruptWatcher(const InterruptWatcher&) = delete;
  InterruptWatcher& operator=(const InterruptWatcher&) = delete;

 private:
  void watch() {
    int count = 0;
    timespec tick{0, 50 * 1000 * 1000};
    while (!done_.load()) {
      int sig = sigtimedwait(&set_, nullptr, &tick);
      if (sig < 0) continue;  // EAGAIN (tick) or EINTR
      if (++count == 1) {
        static const char kMsg[] =
            "\nInterrupted: stopping new requests and cancelling in-flight ones; the report will be marked "
            "interrupted. Press Ctrl-C again to exit immediately.\n";
        [[maybe_unused]] auto n = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
        source_.request_stop();
      } else {
        static const char kMsg[] = "\nInterrupted twice: exiting now.\n";
        [[maybe_unused]] auto n = write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
        _exit(130);
      }
    }
  }

  std::stop_source source_;
  sigset_t set_{};
  sigset_t old_{};
  std::atomic<bool> done_{false};
  std::thread thread_;
};

// Levenshtein distance, for "did you mean" suggestions on a mistyped flag.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// argparse's message for arguments nobody consumed: "error: unrecognized arguments: --num-prompt 5",
// plus the closest known flag. Exits 2 (argparse's status).
void reject_unrecognized(const CLI::App& serve, const std::vector<std::string>& extras) {
  std::string joined;
  for (const auto& e : extras) joined += (joined.empty() ? "" : " ") + e;
  std::string hint;
  for (const auto& e : extras) {
    if (e.rfind("--", 0) != 0) continue;
    std::string flag = e.substr(0, e.find('='));
    std::string best;
    std::size_t best_d = 3;  // suggest only within 2 edits
    for (const CLI::Option* o : serve.get_options()) {
      for (const auto& name : o->get_lnames()) {
        std::size_t d = edit_distance(flag, "--" + name);
        if (d < best_d) best_d = d, best = "--" + name;
      }
    }
    if (!best.empty()) hint = " (did you mean " + best + "?)";
    break;
  }
  std::fprintf(stderr, "servelab bench serve: error: unrecognized arguments: %s%s\n", joined.c_str(),
               hint.c_str());
  throw servelab::cli::ExitRequest{2};
}

void run_bench_serve(const BenchConfig& config) {
  std::stop_source stop;
  servelab::bench::BenchResult result;
  {
    InterruptWatcher watcher(stop);
    try {
      result = servelab::bench::run(config, stop.get_token());
    } catch (const servelab::bench::ConfigError& e) {
      std::fprintf(stderr, "servelab bench serve: error: %s\n", e.what());
      throw servelab::cli::ExitRequest{2};
    } catch (const servelab::bench::BenchError& e) {
      std::fprintf(stderr, "servelab bench serve: error: %s\n", e.what());
      throw servelab::cli::ExitRequest{1};
    }
  }
  if (result.interrupted) throw servelab::cli::ExitRequest{130};
  // The report was printed (and saved): a run in which nothing succeeded still fails the command.
  const std::string all_failed = servelab::bench::all_failed_message(config, result.outputs, result.interrupted);
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
    BenchConfig config;
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
      throw servelab::cli::ExitRequest{parser.exit(e)};
    }
    if (!extras.empty()) reject_unrecognized(parser, extras);
    run_bench_serve(config);
  });
});
