// servelab/common: UTF-8 encoding shared by the tokenizer (byte-level alphabet, decoders) and the dataset
// loader (JSON \u escapes). Header-only: it sits on the tokenizer's hot path.
#pragma once

#include <string>

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

}  // namespace servelab::common
