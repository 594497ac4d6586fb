// servelab::hub against the fake Hub on loopback (tests/support/fake_hub.h): download into huggingface_hub's
// cache layout (blobs, relative snapshot symlinks, refs, .no_exist), the cache reused without a request,
// gated repositories with and without a token, offline mode, a resumed partial download, a revision pin,
// redirects (LFS to another host without the token; 307 for a renamed repository), errors.
#include <gtest/gtest.h>

#include <unistd.h>
#include <set>

#include <filesystem>
#include <fstream>
#include <map>

#include "servelab/hub/hub.h"
#include "support/fake_hub.h"

namespace servelab::hub {
namespace {

namespace fs = std::filesystem;
using test_support::FakeHub;
using test_support::FakeHubFile;
using test_support::FakeHubRepo;
using test_support::git_blob_sha1;
using test_support::sha256_hex;

const std::string kCommitA = "1111111111111111111111111111111111111111";
const std::string kCommitB = "2222222222222222222222222222222222222222";
const std::string kTokenizerJson =
    R"({"version": "1.0", "model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}})";
const std::string kConfigJson = R"({"model_type": "qwen3", "hidden_size": 1024})";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// 300 KiB of deterministic bytes: larger than one 64 KiB read, so a cut lands mid-transfer.
std::string big_content() {
  std::string s;
  for (int i = 0; i < 300 * 1024; ++i) s.push_back(static_cast<char>('a' + (i * 7 + i / 13) % 26));
  return s;
}

