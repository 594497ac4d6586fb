// The Prometheus text-format parser (bench/prometheus.h) on hand-written expositions: prometheus_client's
// layout as vLLM serves it, label escapes, special values, timestamps, comments and malformed lines.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "servelab/bench/prometheus.h"

namespace servelab::bench::prometheus {
namespace {

// What vLLM 0.13 (prometheus_client) writes: counters' HELP/TYPE under `name_total`, a `_created` gauge
// family beside each counter, histograms with `le` buckets ending in +Inf.
constexpr const char* kVllmText =
    R"(# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="Qwen/Qwen3-8B"} 8.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="Qwen/Qwen3-8B"} 3.0
# HELP vllm:num_preemptions_created Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_created gauge
vllm:num_preemptions_created{engine="0",model_name="Qwen/Qwen3-8B"} 1.7645e+09
# HELP vllm:e2e_request_latency_seconds Histogram of e2e request latency in seconds.
# TYPE vllm:e2e_request_latency_seconds histogram
vllm:e2e_request_latency_seconds_sum{engine="0",model_name="Qwen/Qwen3-8B"} 12.5
vllm:e2e_request_latency_seconds_bucket{engine="0",le="0.3",model_name="Qwen/Qwen3-8B"} 1.0
vllm:e2e_request_latency_seconds_bucket{engine="0",le="+Inf",model_name="Qwen/Qwen3-8B"} 4.0
vllm:e2e_request_latency_seconds_count{engine="0",model_name="Qwen/Qwen3-8B"} 4.0
)";

TEST(PrometheusParse, VllmLayout) {
  const Exposition e = parse(kVllmText);
  EXPECT_EQ(e.skipped_count, 0u);
  ASSERT_EQ(e.samples.size(), 7u);
  const Sample& running = e.samples[0];
  EXPECT_EQ(running.name, "vllm:num_requests_running");
  ASSERT_EQ(running.labels.size(), 2u);
  EXPECT_EQ(running.labels[0], (std::pair<std::string, std::string>{"engine", "0"}));
  EXPECT_EQ(*running.label("model_name"), "Qwen/Qwen3-8B");
  EXPECT_EQ(running.label("le"), nullptr);
  EXPECT_EQ(running.value, 8.0);
  EXPECT_FALSE(running.timestamp_ms);
  EXPECT_EQ(e.samples[1].value, 3.0);
  EXPECT_EQ(e.samples[2].value, 1.7645e9);
  EXPECT_EQ(*e.samples[5].label("le"), "+Inf");
  EXPECT_EQ(e.families.at("vllm:num_requests_running").help,
            "Number of requests in model execution batches.");
  EXPECT_EQ(e.type_of("vllm:num_requests_running"), MetricType::kGauge);
  EXPECT_EQ(e.type_of("vllm:num_preemptions_total"), MetricType::kCounter);
  EXPECT_EQ(e.type_of("vllm:num_preemptions_created"), MetricType::kGauge);
  EXPECT_EQ(e.type_of("vllm:e2e_request_latency_seconds_bucket"), MetricType::kHistogram);
  EXPECT_EQ(e.type_of("vllm:e2e_request_latency_seconds_sum"), MetricType::kHistogram);
  EXPECT_EQ(e.type_of("vllm:e2e_request_latency_seconds_count"), MetricType::kHistogram);
  EXPECT_EQ(e.type_of("vllm:unknown"), MetricType::kUntyped);
}

TEST(PrometheusParse, CounterTypedWithoutSuffixCoversTotal) {
  // The format's own example: `# TYPE http_requests_total counter`; older clients wrote the family name
  // without `_total` and samples with it.
  const Exposition e = parse(
      "# TYPE requests counter\nrequests_total 5\n# TYPE lat summary\nlat_count 2\n"
      "lat{quantile=\"0.5\"} 0.1\n# TYPE g gauge\ng_total 1\n");
  EXPECT_EQ(e.type_of("requests_total"), MetricType::kCounter);
  EXPECT_EQ(e.type_of("requests_bucket"), MetricType::kUntyped);  // a counter has no buckets
  EXPECT_EQ(e.type_of("lat_count"), MetricType::kSummary);
  EXPECT_EQ(e.type_of("lat"), MetricType::kSummary);
  EXPECT_EQ(e.type_of("g_total"), MetricType::kUntyped);  // a gauge has no `_total` samples
}

TEST(PrometheusParse, EscapedLabelValuesAndHelp) {
  const Exposition e = parse(
      "# HELP x Path a\\\\b\\nnext line \\q stays\n"
      "x{path=\"C:\\\\dir\\\\\",msg=\"say \\\"hi\\\"\\nbye\",empty=\"\",brace=\"}{,=\"} 1\n");
  ASSERT_EQ(e.samples.size(), 1u) << (e.skipped.empty() ? "" : e.skipped[0].reason);
  const Sample& s = e.samples[0];
  EXPECT_EQ(*s.label("path"), "C:\\dir\\");
  EXPECT_EQ(*s.label("msg"), "say \"hi\"\nbye");
  EXPECT_EQ(*s.label("empty"), "");
  EXPECT_EQ(*s.label("brace"), "}{,=");
  EXPECT_EQ(e.families.at("x").help, "Path a\\b\nnext line \\q stays");
}

TEST(PrometheusParse, SpecialValuesAndTimestamps) {
  const Exposition e = parse(
      "a NaN\nb +Inf\nc -Inf\nd 1e-05\ne -0.5 1700000000123\nf 42 -1000\ng{l=\"v\"}\t7\t\t99\nh Inf\ni "
      "3.0e+2\n");
  ASSERT_EQ(e.skipped_count, 0u) << e.skipped[0].reason;
  ASSERT_EQ(e.samples.size(), 9u);
  EXPECT_TRUE(std::isnan(e.samples[0].value));
  EXPECT_EQ(e.samples[1].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(e.samples[2].value, -std::numeric_limits<double>::infinity());
  EXPECT_EQ(e.samples[3].value, 1e-05);
  EXPECT_EQ(e.samples[4].value, -0.5);
  EXPECT_EQ(e.samples[4].timestamp_ms, 1700000000123);
  EXPECT_EQ(e.samples[5].timestamp_ms, -1000);
  EXPECT_EQ(e.samples[6].value, 7.0);
  EXPECT_EQ(e.samples[6].timestamp_ms, 99);
  EXPECT_EQ(e.samples[7].value, std::numeric_limits<double>::infinity());
  EXPECT_EQ(e.samples[8].value, 300.0);
}

TEST(PrometheusParse, CommentsBlankLinesCrlfAndOpenMetricsTail) {
  const Exposition e = parse(
      "# a free comment\r\n#\r\n\r\n   \r\n  # indented comment\r\n  up 1\r\n"
      "x{a=\"1\",} 2 # {trace_id=\"abc\"} 1.0\r\ny{} 3\r\n# EOF\r\n");
  EXPECT_EQ(e.skipped_count, 0u) << e.skipped[0].reason;
  ASSERT_EQ(e.samples.size(), 3u);
  EXPECT_EQ(e.samples[0].name, "up");
  EXPECT_EQ(e.samples[1].value, 2.0);
  EXPECT_EQ(*e.samples[1].label("a"), "1");
  EXPECT_TRUE(e.samples[2].labels.empty());
  EXPECT_TRUE(e.families.empty());
}

TEST(PrometheusParse, MalformedLinesAreSkippedAndCounted) {
  const Exposition e = parse(
      "good 1\n"
      "bad-name 1\n"             // 2: '-' is not a name character
      "x{a=\"unterminated} 1\n"  // 3
      "x{a=\"\\q\"} 1\n"         // 4: unknown escape
      "x{a=\"b\"}\n"             // 5: no value
      "x abc\n"                  // 6
      "x 1 1.5\n"                // 7: timestamp must be an integer
      "x 1 2 3\n"                // 8
      "x{9a=\"b\"} 1\n"          // 9: label names do not start with a digit
      "x{a=\"1\" b=\"2\"} 1\n"   // 10: missing comma
      "# TYPE t bogus\n"         // 11
      "# TYPE t gauge\n"
      "# TYPE t counter\n"      // 13: a second, different TYPE
      "x{a=\"1\",a=\"2\"} 1\n"  // 14: duplicate label
      "x 0x10\n"                // 15: hex is not Go ParseFloat's text format
      "also_good{k=\"v\"} 2\n");
  EXPECT_EQ(e.skipped_count, 13u);
  ASSERT_EQ(e.skipped.size(), 13u);
  const std::size_t lines[] = {2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 14, 15};
  for (std::size_t i = 0; i < 13; ++i) EXPECT_EQ(e.skipped[i].line, lines[i]) << i;
  EXPECT_EQ(e.skipped[1].reason, "unterminated value of label a");
  EXPECT_EQ(e.skipped[2].reason, "invalid escape '\\q' in the value of label a");
  EXPECT_EQ(e.skipped[3].reason, "missing value");
  EXPECT_EQ(e.skipped[4].reason, "invalid value 'abc'");
  EXPECT_EQ(e.skipped[5].reason, "invalid timestamp '1.5'");
  EXPECT_EQ(e.skipped[9].reason, "unknown metric type 'bogus' for t");
  EXPECT_EQ(e.skipped[10].reason, "second # TYPE line for t");
  EXPECT_EQ(e.skipped[11].reason, "duplicate label a");
  ASSERT_EQ(e.samples.size(), 2u);
  EXPECT_EQ(e.samples[0].name, "good");
  EXPECT_EQ(e.samples[1].name, "also_good");
  EXPECT_EQ(e.families.at("t").type, MetricType::kGauge);
}

TEST(PrometheusParse, KeepsTheFirstTwentySkippedLinesAndCountsAll) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "not a sample line\n";
  const Exposition e = parse(text);
  EXPECT_EQ(e.skipped_count, 50u);
  EXPECT_EQ(e.skipped.size(), 20u);
  EXPECT_TRUE(e.samples.empty());
}

TEST(PrometheusValue, GoParseFloatSpellings) {
  EXPECT_EQ(parse_value("1"), 1.0);
  EXPECT_EQ(parse_value("-0.25"), -0.25);
  EXPECT_EQ(parse_value("+2"), 2.0);
  EXPECT_EQ(parse_value("1E3"), 1000.0);
  EXPECT_EQ(parse_value("+Inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse_value("-infinity"), -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(*parse_value("nan")));
  EXPECT_FALSE(parse_value(""));
  EXPECT_FALSE(parse_value("1,5"));
  EXPECT_FALSE(parse_value("--1"));
  EXPECT_FALSE(parse_value("1e999"));  // overflows a double
  EXPECT_FALSE(parse_value("Infx"));
}

}  // namespace
}  // namespace servelab::bench::prometheus
