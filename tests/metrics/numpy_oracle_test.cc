// compute_metrics and the numpy statistics against numpy itself (Debian's /usr/bin/python3 with
// python3-numpy running scripts/numpy_oracle.py on the same data). Tolerance 1e-9 (relative to
// max(1, |value|)); with numpy 1.24 (Debian 12) the values are also required to be bit-identical.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/metrics/metrics.h"
#include "servelab/metrics/stats.h"

namespace servelab::metrics {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

// Runs the oracle on `input`; fails the test (with the reason) when python/numpy is unavailable.
nlohmann::json run_oracle(const nlohmann::json& input) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto in_path = dir / ("servelab_numpy_oracle_" + std::to_string(::getpid()) + ".json");
  {
    std::ofstream f(in_path);
    f << input.dump();
  }
  const auto script = common::source_dir() / "scripts" / "numpy_oracle.py";
  const std::string cmd = std::string(kPython) + " '" + script.string() + "' '" + in_path.string() + "'";
  std::string text;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[65536];
    std::size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
    const int rc = ::pclose(p);
    std::filesystem::remove(in_path);
    if (rc != 0) {
      ADD_FAILURE() << "numpy oracle failed (rc " << rc << "): " << cmd
                    << " — needs Debian's python3-numpy (make deps)";
      return {};
    }
  }
  return nlohmann::json::parse(text);
}

void expect_close(double expected, double actual, const std::string& what, bool bit_exact) {
  EXPECT_NEAR(actual, expected, 1e-9 * std::max(1.0, std::fabs(expected))) << what;
  if (bit_exact) {
    EXPECT_EQ(actual, expected) << what << " (bit-exact with numpy 1.24)";
  }
}

std::vector<double> random_values(std::mt19937_64& rng, std::size_t n) {
  std::lognormal_distribution<double> d(-3.0, 1.2);
  std::vector<double> v(n);
  for (double& x : v) x = d(rng);
  return v;
}

const std::vector<double> kPercentiles = {0, 1, 25, 33.3, 50, 90, 99, 99.9, 99.99, 100};

TEST(NumpyOracle, StatisticsMatchNumpy) {
  std::mt19937_64 rng(20261130);
  nlohmann::json input;
  input["percentiles"] = kPercentiles;
  std::vector<std::vector<double>> sets;
  for (std::size_t n :
       {1, 2, 3, 7, 8, 9, 15, 16, 17, 127, 128, 129, 255, 1000, 4097, 8192, 8193, 10000, 20011, 100003}) {
    sets.push_back(random_values(rng, n));
  }
  sets.push_back(std::vector<double>(300, 0.1));  // summation error accumulates visibly
  input["stats"] = sets;
  const auto oracle = run_oracle(input);
  ASSERT_TRUE(oracle.contains("stats"));
  const bool bit_exact = oracle["numpy_version"] == "1.24.2";
  for (std::size_t i = 0; i < sets.size(); ++i) {
    const auto& o = oracle["stats"][i];
    std::vector<double> sorted = sets[i];
    std::sort(sorted.begin(), sorted.end());
    const std::string tag = "set " + std::to_string(i) + " (n=" + std::to_string(sets[i].size()) + ")";
    expect_close(o["mean"].get<double>(), numpy_mean(sets[i]), tag + " mean", bit_exact);
    expect_close(o["std"].get<double>(), numpy_std(sets[i]), tag + " std", bit_exact);
    expect_close(o["median"].get<double>(), numpy_median_sorted(sorted), tag + " median", bit_exact);
    for (std::size_t k = 0; k < kPercentiles.size(); ++k) {
      expect_close(o["percentiles"][k].get<double>(), numpy_percentile_sorted(sorted, kPercentiles[k]),
                   tag + " p" + std::to_string(kPercentiles[k]), bit_exact);
    }
  }
}

