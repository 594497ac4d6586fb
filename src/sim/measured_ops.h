// servelab/sim (private): where the step model takes kernel times from measured operator tables (the ops
// module: NVIDIA AIConfigurator's silicon data) instead of the roofline — the GPU, engine and release of a
// launch matched to a measured table, and one latency-vs-tokens curve per GEMM shape.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/ops/op_store.h"

namespace servelab::sim::detail {

/// The store set by use_measured_operators (sim.h), or nullptr: roofline only.
std::shared_ptr<const ops::OpStore> measured_op_store();

/// Where a launch's kernels were measured: the store's GPU (systems name, matched through the GPU names
/// the collector recorded, hardware::gpu_by_name), the engine and the release used.
struct OpSource {
  std::string gpu;             ///< "h100_sxm"
  std::string backend;         ///< "vllm", "sglang", "trtllm"
  std::string release;         ///< measured release used for the launch's GEMMs
  bool exact_release = false;  ///< the launch's own release was measured
  std::string launch_release;  ///< the launch's own release (engines::ResolvedLaunch::version)
};

/// The release of `table` used for a launch of `src`: the newest measured one not newer than the launch's,
/// else the oldest when it is of the launch's release line (same first two numbers; as op_source picks the
/// GEMM release), among those the data check keeps
/// (skipped_releases); empty when no release of this GPU and engine
/// measured `table`.
std::string table_release(const ops::OpStore& store, const OpSource& src, std::string_view table);

/// The data check of measured tables (op_release_check.cc): a release's table of one operator that is
/// inconsistent with its siblings is not used. Two tables are compared by the median, over the rows both
/// measured (same key and axis values), of the ratio of their latencies.
/// A release's table is an outlier when it lies more than kReleaseSpread times away (either way) from the
/// median of the other releases of the same GPU and engine, and, where the same release was measured on
/// other GPUs, also from those beyond their datasheet ratio; and at least two other tables took part (with
/// one, which of the two is wrong cannot be told). A real change of the engine's kernel shows on every GPU
/// and so is kept; a faulty measurement shows on one.
///
/// kReleaseSpread = 4 [physics bound, not fitted]: a production kernel of one operator reaches between
/// about a quarter of the GPU's datasheet bandwidth / FLOPs (a generic Triton kernel at small shapes) and
/// nearly all of it (a tuned CUTLASS / cuBLAS one), so two releases' kernels for the same shape on the same
/// GPU cannot be more than about 4x apart; beyond that one measurement is broken (a clock, a sync, a unit).
inline constexpr double kReleaseSpread = 4.0;

/// The verdict of the rule above on one release's table, from its latency ratios (this / other).
struct ReleaseVerdict {
  bool outlier = false;
  double same_gpu = 0;  ///< median ratio to the other releases of the same GPU and engine (0: none)
  double sibling = 0;  ///< median excess over the datasheet ratio to the same release on other GPUs (0: none)
};

/// The rule on ratios: `same_gpu` are this table's latency over each other release's of the same GPU and
/// engine; `sibling_excess` are its latency over the same release's on each other GPU, divided by the
/// ratio the datasheets allow (sibling_excess_of). Ratios that are not finite and positive are ignored.
ReleaseVerdict judge_release(std::vector<double> same_gpu, std::vector<double> sibling_excess);

/// How far the latency ratio `ratio` (this GPU's / a sibling's, same operator and release) lies outside
/// what the datasheets allow: between 1 (latency-bound shapes: launch and sync costs alike) and the
/// sibling's/this GPU's memory bandwidth or dense BF16 FLOPs ratios (hardware::GpuSpec); 1 inside.
double sibling_excess_of(double ratio, const hardware::GpuSpec& self, const hardware::GpuSpec& sibling);

/// The median, over the rows measured in both tables (equal values of every key and axis column both
/// have), of `a`'s latency over `b`'s; 0 when fewer than 3 rows are common.
double table_ratio(const ops::OpTable& a, const ops::OpTable& b);

/// The releases of `table` for `gpu` and `backend` that the data check leaves out, each with why (one
/// sentence naming the ratios and the tables compared). Memoised per store directory and table.
std::map<std::string, std::string> skipped_releases(const ops::OpStore& store, const std::string& gpu,
                                                    const std::string& backend, const std::string& table);

/// The release of `table` the unchecked lookup would take for the launch (newest not newer, else the
/// oldest of the launch's release line) when the data check left it out, with why; nullopt when it was not
/// left out.
std::optional<std::pair<std::string, std::string>> skipped_release(const ops::OpStore& store,
                                                                   const OpSource& src,
                                                                   std::string_view table);

/// Where the twin's notes say `table` came from: "<table> of <gpu> <engine> <release>", the launch's own
/// release when it differs, and the release the data check left out with why.
std::string table_note(const ops::OpStore& store, const OpSource& src, std::string_view table);

/// Latency over two axes of a measured table: one OpCurve along the inner axis at each measured value of
/// the outer one (attention: batch size outer; KV length or prompt length inner).
/// Thread-safety: immutable; safe to evaluate concurrently.
struct OpSurface {
  std::vector<double> outer;         ///< measured values of the outer axis, ascending (at least one)
  std::vector<ops::OpCurve> curves;  ///< latency along the inner axis at each `outer` value
  /// Where each curve's measurements end along the inner axis, when it was continued past them (dsa_grid);
  /// empty: every point of every curve was measured. A lookup beyond it lies outside the grid.
  std::vector<double> measured_end;
  /// The part (ms) of every latency that grows with neither axis (a module's launch gaps and host work); 0:
  /// all of it grows.
  double fixed_ms = 0;
  /// Latency (ms) at (o, i): linear in o between measured values; above the largest, fixed_ms plus the rest
  /// of the largest's latency scaled by o / largest (one more request costs what an average one did); below
  /// the smallest, the smallest's. With fixed_ms > 0, past a curve's last inner value fixed_ms plus its
  /// rest scaled by i / last; else the curve's own axis rule.
  /// `*outside` (if given) is set when (o, i) lies outside the measured grid.
  double at(double o, double i, bool* outside = nullptr) const;
};

/// One OpCurve along `inner` at each measured batch size of `table`'s rows matching `q` (batch outer), batch
/// sizes whose curve cannot be built left out; nullptr when none is left.
std::shared_ptr<const OpSurface> batch_surface(const ops::OpTable& table, ops::OpQuery q, const char* inner);

/// The KV-cache dtype as the attention tables name it ("bfloat16", "fp8").
const char* measured_kv_dtype(model::DType kv);

/// A GQA layer's attention kernel on one GPU, as the attention tables key it (heads after attention TP).
struct AttentionShape {
  double heads = 0;     ///< query heads on the GPU
  double kv_heads = 0;  ///< KV heads on the GPU (at least 1)
  double head_dim = 0;
  double window = 0;  ///< sliding window (0 = full causal)
  model::DType kv_dtype = model::DType::kBf16;
  /// The attention math runs in FP8 (Q, K and V in FP8): the table's `attn_dtype` fp8 rows, where a table
  /// measures both (TensorRT-LLM's and SGLang's context tables with an FP8 KV cache); else its bfloat16 rows.
  bool fp8_math = false;
};

/// Decode attention (`generation_attention_perf`: batch outer, KV length `step` inner) or prefill attention
/// (`context_attention_perf`: batch outer, prompt length `isl` inner) of `shape` from the source's tables;
/// nullptr when the table is missing or no row has this shape (the step model then keeps its roofline).
std::shared_ptr<const OpSurface> measured_attention(const ops::OpStore& store, const OpSource& src,
                                                    bool decode, const AttentionShape& shape);

/// An MLA layer's attention core as the MLA tables key it (DeepSeek's latent layout: the tables measure
/// DeepSeek-V3's kv_lora_rank 512 and rope 64 dimensions).
struct MlaShape {
  double heads = 0;  ///< query heads on the GPU
  int tp = 1;        ///< attention TP (the tables record it beside the heads)
  model::DType kv_dtype = model::DType::kBf16;
  /// The rows of the engine's kernel (ExecutionPolicy::mla_*_kernel_sources): unset = every row; empty =
  /// none (no surface); else the first label with rows.
  std::optional<std::vector<std::string>> kernel_sources;
};

/// Decode MLA (`generation_mla_perf`: batch outer, KV length `step` inner, the absorbed latent form) or
/// prefill MLA (`context_mla_perf`: batch outer, prompt length `isl` inner, the MHA form) of `shape`;
/// nullptr when the table is missing or no row has this shape (the step model then keeps its roofline).
std::shared_ptr<const OpSurface> measured_mla(const ops::OpStore& store, const OpSource& src, bool decode,
                                              const MlaShape& shape);

/// A DSA (DeepSeek Sparse Attention) layer's whole attention block as the module tables key it
/// (`dsa_generation_module_perf`, `dsa_context_module_perf`): the q / kv low-rank projections and their
/// norms, the indexer (its projections, FP8 logits and top-k) or, on a layer that reuses the previous
/// selection, none, the sparse MLA core and o_proj, one rank's heads at a time. The rows name the
/// checkpoint they were timed with (`model`); a row stands for a layer when that checkpoint's config
/// (model::resolve_model, offline) has a layer of the same attention and hidden size.
struct DsaModuleShape {
  model::MlaAttention attention;  ///< the layer's (index_topk > 0)
  int hidden = 0;                 ///< the model's hidden size
  std::string model_id;           ///< the launch's checkpoint: its own rows first
  double heads = 0;               ///< query heads on the GPU (after attention TP)
  int tp = 1;                     ///< attention TP
  model::DType kv_dtype = model::DType::kBf16;
  const char* gemm_dtype = nullptr;  ///< the projections' gemm_perf dtype (measured_gemm_dtype): gemm_type
};
/// Prefill surfaces (batch outer, chunk length inner) per measured cached-prefix length: the context module
/// tables key the tokens already in the cache (`step`). Thread-safety: immutable.
struct PrefixedSurfaces {
  std::vector<double> prefix;  ///< ascending
  std::vector<std::shared_ptr<const OpSurface>> surface;
  bool empty() const { return prefix.empty(); }
  /// The measured prefixes nearest `cached` whose grids hold `batch` chunks of `length` tokens (a lookup not
  /// outside them): {at or below, above} (both the same one when it is at `cached`), either absent past the
  /// ends; both absent when no grid holds that shape.
  std::pair<std::optional<std::size_t>, std::optional<std::size_t>> around(double batch, double length,
                                                                           double cached) const;
  /// The least of the surfaces' OpSurface::fixed_ms (ms); +inf when empty.
  double smallest() const;
};
/// The measured DSA block of one layer kind: decode (batch outer, KV history `step` inner, isl 1), prefill
/// on the sparse path (per cached prefix: batch outer, chunk length `isl` inner) and, where the table times
/// it apart, prefill on the dense-MHA path engines take while prefix and chunk fit in index_topk (SGLang
/// 0.5.14's `*dense_mha*` rows, measured up to 2,048 tokens); each null / empty when the table has no row of
/// the shape.
struct DsaModule {
  std::shared_ptr<const OpSurface> decode;
  PrefixedSurfaces prefill, prefill_dense;
  std::string model;                                        ///< the checkpoint whose rows these are
  std::string decode_kernel, prefill_kernel, dense_kernel;  ///< their kernel_source labels
  /// Why the decode rows of the table were left out (decode then takes the roofline), empty when they were
  /// not: rows whose KV history ends below index_topk say nothing of the sparse regime (B200 SGLang 0.5.10
  /// measured histories up to 128 tokens; scaled from there the whole block grew 64x by 8,192).
  std::string decode_left_out;
};
/// The DSA block of `shape` from the source's module tables: the rows of a checkpoint of the same
/// attention (the launch's own first, then by name) with decode or sparse-prefill rows, of the kernel
/// matching the layer (an indexer layer's labels without "skip_indexer", a reusing layer's with it; the
/// dense-MHA labels apart; of several, the first by name), KV and GEMM dtype, at the launch's attention TP
/// where the table keys TP by it, else the one-rank rows (tp_size 1). nullptr when no phase has rows.
std::shared_ptr<const DsaModule> measured_dsa_module(const ops::OpStore& store, const OpSource& src,
                                                     const DsaModuleShape& shape);
/// A gated-DeltaNet (linear attention) layer as `gdn_perf` keys it: its key and value heads on the GPU
/// (after attention TP; the tables' axes) and the head dimensions (the tables measure Qwen3.5's 128 x 128).
struct GdnShape {
  double key_heads = 0, value_heads = 0;
  double head_k_dim = 0, head_v_dim = 0;
};

/// The measured kernels of a DeltaNet layer, each phase the sum of its kernels: decode (the recurrent state
/// update and the conv-state update along the decoding requests) and prefill (the chunked kernel and the
/// causal conv over prefilling requests x their length). Thread-safety: immutable.
struct GdnKernels {
  std::vector<ops::OpCurve> decode;  ///< latency (ms) along batch_size; empty = the phase is not measured
  std::vector<OpSurface> prefill;    ///< batch_size outer, seq_len inner; empty = not measured
  std::vector<std::string> decode_kernels, prefill_kernels;  ///< their kernel_source labels
};

/// The `gdn_perf` kernels of `shape` from the source's table. A phase counts as measured only when its main
/// kernel has rows of this shape (decode: `fused_recurrent*`; prefill: `chunk*`, the first label in text
/// order when a release measured two); its `causal_conv1d*` companion is added when measured too. nullptr
/// when the table is missing or neither phase is measured (the roofline stays for what is missing).
std::shared_ptr<const GdnKernels> measured_gdn(const ops::OpStore& store, const OpSource& src,
                                               const GdnShape& shape);

/// A MoE layer's routed experts as `moe_perf` keys them.
struct MoeShape {
  const char* dtype = nullptr;  ///< "bfloat16", "fp8", "fp8_block", "w4a16_mxfp4", ... (measured_moe_dtype)
  double hidden = 0, inter = 0, top_k = 0, experts = 0;  ///< the model's (inter: one expert's, unsliced)
  int tp = 1, ep = 1;                                    ///< MoE TP and EP sizes
  /// The rows of the launch's MoE kernel (ExecutionPolicy::moe_kernel_sources): unset = every row;
  /// empty = none (no curve); else the first label with rows of this shape.
  std::optional<std::vector<std::string>> kernel_sources;
};

/// The `moe_perf` moe_dtype of a model's expert weights (BF16, FP8 per-tensor, FP8 block, MXFP4 with BF16
/// activations or, `mxfp8_activations`, MXFP8 ones, NVFP4); nullptr for the formats no table measures
/// (INT4/INT8 weight-only experts).
const char* measured_moe_dtype(const model::WeightFormat& experts, bool mxfp8_activations = false);

/// Latency (ms) of one MoE layer's routed experts along the tokens entering it (balanced routing, else
/// power_law_1.01 where the table measured this shape only with skewed routing; the rows of the launch's
/// kernel, MoeShape::kernel_sources), or nullptr when no row of that kernel has this shape.
std::shared_ptr<const ops::OpCurve> measured_moe_curve(const ops::OpStore& store, const OpSource& src,
                                                       const MoeShape& shape);

/// How far a measured MoE layout may stand in for another: |log2(tp' / tp)| + |log2(ep' / ep)| at most 1,
/// one factor of 2 in TP or EP [a choice, not fitted]. Farther, the fixed costs of a kernel (its routing,
/// permutation and launch) no longer scale with the roofline ratio: a TP1 x EP1 row scaled to EP8 at one
/// token keeps a fifth of them.
inline constexpr double kMoeLayoutReach = 1.0;

/// For a MoE layout (`shape.tp` x `shape.ep`) its table has no row of: the measured layout of the same
/// dtype, expert shape and kernel nearest to it, by |log2(tp' / tp)| + |log2(ep' / ep)| up to
/// kMoeLayoutReach (ties: the larger EP, then the larger TP), as {tp', ep'}; nullopt when there is none. Its
/// time stands in for the launch's, rescaled by the ratio of the two layouts' rooflines (extrapolated;
/// StepModel::layer_time).
std::optional<std::pair<int, int>> nearest_moe_layout(const ops::OpStore& store, const OpSource& src,
                                                      const MoeShape& shape);

/// The source of `launch` on `gpu` in `store`: the newest measured release not newer than the launch's,
/// else the oldest measured one when it is of the launch's release line (patch releases and release
/// candidates of one line keep its kernels; the difference is recorded). nullopt when the store has no
/// GEMM table for this GPU and engine, or only tables of later release lines than the launch's (a later
/// line's kernels are not evidence about this one's: held out, taking vLLM 0.14's tables for vLLM 0.10 /
/// 0.11 launches was worse than the roofline, README "measured operators").
std::optional<OpSource> op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                  const hardware::GpuSpec& gpu);

