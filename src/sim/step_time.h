// servelab/sim: time of one engine forward step from first principles, per operator class:
// max(compute / (peak * efficiency), memory traffic / (HBM bandwidth * efficiency)) summed over layers,
// plus NVLink collectives and CPU / kernel-launch overhead.
#pragma once

#include <string>
#include <vector>

#include "sim/hardware.h"
#include "sim/memory_plan.h"
#include "sim/model_config.h"

namespace servelab::sim {

/// Efficiency factors of one engine (fitted by scripts/calibrate_sim.py, stored in src/sim/calibration.json).
/// Fractions are of the datasheet peak; times in ms / us.
struct Calibration {
  double gemm_efficiency = 0.55;      ///< FP8 block-scaled GEMMs (DeepGEMM) / dense FP8 peak
  double gemm_no_deepgemm_ratio = 0.9;///< GEMM efficiency multiplier when DeepGEMM is off (CUTLASS/Triton)
  double attention_efficiency = 0.35; ///< sparse/dense MLA attention kernels / dense BF16 peak
  double memory_efficiency = 0.8;     ///< achieved / datasheet HBM bandwidth (aiconfigurator 0.8)
  double comm_efficiency = 0.7;       ///< achieved / datasheet NVLink bandwidth per direction
  double collective_latency_us = 10;  ///< fixed latency per collective (aiconfigurator P2P 10 us)
  double cpu_step_ms = 2.0;           ///< scheduler + input preparation + sampling per step (CPU)
  double cpu_per_request_us = 10.0;   ///< per running request per step (bookkeeping, detokenize, stream)
  double launch_overhead_ms = 5.0;    ///< extra kernel-launch time of a step run without a CUDA graph
  double eager_per_request_us = 20.0; ///< per request in a step run without a CUDA graph (per-request
                                      ///< attention metadata and launches that a graph replay avoids)
  double mtp_acceptance = 0.85;       ///< P(draft token accepted); DeepSeek-V3 report: 85-90% second token
  double moe_tp_efficiency_ratio = 1.0;///< MoE GEMM efficiency multiplier when experts are TP-sliced
                                      ///< (intermediate 2048/moe_group wide per GPU) instead of whole (EP)
};

/// The calibration of `engine` ("vllm", "sglang", "trtllm") from the embedded calibration.json.
/// Throws std::runtime_error if the embedded file lacks the engine.
Calibration calibration_for(const std::string& engine);

/// The embedded calibration.json text.
const std::string& calibration_json();

/// What one DP rank runs in one step. Token counts in tokens; "pairs" = sum over query tokens of keys.
struct RankBatch {
  int decode_requests = 0;        ///< requests generating (each contributes 1 + spec query tokens)
  int batch_requests = 0;         ///< requests in the step (decode + prefill chunks)
  int query_tokens = 0;           ///< all query tokens of the rank (decode + prefill)
  int prefill_tokens = 0;         ///< prompt tokens computed this step
  int sampled_tokens = 0;         ///< rows through the LM head
  double sparse_pairs = 0;        ///< (query, key) pairs of sparse MLA (MQA mode, keys per backend rule)
  double dense_pairs = 0;         ///< (query, key) pairs of dense MHA prefill (short prompts)
  double indexer_pairs = 0;       ///< (query, context token) pairs scored by the indexer
  double kv_read_bytes = 0;       ///< KV bytes read by decode attention + indexer on one GPU of the rank
  int sparse_head_pad = 0;        ///< sparse kernel pads the rank's query heads up to this many (0 = none)
};

/// Per operator class times of one step (seconds) and their sum.
struct StepTime {
  double attn_proj_s = 0, dense_s = 0, moe_s = 0, attention_s = 0, indexer_s = 0, comm_s = 0, overhead_s = 0;
  double total_s = 0;
};

/// Everything the step model needs that does not change step to step.
struct StepContext {
  ModelConfig model;
  Hardware gpu;
  Parallelism par;
  Calibration cal;
  bool deep_gemm = true;
  bool overlap_scheduler = false;
  int spec_tokens = 0;
};

/// Time of one lock-stepped forward over all DP ranks: rank-local parts (attention, projections) take
/// the slowest rank; the MoE and dense parts see the tokens of all ranks (gathered) when dp_ranks > 1.
/// `running_requests` = most running requests on one rank (CPU cost); `graph` = the step runs as a
/// CUDA graph. Thread-safety: pure.
StepTime step_time(const StepContext& ctx, const RankBatch* ranks, int num_ranks, int running_requests,
                   bool graph);

/// Number of tunable fields of Calibration and their names, in the order of calibration_vector().
inline constexpr int kCalibrationFields = 12;
extern const char* const kCalibrationFieldNames[kCalibrationFields];
/// Calibration <-> flat vector (for the fit).
std::vector<double> calibration_vector(const Calibration& c);
Calibration calibration_from_vector(const std::vector<double>& v);

}  // namespace servelab::sim
