// servelab/engines: a launch resolved for the model and the GPUs it runs on — every engine default, rule
// and choice applied (parallel layout, memory policy, scheduler, routing, CUDA-graph rule, kernels,
// speculative decoding). The engine twin (src/sim) reads engine behaviour only from here: it keeps no
// copy of an engine rule of its own.
//
// Each engine is one module (src/engines/<engine>/: vllm/, sglang/, trtllm/) registered in one table
// (engine_module.h engine_modules()); versions are data inside the module (flags added/removed per version,
// defaults by version). Thread-safety: every function is pure.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "servelab/engines/engine_config.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace servelab::engines {

/// How the routed experts' tokens move between GPUs.
enum class MoeA2a {
  kNone,                    ///< experts TP-sliced (or one GPU): an all-reduce after the layer suffices
  kAllgatherReduceScatter,  ///< tokens all-gathered to every expert rank, results reduce-scattered
                            ///< (vLLM DP+EP default; SGLang DP-attention with TP/EP MoE)
  kDeepepNormal,            ///< DeepEP normal (high-throughput) kernels: no CUDA graphs
  kDeepepLowLatency,        ///< DeepEP low-latency kernels (RDMA-style, graph-capturable, decode)
  kPplx,                    ///< pplx-kernels all-to-all
  kFlashinferAllToAllV,     ///< FlashInfer all2allv (vLLM --all2all-backend flashinfer_all2allv)
};

/// How a decode or mixed batch is launched.
enum class GraphMode {
  kNone,              ///< eager: every kernel launched from Python (vLLM --enforce-eager)
  kPiecewise,         ///< torch.compile piecewise graphs: layers graphed, attention eager (vLLM PIECEWISE)
  kFullAndPiecewise,  ///< full graphs for decode-only batches, piecewise for mixed (vLLM >= 0.11 default)
  kFull,              ///< full graphs for every batch up to the max size (vLLM cudagraph_mode FULL)
  kDecodeOnly,        ///< full graphs for decode-only batches up to the max size, eager otherwise
                      ///< (SGLang, TensorRT-LLM)
};

/// Attention kernel families (efficiencies differ; the twin's tables are keyed by these).
enum class AttentionKernel {
  kFlashAttn2,
  kFlashAttn3,
  kFlashInfer,
  kTriton,
  kTrtllmGen,
  kXformers,
  kFlexAttention,
  kFlashMla,
  kFlashMlaSparse,
  kCutlassMla,
  kFlashInferMla,
  kTritonMla,
  kTrtllmMla,
};

/// GEMM kernel families for the dense linears.
enum class GemmKernel {
  kCublasBf16,        ///< BF16/FP16 tensor-core GEMM (cuBLAS/CUTLASS)
  kFp8Native,         ///< FP8 W8A8, per-tensor / per-channel scales (CUTLASS scaled_mm, cuBLASLt)
  kFp8BlockDeepGemm,  ///< FP8 W8A8 block-scaled, DeepGEMM
  kFp8BlockCutlass,   ///< FP8 W8A8 block-scaled without DeepGEMM (CUTLASS / Triton w8a8 block)
  kFp8BlockTrtllm,    ///< FP8 W8A8 block-scaled, TensorRT-LLM's own fp8_block_scaling_gemm (+
                      ///< fp8_quantize_1x128)
  kInt8Native,        ///< INT8 W8A8 (CUTLASS)
  kMarlinW8A16,       ///< FP8 weights dequantised in the GEMM (Ampere: no FP8 tensor cores)
  kMarlinW4A16,       ///< INT4 / FP4 weights dequantised in the GEMM (AWQ/GPTQ Marlin, MXFP4 Marlin)
  kAwqTrtllm,         ///< TensorRT-LLM's W4A16 AWQ kernels
  kFp4Native,         ///< NVFP4/MXFP4 tensor cores (Blackwell)
};

/// Fused-MoE kernel families for the routed experts.
enum class MoeKernel {
  kTritonFused,       ///< vLLM/SGLang fused_moe Triton kernel (BF16, FP8)
  kDeepGemmGrouped,   ///< DeepGEMM grouped FP8 GEMM (contiguous prefill / masked decode)
  kCutlassGrouped,    ///< CUTLASS grouped GEMM (TensorRT-LLM CUTLASS MoE, FlashInfer CUTLASS)
  kMarlinMoe,         ///< weight-only Marlin MoE (W4A16 / W8A16 on Ampere)
  kTritonKernels,     ///< OpenAI triton_kernels matmul_ogs (gpt-oss MXFP4 on Hopper)
  kFlashInferTrtllm,  ///< FlashInfer / TRT-LLM-gen MoE (Blackwell)
};

