// servelab/tune private: a cheap pre-scan of a study's TOML text that refuses shapes toml++ handles by
// recursion (issue 31: a dotted key or table header of 50,000 parts, or arrays/inline tables nested that
// deep, overflowed the stack: SIGSEGV instead of an error). Run before toml::parse.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace servelab::tune::detail {

/// Most parts of one dotted key or table header (`a.b.c` has 3). Real studies use 2 or 3.
inline constexpr std::size_t kMaxTomlKeyParts = 128;
/// Deepest nesting of arrays and inline tables ( `[` and `{` outside strings and comments).
inline constexpr std::size_t kMaxTomlNesting = 128;

/// Throws StudyError "<origin>:<line>: ..." when `text` holds a dotted key or table header of more than
/// kMaxTomlKeyParts parts, or arrays/inline tables nested deeper than kMaxTomlNesting. Strings (basic,
/// literal, multi-line) and comments are skipped; anything else is left to toml++ (which reports syntax
/// errors with line and column). Linear in the text; allocates nothing.
void check_toml_shape(std::string_view text, const std::string& origin);

}  // namespace servelab::tune::detail
