// sample_requests(): dispatch to the dataset samplers with a real tokenizer; custom-dataset chat rendering;
// exchange lengths of real conversations.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "dataset/file_datasets.h"
#include "dataset/hf.h"
#include "dataset/random_mm.h"
#include "dataset/synthetic.h"
#include "servelab/chat/chat.h"
#include "servelab/dataset/dataset.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::dataset {

namespace {

detail::TokenizerOps make_ops(const tokenizer::Tokenizer& tok) {
  detail::TokenizerOps ops;
  ops.encode = [&tok](std::string_view text, bool add_special) { return tok.encode(text, add_special); };
  ops.decode = [&tok](const std::vector<std::int32_t>& ids) { return tok.decode(ids, false); };
  ops.vocab_size = tok.vocab_size();
  ops.num_special_tokens_to_add = tok.num_special_tokens_to_add();
  ops.special_ids = tok.all_special_ids();
  return ops;
}

/// Whether `tok` is DeepSeek's (its vocabulary has the "<｜User｜>" marker of the V3 / V3.2 encodings).
bool has_deepseek_markers(const tokenizer::Tokenizer& tok) {
  return tok.token_to_id("<\xEF\xBD\x9CUser\xEF\xBD\x9C>").has_value();
}

/// transformers apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
/// tokenize=False) for the templates servelab can render without a Jinja engine; with --tokenizer-mode
/// deepseek_v32, vLLM's DeepseekV32Tokenizer.apply_chat_template (DeepSeek-V3.2 encoding, non-thinking).
/// `dataset` names the dataset in errors.
std::string render_single_user_chat(const tokenizer::Tokenizer& tok, std::string_view prompt,
                                    std::string_view dataset, const std::string& tokenizer_mode) {
  if (tokenizer_mode == "deepseek_v32")
    return chat::render_deepseek_v32({chat::Message{"user", std::string(prompt)}});
  const std::string& tmpl = tok.chat_template();
  if (tmpl.empty()) {
    // The deepseek_v32 advice only for DeepSeek's own vocabulary (new-user trial: it was given for GPT-2's,
    // and taking it counted DeepSeek's markers in GPT-2 pieces without a word).
    throw std::runtime_error(fmt::format(
        "{} dataset: the tokenizer has no chat_template (tokenizer_config.json), so the prompt cannot be "
        "rendered as a chat{}{}",
        dataset, dataset == "sonnet" ? "" : "; pass --skip-chat-template to send the raw prompt",
        has_deepseek_markers(tok)
            ? "; DeepSeek-V3.2 ships no template: pass --tokenizer-mode deepseek_v32 for its encoding"
            : "; give the tokenizer of the served model (a tokenizer_config.json with its chat_template "
              "beside "
              "tokenizer.json)"));
  }
  // DeepSeek-V3 template (tokenizer_config.json of deepseek-ai/DeepSeek-V3*): for one user message with
  // add_generation_prompt it renders {bos_token}<｜User｜>{content}<｜Assistant｜>.
  static constexpr std::string_view kUserPart = "{{'<\xEF\xBD\x9CUser\xEF\xBD\x9C>' + message['content']}}";
  static constexpr std::string_view kGenPart =
      "{% if add_generation_prompt and not ns.is_tool %}{{'<\xEF\xBD\x9C"
      "Assistant\xEF\xBD\x9C>'}}{% endif %}";
  static constexpr std::string_view kBosPart = "{{bos_token}}{{ns.system_prompt}}";
  if (tmpl.find(kUserPart) != std::string::npos && tmpl.find(kGenPart) != std::string::npos &&
      tmpl.find(kBosPart) != std::string::npos) {
    std::string bos;
    if (auto id = tok.bos_id()) {
      if (auto text = tok.id_to_token(*id)) bos = *text;
    }
    return bos + "<\xEF\xBD\x9CUser\xEF\xBD\x9C>" + std::string(prompt) +
           "<\xEF\xBD\x9C"
           "Assistant\xEF\xBD\x9C>";
  }
  throw std::runtime_error(fmt::format(
      "{} dataset: servelab renders only the DeepSeek-V3 chat template without a Jinja engine; this "
      "tokenizer's chat_template is different{}",
      dataset,
      dataset == "sonnet" ? " (sonnet always needs the template: vLLM counts the formatted prompt)"
                          : ". Pass --skip-chat-template to send the raw prompt"));
}

}  // namespace

