// Engine defaults tables, the start-up/run-time refusal rules and defaults of the seed study's releases
// through resolve_launch (the one implementation: vLLM 0.13.0, SGLang 0.5.6.post2, TensorRT-LLM 1.2.0rc5 on
// DeepSeek-V3.2), gpus_used, rendering.
#include <gtest/gtest.h>

#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "engines/launch_detail.h"
#include "engines/sglang/sglang_defaults.h"
#include "engines/trtllm/trtllm_defaults.h"
#include "engines/vllm/vllm_defaults.h"
#include "servelab/common/paths.h"
#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "test_parse.h"

namespace se = servelab::engines;
namespace md = servelab::model;
namespace hw = servelab::hardware;

namespace {

using servelab::engines::testing::parse;

const md::ModelSpec kV32 = md::deepseek_v32();
const std::string kH200 = "8xH200";
std::string b200() {
  return "8xB200";
}

// DeepSeek-V3.2 without its sparse indexer: a dense MLA model (DeepSeek-V3 shape).
md::ModelSpec dense_mla() {
  md::ModelSpec m = kV32;
  for (auto& g : m.layers)
    if (auto* a = std::get_if<md::MlaAttention>(&g.layer.attention)) {
      a->index_topk = 0;
      a->indexer = false;
    }
  return m;
}

md::ModelSpec no_mtp() {
  md::ModelSpec m = kV32;
  m.mtp_layers = 0;
  return m;
}

// The launch resolved for the seed study's release of its engine.
std::variant<se::ResolvedLaunch, se::LaunchFailure> resolve(se::LaunchConfig c, const md::ModelSpec& m,
                                                            const std::string& cluster) {
  c.engine_version = c.kind == se::EngineKind::kVllm     ? "0.13.0"
                     : c.kind == se::EngineKind::kSglang ? "0.5.6.post2"
                                                         : "1.2.0rc5";
  return se::resolve_launch(c, m, hw::parse_cluster(cluster));
}

// The refusal of a launch, or nullopt when it resolves.
std::optional<se::LaunchFailure> refusal(const se::LaunchConfig& c, const md::ModelSpec& m,
                                         const std::string& cluster) {
  auto r = resolve(c, m, cluster);
  if (auto* f = std::get_if<se::LaunchFailure>(&r)) return *f;
  return std::nullopt;
}

// The effective config (defaults filled) of a launch that resolves; throws with the refusal otherwise.
se::LaunchConfig resolved_config(const se::LaunchConfig& c, const md::ModelSpec& m,
                                 const std::string& cluster) {
  auto r = resolve(c, m, cluster);
  if (auto* f = std::get_if<se::LaunchFailure>(&r)) throw std::runtime_error(f->message);
  return std::get<se::ResolvedLaunch>(r).config;
}

}  // namespace

namespace {

// The defaults tables against the research notes they cite (../shared/reference/engine-versions.md), read
// and parsed here: a table entry that drifts from the notes (or notes that change) fails.
std::string engine_versions_md() {
  namespace sc = servelab::common;
  return sc::read_file(sc::source_dir() / ".." / "shared" / "reference" / "engine-versions.md");
}

// The submatches of the first match of `pattern` in `text` (fails the test when there is none).
std::vector<std::string> find_in_notes(const std::string& text, const std::string& pattern) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex(pattern))) {
    ADD_FAILURE() << "engine-versions.md: no match for " << pattern;
    return std::vector<std::string>(8);
  }
  std::vector<std::string> out;
  for (std::size_t i = 1; i < m.size(); ++i) out.push_back(m[i].str());
  out.resize(8);
  return out;
}

}  // namespace

TEST(DefaultsTables, ValuesAndSources) {
  const std::string md = engine_versions_md();
  // vLLM get_batch_defaults, serve on a >= 70 GiB non-A100 GPU: "max_num_batched_tokens **8192**,
  // max_num_seqs **1024**".
  auto v =
      find_in_notes(md, R"(`vllm serve`: max_num_batched_tokens \*\*(\d+)\*\*, max_num_seqs \*\*(\d+)\*\*)");
  EXPECT_EQ(std::to_string(se::kVllmDefaults.max_num_batched_tokens_large_gpu.value), v[0]);
  EXPECT_EQ(std::to_string(se::kVllmDefaults.max_num_seqs_large_gpu.value), v[1]);
  // The per-version table's gpu_memory_utilization row, column 0.13.0 (the 4th release column).
  v = find_in_notes(md,
                    R"(\| gpu_memory_utilization \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \|)");
  EXPECT_DOUBLE_EQ(se::kVllmDefaults.gpu_memory_utilization.value, std::stod(v[3]));
  // "MLA and DSA backends force 64 (FlashMLA)".
  v = find_in_notes(md, R"(MLA and DSA backends force (\d+)\s+\(FlashMLA\))");
  EXPECT_EQ(std::to_string(se::kVllmDefaults.block_size_sparse_mla.value), v[0]);
  // SGLang's memory tiers: the H200 row "| < 160 GiB | **H20, H200** | 8192 | 256 / 512 |" is tier 4.
  v = find_in_notes(md, R"(\| < 160 GiB \| \*\*H20, H200\*\* \| (\d+) \| (\d+) / (\d+) \|)");
  EXPECT_EQ(std::to_string(se::kSglangDefaults.tiers[4].chunked_prefill_size), v[0]);
  EXPECT_EQ(std::to_string(se::kSglangDefaults.tiers[4].cuda_graph_max_bs_tp_ge4), v[2]);
  // "With EAGLE/MTP it resets to **48**".
  v = find_in_notes(md, R"(With EAGLE/MTP it resets to \*\*(\d+)\*\*)");
  EXPECT_EQ(std::to_string(se::kSglangDefaults.max_running_requests_speculative.value), v[0]);
  // TensorRT-LLM: "builder.py gives **2048 / 8192** [unverified for 1.0]" and the free-memory fraction row.
  v = find_in_notes(md, R"(builder\.py gives \*\*(\d+) / (\d+)\*\* \[(unverified)?)");
  EXPECT_EQ(std::to_string(se::kTrtllmDefaults.max_batch_size.value), v[0]);
  EXPECT_EQ(std::to_string(se::kTrtllmDefaults.max_num_tokens.value), v[1]);
  EXPECT_EQ(se::kTrtllmDefaults.max_batch_size.verified, v[2].empty());  // the notes' [unverified] mark
  v = find_in_notes(md, R"(\| kv_cache free_gpu_memory_fraction \| ([0-9.]+) of memory)");
  EXPECT_DOUBLE_EQ(se::kTrtllmDefaults.kv_cache_free_gpu_memory_fraction.value, std::stod(v[0]));
  // Each vLLM default names the engine file it comes from.
  EXPECT_NE(std::string(se::kVllmDefaults.gpu_memory_utilization.source).find("cache.py"), std::string::npos);
}

