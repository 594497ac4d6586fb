#include "tokenizer/bpe.h"

#include <algorithm>
#include <cstdio>
#include <queue>

#include "tokenizer/utf8.h"

namespace servelab::tokenizer::detail {

void VocabMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  if (cap > slots_.size()) rehash(cap);
}

void VocabMap::rehash(std::size_t capacity) {
  std::vector<Slot> old;
  old.swap(slots_);
  slots_.assign(capacity, Slot{});
  mask_ = capacity - 1;
  for (const Slot& s : old) {
    if (s.id < 0) continue;
    std::size_t i = hash(std::string_view(arena_.data() + s.off, s.len)) & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

void VocabMap::set(std::string_view key, Id id) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) rehash(std::max<std::size_t>(16, slots_.size() * 2));
  const std::uint64_t h = hash(key);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  std::size_t i = h & mask_;
  while (slots_[i].id >= 0) {
    Slot& s = slots_[i];
    if (s.tag == tag && s.len == key.size() &&
        std::memcmp(arena_.data() + s.off, key.data(), key.size()) == 0) {
      s.id = id;
      return;
    }
    i = (i + 1) & mask_;
  }
  slots_[i] =
      Slot{tag, static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(key.size()), id};
  arena_.append(key);
  ++size_;
}

void MergeMap::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, Slot{});
  mask_ = cap - 1;
  size_ = 0;
}

void MergeMap::grow() {
  std::vector<Slot> old;
  old.swap(slots_);
  reserve(std::max<std::size_t>(old.size(), 16));
  for (const Slot& s : old) {
    if (s.key == kEmpty) continue;
    std::size_t i = mix(s.key) & mask_;
    while (slots_[i].key != kEmpty) i = (i + 1) & mask_;
    slots_[i] = s;
    ++size_;
  }
}

void MergeMap::insert(Id a, Id b, Value v) {
  if (slots_.empty() || (size_ + 1) * 2 > slots_.size()) grow();
  const std::uint64_t key = pack(a, b);
  std::size_t i = mix(key) & mask_;
  while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
  if (slots_[i].key == kEmpty) ++size_;
  slots_[i].key = key;
  slots_[i].value = v;
}

BpeModel::BpeModel() : cache_(new CacheShard[kCacheShards]) {}

void BpeModel::finish() {
  plain_ = (!continuing_subword_prefix || continuing_subword_prefix->empty()) &&
           (!end_of_word_suffix || end_of_word_suffix->empty());
  small_char_id_.assign(0x800, -1);
  vocab.for_each([&](std::string_view token, Id id) {
    if (token.empty()) return;
    std::size_t i = 0;
    const char32_t cp = utf8_next(token, i);
    if (i == token.size() && cp < 0x800) small_char_id_[cp] = id;
  });
  byte_fallback_id_.fill(-1);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    byte_fallback_id_[b] = vocab.get(name);
  }
  unk_id_ = -1;
  if (unk_token) {
    unk_id_ = vocab.get(*unk_token);
  }
}

Id BpeModel::symbol_id(std::string_view s) const {
  return vocab.get(s);
}

