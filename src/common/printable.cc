// Untrusted text for error messages (see printable.h).
#include "servelab/common/printable.h"

#include <cstdio>

#include "servelab/common/utf8.h"

namespace servelab::common {

std::string printable(std::string_view text, std::size_t max_bytes) {
  std::string out;
  auto hex = [&](const char* fmt, unsigned value) {
    char buf[12];
    std::snprintf(buf, sizeof buf, fmt, value);
    out += buf;
  };
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t subpart = 1;
    const std::size_t n = utf8_well_formed_length(text, i, subpart);
    const std::size_t step = n > 0 ? n : 1;
    if (i + step > max_bytes) break;
    const auto b = static_cast<unsigned char>(text[i]);
    if (n == 0) {
      hex("\\x%02x", b);
    } else if (n == 1) {
      switch (b) {
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        case '\0':
          out += "\\0";
          break;
        case '\\':
          out += "\\\\";
          break;
        default:
          if (b < 0x20 || b == 0x7f)
            hex("\\x%02x", b);
          else
            out.push_back(static_cast<char>(b));
      }
    } else if (n == 2 && b == 0xC2 && static_cast<unsigned char>(text[i + 1]) < 0xA0) {
      hex("\\u%04x", static_cast<unsigned char>(text[i + 1]));  // C1 control (U+0080..U+009F, e.g. CSI)
    } else {
      out.append(text.substr(i, n));
    }
    i += step;
  }
  if (i < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace servelab::common
