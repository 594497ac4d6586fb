// `servelab compare A.json B.json ...`: `bench serve --save-result` files side by side, the change in %
// against the first run, and a Mann-Whitney U verdict on per-request latency when the files were saved with
// --save-detailed (include/servelab/report/compare.h says why that test).
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cli/command_registry.h"
#include "servelab/report/compare.h"

namespace servelab::cli {
namespace {

void run_compare(const std::vector<std::string>& files) {
  std::vector<report::SavedRun> runs;
  std::map<std::string, int> names;
  for (const auto& f : files) names[std::filesystem::path(f).filename().string()]++;
  for (const auto& f : files) {
    std::vector<report::SavedRun> loaded;
    try {
      loaded = report::load_saved_runs(f);
    } catch (const std::bad_alloc&) {  // not "std::bad_alloc": say which file
      std::cerr << "servelab compare: " << f << ": out of memory reading it\n";
      throw ExitRequest{1};
    }
    // Two files of the same name (different directories) are told apart by their path.
    if (names[std::filesystem::path(f).filename().string()] > 1)
      for (auto& r : loaded) r.name = f + r.name.substr(std::filesystem::path(f).filename().string().size());
    for (auto& r : loaded) runs.push_back(std::move(r));
  }
  if (runs.size() < 2) {
    std::cerr << "servelab compare: " << files.front()
              << " holds one run; give at least two result files (or a JSON Lines file with several runs)\n";
    throw ExitRequest{2};
  }
  std::cout << report::format_comparison(runs);
}

}  // namespace
}  // namespace servelab::cli

SERVELAB_REGISTER_COMMAND("compare", 50, [](CLI::App& root) {
  auto files = std::make_shared<std::vector<std::string>>();
  CLI::App* cmd = root.add_subcommand(
      "compare",
      "Print bench serve result files (--save-result JSON, or JSON Lines) side by side with the change "
      "in % against the first; with --save-detailed results, whether TTFT/TPOT/ITL changed significantly "
      "(Mann-Whitney U, 5%)");
  cmd->add_option("files", *files, "result files; the first is the reference")->required();
  cmd->callback([files] { servelab::cli::run_compare(*files); });
});
