// sonnet, burstgpt and spec_bench datasets (see file_datasets.h).
#include "dataset/file_datasets.h"

#include "dataset/jsonl.h"

#include <csv.h>
#include <fmt/format.h>
#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "servelab/schedule/rng.h"

namespace servelab::dataset::detail {

namespace {

std::string read_file(const std::filesystem::path& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the {} file", path.string(), what));
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(fmt::format("{}: read error", path.string()));
  return data;
}

/// Python round() of a double to the nearest integer, ties to even.
long long python_round(double x) {
  return static_cast<long long>(std::nearbyint(x));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------------
// sonnet

std::vector<std::string> load_sonnet_lines(const std::filesystem::path& path) {
  const std::string data = read_file(path, "sonnet");
  std::vector<std::string> lines;
  std::string current;
  for (std::size_t i = 0; i < data.size(); ++i) {
    char c = data[i];
    if (c == '\r') {  // universal newlines: \r\n and a lone \r both end a line as "\n"
      if (i + 1 < data.size() && data[i + 1] == '\n') ++i;
      c = '\n';
    }
    current += c;
    if (c == '\n') lines.push_back(std::move(current)), current.clear();
  }
  if (!current.empty()) lines.push_back(std::move(current));
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (!simdjson::validate_utf8(lines[i].data(), lines[i].size())) {
      throw std::runtime_error(fmt::format(
          "{}: line {}: not valid UTF-8 (the sonnet file is read as UTF-8 text)", path.string(), i + 1));
    }
  }
  if (lines.empty()) throw std::runtime_error(fmt::format("{}: the sonnet file has no lines", path.string()));
  return lines;
}

std::vector<SampleRequest> sample_sonnet(const std::vector<std::string>& lines, const DatasetOptions& o,
                                         const TokenCountFn& count_tokens, const RenderChatFn& render_chat,
                                         std::string_view source) {
  if (lines.empty()) throw std::runtime_error(fmt::format("{}: the sonnet file has no lines", source));
  long long total = 0;
  for (const std::string& line : lines) total += count_tokens(line);
  const double avg_len = static_cast<double>(total) / static_cast<double>(lines.size());
  static constexpr std::string_view kBasePrompt = "Pick as many lines as you can from these poem lines:\n";
  const int base_offset = count_tokens(render_chat(kBasePrompt));
  if (o.sonnet_input_len <= base_offset) {
    throw std::runtime_error(
        fmt::format("'input_len' must be higher than the base prompt length ({}). (--sonnet-input-len {})",
                    base_offset, o.sonnet_input_len));
  }
  const long long num_input_lines = python_round((o.sonnet_input_len - base_offset) / avg_len);
  const long long num_prefix_lines =
      std::max(python_round((o.sonnet_prefix_len - base_offset) / avg_len), 0LL);
  std::string prefix(kBasePrompt);
  for (long long k = 0; k < num_prefix_lines && k < static_cast<long long>(lines.size()); ++k)
    prefix += lines[k];
  const long long num_extra = std::max(0LL, num_input_lines - num_prefix_lines);
  schedule::PythonRandom rng(o.seed);  // vLLM: the global random, seeded by random.seed(args.seed) in main
  const double n = static_cast<double>(lines.size());
  const bool raw_prompt = o.backend == "openai-chat";
  const long long max_draws = std::max(10000LL, 100LL * o.num_prompts);
  std::vector<SampleRequest> out;
  out.reserve(static_cast<std::size_t>(o.num_prompts));
  int shortest = -1;
  for (long long draw = 0; static_cast<int>(out.size()) < o.num_prompts; ++draw) {
    if (draw == max_draws) {
      throw std::runtime_error(fmt::format(
          "{}: after {} draws only {} of {} sonnet prompts fit --sonnet-input-len {} (the shortest draw was "
          "{} "
          "tokens with {} prefix + {} sampled lines); raise --sonnet-input-len or lower --sonnet-prefix-len",
          source, max_draws, out.size(), o.num_prompts, o.sonnet_input_len, shortest, num_prefix_lines,
          num_extra));
    }
    std::string prompt = prefix;
    for (long long k = 0; k < num_extra; ++k) {
      prompt += lines[static_cast<std::size_t>(std::floor(rng.random() * n))];
    }
    std::string formatted = render_chat(prompt);
    const int prompt_len = count_tokens(formatted);
    if (shortest < 0 || prompt_len < shortest) shortest = prompt_len;
    if (prompt_len > o.sonnet_input_len) continue;
    SampleRequest r;
    r.prompt = raw_prompt ? std::move(prompt) : std::move(formatted);
    r.prompt_len = prompt_len;
    r.output_len = o.sonnet_output_len;
    r.request_id = fmt::format("{}{}", o.request_id_prefix, out.size());
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// burstgpt

namespace {

struct CsvState {
  std::vector<std::vector<std::string>> records;
  std::vector<std::string> current;
};

void csv_field(void* s, std::size_t len, void* data) {
  static_cast<CsvState*>(data)->current.emplace_back(static_cast<const char*>(s), len);
}

void csv_record(int, void* data) {
  auto* st = static_cast<CsvState*>(data);
  st->records.push_back(std::move(st->current));
  st->current.clear();
}

int csv_no_space(unsigned char) {
  return 0;
}  // pandas keeps spaces around fields (skipinitialspace=False)

/// A non-negative integer token count ("12", " 12 ", "12.0" as pandas' float column would give).
std::optional<long long> parse_count(const std::string& text) {
  const auto b = text.find_first_not_of(" \t");
  if (b == std::string::npos) return std::nullopt;
  const auto e = text.find_last_not_of(" \t");
  const std::string s = text.substr(b, e - b + 1);
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used != s.size() || !std::isfinite(v) || v != std::floor(v) || v < -2147483648.0 || v > 2147483647.0)
    return std::nullopt;
  return static_cast<long long>(v);
}

}  // namespace

std::vector<BurstGptRow> load_burstgpt_rows(const std::filesystem::path& path) {
  const std::string data = read_file(path, "burstgpt CSV");
  csv_parser parser;
  if (csv_init(&parser, CSV_STRICT | CSV_STRICT_FINI) != 0)
    throw std::runtime_error("burstgpt: cannot initialise the CSV parser");
  csv_set_space_func(&parser, csv_no_space);
  CsvState st;
  const std::size_t parsed = csv_parse(&parser, data.data(), data.size(), csv_field, csv_record, &st);
  const bool ok = parsed == data.size() && csv_fini(&parser, csv_field, csv_record, &st) == 0;
  const int err = csv_error(&parser);
  csv_free(&parser);
  if (!ok) {
    throw std::runtime_error(fmt::format("{}: record {}: malformed CSV ({})", path.string(),
                                         st.records.size() + 1, csv_strerror(err)));
  }
  if (st.records.empty())
    throw std::runtime_error(fmt::format("{}: the burstgpt CSV is empty", path.string()));
  const std::vector<std::string>& header = st.records.front();
  auto column = [&](std::string_view name) {
    const auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) {
      throw std::runtime_error(
          fmt::format("{}: the header has no \"{}\" column (BurstGPT columns: Timestamp, "
                      "Model, Request tokens, Response tokens, Total tokens, Log Type)",
                      path.string(), name));
    }
    return static_cast<std::size_t>(it - header.begin());
  };
  const std::size_t model_col = column("Model");
  const std::size_t response_col = column("Response tokens");
  if (header.size() < 4) {
    throw std::runtime_error(
        fmt::format("{}: the header has {} columns; vLLM reads the request and response token counts from "
                    "the 3rd and 4th",
                    path.string(), header.size()));
  }
  std::vector<BurstGptRow> rows;
  for (std::size_t r = 1; r < st.records.size(); ++r) {
    const std::vector<std::string>& rec = st.records[r];
    if (rec.size() != header.size()) {
      throw std::runtime_error(fmt::format("{}: record {}: {} fields, the header has {}", path.string(),
                                           r + 1, rec.size(), header.size()));
    }
    auto count = [&](std::size_t col) {
      const auto v = parse_count(rec[col]);
      if (!v || *v < 0) {
        throw std::runtime_error(
            fmt::format("{}: record {}: column \"{}\": \"{}\" is not a non-negative integer", path.string(),
                        r + 1, header[col], rec[col]));
      }
      return static_cast<int>(*v);
    };
    const int response = count(response_col);
    if (rec[model_col] != "GPT-4" || response <= 0) continue;
    BurstGptRow row;
    row.request_tokens = count(2);
    row.response_tokens = count(3);
    row.record = r + 1;
    rows.push_back(row);
  }
  return rows;
}

std::vector<SampleRequest> sample_burstgpt(const std::vector<BurstGptRow>& rows, const DatasetOptions& o,
                                           const TokenizerOps& tok, std::string_view source) {
  if (rows.empty()) {
    throw std::runtime_error(fmt::format(
        "{}: no usable row (vLLM keeps rows with Model == \"GPT-4\" and Response tokens > 0)", source));
  }
  if (tok.vocab_size == 0) throw std::runtime_error("burstgpt: the tokenizer has an empty vocabulary");
  const auto n = static_cast<std::size_t>(o.num_prompts);
  const auto len = static_cast<std::int64_t>(rows.size());
  // pandas DataFrame.sample(n, random_state=seed): np.random.RandomState(seed).choice(len, n, replace).
  schedule::NumpyRandomState rs(static_cast<std::uint32_t>(o.seed));
  std::vector<std::size_t> picks;
  if (static_cast<std::int64_t>(n) <= len) {
    std::vector<std::size_t> perm(rows.size());
    for (std::size_t i = 0; i < perm.size(); ++i) perm[i] = i;
    for (std::size_t i = perm.size(); i-- > 1;) {  // RandomState.shuffle: j = random_interval(i)
      std::swap(perm[i], perm[static_cast<std::size_t>(rs.randint(0, static_cast<std::int64_t>(i) + 1))]);
    }
    picks.assign(perm.begin(), perm.begin() + static_cast<std::ptrdiff_t>(n));
  } else {
    for (std::size_t i = 0; i < n; ++i) picks.push_back(static_cast<std::size_t>(rs.randint(0, len)));
  }
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size);
  std::vector<SampleRequest> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const BurstGptRow& row = rows[picks[i]];
    std::vector<std::int32_t> ids(static_cast<std::size_t>(row.request_tokens));
    for (std::size_t j = 0; j < ids.size(); ++j) {
      ids[j] =
          static_cast<std::int32_t>((static_cast<std::int64_t>(i) + static_cast<std::int64_t>(j)) % vocab);
    }
    SampleRequest r;
    r.prompt = tok.decode(ids);
    r.prompt_len = row.request_tokens;
    r.output_len = row.response_tokens;
    r.request_id = fmt::format("{}{}", o.request_id_prefix, i);
    out.push_back(std::move(r));
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// spec_bench

std::vector<CustomRow> load_spec_bench_rows(const std::filesystem::path& path,
                                            const std::optional<std::string>& category) {
  std::vector<CustomRow> rows;
  for_each_jsonl_object(path, "spec_bench file", [&](const nlohmann::json& j, std::size_t line_no) {
    if (category) {
      const auto c = j.find("category");
      if (c == j.end() || !c->is_string()) {
        throw std::runtime_error(
            fmt::format("{}: line {}: --spec-bench-category is given but the row has no string \"category\"",
                        path.string(), line_no));
      }
      if (c->get<std::string>() != *category) return;
    }
    const auto t = j.find("turns");
    if (t == j.end() || !t->is_array() || t->empty() || !(*t)[0].is_string()) {
      throw std::runtime_error(fmt::format(
          "{}: line {}: spec_bench needs \"turns\": a non-empty list whose first item is the prompt string",
          path.string(), line_no));
    }
    CustomRow row;
    row.prompt = (*t)[0].get<std::string>();
    row.line = line_no;
    rows.push_back(std::move(row));
  });
  return rows;
}

}  // namespace servelab::dataset::detail
