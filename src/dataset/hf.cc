// --dataset-name hf: local HF cache lookup, split files, JSON/JSONL rows, HF shuffle order, vLLM's classes.
#include "dataset/hf.h"

#include "dataset/jsonl.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <stdexcept>

#include "servelab/common/text.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset::detail {

namespace fs = std::filesystem;

namespace {

const std::map<std::string, HfKind>& supported_ids() {
  static const std::map<std::string, HfKind> ids = {
      {"Aeala/ShareGPT_Vicuna_unfiltered", HfKind::kConversation},
      {"likaixin/InstructCoder", HfKind::kInstructCoder},
      {"philschmid/mt-bench", HfKind::kMtBench},
      {"AI-MO/aimo-validation-aime", HfKind::kAimo},
      {"AI-MO/NuminaMath-1.5", HfKind::kAimo},
      {"AI-MO/NuminaMath-CoT", HfKind::kAimo},
  };
  return ids;
}

// vLLM 0.13 HF datasets servelab does not implement, with the reason.
const std::map<std::string, std::string>& unsupported_ids() {
  static const std::map<std::string, std::string> ids = {
      {"lmarena-ai/VisionArena-Chat", "multimodal (images)"},
      {"lmarena-ai/vision-arena-bench-v0.1", "multimodal (images)"},
      {"lmms-lab/LLaVA-OneVision-Data", "multimodal (images)"},
      {"yale-nlp/MMVU", "multimodal (video)"},
      {"Lin-Chen/MMStar", "multimodal (images)"},
      {"openslr/librispeech_asr", "audio"},
      {"facebook/voxpopuli", "audio"},
      {"LIUM/tedlium", "audio"},
      {"edinburghcstr/ami", "audio"},
      {"speechcolab/gigaspeech", "audio"},
      {"kensho/spgispeech", "audio"},
      {"zed-industries/zeta", "Zeta's next-edit prompt format is not implemented"},
      {"mgoin/mlperf-inference-llama2-data", "its system-prompt chat rendering is not implemented"},
      {"mgoin/mlperf-inference-llama3.1-data", "its system-prompt chat rendering is not implemented"},
      {"vdaita/edit_5k_char", "Blazedit's edit prompt format is not implemented"},
      {"vdaita/edit_10k_char", "Blazedit's edit prompt format is not implemented"},
  };
  return ids;
}

std::string supported_list() {
  std::vector<std::string> names;
  for (const auto& [id, kind] : supported_ids()) names.push_back(id);
  return fmt::format("{}", fmt::join(names, ", "));
}

bool is_sep(char c) {
  return c == '-' || c == '.' || c == '_' || c == ' ' || (c >= '0' && c <= '9');
}

const std::vector<std::pair<std::string, std::vector<std::string>>>& split_keywords() {
  // datasets/data_files.py SPLIT_KEYWORDS.
  static const std::vector<std::pair<std::string, std::vector<std::string>>> k = {
      {"train", {"train", "training"}},
      {"validation", {"validation", "valid", "dev", "val"}},
      {"test", {"test", "testing", "eval", "evaluation"}}};
  return k;
}

// "**[{sep}/]{keyword}[{sep}]*" or "{keyword}[{sep}]*": the file name starts with keyword+sep or holds
// sep+keyword+sep.
bool filename_has_keyword(const std::string& name, const std::string& k) {
  for (std::size_t i = name.find(k); i != std::string::npos; i = name.find(k, i + 1)) {
    const bool before = i == 0 || is_sep(name[i - 1]);
    const bool after = i + k.size() < name.size() && is_sep(name[i + k.size()]);
    if (before && after) return true;
  }
  return false;
}

// "{keyword}/**" or "**[{sep}/]{keyword}/**": a folder named keyword or ending with sep+keyword.
bool dir_has_keyword(const std::vector<std::string>& dirs, const std::string& k) {
  for (const std::string& d : dirs) {
    if (d == k) return true;
    if (d.size() > k.size() && d.compare(d.size() - k.size(), k.size(), k) == 0 &&
        is_sep(d[d.size() - k.size() - 1]))
      return true;
  }
  return false;
}

enum class FileType { kNotData, kJson, kOtherData };

FileType file_type(const std::string& name, std::string* format) {
  const std::string n = common::ascii_lower(name);
  auto ends = [&](std::string_view suffix) {
    return n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0;
  };
  if (ends(".json") || ends(".jsonl")) return FileType::kJson;
  static const std::vector<std::string> other = {
      ".parquet", ".arrow", ".csv", ".tsv",        ".txt", ".json.gz", ".jsonl.gz", ".gz",  ".zst",
      ".bz2",     ".xz",    ".zip", ".tar",        ".npy", ".npz",     ".wav",      ".mp3", ".flac",
      ".jpg",     ".jpeg",  ".png", ".webdataset", ".h5",  ".hdf5",    ".lance",    ".xml"};
  for (const std::string& e : other) {
    if (ends(e)) {
      *format = e.substr(1);
      return FileType::kOtherData;
    }
  }
  return FileType::kNotData;
}

/// numpy random_interval(max): smallest bit mask >= max, 32-bit draws (64-bit above 2^32 - 1), rejection.
std::uint64_t random_interval(schedule::NumpyGenerator& rng, std::uint64_t max) {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  for (int s = 1; s <= 32; s *= 2) mask |= mask >> s;
  std::uint64_t v;
  if (max <= 0xffffffffULL) {
    while ((v = (rng.next_u32() & mask)) > max) {
    }
  } else {
    while ((v = (rng.next_u64() & mask)) > max) {
    }
  }
  return v;
}

template <class T>
void generator_shuffle(schedule::NumpyGenerator& rng, std::vector<T>& v) {
  for (std::size_t i = v.size(); i-- > 1;)
    std::swap(v[i], v[static_cast<std::size_t>(random_interval(rng, i))]);
}

std::string string_field(const nlohmann::json& j, std::string_view key, const std::string& where) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_string())
    throw std::runtime_error(fmt::format("{}: the row has no string \"{}\"", where, key));
  return it->get<std::string>();
}

