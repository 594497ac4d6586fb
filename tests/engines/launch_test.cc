// Engine modules (resolve_launch): per-version defaults with hand-computed values, refusals with their
// messages, parallel layouts incl. multi-node, flags that change the resolved launch, inert flags, the
// per-request context-length refusal, versions and the module table.
#include <gtest/gtest.h>

#include <algorithm>

#include "engines/version.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace se = servelab::engines;
namespace hw = servelab::hardware;
namespace md = servelab::model;

namespace {

const md::ModelSpec& model(const std::string& id) {
  static std::map<std::string, md::ModelSpec> cache;
  auto it = cache.find(id);
  if (it == cache.end()) it = cache.emplace(id, md::resolve_model(id)).first;
  return it->second;
}

se::LaunchConfig parse_at(const std::string& cmd, const std::string& version = "",
                          const std::map<std::string, std::string>& env = {}) {
  return se::parse_launch_command(se::split_command_line(cmd), env, version);
}

std::variant<se::ResolvedLaunch, se::LaunchFailure> run(const std::string& cmd, const std::string& version,
                                                        const std::string& model_id,
                                                        const std::string& cluster,
                                                        const std::map<std::string, std::string>& env = {}) {
  auto c = parse_at(cmd, version, env);
  return se::resolve_launch(c, model(model_id), hw::parse_cluster(cluster));
}

se::ResolvedLaunch ok(const std::string& cmd, const std::string& version, const std::string& model_id,
                      const std::string& cluster, const std::map<std::string, std::string>& env = {}) {
  auto r = run(cmd, version, model_id, cluster, env);
  if (auto* f = std::get_if<se::LaunchFailure>(&r)) throw std::runtime_error(cmd + ": " + f->message);
  return std::get<se::ResolvedLaunch>(r);
}

se::LaunchFailure refused(const std::string& cmd, const std::string& version, const std::string& model_id,
                          const std::string& cluster, const std::map<std::string, std::string>& env = {}) {
  auto r = run(cmd, version, model_id, cluster, env);
  if (!std::holds_alternative<se::LaunchFailure>(r)) throw std::runtime_error(cmd + ": resolved");
  return std::get<se::LaunchFailure>(r);
}

std::string arg_error(const std::string& cmd, const std::string& version) {
  try {
    parse_at(cmd, version);
  } catch (const se::EngineArgError& e) {
    return e.what();
  }
  return "";
}

bool has_inert(const se::ResolvedLaunch& l, const std::string& flag) {
  for (const auto& f : l.inert_flags)
    if (f.rfind(flag, 0) == 0) return true;
  return false;
}

const char* kQwen8 = "Qwen/Qwen3-8B";
const char* kQwen8Fp8 = "Qwen/Qwen3-8B-FP8";
const char* kGptOss = "openai/gpt-oss-120b";
const char* kGlm52 = "zai-org/GLM-5.2-FP8";
const char* kQwen235Fp8 = "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8";
// BF16: vLLM refuses the FP8 checkpoint's experts TP-sliced 8 ways
// (VllmRules.BlockFp8ExpertsMustKeepWholeBlocksPerRank).
const char* kQwen235 = "Qwen/Qwen3-235B-A22B-Instruct-2507";
const char* kQwen35 = "Qwen/Qwen3.5-9B";

}  // namespace

TEST(Versions, OrderAndFamilies) {
  using V = se::EngineVersion;
  EXPECT_TRUE(V::parse("0.5.3rc0") < V::parse("0.5.3"));
  EXPECT_TRUE(V::parse("0.5.3") < V::parse("0.5.3.post3"));
  EXPECT_TRUE(V::parse("0.5.3.post3") < V::parse("0.5.4.post2"));
  EXPECT_TRUE(V::parse("0.5.9") < V::parse("0.5.14"));
  EXPECT_TRUE(V::parse("1.2.0rc1") < V::parse("1.2.0rc5"));
  EXPECT_TRUE(V::parse("1.2.0rc5") < V::parse("1.2.0"));
  EXPECT_TRUE(V::parse("0.17") == V::parse("0.17.0"));
  EXPECT_THROW(V::parse("latest"), std::invalid_argument);
  EXPECT_THROW(parse_at("vllm serve m", "0.x"), std::invalid_argument);
  const auto& mods = se::engine_modules();
  ASSERT_EQ(mods.size(), 3u);
  EXPECT_EQ(se::engine_module(se::EngineKind::kVllm).releases,
            (std::vector<se::EngineRelease>{{"0.10.2", "vllm-0.10"},
                                            {"0.11.0", "vllm-0.11"},
                                            {"0.13.0", "vllm-0.11"},
                                            {"0.17.1", "vllm-0.17"},
                                            {"0.24.0", "vllm-0.17"}}));
  EXPECT_EQ(se::engine_module(se::EngineKind::kSglang).releases.size(), 8u);
  EXPECT_EQ(se::engine_module(se::EngineKind::kTrtllm).releases,
            (std::vector<se::EngineRelease>{
                {"1.0.0", "trtllm-1.0"}, {"1.2.0rc1", "trtllm-1.2"}, {"1.2.0rc5", "trtllm-1.2"}}));
  EXPECT_EQ(parse_at("vllm serve m").engine_version, "0.13.0");  // the module's default
  EXPECT_EQ(ok("vllm serve m", "0.24.0", kQwen8, "H100").version_family, "vllm-0.17");
  EXPECT_EQ(ok("vllm serve m", "0.10.2", kQwen8, "H100").version_family, "vllm-0.10");
  EXPECT_EQ(ok("python3 -m sglang.launch_server --model-path m", "0.5.14", kQwen8, "H100").version_family,
            "sglang-0.5.9");
  EXPECT_EQ(ok("trtllm-serve m", "1.0.0", kQwen8, "H100").version_family, "trtllm-1.0");
  // A release between modelled ones resolves with the rules of its place, and says so.
  auto between = ok("vllm serve m", "0.12.0", kQwen8, "H100");
  EXPECT_EQ(between.version_family, "vllm-0.11");
  // A release before the modelled one of its own major.minor takes that family, not the previous minor's.
  EXPECT_EQ(ok("vllm serve m", "0.17.0", kQwen8, "H100").version_family, "vllm-0.17");
  EXPECT_EQ(ok("trtllm-serve m", "1.2.0rc0", kQwen8, "H100").version_family, "trtllm-1.2");
  EXPECT_EQ(ok("python3 -m sglang.launch_server --model-path m", "0.5.12", kQwen8, "H100").version_family,
            "sglang-0.5.9");
  EXPECT_EQ(ok("python3 -m sglang.launch_server --model-path m", "0.5.7", kQwen8, "H100").version_family,
            "sglang-0.5.3");
  EXPECT_NE(between.notes[0].find("not a modelled release"), std::string::npos);
}

TEST(Versions, FlagsExistOnlyInTheirReleases) {
  // vLLM: --performance-mode and --language-model-only from 0.17, --async-scheduling from 0.10,
  // --max-cudagraph-capture-size / --all2all-backend from 0.11.1, --attention-backend from 0.13.
  EXPECT_EQ(arg_error("vllm serve m --performance-mode throughput", "0.13.0"),
            "vllm: error: unrecognized arguments: --performance-mode throughput");
  EXPECT_EQ(arg_error("vllm serve m --performance-mode throughput", "0.17.1"), "");
  EXPECT_EQ(arg_error("vllm serve m --language-model-only", "0.11.0"),
            "vllm: error: unrecognized arguments: --language-model-only");
  EXPECT_EQ(arg_error("vllm serve m --async-scheduling", "0.9.1"),
            "vllm: error: unrecognized arguments: --async-scheduling");
  EXPECT_EQ(arg_error("vllm serve m --async-scheduling", "0.10.2"), "");
  EXPECT_EQ(arg_error("vllm serve m --max-cudagraph-capture-size=256", "0.11.0"),
            "vllm: error: unrecognized arguments: --max-cudagraph-capture-size=256");
  EXPECT_EQ(arg_error("vllm serve m --all2all-backend pplx", "0.11.0"),
            "vllm: error: unrecognized arguments: --all2all-backend pplx");
  EXPECT_EQ(arg_error("vllm serve m --attention-backend FLASHINFER", "0.11.0"),
            "vllm: error: unrecognized arguments: --attention-backend FLASHINFER");
  EXPECT_EQ(arg_error("vllm serve m -dcp 2", "0.10.2"), "vllm: error: unrecognized arguments: -dcp 2");
  EXPECT_EQ(arg_error("vllm serve m --performance-mode fast", "0.17.1"),
            "vllm serve: error: argument --performance-mode: invalid choice: 'fast' (choose from 'balanced', "
            "'interactivity', 'throughput')");
  // TensorRT-LLM 1.0 has no --chat_template / --tool_parser (click suggests the close one).
  EXPECT_EQ(arg_error("trtllm-serve m --tool_parser qwen3", "1.0.0")
                .rfind("Error: No such option: --tool_parser", 0),
            0u);
  EXPECT_EQ(arg_error("trtllm-serve m --tool_parser qwen3", "1.2.0rc1"), "");
  // Rendering keeps the release: the old releases get --cuda-graph-sizes and VLLM_ALL2ALL_BACKEND.
  auto old = parse_at("vllm serve m --cuda-graph-sizes 256", "0.11.0");
  EXPECT_EQ(old.cuda_graph_max_bs, 256);
  auto back = se::parse_launch_command(se::to_argv(old), se::to_env(old), "0.11.0");
  EXPECT_EQ(back.cuda_graph_max_bs, 256);
  auto env =
      parse_at("vllm serve m -dp 2 --enable-expert-parallel", "0.11.0", {{"VLLM_ALL2ALL_BACKEND", "pplx"}});
  EXPECT_EQ(env.moe_a2a_backend, "pplx");
  EXPECT_EQ(se::to_env(env).at("VLLM_ALL2ALL_BACKEND"), "pplx");
}

