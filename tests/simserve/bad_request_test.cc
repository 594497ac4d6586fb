// The bad-request suite of `sim serve` (issue 9 section 1): every request that crashed, hung or misled the
// server. Each test sends it over a real socket, checks the answer, then checks that the same server still
// serves a good streaming request with the right numbers (expect_healthy).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "test_server.h"

using namespace servelab;
using nlohmann::json;
using simserve::ServerOptions;
using simserve::testing::gpt2;
using simserve::testing::Running;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// A blocking client socket with raw bytes in and out.
class Raw {
 public:
  explicit Raw(unsigned short port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) ADD_FAILURE() << "connect failed";
  }
  ~Raw() { close(); }
  void close() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  bool send(std::string_view bytes) {
    while (!bytes.empty()) {
      const auto n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n <= 0) return false;
      bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
  }
  /// Reads until the peer closes or `timeout_s` passes; `closed` says which.
  std::string read_until_close(double timeout_s, bool* closed = nullptr) {
    std::string out;
    const auto t0 = Clock::now();
    if (closed) *closed = false;
    for (;;) {
      const double left = timeout_s - since(t0);
      if (left <= 0) return out;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left * 1000) + 1) <= 0) continue;
      char buf[65536];
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        if (closed) *closed = true;
        return out;
      }
      out.append(buf, static_cast<std::size_t>(n));
    }
  }
  /// Reads until `out` holds `needle` (or timeout).
  std::string read_until(std::string_view needle, double timeout_s) {
    std::string out;
    const auto t0 = Clock::now();
    while (out.find(needle) == std::string::npos && since(t0) < timeout_s) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[65536];
      const auto n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    return out;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "",
                 const char* version = "HTTP/1.1") {
  return "POST " + path + " " + version + "\r\nHost: t\r\nContent-Type: application/json\r\n" +
         extra_headers + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

int status_of(const std::string& response) {
  if (response.size() < 12 || response.rfind("HTTP/1.", 0) != 0) return 0;
  return std::stoi(response.substr(9, 3));
}

std::string body_of(const std::string& response) {
  const auto p = response.find("\r\n\r\n");
  return p == std::string::npos ? "" : response.substr(p + 4);
}

// Data payloads of the SSE events in a (de-chunked or close-delimited) body.
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  for (std::size_t p = 0; (p = body.find("data: ", p)) != std::string::npos;) {
    const auto e = body.find("\n\n", p);
    if (e == std::string::npos) break;
    out.push_back(body.substr(p + 6, e - p - 6));
    p = e;
  }
  return out;
}

// One request/response on a fresh connection that asks to be closed after it.
std::string roundtrip(unsigned short port, const std::string& request, double timeout_s = 5.0) {
  Raw c(port);
  c.send(request);
  return c.read_until_close(timeout_s);
}

std::string good_stream_request() {
  return post("/v1/completions",
              R"({"model":"twin","prompt":"Hello world","max_tokens":8,"stream":true,)"
              R"("stream_options":{"include_usage":true}})",
              "Connection: close\r\n");
}

// The server still answers a good streaming request with the right numbers: 8 token events, the usage
// chunk (8 completion tokens, 2 prompt tokens: GPT-2 "Hello", " world"), [DONE].
void expect_healthy(const Running& r) {
  const std::string rep = roundtrip(r.port, good_stream_request());
  ASSERT_EQ(status_of(rep), 200) << rep.substr(0, 300);
  const auto ev = events(rep);
  ASSERT_EQ(ev.size(), 10u) << rep.substr(0, 500);
  const json usage = json::parse(ev[8]);
  EXPECT_EQ(usage["usage"]["completion_tokens"], 8);
  EXPECT_EQ(usage["usage"]["prompt_tokens"], 2);
  EXPECT_EQ(ev[9], "[DONE]");
}

// The error body of a response: valid JSON (hence valid UTF-8) in OpenAI's shape.
json error_of(const std::string& response) {
  const json j = json::parse(body_of(response));  // throws on invalid UTF-8 or malformed JSON
  EXPECT_TRUE(j.contains("error")) << response;
  return j["error"];
}

}  // namespace

