// servelab/dataset internals: the synthetic-prompt datasets (random, prefix_repetition) and the custom JSONL
// dataset, written against a small tokenizer interface so they can be tested with a fake tokenizer.
// Not part of the public API (use dataset.h).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "servelab/dataset/dataset.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset::detail {

/// What the samplers need from a tokenizer (HF semantics; see tokenizer/tokenizer.h).
struct TokenizerOps {
  /// encode(text, add_special_tokens)
  std::function<std::vector<std::int32_t>(std::string_view, bool)> encode;
  /// decode(ids) with skip_special_tokens=false (HF default)
  std::function<std::string(const std::vector<std::int32_t>&)> decode;
  std::size_t vocab_size = 0;                 ///< base vocabulary (HF tokenizer.vocab_size)
  std::size_t num_special_tokens_to_add = 0;  ///< HF num_special_tokens_to_add()
  std::vector<std::int32_t> special_ids;      ///< HF all_special_ids
};

/// Result of vLLM's gen_prompt_decode_to_target_len.
struct DecodedPrompt {
  std::string text;                  ///< the last decoded text
  std::vector<std::int32_t> tokens;  ///< encode(text, add_special_tokens=false)
  int token_mismatch = 0;            ///< len(tokens) - target when retries ran out, else 0
};

/// vLLM gen_prompt_decode_to_target_len(max_retry=10): loop { text = decode(tokens); tokens = encode(text,
/// false); stop when retries are exhausted (recording the mismatch) or len == target; shorter → append
/// draw_extra(deficit) (ids over the full vocabulary); longer → truncate to target }.
DecodedPrompt decode_to_target_len(const TokenizerOps& tok, std::vector<std::int32_t> tokens, int target,
                                   const std::function<std::vector<std::int32_t>(std::size_t)>& draw_extra,
                                   int max_retry = 10);

/// Called by sample_random right after request i's prompt is final, with the dataset's generator (vLLM
/// RandomMultiModalDataset draws request i's multimodal items there, before request i + 1's fix-up).
using AfterRandomRequestFn =
    std::function<void(std::size_t index, schedule::NumpyGenerator& rng, SampleRequest& request)>;

/// vLLM RandomDataset.sample (numpy default_rng(seed) reproduced bit-exactly; see rng.h).
/// `token_mismatch_total` receives the sum of fixer mismatches (vLLM's warning). The excluded ids are
/// `tok.special_ids` (random: transformers all_special_ids; random-mm: the special added tokens).
std::vector<SampleRequest> sample_random(const DatasetOptions& options, const TokenizerOps& tok,
                                         long long* token_mismatch_total,
                                         const AfterRandomRequestFn& after_request = {});

/// vLLM PrefixRepetitionRandomDataset.sample (legacy np.random + Python random seeded with `seed`).
/// Request i of prefix p: N/P requests per prefix plus one for the first N%P prefixes (the newest vLLM;
/// 0.13 silently returned only P*(N/P) requests). Requests carry no request id.
std::vector<SampleRequest> sample_prefix_repetition(const DatasetOptions& options, const TokenizerOps& tok,
                                                    long long* token_mismatch_total);

/// One row of a custom JSONL file.
struct CustomRow {
  std::string prompt;
  std::optional<int> output_tokens;  ///< present and valid "output_tokens"
  std::string output_tokens_error;   ///< why "output_tokens" is unusable (empty when fine or absent)
  bool has_output_tokens = false;
  std::size_t line = 0;  ///< 1-based line number in the file
};

/// Reads a custom JSONL file: one JSON object per non-blank line with a string "prompt" and optional
/// "output_tokens". Throws std::runtime_error (path + line + problem).
std::vector<CustomRow> load_custom_rows(const std::filesystem::path& path);

/// vLLM CustomDataset.sample: rows shuffled with Python random.seed(0) (vLLM 0.13 does not pass --seed to
/// CustomDataset) unless disable_shuffle; num_prompts <= 0 takes all rows; output = custom_output_len, or
/// the row's output_tokens when it is -1; prompt = render_chat(prompt) unless skip_chat_template;
/// prompt_len = count_tokens(prompt) (with BOS); ids prefix + row position; then oversample (seed 0).
std::vector<SampleRequest> sample_custom(const std::vector<CustomRow>& rows, const DatasetOptions& options,
                                         const TokenCountFn& count_tokens,
                                         const std::function<std::string(std::string_view)>& render_chat,
                                         std::string_view source);

}  // namespace servelab::dataset::detail