TEST(SeedReleaseDefaults, VllmOnH200) {
  auto c = resolved_config(parse("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8"), kV32, kH200);
  EXPECT_EQ(c.max_num_seqs, 1024);
  EXPECT_EQ(c.max_num_batched_tokens, 8192);
  EXPECT_EQ(c.block_size, 64);
  EXPECT_EQ(c.max_model_len, 163840);
  EXPECT_EQ(c.attention_backend, "FLASHMLA_SPARSE");
  EXPECT_EQ(c.kv_cache_dtype, "auto");
  // min(1024 * (1 + 0) * 2, 512) = 512, below 8192.
  EXPECT_EQ(c.cuda_graph_max_bs, 512);
  auto fp8 = resolved_config(parse("vllm serve m --kv-cache-dtype fp8 --max-num-seqs 64"), kV32, kH200);
  EXPECT_EQ(fp8.kv_cache_dtype, "fp8_ds_mla");
  EXPECT_EQ(fp8.cuda_graph_max_bs, 128);  // 64 * 2
  auto mtp = resolved_config(
      parse(R"(vllm serve m --max-num-seqs 100 --speculative-config '{"method":"mtp"}')"), kV32, kH200);
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 1);  // from num_nextn_predict_layers
  EXPECT_EQ(mtp.cuda_graph_max_bs, 400);                  // 100 * 2 * 2
  const std::string a100 = "8xA100";
  // (DeepSeek-V3.2 itself has no attention backend on sm80: the dense MLA shape takes the A100 tier.)
  auto small = resolved_config(parse("vllm serve m"), dense_mla(), a100);
  EXPECT_EQ(small.max_num_seqs, 256);
  EXPECT_EQ(small.max_num_batched_tokens, 2048);
}

TEST(SeedReleaseDefaults, SglangMemFractionMatchesPerfFacts) {
  // deepseek-v32-perf-facts.md §4: TP8 0.897, TP8+MTP 0.882, DP8-attention 0.769, DP8-attention+MTP 0.754.
  auto tp8 =
      resolved_config(parse("python3 -m sglang.launch_server --model-path m --tp-size 8"), kV32, kH200);
  EXPECT_DOUBLE_EQ(tp8.gpu_memory_fraction, 0.897);
  EXPECT_EQ(tp8.chunked_prefill_size, 8192);
  EXPECT_EQ(tp8.cuda_graph_max_bs, 512);
  EXPECT_EQ(tp8.block_size, 64);
  EXPECT_EQ(tp8.attention_backend, "nsa");
  EXPECT_EQ(tp8.kv_cache_dtype, "bfloat16");
  EXPECT_EQ(tp8.nsa_prefill_backend, "flashmla_sparse");
  EXPECT_EQ(tp8.nsa_decode_backend, "fa3");
  EXPECT_EQ(tp8.schedule_conservativeness, 1.0);
  EXPECT_FALSE(tp8.max_num_seqs.has_value());  // derived from the KV pool by the twin
  auto mtp = resolved_config(
      parse("python3 -m sglang.launch_server --model-path m --tp-size 8 --speculative-algorithm EAGLE"), kV32,
      kH200);
  EXPECT_DOUBLE_EQ(mtp.gpu_memory_fraction, 0.882);
  EXPECT_EQ(mtp.max_num_seqs, 48);
  EXPECT_EQ(mtp.speculative->num_steps, 3);
  EXPECT_EQ(mtp.speculative->num_draft_tokens, 4);
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 3);
  auto dp8 = resolved_config(
      parse("python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention"),
      kV32, kH200);
  EXPECT_DOUBLE_EQ(dp8.gpu_memory_fraction, 0.769);
  EXPECT_EQ(dp8.chunked_prefill_size, 1024);  // 8192 // 8
  EXPECT_DOUBLE_EQ(*dp8.schedule_conservativeness, 0.3);
  auto dp8mtp = resolved_config(
      parse("python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention "
            "--speculative-algorithm EAGLE --speculative-num-steps 1 --speculative-eagle-topk 1 "
            "--speculative-num-draft-tokens 2"),
      kV32, kH200);
  EXPECT_DOUBLE_EQ(dp8mtp.gpu_memory_fraction, 0.754);
  EXPECT_EQ(dp8mtp.speculative->num_draft_tokens, 2);
  // An explicit fraction is kept; FP8 KV switches the NSA kernels.
  auto fp8 = resolved_config(parse("python3 -m sglang.launch_server --model-path m "
                                   "--mem-fraction-static 0.85 --kv-cache-dtype fp8_e4m3"),
                             kV32, kH200);
  EXPECT_DOUBLE_EQ(fp8.gpu_memory_fraction, 0.85);
  EXPECT_EQ(fp8.nsa_decode_backend, "flashmla_kv");
  EXPECT_EQ(
      resolved_config(parse("python3 -m sglang.launch_server --model-path m"), kV32, b200()).kv_cache_dtype,
      "fp8_e4m3");
}

