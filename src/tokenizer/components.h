// servelab/tokenizer (private): the pipeline components of a tokenizer.json — normalizers,
// pre-tokenizers, decoders, post-processor — as plain variants, with the semantics of Hugging Face
// `tokenizers` (Rust crate, v0.20-0.23; file names below refer to tokenizers/src/).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "tokenizer/regex.h"

namespace servelab::tokenizer::detail {

// ---- Normalizers (normalizers/*.rs). A Sequence is flattened into the list at load time. ----
struct NormUnicode {
  enum Form { kNfc, kNfd, kNfkc, kNfkd } form;
};
struct NormLowercase {};
struct NormStrip {
  bool left = true;
  bool right = true;
};
struct NormStripAccents {};
struct NormPrepend {
  std::string prepend;
};
struct NormReplace {
  Regex pattern;
  std::string content;
};
using Normalizer =
    std::variant<NormUnicode, NormLowercase, NormStrip, NormStripAccents, NormPrepend, NormReplace>;

/// Applies `normalizers` in order to `s` (valid UTF-8) in place.
void normalize(const std::vector<Normalizer>& normalizers, std::string& s);

// ---- Pre-tokenizers (pre_tokenizers/*.rs). A Sequence is flattened at load time. ----
enum class SplitBehavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
struct PreSplit {
  Regex pattern;
  SplitBehavior behavior = SplitBehavior::kIsolated;
  bool invert = false;
};
struct PreByteLevel {
  bool add_prefix_space = false;
  bool use_regex = true;
  Regex pattern;  // the GPT-2 pattern when use_regex
};
struct PreMetaspace {
  std::string replacement;  // one character, UTF-8
  enum class Prepend { kAlways, kFirst, kNever } prepend_scheme = Prepend::kAlways;
  bool split = true;
};
struct PreDigits {
  bool individual_digits = false;
};
struct PreWhitespaceSplit {};
using PreTokenizer = std::variant<PreSplit, PreByteLevel, PreMetaspace, PreDigits, PreWhitespaceSplit>;

/// A pre-token: bytes [off, off+len) of the current piece buffer; `at_start` = its original offset is 0
/// (what Metaspace's prepend_scheme "first" tests).
struct Piece {
  std::uint32_t off;
  std::uint32_t len;
  bool at_start;
};

/// Reusable buffers for pre_tokenize (one per thread).
struct PreTokenizeScratch {
  std::string buf[2];
  int cur = 0;
  std::vector<Piece> pieces, next_pieces;
  std::vector<Span> spans;
  std::vector<std::pair<Span, bool>> matches;
  std::vector<Span> splits;
};

/// Runs `pre_tokenizers` over the text `scratch.buf[scratch.cur]` whose pieces are `scratch.pieces`;
/// on return `scratch.pieces` index `scratch.buf[scratch.cur]`. Empty pieces are dropped (as the
/// reference's PreTokenizedString::split does).
void pre_tokenize(const std::vector<PreTokenizer>& pre_tokenizers, PreTokenizeScratch& scratch);

// ---- Decoders (decoders/*.rs). A Sequence is flattened at load time. ----
struct DecByteLevel {};
struct DecMetaspace {
  char32_t replacement = U'\u2581';
  bool prepend = true;  // prepend_scheme != never (or legacy add_prefix_space)
};
struct DecReplace {
  Regex pattern;
  std::string content;
};
struct DecByteFallback {};
struct DecFuse {};
struct DecStrip {
  char32_t content = U' ';
  std::size_t start = 0;
  std::size_t stop = 0;
};
using Decoder = std::variant<DecByteLevel, DecMetaspace, DecReplace, DecByteFallback, DecFuse, DecStrip>;

/// Runs the decoders' decode_chain in order on `tokens`, in place.
void decode_chain(const std::vector<Decoder>& decoders, std::vector<std::string>& tokens);

/// The GPT-2 byte-to-unicode table (pre_tokenizers/byte_level.rs `bytes_char`): byte -> code point.
const std::array<char32_t, 256>& byte_to_char();

}  // namespace servelab::tokenizer::detail