class Hub : public ::testing::Test {
 protected:
  void SetUp() override {
    cache = fs::temp_directory_path() / ("servelab_hub_test_" + std::to_string(getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(cache);
    FakeHubRepo repo;
    repo.refs = {{"main", kCommitB}, {"v1.0", kCommitA}};
    repo.commits[kCommitB] = {{"tokenizer.json", {kTokenizerJson}},
                              {"config.json", {kConfigJson}},
                              {"sub/extra.json", {"{}"}},
                              {"model.safetensors", {big_content(), /*lfs=*/true}}};
    repo.commits[kCommitA] = {{"tokenizer.json", {"{\"old\": true}"}}, {"config.json", {"{\"old\": 1}"}}};
    hub.add_repo("org/model", repo);
    FakeHubRepo gated;
    gated.gated = true;
    gated.refs = {{"main", kCommitA}};
    gated.commits[kCommitA] = {{"tokenizer.json", {kTokenizerJson}}};
    hub.add_repo("org/gated", gated);
    FakeHubRepo renamed;
    renamed.renamed_to = "org/model";
    hub.add_repo("old-org/old-name", renamed);
    hub.set_token("hf_secret_token_42");
    opts.endpoint = hub.endpoint();
    opts.cache_dir = cache;
    opts.etag_timeout_s = 5;
    opts.download_timeout_s = 5;
  }
  void TearDown() override { fs::remove_all(cache); }

  fs::path storage(const std::string& folder = "models--org--model") const { return cache / folder; }

  FakeHub hub;
  fs::path cache;
  HubOptions opts;
};

TEST_F(Hub, DownloadsIntoHuggingFaceHubCacheLayout) {
  const Snapshot s = fetch_files("org/model", {{"tokenizer.json"}, {"sub/extra.json"}}, "", opts);
  EXPECT_EQ(s.commit, kCommitB);
  EXPECT_EQ(s.dir, storage() / "snapshots" / kCommitB);
  const fs::path tok = storage() / "snapshots" / kCommitB / "tokenizer.json";
  ASSERT_EQ(s.files.at("tokenizer.json"), tok);
  // snapshots/<commit>/<file> is a relative symlink to ../../blobs/<git blob sha1>.
  ASSERT_TRUE(fs::is_symlink(tok));
  EXPECT_EQ(fs::read_symlink(tok), fs::path("../../blobs") / git_blob_sha1(kTokenizerJson));
  EXPECT_EQ(slurp(tok), kTokenizerJson);
  EXPECT_EQ(slurp(storage() / "blobs" / git_blob_sha1(kTokenizerJson)), kTokenizerJson);
  // A nested file: one more "../".
  EXPECT_EQ(fs::read_symlink(storage() / "snapshots" / kCommitB / "sub" / "extra.json"),
            fs::path("../../../blobs") / git_blob_sha1("{}"));
  // refs/main holds the commit, no newline.
  EXPECT_EQ(slurp(storage() / "refs" / "main"), kCommitB);
  EXPECT_FALSE(fs::exists(storage() / "blobs" / (git_blob_sha1(kTokenizerJson) + ".incomplete")));
  // The lock file huggingface_hub uses for the blob.
  EXPECT_TRUE(
      fs::exists(cache / ".locks" / "models--org--model" / (git_blob_sha1(kTokenizerJson) + ".lock")));
  // One HEAD (metadata) and one GET per file, at the resolve URL.
  const auto log = hub.requests();
  ASSERT_EQ(log.size(), 4u);
  EXPECT_EQ(log[0].method, "HEAD");
  EXPECT_EQ(log[0].target, "/org/model/resolve/main/tokenizer.json");
  EXPECT_EQ(log[1].method, "GET");
  EXPECT_EQ(log[1].target, "/org/model/resolve/main/tokenizer.json");
  EXPECT_EQ(log[3].target, "/org/model/resolve/main/sub/extra.json");
}

TEST_F(Hub, SecondFetchReusesTheCacheWithoutARequest) {
  fetch_files("org/model", {{"tokenizer.json"}, {"config.json"}}, "", opts);
  const std::size_t after_first = hub.request_count();
  EXPECT_EQ(after_first, 4u);
  const Snapshot again = fetch_files("org/model", {{"tokenizer.json"}, {"config.json"}}, "main", opts);
  EXPECT_EQ(hub.request_count(), after_first);
  EXPECT_EQ(again.commit, kCommitB);
  EXPECT_EQ(slurp(*again.files.at("config.json")), kConfigJson);
  EXPECT_EQ(cached_file("org/model", "config.json", "", opts),
            storage() / "snapshots" / kCommitB / "config.json");
  EXPECT_EQ(cached_file("org/model", "absent.json", "", opts), std::nullopt);
}

TEST_F(Hub, ReusesACacheHuggingFaceHubFilled) {
  // The layout huggingface_hub leaves (written by hand here): no request at all.
  const fs::path blob = storage() / "blobs" / "abc123";
  fs::create_directories(blob.parent_path());
  std::ofstream(blob) << kConfigJson;
  fs::create_directories(storage() / "snapshots" / kCommitA);
  fs::create_symlink("../../blobs/abc123", storage() / "snapshots" / kCommitA / "config.json");
  fs::create_directories(storage() / "refs");
  std::ofstream(storage() / "refs" / "main") << kCommitA;
  const Snapshot s = fetch_files("org/model", {{"config.json"}}, "", opts);
  EXPECT_EQ(s.commit, kCommitA);
  EXPECT_EQ(slurp(*s.files.at("config.json")), kConfigJson);
  EXPECT_EQ(hub.request_count(), 0u);
}

TEST_F(Hub, MissingOptionalFileIsRecordedInNoExist) {
  const Snapshot s = fetch_files("org/model", {{"tokenizer_config.json", /*required=*/false}}, "", opts);
  EXPECT_EQ(s.files.at("tokenizer_config.json"), std::nullopt);
  EXPECT_TRUE(fs::is_regular_file(storage() / ".no_exist" / kCommitB / "tokenizer_config.json"));
  EXPECT_EQ(slurp(storage() / "refs" / "main"), kCommitB);
  EXPECT_EQ(hub.request_count(), 1u);
  fetch_files("org/model", {{"tokenizer_config.json", false}}, "", opts);
  EXPECT_EQ(hub.request_count(), 1u);  // known missing: no second request
  try {
    fetch_files("org/model", {{"tokenizer_config.json", true}}, "", opts);
    FAIL() << "a missing required file must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kEntryNotFound);
    EXPECT_NE(std::string(e.what()).find("tokenizer_config.json of org/model (revision main) does not exist"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Hub, LfsFileFollowsTheRedirectToTheCdnWithoutTheToken) {
  opts.token = "hf_secret_token_42";
  opts.token_source = "HF_TOKEN";
  const Snapshot s = fetch_files("org/model", {{"model.safetensors"}}, "", opts);
  const std::string sha = sha256_hex(big_content());
  EXPECT_EQ(fs::read_symlink(*s.files.at("model.safetensors")), fs::path("../../blobs") / sha);
  EXPECT_EQ(slurp(*s.files.at("model.safetensors")), big_content());
  const auto log = hub.requests();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_EQ(log[0].method, "HEAD");
  EXPECT_EQ(log[0].authorization, "Bearer hf_secret_token_42");  // the Hub's own host gets the token
  EXPECT_EQ(log[1].method, "GET");
  EXPECT_EQ(log[1].target, "/cdn/" + sha + "?X-Amz-Signature=abc123");
  EXPECT_EQ(log[1].host, "localhost:" + std::to_string(hub.port()));
  EXPECT_EQ(log[1].authorization, "");  // another host: no token
}

// Issue 31: a redirect to another port of the same host is another origin: HF_TOKEN is not sent there
// (requests / huggingface_hub drop credentials on any change of scheme, host or port).
TEST_F(Hub, TokenIsNotSentToAnotherPortOfTheSameHost) {
  FakeHub cdn;  // the same repository on a second server: 127.0.0.1, another port
  FakeHubRepo repo;
  repo.refs = {{"main", kCommitB}};
  repo.commits[kCommitB] = {{"model.safetensors", {big_content(), /*lfs=*/true}}};
  cdn.add_repo("org/model", repo);
  repo.cdn_origin = cdn.endpoint();
  hub.add_repo("org/model", repo);
  opts.token = "hf_secret_token_42";
  opts.token_source = "HF_TOKEN";
  const Snapshot s = fetch_files("org/model", {{"model.safetensors"}}, "", opts);
  EXPECT_EQ(slurp(*s.files.at("model.safetensors")), big_content());
  ASSERT_EQ(hub.requests().size(), 1u);
  EXPECT_EQ(hub.requests()[0].authorization, "Bearer hf_secret_token_42");
  ASSERT_EQ(cdn.requests().size(), 1u);
  EXPECT_EQ(cdn.requests()[0].host, "127.0.0.1:" + std::to_string(cdn.port()));
  EXPECT_EQ(cdn.requests()[0].authorization, "");  // same host, another port: no token
}

TEST_F(Hub, RenamedRepositoryFollowsTheRelativeRedirectAndCachesUnderTheAskedId) {
  const Snapshot s = fetch_files("old-org/old-name", {{"config.json"}}, "", opts);
  EXPECT_EQ(s.dir, storage("models--old-org--old-name") / "snapshots" / kCommitB);
  EXPECT_EQ(slurp(*s.files.at("config.json")), kConfigJson);
  const auto log = hub.requests();
  ASSERT_EQ(log.size(), 3u);
  EXPECT_EQ(log[0].target, "/old-org/old-name/resolve/main/config.json");
  EXPECT_EQ(log[1].target, "/org/model/resolve/main/config.json");  // HEAD again at the new name
  EXPECT_EQ(log[2].method, "GET");
  EXPECT_EQ(log[2].target, "/org/model/resolve/main/config.json");
}

TEST_F(Hub, GatedRepositoryWithoutTokenSaysSoAndHowToGiveOne) {
  try {
    fetch_files("org/gated", {{"tokenizer.json"}}, "", opts);
    FAIL() << "gated without a token must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kGated);
    const std::string m = e.what();
    EXPECT_NE(m.find("org/gated is a gated model: HTTP 401 without a token"), std::string::npos) << m;
    EXPECT_NE(m.find("Accept its conditions at " + hub.endpoint() + "/org/gated"), std::string::npos) << m;
    EXPECT_NE(m.find("export HF_TOKEN=hf_..."), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(storage("models--org--gated") / "snapshots"));
}

TEST_F(Hub, GatedRepositoryWithAWrongTokenNeverPrintsIt) {
  opts.token = "hf_wrong_token_7";
  opts.token_source = "HF_TOKEN";
  try {
    fetch_files("org/gated", {{"tokenizer.json"}}, "", opts);
    FAIL() << "gated with a wrong token must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kGated);
    const std::string m = e.what();
    EXPECT_NE(m.find("org/gated is a gated model and the token from HF_TOKEN has no access to it: HTTP 403"),
              std::string::npos)
        << m;
    EXPECT_EQ(m.find("hf_wrong_token_7"), std::string::npos) << m;
  }
  EXPECT_EQ(hub.requests().at(0).authorization, "Bearer hf_wrong_token_7");
}

TEST_F(Hub, GatedRepositoryWithTheTokenDownloads) {
  opts.token = "hf_secret_token_42";
  const Snapshot s = fetch_files("org/gated", {{"tokenizer.json"}}, "", opts);
  EXPECT_EQ(slurp(*s.files.at("tokenizer.json")), kTokenizerJson);
  for (const auto& r : hub.requests()) EXPECT_EQ(r.authorization, "Bearer hf_secret_token_42") << r.target;
}

TEST_F(Hub, OfflineUsesTheCacheOnlyAndSaysWhatIsMissing) {
  opts.offline = true;
  try {
    fetch_files("org/model", {{"tokenizer.json"}}, "", opts);
    FAIL() << "offline with an empty cache must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kOffline);
    const std::string m = e.what();
    EXPECT_NE(m.find("tokenizer.json of org/model (revision main) is not in the Hugging Face cache (" +
                     storage().string() + ") and HF_HUB_OFFLINE is set"),
              std::string::npos)
        << m;
  }
  EXPECT_EQ(hub.request_count(), 0u);
  opts.offline = false;
  fetch_files("org/model", {{"tokenizer.json"}}, "", opts);
  const std::size_t online = hub.request_count();
  opts.offline = true;
  EXPECT_EQ(slurp(*fetch_files("org/model", {{"tokenizer.json"}}, "", opts).files.at("tokenizer.json")),
            kTokenizerJson);
  EXPECT_EQ(hub.request_count(), online);
}

TEST_F(Hub, InterruptedDownloadKeepsThePartialFileAndResumesWithRange) {
  const std::string content = big_content();
  const std::string sha = sha256_hex(content);
  hub.cut_next_body(content, 100000);
  const fs::path part = storage() / "blobs" / (sha + ".incomplete");
  try {
    fetch_files("org/model", {{"model.safetensors"}}, "", opts);
    FAIL() << "a cut transfer must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kNetwork);
    EXPECT_NE(std::string(e.what()).find("stopped after 100000 of 307200 bytes"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("run again to resume"), std::string::npos) << e.what();
  }
  ASSERT_TRUE(fs::exists(part));
  EXPECT_EQ(fs::file_size(part), 100000u);
  EXPECT_EQ(slurp(part), content.substr(0, 100000));
  EXPECT_FALSE(fs::exists(storage() / "snapshots" / kCommitB / "model.safetensors"));

  const Snapshot s = fetch_files("org/model", {{"model.safetensors"}}, "", opts);
  EXPECT_EQ(slurp(*s.files.at("model.safetensors")), content);
  EXPECT_FALSE(fs::exists(part));
  const auto log = hub.requests();
  ASSERT_EQ(log.size(), 4u);  // HEAD + GET (cut), HEAD + GET (resumed)
  EXPECT_EQ(log[3].method, "GET");
  EXPECT_EQ(log[3].range, "bytes=100000-");
}

TEST_F(Hub, CorruptTransferIsDiscardedNotCached) {
  hub.corrupt_body(kConfigJson, std::string(kConfigJson.size(), 'x'));
  try {
    fetch_files("org/model", {{"config.json"}}, "", opts);
    FAIL() << "a corrupt transfer must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kCorrupt);
    EXPECT_NE(std::string(e.what()).find("the Hub's id is " + git_blob_sha1(kConfigJson)), std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(storage() / "blobs" / git_blob_sha1(kConfigJson)));
  EXPECT_FALSE(fs::exists(storage() / "blobs" / (git_blob_sha1(kConfigJson) + ".incomplete")));
  EXPECT_EQ(cached_file("org/model", "config.json", "", opts), std::nullopt);
}

// Issue 31: the cache wrote through symlinks planted at refs/main and blobs/<etag>.incomplete (a file of the
// user's overwritten or appended to); both are replaced instead.
TEST_F(Hub, NeverWritesThroughSymlinksPlantedInTheCache) {
  const fs::path victim = cache / "victim.txt", victim2 = cache / "victim2.txt";
  fs::create_directories(storage() / "refs");
  fs::create_directories(storage() / "blobs");
  std::ofstream(victim) << "precious";
  std::ofstream(victim2) << "zz";
  fs::create_symlink(victim, storage() / "refs" / "main");
  fs::create_symlink(victim2, storage() / "blobs" / (git_blob_sha1(kConfigJson) + ".incomplete"));
  const Snapshot s = fetch_files("org/model", {{"config.json"}}, "", opts);
  EXPECT_EQ(slurp(*s.files.at("config.json")), kConfigJson);
  EXPECT_EQ(slurp(victim), "precious");
  EXPECT_EQ(slurp(victim2), "zz");
  EXPECT_FALSE(fs::is_symlink(storage() / "refs" / "main"));
  EXPECT_EQ(slurp(storage() / "refs" / "main"), kCommitB);
  EXPECT_EQ(hub.requests().back().range, "");  // not resumed from the planted file's 2 bytes
}

// Issue 31: a 0-byte file could never be downloaded (no GET, then "-1 bytes arrived").
TEST_F(Hub, EmptyFileDownloads) {
  FakeHubRepo repo;
  repo.refs = {{"main", kCommitA}};
  repo.commits[kCommitA] = {{"empty.txt", {""}}};
  hub.add_repo("org/empty", repo);
  const Snapshot s = fetch_files("org/empty", {{"empty.txt"}}, "", opts);
  ASSERT_TRUE(s.files.at("empty.txt"));
  EXPECT_TRUE(fs::is_regular_file(*s.files.at("empty.txt")));
  EXPECT_EQ(fs::file_size(*s.files.at("empty.txt")), 0u);
  EXPECT_TRUE(fs::exists(storage("models--org--empty") / "blobs" / git_blob_sha1("")));
}

// Issue 31: a file announced at 300 KiB was written to whatever length the server sent (64 MiB); the write
// stops at the announced size and the transfer is discarded.
TEST_F(Hub, DownloadIsBoundedByTheAnnouncedSize) {
  const std::string content = big_content();
  hub.corrupt_body(content, std::string(4 << 20, 'x'));
  try {
    fetch_files("org/model", {{"model.safetensors"}}, "", opts);
    FAIL() << "an over-long transfer must throw";
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kCorrupt);
    EXPECT_NE(
        std::string(e.what()).find("more than the 307200 bytes the Hub announced arrived; the download was "
                                   "discarded"),
        std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(storage() / "blobs" / (sha256_hex(content) + ".incomplete")));
  EXPECT_EQ(cached_file("org/model", "model.safetensors", "", opts), std::nullopt);
}

TEST_F(Hub, RevisionPinByTagAndByCommit) {
  const Snapshot tag = fetch_files("org/model", {{"config.json"}}, "v1.0", opts);
  EXPECT_EQ(tag.commit, kCommitA);
  EXPECT_EQ(slurp(*tag.files.at("config.json")), "{\"old\": 1}");
  EXPECT_EQ(slurp(storage() / "refs" / "v1.0"), kCommitA);
  EXPECT_FALSE(fs::exists(storage() / "refs" / "main"));
  EXPECT_EQ(hub.requests().at(0).target, "/org/model/resolve/v1.0/config.json");
  // The commit itself: served from the cache, no ref written for it, no request.
  const std::size_t n = hub.request_count();
  const Snapshot commit = fetch_files("org/model", {{"config.json"}}, kCommitA, opts);
  EXPECT_EQ(slurp(*commit.files.at("config.json")), "{\"old\": 1}");
  EXPECT_EQ(hub.request_count(), n);
  EXPECT_FALSE(fs::exists(storage() / "refs" / kCommitA));
  // main is another commit, with other bytes.
  EXPECT_EQ(slurp(*fetch_files("org/model", {{"config.json"}}, "main", opts).files.at("config.json")),
            kConfigJson);
}

TEST_F(Hub, UnknownRepositoryAndRevisionAreNamed) {
  try {
    fetch_files("org/nothing", {{"config.json"}}, "", opts);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kRepositoryNotFound);
    EXPECT_NE(std::string(e.what()).find("org/nothing not found on " + hub.endpoint() + ": HTTP 401"),
              std::string::npos)
        << e.what();
  }
  try {
    fetch_files("org/model", {{"config.json"}}, "no-such-branch", opts);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kRevisionNotFound);
    EXPECT_NE(std::string(e.what()).find("revision 'no-such-branch' does not exist in org/model: HTTP 404"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(Hub, UnreachableHubIsAClearNetworkError) {
  opts.endpoint = "http://127.0.0.1:1";  // nothing listens on port 1
  try {
    fetch_files("org/model", {{"config.json"}}, "", opts);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kNetwork);
    EXPECT_NE(std::string(e.what()).find(
                  "cannot reach the Hugging Face Hub at http://127.0.0.1:1 to download "
                  "config.json of org/model (revision main): connecting to 127.0.0.1:1 failed"),
              std::string::npos)
        << e.what();
  }
  opts.endpoint = "http://hub.invalid";  // RFC 6761: never resolves
  try {
    fetch_files("org/model", {{"config.json"}}, "", opts);
    FAIL();
  } catch (const HubError& e) {
    EXPECT_EQ(e.kind(), HubError::Kind::kNetwork);
    EXPECT_NE(std::string(e.what()).find("DNS lookup of hub.invalid failed"), std::string::npos) << e.what();
  }
}

// kHubEnvironmentVariables is what options_from_environment asks for (HOME aside): the list tune's bench
// container is given cannot drift from the client's reads.
TEST(HubEnvironment, TheListedVariablesAreTheOnesRead) {
  std::set<std::string> asked;
  options_from_environment([&asked](const std::string& k) -> std::optional<std::string> {
    asked.insert(k);
    return std::nullopt;
  });
  asked.erase("HOME");
  const std::set<std::string> listed(std::begin(kHubEnvironmentVariables),
                                     std::end(kHubEnvironmentVariables));
  EXPECT_EQ(asked, listed);
}

TEST(HubEnvironment, ReadsTheVariablesHuggingFaceHubReads) {
  const fs::path dir = fs::temp_directory_path() / ("servelab_hub_env_" + std::to_string(getpid()));
  fs::create_directories(dir / "hf");
  std::ofstream(dir / "hf" / "token") << "  hf_from_file\n";
  std::map<std::string, std::string> env = {{"HOME", "/home/u"}};
  auto lookup = [&env](const std::string& k) -> std::optional<std::string> {
    auto it = env.find(k);
    return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
  };
  HubOptions o = options_from_environment(lookup);
  EXPECT_EQ(o.endpoint, "https://huggingface.co");
  EXPECT_EQ(o.cache_dir, fs::path("/home/u/.cache/huggingface/hub"));
  EXPECT_FALSE(o.offline);
  env["XDG_CACHE_HOME"] = "/xdg";
  EXPECT_EQ(options_from_environment(lookup).cache_dir, fs::path("/xdg/huggingface/hub"));
  env["HF_HOME"] = (dir / "hf").string();
  o = options_from_environment(lookup);
  EXPECT_EQ(o.cache_dir, dir / "hf" / "hub");
  EXPECT_EQ(o.token, "hf_from_file");  // $HF_HOME/token, stripped
  EXPECT_EQ(o.token_source, (dir / "hf" / "token").string());
  env["HF_TOKEN"] = "hf_env";
  env["HF_HUB_CACHE"] = "/hub";
  env["HF_ENDPOINT"] = "http://mirror:8080/";
  env["HF_HUB_OFFLINE"] = "yes";
  env["HF_HUB_ETAG_TIMEOUT"] = "2.5";
  o = options_from_environment(lookup);
  EXPECT_EQ(o.token, "hf_env");
  EXPECT_EQ(o.token_source, "HF_TOKEN");
  EXPECT_EQ(o.cache_dir, fs::path("/hub"));
  EXPECT_EQ(o.endpoint, "http://mirror:8080");
  EXPECT_TRUE(o.offline);
  EXPECT_DOUBLE_EQ(o.etag_timeout_s, 2.5);
  env.erase("HF_TOKEN");
  env["HF_TOKEN_PATH"] = (dir / "nothing").string();
  env["HF_HUB_OFFLINE"] = "0";
  o = options_from_environment(lookup);
  EXPECT_EQ(o.token, std::nullopt);
  EXPECT_FALSE(o.offline);
  fs::remove_all(dir);
}

TEST(HubIds, RepoIdsAndFolders) {
  EXPECT_TRUE(is_repo_id("Qwen/Qwen3-0.6B"));
  EXPECT_TRUE(is_repo_id("gpt2"));
  EXPECT_FALSE(is_repo_id("/data/model"));
  EXPECT_FALSE(is_repo_id("./model"));
  EXPECT_FALSE(is_repo_id("a/b/c"));
  EXPECT_FALSE(is_repo_id("org/na--me"));
  EXPECT_FALSE(is_repo_id("org/../x"));
  EXPECT_FALSE(is_repo_id("org/"));
  EXPECT_EQ(repo_folder_name("Qwen/Qwen3-0.6B"), "models--Qwen--Qwen3-0.6B");
  EXPECT_EQ(repo_folder_name("gpt2"), "models--gpt2");
  EXPECT_EQ(repo_folder_name("org/set", RepoType::kDataset), "datasets--org--set");
  EXPECT_TRUE(is_commit_hash(kCommitA));
  EXPECT_FALSE(is_commit_hash("main"));
}

}  // namespace
}  // namespace servelab::hub
