// servelab/dataset (private): the one JSON Lines reader of the file datasets (custom, spec_bench, hf JSONL).
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace servelab::dataset::detail {

/// Calls `on_object(object, line_no)` for every non-blank line of the JSON Lines file `path` (line numbers
/// from 1), in file order. Throws std::runtime_error naming the file (and the line): "cannot open the
/// {what}", "line N: invalid JSON: ...", "line N: expected a JSON object", "read error"; exceptions of
/// `on_object` pass through.
template <class OnObject>
void for_each_jsonl_object(const std::filesystem::path& path, std::string_view what, OnObject&& on_object) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the {}", path.string(), what));
  std::string line;
  for (std::size_t line_no = 1; std::getline(in, line); ++line_no) {
    if (line.find_first_not_of(" \t\r\n") == std::string::npos) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const std::exception& e) {
      throw std::runtime_error(
          fmt::format("{}: line {}: invalid JSON: {}", path.string(), line_no, e.what()));
    }
    if (!j.is_object())
      throw std::runtime_error(fmt::format("{}: line {}: expected a JSON object", path.string(), line_no));
    on_object(j, line_no);
  }
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", path.string()));
}

}  // namespace servelab::dataset::detail
