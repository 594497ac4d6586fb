// Every launch command of the reference study (../shared/reference/seed-measurements.json) parses to the
// right LaunchConfig, every released failure is reproduced by resolve_launch with the same reason, every
// successful launch resolves, and every config round-trips through to_argv/to_env.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"

namespace se = servelab::engines;

namespace {

struct Entry {
  std::string engine, config, scenario, command;
  std::vector<std::string> env;
  std::optional<std::string> failure;
};

std::vector<Entry> load_entries() {
  auto path = servelab::common::source_dir() / ".." / "shared" / "reference" / "seed-measurements.json";
  auto j = nlohmann::json::parse(servelab::common::read_file(path));
  std::vector<Entry> out;
  for (const auto& e : j) {
    Entry x{e.at("engine"), e.at("config"), e.at("scenario"), e.at("command"), {}, std::nullopt};
    for (const auto& v : e.at("env")) x.env.push_back(v);
    if (e.contains("failure") && e["failure"].is_string()) x.failure = e["failure"].get<std::string>();
    out.push_back(std::move(x));
  }
  return out;
}

// The file records each argv joined by single spaces without shell quoting (the --speculative-config
// JSON appears bare), so it is split on whitespace, not with shell rules.
std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

se::LaunchConfig parse_entry(const Entry& e) {
  return se::parse_launch_command(words(e.command), se::parse_env_assignments(e.env));
}

const Entry& find(const std::vector<Entry>& all, const std::string& engine, const std::string& config) {
  for (const auto& e : all)
    if (e.engine == engine && e.config == config) return e;
  throw std::runtime_error("no entry " + engine + "/" + config);
}

// Modelled fields compared for round trips.
void expect_same(const se::LaunchConfig& a, const se::LaunchConfig& b, const std::string& ctx) {
  SCOPED_TRACE(ctx);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.model, b.model);
  EXPECT_EQ(a.served_model_names, b.served_model_names);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.port, b.port);
  EXPECT_EQ(a.tp, b.tp);
  EXPECT_EQ(a.dp, b.dp);
  EXPECT_EQ(a.ep, b.ep);
  EXPECT_EQ(a.pp, b.pp);
  EXPECT_EQ(a.dcp, b.dcp);
  EXPECT_EQ(a.enable_expert_parallel, b.enable_expert_parallel);
  EXPECT_EQ(a.enable_dp_attention, b.enable_dp_attention);
  EXPECT_EQ(a.max_model_len, b.max_model_len);
  EXPECT_DOUBLE_EQ(a.gpu_memory_fraction, b.gpu_memory_fraction);
  EXPECT_EQ(a.kv_cache_dtype, b.kv_cache_dtype);
  EXPECT_EQ(a.block_size, b.block_size);
  EXPECT_EQ(a.max_num_seqs, b.max_num_seqs);
  EXPECT_EQ(a.max_num_batched_tokens, b.max_num_batched_tokens);
  EXPECT_EQ(a.chunked_prefill_size, b.chunked_prefill_size);
  EXPECT_EQ(a.enable_chunked_prefill, b.enable_chunked_prefill);
  EXPECT_EQ(a.cuda_graph_max_bs, b.cuda_graph_max_bs);
  EXPECT_EQ(a.enforce_eager, b.enforce_eager);
  EXPECT_EQ(a.schedule_policy, b.schedule_policy);
  EXPECT_EQ(a.schedule_conservativeness, b.schedule_conservativeness);
  EXPECT_EQ(a.attention_backend, b.attention_backend);
  EXPECT_EQ(a.nsa_prefill_backend, b.nsa_prefill_backend);
  EXPECT_EQ(a.nsa_decode_backend, b.nsa_decode_backend);
  EXPECT_EQ(a.deep_gemm, b.deep_gemm);
  ASSERT_EQ(a.speculative.has_value(), b.speculative.has_value());
  if (a.speculative) {
    EXPECT_EQ(a.speculative->method, b.speculative->method);
    EXPECT_EQ(a.speculative->num_speculative_tokens, b.speculative->num_speculative_tokens);
    EXPECT_EQ(a.speculative->num_steps, b.speculative->num_steps);
    EXPECT_EQ(a.speculative->eagle_topk, b.speculative->eagle_topk);
    EXPECT_EQ(a.speculative->num_draft_tokens, b.speculative->num_draft_tokens);
  }
  EXPECT_EQ(a.tokenizer_mode, b.tokenizer_mode);
  EXPECT_EQ(a.reasoning_parser, b.reasoning_parser);
  EXPECT_EQ(a.tool_call_parser, b.tool_call_parser);
  EXPECT_EQ(a.enable_auto_tool_choice, b.enable_auto_tool_choice);
  EXPECT_EQ(a.chat_template, b.chat_template);
  EXPECT_EQ(a.trust_remote_code, b.trust_remote_code);
  EXPECT_EQ(a.enable_prefix_caching, b.enable_prefix_caching);
  EXPECT_EQ(a.unmodelled_options.size(), b.unmodelled_options.size());
}

}  // namespace