/// "fa2", "fa3", ... / "cublas-bf16", ... / "triton-fused", ... (stable, used as table keys).
const char* attention_kernel_name(AttentionKernel k);
const char* gemm_kernel_name(GemmKernel k);
const char* moe_kernel_name(MoeKernel k);
const char* moe_a2a_name(MoeA2a a);
const char* graph_mode_name(GraphMode g);

/// The GPUs of a launch and how the model is split over them.
struct ParallelLayout {
  int gpus = 1;                                 ///< GPUs used (tp * pp * dp, or tp * pp with DP-attention)
  int nodes = 1;                                ///< nodes those GPUs span (from the cluster's GPUs per node)
  int tp = 1, pp = 1, dp = 1, ep = 1, dcp = 1;  ///< as launched (after the engine's own adjustments)
  int dp_ranks = 1;                             ///< independent schedulers, each with its own KV pool
  int attn_tp = 1;                              ///< TP degree of attention inside one DP rank
  int dense_tp = 1;            ///< TP degree of dense FFN, shared experts, embedding and LM head
  int moe_tp = 1;              ///< routed experts sliced over this many GPUs ...
  int moe_ep = 1;              ///< ... and spread whole over this many (moe_tp * moe_ep GPUs hold experts)
  bool moe_gathered = false;   ///< tokens of all DP ranks go through each expert rank in one step
  MoeA2a a2a = MoeA2a::kNone;  ///< prefill and mixed steps
  MoeA2a a2a_decode = MoeA2a::kNone;  ///< decode-only steps (SGLang --deepep-mode auto: low-latency
                                      ///< kernels for decode, normal ones for prefill)
  bool tp_crosses_nodes = false;      ///< a TP group spans nodes (its all-reduces run over the network)
  bool pp_crosses_nodes = false;      ///< pipeline stages on different nodes
};

