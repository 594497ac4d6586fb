// Dataset flags: range-ratio parsing, --input-len/--output-len aliases, validation, oversampling and
// vLLM's sequence filters. No tokenizer here (pure, unit-testable).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <stdexcept>

#include "servelab/dataset/dataset.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset {

namespace {

void check_ratio(double r, std::string_view which, std::string_view text) {
  if (!(r >= 0.0 && r < 1.0)) {
    throw std::runtime_error(
        fmt::format("--random-range-ratio {}: {} ratio {} must be in [0, 1)", text, which, r));
  }
}

bool is_file_dataset(std::string_view name) {
  return name == "sharegpt" || name == "custom" || name == "sonnet" || name == "burstgpt" ||
         name == "spec_bench" || name == "hf";
}

}  // namespace

RangeRatio parse_range_ratio(std::string_view text) {
  RangeRatio out;
  const auto first = text.find_first_not_of(" \t\n");
  if (first != std::string_view::npos && text[first] == '{') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const std::exception& e) {
      throw std::runtime_error(fmt::format("--random-range-ratio {}: invalid JSON: {}", text, e.what()));
    }
    for (const auto& [key, value] : j.items()) {
      if (key != "input" && key != "output") {
        throw std::runtime_error(
            fmt::format("--random-range-ratio {}: unknown key \"{}\" (allowed: input, output)", text, key));
      }
      if (!value.is_number()) {
        throw std::runtime_error(fmt::format("--random-range-ratio {}: \"{}\" must be a number", text, key));
      }
      (key == "input" ? out.input : out.output) = value.get<double>();
    }
  } else {
    std::string s(text);
    std::size_t used = 0;
    double r = 0;
    try {
      r = std::stod(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || s.find_first_not_of(" \t\n", used) != std::string::npos) {
      throw std::runtime_error(fmt::format(
          "--random-range-ratio {}: expected a number or a JSON object {{\"input\": a, \"output\": b}}",
          text));
    }
    out.input = out.output = r;
  }
  check_ratio(out.input, "input", text);
  check_ratio(out.output, "output", text);
  return out;
}

const std::vector<std::string>& supported_dataset_names() {
  static const std::vector<std::string> names = {"sharegpt",   "random",    "prefix_repetition",
                                                 "custom",     "sonnet",    "burstgpt",
                                                 "spec_bench", "random-mm", "hf"};
  return names;
}

std::string default_request_id_prefix() {
  std::random_device rd;
  std::uint32_t v = rd();
  return fmt::format("bench-{:08x}-", v);
}

DatasetOptions resolve_length_aliases(DatasetOptions o) {
  // vLLM 0.13 vllm/benchmarks/serve.py main(): --input-len → random (and sonnet) input length;
  // --output-len → random, sonnet, sharegpt, custom, hf, spec_bench, prefix_repetition output lengths.
  if (o.input_len) {
    o.random_input_len = *o.input_len;
    o.sonnet_input_len = *o.input_len;
  }
  if (o.output_len) {
    o.random_output_len = *o.output_len;
    o.sonnet_output_len = *o.output_len;
    o.spec_bench_output_len = *o.output_len;
    o.hf_output_len = *o.output_len;
    o.sharegpt_output_len = *o.output_len;
    o.custom_output_len = *o.output_len;
    o.prefix_repetition_output_len = *o.output_len;
  }
  return o;
}

