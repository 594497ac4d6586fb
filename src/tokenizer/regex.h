// servelab/tokenizer (private): PCRE2 (UTF + UCP + JIT) regexes with the match iteration of the
// Oniguruma-backed `SysRegex` that Hugging Face `tokenizers` uses for Split/ByteLevel patterns.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace servelab::tokenizer::detail {

/// Byte range [first, second) inside a subject string.
using Span = std::pair<std::uint32_t, std::uint32_t>;

/// A compiled regex. Value type (shared immutable code).
/// Thread-safety: find_all may be called concurrently (match data and JIT stack are thread-local).
class Regex {
 public:
  /// Compiles `pattern` (Oniguruma/Perl syntax as written in tokenizer.json) with PCRE2_UTF|PCRE2_UCP and
  /// JIT; `literal` compiles it as a literal string. Throws std::runtime_error naming `json_path` and
  /// PCRE2's message on a syntax error.
  static Regex compile(const std::string& pattern, bool literal, const std::string& json_path);

  /// Appends the successive non-overlapping matches of the pattern in `subject` (valid UTF-8) to `out`,
  /// iterating as onig's find_iter does (an empty match right after the previous match is skipped by
  /// advancing one character). Throws std::runtime_error if PCRE2 fails (e.g. match limit).
  void find_all(std::string_view subject, std::vector<Span>& out) const;

 private:
  std::shared_ptr<void> code_;  // pcre2_code_8*
  bool jit_ = false;
  std::string pattern_;
};

}  // namespace servelab::tokenizer::detail
