// servelab/common: the string helpers every module needs (ASCII case folding, trimming, abbreviating), once.
#pragma once

#include <string>
#include <string_view>

namespace servelab::common {

/// A copy of `s` with ASCII letters lower-cased and every other byte unchanged (flag values, model ids, file
/// names and header names compare case-insensitively; UTF-8 bytes are never altered). Thread-safe, no locale.
inline std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

/// `s` without the leading and trailing characters found in `chars` (default: ASCII whitespace, as
/// std::isspace in the C locale); empty when `s` has only those.
inline std::string trim(std::string_view s, std::string_view chars = " \t\n\v\f\r") {
  const size_t a = s.find_first_not_of(chars);
  if (a == std::string_view::npos) return std::string();
  return std::string(s.substr(a, s.find_last_not_of(chars) - a + 1));
}

/// `s` cut to at most `max_bytes` bytes plus " …" when longer: at the last space in the second half of the
/// kept part (a word is not split), else at a UTF-8 character boundary. `s` itself when it fits.
inline std::string abbreviate(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // a continuation byte
  if (const size_t space = s.rfind(' ', cut); space != std::string_view::npos && space >= max_bytes / 2)
    cut = space;
  return trim(s.substr(0, cut), " ,;:") + " …";
}

}  // namespace servelab::common