TEST(SeedStudy, EveryEntryParsesAndRoundTrips) {
  auto all = load_entries();
  ASSERT_EQ(all.size(), 34u);
  for (const auto& e : all) {
    SCOPED_TRACE(e.engine + "/" + e.config + "/" + e.scenario + ": " + e.command);
    se::LaunchConfig c = parse_entry(e);
    EXPECT_EQ(se::engine_kind_name(c.kind), e.engine);
    EXPECT_EQ(c.gpus_used(), 8);
    se::LaunchConfig back = se::parse_launch_command(se::to_argv(c), se::to_env(c));
    expect_same(c, back, "round trip: " + se::render_command(c));
    // The rendered shell line (env assignments first, JSON quoted) parses back to the same config.
    se::LaunchConfig line = se::parse_launch_command(se::split_command_line(se::render_command(c)));
    expect_same(c, line, "rendered line: " + se::render_command(c));
  }
}

// Through the engine modules (resolve_launch on DeepSeek-V3.2 and 8 x H200): the five recorded failures
// with the study's text and phase, every other launch resolved.
TEST(SeedStudy, EveryEntryResolvesOrFailsAsRecorded) {
  const auto model = servelab::model::deepseek_v32();
  const auto cluster = servelab::hardware::parse_cluster("8xH200");
  int failures = 0;
  for (const auto& e : load_entries()) {
    SCOPED_TRACE(e.engine + "/" + e.config + ": " + e.command);
    auto r = se::resolve_launch(parse_entry(e), model, cluster);
    if (e.failure) {
      ++failures;
      ASSERT_TRUE(std::holds_alternative<se::LaunchFailure>(r));
      const auto& f = std::get<se::LaunchFailure>(r);
      EXPECT_TRUE(f.verbatim);
      EXPECT_EQ(f.message, *e.failure);
      EXPECT_EQ(f.phase, e.failure->rfind("runtime error:", 0) == 0 ? se::FailurePhase::kRuntime
                                                                    : se::FailurePhase::kStartup);
    } else {
      ASSERT_TRUE(std::holds_alternative<se::ResolvedLaunch>(r)) << std::get<se::LaunchFailure>(r).message;
      const auto& l = std::get<se::ResolvedLaunch>(r);
      EXPECT_EQ(l.layout.gpus, 8);
      EXPECT_EQ(l.version, e.engine == "vllm" ? "0.13.0" : e.engine == "sglang" ? "0.5.6.post2" : "1.2.0rc5");
      if (e.engine == "vllm") {
        EXPECT_EQ(l.execution.attention, se::AttentionKernel::kFlashMlaSparse);
        EXPECT_EQ(l.block_size, 64);
      }
      if (e.engine == "sglang") {
        EXPECT_EQ(l.block_size, 64);
      }
    }
  }
  EXPECT_EQ(failures, 5);
}

