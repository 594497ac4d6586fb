// Tokenizer: the encode/decode pipeline of Hugging Face `tokenizers` (tokenizer/mod.rs
// encode_single_sequence, decode) over the components parsed by load.cc.
#include "servelab/tokenizer/tokenizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace servelab::tokenizer {
namespace detail {

void AddedTokenMatcher::build(const std::vector<std::pair<std::string, std::uint32_t>>& patterns) {
  nodes_.assign(1, Node{});
  std::fill(std::begin(first_byte_), std::end(first_byte_), false);
  int distinct_first = 0;
  for (const auto& [bytes, token] : patterns) {
    if (bytes.empty()) continue;
    const auto fb = static_cast<unsigned char>(bytes[0]);
    if (!first_byte_[fb]) {
      first_byte_[fb] = true;
      ++distinct_first;
      single_first_byte_ = fb;
    }
    std::uint32_t node = 0;
    for (unsigned char b : bytes) {
      auto& ch = nodes_[node].children;
      auto it = std::lower_bound(ch.begin(), ch.end(), b,
                                 [](const auto& e, unsigned char v) { return e.first < v; });
      if (it != ch.end() && it->first == b) {
        node = it->second;
      } else {
        const auto next = static_cast<std::uint32_t>(nodes_.size());
        ch.insert(it, {b, next});
        nodes_.push_back(Node{});
        node = next;
      }
    }
    nodes_[node].token = token;
  }
  if (distinct_first != 1) single_first_byte_ = -1;
}

void AddedTokenMatcher::find_all(std::string_view text, std::vector<Match>& out) const {
  out.clear();
  if (empty()) return;
  const std::size_t n = text.size();
  const auto* data = reinterpret_cast<const unsigned char*>(text.data());
  std::size_t i = 0;
  while (i < n) {
    if (single_first_byte_ >= 0) {
      const void* p = std::memchr(data + i, single_first_byte_, n - i);
      if (p == nullptr) return;
      i = static_cast<std::size_t>(static_cast<const unsigned char*>(p) - data);
    } else {
      while (i < n && !first_byte_[data[i]]) ++i;
      if (i >= n) return;
    }
    std::uint32_t node = 0;
    std::int64_t best = -1;
    std::size_t best_end = i;
    for (std::size_t j = i; j < n; ++j) {
      const auto& ch = nodes_[node].children;
      auto it = std::lower_bound(ch.begin(), ch.end(), data[j],
                                 [](const auto& e, unsigned char v) { return e.first < v; });
      if (it == ch.end() || it->first != data[j]) break;
      node = it->second;
      if (nodes_[node].token >= 0) {
        best = nodes_[node].token;
        best_end = j + 1;
      }
    }
    if (best >= 0) {
      out.push_back(Match{static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(best_end),
                          static_cast<std::uint32_t>(best)});
      i = best_end;
    } else {
      ++i;
    }
  }
}

namespace {

// regex_syntax::is_word_character (Unicode \w): letters, marks, decimal numbers, connector punctuation.
bool is_word_char(char32_t c) {
  if (c == '_') return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(c))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
      return true;
    default:
      return false;
  }
}

bool ends_with_word(std::string_view s) {
  if (s.empty()) return false;
  std::size_t k = s.size() - 1;
  while (k > 0 && (static_cast<unsigned char>(s[k]) & 0xC0) == 0x80) --k;
  return is_word_char(utf8_next(s, k));
}

bool starts_with_word(std::string_view s) {
  if (s.empty()) return false;
  std::size_t i = 0;
  return is_word_char(utf8_next(s, i));
}

}  // namespace
}  // namespace detail