/// A sibling of `gpu` in `store`: another GPU whose tables exist for the launch's engine and release line
/// (op_source's rule) and whose datasheet row has the same generation, compute capability, SM count, dense
/// BF16 / FP8 / FP4 peaks and TDP — the same chip with other memory (H100 SXM and H200); of several, the
/// nearest in HBM bandwidth, then by name. A MoE row the GPU's own tables lack is timed from the sibling's
/// (StepModel::measure_moe), rescaled by the ratio of the two GPUs' MoE rooflines (only the HBM bandwidth
/// differs). nullopt when there is none. `sibling` receives its row.
std::optional<OpSource> sibling_op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                          const hardware::GpuSpec& gpu, hardware::GpuSpec* sibling);

/// How far apart in HBM bandwidth a stand-in GPU's tables may be (stand_in_op_source): 5%, the width the
/// unscaled attention and collective rows may be off by [a choice, not fitted; B300 7.75 vs B200 8 TB/s].
inline constexpr double kStandInBandwidthReach = 0.05;

/// For a launch op_source finds no tables for on `gpu` (no table of its engine's release line there): a
/// GPU whose tables have that line (op_source's rule) and whose datasheet row has the same generation, SM
/// count, dense BF16 and FP8 peaks and link between GPUs (kind and bandwidth), and an HBM bandwidth within
/// kStandInBandwidthReach — the kernels the tables time (BF16 / FP8 GEMMs, attention, MoE, all-reduce) run
/// on the same compute; FP4 peak, memory size and TDP may differ (B300 for B200's TensorRT-LLM 1.2 tables).
/// Of several, the nearest in HBM bandwidth, then by name. Not tried where the GPU has tables of an older
/// release line (op_source takes those: the rule the held-out figures were measured with).
/// Its GEMM and MoE times are rescaled by the ratio of the two GPUs' rooflines, the rest taken as they are,
/// every lookup counted as extrapolated (StepModel). nullopt when there is none; `stand_in` receives its row.
std::optional<OpSource> stand_in_op_source(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                           const hardware::GpuSpec& gpu, hardware::GpuSpec* stand_in);

