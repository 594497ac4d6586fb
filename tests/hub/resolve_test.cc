// `--tokenizer ORG/NAME` and a launch's model id through the fake Hub (tests/support/fake_hub.h), as the
// CLI resolves them: tokenizer::load_tokenizer and model::resolve_model with download on, HF_ENDPOINT and
// HF_HUB_CACHE from the environment; nothing is fetched when download is off; a revision pin.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "servelab/common/paths.h"
#include "servelab/model/model.h"
#include "servelab/tokenizer/tokenizer.h"
#include "support/fake_hub.h"

namespace servelab {
namespace {

namespace fs = std::filesystem;
using test_support::FakeHub;
using test_support::FakeHubRepo;

const std::string kMain = "3333333333333333333333333333333333333333";
const std::string kOld = "4444444444444444444444444444444444444444";

class HubResolve : public ::testing::Test {
 protected:
  void SetUp() override {
    cache = fs::temp_directory_path() / ("servelab_hub_resolve_" + std::to_string(getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache);
    const std::string gpt2 = common::read_file(common::data_dir() / "gpt2-tokenizer.json");
    nlohmann::json config =
        nlohmann::json::parse(common::read_file(common::data_dir() / "model-configs" / "qwen3-8b.json"));
    config["_name_or_path"] = "org/tiny-qwen";
    config["num_hidden_layers"] = 3;
    nlohmann::json old_config = config;
    old_config["num_hidden_layers"] = 2;
    FakeHubRepo repo;
    repo.refs = {{"main", kMain}, {"v0", kOld}};
    repo.commits[kMain] = {{"tokenizer.json", {gpt2, /*lfs=*/true}}, {"config.json", {config.dump(2)}}};
    repo.commits[kOld] = {{"tokenizer.json", {gpt2}}, {"config.json", {old_config.dump(2)}}};
    hub.add_repo("org/tiny-qwen", repo);
    setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
    setenv("HF_HUB_CACHE", cache.string().c_str(), 1);
    unsetenv("HF_HUB_OFFLINE");
    unsetenv("HF_TOKEN");
  }
  void TearDown() override {
    unsetenv("HF_ENDPOINT");
    unsetenv("HF_HUB_CACHE");
    unsetenv("HF_HUB_OFFLINE");
    fs::remove_all(cache);
  }
  static hub::FetchRequest download(const std::string& revision = "") {
    hub::FetchRequest f;
    f.download = true;
    f.revision = revision;
    return f;
  }
  FakeHub hub;
  fs::path cache;
};

TEST_F(HubResolve, TokenizerIsDownloadedOnceAndCountsAsGpt2) {
  std::vector<std::string> log;
  hub::FetchRequest f = download();
  f.log = [&log](const std::string& line) { log.push_back(line); };
  const tokenizer::Tokenizer tok = tokenizer::load_tokenizer("org/tiny-qwen", f);
  EXPECT_EQ(tok.encode("Hello world", false), (std::vector<tokenizer::TokenId>{15496, 995}));  // GPT-2 ids
  const fs::path snap = cache / "models--org--tiny-qwen" / "snapshots" / kMain;
  EXPECT_TRUE(fs::is_symlink(snap / "tokenizer.json"));
  // tokenizer_config.json is optional: the repository has none, recorded as huggingface_hub does.
  EXPECT_TRUE(
      fs::is_regular_file(cache / "models--org--tiny-qwen" / ".no_exist" / kMain / "tokenizer_config.json"));
  ASSERT_EQ(log.size(), 1u);
  EXPECT_EQ(log[0].rfind("Downloading tokenizer.json of org/tiny-qwen (revision main) from " +
                             hub.endpoint() + " (1355261 bytes)",
                         0),
            0u)
      << log[0];
  const std::size_t n = hub.request_count();
  EXPECT_EQ(tokenizer::resolve_tokenizer_path("org/tiny-qwen", download()), snap / "tokenizer.json");
  EXPECT_EQ(hub.request_count(), n);  // the cache answers
}

TEST_F(HubResolve, NothingIsFetchedWithoutDownload) {
  try {
    tokenizer::resolve_tokenizer_path("org/tiny-qwen");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no tokenizer.json found for --tokenizer \"org/tiny-qwen\""),
              std::string::npos);
  }
  EXPECT_THROW(model::resolve_model("org/tiny-qwen"), std::runtime_error);
  EXPECT_EQ(hub.request_count(), 0u);
}

TEST_F(HubResolve, OfflineErrorIsInTheTokenizerMessage) {
  setenv("HF_HUB_OFFLINE", "1", 1);
  try {
    tokenizer::resolve_tokenizer_path("org/tiny-qwen", download());
    FAIL();
  } catch (const std::runtime_error& e) {
    const std::string m = e.what();
    EXPECT_NE(
        m.find("  - Hugging Face Hub: tokenizer.json of org/tiny-qwen (revision main) is not in the Hugging "
               "Face cache"),
        std::string::npos)
        << m;
    EXPECT_NE(m.find("HF_HUB_OFFLINE is set"), std::string::npos) << m;
  }
  EXPECT_EQ(hub.request_count(), 0u);
}

TEST_F(HubResolve, ModelConfigIsDownloadedForAnIdNothingLocalKnows) {
  const model::ModelSpec m = model::resolve_model("org/tiny-qwen", download());
  EXPECT_EQ(m.id, "org/tiny-qwen");
  EXPECT_EQ(m.num_layers(), 3);
  EXPECT_EQ(m.hidden_size, 4096);
  EXPECT_EQ(m.config_source,
            (cache / "models--org--tiny-qwen" / "snapshots" / kMain / "config.json").string());
  // A known model never goes to the Hub: the data dir's config answers.
  const std::size_t n = hub.request_count();
  EXPECT_EQ(model::resolve_model("Qwen/Qwen3-8B", download()).num_layers(), 36);
  EXPECT_EQ(hub.request_count(), n);
}

TEST_F(HubResolve, RevisionPinReadsThatSnapshot) {
  EXPECT_EQ(model::resolve_model("org/tiny-qwen", download("v0")).num_layers(), 2);
  EXPECT_EQ(common::read_file(cache / "models--org--tiny-qwen" / "refs" / "v0"), kOld);
  EXPECT_EQ(model::resolve_model("org/tiny-qwen", download()).num_layers(), 3);
  const std::size_t n = hub.request_count();
  // The pinned revision is then read from the cache, for the commit too.
  EXPECT_EQ(model::resolve_model("org/tiny-qwen", download("v0")).num_layers(), 2);
  EXPECT_EQ(model::resolve_model("org/tiny-qwen", download(kOld)).num_layers(), 2);
  EXPECT_EQ(hub.request_count(), n);
  EXPECT_EQ(tokenizer::resolve_tokenizer_path("org/tiny-qwen", download("v0")),
            cache / "models--org--tiny-qwen" / "snapshots" / kOld / "tokenizer.json");
  // refs/main's snapshot has only config.json so far: main's tokenizer is fetched, not v0's taken.
  EXPECT_EQ(tokenizer::resolve_tokenizer_path("org/tiny-qwen", download()),
            cache / "models--org--tiny-qwen" / "snapshots" / kMain / "tokenizer.json");
}

}  // namespace
}  // namespace servelab
