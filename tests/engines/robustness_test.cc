// Robustness: random token soups per engine either parse or fail with the engine's error type — never a
// crash or a stray exception — and every successful parse round-trips through to_argv/to_env and goes
// through resolve_launch (DeepSeek-V3.2 on 8xH200, the engine's default release) without throwing.
#include <gtest/gtest.h>

#include <cstdint>

#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace se = servelab::engines;

namespace {

struct Lcg {
  std::uint64_t state;
  std::size_t next(std::size_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::size_t>((state >> 33) % n);
  }
};

const std::vector<std::string> kValues = {"8",
                                          "1",
                                          "0",
                                          "-1",
                                          "0.5",
                                          "2.5",
                                          "32k",
                                          "4K",
                                          "abc",
                                          "",
                                          "fp8",
                                          "auto",
                                          "fcfs",
                                          "lpm",
                                          "EAGLE",
                                          "nsa",
                                          "fa3",
                                          "pytorch",
                                          "{\"method\":\"mtp\",\"num_speculative_tokens\":2}",
                                          "{bad",
                                          "null",
                                          "{\"max_cudagraph_capture_size\":64}",
                                          "-0.5",
                                          "--",
                                          "x y"};

const std::vector<std::string> kVllmFlags = {"-tp",
                                             "-dp",
                                             "-pp",
                                             "-dcp",
                                             "--tensor-parallel-size",
                                             "--max-num-seqs",
                                             "--max-num-batched-tokens",
                                             "--gpu-memory-utilization",
                                             "--block-size",
                                             "--kv-cache-dtype",
                                             "--enable-chunked-prefill",
                                             "--no-enable-chunked-prefill",
                                             "--speculative-config",
                                             "--speculative-config.method",
                                             "--speculative-config.num_speculative_tokens",
                                             "--max-model-len",
                                             "--enforce-eager",
                                             "--tokenizer-mode",
                                             "--reasoning-parser",
                                             "--tool-call-parser",
                                             "--enable-auto-tool-choice",
                                             "--chat-template",
                                             "--served-model-name",
                                             "--host",
                                             "--port",
                                             "--trust-remote-code",
                                             "--enable-expert-parallel",
                                             "--compilation-config",
                                             "-O3",
                                             "-O.max_cudagraph_capture_size",
                                             "--max_num_seqs",
                                             "--max-num",
                                             "--gpu-mem",
                                             "--seed",
                                             "--disable-log-stats",
                                             "--no-enable-prefix-caching",
                                             "--foo",
                                             "--model",
                                             "--attention-backend",
                                             "--scheduling-policy",
                                             "-q",
                                             "--enforce-eager=1",
                                             "--max-num-seqs=3"};

const std::vector<std::string> kSglangFlags = {"--model-path",
                                               "--model",
                                               "--tp-size",
                                               "--tp",
                                               "--dp-size",
                                               "--dp",
                                               "--ep-size",
                                               "--ep",
                                               "--pp",
                                               "--enable-dp-attention",
                                               "--max-running-requests",
                                               "--chunked-prefill-size",
                                               "--mem-fraction-static",
                                               "--cuda-graph-max-bs",
                                               "--schedule-policy",
                                               "--schedule-conservativeness",
                                               "--kv-cache-dtype",
                                               "--speculative-algorithm",
                                               "--speculative-num-steps",
                                               "--speculative-eagle-topk",
                                               "--speculative-num-draft-tokens",
                                               "--context-length",
                                               "--attention-backend",
                                               "--nsa-prefill-backend",
                                               "--nsa-decode-backend",
                                               "--reasoning-parser",
                                               "--tool-call-parser",
                                               "--chat-template",
                                               "--host",
                                               "--port",
                                               "--trust-remote-code",
                                               "--page-size",
                                               "--disable-cuda-graph",
                                               "--cuda-graph-bs",
                                               "--disable-radix-cache",
                                               "--log-level",
                                               "--bogus",
                                               "--speculative",
                                               "--context-length=4096",
                                               "--tp-size=2"};

const std::vector<std::string> kTrtFlags = {"--tp_size",
                                            "--ep_size",
                                            "--pp_size",
                                            "--max_batch_size",
                                            "--max_num_tokens",
                                            "--max_seq_len",
                                            "--kv_cache_free_gpu_memory_fraction",
                                            "--host",
                                            "--port",
                                            "--backend",
                                            "--extra_llm_api_options",
                                            "--trust_remote_code",
                                            "--enable_chunked_prefill",
                                            "--log_level",
                                            "--tp-size",
                                            "-tp",
                                            "--foo",
                                            "--tp_size=4",
                                            "--trust_remote_code=1",
                                            "--reasoning_parser"};

void soak(const std::vector<std::string>& prefix, const std::vector<std::string>& flags, std::uint64_t seed,
          int iterations, int* parsed_ok, int* refused) {
  Lcg rng{seed};
  static const auto model = servelab::model::deepseek_v32();
  static const auto cluster = servelab::hardware::parse_cluster("8xH200");
  for (int it = 0; it < iterations; ++it) {
    std::vector<std::string> argv = prefix;
    std::size_t n = rng.next(7);
    for (std::size_t i = 0; i < n; ++i) {
      argv.push_back(flags[rng.next(flags.size())]);
      if (rng.next(3) != 0) argv.push_back(kValues[rng.next(kValues.size())]);
    }
    std::map<std::string, std::string> env;
    if (rng.next(4) == 0) env["VLLM_USE_DEEP_GEMM"] = rng.next(2) ? "0" : "no";
    if (rng.next(4) == 0) env["SGLANG_ENABLE_JIT_DEEPGEMM"] = "0";
    if (rng.next(4) == 0) env["VLLM_ATTENTION_BACKEND"] = rng.next(2) ? "FLASHMLA" : "FLASHMLA_SPARSE";
    std::string cmd;
    for (const auto& a : argv) cmd += "[" + a + "]";
    SCOPED_TRACE(cmd);
    se::LaunchConfig c;
    try {
      c = se::parse_launch_command(argv, env);
    } catch (const se::EngineArgError&) {
      ++*refused;
      continue;
    } catch (const std::invalid_argument&) {
      ++*refused;
      continue;
    }
    ++*parsed_ok;
    se::LaunchConfig back;
    ASSERT_NO_THROW(back = se::parse_launch_command(se::to_argv(c), se::to_env(c))) << se::render_command(c);
    EXPECT_EQ(back.tp, c.tp);
    EXPECT_EQ(back.dp, c.dp);
    EXPECT_EQ(back.ep, c.ep);
    EXPECT_EQ(back.max_num_seqs, c.max_num_seqs);
    EXPECT_EQ(back.max_num_batched_tokens, c.max_num_batched_tokens);
    EXPECT_EQ(back.max_model_len, c.max_model_len);
    EXPECT_EQ(back.chunked_prefill_size, c.chunked_prefill_size);
    EXPECT_EQ(back.enable_chunked_prefill, c.enable_chunked_prefill);
    EXPECT_EQ(back.cuda_graph_max_bs, c.cuda_graph_max_bs);
    EXPECT_EQ(back.kv_cache_dtype, c.kv_cache_dtype);
    EXPECT_EQ(back.attention_backend, c.attention_backend);
    EXPECT_EQ(back.deep_gemm, c.deep_gemm);
    EXPECT_EQ(back.gpu_memory_fraction, c.gpu_memory_fraction);
    EXPECT_EQ(back.speculative.has_value(), c.speculative.has_value());
    EXPECT_EQ(back.unmodelled_options.size(), c.unmodelled_options.size()) << se::render_command(c);
    EXPECT_NO_THROW(se::resolve_launch(c, model, cluster)) << se::render_command(c);
  }
}

}  // namespace

TEST(Robustness, RandomVllmCommands) {
  int ok = 0, refused = 0;
  soak({"vllm", "serve", "deepseek-ai/DeepSeek-V3.2"}, kVllmFlags, 1, 1500, &ok, &refused);
  EXPECT_GT(ok, 100);  // the soup must exercise both paths
  EXPECT_GT(refused, 100);
}

TEST(Robustness, RandomSglangCommands) {
  int ok = 0, refused = 0;
  soak({"python3", "-m", "sglang.launch_server", "--model-path", "m"}, kSglangFlags, 2, 1500, &ok, &refused);
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 100);
}

TEST(Robustness, RandomTrtllmCommands) {
  int ok = 0, refused = 0;
  soak({"trtllm-serve", "m"}, kTrtFlags, 3, 1500, &ok, &refused);
  EXPECT_GT(ok, 100);
  EXPECT_GT(refused, 100);
}