TEST(VllmDefaults, PerVersionAndGpuClass) {
  // 0.10.2: PIECEWISE, [1, 2, 4] + 8..512 step 8 = 67 sizes, async opt-in.
  auto v10 = ok("vllm serve m", "0.10.2", kQwen8, "H100");
  EXPECT_EQ(v10.execution.graphs, se::GraphMode::kPiecewise);
  EXPECT_EQ(v10.execution.graph_sizes.size(), 67u);
  EXPECT_FALSE(v10.execution.async_scheduling);
  // 0.11.0: FULL_AND_PIECEWISE, still the fixed 512 list.
  auto v11 = ok("vllm serve m", "0.11.0", kQwen8, "H100");
  EXPECT_EQ(v11.execution.graphs, se::GraphMode::kFullAndPiecewise);
  EXPECT_EQ(v11.execution.graph_sizes.size(), 67u);
  // 0.13.0: max = min(1024 * 2, 512) = 512, [1, 2, 4] + 8..248/8 (31) + 256..512/16 (17) = 51 sizes.
  auto v13 = ok("vllm serve m", "0.13.0", kQwen8, "H100");
  EXPECT_EQ(v13.scheduler.max_num_seqs, 1024);
  EXPECT_EQ(v13.scheduler.token_budget, 8192);
  EXPECT_EQ(v13.execution.graph_sizes.size(), 51u);
  EXPECT_EQ(v13.execution.graph_max_batch, 512);
  EXPECT_FALSE(v13.execution.async_scheduling);
  EXPECT_EQ(v13.memory.profile_tokens, 8192);
  EXPECT_DOUBLE_EQ(v13.memory.fraction, 0.9);
  EXPECT_EQ(v13.block_size, 16);
  EXPECT_EQ(v13.max_model_len, 40960);
  // --max-num-seqs 64: min(128, 512) = 128 -> [1, 2, 4] + 8..128/8 = 19 sizes.
  EXPECT_EQ(ok("vllm serve m --max-num-seqs 64", "0.13.0", kQwen8, "H100").execution.graph_sizes.size(), 19u);
  // 0.17.1: async scheduling on by default; --no-async-scheduling turns it off.
  EXPECT_TRUE(ok("vllm serve m", "0.17.1", kQwen8, "H100").execution.async_scheduling);
  EXPECT_FALSE(ok("vllm serve m --no-async-scheduling", "0.17.1", kQwen8, "H100").execution.async_scheduling);
  EXPECT_TRUE(ok("vllm serve m --async-scheduling", "0.13.0", kQwen8, "H100").execution.async_scheduling);
  // A100: excluded from the large tier (PR #17885) -> 256 / 2048; H200 is large.
  auto a100 = ok("vllm serve m", "0.13.0", kQwen8, "A100");
  EXPECT_EQ(a100.scheduler.max_num_seqs, 256);
  EXPECT_EQ(a100.scheduler.token_budget, 2048);
  EXPECT_EQ(a100.execution.graph_max_batch, 512);
  EXPECT_EQ(a100.execution.attention, se::AttentionKernel::kFlashAttn2);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8, "A100-40GB").scheduler.max_num_seqs, 256);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8, "H200").scheduler.max_num_seqs, 1024);
  // --performance-mode: throughput doubles the defaults, interactivity adds every size 1..32
  // (51 - 7 sizes <= 32 + 32 = 76).
  auto thr = ok("vllm serve m --performance-mode throughput", "0.17.1", kQwen8, "H100");
  EXPECT_EQ(thr.scheduler.max_num_seqs, 2048);
  EXPECT_EQ(thr.scheduler.token_budget, 16384);
  EXPECT_EQ(ok("vllm serve m --performance-mode throughput", "0.17.1", kQwen8, "A100").scheduler.token_budget,
            4096);
  auto inter = ok("vllm serve m --performance-mode interactivity", "0.17.1", kQwen8, "H100");
  EXPECT_EQ(inter.execution.graph_sizes.size(), 76u);
  EXPECT_EQ(inter.scheduler.max_num_seqs, 1024);
  // --max-cudagraph-capture-size 256: [1, 2, 4] + 8..248 + 256 = 35 sizes; --enforce-eager: none.
  auto cap = ok("vllm serve m --max-cudagraph-capture-size 256", "0.17.1", kQwen8, "H100");
  EXPECT_EQ(cap.execution.graph_max_batch, 256);
  EXPECT_EQ(cap.execution.graph_sizes.size(), 35u);
  EXPECT_EQ(ok("vllm serve m --enforce-eager", "0.13.0", kQwen8, "H100").execution.graphs,
            se::GraphMode::kNone);
  EXPECT_EQ(
      ok(R"(vllm serve m -O '{"cudagraph_mode":"PIECEWISE"}')", "0.13.0", kQwen8, "H100").execution.graphs,
      se::GraphMode::kPiecewise);
  // --language-model-only: the vision encoder of a multimodal checkpoint is not loaded.
  EXPECT_TRUE(ok("vllm serve m", "0.17.1", kQwen35, "H100").memory.mm_encoder);
  EXPECT_FALSE(ok("vllm serve m --language-model-only", "0.17.1", kQwen35, "H100").memory.mm_encoder);
  EXPECT_FALSE(ok("vllm serve m", "0.17.1", kQwen8, "H100").memory.mm_encoder);
  // The encoder's weights are split over the TP ranks unless --mm-encoder-tp-mode data.
  EXPECT_EQ(ok("vllm serve m -tp 4", "0.17.1", kQwen35, "4xH100").memory.mm_encoder_shards, 4);
  EXPECT_EQ(ok("vllm serve m -tp 4 --mm-encoder-tp-mode data", "0.17.1", kQwen35, "4xH100")
                .memory.mm_encoder_shards,
            1);
}

TEST(VllmDefaults, KernelsPerGeneration) {
  // FP8 block: DeepGEMM on Hopper, FP8-Marlin W8A16 on A100; MXFP4: triton_kernels / Marlin / FlashInfer.
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8Fp8, "H100").execution.gemm,
            se::GemmKernel::kFp8BlockDeepGemm);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8Fp8, "H100", {{"VLLM_USE_DEEP_GEMM", "0"}}).execution.gemm,
            se::GemmKernel::kFp8BlockCutlass);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8Fp8, "A100").execution.gemm, se::GemmKernel::kMarlinW8A16);
  // TritonOrDeepGemmExperts: DeepGEMM experts from M = 128 tokens, fused_moe Triton below.
  const auto dg = ok("vllm serve m", "0.13.0", kQwen8Fp8, "H100").execution;
  EXPECT_EQ(dg.moe, se::MoeKernel::kDeepGemmGrouped);
  EXPECT_EQ(dg.moe_small, se::MoeKernel::kTritonFused);
  EXPECT_EQ(dg.moe_small_below, 128);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8Fp8, "H100", {{"VLLM_USE_DEEP_GEMM", "0"}})
                .execution.moe_small_below,
            0);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "H100").execution.moe, se::MoeKernel::kTritonKernels);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "A100").execution.moe, se::MoeKernel::kMarlinMoe);
  auto b200 = ok("vllm serve m", "0.13.0", kGptOss, "B200");
  EXPECT_EQ(b200.execution.moe, se::MoeKernel::kFlashInferTrtllm);
  // TensorRT-LLM on B200: moe_config.backend names the MoE; unset, TRTLLM-gen for MXFP4 experts.
  auto trt_moe = [&](const std::string& backend) {
    auto c = parse_at("trtllm-serve m", "1.2.0rc5");
    c.moe_runner_backend = backend;
    return std::get<se::ResolvedLaunch>(se::resolve_launch(c, model(kGptOss), hw::parse_cluster("B200")))
        .execution.moe;
  };
  EXPECT_EQ(trt_moe(""), se::MoeKernel::kFlashInferTrtllm);
  EXPECT_EQ(trt_moe("TRTLLM"), se::MoeKernel::kFlashInferTrtllm);
  EXPECT_EQ(trt_moe("CUTLASS"), se::MoeKernel::kCutlassGrouped);  // was TRTLLM-gen whatever it said
  EXPECT_EQ(trt_moe("TRITON"), se::MoeKernel::kTritonKernels);
  EXPECT_EQ(b200.execution.attention, se::AttentionKernel::kTrtllmGen);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "A100").execution.attention, se::AttentionKernel::kTriton);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "H100").execution.attention,
            se::AttentionKernel::kFlashAttn3);
  EXPECT_EQ(ok("vllm serve m --attention-backend FLASHINFER", "0.13.0", kQwen8, "H100").execution.attention,
            se::AttentionKernel::kFlashInfer);
  EXPECT_EQ(ok("vllm serve m", "0.11.0", kQwen8, "H100", {{"VLLM_ATTENTION_BACKEND", "TRITON_ATTN"}})
                .execution.attention,
            se::AttentionKernel::kTriton);
  // gpt-oss on vLLM 0.11: the capture maximum rises to 992 (81 sizes), capped by the token budget.
  EXPECT_EQ(ok("vllm serve m", "0.11.0", kGptOss, "H100").execution.graph_max_batch, 992);
  EXPECT_EQ(ok("vllm serve m", "0.10.2", kGptOss, "H100").execution.graph_max_batch, 512);
}

