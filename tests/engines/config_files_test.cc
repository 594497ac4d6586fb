// Engine option files: the YAML subset, vLLM/SGLang --config, TRT-LLM --extra_llm_api_options.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "engines/yaml_subset.h"
#include "servelab/engines/engines.h"
#include "test_parse.h"

namespace se = servelab::engines;
using servelab::engines::detail::parse_yaml_subset;

namespace {
using servelab::engines::testing::parse;
}  // namespace

TEST(YamlSubset, MappingsScalarsLists) {
  auto j = parse_yaml_subset(
      "# comment\n"
      "enable_attention_dp: true\n"
      "cuda_graph_config:\n"
      "  enable_padding: True   # trailing comment\n"
      "  batch_sizes: [1, 2, 4, 8]\n"
      "kv_cache_config:\n"
      "  free_gpu_memory_fraction: 0.85\n"
      "  dtype: 'fp8'\n"
      "name: \"a # not a comment\"\n"
      "sizes:\n"
      "- 16\n"
      "- 32\n"
      "empty:\n");
  EXPECT_EQ(j["enable_attention_dp"], true);
  EXPECT_EQ(j["cuda_graph_config"]["enable_padding"], true);
  EXPECT_EQ(j["cuda_graph_config"]["batch_sizes"], nlohmann::json::parse("[1,2,4,8]"));
  EXPECT_DOUBLE_EQ(j["kv_cache_config"]["free_gpu_memory_fraction"].get<double>(), 0.85);
  EXPECT_EQ(j["kv_cache_config"]["dtype"], "fp8");
  EXPECT_EQ(j["name"], "a # not a comment");
  EXPECT_EQ(j["sizes"], nlohmann::json::parse("[16,32]"));
  EXPECT_TRUE(j["empty"].is_null());
}

