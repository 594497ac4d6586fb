// servelab/engines: an engine launch, parsed. The single description of "what the user launched" that the
// engine twin (sim), the study runner (tune) and reports share. Produced by parsing the real launch command
// of vLLM, SGLang or TensorRT-LLM plus its environment (see engines.h).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace servelab::engines {

/// Which serving engine a command launches.
enum class EngineKind { kVllm, kSglang, kTrtllm };

/// "vllm", "sglang", "trtllm".
const char* engine_kind_name(EngineKind kind);

/// The kind named "vllm", "sglang" or "trtllm" (engine_kind_name's inverse); nullopt for any other name.
std::optional<EngineKind> engine_kind_from_name(const std::string& name);

/// Speculative decoding configuration (MTP / EAGLE with the model's MTP head).
struct SpeculativeConfig {
  std::string method;  ///< "mtp" (vLLM), "EAGLE"/"NEXTN" (SGLang), "MTP" (TRT-LLM)
  int num_speculative_tokens =
      0;  ///< draft tokens proposed per step (vLLM num_speculative_tokens; SGLang num-draft-tokens - 1)
  int num_steps = 0;         ///< SGLang --speculative-num-steps
  int eagle_topk = 0;        ///< SGLang --speculative-eagle-topk
  int num_draft_tokens = 0;  ///< SGLang --speculative-num-draft-tokens (0 = engine default)
  /// vLLM "model" / SGLang --speculative-draft-model-path ("" = the model's own MTP head).
  std::string draft_model;
  std::string json;  ///< vLLM --speculative-config as given (JSON text), "" otherwise
};

/// A real engine option that servelab accepts but does not model (kept so that to_argv() round-trips and
/// reports can say what was ignored).
struct EngineOption {
  std::string flag;  ///< canonical spelling, e.g. "--disable-log-stats", "--no-enable-log-requests"
  std::vector<std::string> values;  ///< values as given (empty for a boolean flag; several for nargs='+')
};

/// A parsed engine launch. parse_launch_command() fills explicit values plus the defaults that depend
/// only on the engine (version in `engine_version`; see vllm_defaults.h, sglang_defaults.h,
/// trtllm_defaults.h); resolve_launch() adds the ones that depend on the model and GPU (optionals left
/// unset, 0 block size, SGLang's auto memory fraction) and the engine's own adjustments (e.g. SGLang's
/// chunked_prefill_size // dp under DP-attention). Units: lengths in tokens, memory fractions in [0, 1].
struct LaunchConfig {
  EngineKind kind = EngineKind::kVllm;
  std::string engine_version;  ///< e.g. "0.13.0", "0.5.6.post2", "1.2.0rc5"
  std::string model;           ///< model id or path as given (e.g. "deepseek-ai/DeepSeek-V3.2")
  /// Names the API answers to (defaults to {model}); responses carry the first. vLLM's
  /// --served-model-name takes several (each is listed by /v1/models and accepted), SGLang's one.
  std::vector<std::string> served_model_names;
  /// vLLM --max-logprobs: the most logprobs a request may ask for (-1: the vocabulary size); unset = the
  /// engine's default (20) [recalled: vllm ModelConfig.max_logprobs]. The twin's API server checks requests
  /// against it.
  std::optional<int> max_logprobs;
  std::string host = "127.0.0.1";  ///< the engine's bind address: --host, else the engine default (vLLM
                                   ///< "0.0.0.0" = all interfaces, SGLang "127.0.0.1", TRT "localhost")
  int port = 8000;                 ///< --port, else the engine default (vLLM 8000, SGLang 30000, TRT 8000)

