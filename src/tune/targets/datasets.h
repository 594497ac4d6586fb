// servelab/tune (private): where a scenario's dataset file is found — the same answer for the twin, the
// local target (bench serve) and pre-flight. `make deps` puts ShareGPT_V3 in <cache>/data; a study names it
// {data_dir}/ShareGPT_V3_unfiltered_cleaned_split.json; both must work.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace servelab::tune::detail {

/// Resolves a --dataset-path: the path as given (relative to the working directory), else a file of the
/// same name in common::data_dir(), else in common::cache_dir()/data. nullopt when none exists; `tried`
/// (optional) receives every place looked at.
std::optional<std::filesystem::path> resolve_dataset_file(const std::string& given,
                                                          std::vector<std::string>* tried);

/// The value of --dataset-path in bench args ("--dataset-path X" or "--dataset-path=X"), "" when absent.
std::string dataset_path_arg(const std::vector<std::string>& args);

/// `args` with the --dataset-path value replaced by its resolved file (unchanged when unresolvable: bench
/// then reports the missing file itself).
std::vector<std::string> with_resolved_dataset(std::vector<std::string> args);

}  // namespace servelab::tune::detail