TEST(YamlSubset, RefusesWhatItDoesNotSupport) {
  auto msg = [](const std::string& y) {
    try {
      parse_yaml_subset(y);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("<parsed>");
  };
  EXPECT_EQ(msg("a: 1\n\tb: 2\n"), "YAML line 2: tab indentation is not valid YAML");
  EXPECT_EQ(msg("a: &x 1\n"), "YAML line 1: unsupported YAML construct '&x 1'");
  EXPECT_EQ(msg("a: {b: 1}\n"), "YAML line 1: unsupported YAML construct '{b: 1}'");
  EXPECT_EQ(msg("a: 1\na: 2\n"), "YAML line 2: duplicate key 'a'");
  EXPECT_EQ(msg("a:\n  - b: 1\n"), "YAML line 2: lists of mappings are not supported");
  EXPECT_EQ(msg("just text\n"), "YAML line 1: expected 'key: value', got 'just text'");
}

// TensorRT-LLM reads the file with PyYAML (YAML 1.1: yes/on/off are booleans) and validates it with
// pydantic in lax mode (an int field takes 50.0 or "8", a bool field "yes" or 1); what neither accepts is
// refused with the key named.
TEST(ConfigFiles, TrtllmOptionsTakeWhatPyyamlAndPydanticAccept) {
  const auto c = parse("trtllm-serve m --tp_size 8 --ep_size 8 --extra_llm_api_options extra.yaml");
  const auto r = se::apply_config_yaml(c,
                                       "enable_attention_dp: yes\n"
                                       "max_batch_size: 128.0\n"
                                       "max_num_tokens: \"8192\"\n"
                                       "enable_chunked_prefill: On\n"
                                       "cuda_graph_config:\n"
                                       "  enable_padding: \"y\"\n"
                                       "  max_batch_size: 64\n"
                                       "attention_dp_config:\n"
                                       "  enable_balance: 1\n"
                                       "  timeout_iters: 50.0\n");
  EXPECT_TRUE(r.enable_dp_attention);
  EXPECT_EQ(r.max_num_seqs, 128);
  EXPECT_EQ(r.max_num_batched_tokens, 8192);
  EXPECT_TRUE(r.enable_chunked_prefill);
  EXPECT_TRUE(r.cuda_graph_padding);
  EXPECT_EQ(r.attention_dp_balance, true);
  EXPECT_EQ(r.attention_dp_timeout_iters, 50);
  const auto off = se::apply_config_yaml(c, "enable_attention_dp: off\n");
  EXPECT_FALSE(off.enable_dp_attention);
  auto refused = [&](const std::string& yaml) {
    try {
      se::apply_config_yaml(c, yaml);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(refused("max_batch_size: 12.5\n"),
            "extra_llm_api_options: max_batch_size must be an integer, got 12.5");
  EXPECT_EQ(refused("enable_attention_dp: maybe\n"),
            "extra_llm_api_options: enable_attention_dp must be true/false, got \"maybe\"");
  EXPECT_EQ(refused("enable_attention_dp: 2\n"),
            "extra_llm_api_options: enable_attention_dp must be true/false, got 2");
}

TEST(ConfigFiles, TrtllmExtraOptions) {
  auto c =
      parse("trtllm-serve m --tp_size 8 --ep_size 8 --max_batch_size 512 --extra_llm_api_options extra.yaml");
  EXPECT_EQ(c.extra_llm_api_options, "extra.yaml");
  auto r = se::apply_config_yaml(c,
                                 "enable_attention_dp: true\n"
                                 "max_batch_size: 256\n"
                                 "cuda_graph_config:\n"
                                 "  enable_padding: true\n"
                                 "  max_batch_size: 256\n"
                                 "kv_cache_config:\n"
                                 "  free_gpu_memory_fraction: 0.8\n"
                                 "  dtype: fp8\n"
                                 "moe_config:\n"
                                 "  backend: DEEPGEMM\n"
                                 "speculative_config:\n"
                                 "  decoding_type: MTP\n"
                                 "  num_nextn_predict_layers: 1\n"
                                 "print_iter_log: true\n");
  EXPECT_TRUE(r.enable_dp_attention);
  EXPECT_EQ(r.dp, 8);
  EXPECT_EQ(r.gpus_used(), 8);
  EXPECT_EQ(r.max_num_seqs, 256);  // the YAML overrides --max_batch_size
  EXPECT_EQ(r.cuda_graph_max_bs, 256);
  EXPECT_DOUBLE_EQ(r.gpu_memory_fraction, 0.8);
  EXPECT_EQ(r.kv_cache_dtype, "fp8");
  EXPECT_EQ(r.moe_runner_backend, "DEEPGEMM");
  ASSERT_TRUE(r.speculative);
  EXPECT_EQ(r.speculative->method, "MTP");
  EXPECT_EQ(r.speculative->num_speculative_tokens, 1);
  // enable_padding is modelled (graph replay of padded batches); print_iter_log is not.
  EXPECT_EQ(r.cuda_graph_padding, true);
  ASSERT_EQ(r.config_file_options.size(), 1u);
  EXPECT_EQ(r.config_file_options[0].flag, "print_iter_log");

  // Rendering back and re-applying reproduces the YAML-only knobs.
  std::string yaml = se::render_extra_llm_api_options(r);
  auto again = se::apply_config_yaml(parse("trtllm-serve m --tp_size 8 --ep_size 8"), yaml);
  EXPECT_TRUE(again.enable_dp_attention);
  EXPECT_EQ(again.cuda_graph_max_bs, 256);
  EXPECT_EQ(again.kv_cache_dtype, "fp8");
  EXPECT_EQ(again.moe_runner_backend, "DEEPGEMM");
  EXPECT_EQ(again.speculative->num_speculative_tokens, 1);
  EXPECT_EQ(again.cuda_graph_padding, true);
  EXPECT_EQ(again.config_file_options.size(), 1u);

  // attention_dp_config is read (its unknown keys stay options) and rendered back.
  auto adp = se::apply_config_yaml(parse("trtllm-serve m --tp_size 2"),
                                   "enable_attention_dp: true\nattention_dp_config:\n  enable_balance: true\n"
                                   "  timeout_iters: 20\n  batching_wait_iters: 4\n  other: 1\n");
  EXPECT_EQ(adp.attention_dp_balance, true);
  EXPECT_EQ(adp.attention_dp_timeout_iters, 20);
  EXPECT_EQ(adp.attention_dp_batching_wait_iters, 4);
  ASSERT_EQ(adp.config_file_options.size(), 1u);
  EXPECT_EQ(adp.config_file_options[0].flag, "attention_dp_config.other");
  auto adp_again =
      se::apply_config_yaml(parse("trtllm-serve m --tp_size 2"), se::render_extra_llm_api_options(adp));
  EXPECT_EQ(adp_again.attention_dp_balance, true);
  EXPECT_EQ(adp_again.attention_dp_timeout_iters, 20);
  EXPECT_EQ(adp_again.attention_dp_batching_wait_iters, 4);
  EXPECT_EQ(adp_again.config_file_options.size(), 1u);
  // A section that is no mapping, or a negative wait, is refused with the key named.
  auto expect_refused = [](const std::string& yaml, const std::string& message) {
    try {
      se::apply_config_yaml(parse("trtllm-serve m"), yaml);
      ADD_FAILURE() << "accepted: " << yaml;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  expect_refused("attention_dp_config: true\n", "attention_dp_config must be a mapping");
  expect_refused("attention_dp_config:\n  timeout_iters: -5\n",
                 "attention_dp_config.timeout_iters must be >= 0");

  EXPECT_TRUE(se::apply_config_yaml(parse("trtllm-serve m"), "cuda_graph_config: null\n").enforce_eager);
  EXPECT_THROW(se::apply_config_yaml(parse("trtllm-serve m"), "max_batch_size: lots\n"),
               std::invalid_argument);
}

TEST(ConfigFiles, VllmAndSglangConfig) {
  auto v = parse("vllm serve m --config cfg.yaml --max-num-seqs 64");
  EXPECT_EQ(v.config_file, "cfg.yaml");
  auto r = se::apply_config_yaml(v,
                                 "tensor_parallel_size: 8\n"
                                 "max-num-seqs: 512\n"
                                 "enable-chunked-prefill: false\n"
                                 "speculative-config:\n"
                                 "  method: mtp\n"
                                 "  num_speculative_tokens: 1\n"
                                 "served-model-name: [a, b]\n");
  EXPECT_EQ(r.tp, 8);
  EXPECT_EQ(r.max_num_seqs, 64);  // the command line wins over the file
  EXPECT_FALSE(r.enable_chunked_prefill);
  ASSERT_TRUE(r.speculative);
  EXPECT_EQ(r.speculative->num_speculative_tokens, 1);
  EXPECT_EQ(r.served_model_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(r.model, "m");
  EXPECT_THROW(se::apply_config_yaml(v, "not-a-vllm-flag: 1\n"), se::EngineArgError);

  auto s = parse("python3 -u -m sglang.launch_server --model-path m --config c.yaml");
  auto rs = se::apply_config_yaml(s, "tp_size: 8\nenable_dp_attention: true\ndp_size: 8\n");
  EXPECT_EQ(rs.tp, 8);
  EXPECT_EQ(rs.dp, 8);
  EXPECT_TRUE(rs.enable_dp_attention);
}

// The files a launch names are read and applied (sim run, sim serve and tune's twin use this); a missing
// or malformed file is an error naming the flag and the path.
TEST(ConfigFiles, ApplyConfigFilesReadsTheNamedFile) {
  const auto dir = std::filesystem::temp_directory_path() / ("servelab-cfg-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto yaml = dir / "extra.yaml";
  std::ofstream(yaml) << "moe_config:\n  backend: TRITON\nmax_batch_size: 256\n";
  auto t = se::apply_config_files(parse("trtllm-serve m --extra_llm_api_options " + yaml.string()));
  EXPECT_EQ(t.moe_runner_backend, "TRITON");
  EXPECT_EQ(t.max_num_seqs, 256);
  const auto cfg = dir / "cfg.yaml";
  std::ofstream(cfg) << "max_num_seqs: 64\n";
  EXPECT_EQ(se::apply_config_files(parse("vllm serve m --config " + cfg.string())).max_num_seqs, 64);
  // Nothing named: unchanged.
  EXPECT_EQ(se::apply_config_files(parse("vllm serve m -tp 2")).tp, 2);
  try {
    se::apply_config_files(
        parse("trtllm-serve m --extra_llm_api_options " + (dir / "missing.yaml").string()));
    ADD_FAILURE() << "a missing file was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("--extra_llm_api_options"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing.yaml"), std::string::npos) << e.what();
  }
  std::ofstream(yaml) << "max_batch_size: lots\n";
  EXPECT_THROW(se::apply_config_files(parse("trtllm-serve m --extra_llm_api_options " + yaml.string())),
               std::runtime_error);
  std::filesystem::remove_all(dir);
}
