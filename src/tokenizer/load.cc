// Parsing of tokenizer.json / tokenizer_config.json into Tokenizer::Impl. Every unsupported or malformed
// component is an error naming its JSON path; nothing falls back to an approximation.
#include <simdjson.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>

#include "tokenizer/tokenizer_impl.h"
#include "tokenizer/utf8.h"

namespace servelab::tokenizer {
namespace {

using detail::Id;
using nlohmann::json;

// The GPT-2 pre-tokenization regex of pre_tokenizers/byte_level.rs.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw std::runtime_error(source + ": " + message);
}

std::string short_dump(const json& j) {
  std::string s = j.dump();
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

// Accessors that name the JSON path of what is wrong.
struct Ctx {
  const std::string& source;

  const json& member(const json& obj, const std::string& path, const char* key) const {
    if (!obj.is_object()) fail(source, path + " must be an object, got " + short_dump(obj));
    auto it = obj.find(key);
    if (it == obj.end()) fail(source, path + "." + key + " is missing");
    return *it;
  }
  std::string str(const json& obj, const std::string& path, const char* key) const {
    const json& v = member(obj, path, key);
    if (!v.is_string()) fail(source, path + "." + key + " must be a string, got " + short_dump(v));
    return v.get<std::string>();
  }
  bool boolean(const json& obj, const std::string& path, const char* key, std::optional<bool> dflt) const {
    if (dflt && (!obj.contains(key) || obj.at(key).is_null())) return *dflt;
    const json& v = member(obj, path, key);
    if (!v.is_boolean()) fail(source, path + "." + key + " must be a boolean, got " + short_dump(v));
    return v.get<bool>();
  }
  std::int64_t integer(const json& obj, const std::string& path, const char* key) const {
    const json& v = member(obj, path, key);
    if (!v.is_number_integer()) fail(source, path + "." + key + " must be an integer, got " + short_dump(v));
    return v.get<std::int64_t>();
  }
  const json& array(const json& obj, const std::string& path, const char* key) const {
    const json& v = member(obj, path, key);
    if (!v.is_array()) fail(source, path + "." + key + " must be an array, got " + short_dump(v));
    return v;
  }
  [[noreturn]] void unsupported_type(const std::string& path, const std::string& type) const {
    fail(source, path + ".type = \"" + type + "\" is not supported");
  }
  // {"String": s} or {"Regex": r} -> compiled regex (String compiled as a literal).
  detail::Regex pattern(const json& obj, const std::string& path) const {
    const json& p = member(obj, path, "pattern");
    const std::string ppath = path + ".pattern";
    if (p.is_object() && p.contains("String") && p.at("String").is_string()) {
      return detail::Regex::compile(p.at("String").get<std::string>(), true,
                                    source + ": " + ppath + ".String");
    }
    if (p.is_object() && p.contains("Regex") && p.at("Regex").is_string()) {
      return detail::Regex::compile(p.at("Regex").get<std::string>(), false,
                                    source + ": " + ppath + ".Regex");
    }
    fail(source, ppath + " must be {\"String\": ...} or {\"Regex\": ...}, got " + short_dump(p));
  }
};

void parse_normalizer(const Ctx& c, const json& j, const std::string& path,
                      std::vector<detail::Normalizer>& out) {
  const std::string type = c.str(j, path, "type");
  if (type == "Sequence") {
    const json& list = c.array(j, path, "normalizers");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_normalizer(c, list[i], path + ".normalizers[" + std::to_string(i) + "]", out);
    }
  } else if (type == "NFC") {
    out.push_back(detail::NormUnicode{detail::NormUnicode::kNfc});
  } else if (type == "NFD") {
    out.push_back(detail::NormUnicode{detail::NormUnicode::kNfd});
  } else if (type == "NFKC") {
    out.push_back(detail::NormUnicode{detail::NormUnicode::kNfkc});
  } else if (type == "NFKD") {
    out.push_back(detail::NormUnicode{detail::NormUnicode::kNfkd});
  } else if (type == "Lowercase") {
    out.push_back(detail::NormLowercase{});
  } else if (type == "Strip") {
    out.push_back(
        detail::NormStrip{c.boolean(j, path, "strip_left", true), c.boolean(j, path, "strip_right", true)});
  } else if (type == "StripAccents") {
    out.push_back(detail::NormStripAccents{});
  } else if (type == "Prepend") {
    out.push_back(detail::NormPrepend{c.str(j, path, "prepend")});
  } else if (type == "Replace") {
    out.push_back(detail::NormReplace{c.pattern(j, path), c.str(j, path, "content")});
  } else {
    c.unsupported_type(path, type);
  }
}

detail::PreMetaspace::Prepend metaspace_scheme(const Ctx& c, const json& j, const std::string& path) {
  using P = detail::PreMetaspace::Prepend;
  if (j.contains("prepend_scheme") && !j.at("prepend_scheme").is_null()) {
    const std::string s = c.str(j, path, "prepend_scheme");
    if (s == "always") return P::kAlways;
    if (s == "first") return P::kFirst;
    if (s == "never") return P::kNever;
    fail(c.source, path + ".prepend_scheme = \"" + s + "\" is not one of always/first/never");
  }
  if (j.contains("add_prefix_space"))
    return c.boolean(j, path, "add_prefix_space", true) ? P::kAlways : P::kNever;
  return P::kAlways;
}

std::string metaspace_replacement(const Ctx& c, const json& j, const std::string& path) {
  const std::string r = c.str(j, path, "replacement");
  std::size_t i = 0;
  if (r.empty() || !detail::utf8_valid(r) || (detail::utf8_next(r, i), i != r.size())) {
    fail(c.source, path + ".replacement = \"" + r + "\" must be exactly one character");
  }
  return r;
}

void parse_pre_tokenizer(const Ctx& c, const json& j, const std::string& path,
                         std::vector<detail::PreTokenizer>& out) {
  const std::string type = c.str(j, path, "type");
  if (type == "Sequence") {
    const json& list = c.array(j, path, "pretokenizers");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_pre_tokenizer(c, list[i], path + ".pretokenizers[" + std::to_string(i) + "]", out);
    }
  } else if (type == "Split") {
    detail::PreSplit s{c.pattern(j, path), detail::SplitBehavior::kIsolated,
                       c.boolean(j, path, "invert", false)};
    const std::string b = c.str(j, path, "behavior");
    if (b == "Removed") {
      s.behavior = detail::SplitBehavior::kRemoved;
    } else if (b == "Isolated") {
      s.behavior = detail::SplitBehavior::kIsolated;
    } else if (b == "MergedWithPrevious") {
      s.behavior = detail::SplitBehavior::kMergedWithPrevious;
    } else if (b == "MergedWithNext") {
      s.behavior = detail::SplitBehavior::kMergedWithNext;
    } else if (b == "Contiguous") {
      s.behavior = detail::SplitBehavior::kContiguous;
    } else {
      fail(c.source, path + ".behavior = \"" + b + "\" is not supported");
    }
    out.push_back(std::move(s));
  } else if (type == "ByteLevel") {
    detail::PreByteLevel bl;
    bl.add_prefix_space = c.boolean(j, path, "add_prefix_space", true);
    bl.use_regex = c.boolean(j, path, "use_regex", true);
    if (bl.use_regex) bl.pattern = detail::Regex::compile(kGpt2Pattern, false, c.source + ": " + path);
    out.push_back(std::move(bl));
  } else if (type == "Metaspace") {
    detail::PreMetaspace m;
    m.replacement = metaspace_replacement(c, j, path);
    m.prepend_scheme = metaspace_scheme(c, j, path);
    m.split = c.boolean(j, path, "split", true);
    out.push_back(std::move(m));
  } else if (type == "Digits") {
    out.push_back(detail::PreDigits{c.boolean(j, path, "individual_digits", false)});
  } else if (type == "WhitespaceSplit") {
    out.push_back(detail::PreWhitespaceSplit{});
  } else {
    c.unsupported_type(path, type);
  }
}