TEST(SimServeBadRequest, NonUtf8PromptOrChatContentIsA400) {
  Running r;
  for (bool stream : {false, true}) {
    const std::string s = stream ? "true" : "false";
    for (const std::string& body :
         {R"({"model":"twin","prompt":"caf)" + std::string("\xff\xfe") + R"(","max_tokens":3,"stream":)" + s +
              "}",
          R"({"model":"twin","messages":[{"role":"user","content":"x)" + std::string("\xc3\x28") +
              R"("}],"max_tokens":3,"stream":)" + s + "}"}) {
      const auto path =
          body.find("messages") != std::string::npos ? "/v1/chat/completions" : "/v1/completions";
      const std::string rep = roundtrip(r.port, post(path, body, "Connection: close\r\n"));
      EXPECT_EQ(status_of(rep), 400) << rep;
      EXPECT_NE(error_of(rep)["message"].get<std::string>().find("not valid JSON"), std::string::npos);
    }
  }
  expect_healthy(r);
}

TEST(SimServeBadRequest, NonUtf8PathAndRequestIdAreAnsweredNotFatal) {
  Running r;
  const std::string rep404 =
      roundtrip(r.port, "GET /v1/\xff\xfe HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(status_of(rep404), 404) << rep404;
  EXPECT_EQ(error_of(rep404)["message"], "no route for /v1/%FF%FE");
  for (bool stream : {false, true}) {
    const std::string rep =
        roundtrip(r.port, post("/v1/completions",
                               std::string(R"({"model":"twin","prompt":"x","max_tokens":2,"stream":)") +
                                   (stream ? "true" : "false") + "}",
                               "x-request-id: id-\xff\r\nConnection: close\r\n"));
    ASSERT_EQ(status_of(rep), 200) << rep;
    // The id's bytes are ISO-8859-1 (as Starlette decodes headers): 0xFF is U+00FF, "\xc3\xbf" in UTF-8.
    const std::string payload = stream ? events(rep).front() : body_of(rep);
    EXPECT_EQ(json::parse(payload)["id"], "cmpl-id-\xc3\xbf");
  }
  expect_healthy(r);
}

// A prompt of no tokens (GPT-2 adds no BOS to ""): a 400 naming the prompt, as vLLM answers, not a 500 from
// inside the twin.
TEST(SimServeBadRequest, AnEmptyPromptIsA400) {
  Running r;
  const std::string rep = roundtrip(
      r.port,
      post("/v1/completions", R"({"model":"twin","prompt":"","max_tokens":3})", "Connection: close\r\n"));
  EXPECT_EQ(status_of(rep), 400) << rep;
  EXPECT_EQ(error_of(rep)["message"].get<std::string>(), "The decoder prompt cannot be empty");
  EXPECT_EQ(error_of(rep)["param"].get<std::string>(), "prompt");
  expect_healthy(r);
}

// A prompt of token ids past the tokenizer's vocabulary (GPT-2: 50,257 ids) is vLLM's 400, not a prompt of
// that many tokens (new-user trial: [99999999] was answered 200 as a 1-token prompt).
TEST(SimServeBadRequest, TokenIdsOutsideTheVocabularyAreA400) {
  Running r;
  const std::string rep =
      roundtrip(r.port, post("/v1/completions", R"({"model":"twin","prompt":[1,99999999],"max_tokens":3})",
                             "Connection: close\r\n"));
  EXPECT_EQ(status_of(rep), 400) << rep;
  EXPECT_EQ(error_of(rep)["message"].get<std::string>(), "Token id 99999999 is out of vocabulary");
  const std::string edge =
      roundtrip(r.port, post("/v1/completions", R"({"model":"twin","prompt":[50256],"max_tokens":1})",
                             "Connection: close\r\n"));
  EXPECT_EQ(status_of(edge), 200) << edge;
  expect_healthy(r);
}

TEST(SimServeBadRequest, HugeNumbersAreErrorsWithTheRightValues) {
  Running r;
  const std::string e400 =
      roundtrip(r.port, post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":1e400})",
                             "Connection: close\r\n"));
  EXPECT_EQ(status_of(e400), 400) << e400;
  // 2^31 - 1 output tokens + 2 prompt tokens: the sum is reported exactly, not wrapped to a negative.
  const std::string big = roundtrip(
      r.port, post("/v1/completions", R"({"model":"twin","prompt":"Hello world","max_tokens":2147483647})",
                   "Connection: close\r\n"));
  EXPECT_EQ(status_of(big), 400) << big;
  EXPECT_NE(
      error_of(big)["message"].get<std::string>().find("you requested 2147483649 tokens (2 in the messages, "
                                                       "2147483647 in the completion)"),
      std::string::npos)
      << big;
  for (const char* v : {"2147483648", "18446744073709551615", "-9223372036854775808"}) {
    const std::string rep =
        roundtrip(r.port, post("/v1/completions",
                               std::string(R"({"model":"twin","prompt":"x","max_tokens":)") + v + "}",
                               "Connection: close\r\n"));
    EXPECT_EQ(status_of(rep), 400) << v << ": " << rep;
    EXPECT_NE(error_of(rep)["message"].get<std::string>().find("out of range"), std::string::npos) << rep;
  }
  expect_healthy(r);
}

