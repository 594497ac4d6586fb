// Every launch of the perflab corpus (../shared/reference/perflab/measurements.json) parses with its
// point's engine version and resolves on its GPUs, or gives the refusal the study recorded; failures
// whose cause the corpus does not state (crash, OOM: the memory plan is sim's) resolve and are counted
// as left to the twin.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace se = servelab::engines;
namespace hw = servelab::hardware;
namespace md = servelab::model;

namespace {

nlohmann::json load_points() {
  auto path =
      servelab::common::source_dir() / ".." / "shared" / "reference" / "perflab" / "measurements.json";
  return nlohmann::json::parse(servelab::common::read_file(path)).at("points");
}

// The refusals the engine modules reproduce, by point id: rule and, for the recorded engine messages,
// the corpus text (compared verbatim).
struct Expected {
  const char* rule;
  bool verbatim;  ///< the message equals the point's failure.message
};
const std::map<std::string, Expected>& expected_refusals() {
  static const std::map<std::string, Expected> kExpected = {
      {"glm-4.5-air__h100#002", {"trtllm.model.glm4_moe", false}},
      {"glm-4.x__h200#002", {"trtllm.model.glm4_moe", false}},
      {"gpt-oss-120b__h100#007", {"vllm.attention_backend.sinks_flashinfer", true}},
      {"gpt-oss-120b__h100#008", {"vllm.attention_backend.sinks_xformers", true}},
      {"gpt-oss-20b__a100#002", {"trtllm.mxfp4.sm80", true}},
      {"qwen3-14b__a100#003", {"trtllm.fp8_block.sm80", true}},
      {"qwen3-14b__a100#004", {"trtllm.awq.qwen3_weight_key", true}},
  };
  return kExpected;
}

// Failures the corpus records without a cause the engine rules can model: they must resolve (the sim's
// memory plan owns OOM; crashes stay unexplained).
const std::set<std::string>& left_to_the_twin() {
  static const std::set<std::string> kIds = {
      "glm-5.2__h200#011",          // OOM, --chunked-prefill-size 16384 (memory plan)
      "glm-5.2__h200#012",          // OOM, --chunked-prefill-size 32768 (memory plan)
      "qwen3-235b-a22b__h100#005",  // "Crash" with VLLM_ATTENTION_BACKEND=FLASHINFER (unexplained)
      "qwen3-235b-a22b__h100#006",  // "Crash on inference" with XFORMERS (unexplained)
      "qwen3-235b-a22b__h100#008",  // "Crash on inference" at --max-num-batched-tokens 32768 (unexplained)
  };
  return kIds;
}

hw::ClusterSpec cluster_of(const nlohmann::json& p) {
  const int stated = p.at("gpu_count_stated").get<int>();
  const int used = p.at("gpus_used_by_launch").get<int>();
  return hw::parse_cluster(std::to_string(std::max(stated, used)) + "x" + p.at("gpu").get<std::string>());
}

}  // namespace

