// ShareGPT loading (simdjson on-demand, no text copies) and vLLM ShareGPTDataset sampling; also the loader
// of whole ShareGPT-form conversations. No tokenizer here: lengths come through a TokenCountFn.
#include <fmt/format.h>
#include <simdjson.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/common/utf8.h"
#include "servelab/dataset/dataset.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset {

namespace detail {

/// A read-only JSON file with simdjson's SIMDJSON_PADDING zero bytes after it: the file is memory-mapped over
/// an anonymous zero mapping one padding longer (no copy into an anonymous buffer, pages shared with the page
/// cache); falls back to reading into a padded_string when mapping fails. The file must not be truncated
/// while loaded (that would fault).
class JsonBuffer {
 public:
  JsonBuffer() = default;
  JsonBuffer(const JsonBuffer&) = delete;
  JsonBuffer& operator=(const JsonBuffer&) = delete;
  ~JsonBuffer() {
    if (map_) munmap(map_, map_len_);
  }

  void load(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      throw std::runtime_error(
          fmt::format("{}: cannot read the file: {}", path.string(), std::strerror(errno)));
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      read_fallback(path);
      return;
    }
    const std::size_t size = static_cast<std::size_t>(st.st_size);
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    const std::size_t map_len = (size + simdjson::SIMDJSON_PADDING + page - 1) / page * page;
    void* base = ::mmap(nullptr, map_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
      ::close(fd);
      read_fallback(path);
      return;
    }
    if (size > 0 &&
        ::mmap(base, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) == MAP_FAILED) {
      ::munmap(base, map_len);
      ::close(fd);
      read_fallback(path);
      return;
    }
    ::close(fd);
    map_ = base;
    map_len_ = map_len;
    data_ = static_cast<const char*>(base);
    size_ = size;
  }

  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  simdjson::padded_string_view view() const {
    return simdjson::padded_string_view(data_, size_, size_ + simdjson::SIMDJSON_PADDING);
  }

 private:
  void read_fallback(const std::filesystem::path& path) {
    if (auto err = simdjson::padded_string::load(path.string()).get(owned_)) {
      throw std::runtime_error(
          fmt::format("{}: cannot read the file: {}", path.string(), simdjson::error_message(err)));
    }
    data_ = owned_.data();
    size_ = owned_.size();
  }

  void* map_ = nullptr;
  std::size_t map_len_ = 0;
  simdjson::padded_string owned_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

struct ShareGptStorage {
  std::filesystem::path path;
  JsonBuffer json;
  std::size_t num_records = 0;
  /// Offsets into `json` of the first character after the opening quote of turn 0 / turn 1 values.
  std::vector<std::uint64_t> prompt_offset, completion_offset;
  std::vector<std::uint64_t> record_index;
};
}  // namespace detail

namespace {

[[noreturn]] void fail(const std::filesystem::path& path, std::size_t record, const std::string& what) {
  throw std::runtime_error(fmt::format("{}: record {}: {}", path.string(), record, what));
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// Reads 4 hex digits at p (p+4 <= end); -1 when invalid.
long read_hex4(const char* p, const char* end) {
  if (end - p < 4) return -1;
  long v = 0;
  for (int i = 0; i < 4; ++i) {
    const int h = hex_value(p[i]);
    if (h < 0) return -1;
    v = v * 16 + h;
  }
  return v;
}

/// Unescapes the JSON string starting just after its opening quote (the document was validated by
/// simdjson stage 1, so a closing quote exists before `end`). Lone surrogates become U+FFFD.
/// Returns false on an invalid escape.
bool unescape_json_string(const char* p, const char* end, std::string& out) {
  out.clear();
  while (p < end) {
    const char* q = p;
    while (q < end && *q != '"' && *q != '\\') ++q;
    out.append(p, q);
    if (q >= end) return false;
    if (*q == '"') return true;
    // escape
    if (q + 1 >= end) return false;
    const char e = q[1];
    p = q + 2;
    switch (e) {
      case '"':
        out.push_back('"');
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '/':
        out.push_back('/');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        const long cp = read_hex4(p, end);
        if (cp < 0) return false;
        p += 4;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          long lo = -1;
          if (end - p >= 6 && p[0] == '\\' && p[1] == 'u') lo = read_hex4(p + 2, end);
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            p += 6;
            common::utf8_append(out, 0x10000 + ((static_cast<std::uint32_t>(cp) - 0xD800) << 10) +
                                         (static_cast<std::uint32_t>(lo) - 0xDC00));
          } else {
            common::utf8_append(out, 0xFFFD);
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          common::utf8_append(out, 0xFFFD);
        } else {
          common::utf8_append(out, static_cast<std::uint32_t>(cp));
        }
        break;
      }
      default:
        return false;
    }
  }
  return false;
}