void Tokenizer::Impl::split_added(std::string_view text, const detail::AddedTokenMatcher& matcher,
                                  std::vector<detail::AddedTokenMatcher::Match>& matches,
                                  std::vector<detail::Segment>& out) const {
  out.clear();
  matcher.find_all(text, matches);
  std::uint32_t start_offset = 0;
  const auto total = static_cast<std::uint32_t>(text.size());
  for (const auto& m : matches) {
    const detail::AddedToken& t = added[m.token];
    std::uint32_t start = m.start, stop = m.end;
    if (t.single_word) {
      const bool start_space = start == 0 || !detail::ends_with_word(text.substr(0, start));
      const bool stop_space = stop == total || !detail::starts_with_word(text.substr(stop));
      if (!start_space || !stop_space) continue;
    }
    if (t.lstrip) {
      // Back over whitespace, never before the end of the previous match.
      std::uint32_t new_start = start;
      while (new_start > 0) {
        std::size_t k = new_start - 1;
        while (k > 0 && (static_cast<unsigned char>(text[k]) & 0xC0) == 0x80) --k;
        std::size_t i = k;
        if (!detail::is_unicode_whitespace(detail::utf8_next(text, i))) break;
        new_start = static_cast<std::uint32_t>(k);
      }
      start = std::max(new_start, start_offset);
    }
    if (t.rstrip) {
      std::size_t i = stop;
      while (i < total) {
        std::size_t j = i;
        if (!detail::is_unicode_whitespace(detail::utf8_next(text, j))) break;
        i = j;
      }
      stop = static_cast<std::uint32_t>(i);
    }
    if (start_offset < start) out.push_back(detail::Segment{start_offset, start, -1});
    out.push_back(detail::Segment{start, stop, t.id});
    start_offset = stop;
  }
  if (start_offset != total) out.push_back(detail::Segment{start_offset, total, -1});
}

std::optional<detail::Id> Tokenizer::Impl::token_to_id(std::string_view token) const {
  if (auto it = added_by_content.find(token); it != added_by_content.end()) return it->second;
  if (const detail::Id id = model.vocab.get(token); id >= 0) return id;
  return std::nullopt;
}

namespace {

struct EncodeScratch {
  std::string sanitized;
  std::string normalized;
  std::vector<detail::AddedTokenMatcher::Match> matches;
  std::vector<detail::Segment> raw_segments, normalized_segments;
  detail::PreTokenizeScratch pre;
};

EncodeScratch& encode_scratch() {
  thread_local EncodeScratch scratch;
  return scratch;
}

void encode_words(const Tokenizer::Impl& im, std::string_view text, bool at_start, EncodeScratch& sc,
                  std::vector<TokenId>& ids) {
  if (text.empty()) return;
  detail::PreTokenizeScratch& pre = sc.pre;
  pre.cur = 0;
  pre.buf[0].assign(text.data(), text.size());
  pre.pieces.assign(1, detail::Piece{0, static_cast<std::uint32_t>(text.size()), at_start});
  detail::pre_tokenize(im.pre_tokenizers, pre);
  const std::string& buf = pre.buf[pre.cur];
  for (const detail::Piece& p : pre.pieces) {
    im.model.tokenize(std::string_view(buf).substr(p.off, p.len), ids);
  }
}

// One piece between non-normalized added tokens: normalize, split on normalized added tokens, encode.
void encode_gap(const Tokenizer::Impl& im, std::string_view text, bool at_start, EncodeScratch& sc,
                std::vector<TokenId>& ids) {
  std::string_view normalized = text;
  if (im.has_normalizer && !im.normalizers.empty()) {
    sc.normalized.assign(text.data(), text.size());
    detail::normalize(im.normalizers, sc.normalized);
    normalized = sc.normalized;
  }
  if (im.normalized_matcher.empty()) {
    encode_words(im, normalized, at_start, sc, ids);
    return;
  }
  im.split_added(normalized, im.normalized_matcher, sc.matches, sc.normalized_segments);
  // encode_words does not touch normalized_segments / normalized, so iterating them here is safe.
  for (const detail::Segment& s : sc.normalized_segments) {
    if (s.id >= 0) {
      ids.push_back(s.id);
    } else {
      encode_words(im, normalized.substr(s.start, s.end - s.start), at_start && s.start == 0, sc, ids);
    }
  }
}

// A default-constructed Tokenizer holds nothing: using it is a programming error, reported, never a crash.
const Tokenizer::Impl& checked(const std::shared_ptr<const Tokenizer::Impl>& impl) {
  if (!impl)
    throw std::logic_error("servelab::tokenizer::Tokenizer used before loading (default-constructed)");
  return *impl;
}

}  // namespace

Tokenizer Tokenizer::from_file(const std::filesystem::path& path) {
  return from_file(path, LoadOptions{});
}

Tokenizer Tokenizer::from_file(const std::filesystem::path& path, const LoadOptions& options) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    throw std::runtime_error("tokenizer file not found: " + path.string());
  }
  if (std::filesystem::is_directory(path, ec)) {
    throw std::runtime_error(path.string() +
                             " is a directory, not a tokenizer.json file (it holds no "
                             "tokenizer.json; pass the file or a directory that has one)");
  }
  const std::string text = common::read_file(path);
  const std::filesystem::path config_path = path.parent_path() / "tokenizer_config.json";
  std::string config_text;
  const bool has_config = std::filesystem::is_regular_file(config_path, ec);
  if (has_config) config_text = common::read_file(config_path);
  auto impl = std::make_shared<Impl>();
  load_impl(*impl, text, path.string(), has_config ? &config_text : nullptr, config_path.string(), options);
  Tokenizer t;
  t.impl_ = std::move(impl);
  return t;
}

