// The InferenceMAX corpus loader (shared/reference/inferencemax): a small fixture written here (a vLLM point
// with its --config file, a SGLang point whose prompt count depends on the runner, an AMD point and a
// multi-node Dynamo point), then the real points.json: counts per status and one point against its JSON.
#include <gtest/gtest.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <unistd.h>

#include "servelab/common/paths.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/fit.h"

namespace sim = servelab::sim;

namespace {

// Four points in the layout of inferencemax/points.json (fields trimmed to what the loader reads, values
// taken from real points: inferencemax/20218553330/0, .../20613446912/1, an MI355X SGLang and a GB200
// Dynamo-TRT point).
constexpr const char* kFixture = R"({
 "about": "fixture", "recipes": {},
 "points": [
  {"id": "inferencemax/20218553330/0", "study": "inferencemax-gpt-oss-120b-h100-vllm",
   "model": "openai/gpt-oss-120b", "gpu": "H100", "engine": "vllm", "engine_version": "0.11.2",
   "spec_decoding": "none", "disagg": false, "multinode": false, "status": "ok", "gpu_count": 4,
   "parallelism": {"tp": 4, "ep": 1, "dp_attention": false, "dp": 1},
   "launch_argv": ["vllm", "serve", "openai/gpt-oss-120b", "--host=0.0.0.0", "--port=8888", "--config",
                   "config.yaml", "--gpu-memory-utilization=0.9", "--tensor-parallel-size=4", "--max-num-seqs=64"],
   "env": {"PYTHONNOUSERSITE": "1", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"},
   "launcher_env": {"TORCH_CUDA_ARCH_LIST": "9.0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"},
   "config_files": {"config.yaml": "async-scheduling: true\nno-enable-prefix-caching: true\nmax-cudagraph-capture-size: 2048\nmax-num-batched-tokens: 8192\nmax-model-len: 10240\n"},
   "recipe": "gptoss_fp4_h100_docker.sh@e4892b85",
   "workload": {"tool": "benchmark_serving.py", "dataset": "random", "input_len": 8192, "output_len": 1024,
                "random_range_ratio": 0.8, "num_prompts": 640, "max_concurrency": 64, "request_rate": "inf",
                "ignore_eos": true, "backend": "vllm", "key": "random-8192in-1024out-c64"},
   "measured": {"total_token_throughput": 32023.0621, "output_token_throughput": 3552.6793,
                "input_token_throughput": 28470.3828, "mean_ttft_ms": 613.6513, "mean_tpot_ms": 17.0855,
                "mean_e2el_ms": 16376.1243, "mean_itl_ms": 17.1381},
   "assumed": ["run date estimated from the run id"]},
  {"id": "inferencemax/20613446912/1", "study": "inferencemax-deepseek-r1-0528-b200-sglang",
   "gpu": "B200", "engine": "sglang", "engine_version": "0.5.6", "spec_decoding": "none", "disagg": false,
   "multinode": false, "status": "ok", "gpu_count": 8,
   "parallelism": {"tp": 8, "ep": 8, "dp_attention": true, "dp": 1},
   "launch_argv": ["python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-R1-0528", "--tp", "8"],
   "env": {}, "launcher_env": {}, "config_files": {},
   "recipe": "dsr1_fp8_b200_docker.sh@4d8a9ff1",
   "workload": {"tool": "benchmark_serving.py", "dataset": "random", "input_len": 1024, "output_len": 1024,
                "random_range_ratio": 0.8, "num_prompts": null, "max_concurrency": 32, "request_rate": "inf",
                "key": "random-1024in-1024out-c32",
                "num_prompts_candidates": {"dsr1_fp8_b200_docker.sh@4d8a9ff1": 1600, "dsr1_fp8_b200_slurm.sh@71532f81": 320}},
   "measured": {"total_token_throughput": 5000.5, "output_token_throughput": 2500.25, "mean_ttft_ms": 100.0,
                "mean_tpot_ms": 12.5},
   "assumed": []},
  {"id": "inferencemax/20248091324/3", "study": "inferencemax-deepseek-r1-0528-mxfp4-preview-mi355x-sglang",
   "gpu": "MI355X", "engine": "sglang", "engine_version": "0.5.6.post1", "spec_decoding": "none",
   "disagg": false, "multinode": false, "status": "ok", "gpu_count": 8,
   "parallelism": {"tp": 8, "ep": 1, "dp_attention": false, "dp": 1},
   "launch_argv": ["python3", "-m", "sglang.launch_server", "--model-path", "amd/DeepSeek-R1-0528-MXFP4-Preview", "--tp", "8"],
   "env": {}, "launcher_env": {}, "config_files": {}, "recipe": "dsr1_fp4_mi355x_docker.sh@0",
   "workload": {"tool": "benchmark_serving.py", "dataset": "random", "input_len": 1024, "output_len": 8192,
                "random_range_ratio": 0.8, "num_prompts": 80, "max_concurrency": 4, "request_rate": "inf",
                "key": "random-1024in-8192out-c4"},
   "measured": {"total_token_throughput": 900.0, "mean_ttft_ms": 80.0, "mean_tpot_ms": 20.0}},
  {"id": "inferencemax/20321908209/0", "study": "inferencemax-deepseek-r1-0528-fp4-v2-gb200-dynamo-trt",
   "gpu": "GB200", "engine": "dynamo-trt", "engine_version": "0.5.1-rc0.pre3", "spec_decoding": "mtp",
   "disagg": true, "multinode": true, "status": "ok", "gpu_count": 52, "launch_argv": null,
   "launch_wrapper_argv": ["sbatch", "--nodes=13", "job.sh"],
   "env": {"DECODE_MTP_SIZE": "3"}, "config_files": {},
   "workload": {"tool": "external: the recipe's own benchmark client", "dataset": "random", "input_len": 8192,
                "output_len": 1024, "random_range_ratio": null, "num_prompts": null, "max_concurrency": 269,
                "request_rate": "inf", "key": "random-8192in-1024out-c269"},
   "measured": {"total_token_throughput": 250000.0, "mean_ttft_ms": 3000.0, "mean_tpot_ms": 30.0}}
 ]
})";