  // Parallelism (GPUs used: see gpus_used()).
  int tp = 1;                           ///< tensor parallel size
  int dp = 1;                           ///< data parallel size (vLLM -dp / SGLang --dp-size)
  int ep = 1;                           ///< expert parallel size (1 = experts sharded by TP)
  int pp = 1;                           ///< pipeline parallel size
  int dcp = 1;                          ///< vLLM decode context parallel size
  bool enable_expert_parallel = false;  ///< vLLM --enable-expert-parallel (EP = TP*DP)
  bool enable_dp_attention = false;     ///< SGLang --enable-dp-attention / TRT enable_attention_dp (YAML):
                                        ///< attention DP inside one TP group (TRT: dp = tp)
  /// TRT attention_dp_config (YAML) enable_balance, timeout_iters, batching_wait_iters (engine steps);
  /// unset = the release's default (trtllm_defaults.h).
  std::optional<bool> attention_dp_balance;
  std::optional<int> attention_dp_timeout_iters;
  std::optional<int> attention_dp_batching_wait_iters;
  // Multi-node, as the launch states it (multinode.h renders these flags per node).
  int nnodes = 1;  ///< SGLang --nnodes: nodes the launch spans (gpus_used() / nnodes GPUs on each)
  std::optional<int> dp_size_local;  ///< vLLM --data-parallel-size-local: DP ranks on this node
  std::optional<int> gpus_per_node;  ///< TRT-LLM --gpus_per_node (default: the node's device count)

  // Memory and context.
  std::optional<int> max_model_len;  ///< vLLM --max-model-len / SGLang --context-length / TRT --max_seq_len
  double gpu_memory_fraction = 0.0;  ///< vLLM --gpu-memory-utilization, SGLang --mem-fraction-static,
                                     ///< TRT --kv_cache_free_gpu_memory_fraction (vLLM/SGLang: of total GPU
                                     ///< memory; TRT: of memory free after weights). SGLang: 0 = auto until
                                     ///< resolve_launch() applies SGLang's formula.
  std::string kv_cache_dtype = "auto";  ///< "auto", "fp8", "fp8_e4m3", "bf16", ...
  int block_size = 0;                   ///< KV block/page size in tokens (0 = engine default)

  // Scheduler knobs.
  /// Running-request cap: vLLM --max-num-seqs (per DP engine) / SGLang --max-running-requests (global; each
  /// DP rank admits // dp) / TRT --max_batch_size (per rank).
  std::optional<int> max_num_seqs;
  std::optional<int> max_num_batched_tokens;  ///< vLLM --max-num-batched-tokens / TRT --max_num_tokens
  std::optional<int> chunked_prefill_size;    ///< SGLang --chunked-prefill-size (-1 disables)
  bool enable_chunked_prefill = true;
  std::optional<int> cuda_graph_max_bs;  ///< SGLang --cuda-graph-max-bs / vLLM max capture size
  bool enforce_eager = false;            ///< vLLM --enforce-eager (no CUDA graphs)
  std::string schedule_policy;           ///< SGLang --schedule-policy (fcfs, lpm, ...)
  std::optional<double> schedule_conservativeness;

  // Kernels / backends.
  std::string attention_backend;    ///< VLLM_ATTENTION_BACKEND or SGLang --attention-backend ("" = default)
  std::string nsa_prefill_backend;  ///< SGLang --nsa-prefill-backend
  std::string nsa_decode_backend;   ///< SGLang --nsa-decode-backend
  bool deep_gemm = true;            ///< VLLM_USE_DEEP_GEMM / SGLANG_ENABLE_JIT_DEEPGEMM / TRTLLM_DG_ENABLED
  /// SGLang --fp8-gemm-backend: the FP8 block-scaled GEMM ("auto", "deep_gemm", "flashinfer_trtllm",
  /// "cutlass", "triton", ...; "" = unset: SGLANG_ENABLE_FLASHINFER_GEMM, then deep_gemm decide).
  std::string fp8_gemm_backend;

  std::optional<SpeculativeConfig> speculative;

