// End-to-end: the `servelab` binary's `bench serve` against the scheduled-emission test server over real
// HTTP, on the real ShareGPT pairs with the GPT-2 tokenizer. Asserts the vLLM report layout, numbers that
// follow from the server's schedule (exact token totals, causal TTFT/E2EL bounds from the server's own
// emission log), failure kinds, Ctrl-C and the unknown-flag / bad-value messages.
#include <gtest/gtest.h>

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <thread>

#include "e2e/models_server.h"
#include "e2e/subprocess.h"
#include "servelab/common/paths.h"
#include "servelab/dataset/dataset.h"
#include "servelab/tokenizer/tokenizer.h"
#include "support/stream_server.h"

namespace servelab::e2e {
namespace {

namespace fs = std::filesystem;
using test_support::StreamServer;
using test_support::StreamServerOptions;

const std::string kBinary = SERVELAB_BINARY;

fs::path sharegpt_path() {
  return common::data_dir() / "sharegpt_pairs_sample.json";
}
fs::path gpt2_path() {
  return common::data_dir() / "gpt2-tokenizer.json";
}

fs::path temp_dir(const std::string& name) {
  fs::path p = fs::temp_directory_path() / ("servelab_e2e_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// The vLLM block: from the "Serving Benchmark Result" banner to the first line of 50 '='.
std::vector<std::string> report_block(const std::string& out) {
  auto lines = lines_of(out);
  std::vector<std::string> block;
  bool in = false;
  for (const auto& l : lines) {
    if (l == "============ Serving Benchmark Result ============") in = true;
    if (!in) continue;
    block.push_back(l);
    if (block.size() > 1 && l == std::string(50, '=')) break;
  }
  return block;
}

// Value of the row whose label is `label` (rows are "{:<40} {:<10}").
std::string row_value(const std::vector<std::string>& block, const std::string& label) {
  for (const auto& l : block)
    if (l.size() > 41 && l.compare(0, label.size(), label) == 0 &&
        l.find_first_not_of(' ', label.size()) == 41) {
      std::string v = l.substr(41);
      return v.substr(0, v.find_last_not_of(' ') + 1);
    }
  return "<missing " + label + ">";
}

std::string fmt_2(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

nlohmann::ordered_json read_json(const fs::path& p) {
  std::ifstream in(p);
  EXPECT_TRUE(in.good()) << p;
  return nlohmann::ordered_json::parse(in);
}

class BenchServeE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(sharegpt_path()) || !fs::exists(gpt2_path()))
      FAIL() << "real data missing in " << common::data_dir()
             << " (shared/data beside the checkout; make deps)";
  }
};

std::vector<std::string> base_args(std::uint16_t port) {
  return {kBinary,
          "bench",
          "serve",
          "--backend",
          "openai",
          "--host",
          "127.0.0.1",
          "--port",
          std::to_string(port),
          "--model",
          "gpt2",
          "--tokenizer",
          gpt2_path().string()};
}

TEST_F(BenchServeE2E, ShareGptReportMatchesServerSchedule) {
  StreamServerOptions so;
  so.ttft_s = 0.030;  // first token 30 ms after the request is read
  so.itl_s = 0.004;   // then one token every 4 ms
  so.num_tokens = 8;  // every response carries exactly 8 tokens (usage.completion_tokens = 8)
  StreamServer server(so);
  fs::path dir = temp_dir("sharegpt");
  const std::string sharegpt = sharegpt_path().string(), dir_s = dir.string();
  constexpr int kN = 40;
  auto args = base_args(server.port());
  for (std::string a : {"--dataset-name",
                        "sharegpt",
                        "--dataset-path",
                        sharegpt.c_str(),
                        "--num-prompts",
                        "40",
                        "--seed",
                        "0",
                        "--num-warmups",
                        "2",
                        "--ready-check-timeout-sec",
                        "10",
                        "--percentile-metrics",
                        "ttft,tpot,itl,e2el",
                        "--metric-percentiles",
                        "50,99",
                        "--request-id-prefix",
                        "e2e-",
                        "--save-result",
                        "--save-detailed",
                        "--result-dir",
                        dir_s.c_str(),
                        "--result-filename",
                        "r.json",
                        "--metadata",
                        "run=e2e",
                        "--label",
                        "L",
                        "--goodput",
                        "ttft:60000",
                        "e2el:60000"})
    args.push_back(a);
  ProcessResult p = run_process(args);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;

  // vLLM's progress messages, in order.
  std::size_t pos = 0;
  for (std::string m :
       {"Namespace(append_result=False, backend='openai'", "Starting initial single prompt test run...",
        "Initial test run completed.", "Warming up with 2 requests...", "Warmup run completed.",
        "Starting main benchmark run...", "Traffic request rate: inf",
        "Burstiness factor: 1.0 (Poisson process)", "Maximum request concurrency: None",
        "============ Serving Benchmark Result ============"}) {
    std::size_t at = p.out.find(m, pos);
    ASSERT_NE(at, std::string::npos) << "missing in order: " << m << "\n" << p.out;
    pos = at;
  }
  EXPECT_EQ(p.err.find("it/s"), std::string::npos) << "no progress bar when stderr is not a terminal";
  // ... but a log line instead (every 5 s, and the last one).
  EXPECT_NE(p.err.find("Progress: 40/40 requests done (100.0%), "), std::string::npos) << p.err;

  // Layout: the labels of vLLM 0.13's block (seed-report-blocks.txt) in order, then our E2EL/P50 rows.
  auto block = report_block(p.out);
  std::vector<std::string> expected_labels = {"Successful requests:",
                                              "Failed requests:",
                                              "Benchmark duration (s):",
                                              "Total input tokens:",
                                              "Total generated tokens:",
                                              "Request throughput (req/s):",
                                              "Request goodput (req/s):",
                                              "Output token throughput (tok/s):",
                                              "Peak output token throughput (tok/s):",
                                              "Peak concurrent requests:",
                                              "Total Token throughput (tok/s):",
                                              "-TTFT-",
                                              "Mean TTFT (ms):",
                                              "Median TTFT (ms):",
                                              "P50 TTFT (ms):",
                                              "P99 TTFT (ms):",
                                              "-TPOT-",
                                              "Mean TPOT (ms):",
                                              "Median TPOT (ms):",
                                              "P50 TPOT (ms):",
                                              "P99 TPOT (ms):",
                                              "-ITL-",
                                              "Mean ITL (ms):",
                                              "Median ITL (ms):",
                                              "P50 ITL (ms):",
                                              "P99 ITL (ms):",
                                              "-E2EL-",
                                              "Mean E2EL (ms):",
                                              "Median E2EL (ms):",
                                              "P50 E2EL (ms):",
                                              "P99 E2EL (ms):"};
  std::map<std::string, std::string> sections = {
      {"-TTFT-", "---------------Time to First Token----------------"},
      {"-TPOT-", "-----Time per Output Token (excl. 1st token)------"},
      {"-ITL-", "---------------Inter-token Latency----------------"},
      {"-E2EL-", "----------------End-to-end Latency----------------"}};
  ASSERT_EQ(block.size(), expected_labels.size() + 2) << p.out;
  EXPECT_EQ(block.back(), std::string(50, '='));
  for (std::size_t i = 0; i < expected_labels.size(); ++i) {
    const std::string& line = block[i + 1];
    if (sections.count(expected_labels[i])) {
      EXPECT_EQ(line, sections[expected_labels[i]]);
      continue;
    }
    // "{:<40} {:<10}": label padded to 40, a space, value padded to at least 10 (trailing spaces kept).
    EXPECT_EQ(line.substr(0, expected_labels[i].size()), expected_labels[i]) << line;
    EXPECT_GE(line.size(), 51u) << "'" << line << "'";
    EXPECT_EQ(line.find_first_not_of(' ', expected_labels[i].size()), 41u) << "'" << line << "'";
  }

  // Numbers that follow from the data and the server's schedule.
  auto tok = tokenizer::load_tokenizer(gpt2_path().string());
  dataset::DatasetOptions dopts;
  dopts.dataset_name = "sharegpt";
  dopts.dataset_path = sharegpt_path().string();
  dopts.num_prompts = kN;
  dopts.request_id_prefix = "e2e-";
  auto samples = dataset::sample_requests(dopts, tok);
  long long total_input = 0;
  for (const auto& s : samples) total_input += s.prompt_len;
  EXPECT_EQ(row_value(block, "Successful requests:"), std::to_string(kN));
  EXPECT_EQ(row_value(block, "Failed requests:"), "0");
  EXPECT_EQ(row_value(block, "Total input tokens:"), std::to_string(total_input));
  EXPECT_EQ(row_value(block, "Total generated tokens:"), std::to_string(8 * kN));
  // Every request meets 60 s SLOs: goodput = throughput.
  EXPECT_EQ(row_value(block, "Request goodput (req/s):"), row_value(block, "Request throughput (req/s):"));
  EXPECT_GE(std::stod(row_value(block, "Mean TTFT (ms):")), 30.0);
  EXPECT_LT(std::stod(row_value(block, "Mean TTFT (ms):")), 30.0 + 2000.0);

  // Server log: 1 ready-check + 2 warm-ups + the GET /v1/models asking for a time scale + the GET /metrics
  // before the run (this test server answers any request; the scrape stops at its non-Prometheus answer),
  // all without id, then e2e-0..e2e-39.
  auto emissions = server.emissions();
  ASSERT_EQ(emissions.size(), static_cast<std::size_t>(kN + 5));
  std::map<std::string, test_support::Emission> by_id;
  int without_id = 0;
  for (const auto& e : emissions) {
    if (e.request_id.empty())
      ++without_id;
    else
      by_id[e.request_id] = e;
  }
  EXPECT_EQ(without_id, 5);

  // JSON: vLLM keys in vLLM order, values equal to the console's, per-request causal bounds.
  auto j = read_json(dir / "r.json");
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  std::vector<std::string> head = {"date",
                                   "endpoint_type",
                                   "backend",
                                   "label",
                                   "model_id",
                                   "tokenizer_id",
                                   "num_prompts",
                                   "run",
                                   "request_rate",
                                   "burstiness",
                                   "max_concurrency",
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
                                   "mean_ttft_ms",
                                   "median_ttft_ms",
                                   "std_ttft_ms",
                                   "p50_ttft_ms",
                                   "p99_ttft_ms"};
  ASSERT_GE(keys.size(), head.size());
  EXPECT_EQ(std::vector<std::string>(keys.begin(), keys.begin() + head.size()), head);
  EXPECT_EQ(j["backend"], "openai");
  EXPECT_EQ(j["label"], "L");
  EXPECT_EQ(j["model_id"], "gpt2");
  EXPECT_EQ(j["request_rate"], "inf");
  EXPECT_EQ(j["run"], "e2e");
  EXPECT_EQ(j["completed"], kN);
  EXPECT_EQ(j["failed"], 0);
  EXPECT_EQ(j["total_input_tokens"], total_input);
  EXPECT_EQ(j["total_output_tokens"], 8 * kN);
  EXPECT_EQ(fmt_2(j["mean_ttft_ms"].get<double>()), row_value(block, "Mean TTFT (ms):"));
  EXPECT_EQ(j["servelab"]["interrupted"], false);
  ASSERT_EQ(j["ttfts"].size(), static_cast<std::size_t>(kN));
  for (int i = 0; i < kN; ++i) {
    const auto& e = by_id.at("e2e-" + std::to_string(i));
    ASSERT_EQ(e.chunk_times.size(), 8u);
    double server_ttft = std::chrono::duration<double>(e.chunk_times.front() - e.received).count();
    double server_e2el = std::chrono::duration<double>(e.chunk_times.back() - e.received).count();
    double ttft = j["ttfts"][i].get<double>();
    // Causality: the client sent before the server read, and read after the server wrote.
    EXPECT_GE(ttft, server_ttft) << "request " << i;
    EXPECT_GE(ttft, 0.030) << "request " << i;
    EXPECT_EQ(j["itls"][i].size(), 7u);
    EXPECT_EQ(j["output_lens"][i], 8);
    EXPECT_EQ(j["input_lens"][i], samples[static_cast<std::size_t>(i)].prompt_len);
    double itl_sum = 0;
    for (const auto& g : j["itls"][i]) itl_sum += g.get<double>();
    EXPECT_GE(ttft + itl_sum, server_e2el - 1e-6) << "request " << i;
  }
  fs::remove_all(dir);
}

TEST_F(BenchServeE2E, FailureKindsSurfaceInSummary) {
  StreamServerOptions so;
  so.num_tokens = 4;
  StreamServer server(so);
  for (auto [fault, kind] : std::vector<std::pair<std::string, std::string>>{
           {"http_500", "http_status"}, {"reset", "reset"}, {"no_choices", "no_valid_chunk"}}) {
    auto args = base_args(server.port());
    for (std::string a : {"--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4",
                          "--num-prompts", "5", "--ready-check-timeout-sec", "0", "--header"})
      args.push_back(a);
    args.push_back("x-test-fault=" + fault);
    ProcessResult p = run_process(args);
    // Every request failed: the report is printed, then the command fails with the reason.
    ASSERT_EQ(p.exit_code, 1) << fault << "\n" << p.out << p.err;
    EXPECT_NE(
        p.err.find("error: All requests failed. This is likely due to a misconfiguration on the benchmark "
                   "arguments. (5 of 5 failed: " +
                   kind + " 5; first error: "),
        std::string::npos)
        << p.err;
    EXPECT_NE(p.out.find("Skipping endpoint ready check."), std::string::npos);
    EXPECT_NE(p.out.find("Failed requests during benchmark run detected (capping to 10):"),
              std::string::npos);
    EXPECT_NE(p.out.find("Error 0: [" + kind + "]"), std::string::npos) << p.out;
    EXPECT_EQ(p.out.find("Error 5:"), std::string::npos);
    auto block = report_block(p.out);
    EXPECT_EQ(row_value(block, "Successful requests:"), "0") << p.out;
    EXPECT_EQ(row_value(block, "Failed requests:"), "5") << p.out;
    // servelab's extra lines: the failures by kind.
    auto lines = lines_of(p.out);
    bool found = false;
    for (const auto& l : lines)
      if (l.rfind("  failed (" + kind + "):", 0) == 0) {
        found = true;
        EXPECT_EQ(l.substr(41, 1), "5") << l;
      }
    EXPECT_TRUE(found) << fault << "\n" << p.out;
  }
}

TEST_F(BenchServeE2E, StalledServerFailsAfterRequestTimeout) {
  StreamServerOptions so;
  so.fault = test_support::Fault::kStall;
  StreamServer server(so);
  auto args = base_args(server.port());
  for (std::string a : {"--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4",
                        "--num-prompts", "3", "--ready-check-timeout-sec", "0", "--request-timeout-s", "0.5"})
    args.push_back(a);
  const auto t0 = std::chrono::steady_clock::now();
  ProcessResult p = run_process(args);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(p.exit_code, 1) << p.out << p.err;  // nothing succeeded
  EXPECT_LT(wall, 20.0) << "a stalled server held the run";
  EXPECT_NE(p.out.find("Error 0: [timeout] request timed out after 0.5"), std::string::npos) << p.out;
  EXPECT_EQ(row_value(report_block(p.out), "Successful requests:"), "0") << p.out;
}

// A port nothing listens on (a server's ephemeral port, after the server is gone).
std::uint16_t closed_port() {
  ModelsServer s;
  return s.port();
}

TEST_F(BenchServeE2E, UnreachableServerReportsEachAttemptAndFails) {
  const std::uint16_t port = closed_port();
  auto args = base_args(port);
  for (std::string a : {"--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4",
                        "--num-prompts", "3", "--ready-check-timeout-sec", "1"})
    args.push_back(a);
  ProcessResult p = run_process(args);
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(
      p.out.find(
          "Starting initial single prompt test run...\nWaiting for endpoint to become up in 1 seconds\n"),
      std::string::npos)
      << p.out;
  const std::string refused = "connect to 127.0.0.1:" + std::to_string(port) + " failed: Connection refused";
  EXPECT_NE(p.err.find("Endpoint not ready (attempt 1): " + refused + "; "), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("error: Initial test run failed - Please make sure benchmark arguments are correctly "
                       "specified. Error: " +
                       refused + " (1 attempt in 1 s, --ready-check-timeout-sec)"),
            std::string::npos)
      << p.err;
  // Without the ready check every request fails: the report is still printed, then exit 1 with the reason.
  args.back() = "0";
  p = run_process(args);
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  auto block = report_block(p.out);
  EXPECT_EQ(row_value(block, "Successful requests:"), "0") << p.out;
  EXPECT_EQ(row_value(block, "Failed requests:"), "3") << p.out;
  EXPECT_NE(
      p.err.find("error: All requests failed. This is likely due to a misconfiguration on the benchmark "
                 "arguments. (3 of 3 failed: connect 3; first error: " +
                 refused + ")"),
      std::string::npos)
      << p.err;
}

TEST_F(BenchServeE2E, ServerAnswering500ReportsEachAttempt) {
  StreamServerOptions so;
  so.fault = test_support::Fault::kHttp500;
  StreamServer server(so);
  auto args = base_args(server.port());
  for (std::string a : {"--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "4",
                        "--num-prompts", "3", "--ready-check-timeout-sec", "1"})
    args.push_back(a);
  ProcessResult p = run_process(args);
  EXPECT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(p.err.find("Endpoint not ready (attempt 1): HTTP 500"), std::string::npos) << p.err;
  // 1 s is less than the 5 s between attempts: the line says no attempt follows, and none does.
  EXPECT_NE(p.err.find("s left, less than the time between attempts: no further attempt"), std::string::npos)
      << p.err;
  EXPECT_EQ(p.err.find("(attempt 2)"), std::string::npos) << p.err;
  EXPECT_NE(p.err.find("error: Initial test run failed"), std::string::npos) << p.err;
}

TEST_F(BenchServeE2E, CredentialsAreNeverPrintedOrSaved) {
  StreamServerOptions so;
  so.num_tokens = 4;
  StreamServer server(so);
  const fs::path dir = temp_dir("secrets");
  std::vector<std::string> args = {kBinary,
                                   "bench",
                                   "serve",
                                   "--backend",
                                   "openai",
                                   "--base-url",
                                   "http://user:SECRET1@127.0.0.1:" + std::to_string(server.port()),
                                   "--model",
                                   "gpt2",
                                   "--tokenizer",
                                   gpt2_path().string(),
                                   "--dataset-name",
                                   "random",
                                   "--random-input-len",
                                   "16",
                                   "--random-output-len",
                                   "4",
                                   "--num-prompts",
                                   "3",
                                   "--ready-check-timeout-sec",
                                   "0",
                                   "--header",
                                   "Authorization=Bearer sk-SECRET2",
                                   "--header",
                                   "Proxy-Authorization=Basic SECRET3",
                                   "--header",
                                   "X-Auth-Token=SECRET4",
                                   "--metadata",
                                   "api_key=SECRET5",
                                   "--save-result",
                                   "--save-detailed",
                                   "--result-dir",
                                   dir.string(),
                                   "--result-filename",
                                   "r.json"};
  ProcessResult p = run_process(args);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_EQ(row_value(report_block(p.out), "Successful requests:"), "3") << p.out;
  const std::string saved = common::read_file(dir / "r.json");
  for (int i = 1; i <= 5; ++i) {
    const std::string s = "SECRET" + std::to_string(i);
    EXPECT_EQ(p.out.find(s), std::string::npos) << s << " printed:\n" << p.out;
    EXPECT_EQ(p.err.find(s), std::string::npos) << s << " printed:\n" << p.err;
    EXPECT_EQ(saved.find(s), std::string::npos) << s << " saved";
  }
  EXPECT_NE(p.out.find("base_url='http://<redacted>@127.0.0.1:"), std::string::npos) << p.out;
  // A malformed --header is an error naming the item, without its value.
  args.push_back("--header");
  args.push_back("Authorization: Bearer SECRET6");
  ProcessResult bad = run_process(args);
  EXPECT_EQ(bad.exit_code, 2) << bad.out << bad.err;
  EXPECT_NE(bad.err.find("Invalid header format"), std::string::npos) << bad.err;
  EXPECT_EQ(bad.out.find("SECRET6") + bad.err.find("SECRET6"), 2 * std::string::npos) << bad.out << bad.err;
  fs::remove_all(dir);
}

TEST_F(BenchServeE2E, ChatBackendCountsReasoningSeparately) {
  StreamServerOptions so;
  so.ttft_s = 0.010;
  so.itl_s = 0.002;
  so.num_tokens = 6;
  so.reasoning_tokens = 2;  // the first 2 tokens stream as delta.reasoning_content
  so.token_text = " the";   // one GPT-2 token, so the client's re-tokenized reasoning count is exact
  StreamServer server(so);
  const std::string sharegpt = sharegpt_path().string();
  auto args = base_args(server.port());
  for (std::string a : {"--backend", "openai-chat", "--endpoint", "/v1/chat/completions", "--dataset-name",
                        "sharegpt", "--dataset-path", sharegpt.c_str(), "--num-prompts", "6",
                        "--ready-check-timeout-sec", "0", "--max-concurrency", "2"})
    args.push_back(a);
  ProcessResult p = run_process(args);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  auto block = report_block(p.out);
  EXPECT_EQ(row_value(block, "Successful requests:"), "6") << p.out;
  EXPECT_EQ(row_value(block, "Maximum request concurrency:"), "2") << p.out;
  EXPECT_EQ(row_value(block, "Total generated tokens:"), "36") << p.out;
  EXPECT_NE(p.out.find("Maximum request concurrency: 2\n"), std::string::npos);
  // servelab extras: reasoning tokens counted apart (2 per request).
  std::string reasoning;
  for (const auto& l : lines_of(p.out))
    if (l.rfind("Reasoning tokens:", 0) == 0) reasoning = l.substr(41, l.find_last_not_of(' ') - 40);
  EXPECT_EQ(reasoning, "12") << p.out;
  // Without --endpoint the chat backend is refused with vLLM's message (the endpoint is not switched).
  auto bad = base_args(server.port());
  bad.push_back("--backend");
  bad.push_back("openai-chat");
  p = run_process(bad);
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("OpenAI Chat Completions API URL must end with 'chat/completions'."),
            std::string::npos)
      << p.err;
}

TEST_F(BenchServeE2E, SigintWritesInterruptedReport) {
  StreamServerOptions so;
  so.ttft_s = 0.010;
  so.itl_s = 0.050;
  so.num_tokens = 2000;  // 100 s per response: only Ctrl-C ends this run
  StreamServer server(so);
  fs::path dir = temp_dir("sigint");
  const std::string sharegpt = sharegpt_path().string(), dir_s = dir.string();
  auto args = base_args(server.port());
  for (std::string a : {"--dataset-name", "sharegpt", "--dataset-path", sharegpt.c_str(), "--num-prompts",
                        "20", "--max-concurrency", "4", "--request-rate", "20", "--ready-check-timeout-sec",
                        "0", "--save-result", "--result-dir", dir_s.c_str(), "--result-filename", "int.json"})
    args.push_back(a);
  SignalPlan plan{"Starting main benchmark run...", std::chrono::milliseconds(700), SIGINT};
  auto t0 = std::chrono::steady_clock::now();
  ProcessResult p = run_process(args, &plan, std::chrono::seconds(60));
  double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(p.exit_code, 130) << p.out << p.err;
  EXPECT_LT(took_s, 30.0);
  EXPECT_NE(p.err.find("Interrupted: stopping new requests"), std::string::npos) << p.err;
  auto block = report_block(p.out);
  ASSERT_FALSE(block.empty()) << p.out;
  EXPECT_NE(p.out.find("Run interrupted (Ctrl-C or SIGTERM)"), std::string::npos) << p.out;
  auto j = read_json(dir / "int.json");
  EXPECT_EQ(j["servelab"]["interrupted"], true);
  // The 4 in flight (--max-concurrency 4) were cancelled: failed; the 16 waiting for a slot were never sent.
  EXPECT_EQ(j["completed"], 0);
  EXPECT_EQ(j["failed"], 4);
  EXPECT_EQ(j["servelab"]["failures_by_kind"]["cancelled"], 4) << j["servelab"].dump();
  EXPECT_EQ(j["servelab"]["not_sent"], 16) << j["servelab"].dump();
  // The console's list of failed requests holds the 4 cancelled ones, not the 16 never sent.
  EXPECT_NE(p.out.find("Error 3: [cancelled] cancelled: run interrupted"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("] not sent:"), std::string::npos) << p.out;
  fs::remove_all(dir);
}

TEST_F(BenchServeE2E, RampUpRunAndFileName) {
  StreamServerOptions so;
  so.num_tokens = 3;
  StreamServer server(so);
  fs::path dir = temp_dir("ramp");
  auto args = base_args(server.port());
  for (std::string a : {"--dataset-name",
                        "random",
                        "--random-input-len",
                        "16",
                        "--random-output-len",
                        "3",
                        "--num-prompts",
                        "10",
                        "--ready-check-timeout-sec",
                        "0",
                        "--ramp-up-strategy",
                        "linear",
                        "--ramp-up-start-rps",
                        "50",
                        "--ramp-up-end-rps",
                        "200",
                        "--max-concurrency",
                        "4",
                        "--save-result",
                        "--result-dir"})
    args.push_back(a);
  args.push_back(dir.string());
  ProcessResult p = run_process(args);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("Traffic ramp-up strategy: linear.\nWill increase RPS from 50 to 200 RPS over the "
                       "duration of the benchmark.\nBurstiness factor: 1.0 (Poisson process)\n"
                       "Maximum request concurrency: 4\n"),
            std::string::npos)
      << p.out;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(std::regex_match(
      files[0].filename().string(),
      std::regex(R"(openai-ramp-up-linear-50qps-200qps-concurrency4-gpt2-\d{8}-\d{6}\.json)")))
      << files[0];
  auto j = read_json(files[0]);
  EXPECT_EQ(j["ramp_up_strategy"], "linear");
  EXPECT_EQ(j["ramp_up_start_rps"], 50);
  EXPECT_EQ(j["ramp_up_end_rps"], 200);
  EXPECT_EQ(j["completed"], 10);
  EXPECT_EQ(j["total_output_tokens"], 30);
  // vLLM 0.13 rps_change_events: λ_i = 50 + 150·i/9 crosses every integer from 51 to 200 once; 50 is the
  // start. Requests 1..9 carry int(λ_i) - int(λ_{i-1}) events each, stamped with their dispatch time.
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  auto at = std::find(keys.begin(), keys.end(), "rps_change_events");
  ASSERT_NE(at, keys.end()) << j.dump();
  EXPECT_EQ(*(at - 1), "max_concurrent_requests");
  EXPECT_EQ(*(at + 1), "mean_ttft_ms");
  const auto& ev = j["rps_change_events"];
  ASSERT_EQ(ev.size(), 151u) << ev.dump();
  const std::regex iso(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{6})?)");
  for (std::size_t k = 0; k < ev.size(); ++k) {
    EXPECT_EQ(ev[k]["rps"], 50 + static_cast<int>(k));
    EXPECT_TRUE(std::regex_match(ev[k]["timestamp"].get<std::string>(), iso)) << ev[k];
  }
  // int(λ_i) = 50, 66, 83, 100, 116, 133, 150, 166, 183, 200: the events a request crosses share its stamp.
  const std::vector<int> last_of_request = {50, 66, 83, 100, 116, 133, 150, 166, 183, 200};
  for (std::size_t r = 1; r < last_of_request.size(); ++r)
    for (int rps = last_of_request[r - 1] + 2; rps <= last_of_request[r]; ++rps)
      EXPECT_EQ(ev[static_cast<std::size_t>(rps - 50)]["timestamp"],
                ev[static_cast<std::size_t>(rps - 51)]["timestamp"])
          << "rps " << rps;
  fs::remove_all(dir);
}

