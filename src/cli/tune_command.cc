// `servelab tune STUDY.toml`: runs a study (twin or real engines), records it in SQLite, writes the report.
#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <iostream>

#include "cli/command_registry.h"
#include "common/paths.h"
#include "common/redact.h"
#include "tune/tune.h"

namespace {

std::atomic<bool> g_stop{false};

extern "C" void on_sigint(int) {
  if (g_stop.exchange(true)) std::_Exit(130);  // second Ctrl-C: leave at once
}

struct TuneArgs {
  std::string study;
  std::string target;
  std::string out;
  bool resume = false;
  bool quiet = false;
};

void run(const TuneArgs& a) {
  using namespace servelab::tune;
  Study study;
  try {
    study = load_study(a.study, servelab::common::data_dir());
  } catch (const StudyError& e) {
    std::fprintf(stderr, "servelab tune: %s\n", servelab::common::redact_text(e.what()).c_str());
    throw servelab::cli::ExitRequest{2};
  }
  if (a.target == "twin") study.target = Target::kTwin;
  else if (a.target == "local") study.target = Target::kLocal;
  TuneOptions opt;
  opt.out_dir = a.out.empty() ? std::filesystem::path("out") / study.name : std::filesystem::path(a.out);
  opt.resume = a.resume;
  opt.progress = a.quiet ? nullptr : &std::cerr;
  opt.stop = &g_stop;
  std::signal(SIGINT, on_sigint);
  std::signal(SIGTERM, on_sigint);
  std::cerr << fmt::format("servelab tune: study {} on target {} ({} search, {} run(s) per point) -> {}\n",
                           study.name, target_name(study.target), strategy_name(study.search.strategy),
                           study.repeats, opt.out_dir.string());
  try {
    TuneResult r = run_study(study, opt);
    const auto& o = r.outcome;
    if (!o.best.feasible) {
      std::fprintf(stderr, "servelab tune: no configuration succeeded (first failure: %s); report: %s/report.md\n",
                   servelab::common::redact_text(o.best.reason).c_str(), r.dir.c_str());
      throw servelab::cli::ExitRequest{1};
    }
    std::cout << fmt::format("best: {} {} = {:.2f} {}{}\n", o.best.config.engine, o.best.label,
                             o.best.objective.mean, study.objective.metric, o.best.predicted ? " (predicted)" : "");
    std::cout << "recommended: " << servelab::common::redact_text(o.recommended_command.shell()) << "\n";
    std::cout << fmt::format("report: {}/report.md, {}/report.html ({} trials launched)\n", r.dir.string(),
                             r.dir.string(), r.trials_launched);
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "servelab tune: %s (results so far in %s/results.sqlite)\n", e.what(),
                 opt.out_dir.c_str());
    throw servelab::cli::ExitRequest{130};
  }
}

}  // namespace

SERVELAB_REGISTER_COMMAND("tune", 40, [](CLI::App& root) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = root.add_subcommand(
      "tune", "Run a study (STUDY.toml): search engine configs on the twin or real engines, record every "
              "trial in SQLite, write the report and a recommended launch command");
  cmd->add_option("study", args->study, "study file (TOML), e.g. studies/deepseek-v3.2-h200x8.toml")
      ->required()->check(CLI::ExistingFile);
  cmd->add_option("--target", args->target, "override the study's target")->check(CLI::IsMember({"twin", "local"}));
  cmd->add_option("--out", args->out, "output directory (default out/<study name>)");
  cmd->add_flag("--resume", args->resume, "keep finished trials of the output directory's results.sqlite");
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines");
  cmd->callback([args] { run(*args); });
});
