// servelab/dataset: multi-turn conversations for `bench serve --multi-turn` (each user turn of a
// ShareGPT-form conversation sent with its history), and Mooncake-style trace replay (`--dataset-name
// timed_trace`). Sampling rules are servelab's where vLLM's `vllm bench serve` has none; each is written down
// below and in docs/bench.md.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "servelab/dataset/dataset.h"

namespace servelab::dataset {

/// One user turn and the answer recorded after it in the file.
struct ChatTurn {
  std::string user;    ///< the user's message
  std::string answer;  ///< the recorded assistant answer ("" when the file has none after the last user turn)
  int user_tokens = 0;    ///< tokens of `user` (the caller's counter)
  int answer_tokens = 0;  ///< tokens of `answer`
  int output_len = 0;     ///< requested output length: --sharegpt-output-len, else answer_tokens (≥ 1)
};

/// A conversation of the multi-turn benchmark.
struct ChatConversation {
  std::string id;      ///< the record's id; an oversampled copy gets "<id>#<k>" (k = 1, 2, ...)
  std::string system;  ///< system prompt (a leading "system" turn), "" if none
  int system_tokens = 0;
  std::vector<ChatTurn> turns;
};

/// What sample_conversations takes.
struct MultiTurnOptions {
  int num_conversations = 1000;  ///< --num-prompts: conversations (not turns)
  std::int64_t seed = 0;         ///< Python random.seed for the shuffle and the oversampling
  bool disable_shuffle = false;
  bool no_oversample = false;
  std::optional<int> output_len;  ///< --sharegpt-output-len / --output-len: fixed output_len per turn
  std::optional<int> max_turns;   ///< --multi-turn-max-turns: keep the first N user turns
};

/// The conversations of a ShareGPT-form file (load_conversations) turned into multi-turn chats:
/// roles from `from` ("human"/"user" → user; "gpt"/"chatgpt"/"assistant"/"bard"/"bing"/"model" → assistant;
/// a first "system" turn → system prompt). Turns must alternate user, assistant, user, ...: a conversation is
/// cut before the first turn that breaks the alternation (a second user turn in a row, an unknown role, a
/// system turn later on). A last user turn without an answer is kept only with a fixed output_len. Records
/// left without a turn are dropped. Then vLLM's ShareGPT order: Python random.seed(seed) + random.shuffle of
/// the usable conversations (unless disable_shuffle), the first num_conversations, and when short (unless
/// no_oversample) random.choice copies after re-seeding, as vLLM's maybe_oversample_requests.
/// `count_tokens` counts a message's tokens (bench passes the tokenizer without special tokens).
/// `warnings` (optional) receives how many conversations were cut or dropped and why, and a shortfall.
/// Throws std::runtime_error (path, record, problem) for a malformed file, and when no conversation is
/// usable.
std::vector<ChatConversation> sample_conversations(const std::filesystem::path& path,
                                                   const MultiTurnOptions& options,
                                                   const TokenCountFn& count_tokens,
                                                   std::vector<std::string>* warnings = nullptr);

// ---------------------------------------------------------------------------------------------------------
// Trace replay

/// Tokens per hash block of a Mooncake trace (Mooncake's block size: each id in `hash_ids` stands for 512
/// prompt tokens shared by every request listing it).
inline constexpr int kTraceBlockTokens = 512;

/// One request of a trace, in send order.
struct TraceRequest {
  double timestamp_ms = 0.0;                   ///< the record's `timestamp` (ms from the trace's start)
  std::vector<std::int32_t> prompt_token_ids;  ///< the prompt, sent as a token list
  int output_len = 0;                          ///< `output_length` (or the fixed --output-len)
  std::string request_id;                      ///< request_id_prefix + index in send order
  std::size_t line = 0;                        ///< 1-based line of the record in the file
};

/// What load_trace takes.
struct TraceOptions {
  int num_prompts = 1000;         ///< the first N records of the file (all when the file has fewer)
  std::int64_t seed = 0;          ///< seeds the tokens of every block
  std::optional<int> output_len;  ///< fixed output length instead of `output_length`
  std::string request_id_prefix;
  std::size_t vocab_size = 0;             ///< tokenizer base vocabulary
  std::vector<std::int32_t> special_ids;  ///< never used as prompt tokens
};

/// Token `j` (0-based) of hash block `hash_id`: allowed[mix(seed, hash_id, j) mod |allowed|] where allowed =
/// [0, vocab_size) minus special_ids in ascending order and mix is SplitMix64 over (seed, hash_id, j), so
/// that equal ids give equal blocks in every request, run and machine (servelab's rule: vLLM's timed_trace
/// token choice is not specified). Exposed for tests.
std::int32_t trace_block_token(std::int64_t seed, std::uint64_t hash_id, int j,
                               const std::vector<std::int32_t>& allowed);

/// Reads a Mooncake-style JSONL trace: one object per line with `timestamp` (ms, number ≥ 0), `input_length`
/// (int ≥ 1), `output_length` (int ≥ 1) and `hash_ids` (ints ≥ 0); blank lines are skipped. The prompt of a
/// record is the concatenation of its blocks (trace_block_token), the last one cut to input_length, so
/// requests sharing leading hash ids share that prefix token for token; input_length must satisfy
/// 512·(k−1) < input_length ≤ 512·k for k hash ids. Takes the first num_prompts records, then orders them by
/// timestamp (stable; `warnings` says when the file was not in order). Throws std::runtime_error naming the
/// file, the line and the field for malformed records, and when the file has no record.
std::vector<TraceRequest> load_trace(const std::filesystem::path& path, const TraceOptions& options,
                                     std::vector<std::string>* warnings = nullptr);

}  // namespace servelab::dataset