TEST(SeedStudy, VllmConfigs) {
  auto all = load_entries();
  auto base = parse_entry(find(all, "vllm", "baseline-tp8"));
  EXPECT_EQ(base.model, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(base.served_model_names, std::vector<std::string>{"deepseek-ai/DeepSeek-V3.2"});
  EXPECT_EQ(base.tp, 8);
  EXPECT_EQ(base.dp, 1);
  EXPECT_EQ(base.ep, 1);
  EXPECT_EQ(base.dcp, 1);
  EXPECT_EQ(base.tokenizer_mode, "deepseek_v32");
  EXPECT_EQ(base.reasoning_parser, "deepseek_v3");
  EXPECT_TRUE(base.deep_gemm);
  EXPECT_TRUE(base.attention_backend.empty());
  EXPECT_FALSE(base.speculative.has_value());
  EXPECT_DOUBLE_EQ(base.gpu_memory_fraction, 0.9);
  EXPECT_EQ(base.port, 8000);
  EXPECT_TRUE(base.is_explicit("--tensor-parallel-size"));
  EXPECT_TRUE(base.unmodelled_options.empty());

  auto dp = parse_entry(find(all, "vllm", "dp8-ep-maxlen81920"));
  EXPECT_EQ(dp.tp, 1);
  EXPECT_EQ(dp.dp, 8);
  EXPECT_TRUE(dp.enable_expert_parallel);
  EXPECT_EQ(dp.ep, 8);
  EXPECT_EQ(dp.max_model_len, 81920);
  EXPECT_EQ(dp.gpus_used(), 8);

  EXPECT_EQ(parse_entry(find(all, "vllm", "dcp8")).dcp, 8);

  auto mtp = parse_entry(find(all, "vllm", "mtp1"));
  ASSERT_TRUE(mtp.speculative.has_value());
  EXPECT_EQ(mtp.speculative->method, "mtp");
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 1);

  auto dg = parse_entry(find(all, "vllm", "deepgemm-off"));
  EXPECT_FALSE(dg.deep_gemm);
  EXPECT_EQ(dg.env.at("VLLM_USE_DEEP_GEMM"), "0");

  auto tool = parse_entry(find(all, "vllm", "tool-call-parser"));
  EXPECT_EQ(tool.tool_call_parser, "deepseek_v32");
  EXPECT_TRUE(tool.enable_auto_tool_choice);

  EXPECT_EQ(parse_entry(find(all, "vllm", "max-model-len-32768")).max_model_len, 32768);
  auto cutlass = parse_entry(find(all, "vllm", "attn-cutlass-mla"));
  EXPECT_EQ(cutlass.attention_backend, "CUTLASS_MLA");
  EXPECT_EQ(cutlass.env.at("VLLM_ATTENTION_BACKEND"), "CUTLASS_MLA");
}

