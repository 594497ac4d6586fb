// random, prefix_repetition and custom datasets over a TokenizerOps (see synthetic.h).
#include "dataset/synthetic.h"

#include "dataset/jsonl.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <stdexcept>
#include <thread>

#include "servelab/schedule/rng.h"

namespace servelab::dataset::detail {

namespace {

/// The fix-up loop of decode_to_target_len from the state right after a decode + encode: `text` and its
/// encoding `tokens`, with `remain` retries left.
DecodedPrompt continue_fix(const TokenizerOps& tok, std::string text, std::vector<std::int32_t> tokens,
                           int target,
                           const std::function<std::vector<std::int32_t>(std::size_t)>& draw_extra,
                           int remain) {
  DecodedPrompt out;
  while (true) {
    const int len = static_cast<int>(tokens.size());
    if (remain <= 0) {
      if (len != target) out.token_mismatch = len - target;
      break;
    }
    if (len == target) break;
    if (len < target) {
      const std::vector<std::int32_t> extra = draw_extra(static_cast<std::size_t>(target - len));
      tokens.insert(tokens.end(), extra.begin(), extra.end());
    } else {
      tokens.resize(static_cast<std::size_t>(target));
    }
    --remain;
    text = tok.decode(tokens);
    tokens = tok.encode(text, false);
  }
  out.text = std::move(text);
  out.tokens = std::move(tokens);
  return out;
}

/// Runs fn(i) for i in [0, n) on up to hardware_concurrency threads. fn must be thread-safe.
void parallel_for(std::size_t n, const std::function<void(std::size_t)>& fn) {
  const std::size_t threads = std::min<std::size_t>(std::max(1u, std::thread::hardware_concurrency()), n);
  if (threads <= 1) {
    for (std::size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto worker = [&] {
    for (std::size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace

DecodedPrompt decode_to_target_len(const TokenizerOps& tok, std::vector<std::int32_t> tokens, int target,
                                   const std::function<std::vector<std::int32_t>(std::size_t)>& draw_extra,
                                   int max_retry) {
  std::string text = tok.decode(tokens);
  std::vector<std::int32_t> encoded = tok.encode(text, false);
  return continue_fix(tok, std::move(text), std::move(encoded), target, draw_extra, max_retry);
}

std::vector<SampleRequest> sample_random(const DatasetOptions& o, const TokenizerOps& tok,
                                         long long* token_mismatch_total,
                                         const AfterRandomRequestFn& after_request) {
  const int num_special = static_cast<int>(tok.num_special_tokens_to_add);
  const RandomLengthRanges ranges = random_length_ranges(
      o.random_input_len, o.random_output_len, o.random_range_ratio, num_special, o.random_prefix_len);
  if (tok.vocab_size == 0) throw std::runtime_error("random dataset: the tokenizer has an empty vocabulary");
  const auto n = static_cast<std::size_t>(o.num_prompts);
  schedule::NumpyGenerator rng(static_cast<std::uint64_t>(o.seed));
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size);
  const std::vector<std::int64_t> input_lens = rng.integers(ranges.input_low, ranges.input_high + 1LL, n);
  const std::vector<std::int64_t> output_lens = rng.integers(ranges.output_low, ranges.output_high + 1LL, n);
  const std::vector<std::int64_t> offsets = rng.integers(0, vocab, n);

  // allowed = sorted(set(range(vocab_size)) - set(all_special_ids))
  const std::set<std::int32_t> special(tok.special_ids.begin(), tok.special_ids.end());
  std::vector<std::int32_t> allowed;
  allowed.reserve(tok.vocab_size);
  for (std::int32_t id = 0; id < static_cast<std::int32_t>(tok.vocab_size); ++id) {
    if (!special.count(id)) allowed.push_back(id);
  }
  if (allowed.empty()) throw std::runtime_error("random dataset: every vocabulary id is a special token");
  const auto n_allowed = static_cast<std::int64_t>(allowed.size());
  auto draw_extra = [&](std::size_t count) {
    std::vector<std::int32_t> extra;
    extra.reserve(count);
    for (std::size_t k = 0; k < count; ++k)
      extra.push_back(static_cast<std::int32_t>(rng.integers(0, vocab)));
    return extra;
  };
  long long mismatch = 0;
  std::vector<std::int32_t> prefix;
  if (o.random_prefix_len > 0) {
    for (std::int64_t idx : rng.integers(0, n_allowed, static_cast<std::size_t>(o.random_prefix_len))) {
      prefix.push_back(allowed[static_cast<std::size_t>(idx)]);
    }
    DecodedPrompt fixed = decode_to_target_len(tok, prefix, o.random_prefix_len, draw_extra);
    mismatch += fixed.token_mismatch;
    prefix = std::move(fixed.tokens);
  }
  // First decode + encode of every prompt in parallel (it draws no random numbers); then, in request
  // order, the rest of the fix-up for the prompts that missed their length (those draw from `rng`, so the
  // order — and the result — is exactly the serial algorithm's).
  struct FirstPass {
    std::string text;
    std::vector<std::int32_t> tokens;
  };
  std::vector<FirstPass> first(n);
  parallel_for(n, [&](std::size_t i) {
    std::vector<std::int32_t> tokens = prefix;
    const std::int64_t input_len = input_lens[i];
    tokens.reserve(prefix.size() + static_cast<std::size_t>(input_len));
    for (std::int64_t j = 0; j < input_len; ++j) {
      const std::int64_t k = (offsets[i] + static_cast<std::int64_t>(i) + j) % n_allowed;
      tokens.push_back(allowed[static_cast<std::size_t>(k)]);
    }
    first[i].text = tok.decode(tokens);
    first[i].tokens = tok.encode(first[i].text, false);
  });
  std::vector<SampleRequest> requests;
  requests.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int target = o.random_prefix_len + static_cast<int>(input_lens[i]);
    DecodedPrompt fixed =
        continue_fix(tok, std::move(first[i].text), std::move(first[i].tokens), target, draw_extra, 10);
    mismatch += fixed.token_mismatch;
    SampleRequest r;
    r.prompt = std::move(fixed.text);
    r.prompt_len = static_cast<int>(fixed.tokens.size());
    r.output_len = static_cast<int>(output_lens[i]);
    r.request_id = fmt::format("{}{}", o.request_id_prefix, i);
    if (!prefix.empty()) r.prefix_group = 0, r.shared_prefix_len = static_cast<int>(prefix.size());
    if (after_request) after_request(i, rng, r);
    requests.push_back(std::move(r));
  }
  if (token_mismatch_total) *token_mismatch_total = mismatch;
  return requests;
}

std::vector<SampleRequest> sample_prefix_repetition(const DatasetOptions& o, const TokenizerOps& tok,
                                                    long long* token_mismatch_total) {
  const int num_prefixes = o.prefix_repetition_num_prefixes;
  if (num_prefixes < 1 || o.num_prompts < num_prefixes) {
    throw std::runtime_error(fmt::format(
        "--num-prompts ({}) must be greater than or equal to --prefix-repetition-num-prefixes ({})",
        o.num_prompts, num_prefixes));
  }
  if (tok.vocab_size == 0)
    throw std::runtime_error("prefix_repetition: the tokenizer has an empty vocabulary");
  // vLLM: random.seed(seed); np.random.seed(seed) in the dataset's constructor.
  schedule::NumpyRandomState np_rng(static_cast<std::uint32_t>(o.seed));
  schedule::PythonRandom py_rng(o.seed);
  const auto vocab = static_cast<std::int64_t>(tok.vocab_size);
  auto draw = [&](std::size_t count) {
    std::vector<std::int32_t> v;
    v.reserve(count);
    for (std::size_t k = 0; k < count; ++k) v.push_back(static_cast<std::int32_t>(np_rng.randint(0, vocab)));
    return v;
  };
  long long mismatch = 0;
  auto exact_length_tokens = [&](int target) {
    DecodedPrompt fixed = decode_to_target_len(tok, draw(static_cast<std::size_t>(target)), target, draw);
    mismatch += fixed.token_mismatch;
    return std::move(fixed.tokens);
  };
  const int per_prefix = o.num_prompts / num_prefixes;
  const int remainder = o.num_prompts % num_prefixes;
  std::vector<SampleRequest> requests;
  requests.reserve(static_cast<std::size_t>(o.num_prompts));
  for (int p = 0; p < num_prefixes; ++p) {
    const std::vector<std::int32_t> prefix = exact_length_tokens(o.prefix_repetition_prefix_len);
    const int count = per_prefix + (p < remainder ? 1 : 0);
    for (int k = 0; k < count; ++k) {
      std::vector<std::int32_t> combined = prefix;
      const std::vector<std::int32_t> suffix = exact_length_tokens(o.prefix_repetition_suffix_len);
      combined.insert(combined.end(), suffix.begin(), suffix.end());
      SampleRequest r;
      r.prompt = tok.decode(combined);
      r.prompt_len = static_cast<int>(combined.size());
      r.output_len = o.prefix_repetition_output_len;
      r.prefix_group = p;
      r.shared_prefix_len = static_cast<int>(prefix.size());
      requests.push_back(std::move(r));
    }
  }
  py_rng.shuffle(requests);
  if (token_mismatch_total) *token_mismatch_total = mismatch;
  return requests;
}

std::vector<CustomRow> load_custom_rows(const std::filesystem::path& path) {
  std::vector<CustomRow> rows;
  for_each_jsonl_object(path, "custom dataset file", [&](const nlohmann::json& j, std::size_t line_no) {
    auto it = j.find("prompt");
    if (it == j.end() || !it->is_string()) {
      throw std::runtime_error(fmt::format(
          "{}: line {}: the custom dataset needs a string \"prompt\" in every row", path.string(), line_no));
    }
    CustomRow row;
    row.prompt = it->get<std::string>();
    row.line = line_no;
    auto ot = j.find("output_tokens");
    if (ot != j.end() && !ot->is_null()) {
      row.has_output_tokens = true;
      std::optional<long long> v;
      if (ot->is_number_integer()) {
        v = ot->get<long long>();
      } else if (ot->is_number_float()) {
        const double d = ot->get<double>();
        // In the range of an int first: a cast of 2.2e25 to long long is undefined (fuzz finding, an
        // integer too long for JSON's int64 is read as a double).
        if (std::isfinite(d) && d == std::floor(d) && d >= -1.0 && d <= 2147483647.0)
          v = static_cast<long long>(d);
      } else if (ot->is_string()) {
        const std::string s = ot->get<std::string>();
        std::size_t used = 0;
        try {
          const long long parsed = std::stoll(s, &used);
          if (used == s.size()) v = parsed;
        } catch (const std::exception&) {
        }
      }
      if (v && *v >= 0 && *v <= 0x7fffffff) {
        row.output_tokens = static_cast<int>(*v);
      } else {
        row.output_tokens_error =
            fmt::format("invalid \"output_tokens\" {}: must be a non-negative integer", ot->dump());
      }
    }
    rows.push_back(std::move(row));
  });
  return rows;
}

std::vector<SampleRequest> sample_custom(const std::vector<CustomRow>& rows, const DatasetOptions& o,
                                         const TokenCountFn& count_tokens,
                                         const std::function<std::string(std::string_view)>& render_chat,
                                         std::string_view source) {
  constexpr std::int64_t kCustomSeed = 0;  // vLLM 0.13 builds CustomDataset without random_seed
  std::vector<std::size_t> order(rows.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (!o.disable_shuffle) {
    schedule::PythonRandom rng(kCustomSeed);
    rng.shuffle(order);
  }
  const std::size_t wanted = o.num_prompts <= 0 ? rows.size() : static_cast<std::size_t>(o.num_prompts);
  std::vector<SampleRequest> out;
  out.reserve(wanted);
  for (std::size_t i = 0; i < order.size() && out.size() < wanted; ++i) {
    const CustomRow& row = rows[order[i]];
    int output_len = o.custom_output_len;
    if (output_len == -1) {
      if (!row.has_output_tokens) {
        throw std::runtime_error(
            fmt::format("{}: line {}: --custom-output-len -1 needs an \"output_tokens\" field in every row",
                        source, row.line));
      }
      if (!row.output_tokens)
        throw std::runtime_error(fmt::format("{}: line {}: {}", source, row.line, row.output_tokens_error));
      output_len = *row.output_tokens;
    }
    SampleRequest r;
    r.prompt = o.skip_chat_template ? row.prompt : render_chat(row.prompt);
    r.prompt_len = count_tokens(r.prompt);
    r.output_len = output_len;
    r.request_id = fmt::format("{}{}", o.request_id_prefix, i);
    out.push_back(std::move(r));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: the custom dataset has no rows", source));
  const int target = o.num_prompts <= 0 ? static_cast<int>(out.size()) : o.num_prompts;
  oversample(out, target, kCustomSeed, o.request_id_prefix, o.no_oversample, source);
  return out;
}

}  // namespace servelab::dataset::detail
