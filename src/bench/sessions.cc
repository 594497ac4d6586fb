// The multi-turn conversation benchmark: conversations as client sessions, and their metrics.
#include "bench/sessions.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "servelab/metrics/stats.h"
#include "servelab/report/report.h"

namespace servelab::bench::detail {
namespace {

using metrics::LatencySummary;
using metrics::RequestOutput;
using nlohmann::ordered_json;

// vLLM's summary rule: numpy statistics ×1000 (seconds in, ms out), all 0 for no sample.
LatencySummary summarize_s(std::vector<double> values_s, const std::vector<double>& percentiles) {
  LatencySummary s;
  s.count = values_s.size();
  std::sort(values_s.begin(), values_s.end());
  for (double p : percentiles) s.percentiles_ms.push_back({p, 0.0});
  if (values_s.empty()) return s;
  s.mean_ms = metrics::numpy_mean(values_s) * 1000.0;
  s.median_ms = metrics::numpy_median_sorted(values_s) * 1000.0;
  s.std_ms = metrics::numpy_std(values_s) * 1000.0;
  for (auto& pv : s.percentiles_ms) pv.value_ms = metrics::numpy_percentile_sorted(values_s, pv.p) * 1000.0;
  return s;
}

double mean(const std::vector<double>& v) {
  return v.empty() ? 0.0 : metrics::numpy_mean(v);
}

const char* history_name(HistoryMode h) {
  return h == HistoryMode::kServer ? "server" : "dataset";
}

// Answers so far, per conversation (server history), written by the conversation's I/O thread only.
struct Answers {
  std::vector<std::vector<std::string>> text;
  std::vector<std::vector<int>> tokens;
};

}  // namespace

std::string turn_messages_json(const dataset::ChatConversation& c, std::size_t turn,
                               const std::vector<std::string>& answers) {
  ordered_json messages = ordered_json::array();
  auto add = [&messages](const char* role, const std::string& content) {
    ordered_json m = ordered_json::object();
    m["role"] = role;
    m["content"] = content;
    messages.push_back(std::move(m));
  };
  if (!c.system.empty()) add("system", c.system);
  for (std::size_t j = 0; j < turn; ++j) {
    add("user", c.turns[j].user);
    add("assistant", answers.at(j));
  }
  add("user", c.turns.at(turn).user);
  return messages.dump();
}

MultiTurnWorkload make_multi_turn(std::vector<dataset::ChatConversation> conversations, HistoryMode history,
                                  const std::string& request_id_prefix, int session_concurrency,
                                  double think_time_s) {
  MultiTurnWorkload w;
  w.history = history;
  auto convs = std::make_shared<const std::vector<dataset::ChatConversation>>(std::move(conversations));
  w.conversations = convs;
  auto answers = std::make_shared<Answers>();
  answers->text.resize(convs->size());
  answers->tokens.resize(convs->size());
  for (std::size_t c = 0; c < convs->size(); ++c) {
    const auto& conv = (*convs)[c];
    w.first_request.push_back(w.requests.size());
    std::vector<std::size_t> turns;
    int input = conv.system_tokens;
    for (std::size_t t = 0; t < conv.turns.size(); ++t) {
      client::PlannedRequest p;
      p.prompt = conv.turns[t].user;
      input += conv.turns[t].user_tokens;
      p.prompt_len = input;
      input += conv.turns[t].answer_tokens;
      p.output_len = conv.turns[t].output_len;
      p.request_id = fmt::format("{}{}-{}", request_id_prefix, c, t);
      if (t == 0) p.messages_json = turn_messages_json(conv, 0, {});
      turns.push_back(w.requests.size());
      w.requests.push_back(std::move(p));
    }
    w.plan.sessions.push_back(std::move(turns));
    answers->text[c].reserve(conv.turns.size());
  }
  w.plan.session_concurrency = session_concurrency;
  w.plan.think_time_s = think_time_s;
  w.plan.next_turn = [convs, answers, history, request_id_prefix](std::size_t c, std::size_t t,
                                                                  const RequestOutput& previous) {
    const auto& conv = (*convs)[c];
    client::PlannedRequest p;
    p.prompt = conv.turns[t].user;
    p.output_len = conv.turns[t].output_len;
    p.request_id = fmt::format("{}{}-{}", request_id_prefix, c, t);
    int input = conv.system_tokens;
    if (history == HistoryMode::kServer) {
      auto& text = answers->text[c];
      auto& tokens = answers->tokens[c];
      text.resize(t);
      tokens.resize(t);
      text[t - 1] = previous.generated_text;
      tokens[t - 1] = previous.output_tokens;
      for (std::size_t j = 0; j < t; ++j) input += conv.turns[j].user_tokens + tokens[j];
      p.messages_json = turn_messages_json(conv, t, text);
    } else {
      std::vector<std::string> recorded;
      for (std::size_t j = 0; j < t; ++j) {
        recorded.push_back(conv.turns[j].answer);
        input += conv.turns[j].user_tokens + conv.turns[j].answer_tokens;
      }
      p.messages_json = turn_messages_json(conv, t, recorded);
    }
    p.prompt_len = input + conv.turns[t].user_tokens;
    return p;
  };
  return w;
}

SessionMetrics session_metrics(const MultiTurnWorkload& w, const std::vector<RequestOutput>& outputs,
                               double duration_s, const std::vector<double>& percentiles) {
  if (outputs.size() != w.requests.size())
    throw std::invalid_argument(
        fmt::format("session_metrics: {} records for {} turns", outputs.size(), w.requests.size()));
  SessionMetrics m;
  m.conversations = static_cast<int>(w.plan.sessions.size());
  m.turns_total = static_cast<int>(w.requests.size());
  std::size_t max_turns = 0;
  for (const auto& s : w.plan.sessions) max_turns = std::max(max_turns, s.size());
  struct Samples {
    std::vector<double> ttft, e2el, input, output;
  };
  std::vector<Samples> samples(max_turns);
  m.per_turn.resize(max_turns);
  std::vector<double> durations, session_waits, waits;
  for (const auto& turns : w.plan.sessions) {
    bool all_ok = true;
    for (std::size_t t = 0; t < turns.size(); ++t) {
      const RequestOutput& o = outputs[turns[t]];
      TurnMetrics& tm = m.per_turn[t];
      tm.turn = t;
      const bool sent = !(o.failure == metrics::FailureKind::kCancelled && o.send_time_s == 0.0 &&
                          o.dispatch_time_s == 0.0);
      if (!sent) {
        ++tm.not_sent;
        all_ok = false;
        continue;
      }
      ++tm.sent;
      (t == 0 ? session_waits : waits).push_back(o.send_time_s - o.intended_send_time_s);
      if (!o.success) {
        all_ok = false;
        continue;
      }
      ++tm.completed;
      ++m.turns_completed;
      samples[t].ttft.push_back(o.ttft_s);
      samples[t].e2el.push_back(o.latency_s);
      samples[t].input.push_back(o.prompt_len);
      samples[t].output.push_back(o.output_tokens);
    }
    if (all_ok) {
      ++m.completed;
      const RequestOutput& first = outputs[turns.front()];
      const RequestOutput& last = outputs[turns.back()];
      durations.push_back(last.send_time_s + last.latency_s - first.send_time_s);
    }
  }
  for (std::size_t t = 0; t < max_turns; ++t) {
    m.per_turn[t].turn = t;
    m.per_turn[t].ttft = summarize_s(samples[t].ttft, percentiles);
    m.per_turn[t].e2el = summarize_s(samples[t].e2el, percentiles);
    m.per_turn[t].mean_input_tokens = mean(samples[t].input);
    m.per_turn[t].mean_output_tokens = mean(samples[t].output);
  }
  m.duration = summarize_s(durations, percentiles);
  m.session_wait = summarize_s(session_waits, percentiles);
  m.turn_wait = summarize_s(waits, percentiles);
  m.conversation_throughput = duration_s > 0 ? m.completed / duration_s : 0.0;
  return m;
}

std::string format_session_metrics(const SessionMetrics& m, HistoryMode history, double think_time_ms,
                                   int session_concurrency) {
  std::string out;
  auto row = [&out](std::string_view label, const std::string& value) {
    fmt::format_to(std::back_inserter(out), "{:<40} {:<10}\n", label, value);
  };
  auto row_f = [&out](std::string_view label, double value) {
    fmt::format_to(std::back_inserter(out), "{:<40} {:<10.2f}\n", label, value);
  };
  const std::string title = " multi-turn sessions ";
  out.append((50 - title.size()) / 2, '-');
  out.append(title);
  out.append(50 - title.size() - (50 - title.size()) / 2, '-');
  out.push_back('\n');
  row("History sent with each turn:", history == HistoryMode::kServer ? "server answers" : "dataset answers");
  row("Session concurrency:", session_concurrency > 0 ? std::to_string(session_concurrency) : "unlimited");
  row_f("Think time (ms):", think_time_ms);
  row("Conversations:", std::to_string(m.conversations));
  row("Completed conversations:", std::to_string(m.completed));
  row("Turns completed / total:", fmt::format("{} / {}", m.turns_completed, m.turns_total));
  row_f("Conversation throughput (conv/s):", m.conversation_throughput);
  row_f("Mean conversation duration (ms):", m.duration.mean_ms);
  row_f("Median conversation duration (ms):", m.duration.median_ms);
  for (const auto& pv : m.duration.percentiles_ms)
    row_f(fmt::format("P{} conversation duration (ms):", report::percentile_word(pv.p)), pv.value_ms);
  row_f("Mean session wait (ms):", m.session_wait.mean_ms);
  for (const auto& pv : m.session_wait.percentiles_ms)
    row_f(fmt::format("P{} session wait (ms):", report::percentile_word(pv.p)), pv.value_ms);
  row_f("Mean next-turn wait (ms):", m.turn_wait.mean_ms);
  for (const auto& pv : m.turn_wait.percentiles_ms)
    row_f(fmt::format("P{} next-turn wait (ms):", report::percentile_word(pv.p)), pv.value_ms);
  std::string p_head;
  for (const auto& pv : m.duration.percentiles_ms)
    p_head += fmt::format(" {:>10}", fmt::format("P{} TTFT", report::percentile_word(pv.p)));
  fmt::format_to(std::back_inserter(out), "{:>4} {:>6} {:>6} {:>9}{} {:>10} {:>9} {:>9}\n", "turn", "sent",
                 "ok", "mean TTFT", p_head, "mean E2EL", "mean in", "mean out");
  for (const auto& t : m.per_turn) {
    std::string p_vals;
    for (const auto& pv : t.ttft.percentiles_ms) p_vals += fmt::format(" {:>10.2f}", pv.value_ms);
    fmt::format_to(std::back_inserter(out), "{:>4} {:>6} {:>6} {:>9.2f}{} {:>10.2f} {:>9.1f} {:>9.1f}\n",
                   t.turn + 1, t.sent, t.completed, t.ttft.mean_ms, p_vals, t.e2el.mean_ms,
                   t.mean_input_tokens, t.mean_output_tokens);
  }
  out.append(
      "(turn times in ms; turn 1 is the first user turn; in/out: mean input/output tokens of its "
      "successes)\n");
  out.append(50, '=');
  out.push_back('\n');
  return out;
}

ordered_json session_metrics_json(const SessionMetrics& m, HistoryMode history, double think_time_ms,
                                  int session_concurrency) {
  ordered_json j;
  j["history"] = history_name(history);
  j["session_concurrency"] =
      session_concurrency > 0 ? ordered_json(session_concurrency) : ordered_json(nullptr);
  j["think_time_ms"] = think_time_ms;
  j["conversations"] = m.conversations;
  j["completed_conversations"] = m.completed;
  j["turns_total"] = m.turns_total;
  j["turns_completed"] = m.turns_completed;
  j["conversation_throughput"] = m.conversation_throughput;
  j["conversation_duration"] = report::summary_json(m.duration);
  j["session_wait"] = report::summary_json(m.session_wait);
  j["next_turn_wait"] = report::summary_json(m.turn_wait);
  ordered_json turns = ordered_json::array();
  for (const auto& t : m.per_turn) {
    ordered_json x;
    x["turn"] = t.turn;
    x["sent"] = t.sent;
    x["completed"] = t.completed;
    x["not_sent"] = t.not_sent;
    x["ttft"] = report::summary_json(t.ttft);
    x["e2el"] = report::summary_json(t.e2el);
    x["mean_input_tokens"] = t.mean_input_tokens;
    x["mean_output_tokens"] = t.mean_output_tokens;
    turns.push_back(std::move(x));
  }
  j["per_turn"] = std::move(turns);
  return j;
}

}  // namespace servelab::bench::detail
