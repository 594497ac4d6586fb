// servelab/tokenizer (private): the BPE model of Hugging Face `tokenizers` (models/bpe/model.rs),
// byte-exact: same initial symbols (continuing_subword_prefix, end_of_word_suffix, unk/fuse_unk,
// byte_fallback), same merge order (min-heap on (rank, position) with the reference's stale-entry rule),
// ignore_merges, and a per-word result cache.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace servelab::tokenizer::detail {

using Id = std::int32_t;

/// Transparent string hash so maps keyed by std::string can be probed with a string_view (no allocation).
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using StringIdMap = std::unordered_map<std::string, Id, StringHash, std::equal_to<>>;

/// Open-addressing map token bytes -> id over one contiguous key arena (the 128K-entry vocabularies load
/// ~3x faster than with std::unordered_map<std::string, Id>). A later set() of the same key overwrites.
class VocabMap {
 public:
  void reserve(std::size_t n);
  void set(std::string_view key, Id id);
  /// The id of `key`, or -1.
  Id get(std::string_view key) const {
    if (slots_.empty()) return -1;
    const std::uint64_t h = hash(key);
    std::size_t i = h & mask_;
    const auto tag = static_cast<std::uint32_t>(h >> 32);
    while (true) {
      const Slot& s = slots_[i];
      if (s.id < 0) return -1;
      if (s.tag == tag && s.len == key.size() &&
          std::memcmp(arena_.data() + s.off, key.data(), key.size()) == 0) {
        return s.id;
      }
      i = (i + 1) & mask_;
    }
  }
  bool contains(std::string_view key) const { return get(key) >= 0; }
  std::size_t size() const { return size_; }
  /// Calls f(std::string_view token, Id id) for every entry (unspecified order).
  template <class F>
  void for_each(F&& f) const {
    for (const Slot& s : slots_) {
      if (s.id >= 0) f(std::string_view(arena_.data() + s.off, s.len), s.id);
    }
  }

 private:
  struct Slot {
    std::uint32_t tag = 0;
    std::uint32_t off = 0;
    std::uint32_t len = 0;
    Id id = -1;
  };
  static std::uint64_t hash(std::string_view s) {
    std::uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, then a final mix
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return h;
  }
  void rehash(std::size_t capacity);
  std::string arena_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

/// Open-addressing map (a,b) -> (rank, new id) for merges; read-only after construction.
class MergeMap {
 public:
  struct Value {
    std::uint32_t rank;
    Id new_id;
  };
  void reserve(std::size_t n);
  /// Inserts or overwrites (a later duplicate merge overwrites, as the reference's HashMap::insert).
  void insert(Id a, Id b, Value v);
  const Value* find(Id a, Id b) const {
    const std::uint64_t key = pack(a, b);
    std::size_t i = mix(key) & mask_;
    while (true) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }
  std::size_t size() const { return size_; }

 private:
  static constexpr std::uint64_t kEmpty = ~0ull;
  struct Slot {
    std::uint64_t key = kEmpty;
    Value value{};
  };
  static std::uint64_t pack(Id a, Id b) {
    return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  }
  static std::size_t mix(std::uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return static_cast<std::size_t>(k);
  }
  void grow();
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

/// The BPE model. Build with the public fields, then call finish().
/// Thread-safety: after finish(), tokenize() may be called concurrently (the cache is sharded and locked).
struct BpeModel {
  VocabMap vocab;
  std::vector<std::string> id_to_token;  // indexed by id; holes are empty with present[id] = false
  std::vector<bool> present;
  MergeMap merges;
  std::optional<std::string> unk_token;
  std::optional<std::string> continuing_subword_prefix;
  std::optional<std::string> end_of_word_suffix;
  bool fuse_unk = false;
  bool byte_fallback = false;
  bool ignore_merges = false;

  BpeModel();
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  /// Precomputes lookup tables; call after filling vocab/merges/options.
  void finish();

  /// Appends the ids of `word` (one pre-token, valid UTF-8) to `out`. No-op for an empty word.
  void tokenize(std::string_view word, std::vector<Id>& out) const;

  std::size_t vocab_size() const { return vocab.size(); }

 private:
  void merge_word(std::string_view word, std::vector<Id>& out) const;
  Id symbol_id(std::string_view s) const;

  static constexpr std::size_t kCacheShards = 64;
  static constexpr std::size_t kCacheEntriesPerShard = 4096;
  static constexpr std::size_t kCacheMaxWordBytes = 256;
  struct CacheShard {
    std::mutex mu;
    std::unordered_map<std::string, std::vector<Id>, StringHash, std::equal_to<>> map;
  };
  std::unique_ptr<CacheShard[]> cache_;
  std::vector<Id> small_char_id_;  // id of the single-code-point token for code points < 0x800, or -1
  std::array<Id, 256> byte_fallback_id_{};  // id of "<0xXX>" or -1
  Id unk_id_ = -1;
  bool plain_ = true;  // no prefix/suffix: single-char lookups may use small_char_id_
};

}  // namespace servelab::tokenizer::detail
