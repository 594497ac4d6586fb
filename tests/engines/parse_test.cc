// Flag parsing as each engine's CLI does it. Expected argparse messages were produced by CPython's
// argparse (3.11, same messages as 3.12 for these cases) on equivalent parsers; click messages follow
// click 8.1's formats (NoSuchOption + difflib.get_close_matches, BadParameter).
#include <gtest/gtest.h>

#include "engines/cli_parser.h"
#include "servelab/engines/engines.h"
#include "test_parse.h"

namespace se = servelab::engines;
using se::EngineKind;

namespace {

using servelab::engines::testing::parse;

std::string error_of(const std::string& cmd, const std::map<std::string, std::string>& env = {}) {
  try {
    parse(cmd, env);
  } catch (const se::EngineArgError& e) {
    return e.what();
  }
  return "<no error>";
}

}  // namespace

TEST(ParseVllm, AliasesEqualsAndUnderscores) {
  auto c =
      parse("vllm serve m -tp=4 --data-parallel-size 2 -dcp 2 --pipeline_parallel_size=1 --max_num_seqs 256");
  EXPECT_EQ(c.kind, EngineKind::kVllm);
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.tp, 4);
  EXPECT_EQ(c.dp, 2);
  EXPECT_EQ(c.dcp, 2);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(c.max_num_seqs, 256);
  EXPECT_EQ(c.gpus_used(), 8);
  EXPECT_TRUE(c.is_explicit("--max-num-seqs"));
}