// vLLM renders gpt-oss chat requests with openai_harmony (serving_chat.py use_harmony), every other model
// with its Jinja chat template; SGLang renders gpt-oss with the template too.
// vLLM with --reasoning-parser: the streamed chat reply's API-server stage (its time per chunk is sim's
// fitted Calibration::api_stream_request_us); none without the flag.
TEST(VllmDefaults, ReasoningParserSetsTheApiStreamStage) {
  EXPECT_TRUE(
      ok("vllm serve m --reasoning-parser=qwen3", "0.17.1", kQwen8, "H100").execution.api_stream_stage);
  EXPECT_FALSE(ok("vllm serve m", "0.17.1", kQwen8, "H100").execution.api_stream_stage);
}

TEST(VllmDefaults, HarmonyChatForGptOssOnly) {
  EXPECT_TRUE(ok("vllm serve m", "0.10.2", kGptOss, "H100").execution.harmony_chat);
  EXPECT_TRUE(ok("vllm serve m", "0.11.0", "openai/gpt-oss-20b", "A100").execution.harmony_chat);
  EXPECT_FALSE(ok("vllm serve m", "0.11.0", kQwen8, "H100").execution.harmony_chat);
  EXPECT_FALSE(
      ok("python3 -m sglang.launch_server --model-path m", "0.5.3", kGptOss, "H100").execution.harmony_chat);
}

TEST(VllmRefusals, EngineMessages) {
  // gpt-oss (attention sinks) on H100 with the backends the corpus tried (vLLM 0.10.2).
  auto fi = refused("vllm serve m", "0.10.2", kGptOss, "H100", {{"VLLM_ATTENTION_BACKEND", "FLASHINFER"}});
  EXPECT_EQ(
      fi.message,
      "RuntimeError: Worker failed with error 'FlashInfer backend currently does not support attention "
      "sinks, "
      "please use trtllm on blackwell or flash attention on earlier GPUs.', please check the stack trace "
      "above for the root cause");
  EXPECT_TRUE(fi.verbatim);
  auto xf = refused("vllm serve m", "0.10.2", kGptOss, "H100", {{"VLLM_ATTENTION_BACKEND", "XFORMERS"}});
  EXPECT_EQ(xf.message, "TypeError: XFormersImpl.__init__() got an unexpected keyword argument 'sinks'");
  EXPECT_EQ(ok("vllm serve m", "0.10.2", kGptOss, "B200", {{"VLLM_ATTENTION_BACKEND", "FLASHINFER"}})
                .execution.attention,
            se::AttentionKernel::kTrtllmGen);
  // Qwen3-235B with XFORMERS crashed without a recorded cause: it resolves (left unexplained).
  EXPECT_EQ(
      ok("vllm serve m -tp 4", "0.11.0", kQwen235Fp8, "8xH100", {{"VLLM_ATTENTION_BACKEND", "XFORMERS"}})
          .execution.attention,
      se::AttentionKernel::kXformers);
  // DeepSeek-V3.2 on A100: no sparse MLA backend.
  EXPECT_EQ(refused("vllm serve m -tp 8", "0.13.0", "DeepSeek-V3.2", "8xA100").rule,
            "vllm.attention_backend.none_valid");
  auto len = refused("vllm serve m --max-model-len 65536", "0.13.0", kQwen8, "H100");
  EXPECT_EQ(len.message,
            "ValueError: User-specified max_model_len (65536) is greater than the derived max_model_len "
            "(max_position_embeddings=40960)");
  EXPECT_EQ(refused("vllm serve m -tp 16", "0.13.0", kQwen8, "8xH100").rule, "parallel.gpu_count");
  EXPECT_EQ(refused("vllm serve m", "0.13.0", kQwen8, "Ascend-910B").rule, "hardware.unmodelled");
  EXPECT_EQ(refused(R"(vllm serve m --speculative-config '{"method":"mtp","num_speculative_tokens":1}')",
                    "0.13.0", kQwen8, "H100")
                .rule,
            "vllm.speculative.no_mtp_head");
}