void parse_decoder(const Ctx& c, const json& j, const std::string& path, std::vector<detail::Decoder>& out) {
  const std::string type = c.str(j, path, "type");
  if (type == "Sequence") {
    const json& list = c.array(j, path, "decoders");
    for (std::size_t i = 0; i < list.size(); ++i) {
      parse_decoder(c, list[i], path + ".decoders[" + std::to_string(i) + "]", out);
    }
  } else if (type == "ByteLevel") {
    out.push_back(detail::DecByteLevel{});
  } else if (type == "Metaspace") {
    const std::string r = metaspace_replacement(c, j, path);
    std::size_t i = 0;
    out.push_back(detail::DecMetaspace{
        detail::utf8_next(r, i), metaspace_scheme(c, j, path) != detail::PreMetaspace::Prepend::kNever});
  } else if (type == "Replace") {
    out.push_back(detail::DecReplace{c.pattern(j, path), c.str(j, path, "content")});
  } else if (type == "ByteFallback") {
    out.push_back(detail::DecByteFallback{});
  } else if (type == "Fuse") {
    out.push_back(detail::DecFuse{});
  } else if (type == "Strip") {
    const std::string content = c.str(j, path, "content");
    std::size_t i = 0;
    if (content.empty() || (detail::utf8_next(content, i), i != content.size())) {
      fail(c.source, path + ".content = \"" + content + "\" must be exactly one character");
    }
    i = 0;
    const std::int64_t start = c.integer(j, path, "start"), stop = c.integer(j, path, "stop");
    if (start < 0 || stop < 0) fail(c.source, path + ".start/.stop must be >= 0");
    out.push_back(detail::DecStrip{detail::utf8_next(content, i), static_cast<std::size_t>(start),
                                   static_cast<std::size_t>(stop)});
  } else {
    c.unsupported_type(path, type);
  }
}

