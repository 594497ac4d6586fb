// Fuzzes what `servelab compare` and `servelab bench merge` read: a --save-result file (JSON, or JSON Lines
// of several runs) and a shard's detailed result. Any bytes must give runs / a merge, or the error the
// command prints (std::runtime_error with the file named, MergeError); never a crash, a hang or an
// allocation sized by a number in the file (issue 31).
#include <cstdint>
#include <new>
#include <stdexcept>
#include <vector>

#include "fuzz_input.h"
#include "servelab/bench/merge.h"
#include "servelab/report/compare.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = servelab::fuzz::write_input("result.json", data, size);
  try {
    auto runs = servelab::report::load_saved_runs(path.string());
    if (!runs.empty()) {
      runs.push_back(runs.front());  // compare needs two: the file against itself
      (void)servelab::report::format_comparison(runs);
    }
  } catch (const std::runtime_error&) {
  } catch (const std::bad_alloc&) {  // compare reports it for the file (compare_command.cc)
  }
  try {
    const auto shard = servelab::bench::read_shard_file(path);
    (void)servelab::bench::merge_shards({shard}, true);
    (void)servelab::bench::merge_shards({shard, shard}, false);  // the same shard twice: refused
  } catch (const servelab::bench::MergeError&) {
  }
  return 0;
}