std::filesystem::path write_fixture() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("servelab_inferencemax_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "points.json") << kFixture;
  return dir;
}

TEST(CorpusInferenceMax, FixtureFieldsAndStatuses) {
  const auto dir = write_fixture();
  const auto c = sim::load_corpus(dir);  // the directory: its points.json
  std::filesystem::remove_all(dir);
  ASSERT_EQ(c.points.size(), 4u);
  ASSERT_EQ(c.sources.size(), 1u);
  EXPECT_EQ(c.studies.size(), 4u);

  const auto& v = c.points[0];
  EXPECT_EQ(v.id, "inferencemax/20218553330/0");
  EXPECT_EQ(v.study, "inferencemax-gpt-oss-120b-h100-vllm");
  EXPECT_EQ(v.engine, "vllm");
  EXPECT_EQ(v.engine_version, "0.11.2");
  EXPECT_EQ(v.gpu, "H100");
  EXPECT_EQ(v.gpu_count, 4);
  EXPECT_EQ(v.status, sim::CorpusPoint::Status::kOk);
  EXPECT_TRUE(v.refusal.empty());
  EXPECT_EQ(v.label, "0.11.2 tp4");
  ASSERT_EQ(v.argv.size(), 10u);
  EXPECT_EQ(v.argv[6], "config.yaml");
  // launcher_env under env: the script's export wins.
  EXPECT_EQ(v.env.at("TORCH_CUDA_ARCH_LIST"), "9.0");
  EXPECT_EQ(v.env.at("CUDA_DEVICE_ORDER"), "FASTEST_FIRST");
  EXPECT_EQ(v.env.at("PYTHONNOUSERSITE"), "1");
  ASSERT_EQ(v.config_files.count("config.yaml"), 1u);
  EXPECT_EQ(v.workload.tool, "benchmark_serving.py");
  EXPECT_EQ(v.workload.dataset, "random");
  EXPECT_EQ(v.workload.input_len, 8192);
  EXPECT_EQ(v.workload.output_len, 1024);
  ASSERT_TRUE(v.workload.random_range_ratio);
  EXPECT_DOUBLE_EQ(*v.workload.random_range_ratio, 0.8);
  EXPECT_EQ(v.workload.num_prompts, 640);
  EXPECT_EQ(v.workload.max_concurrency, 64);
  EXPECT_TRUE(std::isinf(v.workload.request_rate));
  EXPECT_EQ(v.workload.key, "random-8192in-1024out-c64");
  EXPECT_DOUBLE_EQ(*v.measured.total_tok_s, 32023.0621);
  EXPECT_DOUBLE_EQ(*v.measured.output_tok_s, 3552.6793);
  EXPECT_DOUBLE_EQ(*v.measured.input_tok_s, 28470.3828);
  EXPECT_DOUBLE_EQ(*v.measured.mean_ttft_ms, 613.6513);
  EXPECT_DOUBLE_EQ(*v.measured.mean_tpot_ms, 17.0855);
  EXPECT_DOUBLE_EQ(*v.measured.mean_e2el_ms, 16376.1243);
  EXPECT_FALSE(v.measured.duration_s);
  EXPECT_FALSE(v.measured.successful);

  // num_prompts null: the candidate of the point's own recipe (docker: 50 x CONC), said in `assumed`.
  const auto& s = c.points[1];
  EXPECT_EQ(s.status, sim::CorpusPoint::Status::kOk);
  EXPECT_EQ(s.workload.num_prompts, 1600);
  ASSERT_EQ(s.assumed.size(), 1u);
  EXPECT_NE(s.assumed[0].find("320 (dsr1_fp8_b200_slurm.sh@71532f81)"), std::string::npos) << s.assumed[0];
  EXPECT_EQ(s.label, "0.5.6 tp8 ep8 dp-attn");

  const auto& amd = c.points[2];
  EXPECT_EQ(amd.status, sim::CorpusPoint::Status::kUnsupported);
  EXPECT_STREQ(sim::corpus_status_name(amd.status), "unsupported");
  EXPECT_EQ(amd.refusal, "AMD MI355X (ROCm kernels) is not modelled: the twin models NVIDIA GPUs only");
  EXPECT_DOUBLE_EQ(*amd.measured.total_tok_s, 900.0);

  const auto& mn = c.points[3];
  EXPECT_EQ(mn.status, sim::CorpusPoint::Status::kUnsupported);
  EXPECT_TRUE(mn.multinode);
  EXPECT_TRUE(mn.disaggregated);
  EXPECT_TRUE(mn.argv.empty());
  EXPECT_EQ(mn.command, "sbatch --nodes=13 job.sh");
  EXPECT_EQ(mn.gpu_count, 52);
  EXPECT_EQ(mn.label, "0.5.1-rc0.pre3 52 GPUs mtp");
  EXPECT_EQ(
      mn.refusal,
      "multi-node disaggregated serving (dynamo-trt, 52 GPUs) is not modelled: the twin models one engine "
      "replica on one node, and the engine flags come from an external recipe (no launch argv)");
  EXPECT_EQ(mn.workload.num_prompts, 0);
  EXPECT_FALSE(mn.workload.random_range_ratio);
}