TEST(ParseVllm, SchedulerAndMemoryKnobs) {
  auto c = parse(
      "vllm serve deepseek-ai/DeepSeek-V3.2 --max-num-seqs 512 --max-num-batched-tokens 16k "
      "--gpu-memory-utilization 0.85 --block-size 64 --kv-cache-dtype fp8 --no-enable-chunked-prefill "
      "--max-model-len 32K --enforce-eager --chat-template t.jinja --served-model-name a b --host 127.0.0.1 "
      "--port 9000 --trust-remote-code --enable-expert-parallel -tp 8");
  EXPECT_EQ(c.max_num_seqs, 512);
  EXPECT_EQ(c.max_num_batched_tokens, 16000);  // human_readable_int: k = 1000
  EXPECT_EQ(c.max_model_len, 32768);           // K = 1024
  EXPECT_DOUBLE_EQ(c.gpu_memory_fraction, 0.85);
  EXPECT_EQ(c.block_size, 64);
  EXPECT_EQ(c.kv_cache_dtype, "fp8");
  EXPECT_FALSE(c.enable_chunked_prefill);
  EXPECT_TRUE(c.enforce_eager);
  EXPECT_EQ(c.chat_template, "t.jinja");
  // Every name of vLLM's list is served (the first in responses), and the echo keeps them all.
  EXPECT_EQ(c.served_model_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_NE(se::render_command(c).find("--served-model-name a b "), std::string::npos)
      << se::render_command(c);
  EXPECT_EQ(c.host, "127.0.0.1");
  EXPECT_EQ(c.port, 9000);
  EXPECT_TRUE(c.trust_remote_code);
  EXPECT_TRUE(c.enable_expert_parallel);
  EXPECT_EQ(c.ep, 8);
}

TEST(ParseVllm, JsonSpeculativeAndCompilationConfig) {
  auto c = parse(R"(vllm serve m --speculative-config '{"method":"mtp","num_speculative_tokens":2}')");
  ASSERT_TRUE(c.speculative);
  EXPECT_EQ(c.speculative->method, "mtp");
  EXPECT_EQ(c.speculative->num_speculative_tokens, 2);
  // Dotted JSON form (FlexibleArgumentParser) merges into one value.
  auto d =
      parse("vllm serve m --speculative-config.method mtp --speculative-config.num_speculative_tokens=3");
  ASSERT_TRUE(d.speculative);
  EXPECT_EQ(d.speculative->method, "mtp");
  EXPECT_EQ(d.speculative->num_speculative_tokens, 3);
  auto g = parse(R"(vllm serve m --compilation-config '{"cudagraph_capture_sizes":[1,2,4,128]}')");
  EXPECT_EQ(g.cuda_graph_max_bs, 128);
  ASSERT_EQ(g.unmodelled_options.size(), 1u);
  EXPECT_EQ(g.unmodelled_options[0].flag, "--compilation-config");
  auto o = parse("vllm serve m -O.max_cudagraph_capture_size=256");
  EXPECT_EQ(o.cuda_graph_max_bs, 256);
  EXPECT_EQ(parse("vllm serve m --cudagraph-capture-sizes 1 2 64 8").cuda_graph_max_bs, 64);
  auto m = parse("vllm serve m --max-cudagraph-capture-size 96");
  EXPECT_EQ(m.cuda_graph_max_bs, 96);
  // Rendered through --compilation-config and parsed back to the same capture size.
  EXPECT_EQ(se::parse_launch_command(se::to_argv(m)).cuda_graph_max_bs, 96);
}

TEST(ParseVllm, AbbreviationsAndNegation) {
  auto c = parse("vllm serve m --max-num-s 8 --gpu-mem 0.5 --no-enable-prefix-caching");
  EXPECT_EQ(c.max_num_seqs, 8);
  EXPECT_DOUBLE_EQ(c.gpu_memory_fraction, 0.5);
  EXPECT_FALSE(c.enable_prefix_caching);
  EXPECT_EQ(
      error_of("vllm serve m --max-num 8"),
      "vllm serve: error: ambiguous option: --max-num could match --max-num-batched-tokens, --max-num-seqs, "
      "--max-num-partial-prefills");
}

TEST(ParseVllm, UnmodelledOptionsAreKept) {
  auto c = parse("vllm serve m --disable-log-stats --seed 7 --no-enable-log-requests -tp 2");
  ASSERT_EQ(c.unmodelled_options.size(), 3u);
  EXPECT_EQ(c.unmodelled_options[0].flag, "--disable-log-stats");
  EXPECT_TRUE(c.unmodelled_options[0].values.empty());
  EXPECT_EQ(c.unmodelled_options[1].flag, "--seed");
  EXPECT_EQ(c.unmodelled_options[1].values, std::vector<std::string>{"7"});
  EXPECT_EQ(c.unmodelled_options[2].flag, "--no-enable-log-requests");
}

TEST(ParseVllm, Errors) {
  // Leftover arguments are reported by the top-level `vllm` parser (argparse subparsers).
  EXPECT_EQ(error_of("vllm serve m --foo 1 -tp 8"), "vllm: error: unrecognized arguments: --foo 1");
  EXPECT_EQ(error_of("vllm serve m extra"), "vllm: error: unrecognized arguments: extra");
  EXPECT_EQ(error_of("vllm serve m -tp x"),
            "vllm serve: error: argument --tensor-parallel-size/-tp: invalid int value: 'x'");
  EXPECT_EQ(error_of("vllm serve m --gpu-memory-utilization high"),
            "vllm serve: error: argument --gpu-memory-utilization: invalid float value: 'high'");
  EXPECT_EQ(
      error_of("vllm serve m --kv-cache-dtype fp16"),
      "vllm serve: error: argument --kv-cache-dtype: invalid choice: 'fp16' (choose from 'auto', 'bfloat16', "
      "'fp8', 'fp8_ds_mla', 'fp8_e4m3', 'fp8_e5m2', 'fp8_inc')");
  // MambaDType (vllm/config/cache.py) [recalled]: a typo is refused, not silently ignored.
  EXPECT_EQ(error_of("vllm serve m --mamba-ssm-cache-dtype banana"),
            "vllm serve: error: argument --mamba-ssm-cache-dtype: invalid choice: 'banana' (choose from "
            "'auto', 'float32', 'float16')");
  EXPECT_EQ(error_of("vllm serve m --mamba-cache-dtype fp8"),
            "vllm serve: error: argument --mamba-cache-dtype: invalid choice: 'fp8' (choose from 'auto', "
            "'float32', 'float16')");
  EXPECT_EQ(error_of("vllm serve m --block-size 48"),
            "vllm serve: error: argument --block-size: invalid choice: 48 (choose from 1, 8, 16, 32, 64, "
            "128, 256)");
  EXPECT_EQ(error_of("vllm serve m --max-num-seqs"),
            "vllm serve: error: argument --max-num-seqs: expected one argument");
  EXPECT_EQ(error_of("vllm serve m --enforce-eager=1"),
            "vllm serve: error: argument --enforce-eager/--no-enforce-eager: ignored explicit argument '1'");
  EXPECT_EQ(
      error_of("vllm serve m --max-model-len 1.5K"),
      "vllm serve: error: argument --max-model-len: Decimals are not allowed with binary suffixes like K. "
      "Did you mean to use 1.5k instead?");
  EXPECT_EQ(error_of("vllm serve m --speculative-config {bad"),
            "vllm serve: error: argument --speculative-config: invalid loads value: '{bad'");
  EXPECT_EQ(error_of("vllm serve m", {{"VLLM_USE_DEEP_GEMM", "false"}}),
            "ValueError: invalid literal for int() with base 10: 'false'");
}

TEST(ParseVllm, Environment) {
  auto c = parse("vllm serve m", {{"VLLM_USE_DEEP_GEMM", "0"},
                                  {"VLLM_ATTENTION_BACKEND", "FLASHMLA"},
                                  {"HOME", "/root"},
                                  {"NCCL_DEBUG", "INFO"}});
  EXPECT_FALSE(c.deep_gemm);
  EXPECT_EQ(c.attention_backend, "FLASHMLA");
  EXPECT_EQ(c.env.size(), 3u);  // HOME is not engine-relevant
  EXPECT_EQ(c.env.count("HOME"), 0u);
}

TEST(ParseVllm, ModelFlag) {
  EXPECT_EQ(parse("vllm serve --model m").model, "m");
  EXPECT_EQ(parse("vllm serve p --model m").model, "p");          // the positional model_tag wins
  EXPECT_EQ(parse("vllm serve -tp 2").model, "Qwen/Qwen3-0.6B");  // EngineArgs default model
}

TEST(ParseVllm, ApiServerModuleTakesModelFlag) {
  auto c = parse("python3 -m vllm.entrypoints.openai.api_server --model m -tp 2");
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.tp, 2);
  EXPECT_EQ(error_of("python3 -m vllm.entrypoints.openai.api_server --model m x"),
            "api_server.py: error: unrecognized arguments: x");
}

