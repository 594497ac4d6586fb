// servelab/common: where servelab finds real data and its cache of downloaded artefacts.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace servelab::common {

/// Directory of real datasets (ShareGPT-form conversations, the GPT-2 tokenizer, ...).
/// Resolution: $SERVELAB_DATA_DIR if set, else `<source dir>/../shared/data` (the project layout in
/// development and CI). Never throws; the directory may not exist (callers report the path they tried).
std::filesystem::path data_dir();

/// Cache directory for artefacts fetched by `make deps` (npm tokenizers, oracle packages).
/// Resolution: $SERVELAB_CACHE_DIR, else $XDG_CACHE_HOME/servelab, else $HOME/.cache/servelab.
std::filesystem::path cache_dir();

/// The repository root this binary was built from (compile-time SERVELAB_SOURCE_DIR, overridable by the
/// environment variable of the same name). Used by tests to find fixtures.
std::filesystem::path source_dir();

/// Reads a whole file into a string. Throws std::runtime_error naming the path when it cannot be opened
/// or read.
std::string read_file(const std::filesystem::path& path);

/// The process environment as NAME -> value (entries without '=' are skipped). Used to read the
/// environment variables of an engine launch (VLLM_*, SGLANG_*, TRTLLM_*).
std::map<std::string, std::string> environment_map();

}  // namespace servelab::common
