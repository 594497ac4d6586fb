// Shared helpers for tests/dataset: the fake tokenizer of the Python oracle and subprocess oracles.
#pragma once

#include <cstdio>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dataset/synthetic.h"
#include "servelab/common/paths.h"

namespace servelab::dataset::testing {

/// The fake tokenizer of tests/dataset/oracles/vllm_datasets_oracle.py: vocab 1000; decode(ids) = "t<id> "
/// for ids not divisible by 7 (those decode to nothing, so re-encoding loses them); encode = the word ids.
inline detail::TokenizerOps fake_tokenizer() {
  detail::TokenizerOps ops;
  ops.vocab_size = 1000;
  ops.num_special_tokens_to_add = 1;
  ops.special_ids = {0, 1};
  ops.decode = [](const std::vector<std::int32_t>& ids) {
    std::string s;
    for (auto id : ids) {
      if (id % 7 != 0) s += "t" + std::to_string(id) + " ";
    }
    return s;
  };
  ops.encode = [](std::string_view text, bool) {
    std::vector<std::int32_t> ids;
    std::size_t i = 0;
    while (i < text.size()) {
      while (i < text.size() && text[i] == ' ') ++i;
      if (i >= text.size()) break;
      std::size_t j = text.find(' ', i);
      if (j == std::string_view::npos) j = text.size();
      ids.push_back(std::stoi(std::string(text.substr(i + 1, j - i - 1))));
      i = j;
    }
    return ids;
  };
  return ops;
}

/// UTF-8 bytes / 4 + 1 (a BOS): the oracle's token counter for sharegpt.
inline int fake_count(std::string_view text) {
  return static_cast<int>(text.size() / 4 + 1);
}

/// Runs the oracle with `python` and parses its JSON output; nullopt when that interpreter (or numpy) is
/// missing.
inline std::optional<nlohmann::json> run_oracle(const std::string& python, const std::string& args) {
  const auto script = common::source_dir() / "tests/dataset/oracles/vllm_datasets_oracle.py";
  const std::string cmd = python + " " + script.string() + " " + args + " 2>/dev/null";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) return std::nullopt;
  std::string out;
  char buf[65536];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) out.append(buf, n);
  const int rc = pclose(pipe);
  if (rc != 0 || out.empty()) return std::nullopt;
  return nlohmann::json::parse(out);
}

/// The message of the std::runtime_error `f` throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

/// Words (maximal runs of non-whitespace: space, tab, CR, LF), as Python's len(text.split()) on ASCII.
inline int words(std::string_view text) {
  int n = 0;
  bool in_word = false;
  for (char c : text) {
    const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}

/// Fake tokenizer count: a token per whitespace-separated word plus a BOS. The matching fake "chat
/// template" wraps the prompt in <U>...<A> (wrap_chat: one word more, "<A>" after the last newline).
inline int words_plus_bos(std::string_view text) {
  return words(text) + 1;
}
inline std::string wrap_chat(std::string_view p) {
  return "<U>" + std::string(p) + "<A>";
}

}  // namespace servelab::dataset::testing