/// How the engine sizes its KV pool. bytes_for_kv = fraction * basis - (weights + activations +
/// reserved) for kOfTotal (vLLM: activations from its profile run; SGLang: mem_fraction_static covers
/// weights and KV, activations 0, reserved 0), fraction * (free after weights, activations and reserved)
/// for kOfFree (TensorRT-LLM kv_cache_free_gpu_memory_fraction).
struct MemoryPolicy {
  enum class Basis { kOfTotal, kOfFree } basis = Basis::kOfTotal;
  double fraction = 0.9;  ///< as resolved (SGLang's automatic mem_fraction_static included)
  /// Weights per GPU kept in pinned host memory (vLLM / SGLang --cpu-offload-gb, GiB x 2^30), bytes: not in
  /// device memory, read over PCIe by every step (detail::apply_cpu_offload).
  double cpu_offload_bytes = 0;
  bool profile_activations = true;  ///< the engine measures peak activations at `profile_tokens` first
  int profile_tokens = 0;           ///< tokens of the profile run (vLLM max_num_batched_tokens)
  int profile_sequences = 0;        ///< sequences of the profile run's sampler (vLLM max_num_seqs)
  double reserved_bytes = 0;        ///< non-torch / runtime memory outside the pool (CUDA context, NCCL,
                                    ///< graphs), bytes, with its source in `notes`
  std::optional<long long> max_total_tokens;  ///< SGLang --max-total-tokens cap on the pool (tokens)
  bool kv_window_only = false;                ///< sliding-window layers keep only their window (vLLM hybrid
                                              ///< allocator, SGLang SWA pool, TRT variable window)
  double swa_full_tokens_ratio = 1.0;         ///< SGLang: SWA-layer pool size / full-layer pool size
  /// SGLang's hybrid SWA pool (SWAKVPool): the sliding-window layers get their own token pool of
  /// swa_full_tokens_ratio x the full layers' tokens, split from the same memory, and the full-layer
  /// pool bounds admission: full tokens = budget / (full-layer bytes + ratio x window-layer bytes per
  /// token) (model_runner.py set_num_token_hybrid) [recalled]. false: window layers hold only their
  /// window of each request in the shared pool (vLLM hybrid allocator, TensorRT-LLM variable window).
  bool swa_split_pool = false;
  /// vLLM hybrid models: each linear-attention layer's recurrent state takes one KV block, padded to the
  /// attention page (block_size tokens of one attention layer); block_size is raised until that page
  /// holds the state (HybridAttentionMambaModelConfig). false: state stored unpadded in its own pool.
  bool state_page_padded = false;
  /// SGLang hybrid linear-attention models: the recurrent states live in their own pool (MambaPool) beside
  /// the KV pool. With the radix cache on, the state pool takes r / (1 + r) of the budget, r =
  /// `state_pool_ratio` (--mamba-full-memory-ratio), and running requests are capped at its slots /
  /// `state_slots_per_running`; with the radix cache off it holds `state_slots` states. Each slot holds
  /// `state_copies_per_slot` states (1 + speculative draft tokens). Source: SGLang model_runner.py
  /// handle_max_mamba_cache / init_memory_pool [recalled, see sglang_defaults.h]. All 0: the states share
  /// the KV pool (vLLM, TensorRT-LLM).
  double state_pool_ratio = 0;
  int state_slots = 0;
  int state_slots_per_running = 0;
  int state_copies_per_slot = 1;
  /// The vision encoder of a multimodal checkpoint is loaded (its weights and profile-run budget take GPU
  /// memory); false for text-only models and with vLLM --language-model-only.
  bool mm_encoder = false;
  /// GPUs the vision encoder's weights are split over (1: each GPU holds it whole). vLLM: the attention TP
  /// with --mm-encoder-tp-mode weights, its default ("split the weights of each layer across TP ranks",
  /// EngineArgs help), 1 with data; SGLang: the attention TP, its encoders use tensor-parallel linears unless
  /// --mm-enable-dp-encoder [recalled]; TensorRT-LLM: 1 [not modelled].
  int mm_encoder_shards = 1;
  /// When the KV pool cannot hold one request of the default context, the engine lowers max_model_len to
  /// what fits instead of refusing to start (vLLM >= 0.17 without --max-model-len [unverified release;
  /// the corpus's GLM-5.2 at its 1,048,576 default started on vLLM 0.24]).
  bool auto_fit_max_model_len = false;
  /// The engine refuses to start when the KV pool cannot hold one request of max_model_len (vLLM
  /// kv_cache_utils.check_enough_kv_cache_memory; after auto_fit_max_model_len). false: SGLang and
  /// TensorRT-LLM start and hold fewer tokens.
  bool kv_pool_holds_one_request = false;
  /// SGLang's ReqToTokenPool, an int32 table of (slots + 1) x (context_len + 4) entries per rank, slots =
  /// clamp(pool tokens / context_len x 512, 2048, 4096) (model_runner.py), charged to the KV budget
  /// (memory_plan.cc request_table_bytes, with the corpus evidence). false: vLLM, TensorRT-LLM.
  bool request_table = false;
};

/// The scheduler the engine runs per DP rank.
struct SchedulerPolicy {
  enum class Kind {
    kVllmV1,          ///< vllm/v1/core/sched/scheduler.py: running first, chunked prefill mixed with
                      ///< decode under one token budget, recompute preemption from the back
    kSglang,          ///< SGLang: prefill batches (with future-token reservation) before decode, retract
    kTrtllmInflight,  ///< TensorRT-LLM in-flight batching, GUARANTEED_NO_EVICT capacity scheduler
  } kind = Kind::kVllmV1;
  int max_num_seqs = 256;   ///< running requests per DP rank
  int token_budget = 8192;  ///< tokens per step (vLLM max_num_batched_tokens, SGLang chunk per
                            ///< rank, TRT max_num_tokens)
  bool chunked_prefill = true;
  int max_prefill_tokens = 16384;       ///< SGLang prompt tokens admitted per prefill batch
  double conservativeness = 1.0;        ///< SGLang schedule_conservativeness (x0.3 under DP-attention)
  int clip_max_new_tokens = 4096;       ///< SGLang CLIP_MAX_NEW_TOKENS for the reservation
  bool mixed_prefill_decode = true;     ///< prefill chunks share steps with decodes (vLLM; SGLang only with
                                        ///< --enable-mixed-chunk)
  int pp_micro_batches = 1;             ///< micro-batches in flight with pipeline parallelism (vLLM: pp
                                        ///< virtual engines; SGLang pp_max_micro_batch_size rule)
  bool max_num_seqs_from_pool = false;  ///< SGLang: max_running_requests derived from the KV pool at
                                        ///< start-up (min(pool/2, req_to_token pool)); sim computes it
  /// Attention-DP context balancing (TensorRT-LLM attention_dp_config.enable_balance): a step starts no
  /// context unless every DP rank has one to start, waiting at most `dp_balance_timeout_steps` steps
  /// (none when some rank decodes nothing); when every rank also decodes, contexts wait
  /// `dp_balance_batching_steps` more steps so that they start together. Engine steps.
  bool dp_balance = false;
  int dp_balance_timeout_steps = 50;
  int dp_balance_batching_steps = 10;
  /// SGLang --scheduler-recv-interval: the scheduler polls the tokenizer for new requests only when a
  /// counter reaches this many; a decode-only step adds 1, any other step (prefill, mixed) and an idle loop
  /// add the interval, so requests that reach a busy decoding engine wait up to this many decode steps
  /// (scheduler_recv_skipper.py SchedulerRecvSkipper [recalled]). 1 = every step (the default).
  int recv_interval = 1;
  /// SGLang: one request holds at most max_req_len = min(context length - 1, KV pool tokens of its rank - 1)
  /// tokens. A prompt of max_req_len - 5 tokens or more is aborted in the stream ("Input length (N tokens)
  /// exceeds the maximum allowed length (M tokens). Use a shorter input or enable --allow-auto-truncate."),
  /// and max_new_tokens is clipped to max_req_len - prompt - 1 (tp_worker.py max_req_len /
  /// max_req_input_len; scheduler.py handle_generate_request, validate_input_length) [recalled].
  bool request_len_from_pool = false;
};

