// A ResolvedLaunch built by hand for the twin's hand-calculation tests: every policy field explicit, so a
// test's arithmetic does not depend on the engines' default tables (tests/engines checks those).
#pragma once

#include <string>

#include "servelab/common/paths.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace servelab::sim::testing {

/// The model config of the validation corpus by file name (shared/data/model-configs/<name>.json).
inline model::ModelSpec corpus_model(const std::string& name) {
  return model::load_config(common::data_dir() / "model-configs" / (name + ".json"));
}

/// A vLLM-like launch of `model` with `tp` x `pp` GPUs: memory of total x 0.9 minus weights, a profile run
/// of 8192 tokens and 256 sequences, no reserve, refused when the KV pool cannot hold one request; BF16 KV;
/// block 16; FA3/cuBLAS kernels; graphs for decode up to 512 tokens (sizes in tokens).
inline engines::ResolvedLaunch test_launch(const model::ModelSpec& m, const hardware::ClusterSpec& c, int tp,
                                           int pp = 1) {
  engines::ResolvedLaunch l;
  l.config.kind = engines::EngineKind::kVllm;
  l.config.tp = tp;
  l.config.pp = pp;
  l.version = "test";
  l.version_family = "vllm-test";
  l.model = m;
  auto& p = l.layout;
  p.tp = tp;
  p.pp = pp;
  p.gpus = tp * pp;
  p.nodes = (p.gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  p.attn_tp = p.dense_tp = p.moe_tp = tp;
  p.tp_crosses_nodes = tp > c.gpus_per_node;
  p.pp_crosses_nodes = pp > 1 && p.gpus > c.gpus_per_node;
  l.memory.basis = engines::MemoryPolicy::Basis::kOfTotal;
  l.memory.fraction = 0.9;
  l.memory.profile_activations = true;
  l.memory.profile_tokens = 8192;
  l.memory.profile_sequences = 256;
  l.memory.reserved_bytes = 0;
  l.memory.kv_pool_holds_one_request = true;
  l.scheduler.kind = engines::SchedulerPolicy::Kind::kVllmV1;
  l.scheduler.max_num_seqs = 256;
  l.scheduler.token_budget = 8192;
  l.execution.graphs = engines::GraphMode::kFullAndPiecewise;
  l.execution.graph_max_batch = 512;
  l.execution.graph_batch_in_tokens = true;
  l.execution.attention = l.execution.decode_attention = engines::AttentionKernel::kFlashAttn3;
  l.execution.gemm = l.execution.attention_gemm = engines::GemmKernel::kCublasBf16;
  l.execution.moe = engines::MoeKernel::kTritonFused;
  l.max_model_len = m.max_position_embeddings;
  l.kv_dtype = model::DType::kBf16;
  l.block_size = 16;
  return l;
}

}  // namespace servelab::sim::testing
