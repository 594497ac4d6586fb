// Engine version numbers. See version.h.
#include "engines/version.h"

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace servelab::engines {
namespace {

[[noreturn]] void bad(const std::string& text) {
  throw std::invalid_argument(
      "'" + text + "' is not an engine version (expected e.g. 0.11.0, 0.5.3rc0, 0.5.3.post3, 1.2.0rc5)");
}

// Reads digits at `i`; returns the number or -1 when there are none.
int read_number(const std::string& s, std::size_t& i) {
  if (i >= s.size() || !std::isdigit(static_cast<unsigned char>(s[i]))) return -1;
  long v = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    v = v * 10 + (s[i] - '0');
    if (v > 1000000) return -1;
    ++i;
  }
  return static_cast<int>(v);
}

}  // namespace

EngineVersion EngineVersion::parse(const std::string& text) {
  EngineVersion v;
  v.text = text;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == 'v' || text[i] == 'V')) ++i;
  while (true) {
    int n = read_number(text, i);
    if (n < 0) bad(text);
    v.release.push_back(n);
    if (i < text.size() && text[i] == '.' && i + 1 < text.size() &&
        std::isdigit(static_cast<unsigned char>(text[i + 1]))) {
      ++i;
      continue;
    }
    break;
  }
  if (v.release.size() < 2) bad(text);
  auto take = [&](const char* word) {
    std::size_t n = std::char_traits<char>::length(word);
    if (text.compare(i, n, word) != 0) return false;
    i += n;
    return true;
  };
  if (take("rc") || take("a") || take("b")) {
    v.pre = read_number(text, i);
    if (v.pre < 0) bad(text);
  }
  if (take(".post") || take("post")) {
    v.post = read_number(text, i);
    if (v.post < 0) bad(text);
  }
  if (i != text.size()) bad(text);
  return v;
}

int EngineVersion::compare(const EngineVersion& o) const {
  std::size_t n = std::max(release.size(), o.release.size());
  for (std::size_t k = 0; k < n; ++k) {
    int a = k < release.size() ? release[k] : 0;
    int b = k < o.release.size() ? o.release[k] : 0;
    if (a != b) return a < b ? -1 : 1;
  }
  // A pre-release sorts before the final release; a final release has pre = -1 -> treat as +inf.
  long pa = pre < 0 ? 1L << 30 : pre, pb = o.pre < 0 ? 1L << 30 : o.pre;
  if (pa != pb) return pa < pb ? -1 : 1;
  if (post != o.post) return post < o.post ? -1 : 1;
  return 0;
}

bool VersionRange::contains(const EngineVersion& v) const {
  if (since && *since && v < EngineVersion::parse(since)) return false;
  if (until && *until && !(v < EngineVersion::parse(until))) return false;
  return true;
}

bool version_at_least(const std::string& version, const char* threshold) {
  return EngineVersion::parse(threshold) <= EngineVersion::parse(version);
}

}  // namespace servelab::engines