// The special-token ids a post-processor adds around a single sequence.
void parse_post_processor(const Ctx& c, const json& j, const std::string& path, std::vector<Id>& prefix,
                          std::vector<Id>& suffix) {
  const std::string type = c.str(j, path, "type");
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const json& list = c.array(j, path, "processors");
    for (std::size_t i = 0; i < list.size(); ++i) {
      std::vector<Id> p, s;
      parse_post_processor(c, list[i], path + ".processors[" + std::to_string(i) + "]", p, s);
      prefix.insert(prefix.begin(), p.begin(), p.end());
      suffix.insert(suffix.end(), s.begin(), s.end());
    }
    return;
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    for (const char* key : {"cls", "sep"}) {
      const json& pair = c.array(j, path, key);
      if (pair.size() != 2 || !pair[1].is_number_integer()) {
        fail(c.source, path + "." + key + " must be [token, id], got " + short_dump(pair));
      }
      (std::string(key) == "cls" ? prefix : suffix).push_back(pair[1].get<Id>());
    }
    return;
  }
  if (type == "TemplateProcessing") {
    const json& single = c.array(j, path, "single");
    const json& specials = c.member(j, path, "special_tokens");
    bool seen_sequence = false;
    for (std::size_t i = 0; i < single.size(); ++i) {
      const std::string ipath = path + ".single[" + std::to_string(i) + "]";
      const json& item = single[i];
      if (item.is_object() && item.contains("Sequence")) {
        const std::string id = c.str(item.at("Sequence"), ipath + ".Sequence", "id");
        if (id != "A") fail(c.source, ipath + ".Sequence.id = \"" + id + "\": a single sequence is $A");
        seen_sequence = true;
      } else if (item.is_object() && item.contains("SpecialToken")) {
        const std::string name = c.str(item.at("SpecialToken"), ipath + ".SpecialToken", "id");
        const std::string spath = path + ".special_tokens[\"" + name + "\"]";
        if (!specials.is_object() || !specials.contains(name)) fail(c.source, spath + " is missing");
        const json& ids = c.array(specials.at(name), spath, "ids");
        for (const json& id : ids) {
          if (!id.is_number_integer()) fail(c.source, spath + ".ids must hold integers");
          (seen_sequence ? suffix : prefix).push_back(id.get<Id>());
        }
      } else {
        fail(c.source,
             ipath + " must be {\"Sequence\": ...} or {\"SpecialToken\": ...}, got " + short_dump(item));
      }
    }
    return;
  }
  c.unsupported_type(path, type);
}