void validate_options(const DatasetOptions& o) {
  const auto& names = supported_dataset_names();
  if (std::find(names.begin(), names.end(), o.dataset_name) == names.end()) {
    static const std::set<std::string> known_vllm = {"random-rerank", "custom_audio", "custom_image",
                                                     "speed_bench", "timed_trace"};
    if (known_vllm.count(o.dataset_name)) {
      throw std::runtime_error(fmt::format(
          "--dataset-name {}: a vLLM dataset that servelab does not implement yet (supported: {})",
          o.dataset_name, fmt::join(names, ", ")));
    }
    throw std::runtime_error(fmt::format("--dataset-name {}: unknown dataset (supported: {})", o.dataset_name,
                                         fmt::join(names, ", ")));
  }
  if (o.dataset_path && !is_file_dataset(o.dataset_name)) {
    throw std::runtime_error(fmt::format(
        "--dataset-path {} cannot be used with --dataset-name {} (it generates synthetic prompts); use "
        "a file dataset (sharegpt, custom, sonnet, burstgpt, spec_bench, hf) for a dataset file",
        *o.dataset_path, o.dataset_name));
  }
  if (!o.dataset_path && is_file_dataset(o.dataset_name)) {
    throw std::runtime_error(fmt::format("--dataset-name {} needs --dataset-path", o.dataset_name));
  }
  if (o.num_prompts < 1 && o.dataset_name != "custom") {
    throw std::runtime_error(fmt::format("--num-prompts {} must be >= 1", o.num_prompts));
  }
  auto non_negative = [](int v, std::string_view flag) {
    if (v < 0) throw std::runtime_error(fmt::format("{} {} must be >= 0", flag, v));
  };
  if (o.dataset_name == "random" || o.dataset_name == "random-mm") {
    non_negative(o.random_input_len, "--random-input-len");
    non_negative(o.random_output_len, "--random-output-len");
    non_negative(o.random_prefix_len, "--random-prefix-len");
    check_ratio(o.random_range_ratio.input, "input", "(--random-range-ratio)");
    check_ratio(o.random_range_ratio.output, "output", "(--random-range-ratio)");
    if (o.seed < 0)
      throw std::runtime_error(fmt::format("--seed {}: numpy default_rng needs a seed >= 0", o.seed));
  }
  if (o.dataset_name == "sonnet") {
    non_negative(o.sonnet_input_len, "--sonnet-input-len");
    non_negative(o.sonnet_output_len, "--sonnet-output-len");
    non_negative(o.sonnet_prefix_len, "--sonnet-prefix-len");
  }
  if (o.dataset_name == "hf" && o.hf_output_len && *o.hf_output_len < 1)
    throw std::runtime_error(fmt::format("--hf-output-len {} must be >= 1", *o.hf_output_len));
  if (o.dataset_name == "spec_bench") non_negative(o.spec_bench_output_len, "--spec-bench-output-len");
  if (o.dataset_name == "random-mm") {
    if (o.backend != "openai-chat") {
      throw std::runtime_error(
          fmt::format("Multi-modal content is only supported on 'openai-chat' and 'openai-audio' backends. "
                      "(--dataset-name random-mm with --backend {}; servelab implements openai-chat)",
                      o.backend));
    }
    non_negative(o.random_mm_base_items_per_request, "--random-mm-base-items-per-request");
    if (!(o.random_mm_num_mm_items_range_ratio >= 0.0 && o.random_mm_num_mm_items_range_ratio <= 1.0)) {
      throw std::runtime_error(fmt::format("--random-mm-num-mm-items-range-ratio {}: must be in [0, 1]",
                                           o.random_mm_num_mm_items_range_ratio));
    }
  }
  if (o.dataset_name == "sharegpt" && o.sharegpt_output_len) {
    non_negative(*o.sharegpt_output_len, "--sharegpt-output-len");
  }
  if (o.dataset_name == "custom" && o.custom_output_len < -1) {
    throw std::runtime_error(fmt::format(
        "--custom-output-len {} must be >= 0, or -1 to use each row's output_tokens", o.custom_output_len));
  }
  if (o.dataset_name == "prefix_repetition") {
    non_negative(o.prefix_repetition_prefix_len, "--prefix-repetition-prefix-len");
    non_negative(o.prefix_repetition_suffix_len, "--prefix-repetition-suffix-len");
    non_negative(o.prefix_repetition_output_len, "--prefix-repetition-output-len");
    if (o.prefix_repetition_num_prefixes < 1) {
      throw std::runtime_error(
          fmt::format("--prefix-repetition-num-prefixes {} must be >= 1", o.prefix_repetition_num_prefixes));
    }
    if (o.num_prompts < o.prefix_repetition_num_prefixes) {
      throw std::runtime_error(fmt::format(
          "--num-prompts ({}) must be greater than or equal to --prefix-repetition-num-prefixes ({})",
          o.num_prompts, o.prefix_repetition_num_prefixes));
    }
    if (o.seed < 0 || o.seed > 0xffffffffll) {
      throw std::runtime_error(fmt::format(
          "--seed {}: prefix_repetition seeds numpy's legacy RNG, which needs 0 <= seed < 2^32", o.seed));
    }
  }
}

