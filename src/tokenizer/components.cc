#include "tokenizer/components.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "servelab/common/hash.h"
#include "tokenizer/utf8.h"

namespace servelab::tokenizer::detail {
namespace {

using common::Overloaded;

// ---- normalizers ----

void unicode_normalize(NormUnicode::Form form, std::string& s) {
  int options = UTF8PROC_STABLE;
  switch (form) {
    case NormUnicode::kNfc:
      options |= UTF8PROC_COMPOSE;
      break;
    case NormUnicode::kNfd:
      options |= UTF8PROC_DECOMPOSE;
      break;
    case NormUnicode::kNfkc:
      options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
      break;
    case NormUnicode::kNfkd:
      options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
      break;
  }
  utf8proc_uint8_t* out = nullptr;
  const utf8proc_ssize_t n =
      utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                   static_cast<utf8proc_ssize_t>(s.size()), &out, static_cast<utf8proc_option_t>(options));
  if (n < 0) throw std::runtime_error(std::string("unicode normalization failed: ") + utf8proc_errmsg(n));
  s.assign(reinterpret_cast<char*>(out), static_cast<std::size_t>(n));
  std::free(out);
}

void lowercase(std::string& s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const char32_t c = utf8_next(s, i);
    if (c == 0x130) {  // Rust char::to_lowercase('İ') = "i\u{307}" (SpecialCasing, unconditional)
      out += "i\xCC\x87";
    } else {
      utf8_append(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
    }
  }
  s.swap(out);
}

void strip(std::string& s, bool left, bool right) {
  std::size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      std::size_t i = begin;
      if (!is_unicode_whitespace(utf8_next(s, i))) break;
      begin = i;
    }
  }
  if (right) {
    while (end > begin) {
      std::size_t k = end - 1;
      while (k > begin && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
      std::size_t i = k;
      if (!is_unicode_whitespace(utf8_next(s, i))) break;
      end = k;
    }
  }
  s = s.substr(begin, end - begin);
}

void strip_accents(std::string& s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const std::size_t start = i;
    const char32_t c = utf8_next(s, i);
    const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
    if (cat == UTF8PROC_CATEGORY_MN || cat == UTF8PROC_CATEGORY_MC || cat == UTF8PROC_CATEGORY_ME) continue;
    out.append(s, start, i - start);
  }
  s.swap(out);
}

void replace_all(const Regex& pattern, const std::string& content, std::string& s) {
  thread_local std::vector<Span> spans;
  spans.clear();
  pattern.find_all(s, spans);
  if (spans.empty()) return;
  std::string out;
  out.reserve(s.size());
  std::size_t prev = 0;
  for (const Span& sp : spans) {
    out.append(s, prev, sp.first - prev);
    out += content;
    prev = sp.second;
  }
  out.append(s, prev, std::string::npos);
  s.swap(out);
}

}  // namespace

void normalize(const std::vector<Normalizer>& normalizers, std::string& s) {
  for (const Normalizer& n : normalizers) {
    std::visit(Overloaded{
                   [&](const NormUnicode& u) { unicode_normalize(u.form, s); },
                   [&](const NormLowercase&) { lowercase(s); },
                   [&](const NormStrip& st) { strip(s, st.left, st.right); },
                   [&](const NormStripAccents&) { strip_accents(s); },
                   [&](const NormPrepend& p) {
                     if (!s.empty()) s.insert(0, p.prepend);
                   },
                   [&](const NormReplace& r) { replace_all(r.pattern, r.content, s); },
               },
               n);
  }
}

// ---- pre-tokenizers ----

const std::array<char32_t, 256>& byte_to_char() {
  static const std::array<char32_t, 256> table = [] {
    std::array<char32_t, 256> t{};
    char32_t n = 0;
    for (int b = 0; b < 256; ++b) {
      const bool keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[static_cast<std::size_t>(b)] = keep ? static_cast<char32_t>(b) : 256 + n++;
    }
    return t;
  }();
  return table;
}

