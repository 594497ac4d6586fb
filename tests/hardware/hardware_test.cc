#include "servelab/hardware/hardware.h"

#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>

namespace servelab::hardware {
namespace {

TEST(GpuTable, EveryRowHasItsPeaksAndSources) {
  for (const auto& g : gpu_table()) {
    SCOPED_TRACE(g.name);
    EXPECT_GT(g.memory_bytes, 0);
    EXPECT_GT(g.hbm_bandwidth_Bps, 0);
    EXPECT_GT(g.bf16_flops, 0);
    // One source per field: every non-zero number cites its own (parse_gpu_table enforces it).
    std::set<std::string> cited;
    for (const auto& [field, source] : g.sources) {
      EXPECT_FALSE(source.empty()) << field;
      cited.insert(field);
    }
    for (const char* f : {"memory_mib", "hbm_bandwidth_TBps", "bf16_tflops"})
      EXPECT_TRUE(cited.count(f)) << f;
    if (g.fp8_flops > 0) EXPECT_TRUE(cited.count("fp8_tflops"));
    if (g.link_Bps > 0) EXPECT_TRUE(cited.count("link_GBps"));  // Ascend 910B's HCCS figure was not found
    if (!g.modelled) {
      EXPECT_FALSE(g.unsupported_reason.empty());
    }
  }
}

TEST(GpuTable, DatasheetValues) {
  const auto& a100 = gpu_by_name("A100");
  EXPECT_EQ(a100.name, "A100-SXM-80GB");
  EXPECT_EQ(a100.compute_capability, 80);
  EXPECT_DOUBLE_EQ(a100.fp8_flops, 0);  // no FP8 tensor cores on SM80
  EXPECT_DOUBLE_EQ(a100.bf16_flops, 312e12);
  EXPECT_DOUBLE_EQ(a100.memory_bytes, 81920.0 * 1024 * 1024);
  const auto& h100 = gpu_by_name("nvidia h100 sxm5");
  EXPECT_EQ(h100.name, "H100-SXM");
  EXPECT_DOUBLE_EQ(h100.fp8_flops, 1979e12);
  EXPECT_DOUBLE_EQ(h100.hbm_bandwidth_Bps, 3.35e12);
  EXPECT_EQ(gpu_by_name("H200").memory_bytes, 143771.0 * 1024 * 1024);
  EXPECT_EQ(gpu_by_name("A100-40GB").hbm_bandwidth_Bps, 1.555e12);
  EXPECT_EQ(gpu_by_name("H100-PCIe").intra_node_link, LinkKind::kNvLinkBridge);
  EXPECT_EQ(gpu_by_name("L40S").intra_node_link, LinkKind::kPcie);
  EXPECT_DOUBLE_EQ(gpu_by_name("B200").fp4_flops, 9000e12);
  EXPECT_FALSE(gpu_by_name("910B").modelled);
  EXPECT_FALSE(gpu_by_name("MI300X").modelled);
}

TEST(GpuTable, UnknownGpuListsTheKnownOnes) {
  try {
    gpu_by_name("V100");
    FAIL();
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("unknown GPU \"V100\""), std::string::npos) << m;
    EXPECT_NE(m.find("A100-SXM-80GB"), std::string::npos) << m;
    EXPECT_NE(m.find("L40S"), std::string::npos) << m;
  }
}

// An AMD Instinct name with no row is refused for the AMD rows' reason, as typed (a trial got "unknown GPU
// \"mi355X\"" for 8xmi355x, while 8xMI300X named the reason).
TEST(GpuTable, AnAmdInstinctWithoutARowGivesTheReason) {
  for (const std::string spec : {"8xmi355x", "8xMI325X", "AMD Instinct MI355X"}) {
    try {
      parse_cluster(spec);
      FAIL() << spec;
    } catch (const std::invalid_argument& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("is an AMD Instinct GPU, which the twin does not model: the twin models the engines' "
                       "CUDA kernels only"),
                std::string::npos)
          << m;
      EXPECT_EQ(m.find("unknown GPU"), std::string::npos) << m;
    }
  }
  try {
    parse_cluster("8xmi355x");
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).rfind("GPU \"mi355x\" is", 0), 0u) << e.what();
  }
}

TEST(Cluster, CountsSplitIntoNodesOfEight) {
  auto c = parse_cluster("16xH100");
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.gpus_per_node, 8);
  EXPECT_EQ(c.total_gpus(), 16);
  EXPECT_EQ(cluster_name(c), "2x8xH100-SXM");
  c = parse_cluster("2x8xH100");
  EXPECT_EQ(c.nodes, 2);
  EXPECT_EQ(c.gpus_per_node, 8);
  c = parse_cluster("4xA100");
  EXPECT_EQ(c.nodes, 1);
  EXPECT_EQ(c.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(c.network.nic_Bps, 25e9);  // HDR 200 Gb/s on A100 clusters
  c = parse_cluster("H200");
  EXPECT_EQ(c.total_gpus(), 8);
  c = parse_cluster("8*MI300X");
  EXPECT_EQ(c.gpu.name, "MI300X");
  EXPECT_EQ(c.total_gpus(), 8);
  c = parse_cluster("1xH100");
  EXPECT_EQ(c.total_gpus(), 1);
  EXPECT_DOUBLE_EQ(c.network.nic_Bps, 50e9);
}