TEST(SimServeBadRequest, ToolCallFieldsOfTheWrongTypeAre422) {
  Running r;
  for (const char* call : {R"({"id":"c1","type":"function","function":{"name":5,"arguments":"{}"}})",
                           R"({"id":"c1","type":"function","function":{"name":"f","arguments":{"a":1}}})",
                           R"({"id":7,"type":"function","function":{"name":"f","arguments":"{}"}})"}) {
    for (bool stream : {false, true}) {
      const std::string body = std::string(R"({"model":"twin","max_tokens":2,"stream":)") +
                               (stream ? "true" : "false") +
                               R"(,"messages":[{"role":"user","content":"hi"},)"
                               R"({"role":"assistant","content":"","tool_calls":[)" +
                               call + "]}]}";
      const std::string rep = roundtrip(r.port, post("/v1/chat/completions", body, "Connection: close\r\n"));
      EXPECT_EQ(status_of(rep), 422) << call << ": " << rep;
      EXPECT_NE(error_of(rep)["message"].get<std::string>().find("must be a string"), std::string::npos)
          << rep;
    }
  }
  // The same call with the right types is served.
  const std::string ok = roundtrip(
      r.port, post("/v1/chat/completions",
                   R"({"model":"twin","max_tokens":2,"messages":[{"role":"user","content":"hi"},)"
                   R"({"role":"assistant","content":"","tool_calls":[{"id":"c1","type":"function",)"
                   R"("function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1",)"
                   R"("content":"42"}]})",
                   "Connection: close\r\n"));
  EXPECT_EQ(status_of(ok), 200) << ok;
  expect_healthy(r);
}

TEST(SimServeBadRequest, OversizedBodyIs413BeforeItIsReadAndOthersKeepStreaming) {
  Running r;  // default limit: 32 bytes x 163840 tokens = 5 MiB
  r.tl.itl_s = 0.005;
  // A stream in flight on another connection, timed token by token.
  std::vector<double> gaps;
  std::thread streamer([&] {
    Raw c(r.port);
    c.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":100,"stream":true})",
                "Connection: close\r\n"));
    auto last = Clock::now();
    std::string all;
    bool closed = false;
    while (!closed) {
      const std::string chunk = c.read_until_close(0.02, &closed);
      if (chunk.find("data: ") != std::string::npos) {
        gaps.push_back(since(last));
        last = Clock::now();
      }
      all += chunk;
      if (all.find("[DONE]") != std::string::npos) break;
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  const auto t0 = Clock::now();
  Raw big(r.port);
  big.send(
      "POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: "
      "52428800\r\n\r\n");
  big.send(R"({"model":"twin","prompt":")" + std::string(1 << 20, 'a'));  // the first MiB of 50
  const std::string rep = big.read_until("\r\n\r\n", 5.0);
  const double answered_s = since(t0);
  EXPECT_EQ(status_of(rep), 413) << rep;
  EXPECT_LT(answered_s, 1.0);
  streamer.join();
  double worst = 0;
  for (std::size_t i = 1; i < gaps.size(); ++i) worst = std::max(worst, gaps[i]);
  EXPECT_LT(worst, 0.25) << "another connection's stream stalled";

  // A chunked body (no Content-Length) is cut off once it passes the limit.
  ServerOptions small;
  small.max_body_bytes = 4096;
  Running r2(small);
  Raw c(r2.port);
  c.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
  const std::string chunk(1000, 'a');
  char size[16];
  std::snprintf(size, sizeof size, "%zx\r\n", chunk.size());
  for (int i = 0; i < 8; ++i) c.send(size + chunk + "\r\n");
  EXPECT_EQ(status_of(c.read_until("\r\n\r\n", 5.0)), 413);
  expect_healthy(r);
  expect_healthy(r2);
}

TEST(SimServeBadRequest, Http10ClientGetsNoChunkedEncoding) {
  Running r;
  bool closed = false;
  Raw c(r.port);
  c.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":3,"stream":true})", "",
              "HTTP/1.0"));
  const std::string rep = c.read_until_close(5.0, &closed);
  EXPECT_TRUE(closed) << "an HTTP/1.0 stream ends with the connection";
  EXPECT_EQ(rep.rfind("HTTP/1.0 200", 0), 0u) << rep;
  EXPECT_EQ(rep.find("chunked"), std::string::npos) << rep;
  const auto ev = events(body_of(rep));  // close-delimited: the body is the events themselves
  ASSERT_EQ(ev.size(), 4u) << rep;
  EXPECT_EQ(ev[3], "[DONE]");
  EXPECT_EQ(body_of(rep).rfind("data: ", 0), 0u) << "no chunk-size lines in the body";
  // Non-streaming: Content-Length, and the connection closes after it.
  Raw d(r.port);
  d.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":3})", "", "HTTP/1.0"));
  const std::string full = d.read_until_close(5.0, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(json::parse(body_of(full))["usage"]["completion_tokens"], 3);
  expect_healthy(r);
}

