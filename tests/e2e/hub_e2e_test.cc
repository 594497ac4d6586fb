// End-to-end: `servelab bench serve --model ORG/NAME` on a machine whose Hugging Face cache is empty finds
// the tokenizer through the (fake) Hub — HF_ENDPOINT=http://127.0.0.1:PORT, HF_HUB_CACHE=<temp> — leaves
// it in huggingface_hub's layout, then runs again from the cache with HF_HUB_OFFLINE=1; a gated model
// without a token fails before any benchmark request with the Hub's reason and no token printed.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>

#include "e2e/subprocess.h"
#include "servelab/common/paths.h"
#include "support/fake_hub.h"
#include "support/stream_server.h"

namespace servelab::e2e {
namespace {

namespace fs = std::filesystem;
using test_support::FakeHub;
using test_support::FakeHubRepo;
using test_support::StreamServer;
using test_support::StreamServerOptions;

const std::string kCommit = "5555555555555555555555555555555555555555";

class HubE2E : public ::testing::Test {
 protected:
  void SetUp() override {
    cache = fs::temp_directory_path() / ("servelab_hub_e2e_" + std::to_string(getpid()));
    fs::remove_all(cache);
    const std::string gpt2 = common::read_file(common::data_dir() / "gpt2-tokenizer.json");
    FakeHubRepo repo;
    repo.refs = {{"main", kCommit}};
    repo.commits[kCommit] = {{"tokenizer.json", {gpt2, /*lfs=*/true}},
                             {"tokenizer_config.json", {R"({"tokenizer_class": "GPT2Tokenizer"})"}}};
    hub.add_repo("acme/gpt2-chat", repo);
    FakeHubRepo gated = repo;
    gated.gated = true;
    hub.add_repo("acme/gated", gated);
    hub.set_token("hf_right");
    setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
    setenv("HF_HUB_CACHE", cache.string().c_str(), 1);
    setenv("HF_TOKEN_PATH", (cache / "no-token-file").string().c_str(), 1);
    unsetenv("HF_TOKEN");
    unsetenv("HF_HUB_OFFLINE");
  }
  void TearDown() override {
    for (const char* v : {"HF_ENDPOINT", "HF_HUB_CACHE", "HF_TOKEN_PATH", "HF_TOKEN", "HF_HUB_OFFLINE"})
      unsetenv(v);
    fs::remove_all(cache);
  }
  std::vector<std::string> args(std::uint16_t port, const std::string& model) const {
    return {SERVELAB_BINARY,
            "bench",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            std::to_string(port),
            "--model",
            model,
            "--dataset-name",
            "random",
            "--random-input-len",
            "32",
            "--random-output-len",
            "4",
            "--num-prompts",
            "5",
            "--ready-check-timeout-sec",
            "0"};
  }
  FakeHub hub;
  fs::path cache;
};

TEST_F(HubE2E, BenchServeFindsTheTokenizerThroughTheHubThenOffline) {
  StreamServerOptions so;
  so.num_tokens = 4;
  StreamServer server(so);
  ProcessResult p = run_process(args(server.port(), "acme/gpt2-chat"));
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.err.find("Downloading tokenizer.json of acme/gpt2-chat (revision main) from " + hub.endpoint()),
            std::string::npos)
      << p.err;
  EXPECT_NE(p.out.find("Successful requests:                     5"), std::string::npos) << p.out;
  // 5 prompts of 32 tokens: the random dataset drew them with GPT-2's vocabulary (vocab_size 50257).
  EXPECT_NE(p.out.find("Total input tokens:                      160"), std::string::npos) << p.out;
  const fs::path snap = cache / "models--acme--gpt2-chat" / "snapshots" / kCommit;
  EXPECT_TRUE(fs::is_symlink(snap / "tokenizer.json"));
  EXPECT_TRUE(fs::is_symlink(snap / "tokenizer_config.json"));
  EXPECT_EQ(common::read_file(cache / "models--acme--gpt2-chat" / "refs" / "main"), kCommit);
  const std::size_t hub_requests = hub.request_count();
  EXPECT_EQ(hub_requests, 4u);  // HEAD + GET for each of the two files

  setenv("HF_HUB_OFFLINE", "1", 1);
  ProcessResult again = run_process(args(server.port(), "acme/gpt2-chat"));
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_EQ(again.err.find("Downloading"), std::string::npos) << again.err;
  EXPECT_EQ(hub.request_count(), hub_requests);
  // Another model offline: a clear refusal naming HF_HUB_OFFLINE.
  ProcessResult missing = run_process(args(server.port(), "acme/other"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE((missing.out + missing.err).find("HF_HUB_OFFLINE is set"), std::string::npos)
      << missing.out << missing.err;
}

TEST_F(HubE2E, GatedModelWithoutTokenStopsBeforeTheBenchmark) {
  StreamServer server(StreamServerOptions{});
  ProcessResult p = run_process(args(server.port(), "acme/gated"));
  EXPECT_NE(p.exit_code, 0);
  const std::string all = p.out + p.err;
  EXPECT_NE(all.find("acme/gated is a gated model: HTTP 401 without a token"), std::string::npos) << all;
  EXPECT_EQ(all.find("Starting main benchmark run"), std::string::npos) << all;
  setenv("HF_TOKEN", "hf_right", 1);
  ProcessResult ok = run_process(args(server.port(), "acme/gated"));
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_EQ((ok.out + ok.err).find("hf_right"), std::string::npos) << "the token is never printed";
}

}  // namespace
}  // namespace servelab::e2e
