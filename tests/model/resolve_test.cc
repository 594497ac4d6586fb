// resolve_model / load_config / from_config / the registry: every model id of the corpus, the HF cache
// layout, and each error message.
#include "servelab/model/model.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"

namespace servelab::model {
namespace {

namespace fs = std::filesystem;

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

/// Sets an environment variable for the scope of a test.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

fs::path temp_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("servelab_model_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

/// Points every Hugging Face cache root at an empty directory, so a developer's own cache cannot change
/// what the corpus ids resolve to.
struct NoHfCache {
  fs::path dir = temp_dir("no_hf");
  ScopedEnv hub{"HF_HUB_CACHE", dir.string()};
  ScopedEnv hf_home{"HF_HOME", dir.string()};
  ScopedEnv xdg{"XDG_CACHE_HOME", dir.string()};
  ScopedEnv home{"HOME", dir.string()};
  ~NoHfCache() { fs::remove_all(dir); }
};

TEST(Resolve, EveryCorpusModelId) {
  const NoHfCache no_cache;
  struct Case {
    const char* id;
    const char* file;  // in <data dir>/model-configs, "" = built in
    const char* variant;
  };
  const Case cases[] = {
      {"zai-org/GLM-4.5-Air", "glm-4.5-air.json", "glm4_moe"},
      {"zai-org/GLM-4.5-Air-FP8", "glm-4.5-air-fp8.json", "glm4_moe"},
      {"GLM-4.5-Air", "glm-4.5-air.json", "glm4_moe"},
      {"zai-org/GLM-4.6", "glm-4.6.json", "glm4_moe"},
      {"zai-org/GLM-4.6-FP8", "glm-4.6-fp8.json", "glm4_moe"},
      {"zai-org/GLM-5.2-FP8", "glm-5.2-fp8.json", "deepseek_v3"},
      {"openai/gpt-oss-120b", "gpt-oss-120b.json", "gpt_oss"},
      {"openai/gpt-oss-20b", "gpt-oss-20b.json", "gpt_oss"},
      {"Qwen/Qwen3-8B", "qwen3-8b.json", "qwen3"},
      {"Qwen/Qwen3-8B-FP8", "qwen3-8b-fp8.json", "qwen3"},
      {"vllm-ascend/Qwen3-8B-W8A8", "qwen3-8b-w8a8.json", "qwen3"},
      {"Qwen/Qwen3-14B", "qwen3-14b.json", "qwen3"},
      {"Qwen/Qwen3-14B-FP8", "qwen3-14b-fp8.json", "qwen3"},
      {"Qwen/Qwen3-14B-AWQ", "qwen3-14b-awq.json", "qwen3"},
      {"Qwen/Qwen3-32B", "qwen3-32b.json", "qwen3"},
      {"Qwen/Qwen3-32B-FP8", "qwen3-32b-fp8.json", "qwen3"},
      {"Qwen/Qwen3-235B-A22B-Instruct-2507", "qwen3-235b-a22b-instruct-2507.json", "qwen3_moe"},
      {"Qwen/Qwen3-235B-A22B-Instruct-2507-FP8", "qwen3-235b-a22b-instruct-2507-fp8.json", "qwen3_moe"},
      {"Qwen/Qwen3.5-9B", "qwen3.5-9b.json", "qwen3_5"},
      {"Qwen/Qwen3.5-35B-A3B", "qwen3.5-35b-a3b.json", "qwen3_5"},
      {"Qwen/Qwen3.5-35B-A3B-FP8", "qwen3.5-35b-a3b-fp8.json", "qwen3_5"},
      {"deepseek-ai/DeepSeek-V3.2", "", "deepseek_v3"},
      {"/workspace/DeepSeek-v3.2", "", "deepseek_v3"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.id);
    const ModelSpec m = resolve_model(c.id);
    EXPECT_EQ(m.variant, c.variant);
    if (*c.file != '\0') {
      EXPECT_EQ(fs::path(m.config_source).filename(), c.file);
    } else {
      EXPECT_EQ(m.id, "deepseek-ai/DeepSeek-V3.2");
      EXPECT_EQ(m.config_source.rfind("built-in DeepSeek-V3.2", 0), 0u) << m.config_source;
    }
  }
  // Bare names and case: the last component, case-insensitively; the exact id wins over the FP8 sibling.
  EXPECT_EQ(resolve_model("qwen/qwen3-8b").id, "Qwen/Qwen3-8B");
  EXPECT_EQ(resolve_model("Qwen3-8B").id, "Qwen/Qwen3-8B");
  EXPECT_EQ(resolve_model("DEEPSEEK-AI/DEEPSEEK-V3.2").id, "deepseek-ai/DeepSeek-V3.2");
}

TEST(Resolve, PathsToADirectoryOrAFile) {
  const fs::path d = temp_dir("paths");
  fs::copy_file(common::data_dir() / "model-configs" / "qwen3-8b.json", d / "config.json");
  EXPECT_EQ(resolve_model(d.string()).config_source, (d / "config.json").string());
  EXPECT_EQ(resolve_model((d / "config.json").string()).id, "Qwen/Qwen3-8B");
  // A local directory named like DeepSeek-V3.2 with its own config.json is read, not the built-in.
  fs::create_directories(d / "DeepSeek-v3.2");
  fs::copy_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json",
                d / "DeepSeek-v3.2" / "config.json");
  EXPECT_EQ(resolve_model((d / "DeepSeek-v3.2").string()).model_type, "glm_moe_dsa");
  fs::remove_all(d);
}

TEST(Resolve, HuggingFaceCachePrefersRefsMain) {
  const fs::path hub = temp_dir("hub");
  const std::string cfg = common::read_file(common::data_dir() / "model-configs" / "qwen3-14b.json");
  nlohmann::json other = nlohmann::json::parse(cfg);
  other["num_hidden_layers"] = 2;
  write(hub / "models--Acme--Tiny" / "snapshots" / "aaa" / "config.json", other.dump());
  write(hub / "models--Acme--Tiny" / "snapshots" / "bbb" / "config.json", cfg);
  write(hub / "models--Acme--Tiny" / "refs" / "main", "bbb\n");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ModelSpec m = resolve_model("Acme/Tiny");
  EXPECT_EQ(m.num_layers(), 40);
  EXPECT_EQ(m.config_source, (hub / "models--Acme--Tiny" / "snapshots" / "bbb" / "config.json").string());
  // A real node's cached DeepSeek-V3.2 config wins over the built-in one.
  write(hub / "models--deepseek-ai--DeepSeek-V3.2" / "snapshots" / "ccc" / "config.json",
        common::read_file(common::data_dir() / "model-configs" / "glm-5.2-fp8.json"));
  EXPECT_EQ(resolve_model("deepseek-ai/DeepSeek-V3.2").model_type, "glm_moe_dsa");
  // A quantized name whose cached config.json states no quantization and has no hf_quant_config.json beside
  // it (fetched alone) is read in its dtype and says so; with the file beside it, the ModelOpt recipe.
  const fs::path fp4 = hub / "models--Acme--Tiny-FP4" / "snapshots" / "ddd";
  write(fp4 / "config.json", cfg);
  write(hub / "models--Acme--Tiny-FP4" / "refs" / "main", "ddd\n");
  const ModelSpec bare = resolve_model("Acme/Tiny-FP4");
  EXPECT_EQ(bare.quantization.method, QuantMethod::kNone);
  EXPECT_EQ(bare.config_assumption, ModelSpec::ConfigAssumption::kQuantizationUnstated);
  EXPECT_EQ(
      bare.config_assumption_note,
      "the cached config.json of Acme/Tiny-FP4 (" + (fp4 / "config.json").string() +
          ") states no quantization and no hf_quant_config.json lies beside it: read as bf16 weights "
          "though its name says NVFP4; fetch that file (`hf download Acme/Tiny-FP4 hf_quant_config.json`) "
          "or give the checkpoint folder");
  write(fp4 / "hf_quant_config.json",
        common::read_file(common::data_dir() / "model-configs" / "aic" /
                          "nvidia--Qwen3-235B-A22B-NVFP4_hf_quant_config.json"));
  const ModelSpec with = resolve_model("Acme/Tiny-FP4");
  EXPECT_EQ(with.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(with.config_assumption, ModelSpec::ConfigAssumption::kNone);
  fs::remove_all(hub);
}

// A name the data dir holds under another (meta-llama's Llama-3.1-70B, renamed from Meta-Llama-3.1-70B,
// whose config model-configs/aic keeps under the old name) is not taken silently: the error names the near
// names, ModelOpt's quantization files aside.
TEST(Resolve, UnknownModelSuggestsNearNamesOfTheDataDir) {
  const fs::path hub = temp_dir("empty_hub_near");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ScopedEnv home("HF_HOME", (hub / "home").string());
  const std::string msg = message_of([] { resolve_model("meta-llama/Llama-3.1-70B"); });
  EXPECT_NE(
      msg.find("\nThe data dir has configs of near names (a renamed or re-published checkpoint?): "
               "meta-llama/Meta-Llama-3.1-70B, nvidia/Llama-3.1-70B-Instruct-FP8; name one of them to use "
               "its config.\n"),
      std::string::npos)
      << msg;
  EXPECT_EQ(message_of([] { resolve_model("Acme/NoSuchModel"); }).find("near names"), std::string::npos);
  fs::remove_all(hub);
}

TEST(Resolve, UnknownModelNamesEveryPlaceSearched) {
  const fs::path hub = temp_dir("empty_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ScopedEnv home("HF_HOME", (hub / "home").string());
  const std::string msg = message_of([] { resolve_model("Acme/NoSuchModel"); });
  EXPECT_EQ(msg.rfind("unknown model \"Acme/NoSuchModel\"; searched:", 0), 0u) << msg;
  EXPECT_NE(msg.find("path Acme/NoSuchModel (does not exist)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("built-in models (DeepSeek-V3.2"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Hugging Face cache " +
                     (hub / "models--Acme--NoSuchModel" / "snapshots" / "*" / "config.json").string()),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("Hugging Face cache " + (hub / "home" / "hub" / "models--Acme--NoSuchModel").string()),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("data dir " + (common::data_dir() / "model-configs").string() +
                     " (no config whose _name_or_path is \"Acme/NoSuchModel\" or ends in \"NoSuchModel\")"),
            std::string::npos)
      << msg;
  // A directory without config.json, and a data dir that does not exist.
  const ScopedEnv data("SERVELAB_DATA_DIR", (hub / "nowhere").string());
  const std::string msg2 = message_of([&] { resolve_model(hub.string()); });
  EXPECT_NE(msg2.find("directory " + hub.string() + " (exists, but holds no config.json)"), std::string::npos)
      << msg2;
  EXPECT_NE(msg2.find("data dir " + (hub / "nowhere" / "model-configs").string() +
                      " (does not exist; set SERVELAB_DATA_DIR)"),
            std::string::npos)
      << msg2;
  fs::remove_all(hub);
}

// AIConfigurator's offline copies (model-configs/aic/ORG--NAME_config.json) answer a Hub id, in any case;
// a ModelOpt checkpoint's quantization comes from its ORG--NAME_hf_quant_config.json when config.json has
// none (nvidia/DeepSeek-V3.1-NVFP4: NVFP4 weights, its attention projections kept BF16 by exclude_modules).
TEST(Resolve, AicConfigCopiesWithTheirModelOptQuantization) {
  const fs::path hub = temp_dir("aic_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ScopedEnv home("HF_HOME", (hub / "home").string());
  const ModelSpec r1 = resolve_model("deepseek-ai/deepseek-r1");
  EXPECT_EQ(r1.config_source,
            (common::data_dir() / "model-configs" / "aic" / "deepseek-ai--DeepSeek-R1_config.json").string());
  EXPECT_EQ(r1.model_type, "deepseek_v3");
  EXPECT_EQ(r1.quantization.experts.dtype, DType::kFp8);
  const ModelSpec fp4 = resolve_model("nvidia/DeepSeek-V3.1-NVFP4");
  EXPECT_NE(fp4.config_source.find("nvidia--DeepSeek-V3.1-NVFP4_config.json + "
                                   "nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json"),
            std::string::npos)
      << fp4.config_source;
  EXPECT_EQ(fp4.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(fp4.quantization.experts.dtype, DType::kNvfp4);
  EXPECT_EQ(fp4.quantization.source, "quantization_config: modelopt NVFP4");
  // An id with no copy names the file it looked for.
  const std::string msg = message_of([] { resolve_model("nvidia/No-Such-NVFP4"); });
  EXPECT_NE(
      msg.find((common::data_dir() / "model-configs" / "aic" / "nvidia--No-Such-NVFP4_config.json").string() +
               " (no such file)"),
      std::string::npos)
      << msg;
  fs::remove_all(hub);
}

// A dated revision (DeepSeek-R1-0528: "-" and four digits) whose own config is nowhere takes the data dir's
// config of the checkpoint without the tag, and says so; the revision's own config, when the cache has it,
// wins; an unknown base names the place it looked.
TEST(Resolve, DatedRevisionTakesItsBaseCheckpointsConfig) {
  const fs::path hub = temp_dir("revision_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ScopedEnv home("HF_HOME", (hub / "home").string());
  const ModelSpec r = resolve_model("deepseek-ai/DeepSeek-R1-0528");
  EXPECT_EQ(
      r.config_source,
      (common::data_dir() / "model-configs" / "aic" / "deepseek-ai--DeepSeek-R1_config.json").string() +
          ", the config of deepseek-ai/DeepSeek-R1 standing in for its dated revision "
          "deepseek-ai/DeepSeek-R1-0528 (same architecture assumed; give the revision's own config.json "
          "to use it)");
  EXPECT_EQ(r.model_type, "deepseek_v3");
  EXPECT_EQ(r.quantization.experts.dtype, DType::kFp8);
  const std::string msg = message_of([] { resolve_model("Acme/NoSuchModel-0528"); });
  EXPECT_NE(msg.find("the data dir's config of Acme/NoSuchModel, for the dated revision (none)"),
            std::string::npos)
      << msg;
  // No tag: "-8B" and a five-digit tail are not dates.
  EXPECT_EQ(message_of([] { resolve_model("Acme/Model-12345"); }).find("dated revision"), std::string::npos);
  // The revision's own config in the cache wins.
  const fs::path snap = hub / "models--deepseek-ai--DeepSeek-R1-0528" / "snapshots" / "abc";
  fs::create_directories(snap);
  fs::copy_file(common::data_dir() / "model-configs" / "aic" / "deepseek-ai--DeepSeek-R1_config.json",
                snap / "config.json");
  EXPECT_EQ(resolve_model("deepseek-ai/DeepSeek-R1-0528").config_source, (snap / "config.json").string());
  fs::remove_all(hub);
}

// ORG/NAME with no config of its own but another publisher's of the same NAME: that config, as the last
// resort and said (nvidia/Qwen3-32B-FP8 used to read Qwen's block-FP8 recipe silently); a bare name or a
// path keeps matching by its last component without an assumption.
TEST(Resolve, AnotherPublishersConfigIsTheLastResortAndSaid) {
  const fs::path hub = temp_dir("publisher_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const ScopedEnv home("HF_HOME", (hub / "home").string());
  const ModelSpec n = resolve_model("nvidia/Qwen3-32B-FP8");
  EXPECT_EQ(n.config_assumption, ModelSpec::ConfigAssumption::kOtherPublisher);
  EXPECT_EQ(n.config_assumption_note,
            "no config of nvidia/Qwen3-32B-FP8 was found: the config of Qwen/Qwen3-32B-FP8 (another "
            "publisher's checkpoint of that name) is assumed, with its quantization recipe; give the "
            "checkpoint's own config.json to use it");
  EXPECT_EQ(n.quantization.method, QuantMethod::kFp8Block);
  const ModelSpec u = resolve_model("someone/Qwen3-32B");
  EXPECT_EQ(u.config_assumption, ModelSpec::ConfigAssumption::kOtherPublisher);
  EXPECT_EQ(u.config_assumption_note.find(", with its quantization recipe"), std::string::npos);
  EXPECT_EQ(resolve_model("Qwen3-32B-FP8").config_assumption, ModelSpec::ConfigAssumption::kNone);
  EXPECT_EQ(resolve_model("Qwen/Qwen3-32B-FP8").config_assumption, ModelSpec::ConfigAssumption::kNone);
  fs::remove_all(hub);
}

// A re-quantization whose own config is nowhere (an ORG/NAME-FP4-V2 id): its base checkpoint's config (any
// publisher, here via the dated revision's undated name) with the ModelOpt recipe of the same publisher's
// checkpoint of that architecture; the assumption is said. Without such a sibling (another publisher, or an
// architecture the publisher has no NVFP4 checkpoint of) it stays unknown; the real config, cached, wins.
// ORG/NAME-FP8 of the base's own publisher, its config nowhere (Qwen/Qwen3.5-397B-A17B-FP8, an InferenceX
// model): the base config with the block-FP8 recipe of the publisher's FP8 checkpoint of that architecture
// (qwen3_5_moe and qwen3_5_moe_text alike), said as an assumption. A publisher without such a checkpoint
// of the architecture gets none.
TEST(Resolve, AnFp8NameTakesItsPublishersBlockFp8Recipe) {
  const NoHfCache no_cache;
  const fs::path hub = temp_dir("fp8_recipe_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const fs::path configs = common::data_dir() / "model-configs";
  const ModelSpec m = resolve_model("Qwen/Qwen3.5-397B-A17B-FP8");
  EXPECT_EQ(m.id, "Qwen/Qwen3.5-397B-A17B-FP8");
  EXPECT_EQ(m.quantization.method, QuantMethod::kFp8Block);
  EXPECT_EQ(m.config_assumption, ModelSpec::ConfigAssumption::kBorrowedRecipe);
  EXPECT_EQ(m.config_source, (configs / "aic" / "Qwen--Qwen3.5-397B-A17B_config.json").string() +
                                 " + the quantization of qwen3.5-35b-a3b-fp8.json (assumed)");
  EXPECT_NE(m.config_assumption_note.find("the block-FP8 recipe of qwen3.5-35b-a3b-fp8.json (the same "
                                          "publisher's FP8 checkpoint of this architecture, qwen3_5_moe)"),
            std::string::npos)
      << m.config_assumption_note;
  // FP8 weights: about half the BF16 checkpoint's.
  const double ratio = m.weight_bytes() / resolve_model("Qwen/Qwen3.5-397B-A17B").weight_bytes();
  EXPECT_GT(ratio, 0.5);
  EXPECT_LT(ratio, 0.56);
  // Another publisher has no block-FP8 checkpoint of this architecture here.
  EXPECT_NE(message_of([] { resolve_model("acme/Qwen3.5-397B-A17B-FP8"); }).find("(none)"),
            std::string::npos);
  fs::remove_all(hub);
}

TEST(Resolve, ReQuantizationTakesItsBaseConfigAndItsPublishersRecipe) {
  const NoHfCache no_cache;
  const fs::path hub = temp_dir("requant_hub");
  const ScopedEnv env("HF_HUB_CACHE", hub.string());
  const fs::path aic = common::data_dir() / "model-configs" / "aic";
  const ModelSpec m = resolve_model("nvidia/DeepSeek-R1-0528-FP4-V2");
  EXPECT_EQ(m.id, "nvidia/DeepSeek-R1-0528-FP4-V2");
  EXPECT_EQ(m.model_type, "deepseek_v3");
  EXPECT_EQ(m.config_source, (aic / "deepseek-ai--DeepSeek-R1_config.json").string() +
                                 " + the quantization of nvidia--DeepSeek-V3.1-NVFP4_hf_quant_config.json "
                                 "(assumed)");
  EXPECT_EQ(m.config_assumption, ModelSpec::ConfigAssumption::kBorrowedRecipe);
  EXPECT_NE(m.config_assumption_note.find("give the checkpoint's own config.json"), std::string::npos);
  // The recipe: NVFP4 experts, attention kept BF16 (the sibling's exclude_modules), FP8 KV cache; the
  // weights are those of the sibling of the same architecture to within the 0.1% of differing vocab/MTP.
  EXPECT_EQ(m.quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(m.quantization.experts.dtype, DType::kNvfp4);
  EXPECT_EQ(m.quantization.attention.dtype, DType::kBf16);
  EXPECT_EQ(m.quantization.kv_cache, DType::kFp8);
  const ModelSpec sibling = resolve_model("nvidia/DeepSeek-V3.1-NVFP4");
  EXPECT_NEAR(m.weight_bytes() / sibling.weight_bytes(), 1.0, 1e-3);
  EXPECT_LT(m.weight_bytes(), 0.6 * resolve_model("deepseek-ai/DeepSeek-R1").weight_bytes());
  // "-NVFP4" and no version tag work alike; the dated revision's own undated config gets no recipe.
  EXPECT_EQ(resolve_model("nvidia/DeepSeek-R1-NVFP4").quantization.method, QuantMethod::kNvfp4);
  EXPECT_EQ(resolve_model("deepseek-ai/DeepSeek-R1-0528").config_assumption,
            ModelSpec::ConfigAssumption::kUndatedRevision);
  EXPECT_EQ(resolve_model("deepseek-ai/DeepSeek-R1").config_assumption, ModelSpec::ConfigAssumption::kNone);
  // Another publisher has no NVFP4 recipe of this architecture here; nor has nvidia one of gpt_oss.
  const std::string other = message_of([] { resolve_model("acme/DeepSeek-R1-FP4"); });
  EXPECT_NE(
      other.find("an NVFP4 checkpoint of architecture deepseek_v3 by the same publisher in " + aic.string() +
                 ", whose recipe the re-quantization acme/DeepSeek-R1-FP4 could take (none)"),
      std::string::npos)
      << other;
  EXPECT_NE(message_of([] {
              resolve_model("nvidia/gpt-oss-120b-FP4");
            }).find("an NVFP4 checkpoint of architecture gpt_oss by the same publisher"),
            std::string::npos);
  // A bare name has no publisher: no recipe is borrowed for it.
  EXPECT_EQ(message_of([] { resolve_model("DeepSeek-R1-0528-FP4-V2"); }).find("same publisher"),
            std::string::npos);
  EXPECT_NE(message_of([] { resolve_model("nvidia/NoSuchBase-FP4-V2"); })
                .find("the data dir's config of nvidia/NoSuchBase, for the re-quantization "
                      "nvidia/NoSuchBase-FP4-V2 (none)"),
            std::string::npos);
  // Not tags: a version alone, "FP4" as the whole name.
  EXPECT_EQ(message_of([] { resolve_model("nvidia/FP4"); }).find("re-quantization"), std::string::npos);
  EXPECT_EQ(message_of([] { resolve_model("nvidia/Model-V2"); }).find("re-quantization"), std::string::npos);
  // The checkpoint's own config in the cache wins.
  const fs::path snap = hub / "models--nvidia--DeepSeek-R1-0528-FP4-V2" / "snapshots" / "abc";
  fs::create_directories(snap);
  fs::copy_file(aic / "deepseek-ai--DeepSeek-R1_config.json", snap / "config.json");
  const ModelSpec own = resolve_model("nvidia/DeepSeek-R1-0528-FP4-V2");
  EXPECT_EQ(own.config_source, (snap / "config.json").string());
  EXPECT_EQ(own.config_assumption, ModelSpec::ConfigAssumption::kNone);
  fs::remove_all(hub);
}

// A ModelOpt checkpoint folder (config.json + hf_quant_config.json, as nvidia ships them) is read with its
// quantization, as engines read it: a trial user's FP8 Llama-3.1-70B folder was predicted as BF16 (16.4 GiB
// of weights per GPU at TP8 instead of 8.2). The folder given to --model-config (load_config_with_modelopt)
// too; the config.json file alone keeps its neighbour.
TEST(Resolve, ACheckpointFolderReadsItsModelOptQuantization) {
  const NoHfCache no_cache;
  const fs::path aic = common::data_dir() / "model-configs" / "aic";
  const fs::path dir = temp_dir("modelopt_folder");
  fs::copy_file(aic / "nvidia--Llama-3.1-70B-Instruct-FP8_config.json", dir / "config.json");
  fs::copy_file(aic / "nvidia--Llama-3.1-70B-Instruct-FP8_hf_quant_config.json",
                dir / "hf_quant_config.json");
  for (const ModelSpec& m : {resolve_model(dir.string()), resolve_model((dir / "config.json").string()),
                             load_config_with_modelopt(dir)}) {
    EXPECT_EQ(m.quantization.method, QuantMethod::kFp8PerTensor) << m.config_source;
    EXPECT_EQ(m.config_source, (dir / "config.json").string() + " + hf_quant_config.json");
    EXPECT_NEAR(m.weight_bytes() / 1e9, 72.0, 3.0);  // 70.6 B parameters at 1 byte, embedding/head BF16
  }
  fs::remove(dir / "hf_quant_config.json");
  EXPECT_EQ(resolve_model(dir.string()).quantization.method, QuantMethod::kNone);
  fs::remove_all(dir);
}

TEST(LoadConfig, FileErrors) {
  const fs::path d = temp_dir("load");
  EXPECT_NE(message_of([&] { load_config(d / "missing.json"); }).find((d / "missing.json").string()),
            std::string::npos);
  write(d / "bad.json", "{\"model_type\": ");
  EXPECT_EQ(message_of([&] {
              load_config(d / "bad.json");
            }).rfind("model config " + (d / "bad.json").string() + ": invalid JSON", 0),
            0u);
  write(d / "notype.json", "{\"hidden_size\": 1}");
  EXPECT_EQ(message_of([&] { load_config(d / "notype.json"); }),
            (d / "notype.json").string() + ": missing key \"model_type\"");
  write(d / "array.json", "[1, 2]");
  EXPECT_EQ(message_of([&] { load_config(d / "array.json"); }),
            (d / "array.json").string() + ": config is not a JSON object");
  // Python's json writes bare NaN / Infinity (Nemotron-H's time_step_limit): read as null outside strings,
  // left alone inside them (an escaped quote does not end the string).
  write(d / "python.json",
        "{\"_name_or_path\": \"a/NaN-\\\"Infinity\", \"model_type\": \"qwen3\", \"hidden_size\": 64, "
        "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, \"num_key_value_heads\": 2, "
        "\"intermediate_size\": 128, \"vocab_size\": 1000, \"max_position_embeddings\": 4096, "
        "\"time_step_limit\": [0.0, Infinity], \"x\": -Infinity, \"y\": NaN}");
  EXPECT_EQ(load_config(d / "python.json").id, "a/NaN-\"Infinity");
  fs::remove_all(d);
}

TEST(Registry, VariantsAndUnknownModelType) {
  std::vector<std::string> names;
  for (const auto& v : architectures()) names.push_back(v.name);
  EXPECT_EQ(names, (std::vector<std::string>{"deepseek_v3", "glm4_moe", "gpt_oss", "llama4", "mixtral",
                                             "qwen3", "qwen3_5", "qwen3_moe"}));
  const std::string known =
      "deepseek_v3, deepseek_v32, glm4_moe, glm_moe_dsa, gpt_oss, kimi_k2, llama, llama4_text, minimax_m2, "
      "mistral, "
      "mixtral, qwen2, qwen3, qwen3_5_moe_text, qwen3_5_text, qwen3_moe, qwen3_next, qwen3_vl_moe_text, "
      "qwen3_vl_text";
  EXPECT_EQ(message_of([] {
              from_config({{"model_type", "mamba"}}, "m.json");
            }),
            "m.json: unknown model_type \"mamba\" (known: " + known + ")");
  // A type servelab recognises but does not model says what it lacks instead.
  EXPECT_EQ(message_of([] {
              from_config({{"model_type", "nemotron_h"}}, "m.json");
            }),
            "m.json: model_type \"nemotron_h\" is recognised but not modelled: the twin lacks Mamba-2 "
            "state-space layers (hybrid_override_pattern \"M\": SSM state and conv per request) and "
            "squared-ReLU non-gated FFN / MoE experts (modelled: " +
                known + ")");
  // A model_type registered twice is a programming error caught at registration.
  EXPECT_THROW(register_architecture({"dup", {"qwen3"}, nullptr}), std::logic_error);
}

TEST(FromConfig, CommonFieldErrors) {
  nlohmann::json c =
      nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "qwen3-8b.json"));
  c["torch_dtype"] = "int8";
  EXPECT_EQ(message_of([&] { from_config(c, "q.json"); }),
            "q.json: \"torch_dtype\" is \"int8\" (expected bfloat16, float16 or float32)");
  c["torch_dtype"] = "float16";
  EXPECT_EQ(from_config(c, "q.json").dtype, DType::kFp16);
  c["hidden_size"] = 0;
  EXPECT_EQ(message_of([&] { from_config(c, "q.json"); }), "q.json: \"hidden_size\" is 0 (must be positive)");
  c["hidden_size"] = 4096;
  c["tie_word_embeddings"] = "yes";
  EXPECT_EQ(message_of([&] { from_config(c, "q.json"); }),
            "q.json: \"tie_word_embeddings\" is not a boolean (\"yes\")");
  // Tied embeddings: the LM head is the embedding, counted once in total, still run by every token.
  c["tie_word_embeddings"] = true;
  const ModelSpec tied = from_config(c, "q.json");
  EXPECT_DOUBLE_EQ(tied.total_params(), 8190427136.0 - 622329856.0);
  EXPECT_DOUBLE_EQ(tied.active_params(), 8190427136.0 - 622329856.0);
}

}  // namespace
}  // namespace servelab::model