TEST(ParseSglang, AliasesAndKnobs) {
  auto c = parse(
      "python -m sglang.launch_server --model m --tp 8 --dp-size=4 --enable-dp-attention --ep 8 "
      "--max-running-requests 256 --chunked-prefill-size 4096 --mem-fraction-static 0.8 --cuda-graph-max-bs "
      "128 "
      "--schedule-policy lpm --schedule-conservativeness 0.5 --kv-cache-dtype fp8_e4m3 --page-size 64 "
      "--disable-cuda-graph --trust-remote-code --speculative-algorithm NEXTN --speculative-num-steps 3 "
      "--speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --attention-backend nsa "
      "--nsa-prefill-backend flashmla_sparse --nsa-decode-backend flashmla_kv --max-total-tokens 100000");
  EXPECT_EQ(c.kind, EngineKind::kSglang);
  EXPECT_EQ(c.model, "m");
  EXPECT_EQ(c.tp, 8);
  EXPECT_EQ(c.dp, 4);
  EXPECT_EQ(c.ep, 8);
  EXPECT_TRUE(c.enable_dp_attention);
  EXPECT_EQ(c.gpus_used(), 8);
  EXPECT_EQ(c.max_num_seqs, 256);
  EXPECT_EQ(c.chunked_prefill_size, 4096);
  EXPECT_DOUBLE_EQ(c.gpu_memory_fraction, 0.8);
  EXPECT_EQ(c.cuda_graph_max_bs, 128);
  EXPECT_EQ(c.schedule_policy, "lpm");
  EXPECT_EQ(c.schedule_conservativeness, 0.5);
  EXPECT_EQ(c.kv_cache_dtype, "fp8_e4m3");
  EXPECT_EQ(c.block_size, 64);
  EXPECT_TRUE(c.enforce_eager);
  EXPECT_TRUE(c.trust_remote_code);
  ASSERT_TRUE(c.speculative);
  EXPECT_EQ(c.speculative->method, "NEXTN");
  EXPECT_EQ(c.speculative->num_speculative_tokens, 3);
  EXPECT_EQ(c.max_total_tokens, 100000);
  EXPECT_EQ(c.nsa_prefill_backend, "flashmla_sparse");
  auto off = parse("python3 -m sglang.launch_server --model-path m --chunked-prefill-size -1");
  EXPECT_EQ(off.chunked_prefill_size, -1);
  EXPECT_FALSE(off.enable_chunked_prefill);
  // Without DP-attention, dp replicas each take tp GPUs.
  EXPECT_EQ(parse("python3 -m sglang.launch_server --model-path m --tp-size 2 --dp-size 4").gpus_used(), 8);
}