TEST(Corpus, EveryLaunchParsesAndResolvesOrGivesTheRecordedRefusal) {
  const auto points = load_points();
  ASSERT_EQ(points.size(), 237u);
  int resolved = 0, refused = 0, hardware_refused = 0, not_engines = 0;
  std::set<std::string> seen_expected, seen_left;
  for (const auto& p : points) {
    const std::string id = p.at("id");
    SCOPED_TRACE(id);
    std::vector<std::string> argv = p.at("launch_argv").get<std::vector<std::string>>();
    std::map<std::string, std::string> env = p.at("env").get<std::map<std::string, std::string>>();
    const std::string engine = p.at("engine"), version = p.at("engine_version");
    if (engine == "mindie") {  // not an engine servelab models: the launch form is refused
      EXPECT_THROW(se::parse_launch_command(argv, env), std::invalid_argument);
      ++not_engines;
      continue;
    }
    se::LaunchConfig c;
    ASSERT_NO_THROW(c = se::parse_launch_command(argv, env, version));
    EXPECT_EQ(se::engine_kind_name(c.kind), engine);
    EXPECT_EQ(c.engine_version, version);
    EXPECT_EQ(c.gpus_used(), p.at("gpus_used_by_launch").get<int>());
    const hw::ClusterSpec cluster = cluster_of(p);
    const md::ModelSpec model = md::resolve_model(c.model);
    auto r = se::resolve_launch(c, model, cluster);
    if (!cluster.gpu.modelled) {
      ASSERT_TRUE(std::holds_alternative<se::LaunchFailure>(r));
      EXPECT_EQ(std::get<se::LaunchFailure>(r).rule, "hardware.unmodelled");
      ++hardware_refused;
      continue;
    }
    if (auto it = expected_refusals().find(id); it != expected_refusals().end()) {
      ASSERT_TRUE(std::holds_alternative<se::LaunchFailure>(r)) << "expected " << it->second.rule;
      const auto& f = std::get<se::LaunchFailure>(r);
      EXPECT_EQ(f.rule, it->second.rule) << f.message;
      EXPECT_EQ(p.at("status"), "failed");
      EXPECT_EQ(f.verbatim, it->second.verbatim);
      if (it->second.verbatim) {
        EXPECT_EQ(f.message, p.at("failure").at("message").get<std::string>());
      }
      seen_expected.insert(id);
      ++refused;
      continue;
    }
    if (std::holds_alternative<se::LaunchFailure>(r)) {
      ADD_FAILURE() << "refused: " << std::get<se::LaunchFailure>(r).message;
      continue;
    }
    const auto& l = std::get<se::ResolvedLaunch>(r);
    EXPECT_EQ(l.version, version);
    EXPECT_EQ(l.layout.gpus, c.gpus_used());
    EXPECT_GT(l.max_model_len, 0);
    EXPECT_GT(l.scheduler.token_budget, 0);
    EXPECT_GT(l.memory.fraction, 0.0);
    EXPECT_FALSE(l.notes.empty());
    if (p.at("status") == "failed") {
      EXPECT_TRUE(left_to_the_twin().count(id)) << "a recorded failure that resolves without being listed";
      seen_left.insert(id);
    }
    ++resolved;
  }
  EXPECT_EQ(seen_expected.size(), expected_refusals().size());
  EXPECT_EQ(seen_left, left_to_the_twin());
  EXPECT_EQ(refused, 7);
  EXPECT_EQ(not_engines, 13);      // MindIE 2.1RC1 on Ascend
  EXPECT_EQ(hardware_refused, 6);  // vLLM 0.9.1 on Ascend 910B: the twin refuses the GPU
  EXPECT_EQ(resolved, 237 - 7 - 13 - 6);
}