  // API surface (no physical cost expected; recorded because the study tried them).
  std::string tokenizer_mode;  ///< vLLM --tokenizer-mode
  std::string reasoning_parser;
  std::string tool_call_parser;
  bool enable_auto_tool_choice = false;
  std::string chat_template;

  // Other modelled options.
  bool trust_remote_code = false;         ///< vLLM/SGLang --trust-remote-code, TRT --trust_remote_code
  bool enable_prefix_caching = true;      ///< vLLM --enable-prefix-caching; SGLang !--disable-radix-cache
  std::string quantization;               ///< vLLM -q/--quantization, SGLang --quantization ("" = from model)
  std::optional<int> max_prefill_tokens;  ///< SGLang --max-prefill-tokens (tokens per prefill batch)
  std::optional<int> max_total_tokens;    ///< SGLang --max-total-tokens (KV pool size override, tokens)
  std::string moe_a2a_backend;     ///< SGLang --moe-a2a-backend / vLLM --all2all-backend ("" = default)
  std::string moe_runner_backend;  ///< SGLang --moe-runner-backend ("" = auto)
  std::string trtllm_backend;      ///< TRT --backend ("pytorch", "trt", "_autodeploy")
  std::string deepep_mode;         ///< SGLang --deepep-mode ("normal", "low_latency", "auto"; "" = auto)
  std::optional<int> moe_dense_tp_size;  ///< SGLang --moe-dense-tp-size (dense FFN TP under DP-attention)

  // Execution (CUDA graphs, compilation, overlap).
  std::optional<bool> async_scheduling;  ///< vLLM --async-scheduling / --no-async-scheduling (unset: the
                                         ///< version's default)
  std::string performance_mode;          ///< vLLM >= 0.17 --performance-mode ("" = balanced)
  bool language_model_only = false;      ///< vLLM >= 0.17 --language-model-only (no vision encoder)
  /// vLLM --mm-encoder-tp-mode: "weights" (the default: the vision encoder's layers split over the TP ranks)
  /// or "data" (each rank holds the whole encoder and encodes its share of the images).
  std::string mm_encoder_tp_mode = "weights";
  std::string cudagraph_mode;  ///< vLLM compilation_config.cudagraph_mode ("" = version default)
  /// Explicit CUDA-graph capture sizes (vLLM --cuda-graph-sizes / cudagraph_capture_sizes, SGLang
  /// --cuda-graph-bs, TRT cuda_graph_config.batch_sizes); empty = the engine's list.
  std::vector<int> cuda_graph_sizes;
  std::optional<bool> cuda_graph_padding;      ///< TRT cuda_graph_config.enable_padding; SGLang
                                               ///< --disable-cuda-graph-padding (false)
  bool enable_torch_compile = false;           ///< SGLang --enable-torch-compile
  std::optional<int> torch_compile_max_bs;     ///< SGLang --torch-compile-max-bs
  bool disable_overlap_schedule = false;       ///< SGLang --disable-overlap-schedule / TRT
                                               ///< disable_overlap_scheduler (YAML)
  bool enable_mixed_chunk = false;             ///< SGLang --enable-mixed-chunk
  std::optional<int> scheduler_recv_interval;  ///< SGLang --scheduler-recv-interval (engine steps)
  std::optional<int> stream_interval;          ///< tokens per streamed chunk (vLLM/SGLang --stream-interval,
                                               ///< TRT stream_interval YAML)
  std::optional<int> api_server_count;         ///< vLLM --api-server-count
  std::string load_balance_method;             ///< SGLang --load-balance-method ("" = round_robin)
  std::string mamba_ssm_cache_dtype;           ///< vLLM --mamba-ssm-cache-dtype / SGLang --mamba-ssm-dtype
  std::string mamba_cache_dtype;  ///< vLLM --mamba-cache-dtype (conv and, when the above is auto, SSM)
                                  ///< (linear-attention recurrent state; "" = engine default)
  bool disable_hybrid_kv_cache_manager = false;  ///< vLLM --disable-hybrid-kv-cache-manager
  std::optional<double> swa_full_tokens_ratio;   ///< SGLang --swa-full-tokens-ratio
  bool disable_hybrid_swa_memory = false;        ///< SGLang --disable-hybrid-swa-memory
  bool enable_piecewise_cuda_graph = false;      ///< SGLang --enable-piecewise-cuda-graph
  std::string extra_llm_api_options;  ///< TRT --extra_llm_api_options YAML path (recorded, not read)
  std::string config_file;            ///< vLLM/SGLang --config YAML path (recorded, not read)
  std::string program;  ///< how it was launched: "vllm serve", "python3 -m sglang.launch_server",
                        ///< "sglang serve", "trtllm-serve" (to_argv reuses it)