// The unsupported points become refusals with their reason; the vLLM point's config.yaml is applied
// (max-num-batched-tokens 8192, max-model-len 10240, prefix caching off) and its lengths are drawn from
// [int(0.8 x len), len].
TEST(CorpusInferenceMax, PreparedWithConfigFileAndRefusals) {
  const auto dir = write_fixture();
  const auto c = sim::load_corpus(dir / "points.json");  // the file itself
  std::filesystem::remove_all(dir);
  const auto prepared = sim::prepare_corpus(c);
  ASSERT_EQ(prepared.size(), 4u);
  const auto& v = prepared[0];
  ASSERT_FALSE(v.refusal) << *v.refusal;
  ASSERT_FALSE(v.predicted_failure) << *v.predicted_failure;
  ASSERT_TRUE(v.launch);
  EXPECT_EQ(v.launch->config.max_num_batched_tokens, 8192);
  EXPECT_EQ(v.launch->config.max_model_len, 10240);
  EXPECT_EQ(v.launch->max_model_len, 10240);
  EXPECT_FALSE(v.launch->config.enable_prefix_caching);
  EXPECT_EQ(v.launch->config.async_scheduling, true);
  ASSERT_EQ(v.workload.size(), 640u);
  int min_in = 1 << 30, max_in = 0, min_out = 1 << 30, max_out = 0;
  for (const auto& r : v.workload) {
    min_in = std::min(min_in, r.prompt_len), max_in = std::max(max_in, r.prompt_len);
    min_out = std::min(min_out, r.output_len), max_out = std::max(max_out, r.output_len);
  }
  EXPECT_GE(min_in, 6553);  // int(8192 * 0.8)
  EXPECT_LE(max_in, 8192);
  EXPECT_GE(min_out, 819);  // int(1024 * 0.8)
  EXPECT_LE(max_out, 1024);
  EXPECT_LT(min_in + 1000, max_in);  // spread, not fixed
  EXPECT_EQ(v.options.max_concurrency, 64);
  ASSERT_TRUE(prepared[2].refusal);
  EXPECT_EQ(*prepared[2].refusal, c.points[2].refusal);
  ASSERT_TRUE(prepared[3].refusal);
  EXPECT_EQ(*prepared[3].refusal, c.points[3].refusal);
}