/// How requests are spread over DP ranks.
enum class Routing {
  kRoundRobin,     ///< SGLang data_parallel_controller default
  kLeastLoaded,    ///< vLLM DP load balancing: score = waiting * 4 + running, lowest wins
  kShortestQueue,  ///< SGLang --load-balance-method shortest_queue; TRT-LLM attention-DP balancing
                   ///< (fewest active requests)
  kMinimumTokens,  ///< SGLang --load-balance-method minimum_tokens
};

/// How steps are executed.
struct ExecutionPolicy {
  GraphMode graphs = GraphMode::kFullAndPiecewise;
  /// A captured size counts the step's tokens (vLLM) rather than its decode requests (SGLang,
  /// TensorRT-LLM); a step with prefill counts tokens either way.
  bool graph_batch_in_tokens = false;
  int graph_max_batch = 512;        ///< largest captured size (tokens for vLLM, requests otherwise)
  bool graph_padding = true;        ///< batches are padded up to the next captured size (TRT: padding off
                                    ///< by default, so only exact captured sizes replay)
  std::vector<int> graph_sizes;     ///< captured sizes when the engine captures a sparse list
  bool async_scheduling = false;    ///< CPU scheduling of step n+1 overlaps GPU step n (vLLM
                                    ///< --async-scheduling / default-on versions, SGLang overlap scheduler,
                                    ///< TRT overlap scheduler)
  bool torch_compile = false;       ///< SGLang --enable-torch-compile (vLLM compiles always)
  int torch_compile_max_batch = 0;  ///< SGLang: decode batches up to this size run torch.compile'd
                                    ///< graphs (--torch-compile-max-bs, default 32)
  AttentionKernel attention = AttentionKernel::kFlashAttn3;  ///< prefill attention kernel
  AttentionKernel decode_attention = AttentionKernel::kFlashAttn3;
  GemmKernel gemm = GemmKernel::kCublasBf16;  ///< dense linears
  MoeKernel moe = MoeKernel::kTritonFused;    ///< routed experts
  /// Routed-expert kernel of steps with fewer than `moe_small_below` tokens (0: `moe` for every step).
  /// vLLM's TritonOrDeepGemmExperts runs DeepGEMM only when M (the step's tokens) is at least the 128-row
  /// M alignment of DeepGEMM's contiguous layout and falls back to fused_moe Triton below it
  /// (fused_moe/deep_gemm_moe.py _valid_deep_gemm_shape; triton_deep_gemm_moe.py) [recalled].
  MoeKernel moe_small = MoeKernel::kTritonFused;
  int moe_small_below = 0;
  /// The routed experts' weights are allocated padded: each expert's hidden dimension up to a multiple
  /// of `expert_pad_hidden` and its intermediate slice (per MoE TP rank) up to `expert_pad_intermediate`
  /// (1: no padding). vLLM's Marlin MXFP4 MoE pads 256 / 128 ("the moe marlin kernel requires that for
  /// each linear n % 256 == 0 and k % 128 == 0", quantization/mxfp4.py Mxfp4MoEMethod.create_weights)
  /// [recalled]. The padded weights are stored, read and multiplied.
  int expert_pad_hidden = 1;
  int expert_pad_intermediate = 1;
  /// MXFP4 routed experts multiply MXFP8-quantized activations (FP8 tensor cores) instead of BF16 ones:
  /// vLLM's FlashInfer TRT-LLM-gen MXFP4 x MXFP8 MoE on SM100 (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1;
  /// moe_perf rows "w4a8_mxfp4_mxfp8").
  bool moe_mxfp8_activations = false;
  /// Programmatic dependent launch (CUDA PDL, SM90+): each kernel launches while the one before it drains,
  /// so a graph's kernels pay no per-kernel launch gap (CUDA Programming Guide, "Programmatic Dependent
  /// Launch and Synchronization"). TensorRT-LLM with TRTLLM_ENABLE_PDL=1.
  bool programmatic_dependent_launch = false;
  GemmKernel attention_gemm = GemmKernel::kCublasBf16;  ///< attention projections (gpt-oss: BF16)
  /// Which rows of the engine's measured operator tables (aic-ops `kernel_source`) time the kernel this
  /// launch dispatches, per operator: unset = every row (the table measures the engine's default path,
  /// which this launch takes, or the table does not name its kernels); an empty list = no table row
  /// measures this launch's kernel (the twin keeps the roofline for it, with a note); else the labels
  /// as shell wildcards (fnmatch), tried in order. Set by the engine module's resolve from `moe`,
  /// `attention` and `decode_attention`.
  std::optional<std::vector<std::string>> moe_kernel_sources;
  /// gemm_perf rows of `gemm` (the quantized linears); GEMMs of another kernel (BF16 attention
  /// projections, router, LM head) take every row of their dtype (each table times one BF16 kernel).
  std::optional<std::vector<std::string>> gemm_kernel_sources;
  std::optional<std::vector<std::string>> mla_prefill_kernel_sources;  ///< context_mla_perf rows
  std::optional<std::vector<std::string>> mla_decode_kernel_sources;   ///< generation_mla_perf rows
  int api_server_count = 1;
  int stream_interval = 1;  ///< tokens per streamed chunk
  /// The API server renders chat requests with OpenAI's `openai_harmony` library (Rust, straight to token
  /// ids) instead of the model's Jinja chat template and the tokenizer: vLLM for gpt-oss
  /// (entrypoints/openai/serving_chat.py `use_harmony` = model_type "gpt_oss", from 0.10.1) [recalled].
  bool harmony_chat = false;
  /// The API server spends serial CPU per decoding request per engine step on the streamed reply (output
  /// processing + one SSE chunk; the time per chunk is sim's fitted Calibration::api_stream_request_us,
  /// divided by api_server_count x stream_interval); false = not modelled (hidden behind the engine). Set
  /// by vLLM for launches with --reasoning-parser (vllm_launch_policy.cc): the API process is a pipeline
  /// stage beside the engine core, so it bounds the step time from below instead of adding to it
  /// (sim/step_model.cc step_seconds).
  bool api_stream_stage = false;
  /// The API server runs each request's CPU work (chat template, tokenisation, hand-off) to completion
  /// before the next one, in arrival order, instead of interleaving them: TensorRT-LLM's trtllm-serve,
  /// whose chat handler renders the template and calls LLM.generate_async (a plain method that
  /// tokenises and submits to the executor) with no await in between (serve/openai_server.py,
  /// llmapi/llm.py) [recalled]. Corpus evidence: its bursts of 1000 short requests show no hand-off
  /// plateau: TTFT spread uniformly over the run (qwen3-14b__a100#016: 15.0 s run, TTFT median 7.9 s,
  /// p99 14.9 s; qwen3-32b__h100#012: 19.3 s, 10.5 / 19.1 s) where vLLM's sit on one (qwen3-32b__h100#008:
  /// 32.9 s, median 21.3 s, p99 32.7 s; qwen3-14b__a100#012: 26.8 s, 19.2 / 26.5 s).
  bool api_fifo = false;
  /// DSA models: prompts of at most index_topk tokens are prefilled as dense MHA without the indexer
  /// (TensorRT-LLM DeepSeekSparseAttentionConfig.skip_indexer_for_short_seqs); other engines run the
  /// sparse path for every prompt.
  bool dsa_dense_short_prefill = false;
};