// The `model` object: small fields from `j` (nlohmann, everything but vocab/merges), the large vocab and
// merges straight from simdjson (a DeepSeek tokenizer.json loads in ~0.2 s instead of ~2 s).
void parse_model(const Ctx& c, const json& j, const simdjson::dom::element* vocab,
                 const simdjson::dom::element* merges, Tokenizer::Impl& impl) {
  const std::string path = "model";
  if (!j.is_object()) fail(c.source, "model must be an object");
  if (!j.contains("type")) {
    if (merges == nullptr) fail(c.source, "model.type is missing (and the model has no merges: not BPE)");
    impl.warnings.push_back("model.type is missing; a model with vocab + merges is read as BPE");
  } else {
    const std::string type = c.str(j, path, "type");
    if (type != "BPE") c.unsupported_type(path, type);
  }
  if (j.contains("dropout") && !j.at("dropout").is_null() &&
      (!j.at("dropout").is_number() || j.at("dropout").get<double>() != 0.0)) {
    fail(c.source, "model.dropout = " + j.at("dropout").dump() + " is not supported (non-deterministic)");
  }
  if (vocab == nullptr) fail(c.source, "model.vocab is missing");
  if (merges == nullptr) fail(c.source, "model.merges is missing");
  detail::BpeModel& m = impl.model;
  simdjson::dom::object vocab_obj;
  if (vocab->get_object().get(vocab_obj)) fail(c.source, "model.vocab must be an object");
  m.vocab.reserve(vocab_obj.size());
  Id max_id = -1;
  for (auto field : vocab_obj) {
    std::int64_t id = -1;
    if (field.value.get_int64().get(id) || id < 0 || id > INT32_MAX) {
      fail(c.source, "model.vocab[\"" + std::string(field.key) + "\"] must be a non-negative integer id");
    }
    m.vocab.set(field.key, static_cast<Id>(id));
    max_id = std::max(max_id, static_cast<Id>(id));
  }
  m.id_to_token.assign(static_cast<std::size_t>(max_id + 1), std::string());
  m.present.assign(static_cast<std::size_t>(max_id + 1), false);
  m.vocab.for_each([&](std::string_view token, Id id) {
    m.id_to_token[static_cast<std::size_t>(id)] = token;
    m.present[static_cast<std::size_t>(id)] = true;
  });
  auto opt_str = [&](const char* key) -> std::optional<std::string> {
    if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
    return c.str(j, path, key);
  };
  m.unk_token = opt_str("unk_token");
  m.continuing_subword_prefix = opt_str("continuing_subword_prefix");
  m.end_of_word_suffix = opt_str("end_of_word_suffix");
  m.fuse_unk = c.boolean(j, path, "fuse_unk", false);
  m.byte_fallback = c.boolean(j, path, "byte_fallback", false);
  m.ignore_merges = c.boolean(j, path, "ignore_merges", false);
  if (m.unk_token && !m.vocab.contains(*m.unk_token)) {
    fail(c.source, "model.unk_token = \"" + *m.unk_token + "\" is not in model.vocab");
  }
  simdjson::dom::array merges_arr;
  if (merges->get_array().get(merges_arr)) fail(c.source, "model.merges must be an array");
  m.merges.reserve(merges_arr.size());
  const std::size_t prefix_len = m.continuing_subword_prefix ? m.continuing_subword_prefix->size() : 0;
  std::size_t dropped = 0;
  std::string first_dropped;
  std::string merged;
  std::size_t rank = 0;
  for (simdjson::dom::element e : merges_arr) {
    std::string_view a, b, whole;
    simdjson::dom::array pair;
    if (!e.get_string().get(whole)) {
      const std::size_t sp = whole.find(' ');
      if (sp == std::string_view::npos || whole.find(' ', sp + 1) != std::string_view::npos) {
        fail(c.source, "model.merges[" + std::to_string(rank) + "] = \"" + std::string(whole) +
                           "\" must be two tokens separated by one space");
      }
      a = whole.substr(0, sp);
      b = whole.substr(sp + 1);
    } else if (!e.get_array().get(pair) && pair.size() == 2 && !pair.at(0).get_string().get(a) &&
               !pair.at(1).get_string().get(b)) {
    } else {
      fail(c.source, "model.merges[" + std::to_string(rank) + "] must be \"a b\" or [\"a\", \"b\"], got " +
                         std::string(simdjson::minify(e)).substr(0, 80));
    }
    const Id ia = m.vocab.get(a), ib = m.vocab.get(b);
    merged.assign(a);
    if (b.size() >= prefix_len) merged.append(b.substr(prefix_len));
    const Id in = m.vocab.get(merged);
    if (ia < 0 || ib < 0 || in < 0) {
      // The reference refuses such a file (MergeTokenOutOfVocabulary). Such a merge can never yield a
      // token id, so it is dropped and recorded (see docs/tokenizer.md, "GPT-2's unusable merge").
      if (dropped++ == 0) {
        first_dropped =
            "model.merges[" + std::to_string(rank) + "] = \"" + std::string(a) + " " + std::string(b) + "\"";
      }
    } else {
      m.merges.insert(ia, ib, {static_cast<std::uint32_t>(rank), in});
    }
    ++rank;
  }
  if (dropped > 0) {
    impl.warnings.push_back(
        std::to_string(dropped) +
        " merge(s) whose parts or result are not in model.vocab were dropped (first: " + first_dropped + ")");
  }
  m.finish();
}

