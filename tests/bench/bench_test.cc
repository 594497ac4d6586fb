// Tests of the bench orchestration pieces: sampling body (vLLM 0.13 key order and temperature default),
// model discovery, the progress line, and bench::run in-process (tune's path) including a pre-stopped run.
#include "servelab/bench/bench.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "bench/progress.h"
#include "e2e/models_server.h"
#include "servelab/common/paths.h"
#include "support/stream_server.h"

namespace servelab::bench {
namespace {

std::vector<std::string> keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

TEST(SamplingBody, TemperatureZeroInjectedAsVllm013) {
  RunOptions c;
  EXPECT_EQ(sampling_body(c).dump(), R"({"temperature":0.0})");
  c.top_p = 0.9;
  c.repetition_penalty = 1.05;
  auto b = sampling_body(c);
  // Given flags first in vLLM's dict order, then the injected temperature.
  EXPECT_EQ(keys(b), (std::vector<std::string>{"top_p", "repetition_penalty", "temperature"}));
  EXPECT_EQ(b["temperature"], 0.0);
}

TEST(SamplingBody, FlagsInVllmOrderAndExtraBodyWins) {
  RunOptions c;
  c.repetition_penalty = 1.1;
  c.temperature = 0.7;
  c.top_k = 20;
  c.min_p = 0.05;
  c.extra_body = R"({"temperature": 0.2, "seed": 7, "top_k": -1})";
  auto b = sampling_body(c);
  EXPECT_EQ(keys(b),
            (std::vector<std::string>{"top_k", "min_p", "temperature", "repetition_penalty", "seed"}));
  EXPECT_EQ(b["temperature"], 0.2);
  EXPECT_EQ(b["top_k"], -1);
  EXPECT_EQ(b["seed"], 7);
  c.extra_body = "not json";
  EXPECT_THROW(sampling_body(c), ConfigError);
}

TEST(ModelDiscovery, FirstEntryIdAndRoot) {
  e2e::ModelsServer server;
  auto [name, id] = discover_first_model("http://127.0.0.1:" + std::to_string(server.port()), {}, false);
  EXPECT_EQ(name, "served-name");
  EXPECT_EQ(id, "org/gpt2-root");
}

TEST(ModelDiscovery, RootFallsBackToId) {
  e2e::ModelsServer server("200 OK", R"({"data": [{"id": "only-id"}, {"id": "second"}]})");
  auto [name, id] = discover_first_model("http://127.0.0.1:" + std::to_string(server.port()), {}, false);
  EXPECT_EQ(name, "only-id");
  EXPECT_EQ(id, "only-id");
}

std::string discovery_error(const std::string& status, const std::string& body) {
  e2e::ModelsServer server(status, body);
  try {
    discover_first_model("http://127.0.0.1:" + std::to_string(server.port()), {}, false);
  } catch (const BenchError& e) {
    return e.what();
  }
  return "";
}

TEST(ModelDiscovery, ErrorsNameTheProblem) {
  EXPECT_NE(discovery_error("404 Not Found", "{}").find("returned HTTP 404 Not Found"), std::string::npos);
  EXPECT_NE(
      discovery_error("200 OK", R"({"data": []})").find("No models found on the server at http://127.0.0.1:"),
      std::string::npos);
  EXPECT_NE(discovery_error("200 OK", "<html>").find("did not return a JSON object"), std::string::npos);
  EXPECT_NE(discovery_error("200 OK", R"({"data": [{"name": "x"}]})").find("data[0].id"), std::string::npos);
  // Nothing listening: the connect error names the URL.
  std::uint16_t port;
  {
    e2e::ModelsServer s;
    port = s.port();
  }
  try {
    discover_first_model("http://127.0.0.1:" + std::to_string(port), {}, false);
    FAIL();
  } catch (const BenchError& e) {
    EXPECT_NE(
        std::string(e.what()).find("GET http://127.0.0.1:" + std::to_string(port) + "/v1/models failed"),
        std::string::npos)
        << e.what();
  }
}

TEST(Progress, TqdmLayout) {
  EXPECT_EQ(detail::format_progress(50, 100, 10.0, 10), " 50%|█████     | 50/100 [00:10<00:10, 5.00it/s]");
  EXPECT_EQ(detail::format_progress(0, 8, 0.0, 4), "  0%|    | 0/8 [00:00<?, ?it/s]");
  EXPECT_EQ(detail::format_progress(1, 8, 3725.0, 8), " 12%|█       | 1/8 [1:02:05<7:14:35, 0.00it/s]");
  EXPECT_EQ(detail::format_progress(3, 16, 1.0, 8), " 18%|█▌      | 3/16 [00:01<00:04, 3.00it/s]");
}

class RunInProcess : public ::testing::Test {
 protected:
  void SetUp() override {
    tokenizer_ = common::data_dir() / "gpt2-tokenizer.json";
    if (!std::filesystem::exists(tokenizer_))
      FAIL() << "missing " << tokenizer_ << " (shared/data beside the checkout)";
  }
  RunOptions config(std::uint16_t port) {
    RunOptions c;
    c.port = port;
    c.model = "gpt2";
    c.tokenizer = tokenizer_.string();
    c.random_input_len = 32;
    c.random_output_len = 6;
    c.num_prompts = 8;
    c.ready_check_timeout_s = 0;
    c.percentile_metrics = "ttft,e2el";
    return c;
  }
  std::filesystem::path tokenizer_;
};

TEST_F(RunInProcess, QuietRunFillsResult) {
  test_support::StreamServerOptions so;
  so.ttft_s = 0.005;
  so.itl_s = 0.002;
  test_support::StreamServer server(so);
  RunIo io;
  io.quiet = true;
  BenchResult r = run(config(server.port()), {}, io);
  EXPECT_FALSE(r.interrupted);
  EXPECT_EQ(r.metrics.completed, 8);
  EXPECT_EQ(r.metrics.total_output, 8 * 6);  // server sends max_tokens tokens: random output len 6
  EXPECT_EQ(r.outputs.size(), 8u);
  EXPECT_EQ(r.model_name, "gpt2");
  EXPECT_EQ(r.tokenizer_id, tokenizer_.string());
  EXPECT_FALSE(r.result_path.has_value());
  EXPECT_EQ(r.result_json["completed"], 8);
  EXPECT_TRUE(r.result_json.contains("mean_e2el_ms"));
  EXPECT_FALSE(r.result_json.contains("mean_tpot_ms"));  // not selected
  EXPECT_NE(r.console_report.find("Mean E2EL (ms):"), std::string::npos);
  EXPECT_GE(r.metrics.ttft.mean_ms, 5.0);
  // Random dataset: ignore_eos forced on; temperature 0.0 injected. The 9th request is the GET /v1/models
  // that asks a server for its time scale (a servelab twin advertises one; this server is "real"), the 10th
  // the GET /metrics before the run: this server answers it HTTP 500, so no other scrape follows.
  EXPECT_EQ(server.requests_received(), 10u);
  ASSERT_TRUE(r.server_metrics);
  EXPECT_FALSE(r.server_metrics->available);
  EXPECT_NE(r.console_report.find("Server metrics not available: GET http://127.0.0.1:"), std::string::npos);
  EXPECT_EQ(r.result_json["servelab"]["server_metrics"]["available"], false);
  EXPECT_EQ(r.server_time_scale, 1.0);
  EXPECT_FALSE(r.engine_twin);
}

TEST_F(RunInProcess, RandomMmRunsOnOpenAiChat) {
  test_support::StreamServerOptions so;
  test_support::StreamServer server(so);
  RunOptions c = config(server.port());
  c.dataset_name = "random-mm";
  c.backend = "openai-chat";
  c.endpoint = "/v1/chat/completions";
  c.random_mm_bucket_config = "{(8, 8, 1): 1.0}";
  c.random_mm_base_items_per_request = 2;
  RunIo io;
  io.quiet = true;
  BenchResult r = run(c, {}, io);
  EXPECT_EQ(r.metrics.completed, 8);
  EXPECT_EQ(r.metrics.failed, 0);
  EXPECT_EQ(r.metrics.total_output, 8 * 6);
}

TEST_F(RunInProcess, StoppedBeforeStartReportsEveryRequestCancelled) {
  test_support::StreamServer server(test_support::StreamServerOptions{});
  std::stop_source stop;
  stop.request_stop();
  RunIo io;
  io.quiet = true;
  BenchResult r = run(config(server.port()), stop.get_token(), io);
  EXPECT_TRUE(r.interrupted);
  EXPECT_EQ(r.metrics.completed, 0);
  // Never sent: neither completed nor failed (new-user trial: "Failed requests: 48" after a Ctrl-C where 29
  // of them had never left the client).
  EXPECT_EQ(r.metrics.failed, 0);
  EXPECT_EQ(r.metrics.not_sent, 8);
  EXPECT_EQ(r.metrics.failures_by_kind[static_cast<std::size_t>(metrics::FailureKind::kCancelled)], 0);
  EXPECT_NE(r.console_report.find("8 request(s) were never sent"), std::string::npos) << r.console_report;
  EXPECT_GT(r.duration_s, 0.0);
  EXPECT_NE(r.console_report.find("Run interrupted"), std::string::npos);
  EXPECT_EQ(server.requests_received(), 0u);
}

TEST_F(RunInProcess, ReadyCheckFailureNamesTheError) {
  test_support::StreamServerOptions so;
  so.fault = test_support::Fault::kHttp500;
  test_support::StreamServer server(so);
  RunOptions c = config(server.port());
  c.ready_check_timeout_s = 1;
  RunIo io;
  io.quiet = true;
  try {
    run(c, {}, io);
    FAIL() << "expected BenchError";
  } catch (const BenchError& e) {
    EXPECT_NE(std::string(e.what()).find("Initial test run failed - Please make sure benchmark arguments are "
                                         "correctly specified. Error: "),
              std::string::npos)
        << e.what();
  }
}

std::string contents(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string out;
  char buf[4096];
  for (std::size_t n; (n = std::fread(buf, 1, sizeof buf, f)) > 0;) out.append(buf, n);
  return out;
}

std::vector<std::string> lines_starting(const std::string& text, const std::string& prefix) {
  std::vector<std::string> out;
  std::size_t pos = 0;
  while (pos < text.size()) {
    std::size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (text.compare(pos, prefix.size(), prefix) == 0) out.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

// Nothing listening: one line per attempt on the progress stream, with the error and the time left; the
// time left shrinks from one attempt to the next (attempts 5 s apart, vLLM's retry interval).
TEST_F(RunInProcess, ReadyCheckLinePerAttemptAgainstClosedPort) {
  std::uint16_t port;
  {
    e2e::ModelsServer s;
    port = s.port();
  }
  RunOptions c = config(port);
  c.ready_check_timeout_s = 6;
  RunIo io;
  io.out = std::tmpfile();
  io.progress = std::tmpfile();
  ASSERT_TRUE(io.out && io.progress);
  std::string error;
  try {
    run(c, {}, io);
  } catch (const BenchError& e) {
    error = e.what();
  }
  const std::string refused = "connect to 127.0.0.1:" + std::to_string(port) + " failed: Connection refused";
  EXPECT_NE(error.find("Error: " + refused + " (2 attempts in 6 s, --ready-check-timeout-sec)"),
            std::string::npos)
      << error;
  const auto lines = lines_starting(contents(io.progress), "Endpoint not ready");
  ASSERT_EQ(lines.size(), 2u) << contents(io.progress);
  double left[2];
  for (int i = 0; i < 2; ++i) {
    const std::string head = "Endpoint not ready (attempt " + std::to_string(i + 1) + "): " + refused + "; ";
    ASSERT_EQ(lines[static_cast<std::size_t>(i)].rfind(head, 0), 0u) << lines[static_cast<std::size_t>(i)];
    left[i] = std::stod(lines[static_cast<std::size_t>(i)].substr(head.size()));
  }
  EXPECT_GT(left[0], 5.0);  // 6 s minus a refused connect
  EXPECT_LE(left[0], 6.0);
  EXPECT_LT(left[1], left[0] - 4.0);  // the second attempt came about 5 s later
  EXPECT_NE(lines[0].find(" s left, next attempt in 5.0 s"), std::string::npos) << lines[0];
  // The second leaves about 1 s, less than the 5 s between attempts: it says none follows (none did).
  EXPECT_NE(lines[1].find(" s left, less than the time between attempts: no further attempt"),
            std::string::npos)
      << lines[1];
  EXPECT_NE(contents(io.out).find("Waiting for endpoint to become up in 6 seconds\n"), std::string::npos);
  std::fclose(io.out);
  std::fclose(io.progress);
}

// stderr not a terminal (here: a file): log lines instead of the bar; none with --disable-tqdm.
TEST_F(RunInProcess, ProgressLogWhenNotATerminal) {
  test_support::StreamServer server(test_support::StreamServerOptions{});
  for (bool disable : {false, true}) {
    RunOptions c = config(server.port());
    c.disable_tqdm = disable;
    RunIo io;
    io.out = std::tmpfile();
    io.progress = std::tmpfile();
    ASSERT_TRUE(io.out && io.progress);
    BenchResult r = run(c, {}, io);
    EXPECT_EQ(r.metrics.completed, 8);
    const std::string progress = contents(io.progress);
    // The tokenizer's load notes (GPT-2's file: no model type, a dropped merge) are there either way.
    EXPECT_NE(progress.find("Tokenizer "), std::string::npos) << progress;
    if (disable) {
      EXPECT_EQ(progress.find("Progress:"), std::string::npos) << progress;
      EXPECT_EQ(progress.find("it/s"), std::string::npos) << progress;
    } else {
      EXPECT_EQ(progress.find("it/s"), std::string::npos) << progress;
      EXPECT_NE(progress.find("Progress: 8/8 requests done (100.0%), "), std::string::npos) << progress;
    }
    std::fclose(io.out);
    std::fclose(io.progress);
  }
}

}  // namespace
}  // namespace servelab::bench
