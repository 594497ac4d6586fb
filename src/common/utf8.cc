// The UTF-8 validator and lossy decoder (see utf8.h).
#include "servelab/common/utf8.h"

#include <cstdint>

namespace servelab::common {

std::size_t utf8_well_formed_length(std::string_view s, std::size_t i, std::size_t& consumed) {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) {
    need = 1;
  } else if (b == 0xE0) {
    need = 2, lo = 0xA0;
  } else if ((b >= 0xE1 && b <= 0xEC) || b == 0xEE || b == 0xEF) {
    need = 2;
  } else if (b == 0xED) {
    need = 2, hi = 0x9F;
  } else if (b == 0xF0) {
    need = 3, lo = 0x90;
  } else if (b >= 0xF1 && b <= 0xF3) {
    need = 3;
  } else if (b == 0xF4) {
    need = 3, hi = 0x8F;
  } else {
    consumed = 1;
    return 0;
  }
  std::size_t j = i + 1;
  for (std::size_t k = 0; k < need; ++k) {
    if (j >= s.size()) {
      consumed = j - i;
      return 0;
    }
    const auto c = static_cast<unsigned char>(s[j]);
    if (c < lo || c > hi) {
      consumed = j - i;
      return 0;
    }
    lo = 0x80, hi = 0xBF;
    ++j;
  }
  return need + 1;
}

bool utf8_valid(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    // ASCII fast path, 8 bytes at a time.
    while (i + 8 <= n) {
      std::uint64_t w;
      __builtin_memcpy(&w, s.data() + i, 8);
      if (w & 0x8080808080808080ull) break;
      i += 8;
    }
    if (i >= n) break;
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    std::size_t consumed = 0;
    const std::size_t len = utf8_well_formed_length(s, i, consumed);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

void utf8_append_lossy(std::string& out, std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    std::size_t consumed = 0;
    const std::size_t len = utf8_well_formed_length(s, i, consumed);
    if (len > 0) {
      out.append(s.data() + i, len);
      i += len;
    } else {
      out.append("\xEF\xBF\xBD");
      i += consumed;
    }
  }
}

}  // namespace servelab::common