void BpeModel::tokenize(std::string_view word, std::vector<Id>& out) const {
  if (word.empty()) return;
  if (ignore_merges) {
    if (const Id id = vocab.get(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  const bool cacheable = word.size() < kCacheMaxWordBytes;
  CacheShard* shard = nullptr;
  std::size_t hash = 0;
  if (cacheable) {
    hash = StringHash{}(word);
    shard = &cache_[(hash >> 7) % kCacheShards];
    std::lock_guard<std::mutex> lock(shard->mu);
    auto it = shard->map.find(word);
    if (it != shard->map.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const std::size_t before = out.size();
  merge_word(word, out);
  if (shard != nullptr) {
    std::lock_guard<std::mutex> lock(shard->mu);
    if (shard->map.size() < kCacheEntriesPerShard) {
      shard->map.emplace(std::string(word), std::vector<Id>(out.begin() + before, out.end()));
    }
  }
}

namespace {

struct Symbol {
  Id c;
  std::int32_t prev;
  std::int32_t next;
  std::uint32_t len;  // bytes; 0 = merged away
};

struct Merge {
  std::uint32_t pos;
  std::uint32_t rank;
  Id new_id;
};

// std::priority_queue keeps the "largest" on top: invert so the smallest (rank, pos) comes first.
struct MergeAfter {
  bool operator()(const Merge& a, const Merge& b) const {
    if (a.rank != b.rank) return a.rank > b.rank;
    return a.pos > b.pos;
  }
};

struct WordScratch {
  std::vector<Symbol> symbols;
  std::vector<Merge> heap;
  std::string piece;
};

WordScratch& word_scratch() {
  thread_local WordScratch scratch;
  return scratch;
}

void add_symbol(std::vector<Symbol>& symbols, Id c, std::uint32_t byte_len) {
  const auto len = static_cast<std::int32_t>(symbols.size());
  if (!symbols.empty()) symbols.back().next = len;
  symbols.push_back(Symbol{c, len - 1, -1, byte_len});
}

}  // namespace

void BpeModel::merge_word(std::string_view w, std::vector<Id>& out) const {
  WordScratch& scratch = word_scratch();
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  // (unk id, byte length) pending, as in the reference's merge_word.
  Id pending_unk = -1;
  std::uint32_t pending_unk_len = 0;
  std::size_t i = 0;
  while (i < w.size()) {
    const std::size_t start = i;
    const char32_t cp = utf8_next(w, i);
    const auto byte_len = static_cast<std::uint32_t>(i - start);
    const bool is_first = start == 0;
    const bool is_last = i == w.size();
    Id id;
    std::string_view s = w.substr(start, byte_len);
    if (plain_) {
      id = cp < 0x800 ? small_char_id_[cp] : symbol_id(s);
    } else {
      std::string& piece = scratch.piece;
      piece.clear();
      if (!is_first && continuing_subword_prefix) piece += *continuing_subword_prefix;
      piece += s;
      if (is_last && end_of_word_suffix) piece += *end_of_word_suffix;
      s = piece;
      id = symbol_id(s);
    }
    if (id >= 0) {
      if (pending_unk >= 0) {
        add_symbol(symbols, pending_unk, pending_unk_len);
        pending_unk = -1;
      }
      add_symbol(symbols, id, byte_len);
      continue;
    }
    if (byte_fallback) {
      bool all = true;
      for (unsigned char b : s) all = all && byte_fallback_id_[b] >= 0;
      if (all) {
        for (unsigned char b : s) add_symbol(symbols, byte_fallback_id_[b], 1);
        continue;
      }
    }
    if (unk_id_ >= 0) {
      if (pending_unk >= 0 && fuse_unk) {
        pending_unk_len += byte_len;
      } else {
        if (pending_unk >= 0) add_symbol(symbols, pending_unk, pending_unk_len);
        pending_unk = unk_id_;
        pending_unk_len = byte_len;
      }
    }
    // Without unk and byte fallback the reference silently drops the character; so do we.
  }
  if (pending_unk >= 0) add_symbol(symbols, pending_unk, pending_unk_len);

  // merge_all (models/bpe/word.rs), dropout = None.
  std::vector<Merge>& heap = scratch.heap;
  heap.clear();
  for (std::size_t k = 0; k + 1 < symbols.size(); ++k) {
    if (const MergeMap::Value* m = merges.find(symbols[k].c, symbols[k + 1].c)) {
      heap.push_back(Merge{static_cast<std::uint32_t>(k), m->rank, m->new_id});
    }
  }
  std::make_heap(heap.begin(), heap.end(), MergeAfter{});
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), MergeAfter{});
    const Merge top = heap.back();
    heap.pop_back();
    Symbol& cur = symbols[top.pos];
    if (cur.len == 0 || cur.next == -1) continue;
    const auto next_pos = static_cast<std::size_t>(cur.next);
    const Symbol right = symbols[next_pos];
    const MergeMap::Value* check = merges.find(cur.c, right.c);
    if (check == nullptr || check->new_id != top.new_id) continue;
    cur.c = top.new_id;
    cur.len += right.len;
    cur.next = right.next;
    symbols[next_pos].len = 0;
    if (right.next > -1 && static_cast<std::size_t>(right.next) < symbols.size()) {
      symbols[static_cast<std::size_t>(right.next)].prev = static_cast<std::int32_t>(top.pos);
    }
    if (cur.prev >= 0) {
      const Symbol& prev = symbols[static_cast<std::size_t>(cur.prev)];
      if (const MergeMap::Value* m = merges.find(prev.c, cur.c)) {
        heap.push_back(Merge{static_cast<std::uint32_t>(cur.prev), m->rank, m->new_id});
        std::push_heap(heap.begin(), heap.end(), MergeAfter{});
      }
    }
    if (cur.next >= 0 && static_cast<std::size_t>(cur.next) < symbols.size()) {
      const Symbol& nx = symbols[static_cast<std::size_t>(cur.next)];
      if (const MergeMap::Value* m = merges.find(cur.c, nx.c)) {
        heap.push_back(Merge{top.pos, m->rank, m->new_id});
        std::push_heap(heap.begin(), heap.end(), MergeAfter{});
      }
    }
  }
  for (const Symbol& s : symbols) {
    if (s.len != 0) out.push_back(s.c);
  }
}

}  // namespace servelab::tokenizer::detail
