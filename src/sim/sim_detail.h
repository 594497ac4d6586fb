// servelab/sim (private): pipeline stages, per-stage weights, and the step model — what one forward
// step of a resolved launch costs for a given batch on every DP rank.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/calibration.h"
#include "sim/measured_ops.h"
#include "sim/physics.h"

namespace servelab::sim::detail {

/// Layers [first, end) of one pipeline stage.
struct StageRange {
  int first = 0;
  int end = 0;
};

/// vLLM get_pp_indices: layers split evenly over `pp` stages, the remainder going one each to the first
/// stages [recalled, unverified: VLLM_PP_LAYER_PARTITION unset]. SGLang and TRT-LLM split the same way.
std::vector<StageRange> pipeline_stages(const model::ModelSpec& m, int pp);

/// Layers of `g` inside `stage`.
int layers_in_stage(const model::LayerGroup& g, const StageRange& stage);

/// Weights held by one GPU of a stage (bytes).
struct StageWeights {
  double total = 0;                     ///< everything on the GPU, draft included
  double draft = 0;                     ///< MTP layers / EAGLE draft model
  double draft_kv_bytes_per_token = 0;  ///< KV of the draft layers per token
};

/// One routed expert's weight shape on one rank: `n` outputs x `k` inputs of the expert linear `l`
/// TP-sliced over `moe_tp` (w13 column-split on its gate and up halves, w2 row-split), each side padded as
/// the engine allocates it (ExecutionPolicy::expert_pad_hidden / expert_pad_intermediate; 1 = unpadded).
/// Example: gpt-oss w13 (2880 -> 2 x 2880) at pads 256 / 128 and moe_tp 1 is 5888 x 3072.
struct ExpertShape {
  double n = 0;
  double k = 0;
};
ExpertShape expert_shape(const model::Linear& l, int moe_tp, const engines::ExecutionPolicy& ex);

/// HBM bytes per query token of one layer's elementwise kernels, which no operator table measures (the
/// aic-ops README: "norms, activations, residual adds ... stay physics"): the two fused residual-add +
/// RMSNorm passes, RoPE on q and k and the KV-cache write (GQA layers, heads after attention TP), and the
/// SwiGLU of the dense FFN or shared experts (at dense TP). Bytes; split into the attention side and the
/// FFN side of the layer.
struct ElementwiseBytes {
  double attention = 0, ffn = 0;
};
ElementwiseBytes elementwise_bytes(const model::Layer& l, int hidden, const engines::ParallelLayout& p,
                                   model::DType kv_dtype);

/// Per-GPU weights of stage `stage` (first: + embedding; last: + LM head, + MTP / draft model when the
/// launch speculates). Each linear at its WeightFormat, sharded by model::shard_params over attention TP
/// (attention), dense TP (dense FFN, shared experts, LM head, vocab-parallel embedding), and routed
/// experts over moe_ep (whole experts) x moe_tp (slices); routers replicated in BF16.
StageWeights stage_weights(const engines::ResolvedLaunch& launch, const StageRange& stage, bool first,
                           bool last);

/// How many attention "key patterns" a model can have (full causal, a window or a chunk, a top-k, linear).
inline constexpr int kMaxPatterns = 4;

/// The keys a query of a layer class attends to.
struct AttentionPattern {
  double key_limit = 0;  ///< keys per query are min(position, key_limit); +inf = full causal
  bool linear = false;   ///< linear attention: cost per token, no keys
  /// Chunked local attention (model::GqaAttention::chunk, tokens; 0 = none): keys per query are
  /// ((position - 1) mod chunk) + 1, and key_limit is +inf.
  double chunk = 0;
};

/// (query, key) pairs of the queries at 1-based positions s+1 .. s+n under `p` (not linear): with
/// key_limit k, sum of min(pos, k); with a chunk C, sum of ((pos - 1) mod C) + 1.
double pattern_prefill_pairs(const AttentionPattern& p, double s, double n);

/// Keys a decode query at context `c` (its 1-based position) reads under `p`: min(c, key_limit), or
/// ((c - 1) mod chunk) + 1.
double pattern_decode_keys(const AttentionPattern& p, double c);

/// What one DP rank runs in one step, as the scheduler accounted it. Pairs are (query, key) pairs summed
/// over the rank's queries, per key pattern of the model (pattern 0 is always full causal).
struct RankLoad {
  int requests = 0;          ///< requests in the step
  int decode_requests = 0;   ///< requests generating (1 + draft tokens each)
  int prefill_requests = 0;  ///< requests with a prefill chunk
  int query_tokens = 0;      ///< all query tokens
  int prefill_tokens = 0;    ///< prompt tokens computed
  int sampled_tokens = 0;    ///< rows through the LM head
  std::array<double, kMaxPatterns> prefill_pairs{};
  std::array<double, kMaxPatterns> decode_pairs{};
  std::array<double, kMaxPatterns> decode_kv_tokens{};  ///< KV tokens read by decode queries
  double indexer_prefill_pairs = 0;    ///< (query, context) pairs the DSA indexer scores in prefill
  double dsa_dense_prefill_pairs = 0;  ///< prefill pairs of DSA layers run as dense MHA (short prompts)
  double prefill_cached = 0;           ///< tokens cached before this step's prefill chunks, summed over them
  int prefill_max_context = 0;         ///< the furthest prompt position a prefill chunk reaches
};

/// The cost of one step, split into what the fitted parameters scale and what they do not. Seconds.
struct StepCost {
  double gpu_s = 0;  ///< roofline time of the kernels
  /// The part of gpu_s spent in memory-bound dense GEMMs (weight streaming through cuBLAS / Marlin at small
  /// M, the LM head and the sampler's passes): it runs at the measured bandwidth fraction of those kernels
  /// (gpu-kernel-facts.md §2.4: 80-90% of HBM) whatever the engine, so it is not divided by kernel_scale.
  /// So is a roofline MoE bound by its weight read: its rate and fixed costs come from the measured moe_perf
  /// tables (physics.h moe_time_s), and so does every measured operator's time. Attention and indexer
  /// kernels are the engine's own (FlashMLA, FA3 split-KV) and their achieved bandwidth at small batch
  /// varies with it: they stay in the scaled part.
  double memory_s = 0;
  double comm_s = 0;   ///< collectives
  double floor_s = 0;  ///< per-kernel launch-to-launch gaps (kernel_floor_s), graphed or eager
  /// Kernels launched eagerly from the CPU this step (each costs Calibration::eager_launch_us).
  double launch_kernels = 0;
  /// The layers replayed torch.compile piecewise CUDA graphs and attention launched eagerly (vLLM's
  /// PIECEWISE mode, or a step above FULL_AND_PIECEWISE's full-graph sizes).
  bool piecewise_graphs = false;
  int running = 0;       ///< requests the CPU handles this step
  bool overlap = false;  ///< CPU work of the next step overlaps this one (async / overlap scheduler)
  /// Streamed chunks a serial stage beside the engine handles for this step's outputs (each costs
  /// Calibration::api_stream_request_us): the decoding requests / (api_server_count x stream_interval) when
  /// ExecutionPolicy::api_stream_stage, else 0; the step takes at least their time.
  double api_stream_chunks = 0;
  // Breakdown (unscaled roofline, for TwinView).
  double attention_s = 0, linear_s = 0, moe_s = 0, lm_head_s = 0, draft_s = 0;
  double linear_attention_s = 0;  ///< linear-attention cores (gated DeltaNet), apart from attention_s
  /// Elementwise kernels no operator table measures (elementwise_bytes; measured operators only).
  double elementwise_s = 0;
};

/// Step time (s) of `c` under calibration `cal`:
///   gpu  = graphed part: (gpu_s - memory_s) / kernel_scale + memory_s + comm_s + floor_s, max'ed with
///          launch_kernels x eager_launch_us for the eager part
///   cpu  = cpu_step_ms + cpu_request_us x running
///   step = max(gpu + (overlap ? max(0, cpu - gpu) : cpu), api_stream_chunks x api_stream_request_us).
/// The one formula of the step time: step_seconds and replay() (trace.cc, per step of every re-timed trace,
/// hence inline) both evaluate it. `kernel_s` = gpu_s - memory_s, the part kernel_scale divides.
inline double step_seconds_of(double kernel_s, double memory_s, double comm_s, double floor_s,
                              double launch_kernels, int running, bool overlap, double api_stream_chunks,
                              const Calibration& cal) {
  const double graphed = kernel_s / cal.kernel_scale + memory_s + comm_s + floor_s;
  const double gpu = std::max(graphed, launch_kernels * cal.eager_launch_us * 1e-6);
  const double cpu = cal.cpu_step_ms * 1e-3 + cal.cpu_request_us * 1e-6 * running;
  const double step = gpu + (overlap ? std::max(0.0, cpu - gpu) : cpu);
  return std::max(step, api_stream_chunks * cal.api_stream_request_us * 1e-6);
}
inline double step_seconds(const StepCost& c, const Calibration& cal) {
  return step_seconds_of(c.gpu_s - c.memory_s, c.memory_s, c.comm_s, c.floor_s, c.launch_kernels, c.running,
                         c.overlap, c.api_stream_chunks, cal);
}

/// The cost model of one resolved launch on one cluster. Built once per simulation (precomputes every
/// layer class's sharded GEMM shapes, bytes and per-pair coefficients). Thread-safety: const methods are
/// safe to call concurrently.
class StepModel {
 public:
  StepModel(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster);