TEST(SglangDefaults, MemoryTiersAndFraction) {
  const char* cmd = "python3 -m sglang.launch_server --model-path m";
  // H100 (81559 MiB): 8192 / 256; reserved 512 + 12288 + 512 + 128 = 13440 -> 0.835 (engine-versions.md).
  auto h100 = ok(cmd, "0.5.3.post3", kQwen8, "H100");
  EXPECT_EQ(h100.scheduler.token_budget, 8192);
  EXPECT_EQ(h100.execution.graph_max_batch, 256);
  EXPECT_DOUBLE_EQ(h100.memory.fraction, 0.835);
  EXPECT_EQ(h100.execution.attention, se::AttentionKernel::kFlashAttn3);
  EXPECT_EQ(h100.block_size, 1);
  EXPECT_TRUE(h100.execution.async_scheduling);
  EXPECT_EQ(h100.scheduler.max_prefill_tokens, 16384);
  EXPECT_TRUE(h100.scheduler.max_num_seqs_from_pool);
  EXPECT_FALSE(h100.scheduler.mixed_prefill_decode);
  EXPECT_EQ(h100.state_dtype, md::DType::kFp32);
  // A100-80GB (81920 MiB): same tier, (81920 - 13440) / 81920 = 0.836; A100-40GB: 4096 / 32, reserved
  // 512 + 6144 + 64 + 128 = 6848, no floor -> 0.833; H200: 0.907; B200 (>= 160 GiB): 16384 / 512,
  // reserved 26240 -> 0.857.
  auto a100 = ok(cmd, "0.5.5.post1", kQwen8, "A100");
  EXPECT_DOUBLE_EQ(a100.memory.fraction, 0.836);
  EXPECT_EQ(a100.execution.attention, se::AttentionKernel::kFlashInfer);
  auto a40 = ok(cmd, "0.5.5.post1", kQwen8, "A100-40GB");
  EXPECT_EQ(a40.scheduler.token_budget, 4096);
  EXPECT_EQ(a40.execution.graph_max_batch, 32);
  EXPECT_DOUBLE_EQ(a40.memory.fraction, 0.833);
  EXPECT_DOUBLE_EQ(ok(cmd, "0.5.9", kQwen8, "H200").memory.fraction, 0.907);
  auto b200 = ok(cmd, "0.5.9", kQwen8, "B200");
  EXPECT_EQ(b200.scheduler.token_budget, 16384);
  EXPECT_EQ(b200.execution.graph_max_batch, 512);
  EXPECT_DOUBLE_EQ(b200.memory.fraction, 0.857);
  EXPECT_EQ(b200.execution.attention, se::AttentionKernel::kTrtllmGen);
  // gpt-oss: triton attention on A100, triton_kernels MXFP4 MoE, SWA pool at ratio 0.8.
  auto oss = ok(cmd, "0.5.4.post2", kGptOss, "A100");
  EXPECT_EQ(oss.execution.attention, se::AttentionKernel::kTriton);
  EXPECT_EQ(oss.execution.moe, se::MoeKernel::kTritonKernels);
  EXPECT_TRUE(oss.memory.kv_window_only);
  EXPECT_DOUBLE_EQ(oss.memory.swa_full_tokens_ratio, 0.8);
  EXPECT_TRUE(oss.memory.swa_split_pool);
  // Explicit values win; --max-running-requests is global under DP-attention.
  auto dpa =
      ok("python3 -m sglang.launch_server --model-path m --tp 8 --dp 8 --enable-dp-attention "
         "--max-running-requests 256 --mem-fraction-static 0.85",
         "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(dpa.scheduler.max_num_seqs, 32);
  EXPECT_DOUBLE_EQ(dpa.memory.fraction, 0.85);
  EXPECT_EQ(dpa.scheduler.token_budget, 1024);  // 8192 // 8
  EXPECT_DOUBLE_EQ(dpa.scheduler.conservativeness, 0.3);
  EXPECT_EQ(dpa.block_size, 64);
  EXPECT_EQ(dpa.execution.attention, se::AttentionKernel::kFlashMlaSparse);
  EXPECT_EQ(dpa.execution.decode_attention, se::AttentionKernel::kFlashAttn3);
  EXPECT_EQ(dpa.max_model_len, 1048576);
}

TEST(SglangDefaults, SpeculativeAndTorchCompile) {
  const char* base = "python3 -m sglang.launch_server --model-path m ";
  auto e3 = ok(std::string(base) +
                   "--speculative-algorithm EAGLE3 --speculative-draft-model-path d/e3 "
                   "--speculative-num-steps 4 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16",
               "0.5.3.post3", kQwen8Fp8, "H100");
  ASSERT_TRUE(e3.speculative);
  EXPECT_EQ(e3.speculative->method, se::SpeculativePolicy::Method::kEagle3);
  EXPECT_EQ(e3.speculative->num_draft_tokens, 16);
  EXPECT_EQ(e3.speculative->num_speculative_tokens, 15);
  EXPECT_EQ(e3.scheduler.max_num_seqs, 48);
  EXPECT_FALSE(e3.execution.async_scheduling);  // no overlap scheduler with speculative decoding
  // + 2 GiB for EAGLE: (81559 - 15488) / 81559 = 0.810.
  EXPECT_DOUBLE_EQ(e3.memory.fraction, 0.810);
  // topk 1 forces draft tokens = steps + 1.
  auto t1 = ok(std::string(base) +
                   "--speculative-algorithm EAGLE3 --speculative-draft-model-path d/e3 "
                   "--speculative-num-steps 2 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
               "0.5.3.post3", kQwen8Fp8, "H100");
  EXPECT_EQ(t1.speculative->num_draft_tokens, 3);
  EXPECT_EQ(
      refused(std::string(base) + "--speculative-algorithm EAGLE3", "0.5.3.post3", kQwen8Fp8, "H100").rule,
      "sglang.speculative.draft_model");
  // DeepSeek-style MTP (NEXTN) defaults 3 / 1 / 4.
  auto nextn = ok(std::string(base) + "--tp 8 --speculative-algorithm NEXTN", "0.5.6.post2", "DeepSeek-V3.2",
                  "8xH200");
  EXPECT_EQ(nextn.speculative->method, se::SpeculativePolicy::Method::kMtp);
  EXPECT_EQ(nextn.speculative->num_steps, 3);
  EXPECT_EQ(nextn.speculative->num_draft_tokens, 4);
  EXPECT_TRUE(nextn.speculative->acceptance_verified);
  EXPECT_DOUBLE_EQ(nextn.speculative->acceptance, 0.85);
  auto tc = ok(std::string(base) + "--enable-torch-compile --torch-compile-max-bs 16", "0.5.3.post3", kQwen8,
               "H100");
  EXPECT_TRUE(tc.execution.torch_compile);
  EXPECT_EQ(tc.execution.torch_compile_max_batch, 16);
  EXPECT_FALSE(ok(base, "0.5.3.post3", kQwen8, "H100").execution.torch_compile);
  EXPECT_EQ(ok(std::string(base) + "--cuda-graph-max-bs 64", "0.5.3.post3", kQwen8, "H100")
                .execution.graph_max_batch,
            64);
  EXPECT_EQ(ok(std::string(base) + "--disable-cuda-graph", "0.5.3.post3", kQwen8, "H100").execution.graphs,
            se::GraphMode::kNone);
  EXPECT_FALSE(ok(std::string(base) + "--disable-overlap-schedule", "0.5.3.post3", kQwen8, "H100")
                   .execution.async_scheduling);
  EXPECT_TRUE(ok(std::string(base) + "--enable-mixed-chunk", "0.5.3.post3", kQwen8, "H100")
                  .scheduler.mixed_prefill_decode);
  EXPECT_EQ(refused(std::string(base) + "--attention-backend fa3", "0.5.5.post1", kQwen8, "A100").rule,
            "sglang.backend.compute_capability");
}

TEST(Layouts, DeepepModesAndExpertParallel) {
  const std::string base =
      "python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention ";
  auto plain = ok(base, "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(plain.layout.dp_ranks, 8);
  EXPECT_EQ(plain.layout.attn_tp, 1);
  EXPECT_EQ(plain.layout.dense_tp, 8);
  EXPECT_TRUE(plain.layout.moe_gathered);
  EXPECT_EQ(plain.layout.moe_ep, 1);
  EXPECT_EQ(plain.layout.moe_tp, 8);
  EXPECT_EQ(plain.layout.a2a, se::MoeA2a::kAllgatherReduceScatter);
  // --moe-a2a-backend deepep: ep = tp; auto = normal for prefill, low-latency for decode, graphs kept.
  auto autom = ok(base + "--moe-a2a-backend deepep", "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(autom.layout.moe_ep, 8);
  EXPECT_EQ(autom.layout.moe_tp, 1);
  EXPECT_EQ(autom.layout.a2a, se::MoeA2a::kDeepepNormal);
  EXPECT_EQ(autom.layout.a2a_decode, se::MoeA2a::kDeepepLowLatency);
  EXPECT_EQ(autom.execution.graphs, se::GraphMode::kDecodeOnly);
  EXPECT_EQ(autom.execution.moe, se::MoeKernel::kDeepGemmGrouped);
  // normal: no CUDA graphs at all; low_latency: low-latency kernels for both, graphs kept.
  auto normal = ok(base + "--moe-a2a-backend deepep --deepep-mode normal", "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(normal.layout.a2a_decode, se::MoeA2a::kDeepepNormal);
  EXPECT_EQ(normal.execution.graphs, se::GraphMode::kNone);
  auto ll = ok(base + "--moe-a2a-backend deepep --deepep-mode low_latency", "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(ll.layout.a2a, se::MoeA2a::kDeepepLowLatency);
  EXPECT_EQ(ll.execution.graphs, se::GraphMode::kDecodeOnly);
  // --deepep-mode without the DeepEP backend changes nothing and is listed inert.
  auto inert = ok(base + "--deepep-mode normal", "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(inert.execution.graphs, se::GraphMode::kDecodeOnly);
  EXPECT_TRUE(has_inert(inert, "--deepep-mode"));
  // --scheduler-recv-interval: the scheduler's receive interval (SchedulerRecvSkipper), not inert.
  EXPECT_EQ(inert.scheduler.recv_interval, 1);
  auto recv = ok(base + "--scheduler-recv-interval 30", "0.5.14", kGlm52, "8xH200");
  EXPECT_EQ(recv.scheduler.recv_interval, 30);
  EXPECT_FALSE(has_inert(recv, "--scheduler-recv-interval"));
  // --ep-size: experts spread whole over 4 GPUs of the TP-4 group.
  auto ep = ok("python3 -m sglang.launch_server --model-path m --tp-size 4 --ep-size 4", "0.5.4.post2",
               "zai-org/GLM-4.5-Air", "4xH100");
  EXPECT_EQ(ep.layout.moe_ep, 4);
  EXPECT_EQ(ep.layout.moe_tp, 1);
  EXPECT_EQ(ep.layout.a2a, se::MoeA2a::kNone);
  EXPECT_EQ(ok("python3 -m sglang.launch_server --model-path m --tp-size 4", "0.5.4.post2",
               "zai-org/GLM-4.5-Air", "4xH100")
                .layout.moe_tp,
            4);
  auto dense =
      ok("python3 -m sglang.launch_server --model-path m --tp 4 --dp 4 --enable-dp-attention "
         "--moe-dense-tp-size 1",
         "0.5.14", kGlm52, "4xH200");
  EXPECT_EQ(dense.layout.dense_tp, 1);
  // vLLM DP + EP: experts whole over tp * dp GPUs; tokens all-gathered; DeepEP high-throughput drops
  // CUDA graphs, low-latency keeps them.
  const std::string v = "vllm serve m -tp 4 -dp 2 --enable-expert-parallel";
  auto agrs = ok(v, "0.13.0", kQwen235Fp8, "8xH100");
  EXPECT_EQ(agrs.layout.moe_ep, 8);
  EXPECT_EQ(agrs.layout.ep, 8);
  EXPECT_EQ(agrs.layout.a2a, se::MoeA2a::kAllgatherReduceScatter);
  EXPECT_EQ(agrs.routing, se::Routing::kLeastLoaded);
  auto ht = ok(v + " --all2all-backend deepep_high_throughput", "0.13.0", kQwen235Fp8, "8xH100");
  EXPECT_EQ(ht.layout.a2a, se::MoeA2a::kDeepepNormal);
  EXPECT_EQ(ht.execution.graphs, se::GraphMode::kNone);
  auto vll = ok(v + " --all2all-backend deepep_low_latency", "0.13.0", kQwen235Fp8, "8xH100");
  EXPECT_EQ(vll.layout.a2a, se::MoeA2a::kDeepepLowLatency);
  EXPECT_EQ(vll.execution.graphs, se::GraphMode::kFullAndPiecewise);
  EXPECT_EQ(ok(v, "0.11.0", kQwen235Fp8, "8xH100", {{"VLLM_ALL2ALL_BACKEND", "pplx"}}).layout.a2a,
            se::MoeA2a::kPplx);
  auto tp_only = ok("vllm serve m -tp 4 -dp 2", "0.13.0", kQwen235, "8xH100");
  EXPECT_EQ(tp_only.layout.moe_tp, 8);
  EXPECT_EQ(tp_only.layout.moe_ep, 1);
  // TensorRT-LLM: MoE TP = tp / ep; attention DP from the YAML; tp % ep refused.
  auto trt = ok("trtllm-serve m --tp_size 4 --ep_size 2", "1.2.0rc5", kQwen235Fp8, "4xH100");
  EXPECT_EQ(trt.layout.moe_ep, 2);
  EXPECT_EQ(trt.layout.moe_tp, 2);
  auto adp_cfg = se::apply_config_yaml(parse_at("trtllm-serve m --tp_size 4 --ep_size 4", "1.2.0rc5"),
                                       "enable_attention_dp: true\n");
  auto adp = std::get<se::ResolvedLaunch>(
      se::resolve_launch(adp_cfg, model(kQwen235Fp8), hw::parse_cluster("4xH100")));
  EXPECT_EQ(adp.layout.dp_ranks, 4);
  EXPECT_EQ(adp.layout.attn_tp, 1);
  EXPECT_TRUE(adp.layout.moe_gathered);
  EXPECT_FALSE(adp.scheduler.dp_balance);  // AttentionDpConfig.enable_balance is off by default
  // attention_dp_config.enable_balance: contexts wait for every rank (timeout 50, batching 10 by default).
  auto balanced_cfg = se::apply_config_yaml(
      parse_at("trtllm-serve m --tp_size 4 --ep_size 4", "1.2.0rc5"),
      "enable_attention_dp: true\nattention_dp_config:\n  enable_balance: true\n  batching_wait_iters: 5\n");
  auto balanced = std::get<se::ResolvedLaunch>(
      se::resolve_launch(balanced_cfg, model(kQwen235Fp8), hw::parse_cluster("4xH100")));
  EXPECT_TRUE(balanced.scheduler.dp_balance);
  EXPECT_EQ(balanced.scheduler.dp_balance_timeout_steps, 50);
  EXPECT_EQ(balanced.scheduler.dp_balance_batching_steps, 5);
  EXPECT_TRUE(balanced.inert_flags.empty()) << balanced.inert_flags.front();
  EXPECT_EQ(refused("trtllm-serve m --tp_size 4 --ep_size 3", "1.2.0rc5", kQwen235Fp8, "4xH100").rule,
            "trtllm.ep.divides_tp");
}

TEST(Layouts, MultiNode) {
  // 16 x H100 = two nodes of eight: TP 16 crosses nodes; PP 2 x TP 8 keeps TP inside a node and puts
  // the two stages on different nodes.
  auto tp16 = ok("vllm serve m -tp 16", "0.13.0", kQwen235, "16xH100");
  EXPECT_EQ(tp16.layout.gpus, 16);
  EXPECT_EQ(tp16.layout.nodes, 2);
  EXPECT_TRUE(tp16.layout.tp_crosses_nodes);
  auto pp2 = ok("vllm serve m -tp 8 -pp 2", "0.13.0", kQwen235, "16xH100");
  EXPECT_EQ(pp2.layout.nodes, 2);
  EXPECT_FALSE(pp2.layout.tp_crosses_nodes);
  EXPECT_TRUE(pp2.layout.pp_crosses_nodes);
  EXPECT_EQ(pp2.scheduler.pp_micro_batches, 2);
  auto one = ok("vllm serve m -tp 8", "0.13.0", kQwen235, "2x8xH100");
  EXPECT_EQ(one.layout.nodes, 1);
  EXPECT_FALSE(one.layout.tp_crosses_nodes);
  auto pp4 = ok("vllm serve m -tp 2 -pp 4", "0.13.0", kQwen235Fp8, "8xH100");
  EXPECT_FALSE(pp4.layout.pp_crosses_nodes);
  auto dp2 = ok("vllm serve m -tp 8 -dp 2 --enable-expert-parallel", "0.13.0", kQwen235Fp8, "16xH100");
  EXPECT_EQ(dp2.layout.nodes, 2);
  EXPECT_FALSE(dp2.layout.tp_crosses_nodes);
  EXPECT_EQ(dp2.layout.moe_ep, 16);
  auto sg = ok("python3 -m sglang.launch_server --model-path m --tp 16 --dp 16 --enable-dp-attention",
               "0.5.14", kGlm52, "2x8xH200");
  EXPECT_EQ(sg.layout.gpus, 16);
  EXPECT_TRUE(sg.layout.tp_crosses_nodes);
  EXPECT_EQ(sg.layout.attn_tp, 1);
  // SGLang's overlap scheduler is off with PP [recalled].
  EXPECT_FALSE(ok("python3 -m sglang.launch_server --model-path m --pp-size 4", "0.5.4.post2",
                  "zai-org/GLM-4.5-Air", "4xH100")
                   .execution.async_scheduling);
}

TEST(TrtllmDefaults, PyTorchBackend) {
  auto t = ok("trtllm-serve m", "1.0.0", kQwen8, "H100");
  EXPECT_EQ(t.scheduler.max_num_seqs, 2048);
  EXPECT_EQ(t.scheduler.token_budget, 8192);
  EXPECT_FALSE(t.scheduler.chunked_prefill);
  EXPECT_EQ(t.execution.graphs, se::GraphMode::kDecodeOnly);
  EXPECT_EQ(t.execution.graph_max_batch, 128);
  EXPECT_FALSE(t.execution.graph_padding);
  EXPECT_TRUE(t.execution.async_scheduling);
  EXPECT_DOUBLE_EQ(t.memory.fraction, 0.9);
  EXPECT_EQ(t.memory.basis, se::MemoryPolicy::Basis::kOfFree);
  EXPECT_EQ(t.scheduler.kind, se::SchedulerPolicy::Kind::kTrtllmInflight);
  // Padding on: [1, 2, 4] + 8..128 step 8 = 19 sizes.
  auto padded = se::apply_config_yaml(parse_at("trtllm-serve m", "1.2.0rc5"),
                                      "cuda_graph_config:\n  enable_padding: true\n");
  auto p = std::get<se::ResolvedLaunch>(se::resolve_launch(padded, model(kQwen8), hw::parse_cluster("H100")));
  EXPECT_TRUE(p.execution.graph_padding);
  EXPECT_EQ(p.execution.graph_sizes.size(), 19u);
  auto off =
      se::apply_config_yaml(parse_at("trtllm-serve m", "1.2.0rc5"), "disable_overlap_scheduler: true\n");
  EXPECT_FALSE(std::get<se::ResolvedLaunch>(se::resolve_launch(off, model(kQwen8), hw::parse_cluster("H100")))
                   .execution.async_scheduling);
  EXPECT_EQ(ok("trtllm-serve m", "1.2.0rc5", kGptOss, "H100").execution.moe, se::MoeKernel::kCutlassGrouped);
}

TEST(TrtllmRefusals, CorpusMessages) {
  EXPECT_EQ(refused("trtllm-serve m --max_seq_len 32768", "1.2.0rc1", kGptOss, "A100").message,
            "NotImplementedError: WFP4A16 MoE is unsupported on SM80.");
  EXPECT_EQ(refused("trtllm-serve m", "1.2.0rc1", "Qwen/Qwen3-14B-FP8", "A100").message,
            "RuntimeError: Unsupported SM version for FP8 block scaling GEMM");
  EXPECT_EQ(refused("trtllm-serve m", "1.2.0rc1", "Qwen/Qwen3-14B-AWQ", "A100").message,
            "KeyError: 'weight'");
  EXPECT_EQ(refused("trtllm-serve m --tp_size 4", "1.2.0rc1", "zai-org/GLM-4.5-Air", "4xH100").rule,
            "trtllm.model.glm4_moe");
  EXPECT_EQ(refused("trtllm-serve m --tp_size 8", "1.0.0", "zai-org/GLM-4.6", "8xH200").rule,
            "trtllm.model.glm4_moe");
  // Where the corpus has no record the launch resolves: GLM on 1.2.0rc5, FP8 block and MXFP4 on Hopper,
  // Qwen3 AWQ after the release that failed to load it.
  EXPECT_NO_THROW(ok("trtllm-serve m --tp_size 4", "1.2.0rc5", "zai-org/GLM-4.5-Air", "4xH100"));
  EXPECT_NO_THROW(ok("trtllm-serve m", "1.2.0rc5", "Qwen/Qwen3-14B-AWQ", "A100"));
  // FP8 block linears: TensorRT-LLM's own fp8_block_scaling_gemm on Hopper whatever TRTLLM_DG_ENABLED says,
  // DeepGEMM on Blackwell unless TRTLLM_DG_ENABLED=0.
  EXPECT_EQ(ok("trtllm-serve m", "1.2.0rc1", "Qwen/Qwen3-14B-FP8", "H100").execution.gemm,
            se::GemmKernel::kFp8BlockTrtllm);
  // trtllm-serve's API server runs each request to its hand-off (FIFO); vLLM's interleaves them.
  EXPECT_TRUE(ok("trtllm-serve m", "1.2.0rc1", "Qwen/Qwen3-14B-FP8", "H100").execution.api_fifo);
  EXPECT_FALSE(ok("vllm serve m", "0.13.0", kQwen8Fp8, "H100").execution.api_fifo);
  EXPECT_EQ(ok("trtllm-serve m", "1.2.0rc5", "Qwen/Qwen3-14B-FP8", "B200").execution.gemm,
            se::GemmKernel::kFp8BlockDeepGemm);
  EXPECT_EQ(ok("trtllm-serve m", "1.2.0rc5", "Qwen/Qwen3-14B-FP8", "B200", {{"TRTLLM_DG_ENABLED", "0"}})
                .execution.gemm,
            se::GemmKernel::kFp8BlockTrtllm);
  EXPECT_NO_THROW(ok("trtllm-serve m", "1.2.0rc1", kGptOss, "H100"));
}

// Attention heads are split over the attention TP group: a TP size that does not divide them is refused.
TEST(Layouts, TensorParallelSizeMustDivideTheHeads) {
  const auto v = refused("vllm serve m -tp 3", "0.11.0", "Qwen/Qwen3-32B", "4xH100");
  EXPECT_EQ(
      v.message,
      "ValueError: Total number of attention heads (64) must be divisible by tensor parallel size (3).");
  EXPECT_TRUE(v.verbatim);
  EXPECT_EQ(refused("python3 -m sglang.launch_server --model-path m --tp-size 3", "0.5.9", "Qwen/Qwen3-32B",
                    "4xH100")
                .rule,
            "parallel.heads_divisible");
  EXPECT_EQ(refused("trtllm-serve m --tp_size 3", "1.2.0rc5", "Qwen/Qwen3-32B", "4xH100").rule,
            "parallel.heads_divisible");
  EXPECT_NO_THROW(ok("vllm serve m -tp 4", "0.11.0", "Qwen/Qwen3-32B", "4xH100"));
  // DP-attention: each DP rank holds all heads (attention TP 1), so tp 8 / dp 8 is fine for any head count.
  EXPECT_NO_THROW(ok("python3 -m sglang.launch_server --model-path m --tp 8 --dp 8 --enable-dp-attention",
                     "0.5.9", "zai-org/GLM-4.5-Air", "8xH100"));
}

// Kernel paths the twin has no figure for are flagged (sim run warns, the fit leaves them out), only there.
TEST(Unmodelled, KernelPathsWithoutAFigure) {
  // TensorRT-LLM's default CUTLASS WFP4A16 MoE for MXFP4 on Hopper; the TRITON backend is modelled.
  auto trt = ok("trtllm-serve m --max_seq_len 32768", "1.0.0", kGptOss, "H100");
  ASSERT_EQ(trt.unmodelled.size(), 1u);
  EXPECT_NE(trt.unmodelled[0].find("CUTLASS WFP4A16"), std::string::npos);
  auto triton =
      se::apply_config_yaml(parse_at("trtllm-serve m", "1.0.0"), "moe_config:\n  backend: TRITON\n");
  auto t =
      std::get<se::ResolvedLaunch>(se::resolve_launch(triton, model(kGptOss), hw::parse_cluster("H100")));
  EXPECT_EQ(t.execution.moe, se::MoeKernel::kTritonKernels);
  EXPECT_TRUE(t.unmodelled.empty());
  // SGLang's triton_kernels MXFP4 MoE on Ampere; the same launch on Hopper is modelled.
  const std::string sg = "python3 -m sglang.launch_server --model-path m";
  EXPECT_EQ(ok(sg, "0.5.3", kGptOss, "A100").unmodelled.size(), 1u);
  EXPECT_TRUE(ok(sg, "0.5.3", kGptOss, "H100").unmodelled.empty());
  // vLLM's Marlin W4A16 MXFP4 on Ampere has a figure (Marlin's), as do dense BF16 launches.
  EXPECT_TRUE(ok("vllm serve m", "0.11.0", kGptOss, "A100").unmodelled.empty());
  EXPECT_TRUE(ok("trtllm-serve m", "1.0.0", kQwen8, "H100").unmodelled.empty());
  // TensorRT-LLM's DSA path before Blackwell (the seed study's TRT-LLM runs); SGLang's is modelled.
  auto dsa = ok("trtllm-serve m --tp_size 8", "1.2.0rc5", "DeepSeek-V3.2", "8xH200");
  ASSERT_EQ(dsa.unmodelled.size(), 1u);
  EXPECT_NE(dsa.unmodelled[0].find("DeepSeek Sparse Attention"), std::string::npos);
  EXPECT_TRUE(
      ok("python3 -m sglang.launch_server --model-path m --tp 8", "0.5.6.post2", "DeepSeek-V3.2", "8xH200")
          .unmodelled.empty());
}

TEST(InertFlags, ListedAndNotModelled) {
  auto v = ok("vllm serve m --reasoning-parser qwen3 --disable-log-stats -tp 1", "0.17.1", kQwen8, "H100");
  EXPECT_FALSE(has_inert(v, "--reasoning-parser"));  // the API server's streamed-reply stage
  EXPECT_TRUE(has_inert(v, "--disable-log-stats"));
  EXPECT_FALSE(has_inert(v, "--tensor-parallel-size"));
  EXPECT_TRUE(has_inert(ok("vllm serve m --enable-expert-parallel", "0.13.0", kQwen8, "H100"),
                        "--enable-expert-parallel (no MoE)"));
  auto s = ok("python3 -m sglang.launch_server --model-path m --tool-call-parser glm --enable-torch-compile",
              "0.5.4.post2", "zai-org/GLM-4.5-Air", "4xH100");
  EXPECT_TRUE(has_inert(s, "--tool-call-parser"));
  EXPECT_FALSE(has_inert(s, "--enable-torch-compile"));
  EXPECT_FALSE(has_inert(s, "--model-path"));
  auto t = ok("trtllm-serve m --log_level info", "1.2.0rc5", kQwen8, "H100", {{"NCCL_DEBUG", "INFO"}});
  EXPECT_TRUE(has_inert(t, "--log_level"));
  EXPECT_TRUE(has_inert(t, "NCCL_DEBUG (environment)"));
  // A variable the launch line sets that is no engine's is not kept (nor its value, a token perhaps) but is
  // named: before, `FOO=1` vanished from the launch without a note. One inherited from the caller's
  // environment (env_in) is not listed.
  auto e = ok("env FOO=1 HF_TOKEN=hf_secret vllm serve m", "0.13.0", kQwen8, "H100", {{"HOME", "/root"}});
  EXPECT_TRUE(has_inert(e, "FOO (environment; not an engine variable)"));
  EXPECT_TRUE(has_inert(e, "HF_TOKEN (environment; not an engine variable)"));
  EXPECT_FALSE(has_inert(e, "HOME"));
  EXPECT_EQ(e.config.env.count("FOO"), 0u);
  for (const auto& f : e.inert_flags) EXPECT_EQ(f.find("hf_secret"), std::string::npos) << f;
}

TEST(CheckRequest, ContextLengthPerEngine) {
  auto v = ok("vllm serve m --max-model-len 4096", "0.13.0", kQwen8, "H100");
  EXPECT_EQ(se::check_request(v, 4000, 96), std::nullopt);
  EXPECT_EQ(
      *se::check_request(v, 4000, 97),
      "This model's maximum context length is 4096 tokens. However, you requested 4097 tokens (4000 in the "
      "messages, 97 in the completion). Please reduce the length of the messages or completion.");
  auto s =
      ok("python3 -m sglang.launch_server --model-path m --context-length 4096", "0.5.9", kQwen8, "H100");
  EXPECT_EQ(*se::check_request(s, 4096, 1),
            "The input (4096 tokens) is longer than the model's context length (4096 tokens).");
  EXPECT_NE(se::check_request(s, 4000, 96), std::nullopt);  // input + max_new_tokens >= context length
  EXPECT_EQ(se::check_request(s, 4000, 95), std::nullopt);
  auto t = ok("trtllm-serve m", "1.2.0rc5", kQwen8, "H100");
  EXPECT_EQ(*se::check_request(t, 8193, 10),
            "The sum of prompt length (8193.0), query length (0) should not exceed max_num_tokens (8192)");
  EXPECT_EQ(se::check_request(t, 8192, 10), std::nullopt);
  auto tc = ok("trtllm-serve m --enable_chunked_prefill", "1.2.0rc5", kQwen8, "H100");
  EXPECT_EQ(se::check_request(tc, 20000, 10), std::nullopt);
}

TEST(Notes, EveryDecisionHasASource) {
  auto l = ok("vllm serve m", "0.11.0", kGptOss, "A100");
  auto has = [&](const std::string& needle) {
    for (const auto& n : l.notes)
      if (n.find(needle) != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(has("PR #17885"));          // the A100 exclusion
  EXPECT_TRUE(has("PR #25444"));          // FULL_AND_PIECEWISE
  EXPECT_TRUE(has("vLLM issue #31085"));  // Marlin MXFP4
  EXPECT_TRUE(has("PR #19970"));          // async opt-in
  EXPECT_TRUE(has("max_position_embeddings"));
}

TEST(Speculative, VllmMethods) {
  auto e3 = ok(
      R"(vllm serve m --speculative-config '{"method":"eagle3","model":"d/e3","num_speculative_tokens":3}')",
      "0.13.0", kQwen8, "H100");
  ASSERT_TRUE(e3.speculative);
  EXPECT_EQ(e3.speculative->method, se::SpeculativePolicy::Method::kEagle3);
  EXPECT_EQ(e3.speculative->draft_model, "d/e3");
  EXPECT_EQ(e3.speculative->num_draft_tokens, 4);
  EXPECT_FALSE(e3.speculative->acceptance_verified);
  EXPECT_FALSE(e3.speculative->acceptance_source.empty());
  // min(1024 * (1 + 3) * 2, 512) = 512.
  EXPECT_EQ(e3.execution.graph_max_batch, 512);
  auto ng = ok(
      R"(vllm serve m --speculative-config '{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_max":4}')",
      "0.13.0", kQwen8, "H100");
  EXPECT_EQ(ng.speculative->method, se::SpeculativePolicy::Method::kNgram);
  EXPECT_LT(ng.speculative->acceptance, e3.speculative->acceptance);
  EXPECT_EQ(refused(R"(vllm serve m --speculative-config '{"method":"eagle3","num_speculative_tokens":3}')",
                    "0.13.0", kQwen8, "H100")
                .rule,
            "vllm.speculative.draft_model");
  // DeepSeek-V3.2's own MTP head: k from num_nextn_predict_layers, acceptance from the V3 report.
  auto mtp = ok(R"(vllm serve m -tp 8 --speculative-config '{"method":"mtp"}')", "0.13.0", "DeepSeek-V3.2",
                "8xH200");
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 1);
  EXPECT_TRUE(mtp.speculative->acceptance_verified);
  EXPECT_NE(mtp.speculative->acceptance_source.find("2412.19437"), std::string::npos);
}

TEST(RoundTrip, NewlyModelledFlags) {
  auto same = [](const std::string& cmd, const std::string& version) {
    auto c = parse_at(cmd, version);
    auto b = se::parse_launch_command(se::to_argv(c), se::to_env(c), version);
    EXPECT_EQ(b.async_scheduling, c.async_scheduling) << cmd;
    EXPECT_EQ(b.performance_mode, c.performance_mode) << cmd;
    EXPECT_EQ(b.language_model_only, c.language_model_only) << cmd;
    EXPECT_EQ(b.cuda_graph_max_bs, c.cuda_graph_max_bs) << cmd;
    EXPECT_EQ(b.cuda_graph_sizes, c.cuda_graph_sizes) << cmd;
    EXPECT_EQ(b.cudagraph_mode, c.cudagraph_mode) << cmd;
    EXPECT_EQ(b.deepep_mode, c.deepep_mode) << cmd;
    EXPECT_EQ(b.moe_a2a_backend, c.moe_a2a_backend) << cmd;
    EXPECT_EQ(b.moe_dense_tp_size, c.moe_dense_tp_size) << cmd;
    EXPECT_EQ(b.enable_torch_compile, c.enable_torch_compile) << cmd;
    EXPECT_EQ(b.torch_compile_max_bs, c.torch_compile_max_bs) << cmd;
    EXPECT_EQ(b.disable_overlap_schedule, c.disable_overlap_schedule) << cmd;
    EXPECT_EQ(b.enable_mixed_chunk, c.enable_mixed_chunk) << cmd;
    EXPECT_EQ(b.stream_interval, c.stream_interval) << cmd;
    EXPECT_EQ(b.engine_version, version) << cmd;
  };
  same(
      "vllm serve m --no-async-scheduling --performance-mode interactivity --language-model-only "
      "--max-cudagraph-capture-size 256 --stream-interval 4",
      "0.17.1");
  same(R"(vllm serve m -O '{"cudagraph_mode":"FULL_DECODE_ONLY"}' --async-scheduling)", "0.13.0");
  same("vllm serve m --cudagraph-capture-sizes 1 2 4 8", "0.13.0");
  same("vllm serve m --cuda-graph-sizes 1 2 4 8", "0.11.0");
  same("vllm serve m -tp 2 --enable-expert-parallel --all2all-backend deepep_low_latency", "0.13.0");
  same(
      "python3 -m sglang.launch_server --model-path m --tp 8 --moe-a2a-backend deepep --deepep-mode normal "
      "--moe-dense-tp-size 1 --enable-torch-compile --torch-compile-max-bs 16 --disable-overlap-schedule "
      "--enable-mixed-chunk --stream-interval 2 --cuda-graph-bs 1 2 4",
      "0.5.14");
}

TEST(VllmDefaults, CaptureListBeforeTheRework) {
  // 0.10/0.11: N = min(max_num_seqs * 2, 512) with a step of 8: --max-num-seqs 64 -> [1, 2, 4] + 8..128.
  auto small = ok("vllm serve m --max-num-seqs 64", "0.11.0", kQwen8, "H100");
  EXPECT_EQ(small.execution.graph_max_batch, 128);
  EXPECT_EQ(small.execution.graph_sizes.size(), 19u);
  // A budget below the list filters it: --max-num-batched-tokens 100 -> [1, 2, 4] + 8..96 (with
  // --max-num-seqs at most the budget: vLLM refuses a budget below max_num_seqs, next test).
  EXPECT_EQ(ok("vllm serve m --max-num-batched-tokens 100 --max-num-seqs 64", "0.10.2", kQwen8, "H100")
                .execution.graph_max_batch,
            96);
}

// SchedulerConfig._verify_args: max_num_batched_tokens >= max_num_seqs, with the GPU tier's default
// max_num_seqs when the launch does not set it (1024 on an H100, 256 on an A100 or a GPU under 70 GiB).
TEST(VllmDefaults, ABudgetBelowMaxNumSeqsFailsAtStartUp) {
  const auto f = refused("vllm serve m --max-num-batched-tokens 512", "0.13.0", kQwen8, "H100");
  EXPECT_EQ(f.rule, "vllm.max_num_batched_tokens.below_max_num_seqs");
  EXPECT_EQ(f.phase, se::FailurePhase::kStartup);
  EXPECT_NE(
      f.message.find("max_num_batched_tokens (512) must be greater than or equal to max_num_seqs (1024)"),
      std::string::npos)
      << f.message;
  EXPECT_EQ(ok("vllm serve m --max-num-batched-tokens 512 --max-num-seqs 512", "0.13.0", kQwen8, "H100")
                .scheduler.token_budget,
            512);
}

// Which rows of the measured operator tables time a launch's kernels (ExecutionPolicy::*_kernel_sources):
// each engine lists the kernel_source labels of the kernel it dispatches, and none where no table
// measured it, so the twin never times one kernel with another's rows.
TEST(MeasuredKernels, EachEngineNamesTheRowsOfItsOwnKernel) {
  using V = std::vector<std::string>;
  const std::string sglang =
      "python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention ";
  // SGLang fused_moe Triton: its own rows; DeepEP runs DeepGEMM's grouped GEMM, which no SGLang table
  // measured: no rows (before, the Triton rows timed it).
  EXPECT_EQ(ok(sglang, "0.5.14", kGlm52, "8xH200").execution.moe_kernel_sources,
            V{"sglang_fused_moe_triton"});
  EXPECT_EQ(ok(sglang + "--moe-a2a-backend deepep", "0.5.14", kGlm52, "8xH200").execution.moe_kernel_sources,
            V{});
  // vLLM: the method names of 0.14-0.22 tables, then 0.24's method_backend_experts names.
  const auto v = ok("vllm serve m --tensor-parallel-size 8", "0.24.0", kGlm52, "8xH200").execution;
  ASSERT_TRUE(v.moe_kernel_sources);
  EXPECT_EQ(v.moe_kernel_sources->front(),
            v.moe == se::MoeKernel::kDeepGemmGrouped ? "vllm_*deepgemm*" : "vllm_fused_moe");
  EXPECT_NE(
      std::find(v.moe_kernel_sources->begin(), v.moe_kernel_sources->end(), "vllm_*_triton_tritonexperts"),
      v.moe_kernel_sources->end());
  // gpt-oss (MXFP4) on B200: FlashInfer's TRT-LLM-gen MoE; on H100 triton_kernels.
  EXPECT_EQ(ok("vllm serve m", "0.11.0", kGptOss, "1xB200").execution.moe_kernel_sources,
            (V{"vllm_*mxfp4*_flashinfer_trtllm_*"}));
  EXPECT_EQ(ok("vllm serve m", "0.11.0", kGptOss, "1xH100").execution.moe_kernel_sources,
            (V{"vllm_mxfp4_moe", "vllm_*_oaitritonmxfp4*"}));
  // MLA: FlashMLA and FlashAttention MLA have vLLM rows; TensorRT-LLM's MLA tables name no kernel.
  const auto r1 = ok("vllm serve m --tensor-parallel-size 8", "0.11.0", "deepseek-ai/DeepSeek-R1", "8xH200");
  ASSERT_TRUE(r1.execution.mla_decode_kernel_sources);
  EXPECT_EQ(r1.execution.mla_decode_kernel_sources->size(), 1u);
  const auto trt =
      ok("trtllm-serve m --tp_size 8", "1.2.0rc5", "deepseek-ai/DeepSeek-R1", "8xH200").execution;
  EXPECT_FALSE(trt.mla_decode_kernel_sources);
  EXPECT_EQ(trt.moe_kernel_sources, (V{"moe_torch_flow", "moe_torch_flow_cutlass"}));
}

// SGLang's FP8 block-scaled linears: DeepGEMM by default, whose rows its GEMM tables hold (unnamed up to
// 0.5.10, "sglang_deepgemm_gemm_nt_f8f8bf16" from 0.5.14); FlashInfer's groupwise GEMM under
// SGLANG_ENABLE_FLASHINFER_GEMM on SM100 (as InferenceMAX's B200 DeepSeek-R1 launches set it) or another
// --fp8-gemm-backend has no rows: the twin keeps the roofline for them instead of DeepGEMM's rows.
TEST(MeasuredKernels, SglangBlockFp8GemmRowsAreDeepGemmsOnly) {
  using V = std::vector<std::string>;
  const std::string cmd = "python3 -m sglang.launch_server --model-path m --tp-size 8 ";
  const char* r1 = "deepseek-ai/DeepSeek-R1";
  const auto dflt = ok(cmd, "0.5.9", r1, "8xB200").execution;
  EXPECT_EQ(dflt.gemm, se::GemmKernel::kFp8BlockDeepGemm);
  EXPECT_EQ(dflt.gemm_kernel_sources, (V{"sglang_deepgemm*", "sglang"}));
  const std::map<std::string, std::string> fi{{"SGLANG_ENABLE_FLASHINFER_GEMM", "true"},
                                              {"SGL_ENABLE_JIT_DEEPGEMM", "false"}};
  const auto b200 = ok(cmd, "0.5.9", r1, "8xB200", fi);
  EXPECT_EQ(b200.execution.gemm, se::GemmKernel::kFp8BlockCutlass);
  EXPECT_EQ(b200.execution.gemm_kernel_sources, V{});
  EXPECT_TRUE(std::any_of(b200.notes.begin(), b200.notes.end(), [](const std::string& n) {
    return n.find("FlashInfer's groupwise GEMM (SGLANG_ENABLE_FLASHINFER_GEMM)") != std::string::npos;
  }));
  // On Hopper the variable is inert (SM100 only): DeepGEMM, unless JIT DeepGEMM is off (Triton).
  const auto h200 = ok(cmd, "0.5.9", r1, "8xH200", {{"SGLANG_ENABLE_FLASHINFER_GEMM", "1"}});
  EXPECT_EQ(h200.execution.gemm, se::GemmKernel::kFp8BlockDeepGemm);
  EXPECT_NE(std::find(h200.inert_flags.begin(), h200.inert_flags.end(),
                      "SGLANG_ENABLE_FLASHINFER_GEMM (FlashInfer's FP8 GEMM runs on SM100 only)"),
            h200.inert_flags.end());
  EXPECT_EQ(ok(cmd, "0.5.9", r1, "8xH200", fi).execution.gemm_kernel_sources, V{});
  // The flag names the backend and wins over the environment.
  EXPECT_EQ(ok(cmd + "--fp8-gemm-backend deep_gemm", "0.5.9", r1, "8xB200", fi).execution.gemm,
            se::GemmKernel::kFp8BlockDeepGemm);
  EXPECT_EQ(ok(cmd + "--fp8-gemm-backend cutlass", "0.5.9", r1, "8xB200").execution.gemm_kernel_sources, V{});
  // Other engines' GEMM tables time the kernel they dispatch at each shape: every row.
  EXPECT_FALSE(
      ok("vllm serve m --tensor-parallel-size 8", "0.11.0", r1, "8xH200").execution.gemm_kernel_sources);
}

// vLLM's MXFP4 MoE backend follows the environment InferenceMAX sets: VLLM_MXFP4_USE_MARLIN=1 on Hopper
// runs Marlin (padded experts; not the vllm_mxfp4_moe rows, which on Hopper timed triton_kernels),
// VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1 on Blackwell MXFP8 activations (the w4a8_mxfp4_mxfp8 rows). Where
// a variable cannot act it is listed as inert.
TEST(MeasuredKernels, VllmMxfp4EnvironmentPicksTheMoeKernel) {
  using V = std::vector<std::string>;
  const std::map<std::string, std::string> marlin{{"VLLM_MXFP4_USE_MARLIN", "1"}};
  const auto h100 = ok("vllm serve m", "0.13.0", kGptOss, "1xH100", marlin);
  EXPECT_EQ(h100.execution.moe, se::MoeKernel::kMarlinMoe);
  EXPECT_EQ(h100.execution.expert_pad_hidden, 256);
  EXPECT_EQ(h100.execution.moe_kernel_sources, (V{"vllm_*mxfp4*_marlin_marlinexperts*"}));
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "1xH100", {{"VLLM_MXFP4_USE_MARLIN", "0"}}).execution.moe,
            se::MoeKernel::kTritonKernels);
  // Below SM90 Marlin is the MXFP4 method's only backend, so its method-named rows are Marlin's.
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "1xA100").execution.moe_kernel_sources,
            (V{"vllm_mxfp4_moe", "vllm_*mxfp4*_marlin_marlinexperts*"}));
  const std::map<std::string, std::string> mxfp8{{"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8", "1"}};
  const auto b200 = ok("vllm serve m", "0.13.0", kGptOss, "1xB200", mxfp8);
  EXPECT_EQ(b200.execution.moe, se::MoeKernel::kFlashInferTrtllm);
  EXPECT_TRUE(b200.execution.moe_mxfp8_activations);
  EXPECT_FALSE(ok("vllm serve m", "0.13.0", kGptOss, "1xB200").execution.moe_mxfp8_activations);
  const auto b200_marlin = ok("vllm serve m", "0.13.0", kGptOss, "1xB200", marlin);
  EXPECT_EQ(b200_marlin.execution.moe, se::MoeKernel::kFlashInferTrtllm);
  EXPECT_EQ(b200_marlin.inert_flags.size(), 1u);
  EXPECT_EQ(b200_marlin.inert_flags.at(0).rfind("VLLM_MXFP4_USE_MARLIN (", 0), 0u);
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kGptOss, "1xH100", mxfp8).inert_flags,
            (V{"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8 (MXFP4 experts on SM100 only)"}));
  // int() of a value that is not an integer: the MXFP4 backend choice reads it and vLLM stops at start-up
  // (before, the twin read it as 0 and predicted the Triton kernels); a model that never reads it runs.
  const auto bad = refused("vllm serve m", "0.13.0", kGptOss, "1xH100", {{"VLLM_MXFP4_USE_MARLIN", "yes"}});
  EXPECT_EQ(bad.rule, "vllm.env.invalid_literal");
  EXPECT_EQ(bad.message, "ValueError: invalid literal for int() with base 10: 'yes'");
  EXPECT_EQ(
      refused("vllm serve m", "0.13.0", kGptOss, "1xB200", {{"VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8", "on"}})
          .rule,
      "vllm.env.invalid_literal");
  EXPECT_EQ(ok("vllm serve m", "0.13.0", kQwen8, "1xH100", {{"VLLM_MXFP4_USE_MARLIN", "yes"}}).execution.moe,
            ok("vllm serve m", "0.13.0", kQwen8, "1xH100").execution.moe);
}

