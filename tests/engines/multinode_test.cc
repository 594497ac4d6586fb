// Multi-node launch rendering (engines/multinode.h): SGLang --nnodes, vLLM multi-node DP and Ray,
// TensorRT-LLM srun/mpirun, per node rank, with every refusal's message.
#include "servelab/engines/multinode.h"

#include <gtest/gtest.h>

#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace se = servelab::engines;

namespace {

using Argv = std::vector<std::string>;

se::MultiNodeRequest request(se::EngineKind kind, const std::string& cmd, int nodes, int rank) {
  se::MultiNodeRequest r;
  r.kind = kind;
  r.argv = se::split_command_line(cmd);
  r.nodes = nodes;
  r.gpus_per_node = 8;
  r.node_rank = rank;
  r.head_address = "10.0.0.1";
  r.port = 29500;
  return r;
}

std::string error_of(const se::MultiNodeRequest& r) {
  try {
    se::render_node_launch(r);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(MultiNode, SglangEveryNodeRunsTheServerWithItsRank) {
  const std::string cmd = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3 --tp 16";
  auto head = se::render_node_launch(request(se::EngineKind::kSglang, cmd, 2, 0));
  EXPECT_EQ(head.method, "sglang-nnodes");
  EXPECT_EQ(head.argv,
            (Argv{"python3", "-m", "sglang.launch_server", "--model-path", "deepseek-ai/DeepSeek-V3", "--tp",
                  "16", "--nnodes", "2", "--node-rank", "0", "--dist-init-addr", "10.0.0.1:29500"}));
  EXPECT_TRUE(head.serves_http);
  EXPECT_EQ(head.gpus, 8);
  EXPECT_TRUE(head.setup.empty());
  auto worker = se::render_node_launch(request(se::EngineKind::kSglang, cmd, 2, 1));
  EXPECT_EQ(worker.argv[10], "1");  // --node-rank 1
  EXPECT_FALSE(worker.serves_http);
  EXPECT_FALSE(worker.after_head_setup);
  // The rendered command is one the engine's CLI accepts.
  EXPECT_EQ(se::parse_launch_command(worker.argv).tp, 16);
}

TEST(MultiNode, SglangEnvWordsMoveToTheEnvironment) {
  auto n = se::render_node_launch(
      request(se::EngineKind::kSglang,
              "SGLANG_ENABLE_JIT_DEEPGEMM=0 python3 -m sglang.launch_server --model-path m --tp 16", 2, 0));
  EXPECT_EQ(n.argv[0], "python3");
  EXPECT_EQ(n.env.at("SGLANG_ENABLE_JIT_DEEPGEMM"), "0");
}

TEST(MultiNode, SglangRefusesUnevenSplitAndGivenFlags) {
  EXPECT_EQ(
      error_of(request(se::EngineKind::kSglang,
                       "python3 -m sglang.launch_server --model-path m --tp 4 --pp-size 5", 3, 0)),
      "multi-node launch: SGLang spreads its 20 GPUs evenly over the nodes: 20 is not a multiple of 3 nodes");
  EXPECT_EQ(error_of(request(se::EngineKind::kSglang,
                             "python3 -m sglang.launch_server --model-path m --tp 16 --nnodes 2", 2, 0)),
            "multi-node launch: the single-node command already has --nnodes; the multi-node flags are "
            "rendered from "
            "the allocation, leave them out");
}

TEST(MultiNode, VllmDataParallelOverNodes) {
  // DP 4 x TP 4 on 2 x 8 GPUs: 2 DP ranks per node (the vLLM docs' data_parallel_deployment example shape).
  const std::string cmd = "vllm serve deepseek-ai/DeepSeek-V3 -tp 4 -dp 4 --enable-expert-parallel";
  auto head = se::render_node_launch(request(se::EngineKind::kVllm, cmd, 2, 0));
  EXPECT_EQ(head.method, "vllm-data-parallel");
  EXPECT_EQ(head.argv, (Argv{"vllm", "serve", "deepseek-ai/DeepSeek-V3", "-tp", "4", "-dp", "4",
                             "--enable-expert-parallel", "--data-parallel-size-local", "2",
                             "--data-parallel-address", "10.0.0.1", "--data-parallel-rpc-port", "29500"}));
  EXPECT_TRUE(head.serves_http);
  auto worker = se::render_node_launch(request(se::EngineKind::kVllm, cmd, 2, 1));
  EXPECT_EQ(Argv(worker.argv.begin() + 8, worker.argv.end()),
            (Argv{"--data-parallel-size-local", "2", "--data-parallel-address", "10.0.0.1",
                  "--data-parallel-rpc-port", "29500", "--data-parallel-start-rank", "2", "--headless"}));
  EXPECT_FALSE(worker.serves_http);
  EXPECT_EQ(worker.gpus, 8);
  EXPECT_NO_THROW(se::parse_launch_command(worker.argv));
}

TEST(MultiNode, VllmDataParallelLastNodePartlyFilled) {
  // DP 3 x TP 4: node 0 ranks 0-1, node 1 rank 2 only (4 of its 8 GPUs).
  auto worker = se::render_node_launch(request(se::EngineKind::kVllm, "vllm serve m -tp 4 -dp 3", 2, 1));
  EXPECT_EQ(worker.argv[7], "--data-parallel-size-local");
  EXPECT_EQ(worker.argv[8], "1");
  EXPECT_EQ(worker.argv[13], "--data-parallel-start-rank");
  EXPECT_EQ(worker.argv[14], "2");
  EXPECT_EQ(worker.gpus, 4);
}

TEST(MultiNode, VllmRayForTensorParallelAcrossNodes) {
  const std::string cmd = "vllm serve m --tensor-parallel-size 8 --pipeline-parallel-size 2";
  auto head = se::render_node_launch(request(se::EngineKind::kVllm, cmd, 2, 0));
  EXPECT_EQ(head.method, "vllm-ray");
  EXPECT_EQ(head.setup, (std::vector<Argv>{{"ray", "start", "--head", "--port=29500", "--num-gpus=8"}}));
  EXPECT_EQ(Argv(head.argv.end() - 2, head.argv.end()), (Argv{"--distributed-executor-backend", "ray"}));
  EXPECT_TRUE(head.serves_http);
  EXPECT_EQ(head.teardown, (std::vector<Argv>{{"ray", "stop"}}));
  auto worker = se::render_node_launch(request(se::EngineKind::kVllm, cmd, 2, 1));
  EXPECT_EQ(worker.argv, (Argv{"ray", "start", "--address=10.0.0.1:29500", "--num-gpus=8", "--block"}));
  EXPECT_TRUE(worker.after_head_setup);
  EXPECT_FALSE(worker.serves_http);
  EXPECT_NO_THROW(se::parse_launch_command(head.argv));
}

TEST(MultiNode, VllmRefusals) {
  EXPECT_EQ(error_of(request(se::EngineKind::kVllm, "vllm serve m -tp 16 -dp 2", 4, 0)),
            "multi-node launch: vLLM: DP 2 with TP*PP = 16 GPUs spanning nodes (more than 8 per node) is not "
            "rendered: use DP ranks that fit in one node, or DP 1 over Ray");
  EXPECT_EQ(
      error_of(request(se::EngineKind::kVllm, "vllm serve m -tp 3 -dp 4", 2, 0)),
      "multi-node launch: vLLM data parallel over nodes: a replica of TP*PP = 3 GPUs does not divide the 8 "
      "GPUs per node");
  EXPECT_EQ(error_of(request(se::EngineKind::kVllm, "vllm serve m -tp 8 -dp 2 --headless", 2, 0)),
            "multi-node launch: the single-node command already has --headless; the multi-node flags are "
            "rendered from the allocation, leave them out");
}

TEST(MultiNode, TrtllmSrunFromTheHeadOnly) {
  const std::string cmd = "trtllm-serve deepseek-ai/DeepSeek-V3 --tp_size 16 --ep_size 4";
  auto r = request(se::EngineKind::kTrtllm, cmd, 2, 0);
  r.env = {{"TRTLLM_DG_ENABLED", "0"}};
  auto head = se::render_node_launch(r);
  EXPECT_EQ(head.method, "trtllm-mpi");
  EXPECT_EQ(head.argv, (Argv{"srun", "--nodes=2", "--ntasks=16", "--ntasks-per-node=8", "--mpi=pmix",
                             "trtllm-llmapi-launch", "trtllm-serve", "deepseek-ai/DeepSeek-V3", "--tp_size",
                             "16", "--ep_size", "4"}));
  EXPECT_TRUE(head.serves_http);
  r.node_rank = 1;
  auto worker = se::render_node_launch(r);
  EXPECT_TRUE(worker.argv.empty());
  EXPECT_EQ(worker.gpus, 8);
  EXPECT_FALSE(worker.serves_http);
}

TEST(MultiNode, TrtllmMpirunOverHosts) {
  auto r = request(se::EngineKind::kTrtllm, "trtllm-serve m --tp_size 8 --pp_size 2", 2, 0);
  r.mpi_launcher = se::MpiLauncher::kMpirun;
  r.env = {{"NCCL_IB_DISABLE", "1"}};
  EXPECT_EQ(error_of(r), "multi-node launch: mpirun needs one host per node: 0 hosts for 2 nodes");
  r.hosts = {"node-a", "node-b"};
  auto head = se::render_node_launch(r);
  EXPECT_EQ(head.argv, (Argv{"mpirun", "-np", "16", "-H", "node-a:8,node-b:8", "--bind-to", "none", "-x",
                             "NCCL_IB_DISABLE", "trtllm-llmapi-launch", "trtllm-serve", "m", "--tp_size", "8",
                             "--pp_size", "2"}));
}

TEST(MultiNode, AllocationChecks) {
  const std::string cmd = "python3 -m sglang.launch_server --model-path m --tp 8";
  EXPECT_EQ(
      error_of(request(se::EngineKind::kSglang, cmd, 2, 0)),
      "multi-node launch: the launch uses 8 GPUs, which fit in 1 node(s) of 8; 2 nodes would leave one idle");
  EXPECT_EQ(error_of(request(se::EngineKind::kSglang, cmd + " --pp-size 3", 2, 0)),
            "multi-node launch: the launch uses 24 GPUs; 2 nodes x 8 GPUs hold 16");
  EXPECT_EQ(error_of(request(se::EngineKind::kSglang, cmd, 2, 2)),
            "multi-node launch: node_rank 2 is outside 0..1");
  EXPECT_EQ(error_of(request(se::EngineKind::kVllm, cmd, 1, 0)),
            "multi-node launch: the command launches sglang, the request says vllm");
  auto r = request(se::EngineKind::kSglang, "python3 -m sglang.launch_server --model-path m --tp 16", 2, 0);
  r.head_address = "";
  EXPECT_EQ(error_of(r), "multi-node launch: head_address is empty (the head node's host name or IP)");
  // One node: the launch unchanged.
  auto single = se::render_node_launch(request(se::EngineKind::kSglang, cmd, 1, 0));
  EXPECT_EQ(single.method, se::kSingleNodeMethod);
  EXPECT_EQ(single.argv, se::split_command_line(cmd));
  EXPECT_TRUE(single.serves_http);
  EXPECT_EQ(se::nodes_for_gpus(16, 8), 2);
  EXPECT_EQ(se::nodes_for_gpus(9, 8), 2);
  EXPECT_EQ(se::nodes_for_gpus(8, 8), 1);
}

}  // namespace

// The twin's side: a launch that states its nodes is placed (and checked) as it says.
namespace {

namespace hw = servelab::hardware;

std::variant<se::ResolvedLaunch, se::LaunchFailure> resolve(const std::string& cmd,
                                                            const std::string& version,
                                                            const std::string& cluster) {
  static const auto spec = servelab::model::resolve_model("deepseek-ai/DeepSeek-V3.2");
  return se::resolve_launch(se::parse_launch_command(se::split_command_line(cmd), {}, version), spec,
                            hw::parse_cluster(cluster));
}

se::ParallelLayout layout(const std::string& cmd, const std::string& version, const std::string& cluster) {
  auto r = resolve(cmd, version, cluster);
  if (auto* f = std::get_if<se::LaunchFailure>(&r)) throw std::runtime_error(cmd + ": " + f->message);
  return std::get<se::ResolvedLaunch>(r).layout;
}

se::LaunchFailure refusal(const std::string& cmd, const std::string& version, const std::string& cluster) {
  auto r = resolve(cmd, version, cluster);
  if (!std::holds_alternative<se::LaunchFailure>(r)) throw std::runtime_error(cmd + ": resolved");
  return std::get<se::LaunchFailure>(r);
}

const char* kSg = "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 ";

TEST(MultiNodeTwin, SglangNnodesPlacesTheRanks) {
  // TP 16 over 2 x 8: the TP group crosses the nodes (its all-reduces run over the network).
  auto l = layout(std::string(kSg) + "--tp 16 --nnodes 2 --node-rank 0 --dist-init-addr 10.0.0.1:20000",
                  "0.5.6.post2", "16xH100");
  EXPECT_EQ(l.nodes, 2);
  EXPECT_TRUE(l.tp_crosses_nodes);
  // TP 8 with --nnodes 2 on 2 x 8: SGLang puts 4 GPUs on each node, so even TP 8 crosses them.
  auto half = layout(std::string(kSg) + "--tp 8 --nnodes 2", "0.5.6.post2", "16xH100");
  EXPECT_EQ(half.nodes, 2);
  EXPECT_TRUE(half.tp_crosses_nodes);
  EXPECT_FALSE(layout(std::string(kSg) + "--tp 8", "0.5.6.post2", "16xH100").tp_crosses_nodes);
}

TEST(MultiNodeTwin, StatedNodesTheHardwareLacks) {
  auto f = refusal(std::string(kSg) + "--tp 8 --nnodes 2", "0.5.6.post2", "8xH100");
  EXPECT_EQ(f.rule, "parallel.nodes");
  EXPECT_EQ(
      f.message,
      "sglang --nnodes 2 spans 2 nodes of 4 GPUs but 8xH100-SXM is 1 node(s) of 8: give the hardware as "
      "2x8xH100-SXM");
  EXPECT_EQ(refusal(std::string(kSg) + "--tp 2 --pp-size 3 --nnodes 4", "0.5.6.post2", "4x8xH100").message,
            "sglang --nnodes 4 does not split the launch's 6 GPUs evenly over the nodes");
  // vLLM: --data-parallel-size-local 1 with TP 4 = 4 nodes of 4 GPUs; 2 x 8 has two.
  EXPECT_EQ(
      refusal("vllm serve m -tp 4 -dp 4 -dpl 1", "0.13.0", "16xH100").message,
      "vllm --data-parallel-size-local 1 spans 4 nodes of 4 GPUs but 2x8xH100-SXM is 2 node(s) of 8: give "
      "the hardware as 4x8xH100-SXM");
  auto dp = layout("vllm serve m -tp 4 -dp 4 -dpl 2 --enable-expert-parallel", "0.13.0", "16xH100");
  EXPECT_EQ(dp.nodes, 2);
  EXPECT_FALSE(dp.tp_crosses_nodes);
  // TensorRT-LLM: --gpus_per_node larger than the node.
  EXPECT_EQ(refusal("trtllm-serve m --tp_size 16 --gpus_per_node 16", "1.2.0rc5", "16xH100").message,
            "trtllm --gpus_per_node 16 puts 16 GPUs on each node but 2x8xH100-SXM has 8 per node");
  EXPECT_EQ(layout("trtllm-serve m --tp_size 16 --gpus_per_node 8", "1.2.0rc5", "16xH100").nodes, 2);
  // One rank with --gpus_per_node 8 (InferenceX's single-GPU runs) uses one GPU of one node: it runs.
  EXPECT_EQ(layout("trtllm-serve m --tp_size 1 --gpus_per_node 8", "1.2.0rc5", "1xH100").nodes, 1);
  EXPECT_EQ(refusal("trtllm-serve m --tp_size 2 --gpus_per_node 8", "1.2.0rc5", "2x1xH100").message,
            "trtllm --gpus_per_node 8 puts 2 GPUs on each node but 2x1xH100-SXM has 1 per node");
}

TEST(MultiNodeTwin, FlagsRoundTrip) {
  auto round = [](const std::string& cmd, const std::string& version) {
    auto c = se::parse_launch_command(se::split_command_line(cmd), {}, version);
    return se::parse_launch_command(se::to_argv(c), {}, version);
  };
  EXPECT_EQ(round(std::string(kSg) + "--tp 16 --nnodes 2", "0.5.6.post2").nnodes, 2);
  EXPECT_EQ(round("vllm serve m -tp 4 -dp 4 -dpl 2", "0.13.0").dp_size_local, 2);
  EXPECT_EQ(round("trtllm-serve m --tp_size 16 --gpus_per_node 8", "1.2.0rc5").gpus_per_node, 8);
}

}  // namespace