// --preconnect: 8 requests at once through --max-concurrency 4 on the 4 pre-opened connections; the extras
// and the JSON say the send lag and that the 4 asked for were reached (the server holds each stream 200 ms).
TEST_F(BenchServeE2E, PreconnectBurstReachesTheRequestedConcurrency) {
  StreamServerOptions so;
  so.ttft_s = 0.200;
  so.num_tokens = 2;
  StreamServer server(so);
  fs::path dir = temp_dir("preconnect");
  auto args = base_args(server.port());
  for (std::string a :
       {"--dataset-name", "random", "--random-input-len", "16", "--random-output-len", "2", "--num-prompts",
        "4", "--ready-check-timeout-sec", "0", "--max-concurrency", "4", "--preconnect",
        "--no-server-metrics", "--save-result", "--result-filename", "p.json", "--result-dir"})
    args.push_back(a);
  args.push_back(dir.string());
  ProcessResult p = run_process(args);
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("Pre-opened 4 of 4 connections in "), std::string::npos) << p.out;
  EXPECT_LE(server.connections_accepted(), 5u);  // the 4, and bench's one time-scale probe (GET /v1/models)
  std::string reached, requested;
  for (const auto& l : lines_of(p.out)) {
    if (l.rfind("Peak concurrency reached:", 0) == 0) reached = l.substr(41, l.find_last_not_of(' ') - 40);
    if (l.rfind("Requested concurrency:", 0) == 0) requested = l.substr(41, l.find_last_not_of(' ') - 40);
  }
  EXPECT_EQ(reached, "4") << p.out;
  EXPECT_EQ(requested, "4") << p.out;
  EXPECT_NE(p.out.find("P99 send lag (ms):"), std::string::npos) << p.out;
  EXPECT_EQ(p.out.find("WARNING: the requested concurrency was not reached"), std::string::npos) << p.out;
  auto j = read_json(dir / "p.json");
  EXPECT_EQ(j["servelab"]["concurrency"]["requested"], 4);
  EXPECT_EQ(j["servelab"]["concurrency"]["peak_reached"], 4);
  EXPECT_EQ(j["servelab"]["concurrency"]["reached"], true);
  EXPECT_EQ(j["servelab"]["send_lag"]["count"], 4);
  EXPECT_EQ(j["servelab"]["preconnect"]["connections"], 4);
  EXPECT_EQ(j["servelab"]["preconnect"]["opened"], 4);
  fs::remove_all(dir);
}