  /// Key patterns of the model (index = RankLoad pattern index) and the pattern of each layer group.
  const std::vector<AttentionPattern>& patterns() const { return patterns_; }
  /// Whether the prefill / decode kernel visits every top-k slot of DSA layers (FlashMLA sparse): their
  /// key count is then index_topk whatever the context.
  bool prefill_fixed_topk() const { return prefill_fixed_topk_; }
  bool decode_fixed_topk() const { return decode_fixed_topk_; }
  /// Index of the DSA top-k pattern, or -1.
  int topk_pattern() const { return topk_pattern_; }

  /// Cost of one lock-stepped step over all DP ranks (loads.size() == dp_ranks): rank-local parts take
  /// the slowest rank, gathered parts (MoE / dense FFN under DP-attention) see the tokens of all ranks.
  /// With pipeline parallelism this is the cost of the slowest stage for this micro-batch (`stage_only`)
  /// or of the whole pipeline. `graph`: the step replays CUDA graphs (else eager / piecewise per the
  /// execution policy). `spec_tokens`: draft tokens proposed per decode request this step.
  StepCost cost(std::span<const RankLoad> loads, int running, bool graph, bool stage_only) const;

  /// True when a step with these loads replays a CUDA graph under the launch's rule.
  bool graphed(std::span<const RankLoad> loads) const;