HfRow row_of(const nlohmann::json& j, HfKind kind, const std::string& where) {
  if (!j.is_object()) throw std::runtime_error(fmt::format("{}: expected a JSON object", where));
  HfRow r;
  switch (kind) {
    case HfKind::kConversation: {
      const auto c = j.find("conversations");
      if (c == j.end() || !c->is_array())
        throw std::runtime_error(fmt::format("{}: the row has no \"conversations\" list", where));
      r.usable = c->size() >= 2;
      if (r.usable) {
        for (int k = 0; k < 2; ++k) {
          const auto& turn = (*c)[static_cast<std::size_t>(k)];
          if (!turn.is_object())
            throw std::runtime_error(fmt::format("{}: conversations[{}] is not an object", where, k));
          (k == 0 ? r.first : r.second) =
              string_field(turn, "value", fmt::format("{}: conversations[{}]", where, k));
        }
      }
      break;
    }
    case HfKind::kInstructCoder:
      r.first = string_field(j, "input", where);
      r.second = string_field(j, "instruction", where);
      break;
    case HfKind::kMtBench: {
      const auto t = j.find("turns");
      if (t == j.end() || !t->is_array() || t->empty() || !(*t)[0].is_string())
        throw std::runtime_error(fmt::format("{}: \"turns\" must be a non-empty list of strings", where));
      r.first = (*t)[0].get<std::string>();
      break;
    }
    case HfKind::kAimo:
      r.first = string_field(j, "problem", where);
      r.second = string_field(j, "solution", where);
      break;
  }
  return r;
}