bool is_valid_sharegpt_sequence(int prompt_len, int output_len, bool skip_min_output_len_check) {
  // vLLM vllm/benchmarks/datasets.py is_valid_sequence(min_len=4, max_prompt_len=1024, max_total_len=2048).
  constexpr int kMinLen = 4, kMaxPromptLen = 1024, kMaxTotalLen = 2048;
  const bool prompt_too_short = prompt_len < kMinLen;
  const bool output_too_short = !skip_min_output_len_check && output_len < kMinLen;
  const bool prompt_too_long = prompt_len > kMaxPromptLen;
  const bool combined_too_long = prompt_len + output_len > kMaxTotalLen;
  return !(prompt_too_short || output_too_short || prompt_too_long || combined_too_long);
}

void oversample(std::vector<SampleRequest>& requests, int num_prompts, std::int64_t seed,
                std::string_view request_id_prefix, bool no_oversample, std::string_view source) {
  if (!no_oversample && static_cast<int>(requests.size()) < num_prompts) {
    if (requests.empty()) {
      throw std::runtime_error(
          fmt::format("{}: no usable request to sample from (0 of {} requested)", source, num_prompts));
    }
    schedule::PythonRandom rng(seed);  // vLLM re-seeds Python's global RNG before random.choice
    const std::size_t base = requests.size();
    const std::size_t needed = static_cast<std::size_t>(num_prompts) - base;
    requests.reserve(base + needed);
    for (std::size_t i = 0; i < needed; ++i) {
      SampleRequest copy = requests[rng.choice_index(base)];  // choice over the original list
      copy.request_id = fmt::format("{}{}", request_id_prefix, base + i);
      copy.oversampled = true;
      requests.push_back(std::move(copy));
    }
  }
  std::set<std::string_view> ids;
  for (const auto& r : requests) {
    if (r.request_id.empty()) continue;
    if (!ids.insert(r.request_id).second) {
      throw std::runtime_error(
          fmt::format("{}: duplicate request_id \"{}\" in the sampled requests", source, r.request_id));
    }
  }
}

RandomLengthRanges random_length_ranges(int input_len, int output_len, RangeRatio ratio,
                                        int num_special_tokens, int prefix_len) {
  check_ratio(ratio.input, "input", "(--random-range-ratio)");
  check_ratio(ratio.output, "output", "(--random-range-ratio)");
  const int real_input_len = std::max(0, input_len - num_special_tokens);
  RandomLengthRanges r;
  r.input_low = static_cast<int>(std::floor(real_input_len * (1.0 - ratio.input)));
  r.input_high = static_cast<int>(std::ceil(real_input_len * (1.0 + ratio.input)));
  r.output_low = std::max(1, static_cast<int>(std::floor(output_len * (1.0 - ratio.output))));
  r.output_high = std::max(1, static_cast<int>(std::ceil(output_len * (1.0 + ratio.output))));
  if (prefix_len + r.input_low < 1) {
    throw std::runtime_error(fmt::format(
        "--random-input-len is too small: with tokenizer special tokens {} and --random-range-ratio {}, the "
        "minimum possible total input tokens (prefix + sampled) is {}. Increase --random-input-len and/or "
        "--random-prefix-len, or decrease --random-range-ratio so that prefix_len + "
        "floor(max(0, random_input_len - num_special) * (1 - range_ratio)) >= 1.",
        num_special_tokens, ratio.input, prefix_len + r.input_low));
  }
  return r;
}

}  // namespace servelab::dataset
