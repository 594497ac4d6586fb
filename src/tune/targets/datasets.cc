#include "tune/targets/datasets.h"

#include <algorithm>

#include "servelab/common/paths.h"

namespace servelab::tune::detail {

namespace fs = std::filesystem;

std::optional<fs::path> resolve_dataset_file(const std::string& given, std::vector<std::string>* tried) {
  if (given.empty()) return std::nullopt;
  const fs::path as_given(given);
  std::vector<fs::path> candidates = {as_given, common::data_dir() / as_given.filename(),
                                      common::cache_dir() / "data" / as_given.filename()};
  std::error_code ec;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c, ec)) return c;
    if (tried && std::find(tried->begin(), tried->end(), c.lexically_normal().string()) == tried->end())
      tried->push_back(c.lexically_normal().string());
  }
  return std::nullopt;
}

std::string dataset_path_arg(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--dataset-path" && i + 1 < args.size()) return args[i + 1];
    if (args[i].rfind("--dataset-path=", 0) == 0) return args[i].substr(15);
  }
  return "";
}

std::vector<std::string> with_resolved_dataset(std::vector<std::string> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--dataset-path" && i + 1 < args.size()) {
      if (auto f = resolve_dataset_file(args[i + 1], nullptr)) args[i + 1] = f->string();
    } else if (args[i].rfind("--dataset-path=", 0) == 0) {
      if (auto f = resolve_dataset_file(args[i].substr(15), nullptr))
        args[i] = "--dataset-path=" + f->string();
    }
  }
  return args;
}

}  // namespace servelab::tune::detail
