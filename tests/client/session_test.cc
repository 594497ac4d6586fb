// run_sessions end to end against the scheduled-emission test server: turn order, the histories sent, think
// time, session concurrency, a failed turn ending its session, a failing turn builder, stop, argument checks.
#include <algorithm>
#include <chrono>
#include <map>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "servelab/client/session.h"
#include "support/stream_server.h"

namespace servelab::client {
namespace {

using metrics::FailureKind;
using metrics::RequestOutput;
using test_support::Emission;
using test_support::Fault;
using test_support::StreamServer;
using test_support::StreamServerOptions;

std::string id_of(std::size_t s, std::size_t t) {
  return "s" + std::to_string(s) + "-t" + std::to_string(t);
}
std::string repeat(const std::string& x, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += x;
  return out;
}

// messages of turn t: user "q<s>.<j>", then the answer received, ..., then the turn's question.
nlohmann::json messages(std::size_t s, std::size_t t, const std::vector<std::string>& answers) {
  nlohmann::json m = nlohmann::json::array();
  for (std::size_t j = 0; j < t; ++j) {
    m.push_back({{"role", "user"}, {"content", "q" + std::to_string(s) + "." + std::to_string(j)}});
    m.push_back({{"role", "assistant"}, {"content", answers.at(j)}});
  }
  m.push_back({{"role", "user"}, {"content", "q" + std::to_string(s) + "." + std::to_string(t)}});
  return m;
}

// `sessions` sessions of `turns` turns; turn t asks for t + 2 tokens; turn t's request index is s * turns +
// t.
struct Chats {
  std::vector<PlannedRequest> requests;
  SessionPlan plan;
  std::vector<std::vector<std::string>> answers;  // filled by next_turn (one thread per session)
};

Chats make_chats(std::size_t sessions, std::size_t turns) {
  Chats c;
  c.answers.resize(sessions);
  for (std::size_t s = 0; s < sessions; ++s) {
    std::vector<std::size_t> idx;
    for (std::size_t t = 0; t < turns; ++t) {
      PlannedRequest p;
      p.output_len = static_cast<int>(t) + 2;
      p.prompt_len = 1;
      p.request_id = id_of(s, t);
      if (t == 0) p.messages_json = messages(s, 0, {}).dump();
      idx.push_back(c.requests.size());
      c.requests.push_back(std::move(p));
    }
    c.plan.sessions.push_back(std::move(idx));
  }
  c.plan.next_turn = [&c](std::size_t s, std::size_t t, const RequestOutput& previous) {
    c.answers[s].push_back(previous.generated_text);
    PlannedRequest p;
    p.output_len = static_cast<int>(t) + 2;
    p.prompt_len = static_cast<int>(t) + 1;
    p.request_id = id_of(s, t);
    p.messages_json = messages(s, t, c.answers[s]).dump();
    return p;
  };
  return c;
}

ClientOptions chat_options(const StreamServer& server) {
  ClientOptions o;
  o.api_url = server.url("/v1/chat/completions");
  o.endpoint = Endpoint::kChatCompletions;
  o.model = "m";
  o.api_key = "";
  o.num_threads = 2;
  o.request_timeout_s = 10;
  o.keep_generated_text = true;
  return o;
}

std::map<std::string, Emission> by_id(const StreamServer& server) {
  std::map<std::string, Emission> out;
  for (auto& e : server.emissions()) out[e.request_id] = e;
  return out;
}

TEST(Sessions, TurnsGoInOrderEachWithTheAnswersReceivedSoFar) {
  StreamServerOptions so;
  so.ttft_s = 0.002;
  so.itl_s = 0.001;
  StreamServer server(so);
  Chats chats = make_chats(3, 3);
  const std::vector<double> starts = {0.0, 0.0, 0.0};
  const LoadResult r = run_sessions(chat_options(server), chats.requests, chats.plan, starts);
  ASSERT_EQ(r.outputs.size(), 9u);
  ASSERT_EQ(server.requests_received(), 9u);
  const auto seen = by_id(server);
  for (std::size_t s = 0; s < 3; ++s) {
    for (std::size_t t = 0; t < 3; ++t) {
      const RequestOutput& o = r.outputs[s * 3 + t];
      ASSERT_TRUE(o.success) << id_of(s, t) << ": " << o.error;
      EXPECT_EQ(o.request_id, id_of(s, t));
      EXPECT_EQ(o.generated_text,
                repeat("tok", static_cast<int>(t) + 2));  // the server sends max_tokens tokens
      EXPECT_EQ(o.output_len, static_cast<int>(t) + 2);
      // The history sent: the answers of the earlier turns, "toktok" then "toktoktok".
      std::vector<std::string> answers;
      for (std::size_t j = 0; j < t; ++j) answers.push_back(repeat("tok", static_cast<int>(j) + 2));
      const auto body = nlohmann::json::parse(seen.at(id_of(s, t)).body);
      EXPECT_EQ(body["messages"], messages(s, t, answers)) << id_of(s, t);
      EXPECT_EQ(body["max_completion_tokens"], static_cast<int>(t) + 2);
      if (t > 0) {
        const RequestOutput& prev = r.outputs[s * 3 + t - 1];
        // Sent only after the previous turn's last chunk reached the server's socket and the client.
        EXPECT_GE(seen.at(id_of(s, t)).received, seen.at(id_of(s, t - 1)).chunk_times.back());
        EXPECT_GE(o.intended_send_time_s, prev.send_time_s + prev.latency_s);
        EXPECT_GE(o.dispatch_time_s, o.intended_send_time_s);
      }
    }
  }
}

TEST(Sessions, SessionConcurrencyOneRunsConversationsOneAfterAnotherWithThinkTime) {
  StreamServerOptions so;
  so.ttft_s = 0.002;
  so.itl_s = 0.001;
  StreamServer server(so);
  Chats chats = make_chats(3, 2);
  chats.plan.session_concurrency = 1;
  chats.plan.think_time_s = 0.020;
  const std::vector<double> starts = {0.0, 0.0, 0.0};
  const LoadResult r = run_sessions(chat_options(server), chats.requests, chats.plan, starts);
  for (const auto& o : r.outputs) ASSERT_TRUE(o.success) << o.request_id << ": " << o.error;
  // Which conversation got the slot first depends on which I/O thread dispatched first (FIFO), but they never
  // overlap: the server sees t0, t1 of one conversation, then t0, t1 of the next.
  std::vector<Emission> order = server.emissions();
  ASSERT_EQ(order.size(), 6u);
  std::sort(order.begin(), order.end(),
            [](const Emission& a, const Emission& b) { return a.received < b.received; });
  std::vector<std::size_t> session_order;
  for (std::size_t k = 0; k < 6; k += 2) {
    const std::string s = order[k].request_id.substr(0, 2);
    EXPECT_EQ(order[k].request_id, s + "-t0");
    EXPECT_EQ(order[k + 1].request_id, s + "-t1");
    session_order.push_back(static_cast<std::size_t>(s[1] - '0'));
  }
  std::vector<std::size_t> sorted = session_order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::size_t>{0, 1, 2}));
  const auto seen = by_id(server);
  for (std::size_t k = 0; k < 3; ++k) {
    const std::size_t s = session_order[k];
    // The think time separates the end of turn 0 from turn 1 (a lower bound: never early).
    EXPECT_GE(seen.at(id_of(s, 1)).received - seen.at(id_of(s, 0)).chunk_times.back(),
              std::chrono::milliseconds(20));
    const RequestOutput& t0 = r.outputs[s * 2];
    const RequestOutput& t1 = r.outputs[s * 2 + 1];
    EXPECT_GE(t1.intended_send_time_s, t0.send_time_s + t0.latency_s + 0.020);
    EXPECT_EQ(t0.intended_send_time_s, 0.0);
    if (k > 0) {  // waited for the session slot: starts after the previous conversation's last turn ended
      const RequestOutput& prev_last = r.outputs[session_order[k - 1] * 2 + 1];
      EXPECT_GE(t0.send_time_s, prev_last.send_time_s + prev_last.latency_s);
    }
  }
}