/// Speculative decoding as the engine runs it.
struct SpeculativePolicy {
  enum class Method { kMtp, kEagle, kEagle3, kNgram, kDraftModel } method = Method::kMtp;
  int num_speculative_tokens = 1;  ///< draft tokens verified per step (chain length)
  int num_steps = 1;               ///< draft forward passes per step
  int topk = 1;                    ///< branching of the draft tree (SGLang eagle topk)
  int num_draft_tokens = 2;        ///< tokens verified per step incl. the bonus token (SGLang tree size)
  std::string draft_model;         ///< "" = the model's own MTP head
  /// P(draft token i accepted | all before accepted) at batch 1, and its source; the twin lowers it at
  /// large batch (sim's acceptance model).
  double acceptance = 0.7;
  std::string acceptance_source;
  bool acceptance_verified = false;  ///< false: the value is an estimate (its source says why)
  /// The engine runs the draft with the overlap / async scheduler (vLLM >= 0.15 with EAGLE/MTP; SGLang
  /// spec v2); false: scheduling is serial with speculative decoding.
  bool overlap = false;
};

/// A launch resolved for a model and a cluster.
struct ResolvedLaunch {
  LaunchConfig config;         ///< the parsed config with its defaults filled
  std::string version;         ///< engine version it was resolved for ("0.11.0")
  std::string version_family;  ///< fitted-parameter key part: "vllm-0.10", "vllm-0.11", "vllm-0.17",
                               ///< "sglang-0.5.3", "sglang-0.5.9", "trtllm-1.0", "trtllm-1.2", ...
  ParallelLayout layout;
  MemoryPolicy memory;
  SchedulerPolicy scheduler;
  Routing routing = Routing::kRoundRobin;
  ExecutionPolicy execution;
  std::optional<SpeculativePolicy> speculative;
  int max_model_len = 0;  ///< context limit (tokens)
  model::DType kv_dtype = model::DType::kBf16;
  model::DType state_dtype = model::DType::kBf16;  ///< linear-attention recurrent state
  int block_size = 16;                             ///< KV block / page (tokens)
  bool prefix_caching = true;
  model::ModelSpec model;  ///< the served model after engine quantization flags
  /// Each decision with its reason and source, in order ("max_num_seqs 256: vLLM get_batch_defaults,
  /// A100 excluded from the large tier (PR #17885)"). `sim run --explain` prints them.
  std::vector<std::string> notes;
  /// Flags that were parsed but have no modelled effect on this launch (printed as a warning).
  std::vector<std::string> inert_flags;
  /// Kernel paths of this launch whose speed the twin has no figure for, each with its reason and the
  /// evidence. The prediction is then the physics at the class's parameters and can be far off: `sim run`
  /// and `sim serve` warn, and the fit leaves such points out (listed by `sim validate`) rather than
  /// bending a class's parameters to them.
  std::vector<std::string> unmodelled;
};

