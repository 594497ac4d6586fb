// `servelab report DIR`: rebuilds a study's report from DIR/results.sqlite (no trial is run).
#include <iostream>

#include "cli/command_registry.h"
#include "servelab/tune/tune.h"

SERVELAB_REGISTER_COMMAND("report", 45, [](CLI::App& root) {
  auto dir = std::make_shared<std::string>();
  CLI::App* cmd = root.add_subcommand(
      "report",
      "Write report.md, report.html, trials.csv, trials.json and summary.json of a study directory from its "
      "results.sqlite (partial when the study is unfinished)");
  cmd->add_option("dir", *dir, "study output directory (holds results.sqlite)")
      ->required()
      ->check(CLI::ExistingDirectory);
  cmd->callback([dir] { servelab::tune::report_study_dir(*dir, &std::cerr); });
});
