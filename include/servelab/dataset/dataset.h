// servelab/dataset: the workload datasets of `servelab bench serve` — vLLM `vllm bench serve` datasets
// (`--dataset-name sharegpt | random | prefix_repetition | custom | sonnet | burstgpt | spec_bench |
// random-mm | hf`) with vLLM 0.13's sampling rules (docs/bench.md "Datasets" writes them down).
// Spec: shared/reference/vllm-bench-serve.md §2 (vLLM vllm/benchmarks/datasets.py). Where the newest vLLM
// differs from 0.13 the doc comment says which one is followed and why.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace servelab::tokenizer {
class Tokenizer;
}

namespace servelab::dataset {

/// One benchmark request, as vLLM's `SampleRequest`.
struct SampleRequest {
  /// Prompt text sent as-is to /v1/completions (with openai-chat it becomes one user message).
  std::string prompt;
  /// Client-side prompt length in tokens (sharegpt/custom: with BOS, add_special_tokens=true;
  /// random/prefix_repetition: the text tokens without BOS, as vLLM counts them).
  int prompt_len = 0;
  /// Requested output length in tokens (sent as max_tokens / max_completion_tokens).
  int output_len = 0;
  /// Requests of one group (>= 0) begin with the same `shared_prefix_len` tokens by the dataset's
  /// construction (prefix_repetition's prefixes, random's --random-prefix-len); -1: none known.
  int prefix_group = -1;
  int shared_prefix_len = 0;  ///< tokens
  /// `--request-id-prefix` + index (sent as x-request-id). Empty means "no request id" (vLLM gives
  /// prefix_repetition requests none).
  std::string request_id;
  /// A copy `oversample` made of another request to reach num_prompts (vLLM's random.choice).
  bool oversampled = false;
  /// Multimodal items (random-mm): `data:image/jpeg;base64,...` URLs, sent after the text part of the
  /// chat message as `{"type": "image_url", "image_url": {"url": ...}}` (vLLM's openai-chat request).
  std::vector<std::string> image_urls;
};

/// The openai-chat `messages` JSON of a request with multimodal items, as vLLM's chat request builds it:
/// `[{"role": "user", "content": [{"type": "text", "text": prompt}, {"type": "image_url", "image_url":
/// {"url": ...}}, ...]}]` (compact JSON). Empty when the request has no items. Throws
/// std::invalid_argument for a URL holding a character JSON must escape (a base64 data URL never does).
std::string multimodal_messages_json(const SampleRequest& request);

/// One `--random-mm-bucket-config` entry: an item shape and its probability (vLLM RandomMultiModalDataset;
/// num_frames 1 = image, > 1 = video).
struct MultiModalBucket {
  int height = 0;      ///< pixels
  int width = 0;       ///< pixels
  int num_frames = 1;  ///< 1 = image
  double probability = 0.0;
};

/// Parses `--random-mm-bucket-config`: a Python dict literal with (H, W, T) tuple keys, e.g.
/// `{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}` (keys may also be quoted, "(256, 256, 1)", as JSON allows).
/// Entries keep their order. Throws std::runtime_error naming the flag and the problem.
std::vector<MultiModalBucket> parse_mm_bucket_config(std::string_view text);

/// Parses `--random-mm-limit-mm-per-prompt`: a JSON object modality → max items, e.g.
/// `{"image": 255, "video": 1}`. Throws std::runtime_error naming the flag and the problem.
std::vector<std::pair<std::string, int>> parse_mm_limit_per_prompt(std::string_view text);

/// `--random-range-ratio`: a float r (both ranges) or JSON `{"input": a, "output": b}`; each in [0, 1).
struct RangeRatio {
  double input = 0.0;
  double output = 0.0;
};

/// Parses `--random-range-ratio` text: "0.25" or `{"input": 0.1, "output": 0.5}` (a missing key is 0).
/// Throws std::runtime_error naming the flag and the value when malformed or outside [0, 1).
RangeRatio parse_range_ratio(std::string_view text);

/// Every vLLM dataset flag (defaults of vLLM 0.13 `vllm bench serve`).
struct DatasetOptions {
  std::string dataset_name = "random";      ///< --dataset-name
  std::optional<std::string> dataset_path;  ///< --dataset-path (file)
  int num_prompts = 1000;                   ///< --num-prompts
  std::int64_t seed = 0;                    ///< --seed (Python random.seed / numpy default_rng)
  /// --input-len / --output-len: general aliases; `resolve_length_aliases` maps them onto the
  /// dataset-specific fields as vLLM 0.13 does (input → random_input_len; output → random, sharegpt,
  /// custom, prefix_repetition output lengths).
  std::optional<int> input_len;
  std::optional<int> output_len;
  int random_input_len = 1024;             ///< tokens, including the tokenizer's special tokens
  int random_output_len = 128;             ///< tokens
  RangeRatio random_range_ratio;           ///< --random-range-ratio
  int random_prefix_len = 0;               ///< tokens of shared prefix, on top of the sampled length
  std::optional<int> sharegpt_output_len;  ///< fixed output length (disables the output≥4 filter)
  int custom_output_len = 256;             ///< tokens; -1 = per-row "output_tokens"
  bool skip_chat_template = false;         ///< custom: send the raw prompt (no chat template)
  /// --tokenizer-mode (vLLM 0.13): "deepseek_v32" renders chat prompts with DeepSeek-V3.2's encoding
  /// (chat/chat.h, vLLM's DeepseekV32Tokenizer) instead of tokenizer_config.json's chat_template;
  /// "auto"/"slow" use the template (one tokenizer.json either way).
  std::string tokenizer_mode = "auto";
  int prefix_repetition_prefix_len = 256;  ///< tokens
  int prefix_repetition_suffix_len = 256;  ///< tokens
  int prefix_repetition_num_prefixes = 10;
  int prefix_repetition_output_len = 128;  ///< tokens
  int sonnet_input_len = 550;              ///< tokens of the chat-formatted prompt (upper bound)
  int sonnet_output_len = 150;             ///< tokens
  int sonnet_prefix_len = 200;             ///< tokens of the shared prefix (base prompt + first lines)
  int spec_bench_output_len = 256;         ///< tokens
  std::optional<std::string> spec_bench_category;  ///< only rows of this "category"
  int random_mm_base_items_per_request = 1;
  double random_mm_num_mm_items_range_ratio = 0.0;  ///< in [0, 1]
  /// modality → max items per prompt (vLLM default {"image": 255, "video": 1}), in the given order.
  std::vector<std::pair<std::string, int>> random_mm_limit_mm_per_prompt = {{"image", 255}, {"video", 1}};
  /// vLLM default {(256, 256, 1): 0.5, (720, 1280, 1): 0.5, (720, 1280, 16): 0.0}.
  std::vector<MultiModalBucket> random_mm_bucket_config = {
      {256, 256, 1, 0.5}, {720, 1280, 1, 0.5}, {720, 1280, 16, 0.0}};
  std::optional<std::string> hf_subset;  ///< --hf-subset (a folder of that name in the dataset)
  std::optional<std::string> hf_split;   ///< --hf-split
  std::optional<std::string> hf_name;    ///< --hf-name: the HF id when --dataset-path is a local folder
  std::optional<int> hf_output_len;      ///< --hf-output-len (tokens)
  bool no_stream = false;                ///< --no-stream (hf: full-permutation shuffle, not HF's buffer)
  /// --backend: sonnet sends the raw prompt to openai-chat and the chat-formatted one otherwise;
  /// random-mm needs openai-chat.
  std::string backend = "openai";
  bool no_oversample = false;    ///< --no-oversample
  bool disable_shuffle = false;  ///< --disable-shuffle
  /// --request-id-prefix. vLLM's default is "bench-<8 random hex>-"; see default_request_id_prefix().
  std::string request_id_prefix;
};

/// The dataset names `sample_requests` supports.
const std::vector<std::string>& supported_dataset_names();

/// vLLM's default request-id prefix: "bench-" + 8 random lowercase hex digits + "-" (uuid4().hex[:8]).
std::string default_request_id_prefix();

/// Returns `options` with --input-len/--output-len mapped onto the dataset-specific fields (vLLM 0.13
/// `vllm bench serve` main). Idempotent.
DatasetOptions resolve_length_aliases(DatasetOptions options);

/// Checks flag combinations and ranges before any file is read. Throws std::runtime_error naming the
/// flag(s): unknown/unsupported dataset name, --dataset-path with random/prefix_repetition, a file dataset
/// without --dataset-path, num_prompts < 1 (custom allows ≤ 0 = all rows), negative lengths, a range ratio
/// outside [0, 1), prefix_repetition with num_prompts < num_prefixes, custom_output_len < -1.
void validate_options(const DatasetOptions& options);

/// Builds the benchmark requests: resolve_length_aliases + validate_options + the dataset's sampler.
///  - sharegpt: see sample_sharegpt (bit-exact vLLM selection given an exact tokenizer).
///  - random: numpy default_rng(seed) draws bit-exact (input lens, output lens, offsets, prefix, fix-up
///    extras); allowed ids = [0, vocab_size) minus Tokenizer::all_special_ids() (transformers
///    all_special_ids, as vLLM); prompt_len = re-encoded length without BOS; the shared prefix goes through
///    the fix-up once (newest vLLM, spec §2.2).
///  - prefix_repetition: legacy np.random / Python random seeded with `seed` (0 <= seed < 2^32);
///    N/P prompts per prefix plus one for the first N%P prefixes, so exactly N (newest vLLM; 0.13 silently
///    dropped the remainder); prompt_len = prefix_len + suffix_len; no request ids.
///  - custom: JSONL rows {"prompt", "output_tokens"?}; shuffled with Python random.seed(0) whatever
///    --seed is (vLLM 0.13 builds CustomDataset without the seed); the chat template is applied unless
///    skip_chat_template (only the DeepSeek-V3 template is rendered; others need --skip-chat-template).
/// Same options and tokenizer → the same requests on every run and machine.
/// Throws std::runtime_error with the file path, record index and problem for a malformed dataset, the
/// flag for a bad combination, and a clear message when no usable record remains.
/// `warnings` (optional) receives vLLM's logged warnings (random/prefix_repetition total token mismatch
/// after the decode/re-encode fix-up; sharegpt short of num_prompts with --no-oversample) and its
/// "Oversampled requests to reach N total samples" (with how many are copies).
/// Thread-safety: reentrant (no global state; each call owns its RNGs).
std::vector<SampleRequest> sample_requests(const DatasetOptions& options,
                                           const tokenizer::Tokenizer& tokenizer,
                                           std::vector<std::string>* warnings = nullptr);

// ---------------------------------------------------------------------------------------------------------
// ShareGPT (vLLM ShareGPTDataset)

namespace detail {
struct ShareGptStorage;
}

/// A ShareGPT file loaded with simdjson on-demand, holding only records with a `conversations` array of
/// ≥ 2 items (vLLM's filter), in file order. Only positions of conversations[0].value and
/// conversations[1].value are kept; their text is unescaped on access (so loading never copies the text).
/// Value type, cheap to copy (shared immutable storage).
/// Thread-safety: immutable after load; const member functions may be called from any thread.
class ShareGptFile {
 public:
  const std::filesystem::path& path() const;
  /// Top-level array elements in the file.
  std::size_t num_records() const;
  /// Usable records (conversations with ≥ 2 turns).
  std::size_t size() const;
  /// Index in the file's top-level array of usable record `i`.
  std::size_t record_index(std::size_t i) const;
  /// conversations[0].value / conversations[1].value of usable record `i`, JSON-unescaped. A lone UTF-16
  /// surrogate escape (which Python keeps but no tokenizer accepts) becomes U+FFFD. Throws
  /// std::runtime_error (path + record index) for an invalid escape.
  std::string prompt(std::size_t i) const;
  std::string completion(std::size_t i) const;

