// servelab/tokenizer (private): UTF-8 helpers shared by the tokenizer's components.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/utf8.h"

namespace servelab::tokenizer::detail {

/// Decodes the code point starting at byte `i` of valid UTF-8 `s` and advances `i` past it.
/// Precondition: `s` is valid UTF-8 and `i < s.size()`.
inline char32_t utf8_next(std::string_view s, std::size_t& i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    ++i;
    return b0;
  }
  if (b0 < 0xE0) {
    char32_t cp = ((b0 & 0x1Fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3Fu);
    i += 2;
    return cp;
  }
  if (b0 < 0xF0) {
    char32_t cp = ((b0 & 0x0Fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 6) |
                  (static_cast<unsigned char>(s[i + 2]) & 0x3Fu);
    i += 3;
    return cp;
  }
  char32_t cp = ((b0 & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3Fu) << 12) |
                ((static_cast<unsigned char>(s[i + 2]) & 0x3Fu) << 6) |
                (static_cast<unsigned char>(s[i + 3]) & 0x3Fu);
  i += 4;
  return cp;
}

/// Byte length of the UTF-8 sequence whose lead byte is `b` (1 for continuation/invalid bytes).
inline std::size_t utf8_len(unsigned char b) {
  return b < 0xC0 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
}

/// Appends the UTF-8 encoding of `cp` to `out` (one implementation: common/utf8.h).
using common::utf8_append;

/// True when `s` is well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_valid(std::string_view s);

/// Appends `bytes` to `out`, replacing every ill-formed subsequence by U+FFFD using the
/// "maximal subpart" policy of Unicode 15 §3.9 (U+FFFD substitution of maximal subparts) — the policy
/// of Rust's String::from_utf8_lossy, Python's bytes.decode(errors="replace") and WHATWG/Node's
/// TextDecoder, so the result equals what the reference sees after any of those conversions.
void utf8_append_lossy(std::string& out, std::string_view bytes);

/// Unicode White_Space property (Rust `char::is_whitespace`).
inline bool is_unicode_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace servelab::tokenizer::detail