TEST(SimServeBadRequest, ConnectionCloseOnAStreamClosesAfterIt) {
  Running r;
  bool closed = false;
  Raw c(r.port);
  c.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":3,"stream":true})",
              "Connection: close\r\n"));
  const std::string rep = c.read_until_close(5.0, &closed);
  EXPECT_TRUE(closed) << "the server must close after the stream";
  EXPECT_NE(rep.find("connection: close"), std::string::npos) << rep;
  EXPECT_NE(rep.find("0\r\n\r\n"), std::string::npos) << "the chunked body is terminated";
  expect_healthy(r);
}

TEST(SimServeBadRequest, ClosedConnectionsFreeTheirSessions) {
  Running r;
  for (int i = 0; i < 200; ++i) {  // server-closed (Connection: close) and client-closed keep-alive ones
    const bool server_closes = i % 2 == 0;
    Raw c(r.port);
    c.send(std::string("GET /health HTTP/1.1\r\nHost: t\r\n") +
           (server_closes ? "Connection: close\r\n" : "") + "\r\n");
    c.read_until(server_closes ? "\r\n\r\n" : "Content-Length: 0\r\n\r\n", 2.0);
    if (server_closes) c.read_until_close(2.0);
  }
  const auto t0 = Clock::now();
  while (r.server->stats().sessions > 0 && since(t0) < 3.0)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(r.server->stats().sessions, 0u);
  expect_healthy(r);
}

TEST(SimServeBadRequest, AcceptBacksOffAtTheDescriptorLimit) {
  Running r;
  std::size_t open_fds = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) (void)e, ++open_fds;
  std::vector<int> clients;
  for (int i = 0; i < 40; ++i) clients.push_back(::socket(AF_INET, SOCK_STREAM, 0));  // before the limit
  rlimit old{};
  getrlimit(RLIMIT_NOFILE, &old);
  rlimit low = old;
  low.rlim_cur = open_fds + clients.size() + 4;  // room for 4 accepted connections, then EMFILE
  ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(r.port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  for (int fd : clients) ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // queued in the backlog
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  const auto errors = r.server->stats().accept_errors;
  for (int fd : clients) ::close(fd);
  setrlimit(RLIMIT_NOFILE, &old);
  EXPECT_GE(errors, 1u) << "the limit was never reached";
  EXPECT_LE(errors, 20u) << "accept spun instead of backing off (10 ms doubling to 1 s: ~7 tries in 1 s)";
  expect_healthy(r);
}

TEST(SimServeBadRequest, ClientHangUpCancelsItsRequestInTheTwin) {
  Running r;
  for (bool stream : {false, true}) {
    const int cancels = r.tl.cancels.load();
    {
      Raw c(r.port);  // 2000 tokens x 5 ms = 10 s if nobody noticed
      c.send(
          post("/v1/completions", std::string(R"({"model":"twin","prompt":"x","max_tokens":2000,"stream":)") +
                                      (stream ? "true" : "false") + "}"));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      EXPECT_EQ(r.server->stats().requests_in_flight, 1u);
    }
    const auto t0 = Clock::now();
    while (r.tl.cancels.load() == cancels && since(t0) < 2.0)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(r.tl.cancels.load(), cancels + 1) << (stream ? "stream" : "non-streaming");
    EXPECT_LT(since(t0), 1.0);
    EXPECT_EQ(r.server->stats().requests_in_flight, 0u);
  }
  expect_healthy(r);
}