std::vector<TokenId> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const Impl& im = checked(impl_);
  if (text.size() >= UINT32_MAX) throw std::length_error("Tokenizer::encode: text of 4 GiB or more");
  EncodeScratch& sc = encode_scratch();
  std::string_view input = text;
  if (!detail::utf8_valid(text)) {
    sc.sanitized.clear();
    detail::utf8_append_lossy(sc.sanitized, text);
    input = sc.sanitized;
  }
  std::vector<TokenId> ids;
  ids.reserve(input.size() / 3 + 8);
  if (add_special_tokens) ids.insert(ids.end(), im.post_prefix.begin(), im.post_prefix.end());
  if (im.raw_matcher.empty()) {
    encode_gap(im, input, true, sc, ids);
  } else {
    im.split_added(input, im.raw_matcher, sc.matches, sc.raw_segments);
    // Copy: encode_gap reuses sc.matches (not raw_segments), so iterating raw_segments is safe.
    for (const detail::Segment& s : sc.raw_segments) {
      if (s.id >= 0) {
        ids.push_back(s.id);
      } else {
        encode_gap(im, input.substr(s.start, s.end - s.start), s.start == 0, sc, ids);
      }
    }
  }
  if (add_special_tokens) ids.insert(ids.end(), im.post_suffix.begin(), im.post_suffix.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const TokenId> ids, bool skip_special_tokens) const {
  const Impl& im = checked(impl_);
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (TokenId id : ids) {
    const std::string* token = nullptr;
    if (auto it = im.added_by_id.find(id); it != im.added_by_id.end()) {
      token = &im.added[it->second].content;
    } else if (id >= 0 && static_cast<std::size_t>(id) < im.model.present.size() &&
               im.model.present[static_cast<std::size_t>(id)]) {
      token = &im.model.id_to_token[static_cast<std::size_t>(id)];
    }
    if (token == nullptr) continue;  // unknown ids are skipped, as the reference does
    if (skip_special_tokens && im.special_contents.count(*token)) continue;
    tokens.push_back(*token);
  }
  if (!im.has_decoder) {
    std::string out;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (i) out.push_back(' ');
      out += tokens[i];
    }
    return out;
  }
  detail::decode_chain(im.decoders, tokens);
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::size_t Tokenizer::vocab_size() const {
  return checked(impl_).model.vocab_size();
}

std::size_t Tokenizer::vocab_size_with_added() const {
  const Impl& im = checked(impl_);
  std::size_t n = im.model.vocab_size();
  for (const auto& t : im.added) {
    if (!im.model.vocab.contains(t.content)) ++n;
  }
  return n;
}

std::size_t Tokenizer::num_special_tokens_to_add() const {
  return checked(impl_).post_prefix.size() + checked(impl_).post_suffix.size();
}

std::vector<TokenId> Tokenizer::special_ids() const {
  std::vector<TokenId> out;
  for (const auto& t : checked(impl_).added) {
    if (t.special) out.push_back(t.id);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<TokenId> Tokenizer::all_special_ids() const {
  const Impl& im = checked(impl_);
  return im.has_config ? im.special_map_ids : special_ids();
}

std::optional<TokenId> Tokenizer::bos_id() const {
  return checked(impl_).bos;
}
std::optional<TokenId> Tokenizer::eos_id() const {
  return checked(impl_).eos;
}
std::optional<TokenId> Tokenizer::token_to_id(std::string_view token) const {
  return checked(impl_).token_to_id(token);
}

std::optional<std::string> Tokenizer::id_to_token(TokenId id) const {
  const Impl& im = checked(impl_);
  if (auto it = im.added_by_id.find(id); it != im.added_by_id.end()) return im.added[it->second].content;
  if (id >= 0 && static_cast<std::size_t>(id) < im.model.present.size() &&
      im.model.present[static_cast<std::size_t>(id)]) {
    return im.model.id_to_token[static_cast<std::size_t>(id)];
  }
  return std::nullopt;
}

const std::string& Tokenizer::chat_template() const {
  return checked(impl_).chat_template;
}
const std::vector<std::string>& Tokenizer::load_warnings() const {
  return checked(impl_).warnings;
}

}  // namespace servelab::tokenizer