namespace {

/// sample_requests without its oversampling note: the sampler of `options.dataset_name`.
std::vector<SampleRequest> sample_dataset(const DatasetOptions& options, const tokenizer::Tokenizer& tok,
                                          std::vector<std::string>* warnings) {
  const DatasetOptions o = resolve_length_aliases(options);
  validate_options(o);
  // Chat prompts rendered with --tokenizer-mode deepseek_v32 by a tokenizer that is not DeepSeek's: said
  // once, when the sampling is done (whatever branch returns), only if some prompt was rendered.
  struct V32Check {
    const tokenizer::Tokenizer& tok;
    const DatasetOptions& o;
    std::vector<std::string>* warnings;
    bool rendered = false;
    ~V32Check() {
      if (rendered && warnings && o.tokenizer_mode == "deepseek_v32" && !has_deepseek_markers(tok))
        warnings->push_back(
            "--tokenizer-mode deepseek_v32 with a tokenizer that is not DeepSeek's (no "
            "<\xEF\xBD\x9CUser\xEF\xBD\x9C> token): chat prompts get DeepSeek-V3.2's markers, counted in "
            "that tokenizer's pieces (vLLM does the same); give DeepSeek-V3.2's tokenizer, or the served "
            "model's own with its chat_template");
    }
  } v32{tok, o, warnings};
  auto chat = [&](std::string_view p, std::string_view name) {
    v32.rendered = true;
    return render_single_user_chat(tok, p, name, o.tokenizer_mode);
  };
  auto count_tokens = [&tok](std::string_view text) {
    return static_cast<int>(tok.encode(text, true).size());
  };
  auto warn_mismatch = [&](long long mismatch, std::string_view name) {
    if (mismatch != 0 && warnings) {
      warnings->push_back(fmt::format(
          "{}: across all generated prompts there were {} {} tokens than requested (decode/re-encode did not "
          "converge within 10 retries)",
          name, mismatch > 0 ? mismatch : -mismatch, mismatch > 0 ? "more" : "fewer"));
    }
  };
  if (o.dataset_name == "sharegpt") {
    const ShareGptFile file = load_sharegpt_file(*o.dataset_path);
    std::vector<SampleRequest> out = sample_sharegpt(file, o, count_tokens);
    if (warnings && static_cast<int>(out.size()) < o.num_prompts) {
      warnings->push_back(
          fmt::format("sharegpt: only {} of {} requested prompts pass the filters (--no-oversample)",
                      out.size(), o.num_prompts));
    }
    return out;
  }
  if (o.dataset_name == "random") {
    long long mismatch = 0;
    auto out = detail::sample_random(o, make_ops(tok), &mismatch);
    warn_mismatch(mismatch, "random");
    return out;
  }
  if (o.dataset_name == "prefix_repetition") {
    long long mismatch = 0;
    auto out = detail::sample_prefix_repetition(o, make_ops(tok), &mismatch);
    warn_mismatch(mismatch, "prefix_repetition");
    return out;
  }
  if (o.dataset_name == "random-mm") {
    // vLLM: prohibited ids = added tokens with special=True (not all_special_ids: image placeholders too).
    detail::TokenizerOps ops = make_ops(tok);
    ops.special_ids = tok.special_ids();
    long long mismatch = 0;
    auto out = detail::sample_random_mm(o, ops, &mismatch);
    warn_mismatch(mismatch, "random-mm");
    return out;
  }
  if (o.dataset_name == "custom") {
    const auto rows = detail::load_custom_rows(*o.dataset_path);
    return detail::sample_custom(
        rows, o, count_tokens, [&chat](std::string_view p) { return chat(p, "custom"); }, *o.dataset_path);
  }
  if (o.dataset_name == "sonnet") {
    const auto lines = detail::load_sonnet_lines(*o.dataset_path);
    return detail::sample_sonnet(
        lines, o, count_tokens, [&chat](std::string_view p) { return chat(p, "sonnet"); }, *o.dataset_path);
  }
  if (o.dataset_name == "burstgpt") {
    return detail::sample_burstgpt(detail::load_burstgpt_rows(*o.dataset_path), o, make_ops(tok),
                                   *o.dataset_path);
  }
  if (o.dataset_name == "hf") {
    return detail::sample_hf(o, count_tokens, [&chat](std::string_view p) { return chat(p, "hf"); });
  }
  if (o.dataset_name == "spec_bench") {
    const auto rows = detail::load_spec_bench_rows(*o.dataset_path, o.spec_bench_category);
    if (rows.empty()) {
      throw std::runtime_error(fmt::format("{}: no spec_bench row{}", *o.dataset_path,
                                           o.spec_bench_category
                                               ? fmt::format(" has category \"{}\"", *o.spec_bench_category)
                                               : std::string()));
    }
    DatasetOptions spec = o;  // vLLM SpecBench is a CustomDataset (seed 0) with --spec-bench-output-len
    spec.custom_output_len = o.spec_bench_output_len;
    return detail::sample_custom(
        rows, spec, count_tokens, [&chat](std::string_view p) { return chat(p, "spec_bench"); },
        *o.dataset_path);
  }
  throw std::runtime_error(fmt::format("--dataset-name {}: not supported", o.dataset_name));
}

}  // namespace