TEST(NumpyOracle, ComputeMetricsMatchesVllmFormulasInNumpy) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> start(0.0, 30.0);
  std::lognormal_distribution<double> ttft(-1.0, 0.8);
  std::exponential_distribution<double> gap(40.0);
  std::uniform_int_distribution<int> out_len(1, 60), in_len(4, 1024), coin(0, 19);
  std::vector<RequestOutput> outputs;
  nlohmann::json requests = nlohmann::json::array();
  for (int i = 0; i < 400; ++i) {
    RequestOutput r;
    r.success = coin(rng) != 0;  // ~5% failures
    r.dataset_prompt_len = in_len(rng);
    r.prompt_len = r.dataset_prompt_len + 3;  // server count differs; vLLM 0.13 sums the dataset one
    r.send_time_s = start(rng);
    if (r.success) {
      r.output_tokens = coin(rng) < 2 ? 1 : out_len(rng);
      r.ttft_s = ttft(rng);
      // fewer chunks than tokens for some requests (multi-token chunks)
      const int chunks = coin(rng) < 4 ? std::max(1, r.output_tokens / 3) : r.output_tokens;
      double latency = r.ttft_s;
      for (int k = 1; k < chunks; ++k) {
        r.itl_s.push_back(gap(rng));
        latency += r.itl_s.back();
      }
      r.latency_s = latency;
    } else {
      r.failure = FailureKind::kReset;
    }
    requests.push_back({{"success", r.success},
                        {"prompt_len", r.dataset_prompt_len},
                        {"output_tokens", r.output_tokens},
                        {"ttft", r.ttft_s},
                        {"itl", r.itl_s},
                        {"latency", r.latency_s},
                        {"start_time", r.send_time_s}});
    outputs.push_back(std::move(r));
  }
  const double duration = 41.123456789;
  MetricsOptions opts;
  opts.percentiles = {50, 90, 99, 99.9};
  opts.goodput.ttft_ms = 500;
  opts.goodput.tpot_ms = 30;
  opts.goodput.e2el_ms = 2500;
  nlohmann::json input;
  input["percentiles"] = opts.percentiles;
  input["requests"] = requests;
  input["duration"] = duration;
  input["goodput"] = {{"ttft", 500.0}, {"tpot", 30.0}, {"e2el", 2500.0}};
  const auto oracle = run_oracle(input);
  ASSERT_TRUE(oracle.contains("metrics"));
  const auto& o = oracle["metrics"];
  const bool bit_exact = oracle["numpy_version"] == "1.24.2";

  const BenchmarkMetrics m = compute_metrics(outputs, duration, opts);
  EXPECT_EQ(m.completed, o["completed"].get<int>());
  EXPECT_EQ(m.failed, o["failed"].get<int>());
  EXPECT_EQ(m.total_input, o["total_input"].get<std::int64_t>());
  EXPECT_EQ(m.total_output, o["total_output"].get<std::int64_t>());
  EXPECT_GT(m.failed, 0);
  expect_close(o["request_throughput"], m.request_throughput, "request_throughput", bit_exact);
  ASSERT_TRUE(m.request_goodput.has_value());
  expect_close(o["request_goodput"], *m.request_goodput, "request_goodput", bit_exact);
  EXPECT_GT(*m.request_goodput, 0.0);
  EXPECT_LT(*m.request_goodput, m.request_throughput);
  expect_close(o["output_throughput"], m.output_throughput, "output_throughput", bit_exact);
  expect_close(o["total_token_throughput"], m.total_token_throughput, "total_token_throughput", bit_exact);
  EXPECT_EQ(m.max_output_tokens_per_s, o["max_output_tokens_per_s"].get<double>());
  EXPECT_EQ(m.max_concurrent_requests, o["max_concurrent_requests"].get<int>());
  const std::pair<const char*, const LatencySummary*> metrics[] = {
      {"ttft", &m.ttft}, {"tpot", &m.tpot}, {"itl", &m.itl}, {"e2el", &m.e2el}};
  for (const auto& [name, s] : metrics) {
    const std::string n = name;
    expect_close(o["mean_" + n + "_ms"], s->mean_ms, "mean " + n, bit_exact);
    expect_close(o["median_" + n + "_ms"], s->median_ms, "median " + n, bit_exact);
    expect_close(o["std_" + n + "_ms"], s->std_ms, "std " + n, bit_exact);
    for (std::size_t k = 0; k < opts.percentiles.size(); ++k) {
      expect_close(o["percentiles_" + n + "_ms"][k], s->percentiles_ms[k].value_ms,
                   std::string("p").append(std::to_string(opts.percentiles[k])).append(" ").append(n),
                   bit_exact);
    }
  }
}

}  // namespace
}  // namespace servelab::metrics
