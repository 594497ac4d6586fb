// bench merge: hand-built shard results merge into the metrics computed on the union; shards that do not
// belong together are refused naming the file; clock offsets move a shard's times onto the common clock.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "bench/shard.h"
#include "servelab/bench/merge.h"
#include "servelab/metrics/metrics.h"

namespace servelab::bench {
namespace {

// Request i of a 6-request schedule: sent at 0.1 i s, TTFT 10 + i ms, 4 chunks 5 ms apart, 100 + i prompt
// tokens.
metrics::RequestOutput request(int i) {
  metrics::RequestOutput o;
  o.success = i != 4;  // request 4 failed (HTTP 500)
  o.failure = o.success ? metrics::FailureKind::kNone : metrics::FailureKind::kHttpStatus;
  o.http_status = o.success ? 200 : 500;
  o.prompt_len = o.dataset_prompt_len = 100 + i;
  o.output_len = 4;
  o.output_tokens = o.success ? 4 : 0;
  o.intended_send_time_s = 0.1 * i;
  o.dispatch_time_s = o.send_time_s = 0.1 * i + 0.0001;
  o.wire_time_s = o.send_time_s + 0.00005;
  o.ttft_s = 0.010 + 0.001 * i;
  o.itl_s = o.success ? std::vector<double>{0.005, 0.005, 0.005} : std::vector<double>{};
  o.latency_s = o.success ? o.ttft_s + 0.015 : 0.0;
  o.request_id = "bench-x-" + std::to_string(i);
  return o;
}

constexpr std::size_t kN = 6;
// The whole run as one client would have seen it: last completion = request 5 at 0.5001 + 0.015 + 0.015.
const double kDuration = 0.5001 + 0.030;

struct Fixture {
  RunOptions config;
  ResolvedConfig resolved;
  Fixture() {
    config.seed = 7;
    config.num_prompts = static_cast<int>(kN);
    config.request_rate = "10";
    resolved.request_rate = 10.0;
    config.metric_percentiles = "50,99";
    config.percentile_metrics = "ttft,tpot,itl,e2el";
    config.goodput = {"ttft:12"};
  }
  // Shard `spec` of the 6 requests; its clock `offset_ms` ahead of the reference on host `clock_id`.
  ShardInput shard(ShardSpec spec, double offset_ms = 0.0, std::string clock_id = "host-a",
                   double uncertainty_ms = 0.0) const {
    ShardRecord rec;
    rec.spec = spec;
    rec.start_at_s = 1.7e9;
    rec.fingerprint = "0123456789abcdef";
    rec.num_requests = kN;
    rec.indices = shard_indices(kN, spec);
    rec.clock.offset_ms = offset_ms;
    rec.clock.uncertainty_ms = uncertainty_ms;
    rec.clock.method = "ntp";
    rec.clock.clock_id = std::move(clock_id);
    std::vector<metrics::RequestOutput> outs;
    double last = 0.0;
    for (auto i : rec.indices) {
      outs.push_back(request(static_cast<int>(i)));
      // On its own clock the shard's t = 0 came `offset_ms` early: its times read later than the reference's.
      outs.back().dispatch_time_s += offset_ms / 1000.0;
      outs.back().send_time_s += offset_ms / 1000.0;
      outs.back().wire_time_s += offset_ms / 1000.0;
      last = std::max(last, outs.back().send_time_s + std::max(outs.back().latency_s, outs.back().ttft_s));
    }
    rec.duration_s = last;
    ShardInput in;
    in.name = "shard" + std::to_string(spec.index) + ".json";
    in.result = {{"date", "20261201-18000" + std::to_string(spec.index)},
                 {"servelab",
                  {{"interrupted", false},
                   {"shard", nlohmann::json::parse(
                                 shard_json(rec, config, resolved, "m/model", "m/tok", outs).dump())}}}};
    return in;
  }
};

metrics::MetricsOptions options() {
  metrics::MetricsOptions o;
  o.percentiles = {50, 99};
  o.goodput.ttft_ms = 12;
  return o;
}

TEST(BenchMerge, EqualsTheMetricsOfTheUnion) {
  Fixture f;
  std::vector<metrics::RequestOutput> all;
  for (std::size_t i = 0; i < kN; ++i) all.push_back(request(static_cast<int>(i)));
  const metrics::BenchmarkMetrics want = metrics::compute_metrics(all, kDuration, options());
  const MergeResult m = merge_shards({f.shard({1, 2}), f.shard({0, 2})}, true);  // any order
  EXPECT_EQ(m.metrics.completed, 5);
  EXPECT_EQ(m.metrics.failed, 1);
  EXPECT_EQ(m.metrics.total_input, 100 + 101 + 102 + 103 + 105);
  EXPECT_EQ(m.metrics.total_output, 20);
  EXPECT_DOUBLE_EQ(m.metrics.duration_s, kDuration);
  EXPECT_DOUBLE_EQ(m.metrics.request_throughput, want.request_throughput);
  EXPECT_DOUBLE_EQ(*m.metrics.request_goodput, 3 / kDuration);  // TTFT 10, 11, 12 ms <= 12 ms
  EXPECT_DOUBLE_EQ(m.metrics.ttft.mean_ms, (10 + 11 + 12 + 13 + 15) / 5.0);
  EXPECT_DOUBLE_EQ(m.metrics.ttft.percentiles_ms[1].value_ms, want.ttft.percentiles_ms[1].value_ms);
  EXPECT_EQ(m.metrics.itl.count, 15u);
  EXPECT_DOUBLE_EQ(m.metrics.e2el.median_ms, want.e2el.median_ms);
  EXPECT_EQ(m.metrics.input_lens, want.input_lens);
  EXPECT_EQ(m.metrics.max_concurrent_requests_exact, want.max_concurrent_requests_exact);
  EXPECT_DOUBLE_EQ(m.metrics.schedule_lag.mean_ms, want.schedule_lag.mean_ms);
  ASSERT_EQ(m.outputs.size(), kN);
  for (std::size_t i = 0; i < kN; ++i) EXPECT_EQ(m.outputs[i].request_id, "bench-x-" + std::to_string(i));
  EXPECT_EQ(m.run.num_prompts, 6);
  EXPECT_EQ(m.run.request_rate, 10.0);
  EXPECT_NE(m.console_report.find("Request rate configured (RPS):           10.00"), std::string::npos);
  EXPECT_EQ(m.run.date, "20261201-180001");  // the later shard's end
  EXPECT_EQ(m.skew_ms, 0.0);
  EXPECT_TRUE(m.clock_sensitive_rows.empty());
  EXPECT_NE(m.console_report.find("Successful requests:                     5"), std::string::npos)
      << m.console_report;
  EXPECT_NE(m.console_report.find("one host clock"), std::string::npos);
  EXPECT_EQ(m.result_json["completed"], 5);
  EXPECT_EQ(m.result_json["ttfts"].size(), kN);
  EXPECT_EQ(m.result_json["servelab"]["merge"]["shards"].size(), 2u);
}

TEST(BenchMerge, AppliesEachShardsClockOffset) {
  Fixture f;
  // Host b's clock is 3 ms ahead: it started 3 ms early. On the common clock (t = 0 = the earliest start,
  // host b's), host a's times move 3 ms later and b's stay.
  const MergeResult m =
      merge_shards({f.shard({0, 2}, 0.0, "host-a", 0.01), f.shard({1, 2}, 3.0, "host-b", 0.01)}, false);
  EXPECT_NEAR(m.skew_ms, 3.0, 1e-12);
  EXPECT_NEAR(m.skew_uncertainty_ms, 0.02, 1e-12);
  EXPECT_NEAR(m.outputs[0].send_time_s, 0.0001 + 0.003, 1e-12);
  EXPECT_NEAR(m.outputs[1].send_time_s, 0.1001 + 0.003, 1e-12);  // b's own clock read it 3 ms late
  EXPECT_NEAR(m.outputs[2].dispatch_time_s, 0.2001 + 0.003, 1e-12);
  EXPECT_EQ(m.outputs[0].intended_send_time_s, 0.0);            // the schedule itself does not move
  EXPECT_NEAR(m.metrics.duration_s, kDuration + 0.003, 1e-12);  // request 5 (host b) ends last
  EXPECT_DOUBLE_EQ(m.metrics.ttft.mean_ms, (10 + 11 + 12 + 13 + 15) / 5.0);  // intervals do not move
  EXPECT_EQ(m.result_json["servelab"]["merge"]["shards"][0]["shift_ms"], 3.0);
}

TEST(BenchMerge, WarnsWhenTheClockUncertaintyChangesAPrintedRow) {
  Fixture f;
  // ±20 ms on a 0.53 s run moves the request throughput (9.43 req/s) in its second decimal.
  const MergeResult m =
      merge_shards({f.shard({0, 2}, 0.0, "host-a", 20.0), f.shard({1, 2}, 0.0, "host-b", 1.0)}, false);
  EXPECT_NEAR(m.skew_uncertainty_ms, 21.0, 1e-12);
  ASSERT_FALSE(m.clock_sensitive_rows.empty());
  EXPECT_NE(
      std::find(m.clock_sensitive_rows.begin(), m.clock_sensitive_rows.end(), "Request throughput (req/s):"),
      m.clock_sensitive_rows.end());
  EXPECT_NE(m.console_report.find("WARNING: the clock uncertainty can change these printed rows"),
            std::string::npos);
}

std::string merge_error(const std::vector<ShardInput>& shards) {
  try {
    merge_shards(shards, false);
  } catch (const MergeError& e) {
    return e.what();
  }
  return "no error";
}

TEST(BenchMerge, RefusesShardsThatDoNotBelongTogether) {
  Fixture f;
  const ShardInput a = f.shard({0, 2});
  EXPECT_NE(merge_error({a}).find("missing shard 1/2"), std::string::npos) << merge_error({a});
  EXPECT_NE(merge_error({a, a}).find("shard0.json and shard0.json are both shard 0/2"), std::string::npos);
  Fixture other_seed;
  other_seed.config.seed = 8;
  ShardInput b = other_seed.shard({1, 2});
  EXPECT_NE(merge_error({a, b}).find("shard1.json: --seed 8 differs from shard0.json's 7"), std::string::npos)
      << merge_error({a, b});
  Fixture other_n;
  other_n.config.num_prompts = 7;
  EXPECT_NE(merge_error({a, other_n.shard({1, 2})}).find("--num_prompts 7"), std::string::npos);
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["fingerprint"] = "ffffffffffffffff";
  EXPECT_NE(merge_error({a, b}).find("shard1.json: its schedule (prompts, lengths, send times) differs"),
            std::string::npos);
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["start_at_s"] = 1.7e9 + 1;
  EXPECT_NE(merge_error({a, b}).find("shard1.json: start_at_s"), std::string::npos);
  Fixture three;
  EXPECT_NE(
      merge_error({a, three.shard({1, 3})}).find("shard1.json: shard 1/3 does not belong with shard0.json"),
      std::string::npos);
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][0].erase("latency_s");
  EXPECT_NE(merge_error({a, b}).find(
                "shard1.json: servelab.shard.requests[0]: request record: missing \"latency_s\""),
            std::string::npos)
      << merge_error({a, b});
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["indices"] = {1, 2, 5};
  EXPECT_NE(merge_error({a, b}).find("shard1.json: its request indices are not shard 1/2 of 6 requests"),
            std::string::npos);
  EXPECT_NE(merge_error({}).find("no shard results"), std::string::npos);
}

// Issue 31: a shard count of 0 divided by zero (SIGFPE); 2^31 shards or requests were allocated before any
// check; negative TTFT, latency and clock uncertainty were merged as if measured.
TEST(BenchMerge, RefusesOutOfRangeCountsBeforeSizingAnything) {
  Fixture f;
  const ShardInput a = f.shard({0, 2});
  ShardInput b = f.shard({1, 2});
  ShardInput zero = a;
  zero.result["servelab"]["shard"]["count"] = 0;
  EXPECT_EQ(merge_error({zero, b}),
            "shard0.json: servelab.shard \"count\" must be an integer in [1, 4096], got 0");
  ShardInput huge = a;
  huge.result["servelab"]["shard"]["count"] = 2147483648u;  // 2^31: get<int> would wrap it
  EXPECT_EQ(merge_error({huge, b}),
            "shard0.json: servelab.shard \"count\" must be an integer in [1, 4096], got 2147483648");
  ShardInput many = a;
  many.result["servelab"]["shard"]["count"] = 2147483647;
  EXPECT_EQ(merge_error({many}),
            "shard0.json: servelab.shard \"count\" must be an integer in [1, 4096], got 2147483647");
  ShardInput frac = a;
  frac.result["servelab"]["shard"]["count"] = 1.5;
  EXPECT_EQ(merge_error({frac, b}), "shard0.json: servelab.shard \"count\" must be an integer in [1, 4096]");
  ShardInput index = b;
  index.result["servelab"]["shard"]["index"] = 2;
  EXPECT_EQ(merge_error({a, index}), "shard1.json: servelab.shard \"index\" 2 is not below its \"count\" 2");
  ShardInput requests = a;
  requests.result["servelab"]["shard"]["num_requests"] = 1ULL << 40;
  EXPECT_EQ(merge_error({requests, b}),
            "shard0.json: servelab.shard \"num_requests\" must be an integer in [0, 2147483648], got "
            "1099511627776");
  requests.result["servelab"]["shard"]["num_requests"] = 2000000000;  // claims 10^9 indices, holds 3
  EXPECT_EQ(
      merge_error({requests, b}),
      "shard0.json: its request indices are not shard 0/2 of 2000000000 requests (1000000000 expected)");
}

TEST(BenchMerge, RefusesNegativeTimesNamingTheFileAndField) {
  Fixture f;
  const ShardInput a = f.shard({0, 2});
  ShardInput b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][0]["ttft_s"] = -0.5;
  EXPECT_EQ(merge_error({a, b}),
            "shard1.json: servelab.shard.requests[0]: request record: \"ttft_s\" is -0.5 s, must be >= 0");
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][2]["latency_s"] = -1.0;
  EXPECT_EQ(merge_error({a, b}),
            "shard1.json: servelab.shard.requests[2]: request record: \"latency_s\" is -1 s, must be >= 0");
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][0]["itl_s"][1] = -0.005;
  EXPECT_EQ(
      merge_error({a, b}),
      "shard1.json: servelab.shard.requests[0]: request record: \"itl_s\"[1] is -0.005 s, must be >= 0");
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][0]["wire_time_s"] = -2.0;  // -1 means "not measured"; -2 nothing
  EXPECT_EQ(merge_error({a, b}),
            "shard1.json: servelab.shard.requests[0]: request record: \"wire_time_s\" is -2 "
            "s, must be -1 (not measured) or >= 0");
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["requests"][0]["output_tokens"] = 2147483648u;
  EXPECT_EQ(merge_error({a, b}),
            "shard1.json: servelab.shard.requests[0]: request record: \"output_tokens\" "
            "must be an integer in [0, 2147483647]");
  b = f.shard({1, 2}, 0.0, "host-b", 0.01);
  b.result["servelab"]["shard"]["clock"]["uncertainty_ms"] = -3.0;
  EXPECT_EQ(merge_error({a, b}),
            "shard1.json: servelab.shard.clock.uncertainty_ms is -3, must be a finite number >= 0");
  b = f.shard({1, 2});
  b.result["servelab"]["shard"]["config"]["backend"] = 7;  // equal on both: caught by its type, not raw
  ShardInput a7 = a;
  a7.result["servelab"]["shard"]["config"]["backend"] = 7;
  EXPECT_EQ(
      merge_error({a7, b}).rfind("shard0.json: servelab.shard.config: backend, model_id and tokenizer_id "
                                 "must be strings",
                                 0),
      0u)
      << merge_error({a7, b});
}