TEST(SeedStudy, SglangConfigs) {
  auto all = load_entries();
  auto base = parse_entry(find(all, "sglang", "baseline-tp8"));
  EXPECT_EQ(base.model, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(base.host, "0.0.0.0");
  EXPECT_EQ(base.port, 8000);
  EXPECT_EQ(base.chat_template, "./tool_chat_template_deepseekv32.jinja");
  EXPECT_EQ(base.tp, 8);
  EXPECT_EQ(base.dp, 1);
  EXPECT_FALSE(base.enable_dp_attention);
  EXPECT_DOUBLE_EQ(base.gpu_memory_fraction, 0.0);  // auto until resolve_launch

  auto dpa = parse_entry(find(all, "sglang", "tp8-dp-attn"));
  EXPECT_TRUE(dpa.enable_dp_attention);
  EXPECT_EQ(dpa.dp, 1);
  auto dp8 = parse_entry(find(all, "sglang", "tp8-dp8-dp-attn"));
  EXPECT_EQ(dp8.dp, 8);
  EXPECT_EQ(dp8.gpus_used(), 8);
  auto ep8 = parse_entry(find(all, "sglang", "tp8-dp8-dp-attn-ep8"));
  EXPECT_EQ(ep8.ep, 8);

  auto mtp = parse_entry(find(all, "sglang", "mtp-eagle-1step"));
  ASSERT_TRUE(mtp.speculative.has_value());
  EXPECT_EQ(mtp.speculative->method, "EAGLE");
  EXPECT_EQ(mtp.speculative->num_steps, 1);
  EXPECT_EQ(mtp.speculative->eagle_topk, 1);
  EXPECT_EQ(mtp.speculative->num_draft_tokens, 2);
  EXPECT_EQ(mtp.speculative->num_speculative_tokens, 1);
  EXPECT_TRUE(mtp.chat_template.empty());

  EXPECT_FALSE(parse_entry(find(all, "sglang", "deepgemm-off")).deep_gemm);

  // `--dp 8` is accepted through argparse's unique-prefix abbreviation of --dp-size.
  auto parsers = parse_entry(find(all, "sglang", "dp8-dp-attn-parsers"));
  EXPECT_EQ(parsers.dp, 8);
  EXPECT_EQ(parsers.reasoning_parser, "deepseek-v3");
  EXPECT_EQ(parsers.tool_call_parser, "deepseekv32");
  EXPECT_EQ(parse_entry(find(all, "sglang", "dp8-dp-attn-parsers-ctx32k")).max_model_len, 32768);
  EXPECT_EQ(parse_entry(find(all, "sglang", "dp8-dp-attn-parsers-ctx32k-kvfp8")).kv_cache_dtype, "fp8_e4m3");
  auto fa3 = parse_entry(find(all, "sglang", "dp8-dp-attn-parsers-ctx32k-nsa-fa3"));
  EXPECT_EQ(fa3.attention_backend, "nsa");
  EXPECT_EQ(fa3.nsa_prefill_backend, "fa3");
  EXPECT_EQ(fa3.nsa_decode_backend, "fa3");
  auto fm = parse_entry(find(all, "sglang", "dp8-dp-attn-parsers-ctx32k-nsa-flashmla"));
  EXPECT_EQ(fm.nsa_prefill_backend, "flashmla_sparse");
  EXPECT_EQ(fm.nsa_decode_backend, "flashmla_kv");

  // The recommended command uses the --model alias of --model-path and the default host/port.
  auto opt = parse_entry(find(all, "sglang", "optimized"));
  EXPECT_EQ(opt.model, "deepseek-ai/DeepSeek-V3.2");
  EXPECT_EQ(opt.host, "127.0.0.1");
  EXPECT_EQ(opt.port, 30000);
  EXPECT_EQ(opt.dp, 8);
  EXPECT_TRUE(opt.enable_dp_attention);
}

TEST(SeedStudy, TrtllmConfigs) {
  auto all = load_entries();
  auto base = parse_entry(find(all, "trtllm", "baseline-tp8"));
  EXPECT_EQ(base.model, "/workspace/DeepSeek-v3.2");
  EXPECT_EQ(base.tp, 8);
  EXPECT_EQ(base.ep, 1);
  EXPECT_EQ(base.max_num_seqs, 2048);
  EXPECT_EQ(base.max_num_batched_tokens, 8192);
  EXPECT_DOUBLE_EQ(base.gpu_memory_fraction, 0.9);
  EXPECT_FALSE(base.enable_chunked_prefill);
  EXPECT_EQ(base.host, "localhost");
  auto ep = parse_entry(find(all, "trtllm", "tp8-ep8"));
  EXPECT_EQ(ep.ep, 8);
  EXPECT_EQ(ep.pp, 1);
  EXPECT_EQ(ep.gpus_used(), 8);
  auto dg = parse_entry(find(all, "trtllm", "tp8-ep8-deepgemm-off"));
  EXPECT_FALSE(dg.deep_gemm);
  EXPECT_EQ(dg.env.at("TRTLLM_DG_ENABLED"), "0");
}
