// servelab/common: where servelab finds real data and its cache of downloaded artefacts.
#pragma once

#include <filesystem>
#include <map>
#include <string>

namespace servelab::common {

/// Directory of real datasets (ShareGPT-form conversations, the GPT-2 tokenizer, ...).
/// Resolution: $SERVELAB_DATA_DIR if set, else `<prefix>/share/servelab/data` when it exists (an installed
/// binary at <prefix>/bin; `make install` copies the checkout's ../shared/data there, or
/// -DSERVELAB_INSTALL_DATA_DIR's), else `<checkout>/../shared/data` (the project layout in development and
/// CI; see source_dir()). Never
/// throws; the directory may not exist (callers report the path they tried).
std::filesystem::path data_dir();

/// `<prefix>/share/servelab` for a binary installed at `<prefix>/bin` (studies, engine stand-ins); derived
/// from the executable's location, never compiled in.
std::filesystem::path installed_data_dir();

/// Directory of the running executable (/proc/self/exe); empty if unknown.
std::filesystem::path executable_dir();

/// Cache directory for artefacts fetched by `make deps` (npm tokenizers, oracle packages).
/// Resolution: $SERVELAB_CACHE_DIR, else $XDG_CACHE_HOME/servelab, else $HOME/.cache/servelab.
std::filesystem::path cache_dir();

/// The servelab checkout this binary runs from: $SERVELAB_SOURCE_DIR, else the nearest ancestor directory of
/// the executable holding servelab's sources (a build dir inside a checkout), else the working directory.
/// Nothing of the build tree is compiled in. Used by tests and development runs to find fixtures.
std::filesystem::path source_dir();

/// Reads a whole file into a string. Throws std::runtime_error naming the path when it cannot be opened
/// or read.
std::string read_file(const std::filesystem::path& path);

/// The process environment as NAME -> value (entries without '=' are skipped). Used to read the
/// environment variables of an engine launch (VLLM_*, SGLANG_*, TRTLLM_*).
std::map<std::string, std::string> environment_map();

}  // namespace servelab::common