namespace {

// UTF-8 of byte_to_char()[b], precomputed (1 or 2 bytes).
struct ByteLevelUtf8 {
  char bytes[256][2];
  unsigned char len[256];
  ByteLevelUtf8() {
    for (int b = 0; b < 256; ++b) {
      std::string u;
      utf8_append(u, byte_to_char()[static_cast<std::size_t>(b)]);
      len[b] = static_cast<unsigned char>(u.size());
      bytes[b][0] = u[0];
      bytes[b][1] = u.size() > 1 ? u[1] : 0;
    }
  }
};
const ByteLevelUtf8& byte_level_utf8() {
  static const ByteLevelUtf8 table;
  return table;
}

void push_piece(std::vector<Piece>& out, const Piece& parent, std::uint32_t begin, std::uint32_t end) {
  if (end <= begin) return;
  out.push_back(Piece{parent.off + begin, end - begin, parent.at_start && begin == 0});
}

// pre_tokenizers/split.rs + tokenizer/normalizer.rs NormalizedString::split: turns (span, is_match)
// covering the whole piece into pieces according to `behavior`.
void split_by_behavior(const Piece& p, std::vector<std::pair<Span, bool>>& matches, SplitBehavior behavior,
                       bool invert, std::vector<Span>& splits, std::vector<Piece>& out) {
  if (invert) {
    for (auto& m : matches) m.second = !m.second;
  }
  splits.clear();
  switch (behavior) {
    case SplitBehavior::kRemoved:
      for (const auto& [sp, is_match] : matches) {
        if (!is_match) splits.push_back(sp);
      }
      break;
    case SplitBehavior::kIsolated:
      for (const auto& m : matches) splits.push_back(m.first);
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const auto& [sp, is_match] : matches) {
        if (is_match == previous_match && !splits.empty()) {
          splits.back().second = sp.second;
        } else {
          splits.push_back(sp);
        }
        previous_match = is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const auto& [sp, is_match] : matches) {
        if (is_match && !previous_match && !splits.empty()) {
          splits.back().second = sp.second;
        } else {
          splits.push_back(sp);
        }
        previous_match = is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        const auto& [sp, is_match] = *it;
        if (is_match && !previous_match && !splits.empty()) {
          splits.back().first = sp.first;
        } else {
          splits.push_back(sp);
        }
        previous_match = is_match;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    }
  }
  for (const Span& sp : splits) push_piece(out, p, sp.first, sp.second);
}

// Regex Pattern::find_matches (utils/pattern.rs): spans -> (span, is_match) covering [0, len).
void regex_matches(const std::vector<Span>& spans, std::uint32_t len, std::vector<std::pair<Span, bool>>& m) {
  m.clear();
  if (len == 0) {
    m.push_back({{0, 0}, false});
    return;
  }
  std::uint32_t prev = 0;
  for (const Span& sp : spans) {
    if (prev != sp.first) m.push_back({{prev, sp.first}, false});
    m.push_back({sp, true});
    prev = sp.second;
  }
  if (prev != len) m.push_back({{prev, len}, false});
}

// Fn(char) -> bool Pattern::find_matches: every matching character is its own match.
template <class Pred>
void char_matches(std::string_view text, Pred pred, std::vector<std::pair<Span, bool>>& m) {
  m.clear();
  if (text.empty()) {
    m.push_back({{0, 0}, false});
    return;
  }
  std::uint32_t last_offset = 0, last_seen = 0;
  std::size_t i = 0;
  while (i < text.size()) {
    const auto b = static_cast<std::uint32_t>(i);
    const char32_t c = utf8_next(text, i);
    last_seen = static_cast<std::uint32_t>(i);
    if (pred(c)) {
      if (last_offset < b) m.push_back({{last_offset, b}, false});
      m.push_back({{b, static_cast<std::uint32_t>(i)}, true});
      last_offset = static_cast<std::uint32_t>(i);
    }
  }
  if (last_seen > last_offset) m.push_back({{last_offset, last_seen}, false});
}

bool is_numeric(char32_t c) {
  const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(c));
  return cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL || cat == UTF8PROC_CATEGORY_NO;
}

void split_regex(const PreSplit& s, PreTokenizeScratch& sc) {
  const std::string& buf = sc.buf[sc.cur];
  sc.next_pieces.clear();
  for (const Piece& p : sc.pieces) {
    sc.spans.clear();
    s.pattern.find_all(std::string_view(buf).substr(p.off, p.len), sc.spans);
    if (s.behavior == SplitBehavior::kIsolated && !s.invert) {
      std::uint32_t prev = 0;
      for (const Span& sp : sc.spans) {
        push_piece(sc.next_pieces, p, prev, sp.first);
        push_piece(sc.next_pieces, p, sp.first, sp.second);
        prev = sp.second;
      }
      push_piece(sc.next_pieces, p, prev, p.len);
      continue;
    }
    regex_matches(sc.spans, p.len, sc.matches);
    split_by_behavior(p, sc.matches, s.behavior, s.invert, sc.splits, sc.next_pieces);
  }
  sc.pieces.swap(sc.next_pieces);
}