std::string error_text(simdjson::error_code err) {
  return simdjson::error_message(err);
}

/// Offset of the raw string content of `value` (which must be a JSON string) within `base`.
std::uint64_t raw_string_offset(simdjson::ondemand::value value, const char* base,
                                const std::filesystem::path& path, std::size_t record,
                                std::string_view where) {
  simdjson::ondemand::json_type type;
  if (auto err = value.type().get(type)) fail(path, record, fmt::format("{}: {}", where, error_text(err)));
  if (type != simdjson::ondemand::json_type::string)
    fail(path, record, fmt::format("{} is not a string", where));
  simdjson::ondemand::raw_json_string raw;
  if (auto err = value.get_raw_json_string().get(raw))
    fail(path, record, fmt::format("{}: {}", where, error_text(err)));
  return static_cast<std::uint64_t>(raw.raw() - base);
}

std::string unescape_at(const detail::ShareGptStorage& s, std::uint64_t offset, std::size_t record,
                        std::string_view where) {
  std::string out;
  const char* base = s.json.data();
  if (!unescape_json_string(base + offset, base + s.json.size(), out)) {
    fail(s.path, record, fmt::format("{}: invalid escape sequence in string", where));
  }
  return out;
}

}  // namespace

const std::filesystem::path& ShareGptFile::path() const {
  static const std::filesystem::path kEmpty;
  return storage ? storage->path : kEmpty;
}
std::size_t ShareGptFile::num_records() const {
  return storage ? storage->num_records : 0;
}
std::size_t ShareGptFile::size() const {
  return storage ? storage->prompt_offset.size() : 0;
}
std::size_t ShareGptFile::record_index(std::size_t i) const {
  if (!storage) throw std::out_of_range("ShareGptFile: empty (not loaded)");
  return storage->record_index.at(i);
}
std::string ShareGptFile::prompt(std::size_t i) const {
  if (!storage) throw std::out_of_range("ShareGptFile: empty (not loaded)");
  return unescape_at(*storage, storage->prompt_offset.at(i), storage->record_index[i],
                     "conversations[0].value");
}
std::string ShareGptFile::completion(std::size_t i) const {
  if (!storage) throw std::out_of_range("ShareGptFile: empty (not loaded)");
  return unescape_at(*storage, storage->completion_offset.at(i), storage->record_index[i],
                     "conversations[1].value");
}