  /// The launcher in front of the engine command, kept so that to_argv launches as written: "mpirun -n 1
  /// --oversubscribe --allow-run-as-root", "srun --mpi=pmix", "docker run --gpus all ... IMAGE"; empty when
  /// the engine is started directly.
  std::vector<std::string> wrapper;
  /// How many first words of the engine program the wrapper supplies (not written after it): 2 when a
  /// vllm/vllm-openai image runs `vllm serve` itself, 1 for `docker run --entrypoint vllm IMAGE serve ...`.
  std::size_t wrapper_program_words = 0;
  /// The engine version a container image's tag names ("vllm/vllm-openai:v0.17.0" -> "0.17.0",
  /// "lmsysorg/sglang:v0.5.6.post2-cu126" -> "0.5.6.post2"); "" without an image or a version tag. It is
  /// the engine version when none is given.
  std::string image_version;
  std::vector<std::string> argv;  ///< the engine command as given, after any wrapper (argv[0] = program)
  std::map<std::string, std::string> env;  ///< engine-relevant environment variables that were set
  /// Names of the variables the launch line sets that are not engine variables (not kept in `env`, their
  /// values never recorded); each is noted as having no modelled effect.
  std::vector<std::string> dropped_env;
  /// Canonical names of the options given explicitly (e.g. "--max-num-seqs", "--tp-size", "--tp_size").
  std::set<std::string> explicit_flags;
  /// Real options accepted but not modelled, in command-line order.
  std::vector<EngineOption> unmodelled_options;
  /// Keys of a TRT-LLM --extra_llm_api_options YAML applied with apply_config_yaml() that servelab does
  /// not model: flag = dotted key ("kv_cache_config.host_cache_size"), values[0] = the value's JSON text.
  std::vector<EngineOption> config_file_options;

  /// True when `flag` (canonical spelling) was given on the command line.
  bool is_explicit(const std::string& flag) const { return explicit_flags.count(flag) != 0; }

  /// Number of GPUs the launch occupies (tp * pp * dp, except with DP-attention — SGLang
  /// --enable-dp-attention, TRT-LLM enable_attention_dp — where dp lives inside the tp group: tp * pp).
  int gpus_used() const;

  /// Nodes and GPUs per node the launch itself states: SGLang --nnodes N > 1 (gpus_used() / N GPUs per
  /// node, rounded up), vLLM --data-parallel-size-local K (K * tp * pp GPUs per node, ceil(dp / K) nodes),
  /// TRT-LLM --gpus_per_node G (ceil(gpus_used() / G) nodes). nullopt when it states none (the cluster's
  /// node size then places the ranks). `flag` names the flag that states it (for messages);
  /// `split_evenly`: the engine spreads the launch's GPUs evenly over the nodes and a launch they do not
  /// divide is refused (SGLang: tp_size_per_node = tp_size // nnodes, server_args.py).
  struct NodePlacement {
    int nodes = 1;
    int gpus_per_node = 1;
    std::string flag;
    bool split_evenly = false;
  };
  std::optional<NodePlacement> stated_node_placement() const;
};

}  // namespace servelab::engines
