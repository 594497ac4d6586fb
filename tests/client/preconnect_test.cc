// Offered load as asked (issue 11 §5): connections opened before t = 0 (ClientOptions::preconnect), the
// wire time of every request, and the OS-limit checks a burst of connections needs (os_limits.h).
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <stop_token>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/error.hpp>

#include "client/os_limits.h"
#include "client/preconnect.h"
#include "servelab/client/client.h"
#include "support/stream_server.h"

namespace servelab::client {
namespace {

using metrics::FailureKind;
using test_support::StreamServer;
using test_support::StreamServerOptions;

std::vector<PlannedRequest> plan(std::size_t n) {
  std::vector<PlannedRequest> r(n);
  for (std::size_t i = 0; i < n; ++i) {
    r[i].prompt = "prompt " + std::to_string(i);
    r[i].output_len = 3;
    r[i].request_id = "req-" + std::to_string(i);
  }
  return r;
}

ClientOptions options_for(const std::string& url, int threads) {
  ClientOptions o;
  o.api_url = url;
  o.model = "m";
  o.api_key = "";
  o.num_threads = threads;
  o.request_timeout_s = 10;
  return o;
}

TEST(Preconnect, BurstRunsOnThePreOpenedConnectionsOnly) {
  StreamServerOptions so;
  so.ttft_s = 0.020;
  so.itl_s = 0.002;
  StreamServer server(so);
  ClientOptions o = options_for(server.url("/v1/completions"), 1);
  o.max_concurrency = 4;
  o.preconnect = 4;
  const auto reqs = plan(8);
  const LoadResult r = run_load(o, reqs, std::vector<double>(8, 0.0));
  EXPECT_EQ(r.preconnected, 4u);
  EXPECT_GE(r.preconnect_s, 0.0);
  EXPECT_TRUE(r.warnings.empty()) << r.warnings.front();
  for (const auto& out : r.outputs) {
    ASSERT_TRUE(out.success) << out.error;
    // The request left after it started and before its first token came back.
    EXPECT_GE(out.wire_time_s, out.send_time_s);
    EXPECT_LE(out.wire_time_s, out.send_time_s + out.ttft_s);
  }
  EXPECT_EQ(server.connections_accepted(), 4u);  // 8 requests, 4 slots, 4 pre-opened connections: no other
  EXPECT_EQ(server.requests_received(), 8u);
}

TEST(Preconnect, SharesFollowTheRequestsOfEachThread) {
  StreamServer server(StreamServerOptions{});
  ClientOptions o = options_for(server.url("/v1/completions"), 2);
  o.preconnect = 6;  // 2 threads x 3 requests: 3 each
  const LoadResult r = run_load(o, plan(6), std::vector<double>(6, 0.0));
  EXPECT_EQ(r.preconnected, 6u);
  for (const auto& out : r.outputs) EXPECT_TRUE(out.success) << out.error;
  EXPECT_EQ(server.connections_accepted(), 6u);
  EXPECT_EQ(detail::preconnect_share(6, 3, 6), 3u);
}

TEST(Preconnect, HttpsConnectionsAreHandshakenAheadAndVerified) {
  StreamServerOptions so;
  so.tls = true;
  StreamServer server(so);
  ClientOptions o = options_for(server.url("/v1/completions"), 1);
  o.insecure = true;
  o.max_concurrency = 2;
  o.preconnect = 2;
  const LoadResult ok = run_load(o, plan(6), std::vector<double>(6, 0.0));
  EXPECT_EQ(ok.preconnected, 2u);
  for (const auto& out : ok.outputs) ASSERT_TRUE(out.success) << out.error;
  EXPECT_EQ(server.connections_accepted(), 2u);
  o.insecure = false;  // self-signed: the pre-opened handshakes fail, and so do the requests
  const LoadResult bad = run_load(o, plan(2), std::vector<double>(2, 0.0));
  EXPECT_EQ(bad.preconnected, 0u);
  ASSERT_EQ(bad.warnings.size(), 1u);
  EXPECT_NE(
      bad.warnings[0].find("of 2 connections before the run (the others connect on demand): TLS handshake: "),
      std::string::npos)
      << bad.warnings[0];
  for (const auto& out : bad.outputs) EXPECT_EQ(out.failure, FailureKind::kConnect);
}

TEST(Preconnect, UnreachableServerIsAWarningAndTheRequestsFailAsConnects) {
  std::uint16_t port;
  {
    StreamServer server(StreamServerOptions{});
    port = server.port();
  }  // closed now
  ClientOptions o = options_for("http://127.0.0.1:" + std::to_string(port) + "/v1/completions", 1);
  o.preconnect = 3;
  const LoadResult r = run_load(o, plan(3), std::vector<double>(3, 0.0));
  EXPECT_EQ(r.preconnected, 0u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(
      r.warnings[0].rfind("pre-opened 0 of 3 connections before the run (the others connect on demand): "
                          "connect: ",
                          0),
      0u)
      << r.warnings[0];
  for (const auto& out : r.outputs) {
    EXPECT_EQ(out.failure, FailureKind::kConnect);
    EXPECT_EQ(out.wire_time_s, -1.0);  // never left
  }
}

TEST(Preconnect, StopBeforeTheRunOpensNothing) {
  StreamServer server(StreamServerOptions{});
  ClientOptions o = options_for(server.url("/v1/completions"), 2);
  o.preconnect = 4;
  std::stop_source stop;
  stop.request_stop();
  const LoadResult r = run_load(o, plan(4), std::vector<double>(4, 0.0), {}, stop.get_token());
  EXPECT_EQ(r.preconnected, 0u);
  EXPECT_EQ(r.num_not_sent, 4u);
  EXPECT_EQ(server.connections_accepted(), 0u);
}

TEST(OsLimits, BurstConnections) {
  const std::vector<double> burst = {0.0, 0.0, 0.0, 1.5};
  EXPECT_EQ(detail::burst_connections(burst, 0, 0), 3u);
  EXPECT_EQ(detail::burst_connections(burst, 2, 0), 2u);
  EXPECT_EQ(detail::burst_connections(burst, 2, 5), 5u);
  EXPECT_EQ(detail::burst_connections(std::vector<double>{0.5, 0.5, 1.0}, 0, 0), 2u);
  EXPECT_EQ(detail::burst_connections({}, 0, 7), 7u);
}

TEST(OsLimits, ConnectionLimitProblemNamesTheLimit) {
  EXPECT_EQ(detail::connection_limit_problem(5000, 20000, 20000, 28232), std::nullopt);
  EXPECT_EQ(detail::connection_limit_problem(5000, 5064, 5064, 0), std::nullopt);  // exactly enough
  EXPECT_EQ(
      detail::connection_limit_problem(5000, 1024, 4096, 28232),
      "5000 concurrent connections need about 5064 file descriptors, but the limit (RLIMIT_NOFILE) is 1024 "
      "(hard limit 4096): raise it (ulimit -n / ulimit -Hn, LimitNOFILE= in systemd, nofile in "
      "/etc/security/limits.conf) or lower --max-concurrency");
  EXPECT_EQ(detail::connection_limit_problem(30000, 1 << 20, 1 << 20, 28232),
            "30000 concurrent connections to one server need as many local ports, but "
            "net.ipv4.ip_local_port_range has 28232: widen it (sysctl -w net.ipv4.ip_local_port_range=\"1024 "
            "65535\") or lower --max-concurrency");
  EXPECT_EQ(detail::connection_limit_problem(30000, 1 << 20, 1 << 20, 0), std::nullopt);  // range unknown
}

TEST(OsLimits, ConnectErrorHints) {
  namespace error = boost::asio::error;
  EXPECT_NE(
      detail::connect_error_hint(error::no_descriptors).find("file descriptor limit reached: RLIMIT_NOFILE"),
      std::string::npos);
  EXPECT_NE(detail::connect_error_hint(
                boost::system::errc::make_error_code(boost::system::errc::address_not_available))
                .find("no free local port"),
            std::string::npos);
  EXPECT_EQ(detail::connect_error_hint(error::connection_refused), "");
}

TEST(OsLimits, RunLoadRefusesABurstOverTheDescriptorLimitBeforeSending) {
  // In a child process (a death test forks): its descriptor limit lowered to 256 for good.
  auto child = [] {
    const rlimit low{256, 256};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) std::_Exit(2);
    ClientOptions o = options_for("http://127.0.0.1:1/v1/completions", 1);
    const std::vector<PlannedRequest> reqs(300);
    try {
      (void)run_load(o, reqs, std::vector<double>(300, 0.0));
    } catch (const std::invalid_argument& e) {
      const std::string expected =
          "run_load: 300 concurrent connections need about 364 file descriptors, but the limit "
          "(RLIMIT_NOFILE) is "
          "256 (hard limit 256)";
      std::fputs(e.what(), stderr);
      std::_Exit(std::string(e.what()).rfind(expected, 0) == 0 ? 0 : 3);
    }
    std::_Exit(4);
  };
  EXPECT_EXIT(child(), testing::ExitedWithCode(0), "RLIMIT_NOFILE");
  // 100 requests with --max-concurrency 100 fit under 256: the check passes (the requests then fail to
  // connect to port 1, which is no part of this test).
  auto fits = [] {
    const rlimit low{256, 256};
    if (setrlimit(RLIMIT_NOFILE, &low) != 0) std::_Exit(2);
    ClientOptions o = options_for("http://127.0.0.1:1/v1/completions", 1);
    o.max_concurrency = 100;
    const std::vector<PlannedRequest> reqs(300);
    const LoadResult r = run_load(o, reqs, std::vector<double>(300, 0.0));
    std::_Exit(r.outputs.size() == 300 && r.outputs[0].failure == FailureKind::kConnect ? 0 : 5);
  };
  EXPECT_EXIT(fits(), testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace servelab::client
