// The pre-scan of a study's TOML text (see toml_guard.h).
#include "tune/study/toml_guard.h"

#include <fmt/format.h>

#include "servelab/tune/study/study.h"

namespace servelab::tune::detail {
namespace {

bool toml_guard_key_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == ' ' || c == '\t';
}

}  // namespace

void check_toml_shape(std::string_view text, const std::string& origin) {
  std::size_t line = 1, depth = 0, dots = 0;
  std::size_t i = 0;
  const std::size_t n = text.size();
  while (i < n) {
    const char c = text[i];
    if (c == '\n') {
      ++line, ++i, dots = 0;
    } else if (c == '#') {
      while (i < n && text[i] != '\n') ++i;
    } else if (c == '"' || c == '\'') {
      // A string (a quoted key part keeps the dotted key going; a value's string is skipped alike).
      const bool basic = c == '"';
      const bool multi = text.substr(i, 3) == std::string_view(basic ? "\"\"\"" : "'''");
      i += multi ? 3 : 1;
      while (i < n) {
        if (basic && text[i] == '\\') {
          if (i + 1 < n && text[i + 1] == '\n') ++line;
          i += 2;
          continue;
        }
        if (text[i] == '\n') {
          if (!multi) break;  // an unterminated string: toml++ says so
          ++line;
        }
        if (text[i] == c && (!multi || text.substr(i, 3) == std::string_view(basic ? "\"\"\"" : "'''"))) {
          i += multi ? 3 : 1;
          break;
        }
        ++i;
      }
    } else if (c == '.') {
      if (++dots >= kMaxTomlKeyParts)
        throw StudyError(
            fmt::format("{}:{}: a dotted key or table header of more than {} parts: refused "
                        "(a study nests its tables 2 or 3 deep)",
                        origin, line, kMaxTomlKeyParts));
      ++i;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxTomlNesting)
        throw StudyError(fmt::format("{}:{}: arrays or inline tables nested more than {} deep: refused",
                                     origin, line, kMaxTomlNesting));
      ++i, dots = 0;
    } else if (c == ']' || c == '}') {
      if (depth > 0) --depth;
      ++i, dots = 0;
    } else {
      if (!toml_guard_key_char(c)) dots = 0;  // '=', ',', ...: the key (or number) ended
      ++i;
    }
  }
}

}  // namespace servelab::tune::detail