void load_json_array(const fs::path& path, HfKind kind, std::vector<HfRow>& rows) {
  if (kind == HfKind::kConversation) {  // ShareGPT-sized files: on-demand, only the first two turns kept
    const ShareGptFile f = load_sharegpt_file(path);
    const std::size_t base = rows.size();
    rows.resize(base + f.num_records());
    for (std::size_t k = base; k < rows.size(); ++k) rows[k].usable = false;
    for (std::size_t i = 0; i < f.size(); ++i) {
      HfRow& r = rows[base + f.record_index(i)];
      r.first = f.prompt(i);
      r.second = f.completion(i);
      r.usable = true;
    }
    return;
  }
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path.string()).get(json))
    throw std::runtime_error(fmt::format("{}: cannot read the dataset file", path.string()));
  simdjson::ondemand::parser parser;
  std::size_t index = 0;
  try {
    simdjson::ondemand::document doc = parser.iterate(json);
    for (auto element : doc.get_array()) {
      const std::string where = fmt::format("{}: record {}", path.string(), index);
      std::string_view raw = simdjson::to_json_string(element.value());
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(raw);
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}: invalid JSON: {}", where, e.what()));
      }
      rows.push_back(row_of(j, kind, where));
      ++index;
    }
  } catch (const simdjson::simdjson_error& e) {
    throw std::runtime_error(fmt::format("{}: record {}: invalid JSON: {}", path.string(), index, e.what()));
  }
}

void load_jsonl(const fs::path& path, HfKind kind, std::vector<HfRow>& rows) {
  for_each_jsonl_object(path, "dataset file", [&](const nlohmann::json& j, std::size_t line_no) {
    rows.push_back(row_of(j, kind, fmt::format("{}: line {}", path.string(), line_no)));
  });
}
}  // namespace

std::optional<HfKind> hf_kind(std::string_view id) {
  const auto it = supported_ids().find(std::string(id));
  if (it != supported_ids().end()) return it->second;
  const auto un = unsupported_ids().find(std::string(id));
  if (un != unsupported_ids().end()) {
    throw std::runtime_error(
        fmt::format("--dataset-name hf: {} is a vLLM HF dataset servelab does not implement ({}); "
                    "supported: {}",
                    id, un->second, supported_list()));
  }
  return std::nullopt;
}

std::vector<fs::path> hf_dataset_cache_dirs() {
  std::vector<fs::path> dirs;
  auto env = [](const char* name) -> const char* {
    const char* v = std::getenv(name);
    return v && *v ? v : nullptr;
  };
  if (const char* v = env("HF_HUB_CACHE")) dirs.emplace_back(v);
  if (const char* v = env("HF_HOME")) dirs.push_back(fs::path(v) / "hub");
  if (const char* v = env("XDG_CACHE_HOME")) dirs.push_back(fs::path(v) / "huggingface" / "hub");
  if (const char* v = env("HOME")) dirs.push_back(fs::path(v) / ".cache" / "huggingface" / "hub");
  if (const char* v = env("HF_DATASETS_CACHE")) dirs.emplace_back(v);
  return dirs;
}

fs::path find_hf_snapshot(std::string_view id) {
  const auto slash = id.find('/');
  if (slash == std::string_view::npos || slash == 0 || id.find('/', slash + 1) != std::string_view::npos)
    throw std::runtime_error(
        fmt::format("--dataset-path {}: expected a Hugging Face dataset id ORG/NAME or a folder", id));
  const std::string repo = fmt::format("datasets--{}--{}", id.substr(0, slash), id.substr(slash + 1));
  std::vector<std::string> searched;
  std::error_code ec;
  for (const fs::path& cache : hf_dataset_cache_dirs()) {
    const fs::path snapshots = cache / repo / "snapshots";
    searched.push_back(snapshots.string());
    if (!fs::is_directory(snapshots, ec)) continue;
    std::string main_ref;
    std::ifstream(cache / repo / "refs" / "main") >> main_ref;
    if (!main_ref.empty() && fs::is_directory(snapshots / main_ref, ec)) return snapshots / main_ref;
    std::vector<fs::path> found;
    for (const auto& e : fs::directory_iterator(snapshots, ec))
      if (e.is_directory(ec)) found.push_back(e.path());
    if (!found.empty()) {
      return *std::max_element(found.begin(), found.end(), [](const fs::path& a, const fs::path& b) {
        std::error_code e1, e2;
        return fs::last_write_time(a, e1) < fs::last_write_time(b, e2);
      });
    }
  }
  throw std::runtime_error(
      fmt::format("--dataset-path {}: the dataset is not in the local Hugging Face cache (looked for {}); "
                  "servelab does not "
                  "download datasets: fetch it first (huggingface-cli download --repo-type dataset {}) or "
                  "pass its folder",
                  id, fmt::join(searched, ", "), id));
}