TEST(CorpusInferenceMax, ConfigFileTheLaunchNamesMustBeGiven) {
  sim::Corpus c;
  sim::CorpusPoint p;
  p.id = "x";
  p.study = "s";
  p.engine = "vllm";
  p.engine_version = "0.11.2";
  p.gpu = "H100";
  p.gpu_count = 4;
  p.argv = {"vllm", "serve", "openai/gpt-oss-120b", "--config", "missing.yaml", "--tensor-parallel-size=4"};
  p.workload.dataset = "random";
  p.workload.num_prompts = 10;
  p.workload.input_len = p.workload.output_len = 100;
  c.points.push_back(p);
  const auto prepared = sim::prepare_corpus(c);
  ASSERT_TRUE(prepared[0].refusal);
  EXPECT_EQ(*prepared[0].refusal,
            "launch: --config missing.yaml: the corpus point gives no text for this file");
}

// The released file: 1,622 points (README.md "Coverage"): 915 vLLM / SGLang / TRT-LLM on H100/H200/B200
// the twin can take; 333 on AMD GPUs (SGLang 195 + ATOM 83 + SGLang PD 55), 374 GB200 Dynamo.
// Every released corpus as one (sim validate --corpus A --corpus B): the 13 lab studies then the 19
// InferenceMAX ones, in order; a corpus given twice, or a study in two corpora, is an error.
TEST(CorpusInferenceMax, TheUnionOfTheReleasedCorpora) {
  const auto reference = servelab::common::data_dir().parent_path() / "reference";
  const auto c = sim::load_corpora({reference, reference / "inferencemax"});
  ASSERT_EQ(c.studies.size(), 13u + 19u);
  EXPECT_EQ(c.studies.front(), "deepseek-v3.2__h200");
  EXPECT_EQ(c.studies[13].rfind("inferencemax-", 0), 0u) << c.studies[13];
  EXPECT_EQ(c.points.size(), 271u + 1622u);
  EXPECT_EQ(c.sources.size(), 3u);  // seed-measurements.json, perflab/measurements.json, points.json
  try {
    sim::load_corpora({reference, reference / "perflab" / "measurements.json"});
    ADD_FAILURE() << "a file read twice was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(
        std::string(e.what()).find("is read twice: by --corpus " + reference.string() + " and by --corpus"),
        std::string::npos)
        << e.what();
  }
  EXPECT_THROW(sim::load_corpora({}), std::runtime_error);
}

