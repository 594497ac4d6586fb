// servelab/tokenizer: exact Hugging Face `tokenizers` encode/decode for BPE tokenizer.json files.
// Reference: the Rust `tokenizers` crate (npm `tokenizers` 0.23.2 is the parity oracle, see
// scripts/tokenizer_oracle.js and tests/tokenizer/parity_test.cc). Decisions (details: docs/tokenizer.md):
//  - BOS: a tokenizer_config.json naming LlamaTokenizerFast (DeepSeek-V3 does) gets transformers'
//    post-processor "<bos> $A" (add_bos_token / add_eos_token), as vLLM/SGLang load it; the file's own
//    ByteLevel post-processor adds nothing.
//  - Invalid UTF-8 input: each ill-formed subsequence becomes U+FFFD (maximal-subpart policy, as Rust's
//    from_utf8_lossy / Python's errors="replace"), then it is encoded like the reference encodes that text.
//  - A merge whose parts or result are missing from the vocabulary (GPT-2's "ĠCla ude") is dropped and
//    reported in load_warnings(); the reference refuses such a file, old Python loaders accepted it.
//  - DeepSeek-V3.1/V3.2 ids served by DeepSeek-V3's file get <think>=128798 and </think>=128799
//    (load_tokenizer).
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "servelab/hub/hub.h"

namespace servelab::tokenizer {

/// A token id (index into the vocabulary including added tokens).
using TokenId = std::int32_t;

/// Adjustments applied while loading a tokenizer.json (see load_tokenizer for when they are used).
struct LoadOptions {
  /// Added tokens to register on top of the file's `added_tokens`: (id, content). An existing added
  /// token with that id is renamed (its flags become special = false, normalized = true, like DeepSeek's
  /// own `<think>` entries); otherwise a new added token is created with that id.
  std::vector<std::pair<std::int32_t, std::string>> extra_added_tokens;
};

/// A loaded Hugging Face tokenizer (tokenizer.json, plus tokenizer_config.json when beside it).
/// Value type: cheap to copy (shared immutable state). A default-constructed Tokenizer is empty: every
/// member function throws std::logic_error.
/// Thread-safety: all const member functions may be called concurrently from any number of threads.
class Tokenizer {
 public:
  /// Loads `tokenizer.json` from `path` (a file) and, if present in the same directory,
  /// `tokenizer_config.json` (bos/eos tokens, chat_template).
  /// Throws std::runtime_error: missing file, invalid JSON, or an unsupported/malformed component,
  /// naming the JSON path (e.g. `pre_tokenizer.pretokenizers[2].type = "Punctuation" is not supported`).
  static Tokenizer from_file(const std::filesystem::path& path);
  /// As from_file(path), with load-time adjustments.
  static Tokenizer from_file(const std::filesystem::path& path, const LoadOptions& options);

  /// Encodes `text` exactly as HF `tokenizers` `encode(text, add_special_tokens)`; with
  /// `add_special_tokens` the post-processor's tokens (e.g. BOS) are added. `text` is UTF-8 bytes; invalid
  /// sequences are replaced by U+FFFD first (see top of file). Throws std::length_error at >= 4 GiB.
  std::vector<TokenId> encode(std::string_view text, bool add_special_tokens = true) const;

  /// Decodes ids exactly as HF `decode(ids, skip_special_tokens)`.
  std::string decode(std::span<const TokenId> ids, bool skip_special_tokens = false) const;

  /// Size of the base vocabulary, without added tokens (HF `tokenizer.vocab_size` in transformers).
  std::size_t vocab_size() const;
  /// Size including added tokens (HF `get_vocab_size(with_added_tokens=true)`).
  std::size_t vocab_size_with_added() const;
  /// Number of tokens the post-processor adds to a single sequence (transformers
  /// `num_special_tokens_to_add()`; 1 for a BOS-only tokenizer).
  std::size_t num_special_tokens_to_add() const;
  /// Ids of all special added tokens (`added_tokens` with special = true), ascending.
  std::vector<TokenId> special_ids() const;
  /// transformers' `all_special_ids`: the ids of the special-tokens map of tokenizer_config.json (bos, eos,
  /// unk, sep, pad, cls, mask, additional_special_tokens), ascending; DeepSeek-V3 gives [0, 1]. Without a
  /// tokenizer_config.json, special_ids(). vLLM's random dataset excludes exactly these ids.
  std::vector<TokenId> all_special_ids() const;
  std::optional<TokenId> bos_id() const;
  std::optional<TokenId> eos_id() const;
  std::optional<TokenId> token_to_id(std::string_view token) const;
  std::optional<std::string> id_to_token(TokenId id) const;
  /// The `chat_template` string from tokenizer_config.json, empty when absent.
  const std::string& chat_template() const;
  /// Non-fatal deviations found while loading (e.g. a merge whose result is not in the vocabulary and
  /// was dropped, a model without `"type"`); empty for a clean file.
  const std::vector<std::string>& load_warnings() const;

  struct Impl;

 private:
  std::shared_ptr<const Impl> impl_;
};

/// Resolves a `--tokenizer X` argument to a tokenizer.json path, in order: a file; a directory holding
/// `tokenizer.json`; a Hugging Face id found in the local cache ($HF_HOME/hub or
/// ~/.cache/huggingface/hub/models--ORG--NAME/snapshots/*/, the snapshot refs/main names, else the newest;
/// $HF_HUB_CACHE and $XDG_CACHE_HOME/huggingface/hub are also searched); for DeepSeek ids
/// (deepseek-ai/DeepSeek-V3, -V3.1, -V3.2, -V3.2-Exp, -V3-Base, -V3.1-Base, -V3.1-Terminus, any case) the
/// DeepSeek tokenizer fetched by `make deps` into servelab::common::cache_dir()/tokenizers/deepseek-v3/;
/// then, with `fetch.download`, the Hugging Face Hub: tokenizer.json (and tokenizer_config.json when the
/// repository has one) downloaded into the cache (hub::fetch_files; HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE).
/// With `fetch.revision` the cache is read at that revision only (refs/<revision> or the commit) and the
/// DeepSeek copy is not used. Throws std::runtime_error listing every place it tried (the Hub's error among
/// them) when nothing is found.
std::filesystem::path resolve_tokenizer_path(std::string_view spec, const hub::FetchRequest& fetch = {});

/// resolve_tokenizer_path + Tokenizer::from_file. For deepseek-ai/DeepSeek-V3.1(-Base, -Terminus), -V3.2,
/// -V3.2-Exp (any case) resolved to the `make deps` DeepSeek-V3 file, registers `<think>` = 128798 and
/// `</think>` = 128799 (non-special added tokens, as in the V3.1/V3.2/R1 tokenizer.json, replacing V3's
/// placeholders
/// `<｜place▁holder▁no▁798｜>`/`799`). Throws std::runtime_error as the two functions do.
Tokenizer load_tokenizer(std::string_view spec, const hub::FetchRequest& fetch = {});

}  // namespace servelab::tokenizer