/// Resolves `config` for `model` on `cluster` with the module of config.kind and the release in
/// config.engine_version ("" = the module's default): defaults by engine version, start-up rules (kernel
/// support per GPU generation, flag combinations, GPU count, a GPU the twin does not model), memory
/// policy, scheduler, routing, graphs, kernels. A launch the engine refuses (or that fails at run time for
/// a config-only reason) comes back as LaunchFailure with the engine's own message where known (verbatim
/// = true). Memory (OOM) is not decided here: the twin's memory plan does that. Does not throw for any
/// config parse_launch_command returned.
std::variant<ResolvedLaunch, LaunchFailure> resolve_launch(const LaunchConfig& config,
                                                           const model::ModelSpec& model,
                                                           const hardware::ClusterSpec& cluster);

/// The engine's refusal of one request, or nullopt when it is admitted (the one implementation used by
/// `sim run` and `sim serve`):
///   vLLM:    prompt + max_tokens > max_model_len -> HTTP 400 with serving_engine.py's message;
///   SGLang:  prompt >= context length, or prompt + max_tokens >= context length (tokenizer_manager.py
///            _validate_one_request; both texts [recalled for 0.5.x]);
///   TRT-LLM: without chunked prefill, prompt > max_num_tokens (llm.py _check_arguments' message);
///            prompt >= max_seq_len (servelab's text).
std::optional<std::string> check_request(const ResolvedLaunch& launch, int prompt_tokens, int max_tokens);

}  // namespace servelab::engines
