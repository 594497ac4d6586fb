// Sharded schedules: --shard parsing, the partition, --max-concurrency parts, --start-at bounds, the
// per-request record codec, the workload fingerprint, the NTP offset (pure math and one real UDP exchange).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <numeric>
#include <set>
#include <thread>

#include "bench/shard.h"
#include "servelab/bench/clock_offset.h"
#include "servelab/common/python_json.h"

namespace servelab::bench {
namespace {

TEST(ShardSpec, ParsesZeroBasedIndexAndRefusesBadValues) {
  const ShardSpec s = parse_shard_spec("1/3");
  EXPECT_EQ(s.index, 1);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(parse_shard_spec("0/1").count, 1);
  auto message = [](const std::string& text) {
    try {
      parse_shard_spec(text);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("2/2").find("0-based and must be in [0, 1], got 2"), std::string::npos) << message("2/2");
  EXPECT_NE(message("-1/2").find("0-based"), std::string::npos);
  EXPECT_NE(message("0/0").find("number of shards must be in [1, 4096], got 0"), std::string::npos);
  EXPECT_NE(message("1").find("expected I/N"), std::string::npos);
  EXPECT_NE(message("a/2").find("integers"), std::string::npos);
  EXPECT_NE(message("1/2x").find("integers"), std::string::npos);
}

TEST(ShardIndices, PartitionTheRequestsExactly) {
  EXPECT_EQ(shard_indices(7, {0, 3}), (std::vector<std::size_t>{0, 3, 6}));
  EXPECT_EQ(shard_indices(7, {1, 3}), (std::vector<std::size_t>{1, 4}));
  EXPECT_EQ(shard_indices(7, {2, 3}), (std::vector<std::size_t>{2, 5}));
  EXPECT_TRUE(shard_indices(2, {2, 3}).empty());
  for (std::size_t n : {0u, 1u, 5u, 64u, 1001u}) {
    for (int count : {1, 2, 3, 8}) {
      std::multiset<std::size_t> all;
      for (int i = 0; i < count; ++i)
        for (auto idx : shard_indices(n, {i, count})) all.insert(idx);
      ASSERT_EQ(all.size(), n) << n << " " << count;
      std::size_t expect = 0;
      for (auto idx : all) EXPECT_EQ(idx, expect++);  // each index exactly once
    }
  }
}

TEST(ShardMaxConcurrency, SplitsTheLimitSoThatThePartsSumToIt) {
  EXPECT_EQ(shard_max_concurrency(10, {0, 3}), 4);
  EXPECT_EQ(shard_max_concurrency(10, {1, 3}), 3);
  EXPECT_EQ(shard_max_concurrency(10, {2, 3}), 3);
  EXPECT_EQ(shard_max_concurrency(2, {1, 2}), 1);
  EXPECT_THROW(shard_max_concurrency(1, {0, 2}), ConfigError);
}

TEST(StartAt, RefusesThePastAndTheFarFuture) {
  const double now = 1.7e9;
  EXPECT_NO_THROW(check_start_at(now + 30, now));
  EXPECT_NO_THROW(check_start_at(now + kMaxStartAheadS, now));
  try {
    check_start_at(now - 5, now);
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("has passed (5.000 s ago"), std::string::npos) << e.what();
  }
  try {
    check_start_at(now * 1000, now);  // milliseconds by mistake
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("not milliseconds"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_start_at(std::numeric_limits<double>::infinity(), now), ConfigError);
}

std::string resolve_error(const RunOptions& c) {
  try {
    resolve(c);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(ShardFlags, ResolveChecksWhatAShardNeeds) {
  RunOptions c;
  c.shard = "1/2";
  EXPECT_NE(resolve_error(c).find("--shard 1/2 needs --start-at"), std::string::npos) << resolve_error(c);
  c.start_at = 1.7e9;
  EXPECT_NE(resolve_error(c).find("needs --save-result and --save-detailed"), std::string::npos);
  c.save_result = c.save_detailed = true;
  EXPECT_EQ(resolve_error(c), "no error");
  EXPECT_EQ(resolve(c).request_id_prefix,
            shard_request_id_prefix(0, 1.7e9));  // derived, the same on each shard
  c.request_id_prefix = "mine-";
  EXPECT_EQ(resolve(c).request_id_prefix, "mine-");
  c.max_concurrency = 1;
  EXPECT_NE(resolve_error(c).find("each shard needs at least one slot"), std::string::npos);
  c.max_concurrency.reset();
  RunOptions turns = c;  // a valid multi-turn run otherwise
  turns.multi_turn = true;
  turns.dataset_name = "sharegpt";
  turns.dataset_path = "conversations.json";
  turns.backend = "openai-chat";
  turns.endpoint = "/v1/chat/completions";
  EXPECT_NE(resolve_error(turns).find("--multi-turn is not supported"), std::string::npos)
      << resolve_error(turns);
  c.append_result = true;
  EXPECT_NE(resolve_error(c).find("--append-result"), std::string::npos);
  RunOptions plain;
  plain.start_at = 1.7e9;
  EXPECT_NE(resolve_error(plain).find("--start-at needs --shard"), std::string::npos);
  plain.start_at.reset();
  plain.clock_reference = "ntp.example.org";
  EXPECT_NE(resolve_error(plain).find("--clock-reference needs --shard"), std::string::npos);
}

TEST(ShardRequestIdPrefix, SameOnEveryShardOfOneStartAndDifferentOtherwise) {
  const std::string a = shard_request_id_prefix(42, 1.7e9 + 60);
  EXPECT_EQ(a, shard_request_id_prefix(42, 1.7e9 + 60));
  EXPECT_NE(a, shard_request_id_prefix(43, 1.7e9 + 60));
  EXPECT_NE(a, shard_request_id_prefix(42, 1.7e9 + 61));
  EXPECT_EQ(a.size(), std::string("bench-01234567-").size());
}

TEST(ShardPlan, TakesTheShardsRequestsAndTimesAndFingerprintsTheWholeSchedule) {
  std::vector<client::PlannedRequest> reqs(5);
  for (int i = 0; i < 5; ++i) {
    reqs[i].prompt = "p" + std::to_string(i);
    reqs[i].prompt_len = 10 + i;
    reqs[i].output_len = 20 + i;
  }
  const std::vector<double> sched = {0.1, 0.2, 0.3, 0.4, 0.5};
  const ShardPlan p = make_shard_plan({1, 2}, 123.0, reqs, sched);
  EXPECT_EQ(p.record.indices, (std::vector<std::size_t>{1, 3}));
  ASSERT_EQ(p.requests.size(), 2u);
  EXPECT_EQ(p.requests[1].prompt, "p3");
  EXPECT_EQ(p.schedule_s, (std::vector<double>{0.2, 0.4}));
  EXPECT_EQ(p.record.num_requests, 5u);
  EXPECT_EQ(p.record.fingerprint, make_shard_plan({0, 2}, 123.0, reqs, sched).record.fingerprint);
  auto other = sched;
  other[4] = std::nextafter(0.5, 1.0);  // one send time one ulp later: another schedule
  EXPECT_NE(p.record.fingerprint, workload_fingerprint(reqs, other));
  auto longer = reqs;
  longer[0].output_len = 21;
  EXPECT_NE(p.record.fingerprint, workload_fingerprint(longer, sched));
  auto renamed = reqs;
  renamed[0].request_id = "other-0";  // ids are not the schedule
  EXPECT_EQ(p.record.fingerprint, workload_fingerprint(renamed, sched));
  EXPECT_THROW(make_shard_plan({0, 2}, 0.0, reqs, std::vector<double>{0.1}), std::invalid_argument);
}

TEST(RequestRecord, RoundTripsEveryFieldExactly) {
  metrics::RequestOutput o;
  o.success = false;
  o.failure = metrics::FailureKind::kServerError;
  o.http_status = 200;
  o.error = "boom \"quoted\"";
  o.prompt_len = 1001;
  o.dataset_prompt_len = 1000;
  o.output_tokens = 3;
  o.output_len = 50;
  o.intended_send_time_s = 0.1 + 0.2;  // 0.30000000000000004: shortest repr must round-trip
  o.dispatch_time_s = 1.0 / 3.0;
  o.send_time_s = 0.5000001;
  o.wire_time_s = 0.50001;
  o.ttft_s = 0.0123456789012345;
  o.ttfct_s = -1.0;
  o.itl_s = {0.001, 1e-7, 2.5e-3};
  o.chunk_tokens = {1, 2};
  o.latency_s = 0.1;
  o.reasoning_tokens = 4;
  o.usage_prompt_tokens = 1001;
  o.usage_completion_tokens = -1;
  o.tokenizer_output_tokens = 3;
  o.usage_rejected = std::int64_t{1} << 40;
  o.generated_text = "héllo";
  o.request_id = "bench-00000000-7";
  // As the result file writes it (Python json.dumps float repr).
  const nlohmann::json j =
      nlohmann::json::parse(common::python_json_dumps(request_to_json(o), common::InvalidUtf8::kReplace));
  const metrics::RequestOutput b = request_from_json(j);
  EXPECT_EQ(b.failure, o.failure);
  EXPECT_EQ(b.error, o.error);
  EXPECT_EQ(b.dataset_prompt_len, 1000);
  EXPECT_EQ(b.intended_send_time_s, o.intended_send_time_s);  // bit for bit
  EXPECT_EQ(b.dispatch_time_s, o.dispatch_time_s);
  EXPECT_EQ(b.send_time_s, o.send_time_s);
  EXPECT_EQ(b.wire_time_s, o.wire_time_s);
  EXPECT_EQ(b.ttft_s, o.ttft_s);
  EXPECT_EQ(b.itl_s, o.itl_s);
  EXPECT_EQ(b.chunk_tokens, o.chunk_tokens);
  EXPECT_EQ(b.usage_rejected, o.usage_rejected);
  EXPECT_EQ(b.generated_text, o.generated_text);
  EXPECT_EQ(b.request_id, o.request_id);
  nlohmann::json bad = j;
  bad.erase("ttft_s");
  try {
    request_from_json(bad);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("missing \"ttft_s\""), std::string::npos);
  }
  bad = j;
  bad["failure"] = "gremlins";
  EXPECT_THROW(request_from_json(bad), std::runtime_error);
}

TEST(NtpSample, OffsetAndDelayOfOneExchange) {
  // Client 5 ms behind the server; 2 ms each way; server holds it 1 ms.
  // t1 = 100.000 (client), t2 = 100.007 (server: +2 ms path +5 ms offset), t3 = 100.008, t4 = 100.005
  // (client).
  const NtpSample s = ntp_sample(100.000, 100.007, 100.008, 100.005);
  EXPECT_NEAR(s.offset_ms, -5.0, 1e-9);  // this host minus the reference
  EXPECT_NEAR(s.delay_ms, 4.0, 1e-9);
  // Asymmetric path (3 ms out, 1 ms back), no offset: the error is half the asymmetry, within delay / 2.
  const NtpSample a = ntp_sample(10.0, 10.003, 10.003, 10.004);
  EXPECT_NEAR(a.offset_ms, -1.0, 1e-9);
  EXPECT_NEAR(a.delay_ms, 4.0, 1e-9);
}

// A UDP socket bound to 127.0.0.1 on a free port (written to `port`); the caller closes it.
int bind_loopback_udp(int& port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  port = ntohs(a.sin_port);
  return fd;
}

// A one-shot SNTP server on 127.0.0.1 whose clock is `ahead_s` ahead of this host's.
class FakeNtpServer {
 public:
  explicit FakeNtpServer(double ahead_s) : ahead_s_(ahead_s) {
    fd_ = bind_loopback_udp(port_);
    timeval tv{2, 0};
    setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    thread_ = std::thread([this] { serve(); });
  }
  ~FakeNtpServer() {
    thread_.join();
    close(fd_);
  }
  int port() const { return port_; }

 private:
  static void put(unsigned char* p, double unix_s) {
    const double ntp = unix_s + 2208988800.0;
    const auto secs = static_cast<std::uint64_t>(ntp);
    const auto frac = static_cast<std::uint64_t>((ntp - static_cast<double>(secs)) * 4294967296.0);
    const std::uint64_t v = (secs << 32) | frac;
    for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (56 - 8 * i));
  }
  static double now() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  }
  void serve() {
    for (int k = 0; k < 4; ++k) {
      unsigned char buf[48];
      sockaddr_in from{};
      socklen_t len = sizeof from;
      if (recvfrom(fd_, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len) != 48) return;
      const double t2 = now() + ahead_s_;
      unsigned char rep[48] = {};
      rep[0] = (4 << 3) | 4;                     // version 4, server
      rep[1] = 2;                                // stratum 2
      rep[3] = static_cast<unsigned char>(-20);  // precision 2^-20 s
      std::copy(buf + 40, buf + 48, rep + 24);   // origin = client's transmit
      put(rep + 32, t2);
      put(rep + 40, now() + ahead_s_);
      sendto(fd_, rep, sizeof rep, 0, reinterpret_cast<sockaddr*>(&from), len);
    }
  }
  double ahead_s_;
  int fd_ = -1;
  int port_ = 0;
  std::thread thread_;
};

TEST(MeasureNtpOffset, MeasuresAKnownOffsetOverUdp) {
  FakeNtpServer server(0.250);  // the reference is 250 ms ahead: this host is 250 ms behind
  const ClockOffset c = measure_ntp_offset("127.0.0.1:" + std::to_string(server.port()), 4, 1.0);
  EXPECT_EQ(c.method, "ntp");
  EXPECT_EQ(c.reference, "127.0.0.1:" + std::to_string(server.port()));
  // The true offset is -250 ms; the measured one is within its own uncertainty (delay / 2 + precision).
  EXPECT_NEAR(c.offset_ms, -250.0, c.uncertainty_ms + 1e-3);
  EXPECT_GT(c.uncertainty_ms, 0.0);
  EXPECT_LT(c.uncertainty_ms, 50.0);  // loopback: well under the 250 ms measured
  EXPECT_EQ(c.clock_id, host_clock_id());
}

TEST(MeasureNtpOffset, NamesTheReferenceWhenNothingAnswers) {
  // A bound UDP port that never answers.
  int port = 0;
  const int fd = bind_loopback_udp(port);
  const std::string ref = "127.0.0.1:" + std::to_string(port);
  try {
    measure_ntp_offset(ref, 2, 0.05);
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(ref), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no valid NTP reply in 2 tries"), std::string::npos) << e.what();
  }
  close(fd);
  EXPECT_THROW(measure_ntp_offset("[::1", 1, 0.05), std::runtime_error);
}

TEST(KernelClockEstimate, RecordsTheKernelsErrorAndThisBoot) {
  const ClockOffset c = kernel_clock_estimate();
  EXPECT_EQ(c.method, "kernel");
  EXPECT_EQ(c.offset_ms, 0.0);
  EXPECT_GE(c.uncertainty_ms, 0.0);
  EXPECT_FALSE(c.clock_id.empty());
  EXPECT_EQ(c.clock_id, host_clock_id());
}

}  // namespace
}  // namespace servelab::bench
