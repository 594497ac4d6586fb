// `--save-result` JSON: vLLM 0.13 key order and Python formatting, reconstruction of a real vLLM result
// file byte for byte, detailed arrays, file naming and append semantics.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "servelab/common/paths.h"
#include "servelab/common/python_json.h"
#include "servelab/metrics/metrics.h"
#include "servelab/report/report.h"

namespace servelab::report {
namespace {

using metrics::BenchmarkMetrics;
using metrics::LatencySummary;
using nlohmann::ordered_json;

// The writer of result files (report.cc): invalid UTF-8 replaced.
std::string dumps(const ordered_json& j) {
  return common::python_json_dumps(j, common::InvalidUtf8::kReplace);
}

std::vector<std::string> keys_of(const ordered_json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  return keys;
}

LatencySummary summary(double mean, double median, double std_ms, std::vector<metrics::PercentileValue> p) {
  LatencySummary s;
  s.mean_ms = mean;
  s.median_ms = median;
  s.std_ms = std_ms;
  s.percentiles_ms = std::move(p);
  return s;
}

RunInfo study_run() {
  RunInfo run;
  run.date = "20261130-160000";
  run.backend = "openai-chat";
  run.model_id = "deepseek-ai/DeepSeek-V3.2";
  run.tokenizer_id = "deepseek-ai/DeepSeek-V3.2";
  run.num_prompts = 1000;
  run.metadata = {{"gpu", "8xH200"}};
  return run;
}

BenchmarkMetrics study_metrics() {
  BenchmarkMetrics m;
  m.completed = 1000;
  m.duration_s = 72.75;
  m.total_input = 219111;
  m.total_output = 196599;
  m.request_throughput = 13.75;
  m.output_throughput = 2702.26;
  m.total_token_throughput = 5713.95;
  m.max_output_tokens_per_s = 6009.0;
  m.max_concurrent_requests = 1000;
  m.ttft = summary(13054.63, 12849.39, 1e-05, {{99, 22754.42}, {99.9, 1e16}});
  m.tpot = summary(275.0, 171.5, 0.1, {{99, 666.78}, {99.9, 700.0}});
  m.itl = summary(131.14, 81.97, 5.0, {{99, 668.29}, {99.9, 123456789.123}});
  return m;
}

TEST(ResultJson, ExactTextOfADefaultRun) {
  ReportOptions opts;
  opts.servelab_extras = false;
  const std::string text = dumps(make_result_json(study_run(), study_metrics(), {}, opts));
  const std::string expected =
      R"({"date": "20261130-160000", "endpoint_type": "openai-chat", "backend": "openai-chat", "label": null, )"
      R"("model_id": "deepseek-ai/DeepSeek-V3.2", "tokenizer_id": "deepseek-ai/DeepSeek-V3.2", )"
      R"("num_prompts": 1000, "gpu": "8xH200", "request_rate": "inf", "burstiness": 1.0, )"
      R"("max_concurrency": null, "duration": 72.75, "completed": 1000, "failed": 0, )"
      R"("total_input_tokens": 219111, "total_output_tokens": 196599, "request_throughput": 13.75, )"
      R"("request_goodput": null, "output_throughput": 2702.26, "total_token_throughput": 5713.95, )"
      R"("max_output_tokens_per_s": 6009.0, "max_concurrent_requests": 1000, )"
      R"("mean_ttft_ms": 13054.63, "median_ttft_ms": 12849.39, "std_ttft_ms": 1e-05, )"
      R"("p99_ttft_ms": 22754.42, "p99.9_ttft_ms": 1e+16, )"
      R"("mean_tpot_ms": 275.0, "median_tpot_ms": 171.5, "std_tpot_ms": 0.1, "p99_tpot_ms": 666.78, )"
      R"("p99.9_tpot_ms": 700.0, "mean_itl_ms": 131.14, "median_itl_ms": 81.97, "std_itl_ms": 5.0, )"
      R"("p99_itl_ms": 668.29, "p99.9_itl_ms": 123456789.123})";
  EXPECT_EQ(text, expected);
}

TEST(ResultJson, DetailedRampUpConcurrencyGoodputAndExtras) {
  RunInfo run = study_run();
  run.label = "study";
  run.metadata = {{"backend", "overridden"}, {"note", "x"}};  // vLLM: same key overwrites in place
  run.max_concurrency = 64;
  run.ramp_up = RampUp{"linear", 1, 10};
  run.rps_change_events = {{2, "2026-11-30T16:00:01.500000"}};
  BenchmarkMetrics m = study_metrics();
  m.completed = 1;
  m.failed = 1;
  m.request_goodput = 0.5;
  m.input_lens = {10, 20};
  m.output_lens = {3, 0};
  m.e2el = summary(1, 2, 3, {{99, 4}, {99.9, 5}});
  m.schedule_lag = summary(0.5, 0.25, 0.1, {{99, 2.0}, {99.9, 2.5}});
  m.schedule_lag_max_ms = 3.0;
  std::vector<metrics::RequestOutput> outputs(2);
  outputs[0].success = true;
  outputs[0].ttft_s = 0.25;
  outputs[0].itl_s = {0.5, 0.125};
  outputs[0].generated_text = "hi\n";
  outputs[1].failure = metrics::FailureKind::kHttpStatus;
  outputs[1].http_status = 503;
  outputs[1].error = "Service Unavailable";
  ReportOptions opts;
  opts.save_detailed = true;
  opts.percentile_metrics.e2el = true;
  opts.percentile_metrics.tpot = false;
  const ordered_json j = make_result_json(run, m, outputs, opts);
  const std::vector<std::string> expected_keys = {"date",
                                                  "endpoint_type",
                                                  "backend",
                                                  "label",
                                                  "model_id",
                                                  "tokenizer_id",
                                                  "num_prompts",
                                                  "note",
                                                  "request_rate",
                                                  "burstiness",
                                                  "max_concurrency",
                                                  "ramp_up_strategy",
                                                  "ramp_up_start_rps",
                                                  "ramp_up_end_rps",
                                                  "duration",
                                                  "completed",
                                                  "failed",
                                                  "total_input_tokens",
                                                  "total_output_tokens",
                                                  "request_throughput",
                                                  "request_goodput",
                                                  "output_throughput",
                                                  "total_token_throughput",
                                                  "input_lens",
                                                  "output_lens",
                                                  "ttfts",
                                                  "itls",
                                                  "generated_texts",
                                                  "errors",
                                                  "max_output_tokens_per_s",
                                                  "max_concurrent_requests",
                                                  "rps_change_events",
                                                  "mean_ttft_ms",
                                                  "median_ttft_ms",
                                                  "std_ttft_ms",
                                                  "p99_ttft_ms",
                                                  "p99.9_ttft_ms",
                                                  "mean_itl_ms",
                                                  "median_itl_ms",
                                                  "std_itl_ms",
                                                  "p99_itl_ms",
                                                  "p99.9_itl_ms",
                                                  "mean_e2el_ms",
                                                  "median_e2el_ms",
                                                  "std_e2el_ms",
                                                  "p99_e2el_ms",
                                                  "p99.9_e2el_ms",
                                                  "servelab"};
  EXPECT_EQ(keys_of(j), expected_keys);
  EXPECT_EQ(j["backend"], "overridden");
  EXPECT_EQ(j["label"], "study");
  EXPECT_EQ(j["max_concurrency"], 64);
  EXPECT_EQ(j["ramp_up_start_rps"], 1);
  EXPECT_EQ(j["request_goodput"].get<double>(), 0.5);
  const std::string text = dumps(j);
  EXPECT_NE(text.find(R"("input_lens": [10, 20], "output_lens": [3, 0], "ttfts": [0.25, 0.0], )"
                      R"("itls": [[0.5, 0.125], []], "generated_texts": ["hi\n", ""], )"
                      R"("errors": ["", "Service Unavailable"], )"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"("rps_change_events": [{"rps": 2, "timestamp": "2026-11-30T16:00:01.500000"}])"),
            std::string::npos);
  const ordered_json& x = j["servelab"];
  EXPECT_EQ(x["failure_kinds"], ordered_json::array({"none", "http_status"}));
  EXPECT_EQ(x["http_statuses"], ordered_json::array({0, 503}));
  EXPECT_TRUE(x.contains("schedule_lag"));
  EXPECT_EQ(
      dumps(x["schedule_lag"]),
      R"({"mean_ms": 0.5, "median_ms": 0.25, "std_ms": 0.1, "p99_ms": 2.0, "p99.9_ms": 2.5, "count": 0, )"
      R"("max_ms": 3.0})");
  EXPECT_EQ(x["interrupted"], false);
}

TEST(ResultJson, RequestRateIsANumberWhenFinite) {
  RunInfo run = study_run();
  run.request_rate = 10;
  const auto j = make_result_json(run, study_metrics(), {}, ReportOptions{});
  EXPECT_EQ(dumps(j["request_rate"]), "10.0");
  EXPECT_FALSE(j.contains("ttfts"));
  EXPECT_FALSE(j.contains("input_lens"));
}

// Rebuild every result of a real (May 2025) vLLM file from its numbers through RunInfo/BenchmarkMetrics
// and make_result_json; keeping only the keys that vLLM version wrote, the text must be identical. This
// pins key order, value types (request_rate "inf" vs 10.0, null max_concurrency) and float formatting.
TEST(ResultJson, ReconstructsARealVllmResultFileByteForByte) {
  const auto path = common::data_dir() / "vllm_bench_serve_results_llmd_l40s.jsonl";
  std::istringstream lines(common::read_file(path));
  std::string line;
  int count = 0;
  while (std::getline(lines, line)) {
    if (line.empty()) continue;
    const auto src = ordered_json::parse(line);
    RunInfo run;
    run.date = src["date"];
    run.backend = src["backend"];
    run.model_id = src["model_id"];
    run.tokenizer_id = src["tokenizer_id"].get<std::string>();
    run.num_prompts = src["num_prompts"];
    bool in_metadata = false;
    for (auto it = src.begin(); it != src.end(); ++it) {
      if (it.key() == "request_rate") break;
      if (in_metadata) run.metadata.emplace_back(it.key(), it.value().get<std::string>());
      if (it.key() == "num_prompts") in_metadata = true;
    }
    run.request_rate = src["request_rate"].is_string() ? std::numeric_limits<double>::infinity()
                                                       : src["request_rate"].get<double>();
    run.burstiness = src["burstiness"];
    BenchmarkMetrics m;
    m.duration_s = src["duration"];
    m.completed = src["completed"];
    m.total_input = src["total_input_tokens"];
    m.total_output = src["total_output_tokens"];
    m.request_throughput = src["request_throughput"];
    m.output_throughput = src["output_throughput"];
    m.total_token_throughput = src["total_token_throughput"];
    for (auto [name, s] :
         {std::pair{"ttft", &m.ttft}, std::pair{"tpot", &m.tpot}, std::pair{"itl", &m.itl}}) {
      const std::string n = name;
      *s = summary(src["mean_" + n + "_ms"], src["median_" + n + "_ms"], src["std_" + n + "_ms"],
                   {{99, src["p99_" + n + "_ms"]}});
    }
    const ordered_json ours = make_result_json(run, m, {}, ReportOptions{});
    // That vLLM wrote "request_goodput:" (a key typo since fixed) and had no endpoint_type, label,
    // failed or peak keys.
    ordered_json filtered = ordered_json::object();
    for (auto it = ours.begin(); it != ours.end(); ++it) {
      const std::string key = it.key() == "request_goodput" ? "request_goodput:" : it.key();
      if (src.contains(key)) filtered[key] = it.value();
    }
    EXPECT_EQ(keys_of(filtered), keys_of(src)) << "line " << count + 1;
    EXPECT_EQ(dumps(filtered), line) << "line " << count + 1;
    ++count;
  }
  EXPECT_EQ(count, 9);
}

TEST(ResultFile, DefaultNamesFollowVllm) {
  RunInfo run = study_run();
  EXPECT_EQ(default_result_file_name(run), "openai-chat-infqps-DeepSeek-V3.2-20261130-160000.json");
  run.label = "study";
  run.request_rate = 10;
  run.max_concurrency = 64;
  EXPECT_EQ(default_result_file_name(run), "study-10.0qps-concurrency64-DeepSeek-V3.2-20261130-160000.json");
  run.label = "";  // Python `label or backend`
  run.request_rate = 0.5;
  run.max_concurrency.reset();
  EXPECT_EQ(default_result_file_name(run), "openai-chat-0.5qps-DeepSeek-V3.2-20261130-160000.json");
  run.ramp_up = RampUp{"exponential", 2, 32};
  EXPECT_EQ(default_result_file_name(run),
            "openai-chat-ramp-up-exponential-2qps-32qps-DeepSeek-V3.2-20261130-160000.json");
  EXPECT_EQ(result_path(run, "out/dir", "mine.json"), std::filesystem::path("out/dir/mine.json"));
  EXPECT_EQ(result_path(run, "", "mine.json"), std::filesystem::path("mine.json"));
  run.model_id = "plain-model";
  run.ramp_up.reset();
  EXPECT_EQ(result_path(run, "r", ""),
            std::filesystem::path("r/openai-chat-0.5qps-plain-model-20261130-160000.json"));
}

TEST(ResultFile, WriteTruncatesAndAppendAddsNewlineSeparator) {
  const auto dir = std::filesystem::temp_directory_path() / ("servelab_report_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  const auto path = dir / "sub" / "r.json";
  write_result_file(path, ordered_json{{"a", 1.0}}, /*append=*/true);  // empty file: no leading newline
  EXPECT_EQ(common::read_file(path), R"({"a": 1.0})");
  write_result_file(path, ordered_json{{"b", 2}}, /*append=*/true);
  EXPECT_EQ(common::read_file(path), "{\"a\": 1.0}\n{\"b\": 2}");
  write_result_file(path, ordered_json{{"c", nullptr}}, /*append=*/false);
  EXPECT_EQ(common::read_file(path), R"({"c": null})");
  std::filesystem::remove_all(dir);
  EXPECT_THROW(write_result_file("/proc/servelab-no/x.json", ordered_json::object(), false),
               std::runtime_error);
}

TEST(RunInfoHelpers, MetadataAndDate) {
  const auto md = parse_metadata(std::vector<std::string>{" gpu = 8xH200 ", "eq=a=b"});
  ASSERT_EQ(md.size(), 2u);
  EXPECT_EQ(md[0], (std::pair<std::string, std::string>{"gpu", "8xH200"}));
  EXPECT_EQ(md[1], (std::pair<std::string, std::string>{"eq", "a=b"}));
  EXPECT_THROW(parse_metadata(std::vector<std::string>{"novalue"}), std::invalid_argument);
  const std::string date = current_date_string();
  ASSERT_EQ(date.size(), 15u);
  EXPECT_EQ(date[8], '-');
  EXPECT_EQ(date.substr(0, 2), "20");
}

TEST(ResultJson, SendLagAndConcurrencyInTheServelabSection) {
  BenchmarkMetrics m = study_metrics();
  m.input_lens.assign(1000, 1);
  m.send_lag = summary(12.5, 10.0, 2.0, {{99, 90.0}, {99.9, 95.0}});
  m.send_lag.count = 1000;
  m.send_lag_p99_ms = 90.0;
  m.send_lag_max_ms = 97.5;
  m.peak_concurrency_reached = 1000;
  RunInfo run = study_run();  // --request-rate inf, 1,000 requests, no limit
  ordered_json x = make_result_json(run, m, {}, ReportOptions{})["servelab"];
  EXPECT_EQ(dumps(x["send_lag"]),
            R"({"mean_ms": 12.5, "median_ms": 10.0, "std_ms": 2.0, "p99_ms": 90.0, "p99.9_ms": 95.0, )"
            R"("count": 1000, "max_ms": 97.5})");
  EXPECT_EQ(dumps(x["concurrency"]), R"({"requested": 1000, "peak_reached": 1000, "reached": true})");
  run.max_concurrency = 2000;  // capped at the 1,000 requests
  m.peak_concurrency_reached = 999;
  x = make_result_json(run, m, {}, ReportOptions{})["servelab"];
  EXPECT_EQ(dumps(x["concurrency"]), R"({"requested": 1000, "peak_reached": 999, "reached": false})");
  run.request_rate = 4;
  x = make_result_json(run, m, {}, ReportOptions{})["servelab"];
  EXPECT_EQ(dumps(x["concurrency"]), R"({"requested": null, "peak_reached": 999, "reached": null})");
  m.send_lag.count = 0;  // nothing measured (the offline twin)
  x = make_result_json(run, m, {}, ReportOptions{})["servelab"];
  EXPECT_EQ(dumps(x["concurrency"]), R"({"requested": null, "peak_reached": null, "reached": null})");
}

}  // namespace
}  // namespace servelab::report