TEST(ParseSglang, Errors) {
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --model-path m --foo"),
            "launch_server.py: error: unrecognized arguments: --foo");
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --tp-size 8"),
            "launch_server.py: error: the following arguments are required: --model-path/--model");
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --model-path m --tp-size eight"),
            "launch_server.py: error: argument --tensor-parallel-size/--tp-size: invalid int value: 'eight'");
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --model-path m --schedule-policy sjf"),
            "launch_server.py: error: argument --schedule-policy: invalid choice: 'sjf' (choose from 'lpm', "
            "'random', 'fcfs', 'dfs-weight', 'lof', 'priority')");
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --model-path m --enable-dp-attention=true"),
            "launch_server.py: error: argument --enable-dp-attention: ignored explicit argument 'true'");
  // `--pp` is a prefix of two options.
  EXPECT_EQ(
      error_of("python3 -m sglang.launch_server --model-path m --pp 2"),
      "launch_server.py: error: ambiguous option: --pp could match --pp-size, --pp-max-micro-batch-size");
  // Booleans are store_true: no --no- form.
  EXPECT_EQ(error_of("python3 -m sglang.launch_server --model-path m --no-trust-remote-code"),
            "launch_server.py: error: unrecognized arguments: --no-trust-remote-code");
}

TEST(ParseSglang, Environment) {
  EXPECT_FALSE(parse("python3 -m sglang.launch_server --model-path m", {{"SGLANG_ENABLE_JIT_DEEPGEMM", "0"}})
                   .deep_gemm);
  EXPECT_FALSE(
      parse("python3 -m sglang.launch_server --model-path m", {{"SGLANG_ENABLE_JIT_DEEPGEMM", "false"}})
          .deep_gemm);
  EXPECT_FALSE(
      parse("python3 -m sglang.launch_server --model-path m", {{"SGL_ENABLE_JIT_DEEPGEMM", "0"}}).deep_gemm);
  EXPECT_TRUE(parse("python3 -m sglang.launch_server --model-path m", {{"SGLANG_ENABLE_JIT_DEEPGEMM", "1"}})
                  .deep_gemm);
}

TEST(ParseTrtllm, OptionsAndForms) {
  auto c = parse(
      "trtllm-serve serve /models/ds --tp_size=8 --ep_size 8 --pp_size 1 --max_batch_size 512 "
      "--max_num_tokens 4096 --max_seq_len 32768 --kv_cache_free_gpu_memory_fraction 0.8 --host 0.0.0.0 "
      "--port 8001 --backend pytorch --extra_llm_api_options extra.yaml --trust_remote_code "
      "--enable_chunked_prefill --log_level info");
  EXPECT_EQ(c.kind, EngineKind::kTrtllm);
  EXPECT_EQ(c.model, "/models/ds");
  EXPECT_EQ(c.tp, 8);
  EXPECT_EQ(c.ep, 8);
  EXPECT_EQ(c.max_num_seqs, 512);
  EXPECT_EQ(c.max_num_batched_tokens, 4096);
  EXPECT_EQ(c.max_model_len, 32768);
  EXPECT_DOUBLE_EQ(c.gpu_memory_fraction, 0.8);
  EXPECT_EQ(c.port, 8001);
  EXPECT_EQ(c.extra_llm_api_options, "extra.yaml");
  EXPECT_TRUE(c.trust_remote_code);
  EXPECT_TRUE(c.enable_chunked_prefill);
  ASSERT_EQ(c.unmodelled_options.size(), 1u);
  EXPECT_EQ(c.unmodelled_options[0].flag, "--log_level");
}