template <class Pred>
void split_chars(Pred pred, SplitBehavior behavior, PreTokenizeScratch& sc) {
  const std::string& buf = sc.buf[sc.cur];
  sc.next_pieces.clear();
  for (const Piece& p : sc.pieces) {
    char_matches(std::string_view(buf).substr(p.off, p.len), pred, sc.matches);
    split_by_behavior(p, sc.matches, behavior, false, sc.splits, sc.next_pieces);
  }
  sc.pieces.swap(sc.next_pieces);
}

void byte_level(const PreByteLevel& bl, PreTokenizeScratch& sc) {
  if (bl.add_prefix_space) {
    const std::string& in = sc.buf[sc.cur];
    std::string& out = sc.buf[1 - sc.cur];
    out.clear();
    sc.next_pieces.clear();
    for (const Piece& p : sc.pieces) {
      const auto off = static_cast<std::uint32_t>(out.size());
      if (in[p.off] != ' ') out.push_back(' ');
      out.append(in, p.off, p.len);
      sc.next_pieces.push_back(Piece{off, static_cast<std::uint32_t>(out.size()) - off, p.at_start});
    }
    sc.pieces.swap(sc.next_pieces);
    sc.cur = 1 - sc.cur;
  }
  if (bl.use_regex) split_regex(PreSplit{bl.pattern, SplitBehavior::kIsolated, false}, sc);
  const ByteLevelUtf8& table = byte_level_utf8();
  const std::string& in = sc.buf[sc.cur];
  std::string& out = sc.buf[1 - sc.cur];
  out.clear();
  out.reserve(in.size() * 2);
  for (Piece& p : sc.pieces) {
    const auto off = static_cast<std::uint32_t>(out.size());
    for (std::uint32_t k = 0; k < p.len; ++k) {
      const auto b = static_cast<unsigned char>(in[p.off + k]);
      out.append(table.bytes[b], table.len[b]);
    }
    p.off = off;
    p.len = static_cast<std::uint32_t>(out.size()) - off;
  }
  sc.cur = 1 - sc.cur;
}

void metaspace(const PreMetaspace& ms, PreTokenizeScratch& sc) {
  const std::string& in = sc.buf[sc.cur];
  std::string& out = sc.buf[1 - sc.cur];
  out.clear();
  sc.next_pieces.clear();
  for (const Piece& p : sc.pieces) {
    const auto off = static_cast<std::uint32_t>(out.size());
    const std::string_view text = std::string_view(in).substr(p.off, p.len);
    const bool starts_with_replacement =
        text.substr(0, ms.replacement.size()) == ms.replacement || (text.empty() ? false : text[0] == ' ');
    const bool prepend =
        !starts_with_replacement && (ms.prepend_scheme == PreMetaspace::Prepend::kAlways ||
                                     (ms.prepend_scheme == PreMetaspace::Prepend::kFirst && p.at_start));
    if (prepend) out += ms.replacement;
    for (char c : text) {
      if (c == ' ') {
        out += ms.replacement;
      } else {
        out.push_back(c);
      }
    }
    sc.next_pieces.push_back(Piece{off, static_cast<std::uint32_t>(out.size()) - off, p.at_start});
  }
  sc.pieces.swap(sc.next_pieces);
  sc.cur = 1 - sc.cur;
  if (ms.split) {
    std::size_t i = 0;
    const char32_t rep = utf8_next(ms.replacement, i);
    split_chars([rep](char32_t c) { return c == rep; }, SplitBehavior::kMergedWithNext, sc);
  }
}

}  // namespace

void pre_tokenize(const std::vector<PreTokenizer>& pre_tokenizers, PreTokenizeScratch& sc) {
  for (const PreTokenizer& pt : pre_tokenizers) {
    std::visit(Overloaded{
                   [&](const PreSplit& s) { split_regex(s, sc); },
                   [&](const PreByteLevel& bl) { byte_level(bl, sc); },
                   [&](const PreMetaspace& ms) { metaspace(ms, sc); },
                   [&](const PreDigits& d) {
                     split_chars(is_numeric,
                                 d.individual_digits ? SplitBehavior::kIsolated : SplitBehavior::kContiguous,
                                 sc);
                   },
                   [&](const PreWhitespaceSplit&) {
                     split_chars(is_unicode_whitespace, SplitBehavior::kRemoved, sc);
                   },
               },
               pt);
  }
}