TEST(CorpusInferenceMax, RealFileCountsAndOnePoint) {
  const auto path = servelab::common::data_dir().parent_path() / "reference" / "inferencemax";
  if (!std::filesystem::exists(path / "points.json"))
    FAIL() << "no " << path << " (shared/reference beside the checkout)";
  const auto c = sim::load_corpus(path);
  ASSERT_EQ(c.points.size(), 1622u);
  EXPECT_EQ(c.studies.size(), 19u);
  std::map<std::string, int> by_status;
  int amd = 0, multinode = 0, atom = 0, config = 0;
  for (const auto& p : c.points) {
    ++by_status[sim::corpus_status_name(p.status)];
    amd += p.refusal.find("AMD ") != std::string::npos;
    multinode += p.multinode;
    atom += p.refusal.find("\"atom\"") != std::string::npos;
    config += !p.config_files.empty();
  }
  EXPECT_EQ(by_status.size(), 2u);
  EXPECT_EQ(by_status["ok"], 915);
  EXPECT_EQ(by_status["unsupported"], 707);
  EXPECT_EQ(amd, 333);
  EXPECT_EQ(multinode, 429);
  EXPECT_EQ(atom, 83);
  EXPECT_EQ(config, 696);  // config.yaml (vLLM) 461 + gptoss-fp4.yml (TRT-LLM) 235

  // Runs whose mean TTFT measures stalls (sim::mark_ttft_stalls: a p99 TTFT >= 3x and >= 10 s above the
  // least tail its sweep shows at its load or below, scaled by the load): TTFT not scored, the reason kept.
  // All 63 are SGLang 0.5.6 on B200 (the 46 whose p99 also exceeds their median end-to-end latency, and 17
  // of 1k/8k runs whose requests last longer than the stall).
  int stalled = 0;
  for (const auto& q : c.points)
    for (const auto& nc : q.not_comparable)
      if (nc.find("held ~") != std::string::npos) {
        ++stalled;
        EXPECT_FALSE(q.measured.mean_ttft_ms) << q.id;
        EXPECT_FALSE(q.measured.total_tok_s) << q.id;  // the duration holds the stall too
        EXPECT_TRUE(q.measured.mean_tpot_ms) << q.id;  // TPOT excludes the first token
        EXPECT_TRUE(q.measured.p99_ttft_ms) << q.id;
        EXPECT_EQ(q.engine + " " + q.engine_version + " " + q.gpu, "sglang 0.5.6 B200") << q.id;
      }
  EXPECT_EQ(stalled, 63);
  // points[180]: concurrency 4, mean TTFT 5.35 s, p99 67.8 s, 2,123 tok/s; a repeat of it,
  // inferencemax/20613446912/2, measured p99 2.1 s and 3,644 tok/s.
  const auto& st = c.points[180];
  ASSERT_EQ(st.id, "inferencemax/20286929996/10");
  ASSERT_EQ(st.not_comparable.size(), 2u);
  EXPECT_EQ(
      st.not_comparable[0],
      "TTFT: the p99 TTFT (67.8 s) is 32x the tail this launch shows at this load or below (2.1 s: "
      "inferencemax/20613446912/2, a run at the same concurrency 4) while its median (0.26 s) is not: "
      "some requests were held ~66 s outside the engine's queues (a stall: repeats of one configuration "
      "show it or not), so the mean TTFT measures the stall, not prefill and queueing");
  EXPECT_EQ(
      st.not_comparable[1],
      "tok/s: the benchmark's duration includes the stall (TTFT, above), so its throughput measures the "
      "stall too (2123 tok/s against 3644 in the repeat without it, inferencemax/20613446912/2)");
  EXPECT_DOUBLE_EQ(*st.measured.median_ttft_ms, 258.2892);
  EXPECT_FALSE(st.measured.total_tok_s);
  EXPECT_FALSE(st.measured.output_tok_s);

  // points[0] of the file, inferencemax/20218553330/0: checked against its JSON.
  const auto& p = c.points[0];
  EXPECT_EQ(p.id, "inferencemax/20218553330/0");
  EXPECT_EQ(p.status, sim::CorpusPoint::Status::kOk);
  EXPECT_EQ(p.gpu, "H100");
  EXPECT_EQ(p.gpu_count, 4);
  EXPECT_EQ(p.workload.key, "random-8192in-1024out-c64");
  EXPECT_EQ(p.workload.input_len, 8192);
  EXPECT_EQ(p.workload.output_len, 1024);
  EXPECT_EQ(p.workload.num_prompts, 640);
  EXPECT_EQ(p.workload.max_concurrency, 64);
  EXPECT_DOUBLE_EQ(*p.workload.random_range_ratio, 0.8);
  EXPECT_DOUBLE_EQ(*p.measured.total_tok_s, 32023.0621);
  EXPECT_DOUBLE_EQ(*p.measured.output_tok_s, 3552.6793);
  EXPECT_DOUBLE_EQ(*p.measured.mean_ttft_ms, 613.6513);
  EXPECT_DOUBLE_EQ(*p.measured.mean_tpot_ms, 17.0855);
  EXPECT_EQ(p.config_files.at("config.yaml"),
            "async-scheduling: true\nno-enable-prefix-caching: true\nmax-cudagraph-capture-size: 2048\n"
            "max-num-batched-tokens: 8192\nmax-model-len: 10240\n");
}

}  // namespace

namespace {

// A closed-loop point of one launch: `argv` tells sweeps apart; p99, median and mean TTFT in ms.
sim::CorpusPoint stall_point(const std::string& id, const std::string& argv, int concurrency, double p99_ms,
                             double mean_ms, double median_ms = 200) {
  sim::CorpusPoint c;
  c.id = id;
  c.study = "s";
  c.engine = "sglang";
  c.engine_version = "0.5.6";
  c.gpu = "B200";
  c.gpu_count = 8;
  c.argv = {"python3", "-m", "sglang.launch_server", argv};
  c.workload.dataset = "random";
  c.workload.input_len = c.workload.output_len = 1024;
  c.workload.request_rate = std::numeric_limits<double>::infinity();
  c.workload.max_concurrency = concurrency;
  c.measured.p99_ttft_ms = p99_ms;
  c.measured.median_ttft_ms = median_ms;
  c.measured.mean_ttft_ms = mean_ms;
  c.measured.total_tok_s = id == "a4" ? 4000 : 2500;
  return c;
}

}  // namespace