TEST(Sessions, AFailedTurnEndsItsSession) {
  StreamServerOptions so;
  so.fault = Fault::kHttp500;
  StreamServer server(so);
  Chats chats = make_chats(2, 3);
  const std::vector<double> starts = {0.0, 0.0};
  const LoadResult r = run_sessions(chat_options(server), chats.requests, chats.plan, starts);
  EXPECT_EQ(server.requests_received(), 2u);  // the first turns only
  for (std::size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(r.outputs[s * 3].failure, FailureKind::kHttpStatus);
    for (std::size_t t = 1; t < 3; ++t) {
      const RequestOutput& o = r.outputs[s * 3 + t];
      EXPECT_EQ(o.failure, FailureKind::kCancelled);
      EXPECT_EQ(o.error, "not sent: turn 0 of its session failed (http_status)");
      EXPECT_EQ(o.send_time_s, 0.0);
      EXPECT_EQ(o.request_id, id_of(s, t));  // the placeholder's id
    }
  }
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.num_not_sent, 4u);
}

TEST(Sessions, ATurnThatCannotBeBuiltEndsOnlyItsSession) {
  StreamServer server(StreamServerOptions{});
  Chats chats = make_chats(2, 3);
  auto build = chats.plan.next_turn;
  chats.plan.next_turn = [build](std::size_t s, std::size_t t, const RequestOutput& previous) {
    if (s == 1 && t == 2) throw std::runtime_error("no such turn");
    return build(s, t, previous);
  };
  const std::vector<double> starts = {0.0, 0.0};
  const LoadResult r = run_sessions(chat_options(server), chats.requests, chats.plan, starts);
  EXPECT_EQ(server.requests_received(), 5u);
  for (std::size_t i = 0; i < 5; ++i) EXPECT_TRUE(r.outputs[i].success) << i << ": " << r.outputs[i].error;
  EXPECT_EQ(r.outputs[5].failure, FailureKind::kCancelled);
  EXPECT_EQ(r.outputs[5].error, "not sent: building this turn failed: no such turn");
}

