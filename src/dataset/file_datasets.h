// servelab/dataset internals: the file datasets sonnet (vLLM SonnetDataset), burstgpt (BurstGPTDataset) and
// spec_bench (SpecBench), written against plain functions (token counter, chat renderer, TokenizerOps) so
// they can be tested with a fake tokenizer. Not part of the public API (use dataset.h).
// Sources: vLLM 0.13 vllm/benchmarks/datasets.py; the semantics are written down in docs/bench.md.
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dataset/synthetic.h"
#include "servelab/dataset/dataset.h"

namespace servelab::dataset::detail {

/// Renders one user message with the tokenizer's chat template (transformers apply_chat_template(
/// [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=False)).
using RenderChatFn = std::function<std::string(std::string_view)>;

/// Python `open(path, encoding="utf-8").readlines()`: universal newlines (\r\n and \r read as \n), each
/// line keeps its "\n" (the last one may have none). Throws std::runtime_error (path + line) when the file
/// cannot be read, is empty, or is not valid UTF-8.
std::vector<std::string> load_sonnet_lines(const std::filesystem::path& path);

/// vLLM 0.13 SonnetDataset.sample with Python's global `random` seeded by --seed:
///  avg_len = mean over lines of count_tokens(line) (BOS included); base = "Pick as many lines as you can
///  from these poem lines:\n"; base_offset = count_tokens(render_chat(base)); error unless
///  sonnet_input_len > base_offset; num_input_lines = round((input_len - base_offset) / avg_len),
///  num_prefix_lines = max(round((prefix_len - base_offset) / avg_len), 0) (Python round: half to even);
///  prefix = the first num_prefix_lines lines; then until num_prompts are accepted: extra =
///  random.choices(lines, k = num_input_lines - num_prefix_lines) (floor(random() * n) each),
///  prompt = base + prefix + extra, formatted = render_chat(prompt), prompt_len = count_tokens(formatted);
///  accepted iff prompt_len <= sonnet_input_len. Sent prompt: the raw prompt for --backend openai-chat, the
///  formatted one otherwise. Ids prefix + accepted index. vLLM loops forever when no draw fits; servelab
///  stops after max(10000, 100 * num_prompts) draws with an error naming the lengths.
std::vector<SampleRequest> sample_sonnet(const std::vector<std::string>& lines, const DatasetOptions& options,
                                         const TokenCountFn& count_tokens, const RenderChatFn& render_chat,
                                         std::string_view source);

/// One usable BurstGPT row: the 3rd and 4th CSV columns (vLLM reads `data[i][2]`, `data[i][3]` by position:
/// "Request tokens", "Response tokens" in the BurstGPT files).
struct BurstGptRow {
  int request_tokens = 0;
  int response_tokens = 0;
  std::size_t record = 0;  ///< 1-based CSV record number (the header is record 1)
};

/// Reads a BurstGPT CSV (RFC 4180 via libcsv: quotes, "" escapes, CRLF; blank lines skipped, as pandas)
/// and keeps vLLM's rows: Model == "GPT-4" and Response tokens > 0, in file order. Throws
/// std::runtime_error (path + record + column + problem): unreadable file, malformed CSV, no "Model" or
/// "Response tokens" column, fewer than 4 columns, a record with a different number of fields, a token
/// count that is not a non-negative integer.
std::vector<BurstGptRow> load_burstgpt_rows(const std::filesystem::path& path);

/// vLLM 0.13 BurstGPTDataset.sample: pandas DataFrame.sample(n = num_prompts, random_state = seed) —
/// numpy RandomState(seed).permutation(len)[:n] when n <= len, else RandomState(seed).randint(0, len, n)
/// (with replacement; --no-oversample has no effect, as in vLLM); request i gets
/// prompt = decode([(i + j) % vocab_size for j in range(request_tokens)]), prompt_len = request_tokens,
/// output = response_tokens, id prefix + i. Throws std::runtime_error naming `source` when no row is usable.
std::vector<SampleRequest> sample_burstgpt(const std::vector<BurstGptRow>& rows,
                                           const DatasetOptions& options, const TokenizerOps& tok,
                                           std::string_view source);

/// Reads a Spec-Bench question.jsonl (vLLM SpecBench.load_data, pd.read_json(lines=True)): one JSON object
/// per non-blank line; keeps rows whose "category" equals `category` (all rows when absent); the prompt is
/// turns[0]. Returned as custom rows (no output_tokens). Throws std::runtime_error (path + line + problem):
/// invalid JSON, not an object, "turns" not a non-empty list starting with a string, "category" missing or
/// not a string while --spec-bench-category is given.
std::vector<CustomRow> load_spec_bench_rows(const std::filesystem::path& path,
                                            const std::optional<std::string>& category);

}  // namespace servelab::dataset::detail
