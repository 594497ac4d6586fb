// resolve_tokenizer_path / load_tokenizer: where `--tokenizer X` finds its tokenizer.json.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/common/text.h"
#include "servelab/hub/hub.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::tokenizer {
namespace {

// DeepSeek ids served by the DeepSeek-V3 tokenizer that `make deps` fetches.
bool is_deepseek_v3_family(std::string_view spec) {
  const std::string s = common::ascii_lower(spec);
  return s == "deepseek-ai/deepseek-v3" || s == "deepseek-ai/deepseek-v3.1" ||
         s == "deepseek-ai/deepseek-v3.2" || s == "deepseek-ai/deepseek-v3.2-exp" ||
         s == "deepseek-ai/deepseek-v3-base" || s == "deepseek-ai/deepseek-v3.1-base" ||
         s == "deepseek-ai/deepseek-v3.1-terminus";
}

// V3.1 and later turn the placeholders 128798/128799 of V3 into <think> / </think>.
bool has_think_tokens(std::string_view spec) {
  const std::string s = common::ascii_lower(spec);
  return is_deepseek_v3_family(spec) && s != "deepseek-ai/deepseek-v3" && s != "deepseek-ai/deepseek-v3-base";
}

std::vector<std::filesystem::path> hf_hub_dirs() {
  std::vector<std::filesystem::path> dirs;
  if (const char* hub = std::getenv("HF_HUB_CACHE"); hub && *hub) dirs.emplace_back(hub);
  if (const char* home = std::getenv("HF_HOME"); home && *home)
    dirs.push_back(std::filesystem::path(home) / "hub");
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    dirs.push_back(std::filesystem::path(xdg) / "huggingface" / "hub");
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    dirs.push_back(std::filesystem::path(home) / ".cache" / "huggingface" / "hub");
  }
  return dirs;
}

// <cache>/tokenizers/deepseek-v3/tokenizer.json (fetched by `make deps`, scripts/deps.sh).
std::filesystem::path deepseek_cache_file() {
  return common::cache_dir() / "tokenizers" / "deepseek-v3" / "tokenizer.json";
}

}  // namespace

std::filesystem::path resolve_tokenizer_path(std::string_view spec, const hub::FetchRequest& fetch) {
  namespace fs = std::filesystem;
  std::vector<std::string> tried;
  const bool pinned = !fetch.revision.empty();
  std::error_code ec;
  const fs::path as_path(spec);
  if (fs::is_regular_file(as_path, ec)) return as_path;
  if (fs::is_directory(as_path, ec)) {
    if (fs::is_regular_file(as_path / "tokenizer.json", ec)) return as_path / "tokenizer.json";
    tried.push_back("directory " + as_path.string() + " (exists, but holds no tokenizer.json)");
  } else {
    tried.push_back("file " + as_path.string() + " (does not exist)");
  }
  hub::HubOptions hub_options = hub::options_from_environment();
  hub_options.log = fetch.log;
  if (pinned && hub::is_repo_id(spec)) {  // that revision's snapshot only (refs/<revision>, or the commit)
    if (auto f = hub::cached_file(spec, "tokenizer.json", fetch.revision, hub_options)) return *f;
    tried.push_back(
        "Hugging Face cache " +
        (hub_options.cache_dir / hub::repo_folder_name(spec) / "snapshots" / "*" / "tokenizer.json")
            .string() +
        " at revision " + fetch.revision);
  }
  // A Hugging Face id ORG/NAME in the local hub cache.
  const auto slash = spec.find('/');
  if (!pinned && slash != std::string_view::npos && slash > 0 &&
      spec.find('/', slash + 1) == std::string_view::npos) {
    const std::string repo =
        "models--" + std::string(spec.substr(0, slash)) + "--" + std::string(spec.substr(slash + 1));
    for (const fs::path& hub : hf_hub_dirs()) {
      const fs::path snapshots = hub / repo / "snapshots";
      std::vector<fs::path> found;
      if (fs::is_directory(snapshots, ec)) {
        for (const auto& e : fs::directory_iterator(snapshots, ec)) {
          if (fs::is_regular_file(e.path() / "tokenizer.json", ec))
            found.push_back(e.path() / "tokenizer.json");
        }
      }
      if (!found.empty()) {
        // The snapshot that refs/main points at.
        std::string main_ref;
        try {
          main_ref = common::read_file(hub / repo / "refs" / "main");
        } catch (const std::exception&) {
        }
        while (!main_ref.empty() && std::isspace(static_cast<unsigned char>(main_ref.back())))
          main_ref.pop_back();
        for (const fs::path& f : found) {
          if (!main_ref.empty() && f.parent_path().filename() == main_ref) return f;
        }
        // With refs, the other snapshots are other revisions (a pinned --revision): not main's file.
        // The newest snapshot stands in for main only in a cache without any refs.
        if (!fs::is_empty(hub / repo / "refs", ec) && !ec) {
          tried.push_back(
              "Hugging Face cache " +
              (snapshots / (main_ref.empty() ? "<no refs/main>" : main_ref) / "tokenizer.json").string());
          continue;
        }
        return *std::max_element(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
          std::error_code e1, e2;
          return fs::last_write_time(a, e1) < fs::last_write_time(b, e2);
        });
      }
      tried.push_back("Hugging Face cache " + (snapshots / "*" / "tokenizer.json").string());
    }
  }
  if (!pinned && is_deepseek_v3_family(spec)) {
    const fs::path f = deepseek_cache_file();
    if (fs::is_regular_file(f, ec)) return f;
    tried.push_back("DeepSeek tokenizer " + f.string() + " (run `make deps` to fetch it)");
  }
  // Nothing local: the Hub, into its cache (tokenizer_config.json beside it when the repository has one).
  if (fetch.download && hub::is_repo_id(spec)) {
    try {
      const hub::Snapshot snap = hub::fetch_files(
          spec, {{"tokenizer.json", true}, {"tokenizer_config.json", false}}, fetch.revision, hub_options);
      return *snap.files.at("tokenizer.json");
    } catch (const hub::HubError& e) {
      tried.push_back(std::string("Hugging Face Hub: ") + e.what());
    }
  }
  std::string message = "no tokenizer.json found for --tokenizer \"" + std::string(spec) + "\"; tried:";
  for (const std::string& t : tried) message += "\n  - " + t;
  throw std::runtime_error(message);
}

Tokenizer load_tokenizer(std::string_view spec, const hub::FetchRequest& fetch) {
  const std::filesystem::path path = resolve_tokenizer_path(spec, fetch);
  LoadOptions options;
  // DeepSeek-V3.1/V3.2 served from DeepSeek-V3's file: register <think>/</think> at the ids of the
  // V3.1+ vocabulary (128798/128799, replacing V3's <｜place▁holder▁no▁798/799｜>). See docs/tokenizer.md.
  if (has_think_tokens(spec) && path == deepseek_cache_file()) {
    options.extra_added_tokens = {{128798, "<think>"}, {128799, "</think>"}};
  }
  return Tokenizer::from_file(path, options);
}

}  // namespace servelab::tokenizer