TEST(ParseTrtllm, ClickErrors) {
  EXPECT_EQ(error_of("trtllm-serve m --foo 1"), "Error: No such option: --foo");
  EXPECT_EQ(error_of("trtllm-serve m --tp-size 8"),
            "Error: No such option: --tp-size (Possible options: --ep_size, --pp_size, --tp_size)");
  EXPECT_EQ(error_of("trtllm-serve m --max-batch-size 8"),
            "Error: No such option: --max-batch-size Did you mean --max_batch_size?");
  EXPECT_EQ(error_of("trtllm-serve m -tp 8"), "Error: No such option: -t");
  EXPECT_EQ(error_of("trtllm-serve m --tp_size x"),
            "Error: Invalid value for '--tp_size': 'x' is not a valid integer.");
  EXPECT_EQ(error_of("trtllm-serve m --kv_cache_free_gpu_memory_fraction most"),
            "Error: Invalid value for '--kv_cache_free_gpu_memory_fraction': 'most' is not a valid float.");
  EXPECT_EQ(
      error_of("trtllm-serve m --backend tensorrt"),
      "Error: Invalid value for '--backend': 'tensorrt' is not one of 'pytorch', 'trt', '_autodeploy'.");
  EXPECT_EQ(error_of("trtllm-serve m --trust_remote_code=1"),
            "Error: Option '--trust_remote_code' does not take a value.");
  EXPECT_EQ(error_of("trtllm-serve m --tp_size"), "Error: Option '--tp_size' requires an argument.");
  EXPECT_EQ(error_of("trtllm-serve --tp_size 8"), "Error: Missing argument 'MODEL'.");
  EXPECT_EQ(error_of("trtllm-serve m n"), "Error: Got unexpected extra argument (n)");
  // click uses the last value of a repeated option; the invalid first one is never converted.
  EXPECT_EQ(parse("trtllm-serve m --tp_size x --tp_size 4").tp, 4);
}

TEST(ParseTrtllm, Environment) {
  EXPECT_FALSE(parse("trtllm-serve m", {{"TRTLLM_DG_ENABLED", "0"}}).deep_gemm);
  EXPECT_TRUE(parse("trtllm-serve m").deep_gemm);
}

