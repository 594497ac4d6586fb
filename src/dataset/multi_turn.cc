// Multi-turn conversations (ShareGPT form → alternating user/assistant chats) and Mooncake-style traces.
#include "servelab/dataset/multi_turn.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "servelab/common/hash.h"
#include "servelab/schedule/rng.h"

namespace servelab::dataset {
namespace {

enum class Role { kUser, kAssistant, kSystem, kUnknown };

Role role_of(std::string_view from) {
  if (from == "human" || from == "user") return Role::kUser;
  if (from == "gpt" || from == "chatgpt" || from == "assistant" || from == "bard" || from == "bing" ||
      from == "model")
    return Role::kAssistant;
  if (from == "system") return Role::kSystem;
  return Role::kUnknown;
}

// Counts of what the conversion had to drop (for the warning).
struct Dropped {
  std::size_t cut = 0;         // conversations cut at a turn breaking the alternation
  std::size_t unanswered = 0;  // trailing user turns without an answer (no fixed output length)
  std::size_t empty = 0;       // records left without any turn
};

std::optional<ChatConversation> to_chat(const Conversation& c, const MultiTurnOptions& o,
                                        const TokenCountFn& count, Dropped& dropped) {
  ChatConversation out;
  out.id = c.id;
  std::size_t i = 0;
  if (!c.turns.empty() && role_of(c.turns[0].from) == Role::kSystem) {
    out.system = c.turns[0].value;
    out.system_tokens = count(out.system);
    i = 1;
  }
  bool cut = false;
  while (i < c.turns.size()) {
    if (role_of(c.turns[i].from) != Role::kUser) {
      cut = true;
      break;
    }
    ChatTurn t;
    t.user = c.turns[i].value;
    const bool answered = i + 1 < c.turns.size() && role_of(c.turns[i + 1].from) == Role::kAssistant;
    if (!answered) {
      if (i + 1 < c.turns.size()) cut = true;
      if (!o.output_len) {
        ++dropped.unanswered;
        break;
      }
    } else {
      t.answer = c.turns[i + 1].value;
      t.answer_tokens = count(t.answer);
    }
    t.user_tokens = count(t.user);
    t.output_len = o.output_len ? *o.output_len : std::max(1, t.answer_tokens);
    out.turns.push_back(std::move(t));
    if (!answered) break;
    i += 2;
    if (o.max_turns && static_cast<int>(out.turns.size()) >= *o.max_turns) break;
  }
  if (cut) ++dropped.cut;
  if (out.turns.empty()) {
    ++dropped.empty;
    return std::nullopt;
  }
  return out;
}

}  // namespace

std::vector<ChatConversation> sample_conversations(const std::filesystem::path& path,
                                                   const MultiTurnOptions& o,
                                                   const TokenCountFn& count_tokens,
                                                   std::vector<std::string>* warnings) {
  if (o.num_conversations < 1)
    throw std::runtime_error(fmt::format("--num-prompts must be >= 1 (got {})", o.num_conversations));
  if (o.max_turns && *o.max_turns < 1)
    throw std::runtime_error(fmt::format("--multi-turn-max-turns must be >= 1 (got {})", *o.max_turns));
  const std::vector<Conversation> records = load_conversations(path);
  std::vector<ChatConversation> usable;
  Dropped dropped;
  for (const auto& c : records) {
    if (auto chat = to_chat(c, o, count_tokens, dropped)) usable.push_back(std::move(*chat));
  }
  if (usable.empty())
    throw std::runtime_error(fmt::format(
        "{}: no usable conversation ({} records; a conversation needs a user turn followed by an answer, or "
        "--sharegpt-output-len for an unanswered one)",
        path.string(), records.size()));
  if (warnings && (dropped.cut || dropped.unanswered || dropped.empty))
    warnings->push_back(fmt::format(
        "multi-turn: of {} records, {} cut where the turns stop alternating user/assistant, {} with a last "
        "user "
        "turn left out (no recorded answer to size it; give --sharegpt-output-len to keep it), {} dropped "
        "without any turn",
        records.size(), dropped.cut, dropped.unanswered, dropped.empty));
  if (!o.disable_shuffle) {
    schedule::PythonRandom rng(o.seed);
    rng.shuffle(usable);
  }
  const auto n = static_cast<std::size_t>(o.num_conversations);
  if (usable.size() > n) usable.resize(n);
  if (usable.size() < n) {
    if (o.no_oversample) {
      if (warnings)
        warnings->push_back(fmt::format(
            "multi-turn: only {} conversations for --num-prompts {} (--no-oversample)", usable.size(), n));
    } else {
      schedule::PythonRandom rng(o.seed);  // vLLM maybe_oversample_requests: re-seed, then random.choice
      const std::size_t base = usable.size();
      std::vector<std::size_t> copies(base, 0);
      while (usable.size() < n) {
        const std::size_t pick = rng.choice_index(base);
        ChatConversation copy = usable[pick];
        copy.id = fmt::format("{}#{}", usable[pick].id, ++copies[pick]);
        usable.push_back(std::move(copy));
      }
    }
  }
  return usable;
}

// ---------------------------------------------------------------------------------------------------------

namespace {

using common::splitmix64;

[[noreturn]] void trace_error(const std::filesystem::path& path, std::size_t line, const std::string& what) {
  throw std::runtime_error(fmt::format("{}:{}: {}", path.string(), line, what));
}

std::int64_t positive_int(const nlohmann::json& j, const char* key, const std::filesystem::path& path,
                          std::size_t line) {
  if (!j.contains(key)) trace_error(path, line, fmt::format("missing \"{}\"", key));
  const auto& v = j[key];
  if (!v.is_number_integer() || v.get<std::int64_t>() < 1 || v.get<std::int64_t>() > (1 << 30))
    trace_error(path, line, fmt::format("\"{}\" must be an integer in [1, 2^30], got {}", key, v.dump()));
  return v.get<std::int64_t>();
}

}  // namespace

std::int32_t trace_block_token(std::int64_t seed, std::uint64_t hash_id, int j,
                               const std::vector<std::int32_t>& allowed) {
  const std::uint64_t h = splitmix64(splitmix64(splitmix64(static_cast<std::uint64_t>(seed)) ^ hash_id) ^
                                     static_cast<std::uint64_t>(j));
  return allowed[h % allowed.size()];
}

std::vector<TraceRequest> load_trace(const std::filesystem::path& path, const TraceOptions& o,
                                     std::vector<std::string>* warnings) {
  if (o.num_prompts < 1)
    throw std::runtime_error(fmt::format("--num-prompts must be >= 1 (got {})", o.num_prompts));
  std::ifstream in(path);
  if (!in) throw std::runtime_error(fmt::format("{}: cannot open the trace file", path.string()));
  std::vector<std::int32_t> allowed;
  {
    std::vector<std::int32_t> special = o.special_ids;
    std::sort(special.begin(), special.end());
    for (std::size_t id = 0; id < o.vocab_size; ++id) {
      const auto t = static_cast<std::int32_t>(id);
      if (!std::binary_search(special.begin(), special.end(), t)) allowed.push_back(t);
    }
  }
  if (allowed.empty())
    throw std::runtime_error("timed_trace: the tokenizer has no non-special token to build prompts");
  std::vector<TraceRequest> out;
  std::string text;
  std::size_t line = 0;
  while (static_cast<int>(out.size()) < o.num_prompts && std::getline(in, text)) {
    ++line;
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) trace_error(path, line, "not a JSON object");
    if (!j.contains("timestamp") || !j["timestamp"].is_number() || !(j["timestamp"].get<double>() >= 0) ||
        !std::isfinite(j["timestamp"].get<double>()))
      trace_error(path, line, "\"timestamp\" (ms) must be a finite number >= 0");
    TraceRequest r;
    r.line = line;
    r.timestamp_ms = j["timestamp"].get<double>();
    const std::int64_t input_len = positive_int(j, "input_length", path, line);
    r.output_len =
        o.output_len ? *o.output_len : static_cast<int>(positive_int(j, "output_length", path, line));
    if (!j.contains("hash_ids") || !j["hash_ids"].is_array())
      trace_error(path, line, "\"hash_ids\" must be an array of integers");
    const auto& ids = j["hash_ids"];
    const std::int64_t k = static_cast<std::int64_t>(ids.size());
    if (!(kTraceBlockTokens * (k - 1) < input_len && input_len <= kTraceBlockTokens * k))
      trace_error(
          path, line,
          fmt::format("input_length {} does not fit {} hash ids of {} tokens (needs {} < input_length <= {})",
                      input_len, k, kTraceBlockTokens, kTraceBlockTokens * (k - 1), kTraceBlockTokens * k));
    r.prompt_token_ids.reserve(static_cast<std::size_t>(input_len));
    for (std::int64_t b = 0; b < k; ++b) {
      const auto& id = ids[static_cast<std::size_t>(b)];
      if (!id.is_number_integer() || id.get<std::int64_t>() < 0)
        trace_error(path, line, fmt::format("hash_ids[{}] must be an integer >= 0, got {}", b, id.dump()));
      const auto hash = static_cast<std::uint64_t>(id.get<std::int64_t>());
      const std::int64_t len = std::min<std::int64_t>(kTraceBlockTokens, input_len - b * kTraceBlockTokens);
      for (int t = 0; t < len; ++t) r.prompt_token_ids.push_back(trace_block_token(o.seed, hash, t, allowed));
    }
    out.push_back(std::move(r));
  }
  if (out.empty()) throw std::runtime_error(fmt::format("{}: the trace has no record", path.string()));
  if (!std::is_sorted(out.begin(), out.end(), [](const TraceRequest& a, const TraceRequest& b) {
        return a.timestamp_ms < b.timestamp_ms;
      })) {
    std::stable_sort(out.begin(), out.end(), [](const TraceRequest& a, const TraceRequest& b) {
      return a.timestamp_ms < b.timestamp_ms;
    });
    if (warnings)
      warnings->push_back("timed_trace: records were not in timestamp order; sent in timestamp order");
  }
  if (warnings && static_cast<int>(out.size()) < o.num_prompts)
    warnings->push_back(
        fmt::format("timed_trace: the trace has {} records, fewer than --num-prompts {}; all are sent",
                    out.size(), o.num_prompts));
  for (std::size_t i = 0; i < out.size(); ++i) out[i].request_id = o.request_id_prefix + std::to_string(i);
  return out;
}

}  // namespace servelab::dataset
