// Tests of the bench orchestration pieces: sampling body (vLLM 0.13 key order and temperature default),
// model discovery, the progress line, and bench::run in-process (tune's path) including a pre-stopped run.
#include "bench/bench.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "bench/progress.h"
#include "common/paths.h"
#include "e2e/models_server.h"
#include "support/stream_server.h"

namespace servelab::bench {
namespace {

std::vector<std::string> keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> out;
  for (const auto& [k, v] : j.items()) out.push_back(k);
  return out;
}

TEST(SamplingBody, TemperatureZeroInjectedAsVllm013) {
  BenchConfig c;
  EXPECT_EQ(sampling_body(c).dump(), R"({"temperature":0.0})");
  c.top_p = 0.9;
  c.repetition_penalty = 1.05;
  auto b = sampling_body(c);
  // Given flags first in vLLM's dict order, then the injected temperature.
  EXPECT_EQ(keys(b), (std::vector<std::string>{"top_p", "repetition_penalty", "temperature"}));
  EXPECT_EQ(b["temperature"], 0.0);
}

TEST(SamplingBody, FlagsInVllmOrderAndExtraBodyWins) {
  BenchConfig c;
  c.repetition_penalty = 1.1;
  c.temperature = 0.7;
  c.top_k = 20;
  c.min_p = 0.05;
  c.extra_body = R"({"temperature": 0.2, "seed": 7, "top_k": -1})";
  auto b = sampling_body(c);
  EXPECT_EQ(keys(b), (std::vector<std::string>{"top_k", "min_p", "temperature", "repetition_penalty", "seed"}));
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
  EXPECT_NE(discovery_error("200 OK", R"({"data": []})").find("No models found on the server at http://127.0.0.1:"),
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
    EXPECT_NE(std::string(e.what()).find("GET http://127.0.0.1:" + std::to_string(port) + "/v1/models failed"),
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
    if (!std::filesystem::exists(tokenizer_)) GTEST_SKIP() << "missing " << tokenizer_;
  }
  BenchConfig config(std::uint16_t port) {
    BenchConfig c;
    c.port = port;
    c.model = "gpt2";
    c.tokenizer = tokenizer_.string();
    c.random_input_len = 32;
    c.random_output_len = 6;
    c.num_prompts = 8;
    c.ready_check_timeout_sec = 0;
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
  // that asks a server for its time scale (a servelab twin advertises one; this server is "real").
  EXPECT_EQ(server.requests_received(), 9u);
  EXPECT_EQ(r.server_time_scale, 1.0);
  EXPECT_FALSE(r.engine_twin);
}

TEST_F(RunInProcess, RandomMmRunsOnOpenAiChat) {
  test_support::StreamServerOptions so;
  test_support::StreamServer server(so);
  BenchConfig c = config(server.port());
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
  EXPECT_EQ(r.metrics.failed, 8);
  EXPECT_EQ(r.metrics.failures_by_kind[static_cast<std::size_t>(metrics::FailureKind::kCancelled)], 8);
  EXPECT_GT(r.duration_s, 0.0);
  EXPECT_NE(r.console_report.find("Run interrupted"), std::string::npos);
  EXPECT_EQ(server.requests_received(), 0u);
}

TEST_F(RunInProcess, ReadyCheckFailureNamesTheError) {
  test_support::StreamServerOptions so;
  so.fault = test_support::Fault::kHttp500;
  test_support::StreamServer server(so);
  BenchConfig c = config(server.port());
  c.ready_check_timeout_sec = 1;
  RunIo io;
  io.quiet = true;
  try {
    run(c, {}, io);
    FAIL() << "expected BenchError";
  } catch (const BenchError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "Initial test run failed - Please make sure benchmark arguments are correctly specified. Error: "),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace servelab::bench