TEST_F(BenchServeE2E, UnknownFlagAndBadValuesAreNamed) {
  ProcessResult p = run_process({kBinary, "bench", "serve", "--num-promptz", "5"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("error: unrecognized arguments: --num-promptz 5 (did you mean --num-prompts?)"),
            std::string::npos)
      << p.err;
  // --result-dir is checked before the run (no server here: the check comes first), so a finished run's
  // JSON is never lost to a directory that cannot be made (new-user trial).
  p = run_process(
      {kBinary, "bench", "serve", "--port", "1", "--save-result", "--result-dir", "/etc/hostname/x"});
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_NE(p.err.find("--result-dir /etc/hostname/x: cannot create it"), std::string::npos) << p.err;
  // A flag of vllm bench serve servelab does not implement says so and why (new-user trial: it read as a
  // typo).
  p = run_process({kBinary, "bench", "serve", "--profile"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(
      p.err.find("error: unrecognized arguments: --profile (--profile is a vllm bench serve flag servelab "
                 "does not implement: it starts the server's torch profiler"),
      std::string::npos)
      << p.err;
  // vLLM's parser: '_' as '-', unambiguous prefixes (the run then stops at the refused tokenizer mode, before
  // any network), ambiguous ones refused with argparse's message.
  p = run_process(
      {kBinary, "bench", "serve", "--num_prompts", "5", "--num-prompt=6", "--tokenizer_mode", "mistral"});
  EXPECT_EQ(p.exit_code, 2) << p.out << p.err;
  EXPECT_NE(p.out.find("num_prompts=6,"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("tokenizer_mode='mistral'"), std::string::npos) << p.out;
  EXPECT_NE(p.err.find("error: --tokenizer-mode mistral is not supported: it loads Mistral's mistral_common"),
            std::string::npos)
      << p.err;
  p = run_process({kBinary, "bench", "serve", "--random", "5"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(
      p.err.find("error: ambiguous option: --random could match --random-input-len, --random-output-len, "),
      std::string::npos)
      << p.err;
  p = run_process({kBinary, "bench", "serve", "--hel"});  // "--he" could also be --header
  EXPECT_EQ(p.exit_code, 0) << p.err;
  EXPECT_NE(p.out.find("--tokenizer-mode"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("--num-prompts"), std::string::npos) << p.out;
  p = run_process({kBinary, "bench", "serve", "--request-rate", "fast"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("argument --request-rate: invalid float value: 'fast'"), std::string::npos) << p.err;
  p = run_process({kBinary, "bench", "serve", "--ramp-up-strategy", "linear", "--request-rate", "4"});
  EXPECT_EQ(p.exit_code, 2);
  EXPECT_NE(p.err.find("When using ramp-up, do not specify --request-rate."), std::string::npos) << p.err;
  p = run_process({kBinary, "bench", "serve", "--backend", "tgi"});
  EXPECT_NE(p.exit_code, 0);
  EXPECT_NE((p.out + p.err).find("--backend"), std::string::npos) << p.out << p.err;
}

TEST_F(BenchServeE2E, ModelDiscoveryUsesFirstServerModel) {
  ModelsServer server;
  fs::path dir = temp_dir("models");
  ProcessResult p = run_process({kBinary,
                                 "bench",
                                 "serve",
                                 "--base-url",
                                 "http://127.0.0.1:" + std::to_string(server.port()),
                                 "--tokenizer",
                                 gpt2_path().string(),
                                 "--dataset-name",
                                 "random",
                                 "--random-input-len",
                                 "8",
                                 "--random-output-len",
                                 "2",
                                 "--num-prompts",
                                 "2",
                                 "--ready-check-timeout-sec",
                                 "0",
                                 "--save-result",
                                 "--result-dir",
                                 dir.string()});
  // The server answers 404 to POST /v1/completions: every request fails, and the message points at the chat
  // backend (a server that serves only chat completions looks like this).
  ASSERT_EQ(p.exit_code, 1) << p.out << p.err;
  EXPECT_NE(p.err.find(" Hint: the server has no /v1/completions (HTTP 404); if it serves only the chat "
                       "completions API, use --backend openai-chat --endpoint /v1/chat/completions."),
            std::string::npos)
      << p.err;
  EXPECT_EQ(server.models_requests(), 1);
  EXPECT_NE(p.out.find("Model not specified, fetching first model from server...\n"
                       "First model name: served-name, first model id: org/gpt2-root\n"),
            std::string::npos)
      << p.out;
  EXPECT_NE(p.out.find("Error 0: [http_status]"), std::string::npos) << p.out;
  // Default file name: {backend}-{rate}qps-{model basename}-{date}.json
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(std::regex_match(files[0].filename().string(),
                               std::regex(R"(openai-infqps-gpt2-root-\d{8}-\d{6}\.json)")))
      << files[0];
  auto j = read_json(files[0]);
  EXPECT_EQ(j["model_id"], "org/gpt2-root");
  EXPECT_EQ(j["failed"], 2);
  EXPECT_FALSE(j.contains("ttfts")) << "per-request arrays only with --save-detailed";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace servelab::e2e