  /// With measured operators (use_measured_operators): per operator kind, the table and release it came
  /// from, or why it stayed the roofline ("MoE: roofline (no moe_perf row for ...)"); empty without.
  const std::vector<std::string>& measured_notes() const { return measured_notes_; }
  /// Measured-table lookups made by cost() so far, and how many of them lay outside the measured grid
  /// (answered by scaling the nearest measured point, ops::OpAxis::beyond).
  long long measured_lookups() const { return lookups_.total.load(std::memory_order_relaxed); }
  long long extrapolated_lookups() const { return lookups_.outside.load(std::memory_order_relaxed); }

 private:
  struct Gemm {
    double n = 0, k = 0, weight_bytes = 0;  ///< per-GPU shape and bytes
    double peak = 0;
    KernelEfficiency eff;
    /// Measured latency along M (use_measured_operators), or null: the roofline.
    std::shared_ptr<const ops::OpCurve> measured;
    /// For a quantized GEMM (FP8, block-scaled FP8): the same table's BF16 latency of the same shape along
    /// M, the ceiling of `measured` (StepModel::gemm_s); null for BF16 or without such rows.
    std::shared_ptr<const ops::OpCurve> measured_bf16;
  };
  /// One GPU's routed experts at a MoE layout: the two expert GEMMs' per-GPU shapes, experts on the GPU, EP.
  struct MoeLayout {
    Gemm up, down;
    double experts_local = 0;
    int tp = 1, ep = 1;
  };
  struct LayerClass {
    int count = 0;    ///< layers of this class in the stage
    int pattern = 0;  ///< RankLoad pattern index
    bool linear_attention = false;
    bool mla = false, dsa = false, indexer = false;
    std::vector<Gemm> attn_gemms;   ///< at attention TP, M = rank tokens
    std::vector<Gemm> dense_gemms;  ///< dense FFN or shared experts, at dense TP
    bool moe = false;
    double top_k = 0, experts = 0;
    MoeLayout moe_own;  ///< the routed experts at the launch's MoE TP x EP (one expert slice each)
    double router_k = 0, router_n = 0;
    double pair_flops_dense = 0, pair_flops_absorbed = 0, indexer_pair_flops = 0;
    double kv_bytes = 0;          ///< per token of this layer on one GPU (main cache)
    double indexer_kv_bytes = 0;  ///< indexer key cache per token
    double state_bytes = 0;       ///< linear attention state per request
    double linear_flops_per_token = 0;
    double prefill_pad = 1, decode_pad = 1;  ///< FlashMLA sparse pads a rank's heads (SM90: to 64)
    int kernels = 12;                        ///< kernels per layer (floors / eager launches)
    /// Measured attention core (GQA layers, use_measured_operators): decode (batch x KV length) and
    /// prefill (batch x prompt length); null where nothing was measured (the roofline stays).
    std::shared_ptr<const OpSurface> decode_attn, prefill_attn;
    /// Measured DSA attention block (measured_dsa_module): projections, indexer and sparse core together;
    /// null, or a phase without a surface: the roofline (projections, core and indexer apart).
    std::shared_ptr<const DsaModule> dsa_module;
    /// The block's projection weights read at 80% of HBM (s). A lookup less its surface's fixed part
    /// (OpSurface::fixed_ms: the least time the rows measured, the launch gaps and host work of the block's
    /// ~30 kernels that the step model counts apart, per-kernel floors and eager launches) lost this read
    /// with it: it is added back, once a step.
    double dsa_stream_s = 0;
    double dsa_topk = 0;  ///< index_topk: prompts within it take the dense-MHA prefill rows
    /// Measured gated-DeltaNet kernels (linear-attention layers, measured_gdn); null: the roofline.
    std::shared_ptr<const GdnKernels> gdn;
    /// The launch's recurrent-state bytes over the BF16 state the gdn_perf rows were timed with (SGLang keeps
    /// it in FP32: 2): the decode rows' recurrent kernel scales by it (it streams the state).
    double gdn_state_scale = 1;
    /// Measured routed experts along the tokens entering the layer; null: the roofline.
    std::shared_ptr<const ops::OpCurve> moe_measured;
    /// moe_measured is the sibling GPU's row (sibling_op_source): rescaled by the two GPUs' rooflines.
    bool moe_from_sibling = false;
    /// moe_measured is the row of another MoE TP x EP (nearest_moe_layout), this its layout: rescaled by
    /// the ratio of the launch's layout's roofline to this one's.
    std::optional<MoeLayout> moe_stand_in;
    /// With measured operators: HBM bytes per query token of the elementwise kernels no table measures
    /// (elementwise_bytes), on the attention side (rank tokens) and the FFN side (FFN tokens); 0 without.
    double elementwise_attn_bytes = 0, elementwise_ffn_bytes = 0;
  };
  struct Stage {
    std::vector<LayerClass> classes;
    bool first = false, last = false;
    /// Seconds each step spends reading this stage's CPU-offloaded weights over PCIe
    /// (MemoryPolicy::cpu_offload_bytes, at most the stage's weights, at 80% of the GPU's host link).
    double offload_s = 0;
  };