// tokenizer/added_vocabulary.rs add_tokens: ids as the reference assigns them.
void add_tokens(const Ctx& c, Tokenizer::Impl& impl, std::vector<detail::AddedToken> tokens) {
  const Id vocab_size = static_cast<Id>(impl.model.vocab_size());
  for (detail::AddedToken& t : tokens) {
    if (t.content.empty()) continue;
    if (t.special) impl.special_contents.insert(t.content);
    Id id;
    if (auto it = impl.added_by_content.find(t.content); it != impl.added_by_content.end()) {
      id = it->second;
    } else if (const Id mt = impl.model.vocab.get(t.content); mt >= 0) {
      id = mt;
    } else {
      Id max_added = -1;
      for (const auto& [aid, idx] : impl.added_by_id) max_added = std::max(max_added, aid);
      id = (max_added < 0)                                ? vocab_size
           : (max_added >= vocab_size || vocab_size == 0) ? max_added + 1
                                                          : vocab_size;
    }
    if (t.id >= 0 && t.id != id) {
      impl.warnings.push_back("added token \"" + t.content + "\" declares id " + std::to_string(t.id) +
                              " but gets id " + std::to_string(id) +
                              " (as Hugging Face tokenizers assigns it)");
    }
    t.id = id;
    impl.added_by_content[t.content] = id;
    if (auto it = impl.added_by_id.find(id); it != impl.added_by_id.end()) {
      impl.added[it->second] = t;
    } else {
      impl.added_by_id[id] = static_cast<std::uint32_t>(impl.added.size());
      impl.added.push_back(t);
    }
  }
}

std::optional<std::string> config_token(const Ctx& c, const json& cfg, const char* key) {
  if (!cfg.contains(key) || cfg.at(key).is_null()) return std::nullopt;
  const json& v = cfg.at(key);
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object()) return c.str(v, key, "content");
  fail(c.source, std::string(key) + " must be a string or an AddedToken object, got " + short_dump(v));
}