// The launches of the corpus resolve to the right per-version defaults (hand-checked values).
TEST(Corpus, PerPointDefaults) {
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& p : load_points()) by_id[p.at("id")] = p;
  auto resolve = [&](const std::string& id) {
    const auto& p = by_id.at(id);
    auto c = se::parse_launch_command(p.at("launch_argv").get<std::vector<std::string>>(),
                                      p.at("env").get<std::map<std::string, std::string>>(),
                                      p.at("engine_version").get<std::string>());
    auto r = se::resolve_launch(c, md::resolve_model(c.model), cluster_of(p));
    if (auto* f = std::get_if<se::LaunchFailure>(&r)) throw std::runtime_error(id + ": " + f->message);
    return std::get<se::ResolvedLaunch>(r);
  };
  // vLLM 0.11.0 on A100 (gpt-oss-20b): the A100 exclusion -> 256 / 2048; gpt-oss capture list up to 992
  // with step 16 above 256, filtered to the 2048-token budget: 3 + 31 + 47 = 81 sizes; FULL_AND_PIECEWISE;
  // Marlin MXFP4 MoE; TRITON_ATTN for sinks on SM80.
  auto a100 = resolve("gpt-oss-20b__a100#000");
  EXPECT_EQ(a100.scheduler.max_num_seqs, 256);
  EXPECT_EQ(a100.scheduler.token_budget, 2048);
  EXPECT_EQ(a100.execution.graphs, se::GraphMode::kFullAndPiecewise);
  EXPECT_EQ(a100.execution.graph_max_batch, 992);
  EXPECT_EQ(a100.execution.graph_sizes.size(), 81u);
  EXPECT_EQ(a100.execution.moe, se::MoeKernel::kMarlinMoe);
  EXPECT_EQ(a100.execution.attention, se::AttentionKernel::kTriton);
  EXPECT_FALSE(a100.execution.async_scheduling);
  EXPECT_TRUE(resolve("gpt-oss-20b__a100#003").execution.async_scheduling);  // --async-scheduling
  // vLLM 0.10.2 on H100 (gpt-oss-120b): 1024 / 8192, PIECEWISE, [1, 2, 4] + 8..512 step 8 = 67 sizes,
  // FA3 with sinks, Marlin MXFP4 MoE (no triton_kernels in 0.10.x) with its 256 / 128 padding.
  auto h100 = resolve("gpt-oss-120b__h100#000");
  EXPECT_EQ(h100.scheduler.max_num_seqs, 1024);
  EXPECT_EQ(h100.scheduler.token_budget, 8192);
  EXPECT_EQ(h100.execution.graphs, se::GraphMode::kPiecewise);
  EXPECT_EQ(h100.execution.graph_sizes.size(), 67u);
  EXPECT_EQ(h100.execution.graph_max_batch, 512);
  EXPECT_EQ(h100.execution.attention, se::AttentionKernel::kFlashAttn3);
  EXPECT_EQ(h100.execution.moe, se::MoeKernel::kMarlinMoe);
  EXPECT_EQ(h100.execution.expert_pad_hidden, 256);
  EXPECT_EQ(h100.execution.expert_pad_intermediate, 128);
  EXPECT_EQ(h100.max_model_len, 32768);
  EXPECT_TRUE(h100.memory.kv_window_only);
  auto pp = resolve("gpt-oss-120b__h100#006");  // -pp 2
  EXPECT_EQ(pp.layout.pp, 2);
  EXPECT_EQ(pp.scheduler.pp_micro_batches, 2);
  // vLLM 0.17.1 on H100 (Qwen3.5-9B): async on by default; --performance-mode throughput doubles the
  // batch defaults; interactivity adds 1..32; hybrid: prefix caching opt-in.
  auto q = resolve("qwen3.5-9b__h100#000");
  EXPECT_TRUE(q.execution.async_scheduling);
  EXPECT_EQ(q.scheduler.max_num_seqs, 1024);
  EXPECT_FALSE(q.prefix_caching);
  EXPECT_TRUE(q.memory.state_page_padded);
  EXPECT_TRUE(resolve("qwen3.5-9b__h100#002").prefix_caching);  // --enable-prefix-caching
  auto thr = resolve("qwen3.5-9b__h100#004");
  EXPECT_EQ(thr.scheduler.max_num_seqs, 2048);
  EXPECT_EQ(thr.scheduler.token_budget, 16384);
  EXPECT_EQ(resolve("qwen3.5-9b__h100#010").scheduler.max_num_seqs, 256);  // explicit wins
  auto mtp = resolve("qwen3.5-9b__h100#003");
  ASSERT_TRUE(mtp.speculative);
  EXPECT_EQ(mtp.speculative->method, se::SpeculativePolicy::Method::kMtp);
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 4);
  EXPECT_FALSE(mtp.speculative->acceptance_verified);
  // min(1024 * (1 + 4) * 2, 512) = 512
  EXPECT_EQ(mtp.execution.graph_max_batch, 512);
  auto inter = resolve("qwen3.5-35b-a3b__h200-latency#007");
  EXPECT_EQ(inter.execution.graph_sizes[0], 1);
  EXPECT_EQ(inter.execution.graph_sizes[31], 32);  // 1..32 step 1
  EXPECT_EQ(resolve("qwen3.5-35b-a3b__h200-latency#003").execution.graph_max_batch, 256);
  EXPECT_EQ(q.memory.state_pool_ratio, 0.0);  // vLLM: states in the KV pool's blocks
  // SGLang 0.5.9 on a hybrid model: radix cache on, so the MambaPool takes 0.9 / 1.9 of the pool memory
  // and the running requests are capped at a third of its slots; FP32 recurrent state.
  auto sgh = resolve("qwen3.5-9b__h100#001");
  EXPECT_DOUBLE_EQ(sgh.memory.state_pool_ratio, 0.9);
  EXPECT_EQ(sgh.memory.state_slots_per_running, 3);
  EXPECT_EQ(sgh.memory.state_copies_per_slot, 1);
  EXPECT_EQ(sgh.state_dtype, md::DType::kFp32);
  EXPECT_EQ(resolve("qwen3-8b__h100-latency#001").memory.state_pool_ratio, 0.0);  // no linear attention
  // SGLang 0.5.3.post3 on H100 (Qwen3-8B): tier 8192 / 256; --cuda-graph-max-bs 8; EAGLE3 draft model;
  // --enable-torch-compile.
  auto sg = resolve("qwen3-8b__h100-latency#001");
  EXPECT_EQ(sg.scheduler.token_budget, 8192);
  EXPECT_EQ(sg.execution.graph_max_batch, 256);
  EXPECT_EQ(sg.execution.attention, se::AttentionKernel::kFlashAttn3);
  EXPECT_TRUE(sg.execution.async_scheduling);
  EXPECT_TRUE(sg.scheduler.max_num_seqs_from_pool);
  EXPECT_EQ(resolve("qwen3-8b__h100-latency#003").execution.graph_max_batch, 8);
  EXPECT_EQ(resolve("qwen3-8b__h100-latency#005").execution.attention, se::AttentionKernel::kTriton);
  EXPECT_EQ(resolve("qwen3-8b__h100-latency#006").execution.attention, se::AttentionKernel::kFlashInfer);
  auto eagle = resolve("qwen3-8b__h100-latency#007");
  ASSERT_TRUE(eagle.speculative);
  EXPECT_EQ(eagle.speculative->method, se::SpeculativePolicy::Method::kEagle3);
  EXPECT_EQ(eagle.speculative->num_steps, 4);
  EXPECT_EQ(eagle.speculative->topk, 4);
  EXPECT_EQ(eagle.speculative->num_draft_tokens, 16);
  EXPECT_EQ(eagle.speculative->draft_model, "Tengyunw/qwen3_8b_eagle3");
  EXPECT_EQ(eagle.scheduler.max_num_seqs, 48);
  EXPECT_FALSE(eagle.execution.async_scheduling);
  auto dflt = resolve("qwen3-8b__h100-latency#015");  // EAGLE3 without steps: the fallback row 5/4/8
  EXPECT_EQ(dflt.speculative->num_steps, 5);
  EXPECT_EQ(dflt.speculative->num_draft_tokens, 8);
  auto tc = resolve("qwen3-8b__h100-latency#016");
  EXPECT_TRUE(tc.execution.torch_compile);
  EXPECT_EQ(tc.execution.torch_compile_max_batch, 32);
  EXPECT_FALSE(eagle.execution.torch_compile);
  // SGLang on A100: flashinfer for GQA, triton for gpt-oss, triton_kernels MXFP4 MoE.
  EXPECT_EQ(resolve("qwen3-14b__a100#001").execution.attention, se::AttentionKernel::kFlashInfer);
  auto sga = resolve("gpt-oss-20b__a100#001");
  EXPECT_EQ(sga.execution.attention, se::AttentionKernel::kTriton);
  EXPECT_EQ(sga.execution.moe, se::MoeKernel::kTritonKernels);
  // vLLM FP8 on A100: Marlin W8A16.
  EXPECT_EQ(resolve("qwen3-14b__a100#005").execution.gemm, se::GemmKernel::kMarlinW8A16);
  EXPECT_EQ(resolve("qwen3-14b__a100#006").execution.gemm, se::GemmKernel::kMarlinW4A16);
  // TensorRT-LLM 1.2.0rc1: 2048 / 8192, chunked prefill off, graphs up to 128 without padding.
  auto trt = resolve("qwen3-14b__a100#002");
  EXPECT_EQ(trt.scheduler.max_num_seqs, 2048);
  EXPECT_EQ(trt.scheduler.token_budget, 8192);
  EXPECT_FALSE(trt.scheduler.chunked_prefill);
  EXPECT_EQ(trt.execution.graph_max_batch, 128);
  EXPECT_FALSE(trt.execution.graph_padding);
  EXPECT_EQ(trt.execution.graph_sizes.size(), 34u);  // 1..31, 32, 64, 128
  EXPECT_TRUE(trt.execution.async_scheduling);
  EXPECT_EQ(trt.memory.basis, se::MemoryPolicy::Basis::kOfFree);
  EXPECT_TRUE(resolve("qwen3-14b__a100#013").scheduler.chunked_prefill);
  EXPECT_EQ(resolve("qwen3-14b__a100#008").scheduler.token_budget, 32768);
}
