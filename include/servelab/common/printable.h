// servelab/common: untrusted text (a key, a name, a value read from a file) made safe to put in an error
// message printed on a terminal: bounded in length, control characters and ill-formed UTF-8 escaped, so a
// 50,000-character key or a name holding ESC or NUL cannot flood or drive the user's terminal.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace servelab::common {

/// Longest excerpt printable() keeps by default, bytes of the input.
inline constexpr std::size_t kPrintableMaxBytes = 80;

/// `text` for a message: at most `max_bytes` bytes of it (cut at a character boundary, then
/// "... (N bytes)" naming the whole length); C0 controls, DEL and C1 controls as C-style escapes ("\n",
/// "\t", "\0", "\x1b", "\u009b"), a backslash as "\\", each byte of an ill-formed UTF-8 sequence as "\xNN";
/// well-formed non-ASCII characters kept. Thread-safety: pure.
std::string printable(std::string_view text, std::size_t max_bytes = kPrintableMaxBytes);

}  // namespace servelab::common