void parse_config(Tokenizer::Impl& impl, const std::string& text, const std::string& source) {
  json cfg;
  try {
    cfg = json::parse(text);
  } catch (const json::parse_error& e) {
    fail(source, std::string("invalid JSON: ") + e.what());
  }
  if (!cfg.is_object()) fail(source, "must be a JSON object");
  const Ctx c{source};
  auto id_of = [&](const char* key) -> std::optional<Id> {
    const auto token = config_token(c, cfg, key);
    if (!token) return std::nullopt;
    const auto id = impl.token_to_id(*token);
    if (!id) fail(source, std::string(key) + " = \"" + *token + "\" is not in the tokenizer's vocabulary");
    return id;
  };
  impl.bos = id_of("bos_token");
  impl.eos = id_of("eos_token");
  // transformers SpecialTokensMixin.all_special_ids: the special-tokens map, not every special added token.
  impl.has_config = true;
  for (const char* key :
       {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"}) {
    if (auto id = id_of(key)) impl.special_map_ids.push_back(*id);
  }
  if (cfg.contains("additional_special_tokens") && cfg.at("additional_special_tokens").is_array()) {
    for (const auto& t : cfg.at("additional_special_tokens")) {
      const std::string content = t.is_string() ? t.get<std::string>()
                                  : (t.is_object() && t.contains("content") && t.at("content").is_string())
                                      ? t.at("content").get<std::string>()
                                      : std::string();
      if (content.empty()) fail(source, "additional_special_tokens entries must be strings or {content}");
      const auto id = impl.token_to_id(content);
      if (!id)
        fail(source, "additional_special_tokens \"" + content + "\" is not in the tokenizer's vocabulary");
      impl.special_map_ids.push_back(*id);
    }
  }
  std::sort(impl.special_map_ids.begin(), impl.special_map_ids.end());
  impl.special_map_ids.erase(std::unique(impl.special_map_ids.begin(), impl.special_map_ids.end()),
                             impl.special_map_ids.end());
  if (cfg.contains("chat_template")) {
    const json& t = cfg.at("chat_template");
    if (t.is_string()) {
      impl.chat_template = t.get<std::string>();
    } else if (t.is_array()) {  // [{"name": ..., "template": ...}]: the "default" one
      for (std::size_t i = 0; i < t.size(); ++i) {
        const std::string path = "chat_template[" + std::to_string(i) + "]";
        if (c.str(t[i], path, "name") == "default") impl.chat_template = c.str(t[i], path, "template");
      }
    } else if (!t.is_null()) {
      fail(source, "chat_template must be a string or a list of {name, template}");
    }
  }
  // transformers' LlamaTokenizerFast (and its Code Llama / Gemma relatives) replaces the file's
  // post-processor at load time (update_post_processor): "<bos> $A <eos>" by add_bos_token (default
  // true) and add_eos_token (default false). DeepSeek-V3's config names LlamaTokenizerFast, so vLLM and
  // SGLang count a BOS on every prompt; we do the same (docs/tokenizer.md).
  const std::string cls = cfg.contains("tokenizer_class") && cfg.at("tokenizer_class").is_string()
                              ? cfg.at("tokenizer_class").get<std::string>()
                              : std::string();
  if (cls == "LlamaTokenizerFast" || cls == "LlamaTokenizer" || cls == "CodeLlamaTokenizerFast" ||
      cls == "CodeLlamaTokenizer" || cls == "GemmaTokenizerFast" || cls == "GemmaTokenizer") {
    const bool add_bos = c.boolean(cfg, "", "add_bos_token", true);
    const bool add_eos = c.boolean(cfg, "", "add_eos_token", false);
    if (add_bos && !impl.bos) fail(source, "add_bos_token is true but bos_token is not set");
    if (add_eos && !impl.eos) fail(source, "add_eos_token is true but eos_token is not set");
    impl.post_prefix.clear();
    impl.post_suffix.clear();
    if (add_bos) impl.post_prefix.push_back(*impl.bos);
    if (add_eos) impl.post_suffix.push_back(*impl.eos);
  }
}

}  // namespace