ShareGptFile load_sharegpt_file(const std::filesystem::path& path) {
  auto storage = std::make_shared<detail::ShareGptStorage>();
  storage->path = path;
  storage->json.load(path);
  const char* base = storage->json.data();
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto err = parser.iterate(storage->json.view()).get(doc)) {
    throw std::runtime_error(fmt::format("{}: invalid JSON: {}", path.string(), error_text(err)));
  }
  simdjson::ondemand::array records;
  if (auto err = doc.get_array().get(records)) {
    throw std::runtime_error(fmt::format("{}: the top level must be a JSON array of records ({})",
                                         path.string(), error_text(err)));
  }
  std::size_t index = 0;
  for (auto element : records) {
    simdjson::ondemand::object record;
    if (auto err = element.get_object().get(record)) {
      fail(path, index, fmt::format("not a JSON object ({})", error_text(err)));
    }
    simdjson::ondemand::value conversations;
    auto err = record.find_field_unordered("conversations").get(conversations);
    if (err == simdjson::NO_SUCH_FIELD) {
      ++index;
      continue;
    }
    if (err) fail(path, index, fmt::format("conversations: {}", error_text(err)));
    simdjson::ondemand::array turns;
    if (auto e = conversations.get_array().get(turns)) {
      fail(path, index, fmt::format("\"conversations\" is not an array ({})", error_text(e)));
    }
    std::size_t n_turns = 0;
    std::uint64_t offsets[2] = {0, 0};
    for (auto turn_result : turns) {
      if (n_turns < 2) {
        const std::string where = fmt::format("conversations[{}]", n_turns);
        simdjson::ondemand::object turn;
        if (auto e = turn_result.get_object().get(turn)) {
          fail(path, index, fmt::format("{} is not an object ({})", where, error_text(e)));
        }
        simdjson::ondemand::value value;
        if (auto e = turn.find_field_unordered("value").get(value)) {
          fail(path, index,
               fmt::format("{}.value: {}", where,
                           e == simdjson::NO_SUCH_FIELD ? std::string("missing") : error_text(e)));
        }
        offsets[n_turns] = raw_string_offset(value, base, path, index, where + ".value");
      } else if (auto e = turn_result.error()) {
        fail(path, index, fmt::format("conversations[{}]: {}", n_turns, error_text(e)));
      }
      ++n_turns;
    }
    if (n_turns >= 2) {
      storage->prompt_offset.push_back(offsets[0]);
      storage->completion_offset.push_back(offsets[1]);
      storage->record_index.push_back(index);
    }
    ++index;
  }
  storage->num_records = index;
  ShareGptFile file;
  file.storage = std::move(storage);
  return file;
}

std::vector<SampleRequest> sample_sharegpt(const ShareGptFile& file, const DatasetOptions& options,
                                           const TokenCountFn& count_tokens) {
  const std::string source = file.path().string();
  if (file.size() == 0) {
    throw std::runtime_error(fmt::format(
        "{}: no usable ShareGPT record: none of its {} records has a \"conversations\" list with at least 2 "
        "turns (vLLM's ShareGPT rule: the prompt is turn 0 and the reference completion is turn 1; a file of "
        "first turns only cannot be used as --dataset-name sharegpt)",
        source, file.num_records()));
  }
  std::vector<std::uint32_t> order(file.size());
  std::iota(order.begin(), order.end(), 0u);
  if (!options.disable_shuffle) {
    schedule::PythonRandom rng(options.seed);  // vLLM: random.seed(seed); random.shuffle(data)
    rng.shuffle(order);
  }
  const bool fixed_output = options.sharegpt_output_len.has_value();
  std::vector<SampleRequest> samples;
  const std::size_t wanted = static_cast<std::size_t>(std::max(options.num_prompts, 0));
  samples.reserve(wanted);
  for (std::uint32_t i : order) {
    if (samples.size() >= wanted) break;
    std::string prompt = file.prompt(i);
    const int prompt_len = count_tokens(prompt);
    const int output_len = fixed_output ? *options.sharegpt_output_len : count_tokens(file.completion(i));
    if (!is_valid_sharegpt_sequence(prompt_len, output_len, fixed_output)) continue;
    SampleRequest r;
    r.prompt = std::move(prompt);
    r.prompt_len = prompt_len;
    r.output_len = output_len;
    r.request_id = fmt::format("{}{}", options.request_id_prefix, samples.size());
    samples.push_back(std::move(r));
  }
  if (samples.empty()) {
    throw std::runtime_error(fmt::format(
        "{}: none of the {} two-turn records passes vLLM's ShareGPT length filters (prompt >= 4, output >= 4 "
        "unless --sharegpt-output-len is set, prompt <= 1024, prompt + output <= 2048 tokens)",
        source, file.size()));
  }
  oversample(samples, options.num_prompts, options.seed, options.request_id_prefix, options.no_oversample,
             source);
  return samples;
}