TEST(SimServeBadRequest, SlowClientsAreClosedAfterTheHeadAndBodyTimeouts) {
  ServerOptions o;
  o.header_timeout_s = 0.3;
  o.body_timeout_s = 0.3;
  Running r(o);
  {  // slowloris: a header byte every 50 ms, forever
    Raw c(r.port);
    const auto t0 = Clock::now();
    c.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\n");
    bool closed = false;
    for (int i = 0; i < 40 && !closed; ++i) {
      c.send("X");
      c.read_until_close(0.05, &closed);
    }
    EXPECT_TRUE(closed);
    EXPECT_LT(since(t0), 1.0);
  }
  {  // a body that stops half-way
    Raw c(r.port);
    const auto t0 = Clock::now();
    c.send("POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n{\"model\":");
    bool closed = false;
    c.read_until_close(2.0, &closed);
    EXPECT_TRUE(closed);
    EXPECT_LT(since(t0), 1.0);
  }
  {  // a stream longer than the timeouts is not cut: waiting for the next request is not a stall
    Raw c(r.port);
    c.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":150,"stream":true})"));
    const std::string rep = c.read_until("0\r\n\r\n", 5.0);  // 20 ms + 149 x 5 ms = 0.77 s
    EXPECT_EQ(events(rep).size(), 151u);
  }
  expect_healthy(r);
}

TEST(SimServeBadRequest, PipelinedRequestsAreAnsweredInOrder) {
  Running r;
  Raw c(r.port);
  c.send(post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":5,"seed":1})") +
         "GET /health HTTP/1.1\r\nHost: t\r\n\r\n" +
         post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":2,"seed":2})",
              "Connection: close\r\n"));
  bool closed = false;
  const std::string all = c.read_until_close(5.0, &closed);
  EXPECT_TRUE(closed);
  const auto first = all.find("\"completion_tokens\":5");
  const auto health = all.find("Content-Length: 0");
  const auto second = all.find("\"completion_tokens\":2");
  ASSERT_NE(first, std::string::npos) << all;
  ASSERT_NE(health, std::string::npos) << all;
  ASSERT_NE(second, std::string::npos) << all;
  EXPECT_LT(first, health);
  EXPECT_LT(health, second);
  expect_healthy(r);
}

// The engine's own verdict (Timeline::admit, SGLang's KV-pool bound in the twin): a refusal is a 400 with its
// text, streamed or not; a clipped request ends after the tokens the engine emits, its usage says so.
TEST(SimServeBadRequest, TheEnginesVerdictRefusesOrClips) {
  Running r;
  r.tl.admit = [](int prompt_tokens, int output_len) {
    if (prompt_tokens > 1) return simserve::Admission{"Input length too long for the pool", 0};
    return simserve::Admission{std::nullopt, std::min(output_len, 3)};
  };
  for (bool stream : {false, true}) {
    const std::string rep = roundtrip(
        r.port, post("/v1/completions",
                     std::string(R"({"model":"twin","prompt":"Hello world","max_tokens":5,"stream":)") +
                         (stream ? "true" : "false") + "}",
                     "Connection: close\r\n"));
    EXPECT_EQ(status_of(rep), 400) << rep;
    EXPECT_EQ(error_of(rep)["message"], "Input length too long for the pool");
  }
  const std::string clipped = roundtrip(
      r.port,
      post("/v1/completions", R"({"model":"twin","prompt":"x","max_tokens":10})", "Connection: close\r\n"));
  EXPECT_EQ(status_of(clipped), 200) << clipped;
  EXPECT_NE(clipped.find("\"completion_tokens\":3"), std::string::npos) << clipped;
}

TEST(SimServeBadRequest, AnExceptionInAHandlerIsA500ForThatRequestOnly) {
  Running r;
  r.tl.on_submit = [](int prompt_tokens) {
    if (prompt_tokens == 1) throw std::runtime_error("twin failure");
  };
  for (bool stream : {false, true}) {
    const std::string rep =
        roundtrip(r.port, post("/v1/completions",
                               std::string(R"({"model":"twin","prompt":"x","max_tokens":2,"stream":)") +
                                   (stream ? "true" : "false") + "}",
                               "Connection: close\r\n"));
    EXPECT_EQ(status_of(rep), 500) << rep;
    EXPECT_EQ(error_of(rep)["message"], "internal error: twin failure");
  }
  EXPECT_EQ(r.server->stats().handler_errors, 2u);
  expect_healthy(r);  // "Hello world" is 2 tokens: served
}