// TRTLLM_ENABLE_PDL=1 (InferenceMAX's B200 TensorRT-LLM launches) turns on programmatic dependent launch
// on SM90+; on Ampere, or with another value, it cannot act and is listed as inert.
TEST(TrtllmDefaults, EnablePdlOnHopperAndBlackwell) {
  const std::map<std::string, std::string> pdl{{"TRTLLM_ENABLE_PDL", "1"}};
  EXPECT_TRUE(
      ok("trtllm-serve m", "1.2.0rc5", kGptOss, "1xB200", pdl).execution.programmatic_dependent_launch);
  EXPECT_FALSE(ok("trtllm-serve m", "1.2.0rc5", kGptOss, "1xB200").execution.programmatic_dependent_launch);
  const auto a100 = ok("trtllm-serve m", "1.2.0rc5", kQwen8, "1xA100", pdl);
  EXPECT_FALSE(a100.execution.programmatic_dependent_launch);
  EXPECT_EQ(a100.inert_flags,
            std::vector<std::string>{"TRTLLM_ENABLE_PDL (PDL needs SM90+ and the value 1)"});
}

// vLLM refuses block-scaled FP8 experts whose TP slice splits a 128-wide block: Qwen3-235B-A22B-FP8
// (moe_intermediate_size 1536) at TP8 is 192 columns a rank; TP4 (384) and TP8 with expert parallelism
// (whole experts) start. SGLang loads such slices.
TEST(VllmRules, BlockFp8ExpertsMustKeepWholeBlocksPerRank) {
  const char* qwen = "Qwen/Qwen3-235B-A22B-Instruct-2507-FP8";
  EXPECT_EQ(refused("vllm serve m -tp 8", "0.11.0", qwen, "8xH100").message,
            "ValueError: The output_size of gate's and up's weight = 192 is not divisible by weight "
            "quantization block_n = 128.");
  ok("vllm serve m -tp 4", "0.11.0", qwen, "4xH100");
  ok("vllm serve m -tp 8 --enable-expert-parallel", "0.11.0", qwen, "8xH100");
  ok("python3 -m sglang.launch_server --model-path m --tp-size 8", "0.5.9", qwen, "8xH100");
}