TEST(CorpusStalls, AP99FarAboveItsSweepsScaledTailIsAStall) {
  std::vector<sim::CorpusPoint> pts = {
      stall_point("a4", "--tp=8", 4, 2000, 300),
      stall_point("a4-repeat", "--tp=8", 4, 68000, 7000),  // 34x the repeat's 2.0 s, 66 s above it
      stall_point("a8", "--tp=8", 8, 4500, 400),           // 1.1x the c4 tail scaled to 8 (4.0 s)
      stall_point("a8-stall", "--tp=8", 8, 70000, 7100),   // 17.5x that 4.0 s
      stall_point("a16", "--tp=8", 16, 20000, 900),        // 2.5x (8.0 s), 12 s above: under the factor
      // A queue for the KV cache: tail and median up together (median 9 s, 11x the c4 median scaled to 64).
      stall_point("a64-queue", "--tp=8", 64, 40000, 12000, 9000),
      stall_point("b4", "--tp=4", 4, 300, 100),   // another launch: its own sweep
      stall_point("b8", "--tp=4", 8, 2500, 150),  // 4.2x (0.6 s) but 1.9 s above: under 10 s
  };
  auto open_loop = stall_point("c", "--tp=8", 4, 90000, 9000);
  open_loop.workload.max_concurrency.reset();  // no concurrency cap: no first-wave bound, never marked
  open_loop.workload.request_rate = 4;
  pts.push_back(open_loop);
  auto paced = stall_point("d", "--tp=8", 8, 90000, 9000);
  paced.workload.request_rate = 4;  // a cap and a finite rate: another sweep, not a closed loop
  pts.push_back(paced);
  // A run whose TTFT another rule set aside lends no reference: without it e4 has none but itself.
  auto set_aside = stall_point("e2", "--tp=2", 2, 100, 50);
  set_aside.not_comparable.push_back("TTFT: the run reports a median TTFT of 0 ms");
  pts.push_back(set_aside);
  pts.push_back(stall_point("e4", "--tp=2", 4, 70000, 7000));
  sim::mark_ttft_stalls(pts);

  std::vector<std::string> marked;
  for (const auto& p : pts)
    if (std::any_of(p.not_comparable.begin(), p.not_comparable.end(),
                    [](const std::string& n) { return n.find("held ~") != std::string::npos; })) {
      marked.push_back(p.id);
      EXPECT_FALSE(p.measured.mean_ttft_ms) << p.id;
      EXPECT_FALSE(p.measured.total_tok_s) << p.id;
    } else {
      EXPECT_TRUE(p.measured.mean_ttft_ms) << p.id;
      EXPECT_TRUE(p.measured.total_tok_s) << p.id;
    }
  EXPECT_EQ(marked, (std::vector<std::string>{"a4-repeat", "a8-stall"}));
  EXPECT_EQ(
      pts[1].not_comparable.at(0),
      "TTFT: the p99 TTFT (68.0 s) is 34x the tail this launch shows at this load or below (2.0 s: a4, a "
      "run at the same concurrency 4) while its median (0.20 s) is not: some requests were held ~66 s "
      "outside the engine's queues (a stall: repeats of one configuration show it or not), so the mean "
      "TTFT measures the stall, not prefill and queueing");
  EXPECT_EQ(
      pts[3].not_comparable.at(0),
      "TTFT: the p99 TTFT (70.0 s) is 18x the tail this launch shows at this load or below (4.0 s: a4 at "
      "concurrency 4, scaled to 8 in proportion) while its median (0.20 s) is not: some requests were "
      "held ~66 s outside the engine's queues (a stall: repeats of one configuration show it or not), so "
      "the mean TTFT measures the stall, not prefill and queueing");
  // Their throughput goes with the TTFT: against the repeat at the same load, named with both figures.
  EXPECT_EQ(
      pts[1].not_comparable.at(1),
      "tok/s: the benchmark's duration includes the stall (TTFT, above), so its throughput measures the "
      "stall too (2500 tok/s against 4000 in the repeat without it, a4)");
  EXPECT_EQ(
      pts[3].not_comparable.at(1),
      "tok/s: the benchmark's duration includes the stall (TTFT, above), so its throughput measures the "
      "stall too");
  // A stalled run's p99 stays: it is what the rule read.
  EXPECT_DOUBLE_EQ(*pts[1].measured.p99_ttft_ms, 68000);
}