/// Why op_source found nothing for `launch` on `gpu`, for the twin's notes: no table for this GPU and
/// engine, or only releases of later lines (named).
std::string missing_source_note(const ops::OpStore& store, const engines::ResolvedLaunch& launch,
                                const hardware::GpuSpec& gpu);

/// The gemm_perf `gemm_dtype` a GEMM kernel family was measured as: bfloat16 (cuBLAS BF16), fp8 (per-tensor
/// W8A8), fp8_block (DeepGEMM / CUTLASS / TensorRT-LLM block-scaled), int4_wo (AWQ/GPTQ weight-only);
/// nullptr for the families no table measures (Marlin W8A16, INT8 W8A8, native FP4).
const char* measured_gemm_dtype(engines::GemmKernel k);

/// Latency (ms) of an [M x k] x [k x n] GEMM of `dtype` along M from the source's gemm_perf table, the
/// shape (n, k) interpolated once, on the rows of the launch's kernel (`kernel_sources`, as
/// ExecutionPolicy::gemm_kernel_sources: unset = every row, empty = none); nullptr when the table, the
/// dtype or the kernel's rows are missing or the lookup fails.
std::shared_ptr<const ops::OpCurve> measured_gemm_curve(
    const ops::OpStore& store, const OpSource& src, const char* dtype, double n, double k,
    const std::optional<std::vector<std::string>>& kernel_sources = std::nullopt);

/// Latency (ms) of one BF16 all-reduce over `gpus` GPUs of one node along its message size (elements) from
/// the source's `custom_allreduce_perf` table (the engine's own all-reduce: vLLM / SGLang custom all-reduce,
/// TensorRT-LLM's), the CUDA-graph rows where the table measured graphed and eager launches (the eager
/// rows add the Python launch the step model counts apart); nullptr when the table, the GPU count or the
/// kernel is not measured (the roofline stays).
std::shared_ptr<const ops::OpCurve> measured_allreduce_curve(const ops::OpStore& store, const OpSource& src,
                                                             int gpus);

}  // namespace servelab::sim::detail