// TensorRT-LLM's KV dtype "auto" follows the checkpoint: a ModelOpt checkpoint calibrated with
// kv_cache_quant_algo FP8 (nvidia/Llama-3.1-70B-Instruct-FP8's hf_quant_config.json) gets an FP8 cache,
// half the bytes per token (80 layers x 2 x 4 KV heads a GPU at TP2 x 128 x 1 byte = 81,920); a stated
// dtype wins; vLLM's "auto" stays the model dtype.
TEST(TrtllmDefaults, KvDtypeAutoFollowsAModelOptCheckpoint) {
  const char* llama = "nvidia/Llama-3.1-70B-Instruct-FP8";
  ASSERT_EQ(model(llama).quantization.kv_cache, md::DType::kFp8);
  const auto auto_kv = ok("trtllm-serve m --tp_size 2", "1.2.0rc5", llama, "2xB200");
  EXPECT_EQ(auto_kv.kv_dtype, md::DType::kFp8);
  double kv = 0;
  for (const auto& g : auto_kv.model.layers)
    kv += g.count * md::kv_bytes_per_token(g.layer.attention, auto_kv.layout.attn_tp, auto_kv.kv_dtype);
  EXPECT_DOUBLE_EQ(kv, 81920.0);
  EXPECT_EQ(ok("vllm serve m --tensor-parallel-size 2", "0.11.0", llama, "2xB200").kv_dtype,
            md::DType::kBf16);
  EXPECT_FALSE(model(kQwen8).quantization.kv_cache);
}

