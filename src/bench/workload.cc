// The requests of a run: vLLM datasets, timed_trace, multi-turn conversations.
#include "bench/workload.h"

#include "servelab/dataset/dataset.h"
#include "servelab/dataset/multi_turn.h"
#include "servelab/tokenizer/tokenizer.h"

namespace servelab::bench::detail {

Workload build_workload(const RunOptions& c, const ResolvedConfig& r, const tokenizer::Tokenizer& tok) {
  Workload w;
  if (c.multi_turn) {
    dataset::MultiTurnOptions o;
    o.num_conversations = c.num_prompts;
    o.seed = c.seed;
    o.disable_shuffle = c.disable_shuffle;
    o.no_oversample = c.no_oversample;
    o.output_len = r.sharegpt_output_len;
    o.max_turns = c.multi_turn_max_turns;
    auto count = [&tok](std::string_view text) {
      return static_cast<int>(tok.encode(text, /*add_special_tokens=*/false).size());
    };
    auto conversations = dataset::sample_conversations(*c.dataset_path, o, count, &w.warnings);
    w.multi_turn = make_multi_turn(
        std::move(conversations),
        c.multi_turn_history == "dataset" ? HistoryMode::kDataset : HistoryMode::kServer, r.request_id_prefix,
        c.session_concurrency.value_or(0), c.multi_turn_think_time_ms / 1000.0);
    return w;
  }
  if (c.dataset_name == "timed_trace") {
    dataset::TraceOptions o;
    o.num_prompts = c.num_prompts;
    o.seed = c.seed;
    o.output_len = c.output_len;
    o.request_id_prefix = r.request_id_prefix;
    o.vocab_size = tok.vocab_size();
    for (auto id : tok.all_special_ids()) o.special_ids.push_back(static_cast<std::int32_t>(id));
    for (auto& t : dataset::load_trace(*c.dataset_path, o, &w.warnings)) {
      client::PlannedRequest p;
      p.prompt_len = static_cast<int>(t.prompt_token_ids.size());
      p.prompt_token_ids = std::move(t.prompt_token_ids);
      p.output_len = t.output_len;
      p.request_id = std::move(t.request_id);
      if (c.self_timed) w.trace_send_s.push_back(t.timestamp_ms * c.timed_trace_sec_multiplier);
      w.planned.push_back(std::move(p));
    }
    return w;
  }
  std::vector<dataset::SampleRequest> samples =
      dataset::sample_requests(dataset_options(c, r), tok, &w.warnings);
  w.planned.reserve(samples.size());
  for (auto& s : samples) {
    client::PlannedRequest p;
    p.prompt = std::move(s.prompt);
    p.prompt_len = s.prompt_len;
    p.output_len = s.output_len;
    p.request_id = std::move(s.request_id);
    if (!s.image_urls.empty()) {  // random-mm: text then images, as vLLM's openai-chat request
      s.prompt = p.prompt;
      p.messages_json = dataset::multimodal_messages_json(s);
      s.image_urls.clear();
    }
    w.planned.push_back(std::move(p));
  }
  return w;
}

}  // namespace servelab::bench::detail