std::vector<SampleRequest> sample_requests(const DatasetOptions& options, const tokenizer::Tokenizer& tok,
                                           std::vector<std::string>* warnings) {
  std::vector<SampleRequest> out = sample_dataset(options, tok, warnings);
  // vLLM logs it (maybe_oversample_requests); a new-user trial sent 100 copies of one conversation with no
  // word of it (on a server with prefix caching, TTFT then reads better than it is).
  const auto copies =
      std::count_if(out.begin(), out.end(), [](const SampleRequest& r) { return r.oversampled; });
  if (copies > 0 && warnings)
    warnings->push_back(
        fmt::format("Oversampled requests to reach {} total samples ({} copies of the dataset's "
                    "{} usable requests; --no-oversample sends only those)",
                    out.size(), copies, out.size() - static_cast<std::size_t>(copies)));
  return out;
}

std::string multimodal_messages_json(const SampleRequest& r) {
  if (r.image_urls.empty()) return {};
  // Concatenated rather than dumped from a JSON tree: the data URLs are megabytes of base64, which needs no
  // escaping (nlohmann's dump of them was most of random-mm's set-up time).
  std::size_t size = r.prompt.size() + 96;
  for (const std::string& url : r.image_urls) size += url.size() + 48;
  std::string out;
  out.reserve(size);
  out += R"([{"role":"user","content":[{"type":"text","text":)";
  out += nlohmann::json(r.prompt).dump();
  out += '}';
  for (const std::string& url : r.image_urls) {
    const bool plain = std::all_of(url.begin(), url.end(), [](char c) {
      return static_cast<unsigned char>(c) >= 0x20 && c != '"' && c != '\\';
    });
    if (!plain)
      throw std::invalid_argument(
          "multimodal_messages_json: an image URL holds a character JSON must escape");
    out += R"(,{"type":"image_url","image_url":{"url":")";
    out += url;
    out += R"("}})";
  }
  out += "]}]";
  return out;
}

std::vector<ExchangeLengths> exchange_lengths(const std::vector<Conversation>& conversations,
                                              const tokenizer::Tokenizer& tok) {
  std::vector<ExchangeLengths> out;
  for (const Conversation& c : conversations) {
    for (std::size_t t = 0; t + 1 < c.turns.size(); ++t) {
      if (c.turns[t].from != "human" || c.turns[t + 1].from != "gpt") continue;
      ExchangeLengths e;
      e.conversation_id = c.id;
      e.turn_index = static_cast<int>(t);
      e.prompt_len = static_cast<int>(tok.encode(c.turns[t].value, true).size());
      e.reply_len = static_cast<int>(tok.encode(c.turns[t + 1].value, true).size());
      out.push_back(std::move(e));
    }
  }
  return out;
}

}  // namespace servelab::dataset
