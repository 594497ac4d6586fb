// `servelab bench merge SHARD.json... [--save-result] [--save-detailed] [--result-dir D] [--result-filename
// F]`: joins the results of `bench serve --shard I/N` runs into the report one client would have printed
// (bench/merge.h; docs/bench.md "Load from several hosts"). Exit 2 for shards that do not belong together.
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "cli/command_registry.h"
#include "servelab/bench/merge.h"
#include "servelab/report/report.h"

namespace {

struct MergeFlags {
  std::vector<std::string> files;
  bool save_result = false;
  bool save_detailed = false;
  std::string result_dir;
  std::string result_filename;
};

void run_merge(const MergeFlags& f) {
  using namespace servelab;
  bench::MergeResult m;
  try {
    std::vector<bench::ShardInput> shards;
    for (const auto& file : f.files) shards.push_back(bench::read_shard_file(file));
    m = bench::merge_shards(shards, f.save_detailed);
  } catch (const bench::MergeError& e) {
    std::fprintf(stderr, "servelab bench merge: error: %s\n", e.what());
    throw cli::ExitRequest{2};
  } catch (const std::bad_alloc&) {  // not "std::bad_alloc": say what ran out
    std::fprintf(stderr, "servelab bench merge: error: out of memory reading or merging %zu shard file(s)\n",
                 f.files.size());
    throw cli::ExitRequest{1};
  }
  std::fputs(m.console_report.c_str(), stdout);
  if (f.save_result) {
    const auto path = report::result_path(m.run, f.result_dir, f.result_filename);
    try {
      report::write_result_file(path, m.result_json, /*append=*/false);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "servelab bench merge: error: %s\n", e.what());
      throw cli::ExitRequest{1};
    }
    std::printf("Result saved to %s\n", path.string().c_str());
  }
}

}  // namespace

// Order 21: after "bench" (20) exists, add its "merge" subcommand.
SERVELAB_REGISTER_COMMAND("bench merge", 21, [](CLI::App& root) {
  CLI::App* bench = root.get_subcommand("bench");
  auto* merge = bench->add_subcommand(
      "merge",
      "Join the --save-result --save-detailed files of `bench serve --shard I/N --start-at EPOCH_S` runs "
      "into the "
      "report one client would have printed (times on a common clock, skew reported). See docs/bench.md.");
  auto flags = std::make_shared<MergeFlags>();
  merge->add_option("shards", flags->files, "Shard result files (one per shard, any order).")->required();
  merge->add_flag("--save-result", flags->save_result, "Save the merged result as JSON.");
  merge->add_flag("--save-detailed", flags->save_detailed, "Keep the per-request arrays in the merged JSON.");
  merge->add_option("--result-dir", flags->result_dir,
                    "Directory of the JSON result file (created if needed).");
  merge->add_option("--result-filename", flags->result_filename,
                    "File name of the JSON result (default: vLLM's name for the run).");
  merge->callback([flags] { run_merge(*flags); });
});