std::vector<Conversation> load_conversations(const std::filesystem::path& path) {
  detail::JsonBuffer json;
  json.load(path);
  const char* base = json.data();
  simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (auto err = parser.iterate(json.view()).get(doc)) {
    throw std::runtime_error(fmt::format("{}: invalid JSON: {}", path.string(), error_text(err)));
  }
  simdjson::ondemand::array records;
  if (auto err = doc.get_array().get(records)) {
    throw std::runtime_error(fmt::format("{}: the top level must be a JSON array of records ({})",
                                         path.string(), error_text(err)));
  }
  auto text_at = [&](std::uint64_t offset, std::size_t record, std::string_view where) {
    std::string out;
    if (!unescape_json_string(base + offset, base + json.size(), out)) {
      fail(path, record, fmt::format("{}: invalid escape sequence in string", where));
    }
    return out;
  };
  std::vector<Conversation> out;
  std::size_t index = 0;
  for (auto element : records) {
    simdjson::ondemand::object record;
    if (auto err = element.get_object().get(record)) {
      fail(path, index, fmt::format("not a JSON object ({})", error_text(err)));
    }
    Conversation c;
    std::string id, conversation_id;
    bool have_turns = false;
    for (auto field : record) {
      std::string_view key;
      if (auto err = field.unescaped_key().get(key)) fail(path, index, error_text(err));
      if (key == "id" || key == "conversation_id") {
        simdjson::ondemand::value v = field.value();
        simdjson::ondemand::json_type type;
        if (auto err = v.type().get(type)) fail(path, index, error_text(err));
        std::string text;
        if (type == simdjson::ondemand::json_type::string) {
          text = text_at(raw_string_offset(v, base, path, index, key), index, key);
        } else {
          std::string_view raw = v.raw_json_token();
          text = std::string(raw);
          while (!text.empty() && (text.back() == ' ' || text.back() == '\n')) text.pop_back();
        }
        (key == "id" ? id : conversation_id) = std::move(text);
      } else if (key == "conversations") {
        have_turns = true;
        simdjson::ondemand::array turns;
        if (auto err = field.value().get_array().get(turns)) {
          fail(path, index, fmt::format("\"conversations\" is not an array ({})", error_text(err)));
        }
        std::size_t t = 0;
        for (auto turn_result : turns) {
          const std::string where = fmt::format("conversations[{}]", t);
          simdjson::ondemand::object turn;
          if (auto err = turn_result.get_object().get(turn)) {
            fail(path, index, fmt::format("{} is not an object ({})", where, error_text(err)));
          }
          ConversationTurn ct;
          bool have_from = false, have_value = false;
          for (auto tf : turn) {
            std::string_view tkey;
            if (auto err = tf.unescaped_key().get(tkey)) fail(path, index, error_text(err));
            if (tkey == "from" || tkey == "value") {
              const std::string w = where + "." + std::string(tkey);
              std::string text = text_at(raw_string_offset(tf.value(), base, path, index, w), index, w);
              if (tkey == "from") {
                ct.from = std::move(text);
                have_from = true;
              } else {
                ct.value = std::move(text);
                have_value = true;
              }
            }
          }
          if (!have_from) fail(path, index, where + ".from: missing");
          if (!have_value) fail(path, index, where + ".value: missing");
          c.turns.push_back(std::move(ct));
          ++t;
        }
      }
    }
    if (!have_turns) fail(path, index, "\"conversations\" is missing");
    c.id = !id.empty() ? id : !conversation_id.empty() ? conversation_id : std::to_string(index);
    out.push_back(std::move(c));
    ++index;
  }
  return out;
}

std::vector<std::filesystem::path> find_sharegpt_files(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    throw std::runtime_error(
        fmt::format("{}: data directory not found (set SERVELAB_DATA_DIR)", dir.string()));
  }
  std::vector<std::filesystem::path> files;
  constexpr std::string_view kSuffix = ".sharegpt.json";
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > kSuffix.size() &&
        name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) == 0) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<std::filesystem::path> find_sharegpt_files() {
  return find_sharegpt_files(common::data_dir());
}

}  // namespace servelab::dataset