  /// Time (s) of `g` at `m` rows: its measured curve when there is one (measured_s), else gemm_time_s (its
  /// memory-bound part added to `*unscaled`).
  double gemm_s(const Gemm& g, double m, double* unscaled) const;
  /// A measured kernel time `t` (s), all of it added to `*unscaled`: a measurement is not divided by the
  /// kernel scale (which stays with the roofline's recalled efficiencies). Returns t. Held out, dividing the
  /// compute part of measurements by the kernel scale too was worse (README, "measured operators").
  static double measured_s(double t, double* unscaled) {
    if (unscaled) *unscaled += t;
    return t;
  }
  /// The measured attention core of one rank's load (s), or -1 when `c` has no measured table for a part
  /// the load runs (decode or prefill): the caller keeps the roofline then.
  double measured_attention_s(const LayerClass& c, const RankLoad& r) const;
  /// The measured DSA block of one rank's load (s), or -1 when `c` has no surface for a phase the load
  /// runs: each phase's work (its rows less their surface's fixed part) and the projection weights' read
  /// (LayerClass::dsa_stream_s), once a step. Decode: the block at (decode rows, mean KV history). Prefill:
  /// dsa_prefill_work_s, on the dense-MHA rows while every chunk ends within index_topk.
  double measured_dsa_s(const LayerClass& c, const RankLoad& r) const;
  /// The work of a prefill block of `r`'s chunks from `s` (s, less the surfaces' fixed parts): at
  /// (requests, mean chunk, mean cached prefix), linear between the measured prefixes around it whose grids
  /// hold the shape; past them (or with none holding it) a prefix's rows split into per-token and per-pair
  /// work (split_prefill_s), `*outside` set.
  double dsa_prefill_work_s(const PrefixedSurfaces& s, const RankLoad& r, bool* outside) const;
  /// The block of `r`'s chunks from rows measured at cached prefix `prefix` (s): its fixed part plus
  /// P x tokens plus A x (query, key) pairs, P and A solved from the rows at the mean chunk and at the chunk
  /// length whose pairs at `prefix` equal the step's mean (a longer prefix or uneven chunks add pairs, not
  /// projection work).
  double split_prefill_s(const OpSurface& s, double prefix, const RankLoad& r, bool* outside) const;
  /// Sets `c`'s measured DSA block (LayerClass::dsa_module, dsa_stream_s, dsa_topk) for its attention `mla`.
  void measure_dsa(LayerClass& c, const model::MlaAttention& mla);
  /// One rank's attention side of a layer (s): projections (`*proj`) and core; the part the kernel scale
  /// must not divide added to `*unscaled`.
  double rank_attention_s(const LayerClass& c, const RankLoad& r, double* proj, double* unscaled) const;
  /// Sets `c`'s measured routed experts (LayerClass::moe_measured and how it was found): the launch's own
  /// row; for MXFP8 activations the BF16-activation row; the sibling GPU's row (sibling_op_source); the
  /// nearest measured layout's (nearest_moe_layout); else none (the roofline).
  void measure_moe(LayerClass& c, const model::Layer& layer, const model::MoeFfn& moe);
  /// `layer`'s routed experts on one GPU at MoE TP `tp` x EP `ep`: the expert GEMMs' shapes (the engine's
  /// padding, ExecutionPolicy::expert_pad_*), their bytes at the experts' format, the experts on the GPU.
  MoeLayout expert_layout(const model::Layer& layer, int tp, int ep) const;
  /// One layer's routed experts and router (s) at `tokens` entering it on the rank: the measured row
  /// (rescaled when borrowed: LayerClass::moe_from_sibling / moe_stand_in), else the roofline; the part the
  /// kernel scale must not divide is added to `*unscaled`.
  double moe_s(const LayerClass& c, double tokens, double* unscaled) const;
  /// The gated-DeltaNet core of one rank's load (s): decode and prefill each from the measured kernels
  /// when `c.gdn` has that phase (all of it added to `*unscaled`, as measured_s), else the roofline at
  /// linear_eff_ (prefill FLOPs vs each request's state read + write, the slower). Step_model_linear.cc.
  double linear_attention_s(const LayerClass& c, const RankLoad& r, double* unscaled) const;
  double layer_time(const LayerClass& c, std::span<const RankLoad> loads, StepCost& out) const;
  double stage_time(const Stage& s, std::span<const RankLoad> loads, StepCost& out) const;