// --dtype float32 is refused with the flag named (FP32 weights and GEMMs are not modelled), on vLLM and
// SGLang; bfloat16 / float16 / auto resolve as before.
TEST(Launch, Float32DtypeIsRefusedNotPredictedAsBf16) {
  for (const char* cmd : {"vllm serve m --dtype float32", "vllm serve m --dtype float"}) {
    const auto f = refused(cmd, "0.13.0", kQwen8, "1xH100");
    EXPECT_EQ(f.rule, "dtype.float32.unmodelled") << cmd;
    EXPECT_NE(f.message.find("--dtype float"), std::string::npos) << f.message;
  }
  EXPECT_EQ(
      refused("python3 -m sglang.launch_server --model-path m --dtype float32", "0.5.6", kQwen8, "1xH100")
          .rule,
      "dtype.float32.unmodelled");
  EXPECT_NO_THROW(ok("vllm serve m --dtype bfloat16", "0.13.0", kQwen8, "1xH100"));
  EXPECT_NO_THROW(ok("vllm serve m --dtype half", "0.13.0", kQwen8, "1xH100"));
}

// --cpu-offload-gb N: N GiB per GPU in host memory (MemoryPolicy::cpu_offload_bytes), listed as a path the
// twin has no full figure for (wide band), never as an inert flag; a negative value is refused.
TEST(Launch, CpuOffloadIsModelledAndFlagged) {
  const auto r = ok("vllm serve m --cpu-offload-gb 10", "0.13.0", kQwen8, "1xH100");
  EXPECT_DOUBLE_EQ(r.memory.cpu_offload_bytes, 10.0 * 1024 * 1024 * 1024);
  ASSERT_EQ(r.unmodelled.size(), 1u);
  EXPECT_NE(r.unmodelled[0].find("--cpu-offload-gb 10"), std::string::npos);
  for (const auto& f : r.inert_flags) EXPECT_EQ(f.find("--cpu-offload-gb"), std::string::npos) << f;
  const auto s =
      ok("python3 -m sglang.launch_server --model-path m --cpu-offload-gb 4", "0.5.6", kQwen8, "1xH100");
  EXPECT_DOUBLE_EQ(s.memory.cpu_offload_bytes, 4.0 * 1024 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(ok("vllm serve m --cpu-offload-gb 0", "0.13.0", kQwen8, "1xH100").memory.cpu_offload_bytes,
                   0.0);
  EXPECT_EQ(refused("vllm serve m --cpu-offload-gb -1", "0.13.0", kQwen8, "1xH100").rule,
            "cpu_offload.value");
}