std::vector<fs::path> hf_split_files(const fs::path& root_in, const std::optional<std::string>& subset,
                                     const std::string& split) {
  std::error_code ec;
  fs::path root = root_in;
  if (subset) {
    if (fs::is_directory(root_in / *subset, ec)) {
      root = root_in / *subset;
    } else if (fs::is_directory(root_in / "data" / *subset, ec)) {
      root = root_in / "data" / *subset;
    } else {
      throw std::runtime_error(
          fmt::format("--hf-subset {}: {} has no folder {} (or data/{}); servelab finds subsets by folder "
                      "name, it does not "
                      "read README.md configs",
                      *subset, root_in.string(), *subset, *subset));
    }
  }
  struct DataFile {
    std::string rel;
    FileType type;
    std::string format;
  };
  std::vector<DataFile> files;
  for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::follow_directory_symlink, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (!name.empty() && name[0] == '.') {
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(ec)) continue;
    DataFile f;
    f.rel = fs::relative(it->path(), root, ec).generic_string();
    f.type = file_type(name, &f.format);
    if (f.type != FileType::kNotData) files.push_back(f);
  }
  if (files.empty())
    throw std::runtime_error(
        fmt::format("{}: no data file (JSON/JSONL) in the dataset folder", root.string()));
  std::sort(files.begin(), files.end(), [](const DataFile& a, const DataFile& b) { return a.rel < b.rel; });

  std::map<std::string, std::vector<const DataFile*>> by_split;
  static const std::regex sharded(R"(^data/(.+)-[0-9]{5}-of-[0-9]{5}[^/]*\.[^/]+$)");
  for (const DataFile& f : files) {
    std::smatch m;
    if (std::regex_match(f.rel, m, sharded)) by_split[m[1].str()].push_back(&f);
  }
  auto assign = [&](bool dirs) {
    for (const DataFile& f : files) {
      std::vector<std::string> parts;
      for (std::size_t b = 0, e; b <= f.rel.size(); b = e + 1) {
        e = f.rel.find('/', b);
        if (e == std::string::npos) e = f.rel.size();
        parts.push_back(f.rel.substr(b, e - b));
      }
      const std::string fname = parts.back();
      parts.pop_back();
      for (const auto& [s, keywords] : split_keywords()) {
        for (const std::string& k : keywords) {
          if (dirs ? dir_has_keyword(parts, k) : filename_has_keyword(fname, k)) {
            by_split[s].push_back(&f);
            break;
          }
        }
      }
    }
  };
  if (by_split.empty()) assign(true);
  if (by_split.empty()) assign(false);
  if (by_split.empty())
    for (const DataFile& f : files) by_split["train"].push_back(&f);
  const auto it = by_split.find(split);
  if (it == by_split.end()) {
    std::vector<std::string> names;
    for (const auto& [s, v] : by_split) names.push_back(s);
    throw std::runtime_error(fmt::format("--hf-split {}: {} has no such split (found: {})", split,
                                         root.string(), fmt::join(names, ", ")));
  }
  std::vector<fs::path> out;
  for (const DataFile* f : it->second) {
    if (f->type == FileType::kOtherData) {
      throw std::runtime_error(
          fmt::format("{}: split {} is stored as {} ({}); servelab reads JSON/JSONL HF datasets only (no "
                      "Debian C++ library "
                      "reads {})",
                      root.string(), split, f->format, f->rel, f->format));
    }
    out.push_back(root / f->rel);
  }
  return out;
}