// Issue 31: nlohmann's type errors ("[json.exception.type_error.302] ...") reached the user.
TEST(BenchMerge, WrongTypesAreNamedNotNlohmannErrors) {
  Fixture f;
  ShardInput a = f.shard({0, 2}), b = f.shard({1, 2});
  a.result["servelab"]["shard"]["engine_twin"] = "yes";
  b.result["servelab"]["shard"]["engine_twin"] = "yes";
  EXPECT_EQ(merge_error({a, b}), "shard0.json: servelab.shard \"engine_twin\" has the wrong type");
  a = f.shard({0, 2}), b = f.shard({1, 2});
  b.result["servelab"]["interrupted"] = 1;
  EXPECT_EQ(merge_error({a, b}), "shard1.json: servelab.interrupted must be true or false");
}

TEST(BenchMerge, ReadShardFileNamesAFileWithoutDetailedShardResults) {
  const auto dir = std::filesystem::temp_directory_path() / ("merge_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto plain = dir / "plain.json";
  std::ofstream(plain) << R"({"date": "x", "completed": 3, "servelab": {"interrupted": false}})";
  try {
    read_shard_file(plain);
    FAIL();
  } catch (const MergeError& e) {
    EXPECT_NE(std::string(e.what()).find(plain.string() + ": no detailed shard results"), std::string::npos);
  }
  const auto junk = dir / "junk.json";
  std::ofstream(junk) << "{not json";
  EXPECT_THROW(read_shard_file(junk), MergeError);
  EXPECT_THROW(read_shard_file(dir / "absent.json"), MergeError);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace servelab::bench
