// servelab/tokenizer (private): the loaded state behind Tokenizer and the added-token matcher.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "servelab/tokenizer/tokenizer.h"
#include "tokenizer/bpe.h"
#include "tokenizer/components.h"

namespace servelab::tokenizer::detail {

/// One entry of tokenizer.json `added_tokens` (tokenizer/added_vocabulary.rs AddedToken).
struct AddedToken {
  std::string content;
  Id id = -1;
  bool special = false;
  bool lstrip = false;
  bool rstrip = false;
  bool single_word = false;
  bool normalized = true;
};

/// Leftmost-longest, non-overlapping exact matching of a set of byte strings (what the reference does
/// with aho-corasick MatchKind::LeftmostLongest). Read-only after build.
class AddedTokenMatcher {
 public:
  struct Match {
    std::uint32_t start, end;
    std::uint32_t token;  // index into Impl::added
  };
  /// `patterns`: (bytes, token index); empty patterns are ignored.
  void build(const std::vector<std::pair<std::string, std::uint32_t>>& patterns);
  bool empty() const { return nodes_.size() <= 1; }
  void find_all(std::string_view text, std::vector<Match>& out) const;

 private:
  struct Node {
    std::int64_t token = -1;
    std::vector<std::pair<unsigned char, std::uint32_t>> children;  // sorted by byte
  };
  std::vector<Node> nodes_;
  bool first_byte_[256] = {};
  int single_first_byte_ = -1;  // the only first byte when all patterns share one (memchr scan)
};

/// A piece of text between added tokens, or an added token.
struct Segment {
  std::uint32_t start, end;
  Id id;  // -1: text to normalize / pre-tokenize
};

}  // namespace servelab::tokenizer::detail

namespace servelab::tokenizer {

struct Tokenizer::Impl {
  detail::BpeModel model;
  std::vector<detail::AddedToken> added;                      // JSON order, ids as the reference assigns them
  std::unordered_map<detail::Id, std::uint32_t> added_by_id;  // id -> index in `added`
  detail::StringIdMap added_by_content;                       // content -> id
  std::unordered_set<std::string> special_contents;
  detail::AddedTokenMatcher raw_matcher;         // tokens with normalized = false, on the raw text
  detail::AddedTokenMatcher normalized_matcher;  // tokens with normalized = true, on normalized text
  bool has_normalizer = false;
  std::vector<detail::Normalizer> normalizers;
  std::vector<detail::PreTokenizer> pre_tokenizers;
  bool has_decoder = false;
  std::vector<detail::Decoder> decoders;
  std::vector<detail::Id> post_prefix, post_suffix;  // ids the post-processor adds around one sequence
  std::optional<detail::Id> bos, eos;
  std::string chat_template;
  /// Ids of the tokens named in tokenizer_config.json's special-tokens map (bos, eos, unk, sep, pad, cls,
  /// mask, additional_special_tokens); empty without a config. See Tokenizer::all_special_ids.
  std::vector<TokenId> special_map_ids;
  bool has_config = false;
  std::vector<std::string> warnings;

  /// Splits `text` on the matches of `matcher`, applying single_word / lstrip / rstrip exactly as
  /// AddedVocabulary::find_matches.
  void split_added(std::string_view text, const detail::AddedTokenMatcher& matcher,
                   std::vector<detail::AddedTokenMatcher::Match>& scratch,
                   std::vector<detail::Segment>& out) const;
  std::optional<detail::Id> token_to_id(std::string_view token) const;
};

/// Parses tokenizer.json text (and optional tokenizer_config.json text) into `impl`.
/// `source` names the file in error messages. Throws std::runtime_error naming the JSON path.
void load_impl(Tokenizer::Impl& impl, const std::string& tokenizer_json, const std::string& source,
               const std::string* config_json, const std::string& config_source, const LoadOptions& options);

}  // namespace servelab::tokenizer