std::vector<HfRow> load_hf_rows(const std::vector<fs::path>& files, HfKind kind) {
  std::vector<HfRow> rows;
  for (const fs::path& path : files) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error(fmt::format("{}: cannot open the dataset file", path.string()));
    char c = 0;
    while (in.get(c) && std::isspace(static_cast<unsigned char>(c))) {
    }
    in.close();
    if (c == '[') {
      load_json_array(path, kind, rows);
    } else {
      load_jsonl(path, kind, rows);
    }
  }
  return rows;
}

std::vector<std::size_t> hf_shuffled_order(const std::vector<std::size_t>& rows_per_file, std::uint64_t seed,
                                           bool streaming) {
  std::vector<std::size_t> offsets(rows_per_file.size(), 0);
  std::size_t total = 0;
  for (std::size_t f = 0; f < rows_per_file.size(); ++f) offsets[f] = total, total += rows_per_file[f];
  std::vector<std::size_t> out;
  out.reserve(total);
  if (!streaming) {  // Dataset.shuffle: default_rng(seed).permutation(len)
    out.resize(total);
    for (std::size_t i = 0; i < total; ++i) out[i] = i;
    schedule::NumpyGenerator rng(seed);
    generator_shuffle(rng, out);
    return out;
  }
  std::vector<std::size_t> shards(rows_per_file.size());
  for (std::size_t f = 0; f < shards.size(); ++f) shards[f] = f;
  schedule::NumpyGenerator shard_rng(seed);  // _shuffle_gen_kwargs on a copy of the generator
  generator_shuffle(shard_rng, shards);
  schedule::NumpyGenerator rng(seed);  // BufferShuffledExamplesIterable's own copy
  constexpr std::size_t kBuffer = 1000;
  std::vector<std::size_t> buffer;
  buffer.reserve(kBuffer);
  std::deque<std::int64_t> indices;
  for (std::size_t f : shards) {
    for (std::size_t k = 0; k < rows_per_file[f]; ++k) {
      const std::size_t x = offsets[f] + k;
      if (buffer.size() == kBuffer) {
        if (indices.empty()) {
          const auto batch = rng.integers(0, static_cast<std::int64_t>(kBuffer), kBuffer);
          indices.assign(batch.begin(), batch.end());
        }
        const auto i = static_cast<std::size_t>(indices.front());
        indices.pop_front();
        out.push_back(buffer[i]);
        buffer[i] = x;
      } else {
        buffer.push_back(x);
      }
    }
  }
  generator_shuffle(rng, buffer);
  out.insert(out.end(), buffer.begin(), buffer.end());
  return out;
}