  engines::ResolvedLaunch launch_;
  hardware::ClusterSpec cluster_;
  std::vector<AttentionPattern> patterns_;
  std::vector<Stage> stages_;
  std::optional<LayerClass> draft_;
  bool prefill_fixed_topk_ = false, decode_fixed_topk_ = false;
  int topk_pattern_ = -1;
  KernelEfficiency prefill_attn_eff_, decode_attn_eff_, moe_eff_;
  KernelEfficiency moe_small_eff_;  ///< MoE kernel of steps below ExecutionPolicy::moe_small_below tokens
  KernelEfficiency linear_eff_;     ///< gated-DeltaNet kernels (linear_attention_efficiency)
  double moe_peak_ = 0;
  double moe_small_peak_ = 0;
  Gemm lm_head_;
  CollectiveLink attn_link_, dense_link_, moe_link_, pp_link_;
  /// Measured all-reduce along the message size (elements) of the attention TP group, the dense TP group
  /// and the MoE TP x EP group when inside one node (measured_allreduce_curve), or null: the roofline.
  std::shared_ptr<const ops::OpCurve> attn_allreduce_, dense_allreduce_, moe_allreduce_;
  /// One BF16 all-reduce of `elements` per GPU over `n` GPUs: the measured curve when there is one, else
  /// allreduce_s over `link`. Seconds.
  double allreduce_time(double elements, int n, const CollectiveLink& link,
                        const std::shared_ptr<const ops::OpCurve>& measured) const;
  std::shared_ptr<const ops::OpStore> ops_;  ///< measured tables (use_measured_operators), or null
  std::optional<OpSource> op_source_;        ///< where this launch's kernels were measured
  std::optional<OpSource> sibling_source_;   ///< the same chip with other memory (sibling_op_source)
  hardware::GpuSpec sibling_gpu_;            ///< its datasheet row
  /// The GPU whose tables op_source_ reads when the launch's own GPU has none of its release line
  /// (stand_in_op_source): its GEMM and MoE times are rescaled by the two GPUs' rooflines, every lookup
  /// counted as extrapolated. nullopt when op_source_ is the launch's own GPU's.
  std::optional<hardware::GpuSpec> stand_in_gpu_;
  std::vector<std::string> measured_notes_;  ///< see measured_notes()
  bool moe_bf16_stand_in_ = false;           ///< MXFP8-activation MoE timed by BF16-activation rows
  void describe_measured();
  /// The twin's note on the DSA layer kinds: how many of `classes` have a measured block (`measured`, those
  /// classes), from which tables, checkpoints and kernels.
  std::string dsa_note(int classes, const std::vector<const LayerClass*>& measured) const;
  /// Counters of measured lookups. cost() is const and thread-safe, so they are relaxed atomics; copying
  /// a StepModel copies their values.
  struct LookupCounter {
    mutable std::atomic<long long> total{0}, outside{0};
    bool all_outside = false;  ///< every lookup reads another GPU's tables (stand_in_gpu_)
    LookupCounter() = default;
    LookupCounter(const LookupCounter& o)
        : total(o.total.load()), outside(o.outside.load()), all_outside(o.all_outside) {}
    LookupCounter& operator=(const LookupCounter& o) {
      total = o.total.load(), outside = o.outside.load(), all_outside = o.all_outside;
      return *this;
    }
    void add(bool out) const {
      total.fetch_add(1, std::memory_order_relaxed);
      if (out || all_outside) outside.fetch_add(1, std::memory_order_relaxed);
    }
  } lookups_;
  /// `curve` at `q` in seconds, counted in lookups_ (as outside the grid when `borrowed`: another GPU's or
  /// layout's row, rescaled).
  double measured_at(const ops::OpCurve& curve, double q, bool borrowed = false) const;
};

}  // namespace servelab::sim::detail