TEST(SeedReleaseDefaults, Trtllm) {
  auto c = resolved_config(parse("trtllm-serve m --tp_size 8"), kV32, kH200);
  EXPECT_EQ(c.cuda_graph_max_bs, 128);
  EXPECT_EQ(c.max_model_len, 163840);
  EXPECT_EQ(c.max_num_seqs, 2048);
}

TEST(SeedReleaseRules, VllmAttentionBackends) {
  auto msg = [](const char* backend, const std::string& hw, const std::string& extra = "") {
    auto f = refusal(parse("vllm serve m -tp 8" + extra, {{"VLLM_ATTENTION_BACKEND", backend}}), kV32, hw);
    return f ? f->message : std::string("<starts>");
  };
  // On B200 (sm100) CUTLASS_MLA has kernels; only the sparse reason is left.
  EXPECT_EQ(
      msg("CUTLASS_MLA", b200()),
      "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration. "
      "Reason: ['sparse not supported']");
  EXPECT_EQ(msg("FLASHMLA_SPARSE", kH200), "<starts>");
  EXPECT_EQ(msg("FLASHMLA_SPARSE", kH200, " --block-size 16"),
            "ValueError: Selected backend AttentionBackendEnum.FLASHMLA_SPARSE is not valid for this "
            "configuration. "
            "Reason: ['block_size not supported']");
  EXPECT_EQ(
      msg("FLASH_ATTN", kH200),
      "ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN is not valid for this configuration. "
      "Reason: ['MLA not supported', 'sparse not supported']");
  // A dense MLA model is fine on FLASHMLA but not on a Blackwell-only kernel on Hopper.
  const md::ModelSpec dense = dense_mla();
  auto f = refusal(parse("vllm serve m -tp 8", {{"VLLM_ATTENTION_BACKEND", "FLASHMLA"}}), dense, kH200);
  EXPECT_FALSE(f.has_value());
  f = refusal(parse("vllm serve m -tp 8", {{"VLLM_ATTENTION_BACKEND", "CUTLASS_MLA"}}), dense, kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(
      f->message,
      "ValueError: Selected backend AttentionBackendEnum.CUTLASS_MLA is not valid for this configuration. "
      "Reason: ['compute capability not supported']");
  const std::string a100 = "8xA100";
  f = refusal(parse("vllm serve m"), kV32, a100);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "vllm.attention_backend.none_valid");
  EXPECT_FALSE(refusal(parse("vllm serve m"), dense, a100));  // dense MLA: TRITON_MLA etc.
  f = refusal(parse("vllm serve m", {{"VLLM_ATTENTION_BACKEND", "NOT_A_BACKEND"}}), kV32, kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->rule, "vllm.attention_backend.unknown");
  EXPECT_FALSE(f->verbatim);
}