std::vector<SampleRequest> sample_hf_rows(const std::vector<const HfRow*>& rows, HfKind kind,
                                          const DatasetOptions& o, const TokenCountFn& count_tokens,
                                          const RenderChatFn& render_chat, std::string_view source) {
  std::vector<SampleRequest> out;
  const auto n = static_cast<std::size_t>(o.num_prompts);
  const bool dynamic_output = !o.hf_output_len;
  auto add = [&](std::string prompt, int prompt_len, int output_len, std::size_t id) {
    SampleRequest r;
    r.prompt = std::move(prompt);
    r.prompt_len = prompt_len;
    r.output_len = output_len;
    r.request_id = fmt::format("{}{}", o.request_id_prefix, id);
    out.push_back(std::move(r));
  };
  auto chat = [&](std::string p) { return o.skip_chat_template ? p : render_chat(p); };
  if (kind == HfKind::kConversation || kind == HfKind::kAimo) {
    // ConversationDataset / AIMODataset: prompt and completion lengths with BOS; with --hf-output-len unset
    // the output is the completion's length and is_valid_sequence filters (AIMO: prompt <= 2048,
    // total <= 32000; conversations: vLLM's defaults 1024 / 2048).
    const int max_prompt = kind == HfKind::kAimo ? 2048 : 1024;
    const int max_total = kind == HfKind::kAimo ? 32000 : 2048;
    for (const HfRow* row : rows) {
      if (out.size() >= n) break;
      if (!row->usable) continue;  // ConversationDataset: filter len(conversations) >= 2
      const int prompt_len = count_tokens(row->first);
      const int completion_len = count_tokens(row->second);
      const int output_len = dynamic_output ? completion_len : *o.hf_output_len;
      if (dynamic_output && (prompt_len < 4 || completion_len < 4 || prompt_len > max_prompt ||
                             prompt_len + completion_len > max_total))
        continue;
      add(row->first, prompt_len, output_len, out.size());
    }
  } else {
    // InstructCoderDataset (default output 200) / MTBenchDataset (256): chat template unless
    // --skip-chat-template; ids prefix + row position.
    const int output_len = o.hf_output_len.value_or(kind == HfKind::kInstructCoder ? 200 : 256);
    for (std::size_t i = 0; i < rows.size() && out.size() < n; ++i) {
      std::string prompt = kind == HfKind::kInstructCoder
                               ? fmt::format("{}\n\n{} Just output the code, do not include any explanation.",
                                             rows[i]->first, rows[i]->second)
                               : rows[i]->first;
      prompt = chat(std::move(prompt));
      const int prompt_len = count_tokens(prompt);
      add(std::move(prompt), prompt_len, output_len, i);
    }
  }
  oversample(out, o.num_prompts, o.seed, o.request_id_prefix, o.no_oversample, source);
  return out;
}

std::vector<SampleRequest> sample_hf(const DatasetOptions& o, const TokenCountFn& count_tokens,
                                     const RenderChatFn& render_chat) {
  const std::string& path = *o.dataset_path;
  std::error_code ec;
  const bool local = fs::is_directory(path, ec);
  std::optional<HfKind> kind = local ? std::nullopt : hf_kind(path);
  if (!kind && o.hf_name) kind = hf_kind(*o.hf_name);
  if (!kind) {
    throw std::runtime_error(fmt::format(
        "Unsupported dataset path: {}{}. Huggingface dataset only supports dataset_path from one of "
        "following: {}{}",
        path, o.hf_name ? fmt::format(" (--hf-name {})", *o.hf_name) : std::string(), supported_list(),
        local ? " (a local folder needs --hf-name with one of these ids)" : ""));
  }
  std::string split;
  if (kind == HfKind::kConversation) {
    if (!o.hf_split)
      throw std::runtime_error(fmt::format("--dataset-name hf with {}: give --hf-split (e.g. train)", path));
    split = *o.hf_split;
  } else {
    split = "train";  // vLLM 0.13 sets args.hf_split = "train" for InstructCoder, MT-Bench and AIMO
  }
  const fs::path root = local ? fs::path(path) : find_hf_snapshot(path);
  const std::vector<fs::path> files = hf_split_files(root, o.hf_subset, split);
  std::vector<HfRow> rows;
  std::vector<std::size_t> rows_per_file;
  for (const fs::path& f : files) {
    const std::size_t before = rows.size();
    std::vector<HfRow> part = load_hf_rows({f}, *kind);
    rows.insert(rows.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    rows_per_file.push_back(rows.size() - before);
  }
  if (rows.empty()) throw std::runtime_error(fmt::format("{}: split {} has no rows", root.string(), split));
  std::vector<std::size_t> order(rows.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (!o.disable_shuffle)
    order = hf_shuffled_order(rows_per_file, static_cast<std::uint64_t>(o.seed), !o.no_stream);
  std::vector<const HfRow*> ordered;
  ordered.reserve(order.size());
  for (std::size_t i : order) ordered.push_back(&rows[i]);
  return sample_hf_rows(ordered, *kind, o, count_tokens, render_chat, path);
}

}  // namespace servelab::dataset::detail