TEST(Sessions, StopCancelsTheTurnInFlightAndTheRest) {
  StreamServerOptions so;
  so.ttft_s = 5.0;  // nothing finishes before the stop
  StreamServer server(so);
  Chats chats = make_chats(2, 3);
  std::stop_source stop;
  std::thread stopper([&stop] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.request_stop();
  });
  const std::vector<double> starts = {0.0, 0.0};
  const LoadResult r =
      run_sessions(chat_options(server), chats.requests, chats.plan, starts, {}, stop.get_token());
  stopper.join();
  EXPECT_TRUE(r.interrupted);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.outputs[i].failure, FailureKind::kCancelled) << i;
    if (i % 3 == 0) {  // the first turns were in flight
      EXPECT_EQ(r.outputs[i].error, "cancelled: run interrupted");
    } else {
      EXPECT_EQ(r.outputs[i].error, "not sent: run interrupted before this turn") << i;
      EXPECT_EQ(r.outputs[i].send_time_s, 0.0);
    }
  }
  EXPECT_EQ(r.num_not_sent, 4u);
  EXPECT_EQ(server.requests_received(), 2u);
}

TEST(Sessions, BadPlansAreRejectedBeforeSending) {
  StreamServer server(StreamServerOptions{});
  Chats chats = make_chats(2, 2);
  const ClientOptions o = chat_options(server);
  auto error_of = [&](SessionPlan plan, std::vector<double> starts) {
    try {
      run_sessions(o, chats.requests, plan, starts);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(error_of(chats.plan, {0.0}), "run_sessions: 1 start times for 2 sessions");
  EXPECT_EQ(error_of(chats.plan, {1.0, 0.5}),
            "run_sessions: start time of session 1 is 0.500000 s (must be finite, >= 0 and non-decreasing)");
  SessionPlan missing = chats.plan;
  missing.sessions[1].pop_back();
  EXPECT_EQ(error_of(missing, {0.0, 0.0}), "run_sessions: request 3 is in no session");
  SessionPlan twice = chats.plan;
  twice.sessions[1][1] = 0;
  EXPECT_EQ(error_of(twice, {0.0, 0.0}), "run_sessions: request 0 of session 1 is in several sessions");
  SessionPlan no_builder = chats.plan;
  no_builder.next_turn = nullptr;
  EXPECT_EQ(error_of(no_builder, {0.0, 0.0}),
            "run_sessions: session 0 has several turns but the plan has no next_turn function");
  SessionPlan think = chats.plan;
  think.think_time_s = -1;
  EXPECT_EQ(error_of(think, {0.0, 0.0}).rfind("run_sessions: think time must be in [0, 1e6] s", 0), 0u);
  EXPECT_EQ(server.requests_received(), 0u);
}

}  // namespace
}  // namespace servelab::client
