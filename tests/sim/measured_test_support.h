// Shared by the step-model tests that read the measured operator tables (make deps' op store).
#pragma once

#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/ops/op_store.h"
#include "servelab/sim/sim.h"
#include "sim/sim_detail.h"
#include "test_launch.h"

namespace servelab::sim::testing {

/// One request decoding at KV history `context` (its one query token sampled).
inline detail::RankLoad decode_one(double context) {
  detail::RankLoad r;
  r.requests = r.decode_requests = r.query_tokens = r.sampled_tokens = 1;
  r.decode_pairs[0] = context;
  r.decode_kv_tokens[0] = context;
  return r;
}

// One request prefilling a `tokens`-token prompt from scratch (causal pairs tokens^2 / 2), its first token
// sampled.
inline detail::RankLoad prefill_one(double tokens) {
  detail::RankLoad r;
  r.requests = r.prefill_requests = r.sampled_tokens = 1;
  r.query_tokens = r.prefill_tokens = static_cast<int>(tokens);
  r.prefill_pairs[0] = tokens * tokens / 2;
  r.prefill_max_context = static_cast<int>(tokens);
  return r;
}

// The measured tables of `make deps` switched on for one test (use_measured_operators), off again after it.
struct MeasuredOperators {
  ops::OpStore store = ops::OpStore::open(ops::OpStore::default_dir());
  MeasuredOperators() { use_measured_operators(store.dir()); }
  ~MeasuredOperators() { use_measured_operators({}); }
  MeasuredOperators(const MeasuredOperators&) = delete;
  MeasuredOperators& operator=(const MeasuredOperators&) = delete;
};

// A TP8 SGLang launch of `m` at `version` whose linears (attention projections included) run DeepGEMM's
// block-scaled FP8 GEMM, as SGLang's default on an FP8-block checkpoint.
inline engines::ResolvedLaunch sglang_tp8_deepgemm(const model::ModelSpec& m, const hardware::ClusterSpec& c,
                                                   const char* version) {
  auto l = testing::test_launch(m, c, 8);
  l.config.kind = engines::EngineKind::kSglang;
  l.version = version;
  l.execution.gemm = l.execution.attention_gemm = engines::GemmKernel::kFp8BlockDeepGemm;
  return l;
}

}  // namespace servelab::sim::testing
