// servelab/tokenizer (private): the UTF-8 codec (common/utf8.h) and the Unicode White_Space property.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "servelab/common/utf8.h"

namespace servelab::tokenizer::detail {

/// The UTF-8 codec is common's (common/utf8.h); these names keep the tokenizer's code short.
using common::utf8_append;
using common::utf8_append_lossy;
using common::utf8_len;
using common::utf8_next;
using common::utf8_valid;

/// Unicode White_Space property (Rust `char::is_whitespace`).
inline bool is_unicode_whitespace(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

}  // namespace servelab::tokenizer::detail