// ---- decoders ----

namespace {

int char_to_byte(char32_t c) {
  static const std::vector<int> table = [] {
    std::vector<int> t(512, -1);
    for (int b = 0; b < 256; ++b) t[byte_to_char()[static_cast<std::size_t>(b)]] = b;
    return t;
  }();
  return c < table.size() ? table[c] : -1;
}

void byte_level_decode(std::vector<std::string>& tokens) {
  std::string bytes;
  for (const std::string& t : tokens) {
    const std::size_t mark = bytes.size();
    bool all = true;
    std::size_t i = 0;
    while (i < t.size()) {
      const int b = char_to_byte(utf8_next(t, i));
      if (b < 0) {
        all = false;
        break;
      }
      bytes.push_back(static_cast<char>(b));
    }
    if (!all) {
      bytes.resize(mark);
      bytes += t;
    }
  }
  std::string text;
  utf8_append_lossy(text, bytes);
  tokens.assign(1, std::move(text));
}

void byte_fallback_decode(std::vector<std::string>& tokens) {
  std::vector<std::string> out;
  std::string pending;
  auto flush = [&] {
    if (pending.empty()) return;
    if (utf8_valid(pending)) {
      out.push_back(pending);
    } else {
      for (std::size_t k = 0; k < pending.size(); ++k) out.emplace_back("\xEF\xBF\xBD");
    }
    pending.clear();
  };
  for (std::string& t : tokens) {
    int byte = -1;
    if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>') {
      auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                      : -1;
      };
      const int hi = hex(t[3]), lo = hex(t[4]);
      if (hi >= 0 && lo >= 0) byte = hi * 16 + lo;
    }
    if (byte >= 0) {
      pending.push_back(static_cast<char>(byte));
    } else {
      flush();
      out.push_back(std::move(t));
    }
  }
  flush();
  tokens.swap(out);
}

void strip_decode(const DecStrip& st, std::vector<std::string>& tokens) {
  for (std::string& t : tokens) {
    std::vector<std::pair<std::size_t, char32_t>> chars;  // (byte offset, code point)
    std::size_t i = 0;
    while (i < t.size()) {
      const std::size_t at = i;
      chars.emplace_back(at, utf8_next(t, i));
    }
    std::size_t start_cut = 0;
    for (std::size_t k = 0; k < st.start && k < chars.size(); ++k) {
      if (chars[k].second != st.content) break;
      start_cut = k + 1;
    }
    std::size_t stop_cut = chars.size();
    for (std::size_t k = 0; k < st.stop && k < chars.size(); ++k) {
      const std::size_t index = chars.size() - k - 1;
      if (chars[index].second != st.content) break;
      stop_cut = index;
    }
    if (stop_cut <= start_cut) {
      t.clear();
      continue;
    }
    const std::size_t b0 = start_cut < chars.size() ? chars[start_cut].first : t.size();
    const std::size_t b1 = stop_cut < chars.size() ? chars[stop_cut].first : t.size();
    t = t.substr(b0, b1 - b0);
  }
}

}  // namespace

void decode_chain(const std::vector<Decoder>& decoders, std::vector<std::string>& tokens) {
  for (const Decoder& d : decoders) {
    std::visit(Overloaded{
                   [&](const DecByteLevel&) { byte_level_decode(tokens); },
                   [&](const DecMetaspace& ms) {
                     for (std::size_t k = 0; k < tokens.size(); ++k) {
                       std::string out;
                       std::size_t i = 0;
                       const std::string& t = tokens[k];
                       while (i < t.size()) {
                         const std::size_t at = i;
                         const char32_t c = utf8_next(t, i);
                         if (c == ms.replacement) {
                           if (!(k == 0 && ms.prepend)) out.push_back(' ');
                         } else {
                           out.append(t, at, i - at);
                         }
                       }
                       tokens[k].swap(out);
                     }
                   },
                   [&](const DecReplace& r) {
                     for (std::string& t : tokens) replace_all(r.pattern, r.content, t);
                   },
                   [&](const DecByteFallback&) { byte_fallback_decode(tokens); },
                   [&](const DecFuse&) {
                     std::string all;
                     for (const std::string& t : tokens) all += t;
                     tokens.assign(1, std::move(all));
                   },
                   [&](const DecStrip& st) { strip_decode(st, tokens); },
               },
               d);
  }
}

}  // namespace servelab::tokenizer::detail