TEST(Cluster, BadSpecsNameTheProblem) {
  auto message = [](const std::string& spec) {
    try {
      parse_cluster(spec);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("12xH100").find("do not split into nodes of 8"), std::string::npos);
  EXPECT_NE(message("12xH100").find("2x6xH100-SXM"), std::string::npos);
  // The suggestion is an exact split (100 = 20 nodes of 5, not 13 x 7 = 91), beside the whole nodes of 8.
  EXPECT_NE(message("100xH100").find("\"20x5xH100-SXM\" (20 nodes of 5) or \"13x8xH100-SXM\" (104 GPUs)"),
            std::string::npos)
      << message("100xH100");
  EXPECT_NE(message("0xH100").find("counts must be 1..1024"), std::string::npos);
  EXPECT_NE(message("-1xH100").find("counts must be 1..1024 (got -1)"), std::string::npos);  // not a GPU name
  EXPECT_NE(message("2x16xH100").find("at most 8"), std::string::npos);
  EXPECT_NE(message("8x").find("no GPU name"), std::string::npos);
  EXPECT_NE(message("8xV100").find("unknown GPU"), std::string::npos);
  EXPECT_NE(message("200x8xH100").find("more than 1024"), std::string::npos);
}

TEST(Network, ParsesNicsAndRate) {
  auto n = parse_network("8x400G");
  EXPECT_EQ(n.nics_per_node, 8);
  EXPECT_DOUBLE_EQ(n.nic_Bps, 50e9);
  EXPECT_EQ(n.kind, "InfiniBand");
  n = parse_network("4x200Gb/s RoCE");
  EXPECT_EQ(n.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(n.nic_Bps, 25e9);
  EXPECT_EQ(n.kind, "RoCE");
  EXPECT_THROW(parse_network("400G"), std::invalid_argument);
  EXPECT_THROW(parse_network("8x50GB/s"), std::invalid_argument);
  EXPECT_THROW(parse_network("8x400G token-ring"), std::invalid_argument);
}

}  // namespace
}  // namespace servelab::hardware

namespace servelab::hardware {
namespace {

// B300 is one row (gpus.json) with its figures from NVIDIA's AIConfigurator system spec
// (aic-ops/b300_sxm.yaml), found by the name the collector recorded for it.
TEST(GpuTable, B300IsOneDataRow) {
  const auto& b300 = gpu_by_name("NVIDIA B300 SXM6 AC");
  EXPECT_EQ(b300.name, "B300");
  EXPECT_EQ(b300.generation, Generation::kBlackwell);
  EXPECT_EQ(b300.compute_capability, 103);
  EXPECT_DOUBLE_EQ(b300.memory_bytes, 275040.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(b300.hbm_bandwidth_Bps, 7.75e12);
  EXPECT_DOUBLE_EQ(b300.fp4_flops, 14000e12);
  EXPECT_TRUE(b300.modelled);
  EXPECT_EQ(parse_cluster("8xB300").total_gpus(), 8);
}

std::string table_error(const std::string& json) {
  try {
    parse_gpu_table(json);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

// A row that is not self-contained, unsourced or ambiguous is refused with its row and field named.
TEST(GpuTable, BadRowsAreRefusedNamingTheField) {
  const std::string row =
      R"({"name":"X1","aliases":["X-1"],"vendor":"NVIDIA","generation":"hopper","compute_capability":90,"sm_count":1,)"
      R"("memory_mib":1024,"hbm_bandwidth_TBps":1,"l2_mib":0,"bf16_tflops":100,"fp8_tflops":0,"fp4_tflops":0,)"
      R"("int8_tops":0,"intra_node_link":"NVSwitch","link_GBps":100,"allreduce_busbw_GBps":0,"pcie_GBps":0,)"
      R"("max_gpus_per_node":8,"tdp_watts":0,"modelled":true,"sources":{"compute_capability":"a","sm_count":"a",)"
      R"("memory_mib":"a","hbm_bandwidth_TBps":"a","bf16_tflops":"a","link_GBps":"a","max_gpus_per_node":"a"}})";
  auto table = [](const std::string& rows) { return R"({"gpus":[)" + rows + "]}"; };
  ASSERT_EQ(parse_gpu_table(table(row)).size(), 1u);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string r = row;
    r.replace(r.find(from), from.size(), to);
    return r;
  };
  EXPECT_NE(
      table_error(table(with(R"("fp8_tflops":0)", R"("fp8_tflops":200)"))).find("fp8_tflops has no source"),
      std::string::npos);
  EXPECT_NE(table_error(table(with(R"("bf16_tflops":100)", R"("bf16_tflops":-1)")))
                .find("bf16_tflops must be >= 0"),
            std::string::npos);
  EXPECT_NE(table_error(table(with(R"("generation":"hopper")", R"("generation":"volta")")))
                .find("unknown value 'volta'"),
            std::string::npos);
  EXPECT_NE(table_error(table(with(R"("modelled":true)", R"("modelled":false)"))).find("unsupported_reason"),
            std::string::npos);
  EXPECT_NE(table_error(table(row + "," + with(R"("name":"X1")", R"("name":"X2")")))
                .find("'X-1' of X2 is already a name of X1"),
            std::string::npos);
  EXPECT_NE(
      table_error(table(with(R"("memory_mib":1024,)", ""))).find("row 0 (X1): field memory_mib missing"),
      std::string::npos);
}

}  // namespace
}  // namespace servelab::hardware