  std::shared_ptr<const detail::ShareGptStorage> storage;
};

/// Loads a ShareGPT JSON file (top-level array of {"conversations": [{"value": str, ...}, ...], ...}).
/// Records without `conversations` or with fewer than 2 turns are skipped (as vLLM does).
/// simdjson on-demand validates the structure and UTF-8 of the whole file, but scalars it skips (other
/// keys, turns after the second) are not checked, so a typo such as `tru` there loads where Python's
/// json.load would fail. `image` / `video` keys (vLLM's multimodal ShareGPT) are ignored: text only.
/// Throws std::runtime_error (path + record index + problem): unreadable file, invalid JSON, top level not
/// an array, a record that is not an object, `conversations` not an array, turn 0/1 not an object or with
/// a missing / non-string `value`.
ShareGptFile load_sharegpt_file(const std::filesystem::path& path);

/// Counts tokens of a text (for ShareGPT/custom: HF `len(tokenizer(text).input_ids)`, BOS included).
using TokenCountFn = std::function<int(std::string_view)>;

/// vLLM ShareGPTDataset.sample over a loaded file: Python `random.seed(seed)` + `random.shuffle` of the
/// usable records (unless disable_shuffle), then in that order accept while fewer than num_prompts:
/// prompt_len = count(prompt), output = sharegpt_output_len or count(completion); keep iff prompt_len ≥ 4,
/// output ≥ 4 (skipped with a fixed output length), prompt_len ≤ 1024, prompt_len + output ≤ 2048.
/// Ids are request_id_prefix + accepted index. Then oversample (see `oversample`).
/// Throws std::runtime_error naming the file and the rule when zero usable records remain.
std::vector<SampleRequest> sample_sharegpt(const ShareGptFile& file, const DatasetOptions& options,
                                           const TokenCountFn& count_tokens);

/// vLLM `is_valid_sequence` (min 4, max prompt 1024, max total 2048).
bool is_valid_sharegpt_sequence(int prompt_len, int output_len, bool skip_min_output_len_check);

/// vLLM `maybe_oversample_requests`: when fewer than num_prompts requests exist and !no_oversample,
/// Python `random.seed(seed)` then `random.choice` copies existing requests, giving each the id
/// request_id_prefix + (old size + i). Throws std::runtime_error when `requests` is empty (nothing to
/// choose from; `source` names the dataset/file for the message) or when ids end up duplicated.
void oversample(std::vector<SampleRequest>& requests, int num_prompts, std::int64_t seed,
                std::string_view request_id_prefix, bool no_oversample, std::string_view source);

// ---------------------------------------------------------------------------------------------------------
// Random (vLLM RandomDataset, newest algorithm = 0.13's)

/// Inclusive token-length ranges of the random dataset (vLLM RandomDataset.get_sampling_params):
/// real_input_len = max(0, input_len - num_special_tokens);
/// input [floor(real*(1-r_in)), ceil(real*(1+r_in))]; output [max(1, floor(out*(1-r_out))),
/// max(1, ceil(out*(1+r_out)))]. Throws std::runtime_error when prefix_len + input_low < 1 (vLLM's
/// "--random-input-len is too small") or a ratio is outside [0, 1).
struct RandomLengthRanges {
  int input_low = 0, input_high = 0, output_low = 0, output_high = 0;
};
RandomLengthRanges random_length_ranges(int input_len, int output_len, RangeRatio ratio,
                                        int num_special_tokens, int prefix_len);

// ---------------------------------------------------------------------------------------------------------
// Other real conversations in ShareGPT form (for the engine twin's real reply lengths)

/// One turn of a conversation: `from` is "human" / "gpt" / "system" (as in the file); `value` its text.
struct ConversationTurn {
  std::string from;
  std::string value;
};

/// One ShareGPT-form conversation. `id` is the record's "id", else "conversation_id", else its index.
struct Conversation {
  std::string id;
  std::vector<ConversationTurn> turns;
};

/// Loads every record of a ShareGPT-form file (all turns). Throws std::runtime_error (path + record index
/// + problem) for malformed records (non-object record, `conversations` missing or not an array, a turn
/// without string `from`/`value`).
std::vector<Conversation> load_conversations(const std::filesystem::path& path);

/// All `*.sharegpt.json` files in `dir` (default: common::data_dir()), sorted by name. Throws
/// std::runtime_error naming `dir` when it does not exist.
std::vector<std::filesystem::path> find_sharegpt_files(const std::filesystem::path& dir);
std::vector<std::filesystem::path> find_sharegpt_files();

/// Token lengths of one human→gpt exchange: the human turn (prompt) and the gpt turn right after it
/// (the real reply). Lengths are HF `len(tokenizer(text).input_ids)` (add_special_tokens=true, like
/// vLLM's ShareGPT lengths).
struct ExchangeLengths {
  std::string conversation_id;
  int turn_index = 0;  ///< index of the human turn in the conversation
  int prompt_len = 0;  ///< tokens
  int reply_len = 0;   ///< tokens
};

/// Every adjacent (human, gpt) pair of every conversation, in order.
std::vector<ExchangeLengths> exchange_lengths(const std::vector<Conversation>& conversations,
                                              const tokenizer::Tokenizer& tokenizer);

}  // namespace servelab::dataset
