// servelab/common: the one UTF-8 encoder and decoder (RFC 3629, Unicode 15 §3.9) of servelab — used by the
// tokenizer (byte-level alphabet, decoders; hot path, hence inline), the dataset loader (JSON \u escapes),
// the Python-json writer (python_json.h) and the twin's server. Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace servelab::common {

/// Appends the UTF-8 encoding (RFC 3629) of code point `cp` to `out`. Precondition: cp <= 0x10FFFF;
/// surrogates are encoded as given (callers that must not emit them replace them first).
inline void utf8_append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

/// Decodes the code point starting at byte `i` of valid UTF-8 `s` and advances `i` past it (no checks:
/// the tokenizer's hot path over text already validated by utf8_valid or built by utf8_append_lossy).
/// Precondition: the sequence at `i` is well-formed (utf8_well_formed_length(s, i, ...) > 0).
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

/// Length in bytes (1..4) of the well-formed sequence at `s[i]` (no overlongs, no surrogates, nothing
/// above U+10FFFF: Unicode 15 Table 3-7), or 0 when it is ill-formed; then `maximal_subpart` is the length
/// of its maximal subpart (≥ 1: the bytes one U+FFFD replaces, Unicode 15 §3.9). Precondition: i < size.
std::size_t utf8_well_formed_length(std::string_view s, std::size_t i, std::size_t& maximal_subpart);

/// True when `s` is well-formed UTF-8 (no surrogates, no overlongs, nothing above U+10FFFF).
bool utf8_valid(std::string_view s);

/// Appends `bytes` to `out`, replacing every ill-formed subsequence by U+FFFD using the
/// "maximal subpart" policy of Unicode 15 §3.9 (U+FFFD substitution of maximal subparts) — the policy
/// of Rust's String::from_utf8_lossy, Python's bytes.decode(errors="replace") and WHATWG/Node's
/// TextDecoder, so the result equals what the reference sees after any of those conversions.
void utf8_append_lossy(std::string& out, std::string_view bytes);

}  // namespace servelab::common