void load_impl(Tokenizer::Impl& impl, const std::string& text, const std::string& source,
               const std::string* config_text, const std::string& config_source, const LoadOptions& options) {
  // simdjson for the whole document; every member but model.vocab / model.merges is small and is
  // handed to nlohmann (minified) for the path-naming accessors.
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(text);
  simdjson::dom::element doc;
  if (parser.parse(padded).get(doc)) {
    try {
      [[maybe_unused]] const json parsed = json::parse(text);  // throws with the byte position
    } catch (const json::parse_error& e) {
      fail(source, std::string("invalid JSON: ") + e.what());
    }
    fail(source, "invalid JSON");
  }
  simdjson::dom::object doc_obj;
  if (doc.get_object().get(doc_obj)) fail(source, "must be a JSON object (a Hugging Face tokenizer.json)");
  json root = json::object();
  json model_meta = json::object();
  simdjson::dom::element vocab_el, merges_el;
  bool has_model = false, has_vocab = false, has_merges = false;
  for (auto field : doc_obj) {
    if (field.key == "model") {
      has_model = true;
      simdjson::dom::object model_obj;
      if (field.value.get_object().get(model_obj)) fail(source, "model must be an object");
      for (auto mf : model_obj) {
        if (mf.key == "vocab") {
          vocab_el = mf.value, has_vocab = true;
        } else if (mf.key == "merges") {
          merges_el = mf.value, has_merges = true;
        } else {
          model_meta[std::string(mf.key)] = json::parse(simdjson::minify(mf.value));
        }
      }
    } else {
      root[std::string(field.key)] = json::parse(simdjson::minify(field.value));
    }
  }
  const Ctx c{source};
  for (const char* key : {"truncation", "padding"}) {
    if (root.contains(key) && !root.at(key).is_null()) {
      fail(source, std::string(key) + " = " + short_dump(root.at(key)) + " is not supported (must be null)");
    }
  }
  if (!has_model) fail(source, "model is missing");
  parse_model(c, model_meta, has_vocab ? &vocab_el : nullptr, has_merges ? &merges_el : nullptr, impl);
  if (root.contains("normalizer") && !root.at("normalizer").is_null()) {
    impl.has_normalizer = true;
    parse_normalizer(c, root.at("normalizer"), "normalizer", impl.normalizers);
  }
  if (root.contains("pre_tokenizer") && !root.at("pre_tokenizer").is_null()) {
    parse_pre_tokenizer(c, root.at("pre_tokenizer"), "pre_tokenizer", impl.pre_tokenizers);
  }
  if (root.contains("decoder") && !root.at("decoder").is_null()) {
    impl.has_decoder = true;
    parse_decoder(c, root.at("decoder"), "decoder", impl.decoders);
  }
  if (root.contains("post_processor") && !root.at("post_processor").is_null()) {
    parse_post_processor(c, root.at("post_processor"), "post_processor", impl.post_prefix, impl.post_suffix);
  }
  std::vector<detail::AddedToken> tokens;
  if (root.contains("added_tokens") && !root.at("added_tokens").is_null()) {
    const json& list = c.array(root, "", "added_tokens");
    for (std::size_t i = 0; i < list.size(); ++i) {
      const std::string path = "added_tokens[" + std::to_string(i) + "]";
      detail::AddedToken t;
      t.content = c.str(list[i], path, "content");
      t.id = static_cast<Id>(c.integer(list[i], path, "id"));
      t.special = c.boolean(list[i], path, "special", false);
      t.lstrip = c.boolean(list[i], path, "lstrip", false);
      t.rstrip = c.boolean(list[i], path, "rstrip", false);
      t.single_word = c.boolean(list[i], path, "single_word", false);
      t.normalized = c.boolean(list[i], path, "normalized", !t.special);
      tokens.push_back(std::move(t));
    }
  }
  for (const auto& [id, content] : options.extra_added_tokens) {
    const Id wanted = id;  // clang 14 cannot capture a structured binding
    auto it = std::find_if(tokens.begin(), tokens.end(),
                           [&](const detail::AddedToken& t) { return t.id == wanted; });
    detail::AddedToken t;
    t.content = content;
    t.id = id;
    t.special = false;
    t.normalized = true;
    if (it != tokens.end()) {
      *it = t;
    } else {
      tokens.push_back(t);
    }
  }
  add_tokens(c, impl, std::move(tokens));
  // Matchers (AddedVocabulary::refresh_added_tokens): normalized tokens match their normalized content.
  std::vector<std::pair<std::string, std::uint32_t>> raw, normalized;
  for (std::uint32_t i = 0; i < impl.added.size(); ++i) {
    const detail::AddedToken& t = impl.added[i];
    if (t.normalized) {
      std::string content = t.content;
      detail::normalize(impl.normalizers, content);
      normalized.emplace_back(std::move(content), i);
    } else {
      raw.emplace_back(t.content, i);
    }
  }
  impl.raw_matcher.build(raw);
  impl.normalized_matcher.build(normalized);
  if (config_text != nullptr) parse_config(impl, *config_text, config_source);
}

}  // namespace servelab::tokenizer