TEST(ParseLaunch, ProgramDetection) {
  EXPECT_EQ(parse("/usr/local/bin/vllm serve m").kind, EngineKind::kVllm);
  EXPECT_EQ(parse("python3.12 -u -m sglang.launch_server --model-path m").kind, EngineKind::kSglang);
  EXPECT_EQ(parse("sglang serve --model-path m").program, "sglang serve");
  EXPECT_EQ(parse("trtllm-serve m").program, "trtllm-serve");
  EXPECT_THROW(parse("vllm bench serve --model m"), std::invalid_argument);
  EXPECT_THROW(parse("python3 -m http.server"), std::invalid_argument);
  EXPECT_THROW(se::parse_launch_command({}), std::invalid_argument);
  // A launch quoted as one argument: the error says to give it unquoted.
  try {
    se::parse_launch_command({"vllm serve m -tp 2"});
    ADD_FAILURE() << "a quoted launch parsed";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("it came as one quoted argument: give the command unquoted"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(error_of("sglang serve --model-path m --bogus"),
            "sglang: error: unrecognized arguments: --bogus");
}

TEST(ShellHelpers, SplitAndEnv) {
  EXPECT_EQ(se::split_command_line(R"(a 'b c' "d \"e\"" f\ g '' )"),
            (std::vector<std::string>{"a", "b c", "d \"e\"", "f g", ""}));
  EXPECT_THROW(se::split_command_line("a 'b"), std::invalid_argument);
  auto env = se::parse_env_assignments({"VLLM_ATTENTION_BACKEND=\"CUTLASS_MLA\"", "A=", "B='x y'"});
  EXPECT_EQ(env.at("VLLM_ATTENTION_BACKEND"), "CUTLASS_MLA");
  EXPECT_EQ(env.at("A"), "");
  EXPECT_EQ(env.at("B"), "x y");
  EXPECT_THROW(se::parse_env_assignments({"NOEQUALS"}), std::invalid_argument);
}

TEST(PythonHelpers, Conversions) {
  using namespace servelab::engines::detail;
  EXPECT_EQ(python_int(" 8 "), 8);
  EXPECT_EQ(python_int("1_000"), 1000);
  EXPECT_EQ(python_int("-3"), -3);
  EXPECT_FALSE(python_int("1e3"));
  EXPECT_FALSE(python_int("1__0"));
  EXPECT_FALSE(python_int("8.0"));
  EXPECT_EQ(python_float("1e-1"), 0.1);
  EXPECT_FALSE(python_float("0x1p3"));
  EXPECT_EQ(human_readable_int("25.6k"), 25600);
  EXPECT_EQ(human_readable_int("1M"), 1048576);
  EXPECT_EQ(human_readable_int("1m"), 1000000);
  EXPECT_FALSE(human_readable_int("1.5K"));
  EXPECT_EQ(python_repr("it's"), "\"it's\"");
  EXPECT_EQ(python_repr("a\"b"), "'a\"b'");
  EXPECT_EQ(python_repr("x\ty"), "'x\\ty'");
  // difflib.get_close_matches oracle values (CPython 3.11).
  std::vector<std::string> opts{"--max_beam_width", "--max_batch_size", "--tp_size", "--pp_size",
                                "--ep_size"};
  EXPECT_EQ(close_matches("--max_batch", opts),
            (std::vector<std::string>{"--max_batch_size", "--max_beam_width"}));
  EXPECT_EQ(close_matches("--tp-size", opts),
            (std::vector<std::string>{"--tp_size", "--pp_size", "--ep_size"}));
  EXPECT_TRUE(close_matches("--foo", opts).empty());
}

// Launch wrappers, as InferenceMAX and TensorRT-LLM's docs start engines: the engine command after them is
// parsed, the environment they pass is recorded, and to_argv launches through the same wrapper.
TEST(LaunchWrappers, MpirunSrunDockerAndEnv) {
  auto t =
      se::parse_launch_command(se::split_command_line("mpirun -n 1 --oversubscribe --allow-run-as-root -x "
                                                      "TRTLLM_ENABLE_PDL=1 trtllm-serve openai/gpt-oss-120b "
                                                      "--port=8888 --tp_size=8 --max_batch_size 512"));
  EXPECT_EQ(t.kind, se::EngineKind::kTrtllm);
  EXPECT_EQ(t.model, "openai/gpt-oss-120b");
  EXPECT_EQ(t.tp, 8);
  EXPECT_EQ(t.env.at("TRTLLM_ENABLE_PDL"), "1");
  EXPECT_EQ(t.wrapper, (std::vector<std::string>{"mpirun", "-n", "1", "--oversubscribe",
                                                 "--allow-run-as-root", "-x", "TRTLLM_ENABLE_PDL=1"}));
  const auto argv = se::to_argv(t);
  ASSERT_GE(argv.size(), 9u);
  EXPECT_EQ(argv[0], "mpirun");
  EXPECT_EQ(argv[7], "trtllm-serve");
  EXPECT_EQ(se::parse_launch_command(argv).tp, 8);

  auto s = se::parse_launch_command(se::split_command_line(
      "srun --mpi=pmix --export=ALL,SGLANG_TORCH_PROFILER_DIR=/tmp -N 1 python3 -m sglang.launch_server "
      "--model-path Qwen/Qwen3-32B --tp 4"));
  EXPECT_EQ(s.kind, se::EngineKind::kSglang);
  EXPECT_EQ(s.tp, 4);
  EXPECT_EQ(s.env.at("SGLANG_TORCH_PROFILER_DIR"), "/tmp");

  auto d = se::parse_launch_command(se::split_command_line(
      "docker run --gpus all --ipc=host -e VLLM_USE_DEEP_GEMM=0 -p 8000:8000 vllm/vllm-openai:v0.11.0 "
      "--model Qwen/Qwen3-32B -tp 2"));
  EXPECT_EQ(d.kind, se::EngineKind::kVllm);
  EXPECT_EQ(d.model, "Qwen/Qwen3-32B");
  EXPECT_EQ(d.tp, 2);
  EXPECT_FALSE(d.deep_gemm);               // from the container's -e
  EXPECT_EQ(d.wrapper_program_words, 2u);  // the image runs `vllm serve`
  const auto dargv = se::to_argv(d);
  EXPECT_EQ(dargv[0], "docker");
  EXPECT_EQ(std::find(dargv.begin(), dargv.end(), "serve"), dargv.end());  // the image's entrypoint runs it

  auto e = se::parse_launch_command(
      se::split_command_line("docker run --rm lmsysorg/sglang:v0.5.3 env SGLANG_ENABLE_JIT_DEEPGEMM=0 "
                             "python3 -m sglang.launch_server "
                             "--model-path m --tp 8"));
  EXPECT_EQ(e.kind, se::EngineKind::kSglang);
  EXPECT_FALSE(e.deep_gemm);
  EXPECT_EQ(e.tp, 8);

  // The engine image's tag is the engine version when none is given; a given one wins (sim run notes the
  // difference). A tag of another image (CUDA's) or without a version names none.
  EXPECT_EQ(d.engine_version, "0.11.0");
  EXPECT_EQ(e.engine_version, "0.5.3");
  const auto pinned = se::parse_launch_command(
      se::split_command_line("docker run --gpus all vllm/vllm-openai:v0.17.0 --model m"), {}, "0.13.0");
  EXPECT_EQ(pinned.engine_version, "0.13.0");
  EXPECT_EQ(pinned.image_version, "0.17.0");
  EXPECT_EQ(se::parse_launch_command(
                se::split_command_line("docker run -v /a:/b lmsysorg/sglang:v0.5.6.post2-cu126 "
                                       "python3 -m sglang.launch_server --model-path m"))
                .engine_version,
            "0.5.6.post2");
  EXPECT_EQ(se::parse_launch_command(
                se::split_command_line("docker run nvidia/cuda:12.4.1-devel python3 -m sglang.launch_server "
                                       "--model-path m"))
                .image_version,
            "");
  EXPECT_EQ(se::parse_launch_command(se::split_command_line("docker run vllm/vllm-openai:latest --model m"))
                .image_version,
            "");

  // A wrapper with no engine command after it is still not a launch, and says which forms are.
  try {
    se::parse_launch_command({"mpirun", "-n", "1", "hostname"});
    ADD_FAILURE() << "accepted a wrapper without an engine";
  } catch (const std::invalid_argument& err) {
    EXPECT_NE(std::string(err.what()).find("mpirun"), std::string::npos) << err.what();
  }
}

// A container's options are read with their values: `--entrypoint P` is the engine program and the image the
// next word that is no option's value; the echo (render_command) keeps the launch as written: `--model` where
// it was given so, and the variables `-e` passes written once, in the wrapper.
TEST(LaunchWrappers, DockerEntrypointAndFaithfulEcho) {
  const std::string entry =
      "docker run --gpus all --entrypoint vllm vllm/vllm-openai:v0.11.0 serve Qwen/Qwen3-32B --max-num-seqs "
      "64";
  const auto e = se::parse_launch_command(se::split_command_line(entry));
  EXPECT_EQ(e.kind, se::EngineKind::kVllm);
  EXPECT_EQ(e.model, "Qwen/Qwen3-32B");
  EXPECT_EQ(e.max_num_seqs, 64);
  EXPECT_EQ(e.image_version, "0.11.0");
  EXPECT_EQ(e.engine_version, "0.11.0");
  EXPECT_EQ(e.wrapper, (std::vector<std::string>{"docker", "run", "--gpus", "all", "--entrypoint", "vllm",
                                                 "vllm/vllm-openai:v0.11.0"}));
  EXPECT_EQ(e.wrapper_program_words, 1u);
  EXPECT_EQ(se::render_command(e), entry);
  EXPECT_EQ(se::parse_launch_command(se::to_argv(e)).max_num_seqs, 64);
  const auto py = se::parse_launch_command(se::split_command_line(
      "docker run --entrypoint=python3 --shm-size 32g lmsysorg/sglang:v0.5.3 -m sglang.launch_server "
      "--model-path m --tp-size 2"));
  EXPECT_EQ(py.kind, se::EngineKind::kSglang);
  EXPECT_EQ(py.tp, 2);
  EXPECT_EQ(py.engine_version, "0.5.3");
  EXPECT_EQ(se::render_command(py),
            "docker run --entrypoint=python3 --shm-size 32g lmsysorg/sglang:v0.5.3 -m sglang.launch_server "
            "--model-path m --tp-size 2");

  // The image's own entrypoint (`vllm serve`), `--model` kept, -e variables (also -eK=V) not repeated.
  const std::string image =
      "docker run --rm -it --gpus all -v /models:/models -e VLLM_USE_DEEP_GEMM=0 -eNCCL_DEBUG=INFO "
      "vllm/vllm-openai:v0.11.0 --model Qwen/Qwen3-32B -tp 2";
  const auto d = se::parse_launch_command(se::split_command_line(image));
  EXPECT_EQ(d.model, "Qwen/Qwen3-32B");
  EXPECT_EQ(d.tp, 2);
  EXPECT_FALSE(d.deep_gemm);
  EXPECT_EQ(d.env.at("NCCL_DEBUG"), "INFO");
  EXPECT_EQ(d.wrapper_program_words, 2u);
  EXPECT_EQ(se::render_command(d), image);
  // A variable set outside the wrapper is still written in front of it.
  EXPECT_EQ(se::render_command(se::parse_launch_command(
                se::split_command_line("VLLM_USE_DEEP_GEMM=0 docker run vllm/vllm-openai:v0.11.0 m"))),
            "VLLM_USE_DEEP_GEMM=0 docker run vllm/vllm-openai:v0.11.0 m");
  // Without --model the positional stays positional.
  EXPECT_EQ(
      se::render_command(se::parse_launch_command(se::split_command_line("vllm serve m --model-impl vllm"))),
      "vllm serve m --model-impl vllm");
}

// Options of the 2026 releases that InferenceX launches pass: accepted (recorded as not modelled, or
// applied where the twin has the knob), not refused as unknown.
TEST(CurrentReleaseFlags, AcceptedAndRecorded) {
  auto v = se::parse_launch_command(
      se::split_command_line("vllm serve m --attention-config '{\"backend\": \"FLASHINFER\"}' --moe-backend "
                             "flashinfer_cutlass --linear-backend cutlass --enable-flashinfer-autotune"),
      {}, "0.15.0");
  EXPECT_EQ(v.unmodelled_options.size(), 4u);
  EXPECT_THROW(se::parse_launch_command({"vllm", "serve", "m", "--moe-backend", "x"}, {}, "0.11.0"),
               se::EngineArgError);
  auto s = se::parse_launch_command(
      se::split_command_line("python3 -m sglang.launch_server --model-path m --fp8-gemm-backend deep_gemm "
                             "--enable-ep-moe --enable-flashinfer-trtllm-moe --disable-piecewise-cuda-graph"),
      {}, "0.5.9");
  EXPECT_FALSE(s.enable_piecewise_cuda_graph);
  EXPECT_EQ(s.fp8_gemm_backend, "deep_gemm");  // modelled: it picks the FP8 block-scaled GEMM
  // The deprecated MoE switches map as SGLang maps them: EP over the TP group (1 here), FlashInfer's runner.
  EXPECT_TRUE(s.unmodelled_options.empty());
  EXPECT_EQ(s.ep, s.tp);
  EXPECT_EQ(s.moe_runner_backend, "flashinfer_trtllm");
  auto t =
      se::parse_launch_command(se::split_command_line("trtllm-serve m --config extra.yaml"), {}, "1.2.0rc5");
  EXPECT_EQ(t.extra_llm_api_options, "extra.yaml");
}