TEST(SeedReleaseRules, VllmDcpAndLimits) {
  auto f = refusal(parse("vllm serve m -tp 8 -dcp 8"), kV32, kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->phase, se::FailurePhase::kRuntime);
  EXPECT_EQ(f->rule, "vllm.dcp.sparse_flashmla");
  const md::ModelSpec dense = dense_mla();
  EXPECT_FALSE(refusal(parse("vllm serve m -tp 8 -dcp 8"), dense, kH200).has_value());
  EXPECT_EQ(refusal(parse("vllm serve m -tp 8 -dcp 3"), dense, kH200)->rule, "vllm.dcp.divides_tp");
  EXPECT_EQ(refusal(parse("vllm serve m -tp 8 -dp 2"), kV32, kH200)->rule, "parallel.gpu_count");
  EXPECT_EQ(refusal(parse("vllm serve m --max-model-len 200000"), kV32, kH200)->rule,
            "vllm.max_model_len.too_long");
  EXPECT_FALSE(refusal(parse("vllm serve m --max-model-len 200000", {{"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "1"}}),
                       kV32, kH200));
  // vllm/envs.py: .strip().lower() in ("1", "true") [recalled]: " True " allows it too, "yes" does not.
  EXPECT_FALSE(
      refusal(parse("vllm serve m --max-model-len 200000", {{"VLLM_ALLOW_LONG_MAX_MODEL_LEN", " True "}}),
              kV32, kH200));
  EXPECT_EQ(refusal(parse("vllm serve m --max-model-len 200000", {{"VLLM_ALLOW_LONG_MAX_MODEL_LEN", "yes"}}),
                    kV32, kH200)
                ->rule,
            "vllm.max_model_len.too_long");
  // A negative draft length was given, not left out: the message says what is wrong with it.
  EXPECT_EQ(
      refusal(
          parse(R"(vllm serve m -tp 8 --speculative-config '{"method":"mtp","num_speculative_tokens":-5}')"),
          kV32, kH200)
          ->message,
      "--speculative-config: num_speculative_tokens must be >= 1 (got -5) for method 'mtp'");
  const md::ModelSpec no_mtp_model = no_mtp();
  EXPECT_EQ(
      refusal(parse(R"(vllm serve m --speculative-config '{"method":"mtp"}')"), no_mtp_model, kH200)->rule,
      "vllm.speculative.no_mtp_head");
}

TEST(SeedReleaseRules, SglangRules) {
  const std::string base = "python3 -m sglang.launch_server --model-path m --tp-size 8";
  // get_bool_env_var: "true" / "1" (any case) allow a context length beyond the model's; SGLang's words.
  EXPECT_EQ(refusal(parse(base + " --context-length 200000"), kV32, kH200)->rule,
            "sglang.context_length.too_long");
  EXPECT_FALSE(refusal(
      parse(base + " --context-length 200000", {{"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "True"}}), kV32,
      kH200));
  EXPECT_EQ(
      refusal(parse(base + " --context-length 200000", {{"SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", "0"}}),
              kV32, kH200)
          ->rule,
      "sglang.context_length.too_long");
  auto f = refusal(parse(base, {{"SGLANG_ENABLE_JIT_DEEPGEMM", "0"}}), kV32, kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->message, "server fails to start when DeepGEMM is disabled (SGLANG_ENABLE_JIT_DEEPGEMM=0)");
  const md::ModelSpec dense = dense_mla();
  EXPECT_FALSE(refusal(parse(base, {{"SGLANG_ENABLE_JIT_DEEPGEMM", "0"}}), dense, kH200));
  // FA3 is Hopper-only; the Blackwell-only TRT-LLM MLA kernel has nothing for sm90.
  EXPECT_FALSE(refusal(parse(base + " --nsa-decode-backend fa3"), kV32, kH200));
  EXPECT_EQ(refusal(parse(base + " --nsa-decode-backend fa3"), kV32, b200())->rule,
            "sglang.backend.compute_capability");
  EXPECT_EQ(refusal(parse(base + " --attention-backend trtllm_mla"), dense, kH200)->message,
            "--attention-backend trtllm_mla has no kernel for sm90 (H200)");
  EXPECT_EQ(refusal(parse(base + " --dp-size 3 --enable-dp-attention"), kV32, kH200)->rule,
            "sglang.dp_attention.divides_tp");
  EXPECT_EQ(refusal(parse(base + " --dp-size 2"), kV32, kH200)->rule, "parallel.gpu_count");
}

TEST(SeedReleaseRules, TrtllmRules) {
  EXPECT_FALSE(refusal(parse("trtllm-serve m --tp_size 8 --ep_size 8"), kV32, kH200));
  EXPECT_EQ(refusal(parse("trtllm-serve m --tp_size 8 --ep_size 3"), kV32, kH200)->rule,
            "trtllm.ep.divides_tp");
  EXPECT_EQ(refusal(parse("trtllm-serve m --tp_size 16"), kV32, kH200)->rule, "parallel.gpu_count");
  // speculative_config: MTP (DeepSeek-V3.2 has its MTP layer), Eagle / Eagle3 and NGram are modelled; the
  // other decoding types of TensorRT-LLM are refused as unmodelled, a misspelled one as unknown (a new
  // user's decoding_type Eagle was refused as "needs MTP layers").
  auto speculative = [](const std::string& type) {
    auto c = parse("trtllm-serve m --tp_size 8");
    c.speculative = se::SpeculativeConfig{};
    c.speculative->method = type;
    c.speculative->num_speculative_tokens = 3;
    return c;
  };
  EXPECT_FALSE(refusal(speculative("MTP"), kV32, kH200));
  auto eagle = resolve(speculative("Eagle"), kV32, kH200);
  ASSERT_TRUE(std::holds_alternative<se::ResolvedLaunch>(eagle));
  EXPECT_EQ(std::get<se::ResolvedLaunch>(eagle).speculative->method, se::SpeculativePolicy::Method::kEagle3);
  const auto medusa = refusal(speculative("Medusa"), kV32, kH200);
  ASSERT_TRUE(medusa);
  EXPECT_EQ(medusa->rule, "trtllm.speculative.unmodelled");
  EXPECT_EQ(
      medusa->message,
      "speculative_config decoding_type Medusa: not modelled by the twin (modelled: MTP, Eagle / Eagle3, "
      "NGram)");
  const auto typo = refusal(speculative("Draft_Target"), kV32, kH200);
  ASSERT_TRUE(typo);
  EXPECT_EQ(typo->rule, "trtllm.speculative.unknown");
}

// An architecture published after a release cannot be loaded by it (EngineModule::architecture_releases):
// Qwen3.5 on vLLM 0.13.0 (the default) and SGLang 0.5.6.post2 stops at start-up; 0.17.1 / 0.5.9 load it.
TEST(ArchitectureRelease, AReleaseThatPredatesTheArchitectureRefusesIt) {
  md::ModelSpec m = kV32;
  m.architecture = "Qwen3_5ForConditionalGeneration";
  m.model_type = "qwen3_5_text";
  auto f = refusal(parse("vllm serve m -tp 8"), m, kH200);
  ASSERT_TRUE(f);
  EXPECT_EQ(f->phase, se::FailurePhase::kStartup);
  EXPECT_EQ(f->rule, "vllm.architecture.release");
  EXPECT_NE(f->message.find("vLLM 0.13.0 predates Qwen3_5ForConditionalGeneration"), std::string::npos)
      << f->message;
  EXPECT_NE(f->message.find("releases before 0.16.0 cannot load it"), std::string::npos) << f->message;
  EXPECT_NE(f->message.find("modelled releases that can: 0.17.1, 0.24.0"), std::string::npos) << f->message;
  // (refusal() pins the seed study's releases; resolve_launch keeps the parsed one.)
  const auto later =
      se::resolve_launch(se::parse_launch_command(se::split_command_line("vllm serve m -tp 8"), {}, "0.17.1"),
                         m, hw::parse_cluster(kH200));
  const auto* later_refusal = std::get_if<se::LaunchFailure>(&later);
  EXPECT_TRUE(!later_refusal || later_refusal->rule != "vllm.architecture.release") << later_refusal->message;
  const std::string sglang = "python3 -m sglang.launch_server --model-path m --tp-size 8";
  EXPECT_EQ(refusal(parse(sglang), m, kH200)->rule, "sglang.architecture.release");
  // No modelled TensorRT-LLM release loads it: the message says so, in the same place, and how to ask for
  // the first release that does.
  auto t = refusal(parse("trtllm-serve m --tp_size 8"), m, kH200);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->rule, "trtllm.architecture.release");
  EXPECT_NE(t->message.find("releases before 1.2.0 cannot load it"), std::string::npos) << t->message;
  EXPECT_NE(t->message.find("; modelled releases that can: none (the newest, 1.2.0rc5, predates 1.2.0); "
                            "--engine-version 1.2.0 predicts it with 1.2.0rc5's flags and defaults [not a "
                            "modelled release]"),
            std::string::npos)
      << t->message;
  // The release sim run predicts without --engine-version: past the bound where a modelled one is.
  EXPECT_EQ(se::default_version_for(se::EngineKind::kVllm, m.architecture), "0.17.1");
  EXPECT_EQ(se::default_version_for(se::EngineKind::kSglang, m.architecture), "0.5.9");
  EXPECT_EQ(se::default_version_for(se::EngineKind::kTrtllm, m.architecture), "1.2.0rc5");
  EXPECT_EQ(se::default_version_for(se::EngineKind::kVllm, "Qwen3ForCausalLM"), "0.13.0");
  // An architecture without a bound is accepted on every release (Qwen3 on vLLM 0.9.1).
  EXPECT_EQ(se::architecture_release(se::EngineKind::kVllm, "Qwen3ForCausalLM"), nullptr);
}

// The release a launch is parsed for (parse_launch_for_model): --engine-version, else an image's tag, else
// the default moved past the architecture's bound, parsed with that release's flags (a flag the default
// lacks is no error when the release predicted has it).
TEST(ArchitectureRelease, TheLaunchIsParsedForTheReleaseItIsPredictedOn) {
  md::ModelSpec qwen35 = kV32;
  qwen35.architecture = "Qwen3_5ForConditionalGeneration";
  auto as = [](const md::ModelSpec& m) { return [m](const se::LaunchConfig&) { return m; }; };
  auto argv = [](const std::string& cmd) { return se::split_command_line(cmd); };
  // --language-model-only exists from vLLM 0.17 on: parsed for 0.17.1, the oldest release past the bound.
  auto moved = se::parse_launch_for_model(argv("vllm serve m --language-model-only"), {}, "", as(qwen35));
  EXPECT_EQ(moved.config.engine_version, "0.17.1");
  EXPECT_NE(moved.note.find("vLLM 0.13.0 (the default) predates Qwen3_5ForConditionalGeneration, so 0.17.1"),
            std::string::npos)
      << moved.note;
  // An image's tag names the release: kept (0.13.0 is then refused by resolve_launch, 0.24.0 predicted).
  const std::string docker = "docker run --gpus all vllm/vllm-openai:v";
  auto tagged = se::parse_launch_for_model(argv(docker + "0.24.0 --model m"), {}, "", as(qwen35));
  EXPECT_EQ(tagged.config.engine_version, "0.24.0");
  EXPECT_EQ(tagged.note, "");
  auto old_tag = se::parse_launch_for_model(argv(docker + "0.13.0 --model m"), {}, "", as(qwen35));
  EXPECT_EQ(old_tag.config.engine_version, "0.13.0");
  EXPECT_EQ(
      std::get<se::LaunchFailure>(se::resolve_launch(old_tag.config, qwen35, hw::parse_cluster(kH200))).rule,
      "vllm.architecture.release");
  // The tag's release lacks the flag: that release's error, never another release's parse.
  try {
    se::parse_launch_for_model(argv(docker + "0.13.0 --model m --language-model-only"), {}, "", as(qwen35));
    ADD_FAILURE() << "vLLM 0.13.0 has no --language-model-only";
  } catch (const se::EngineArgError& e) {
    EXPECT_NE(std::string(e.what()).find("--language-model-only"), std::string::npos) << e.what();
    EXPECT_EQ(e.release, "0.13.0");  // the release its flags were checked against
  }
  // No release parses it (--bogus): the error is that of the release the model is predicted on, 0.17.1,
  // which knows --language-model-only; a model without a bound gets the default's, naming both.
  auto error_of = [&](const std::string& cmd, const md::ModelSpec& m) -> se::EngineArgError {
    try {
      se::parse_launch_for_model(argv(cmd), {}, "", as(m));
    } catch (const se::EngineArgError& e) {
      return e;
    }
    ADD_FAILURE() << cmd << " parsed";
    return se::EngineArgError(se::EngineKind::kVllm, "");
  };
  const auto moved_error = error_of("vllm serve m --language-model-only --bogus", qwen35);
  EXPECT_STREQ(moved_error.what(), "vllm: error: unrecognized arguments: --bogus");
  EXPECT_EQ(moved_error.release, "0.17.1");
  const auto default_error = error_of("vllm serve m --language-model-only --bogus", kV32);
  EXPECT_STREQ(default_error.what(), "vllm: error: unrecognized arguments: --language-model-only --bogus");
  EXPECT_EQ(default_error.release, "0.13.0");
  EXPECT_EQ(default_error.unrecognized, (std::vector<std::string>{"--language-model-only", "--bogus"}));
  // click (TensorRT-LLM) names one unknown option at a time, as written.
  try {
    se::parse_launch_command(argv("trtllm-serve m --bogus=1"));
    ADD_FAILURE() << "--bogus parsed";
  } catch (const se::EngineArgError& e) {
    EXPECT_EQ(e.unrecognized, (std::vector<std::string>{"--bogus=1"}));
  }
  // Given, it is used; a model without a bound keeps the default, whose missing flag is the error.
  EXPECT_EQ(se::parse_launch_for_model(argv("vllm serve m"), {}, "0.24.0", as(qwen35)).config.engine_version,
            "0.24.0");
  EXPECT_EQ(se::parse_launch_for_model(argv("vllm serve m"), {}, "", as(kV32)).config.engine_version,
            "0.13.0");
  EXPECT_THROW(se::parse_launch_for_model(argv("vllm serve m --language-model-only"), {}, "", as(kV32)),
               se::EngineArgError);
  // --mamba-cache-dtype sets the SSM state's dtype too while --mamba-ssm-cache-dtype is auto.
  auto state = [&](const std::string& flags) {
    return std::get<se::ResolvedLaunch>(
               se::resolve_launch(parse("vllm serve m -tp 8 " + flags), kV32, hw::parse_cluster(kH200)))
        .state_dtype;
  };
  EXPECT_EQ(state("--mamba-cache-dtype float32"), md::DType::kFp32);
  EXPECT_EQ(state("--mamba-cache-dtype float32 --mamba-ssm-cache-dtype float16"), md::DType::kFp16);
  EXPECT_EQ(state(""), kV32.dtype);
}

// A ROCm build of the engine runs on AMD GPUs only: predicted as the CUDA build, with a warning (a new-user
// trial got a normal prediction for lmsysorg/sglang:...-rocm700-mi35x on 8xH200, without a word).
TEST(ArchitectureRelease, ARocmImageIsNamedAsSuch) {
  auto as = [](const md::ModelSpec& m) { return [m](const se::LaunchConfig&) { return m; }; };
  auto notices = [&](const std::string& cmd) {
    return se::parse_launch_for_model(se::split_command_line(cmd), {}, "", as(kV32)).notices;
  };
  const auto sg = notices(
      "docker run --gpus all lmsysorg/sglang:v0.5.6.post2-rocm700-mi35x python3 -m sglang.launch_server "
      "--model-path m");
  ASSERT_FALSE(sg.empty());
  EXPECT_EQ(
      sg.back(),
      "warning: the image lmsysorg/sglang:v0.5.6.post2-rocm700-mi35x is a ROCm build (AMD GPUs): the "
      "prediction is of SGLang's CUDA build on the given NVIDIA GPUs, which this image does not run on");
  const auto latest = notices("docker run rocm/vllm:latest vllm serve m");  // the rolling-tag path too
  ASSERT_EQ(latest.size(), 2u);
  EXPECT_NE(latest[1].find("the image rocm/vllm:latest is a ROCm build"), std::string::npos) << latest[1];
  EXPECT_TRUE(notices("docker run vllm/vllm-openai:v0.13.0 vllm serve m").empty());
}

// SGLang's deprecated MoE switches are mapped as SGLang maps them, not dropped as inert: --enable-ep-moe is
// EP over the TP group, --enable-flashinfer-trtllm-moe the FlashInfer TRT-LLM runner (a trial saw experts
// stay TP-sliced 8 x 1 under --enable-ep-moe).
TEST(SglangDefaults, DeprecatedMoeSwitchesMapToTheirCurrentFlags) {
  const std::string cmd =
      "python3 -m sglang.launch_server --model-path m --tp 8 --enable-ep-moe --enable-flashinfer-trtllm-moe";
  const auto c = se::parse_launch_command(se::split_command_line(cmd), {}, "0.5.6.post2");
  EXPECT_EQ(c.ep, 8);
  EXPECT_EQ(c.moe_runner_backend, "flashinfer_trtllm");
  EXPECT_TRUE(c.unmodelled_options.empty());
  const auto r = std::get<se::ResolvedLaunch>(se::resolve_launch(c, kV32, hw::parse_cluster(kH200)));
  EXPECT_EQ(r.layout.ep, 8);
  EXPECT_TRUE(r.inert_flags.empty()) << r.inert_flags.front();
}

// A config's _name_or_path may be a local checkpoint directory with a trailing slash: messages name its last
// component (nvidia/Llama-3.1-70B-Instruct-FP8's "/opt/.../Llama-3.1-70B-Instruct/" gave "and  has none").
TEST(Messages, DisplayNameOfALocalCheckpointDirectory) {
  md::ModelSpec m;
  m.id = "/opt/zhiyu_hf_ckpts/Llama-3.1-70B-Instruct/";
  m.architecture = "LlamaForCausalLM";
  EXPECT_EQ(se::detail::display_name(m), "Llama-3.1-70B-Instruct");
  m.id = "Qwen/Qwen3-8B";
  EXPECT_EQ(se::detail::display_name(m), "Qwen3-8B");
  m.id = "/";
  EXPECT_EQ(se::detail::display_name(m), "LlamaForCausalLM");
}

// trtllm-serve --config is the newer spelling of --extra_llm_api_options: applied, so not "no modelled
// effect"; --gpus_per_node places the ranks (both were listed as inert).
TEST(TrtllmDefaults, ConfigFileAndGpusPerNodeAreNotInert) {
  const auto c = se::parse_launch_command(
      se::split_command_line("trtllm-serve m --tp_size 8 --gpus_per_node 8 --config extra.yaml"), {},
      "1.2.0rc5");
  EXPECT_EQ(c.extra_llm_api_options, "extra.yaml");
  const auto r = std::get<se::ResolvedLaunch>(se::resolve_launch(c, kV32, hw::parse_cluster(b200())));
  for (const auto& f : r.inert_flags) {
    EXPECT_EQ(f.find("--config"), std::string::npos) << f;
    EXPECT_EQ(f.find("--gpus_per_node"), std::string::npos) << f;
  }
}

// What parse_launch_for_model tells the user about the release (ReleasedLaunch::notices, printed on stderr
// by sim run and sim serve): a tag that names no release, --engine-version over a tag's release, a release
// that is not modelled; none for a modelled release stated once.
TEST(ArchitectureRelease, NoticesNameTheReleasePredicted) {
  md::ModelSpec qwen35 = kV32;
  qwen35.architecture = "Qwen3_5ForConditionalGeneration";
  auto as = [](const md::ModelSpec& m) { return [m](const se::LaunchConfig&) { return m; }; };
  auto notices = [&](const std::string& cmd, const std::string& version, const md::ModelSpec& m) {
    return se::parse_launch_for_model(se::split_command_line(cmd), {}, version, as(m)).notices;
  };
  const std::string modelled = "(modelled: 0.10.2, 0.11.0, 0.13.0, 0.17.1, 0.24.0)";
  // `latest` and `nightly` run the engine's last release: the newest modelled one is predicted, with a note.
  auto latest = se::parse_launch_for_model(
      se::split_command_line("docker run --gpus all vllm/vllm-openai:latest --model m"), {}, "", as(qwen35));
  EXPECT_EQ(latest.config.engine_version, "0.24.0");
  ASSERT_EQ(latest.notices.size(), 1u);
  EXPECT_EQ(latest.notices[0],
            "note: the image tag 'latest' (vllm/vllm-openai:latest) moves with the engine's releases: vLLM "
            "0.24.0, the newest modelled release, is predicted; pin a release tag or pass --engine-version "
            "for another " +
                modelled);
  auto nightly =
      notices("docker run lmsysorg/sglang:nightly python3 -m sglang.launch_server --model-path m", "", kV32);
  ASSERT_EQ(nightly.size(), 1u);
  EXPECT_NE(nightly[0].find("SGLang " + se::engine_module(se::EngineKind::kSglang).releases.back().version +
                            ", the newest modelled release, is predicted"),
            std::string::npos)
      << nightly[0];
  // Another tag that names no release: the module's default (or the model's oldest loading release).
  auto other = notices("docker run vllm/vllm-openai:cu129 --model m", "", qwen35);
  ASSERT_EQ(other.size(), 1u);
  EXPECT_EQ(other[0],
            "note: the image tag 'cu129' (vllm/vllm-openai:cu129) names no release, so vLLM 0.17.1 is "
            "predicted, the oldest modelled release that can load Qwen3_5ForConditionalGeneration; "
            "--engine-version picks another " +
                modelled);
  // --engine-version wins over the tag's release, and says so; the same release (v-prefixed) is no news.
  auto over = notices("docker run vllm/vllm-openai:v0.13.0 --model m", "0.11.0", kV32);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0],
            "note: --engine-version 0.11.0 wins over the release the image tag names, 0.13.0 "
            "(vllm/vllm-openai:v0.13.0): vLLM 0.11.0 is predicted");
  EXPECT_TRUE(notices("docker run vllm/vllm-openai:v0.13.0 --model m", "0.13.0", kV32).empty());
  EXPECT_TRUE(notices("vllm serve m", "", kV32).empty());
  // A release that is not modelled: a warning up front naming the modelled releases that stand in.
  auto unreleased = notices("docker run vllm/vllm-openai:v0.99.0 --model m", "", kV32);
  ASSERT_EQ(unreleased.size(), 1u);
  EXPECT_EQ(unreleased[0],
            "warning: vLLM 0.99.0 is not a modelled release " + modelled +
                ": its flags and defaults are taken to be those of the newest modelled release, "
                "0.24.0 [unverified] (whether the validation corpus holds runs of it: the error band's "
                "warnings)");
  auto between = notices("vllm serve m", "0.12.0", kV32);
  ASSERT_EQ(between.size(), 1u);
  EXPECT_NE(between[0].find("those of its place between the modelled 0.11.0 and 0.13.0"), std::string::npos)
      << between[0];
  auto older = notices("python3 -m sglang.launch_server --model-path m", "0.5.0", kV32);
  ASSERT_EQ(older.size(), 1u);
  EXPECT_NE(older[0].find("warning: SGLang 0.5.0 is not a modelled release"), std::string::npos) << older[0];
  EXPECT_NE(older[0].find("those of the oldest modelled release, 0.5.3rc0"), std::string::npos) << older[0];
}

TEST(GpusUsed, PerEngine) {
  EXPECT_EQ(parse("vllm serve m -tp 2 -dp 2 -pp 2").gpus_used(), 8);
  EXPECT_EQ(parse("vllm serve m -tp 8 -dcp 8").gpus_used(), 8);
  EXPECT_EQ(
      parse("python3 -m sglang.launch_server --model-path m --tp-size 8 --dp-size 8 --enable-dp-attention")
          .gpus_used(),
      8);
  EXPECT_EQ(parse("python3 -m sglang.launch_server --model-path m --tp-size 4 --dp-size 2").gpus_used(), 8);
  EXPECT_EQ(parse("trtllm-serve m --tp_size 8 --ep_size 8").gpus_used(), 8);
  EXPECT_EQ(parse("trtllm-serve m --tp_size 4 --pp_size 2").gpus_used(), 8);
  EXPECT_STREQ(se::engine_kind_name(se::EngineKind::kSglang), "sglang");
  EXPECT_STREQ(se::failure_phase_name(se::FailurePhase::kRuntime), "runtime");
}

TEST(Render, TuneChangesAFieldAndRendersTheCommand) {
  auto c = parse("vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --tokenizer-mode deepseek_v32 --seed 1");
  c.max_num_seqs = 512;
  c.deep_gemm = false;
  c.attention_backend = "FLASHMLA_SPARSE";
  EXPECT_EQ(
      se::render_command(c),
      "VLLM_ATTENTION_BACKEND=FLASHMLA_SPARSE VLLM_USE_DEEP_GEMM=0 vllm serve deepseek-ai/DeepSeek-V3.2 "
      "-tp 8 --tokenizer-mode deepseek_v32 --max-num-seqs 512 --seed 1");
  auto back = se::parse_launch_command(se::to_argv(c), se::to_env(c));
  // The rendered line itself (env words first) parses back too.
  auto line = se::parse_launch_command(se::split_command_line(se::render_command(c)));
  EXPECT_EQ(line.max_num_seqs, 512);
  EXPECT_FALSE(line.deep_gemm);
  EXPECT_EQ(line.attention_backend, "FLASHMLA_SPARSE");
  EXPECT_EQ(se::parse_launch_command({"env", "VLLM_ATTENTION_BACKEND=FLASHMLA_VLLM_V1", "vllm", "serve", "m"})
                .attention_backend,
            "FLASHMLA");
  EXPECT_EQ(back.max_num_seqs, 512);
  EXPECT_FALSE(back.deep_gemm);
  EXPECT_EQ(back.attention_backend, "FLASHMLA_SPARSE");

  auto s = parse(
      "python3 -m sglang.launch_server --model deepseek-ai/DeepSeek-V3.2 --tp 8 --dp 8 "
      "--enable-dp-attention");
  s.chunked_prefill_size = 4096;
  s.speculative = se::SpeculativeConfig{"EAGLE", 1, 1, 1, 2, "", ""};
  EXPECT_EQ(se::render_command(s),
            "python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --tp-size 8 --dp-size 8 "
            "--enable-dp-attention --chunked-prefill-size 4096 --speculative-algorithm EAGLE "
            "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2");

  auto v = parse(R"(vllm serve m --speculative-config '{"method":"mtp","num_speculative_tokens":1}')");
  EXPECT_EQ(se::render_command(v),
            R"(vllm serve m --speculative-config '{"method":"mtp","num_speculative_tokens":1}')");

  auto t = parse("trtllm-serve m --tp_size 8 --ep_size 8 --pp_size 1");
  t.max_num_seqs = 256;
  EXPECT_EQ(se::render_command(t), "trtllm-serve m --tp_size 8 --ep_size 8 --pp_size 1 --max_batch_size 256");
}
