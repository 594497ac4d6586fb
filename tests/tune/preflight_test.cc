// Pre-flight (issue 10 §3): each failure's message, with fake engines, a fake nvidia-smi, a fake Hugging
// Face cache and a busy port.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "servelab/tune/targets/preflight.h"
#include "test_ports.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

const char* kStudy = R"toml(
[study]
name = "pf"
port = PORT
[model]
id = "org/Model-7B"
[hardware]
gpu = "H200"
gpu_count = 8
gpu_memory_gb = 141
[[engines]]
name = "vllm"
version = "0.13.0"
command = ["vllm", "serve", "{model}", "--port", "{port}"]
[[engines]]
name = "sglang"
version = "0.5.6.post2"
command = ["python3", "-m", "sglang.launch_server", "--model-path", "{model}", "--port", "{port}"]
base_flags = ["--chat-template", "./tmpl.jinja"]
[[knobs]]
name = "layout"
type = "layout"
values = [{tp = 4}, {tp = 8}]
render.vllm = [{flags = ["-tp", "{tp}"]}]
render.sglang = [{flags = ["--tp-size", "{tp}"]}]
[[scenarios]]
id = "chat"
args = ["--dataset-name", "sharegpt", "--dataset-path", "{data_dir}/ShareGPT_V3_unfiltered_cleaned_split.json"]
[[scenarios]]
id = "short"
args = ["--dataset-name", "random", "--num-prompts", "10"]
)toml";

using testing::free_port;

struct Preflight : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("servelab-preflight-" + std::to_string(getpid()));
  fs::path bin = dir / "bin", work = dir / "work", data = dir / "data", home = dir / "home";
  int port = free_port();
  void SetUp() override {
    fs::remove_all(dir);
    for (const auto& d : {bin, work, data, home}) fs::create_directories(d);
    std::ofstream(work / "tmpl.jinja") << "{{ messages }}";
    std::ofstream(data / "ShareGPT_V3_unfiltered_cleaned_split.json") << "[]";
    tool("vllm", "echo 0.13.0");
    tool("python3", "echo 0.5.6.post2");
    nvidia_smi(8, 143771, 0);
    weights(true);
    // The tokenizer is resolved as bench resolves it: from the process environment.
    setenv("HF_HUB_CACHE", (home / ".cache/huggingface/hub").c_str(), 1);
  }
  void TearDown() override {
    unsetenv("HF_HUB_CACHE");
    fs::remove_all(dir);
  }
  void tool(const std::string& name, const std::string& body) {
    std::ofstream(bin / name) << "#!/bin/sh\n" << body << "\n";
    fs::permissions(bin / name, fs::perms::owner_all);
  }
  void nvidia_smi(int gpus, int mib, int used_mib, const std::string& name = "NVIDIA H200") {
    std::string rows;
    for (int i = 0; i < gpus; ++i)
      rows += std::to_string(i) + ", " + name + ", " + std::to_string(mib) + ", " + std::to_string(used_mib) +
              ", 570.86.15\\n";
    tool("nvidia-smi",
         "if [ $# -eq 0 ]; then echo '| NVIDIA-SMI 570.86.15   Driver Version: 570.86.15   CUDA Version: "
         "12.8 |'; else printf '" +
             rows + "'; fi");
  }
  void weights(bool complete) {
    const fs::path snap = home / ".cache/huggingface/hub/models--org--Model-7B/snapshots/abc";
    fs::create_directories(snap);
    std::ofstream(snap / "config.json") << "{}";
    std::ofstream(snap / "tokenizer.json") << "{}";
    std::ofstream(snap / "model.safetensors.index.json")
        << R"({"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}})";
    std::ofstream(snap / "model-00001-of-00002.safetensors") << "x";
    if (complete)
      std::ofstream(snap / "model-00002-of-00002.safetensors") << "x";
    else
      fs::remove(snap / "model-00002-of-00002.safetensors");
  }
  PreflightReport run() {
    std::string toml = kStudy;
    toml.replace(toml.find("PORT"), 4, std::to_string(port));
    Study s = parse_study(toml, "pf.toml", data);
    PreflightOptions o;
    o.env = {{"PATH", bin.string()}, {"HOME", home.string()}};
    o.cwd = work;
    o.command_timeout_s = 10;
    return run_preflight(s, o);
  }
  /// The detail of check `name`, prefixed by its result ("FAILED: ...").
  static std::string check(const PreflightReport& r, const std::string& name) {
    for (const auto& c : r.checks)
      if (c.name == name) return std::string(preflight_result_name(c.result)) + ": " + c.detail;
    return "(no check " + name + ")";
  }
};

TEST_F(Preflight, AllPresentPasses) {
  const PreflightReport r = run();
  EXPECT_TRUE(r.ok()) << r.text();
  EXPECT_EQ(check(r, "engine vllm"), "ok: " + (bin / "vllm").string() + " 0.13.0");
  EXPECT_EQ(check(r, "GPUs"),
            "ok: 8 x NVIDIA H200 (143771 MiB, driver 570.86.15, CUDA 12.8); largest launch needs 8");
  EXPECT_EQ(r.gpu.at("cuda"), "12.8");
  EXPECT_EQ(r.engine_versions.at("sglang"), "0.5.6.post2");
  EXPECT_FALSE(r.standins);
  EXPECT_EQ(
      check(r, "tokenizer"),
      "ok: " + (home / ".cache/huggingface/hub/models--org--Model-7B/snapshots/abc/tokenizer.json").string());
  EXPECT_EQ(check(r, "file --chat-template"), "ok: " + (work / "tmpl.jinja").string() + " (sglang)");
}

TEST_F(Preflight, MissingEngineExecutable) {
  fs::remove(bin / "vllm");
  EXPECT_EQ(check(run(), "engine vllm"),
            "FAILED: engine executable 'vllm' not found on PATH (" + bin.string() +
                "); install the engine or put it on PATH (for a rehearsal without GPUs: the stand-ins in "
                "tools/standins)");
}

TEST_F(Preflight, EngineVersionDiffersFromTheStudy) {
  tool("vllm", "echo 0.11.0");
  EXPECT_EQ(check(run(), "engine vllm"),
            "FAILED: the study says vllm 0.13.0 but `vllm --version` reports 0.11.0 (" +
                (bin / "vllm").string() +
                "); install vllm 0.13.0 or set the engine's version in the study to what is installed");
}

TEST_F(Preflight, EngineThatCannotRun) {
  tool("python3", "echo \"ModuleNotFoundError: No module named 'sglang'\"; exit 1");
  EXPECT_EQ(check(run(), "engine sglang"),
            "FAILED: `python3 -c \"import sglang; print(sglang.__version__)\"` failed (ModuleNotFoundError: "
            "No module "
            "named 'sglang'); the engine is not usable as installed");
}

TEST_F(Preflight, TooFewOrTooSmallOrBusyGpus) {
  nvidia_smi(4, 81559, 0, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(check(run(), "GPUs"),
            "FAILED: 4 GPU(s) here, the largest launch needs 8; GPU 0 has 86 GB, the study assumes 151 GB; "
            "GPU 1 has "
            "86 GB, the study assumes 151 GB; GPU 2 has 86 GB, the study assumes 151 GB; GPU 3 has 86 GB, "
            "the study "
            "assumes 151 GB");
  nvidia_smi(8, 143771, 40960);
  EXPECT_NE(check(run(), "GPUs").find("FAILED: GPU 0 already has 40.0 GiB in use (another process"),
            std::string::npos);
  fs::remove(bin / "nvidia-smi");
  EXPECT_EQ(check(run(), "GPUs"),
            "FAILED: nvidia-smi not found on PATH: no NVIDIA driver here; the study's largest launch needs 8 "
            "x H200 "
            "with 151 GB (140 GiB) each");
}

TEST_F(Preflight, PortInUse) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  const std::string got = check(run(), "port");
  close(fd);
  EXPECT_EQ(
      got.rfind("FAILED: " + std::to_string(port) + " is in use by pid " + std::to_string(getpid()) + " (",
                0),
      0u)
      << got;
  EXPECT_NE(got.find("); stop it or set [study] port to a free port"), std::string::npos) << got;
}

TEST_F(Preflight, DatasetNotFound) {
  fs::remove(data / "ShareGPT_V3_unfiltered_cleaned_split.json");
  const std::string got = check(run(), "dataset chat");
  EXPECT_EQ(got.rfind("FAILED: ShareGPT_V3_unfiltered_cleaned_split.json not found (tried " +
                          (data / "ShareGPT_V3_unfiltered_cleaned_split.json").string() + ", ",
                      0),
            0u)
      << got;
  EXPECT_NE(got.find("`make deps` downloads it into "), std::string::npos) << got;
  EXPECT_EQ(check(run(), "dataset short"), "ok: random (generated, no file)");
}

TEST_F(Preflight, FileNamedInAFlagIsMissing) {
  fs::remove(work / "tmpl.jinja");
  EXPECT_EQ(check(run(), "file --chat-template"),
            "FAILED: sglang --chat-template ./tmpl.jinja: no such file (relative to " + work.string() +
                ", where tune launches engines); the engine would refuse to start. Put the file there or fix "
                "the path "
                "in the study");
}

TEST_F(Preflight, WeightsMissingOrIncomplete) {
  weights(false);
  const std::string got = check(run(), "weights");
  EXPECT_NE(
      got.find("FAILED: org/Model-7B is not in the Hugging Face cache (" +
               (home / ".cache/huggingface/hub").string() + "); " +
               (home / ".cache/huggingface/hub/models--org--Model-7B/snapshots/abc").string() +
               ": 1 of 2 weight shards missing (first: model-00002-of-00002.safetensors): download it before "
               "the study (`hf download org/Model-7B`;"),
      std::string::npos)
      << got;
  fs::remove_all(home / ".cache/huggingface");
  EXPECT_NE(check(run(), "weights").find("FAILED: org/Model-7B is not in the Hugging Face cache"),
            std::string::npos);
}

TEST_F(Preflight, TokenizerNotResolvable) {
  fs::remove_all(home / ".cache/huggingface");
  const std::string got = check(run(), "tokenizer");
  EXPECT_EQ(got.rfind("FAILED: ", 0), 0u) << got;
  EXPECT_NE(got.find("org/Model-7B"), std::string::npos) << got;
  EXPECT_NE(got.find("(bench serve counts tokens with it; `make deps` fetches DeepSeek's, or `hf download "
                     "org/Model-7B`)"),
            std::string::npos)
      << got;
}

TEST_F(Preflight, StandInsNeedNoGpuOrWeights) {
  tool("vllm", "echo 0.13.0; echo 'servelab stand-in (engine twin), not vllm' >&2");
  tool("python3", "echo 0.5.6.post2; echo 'servelab stand-in'");
  fs::remove(bin / "nvidia-smi");
  fs::remove_all(home / ".cache/huggingface");
  const PreflightReport r = run();
  EXPECT_TRUE(r.standins);
  EXPECT_EQ(check(r, "GPUs"), "skipped: every engine is a servelab stand-in (the twin needs no GPU)");
  EXPECT_EQ(check(r, "weights"), "skipped: every engine is a servelab stand-in (the twin needs no weights)");
}

}  // namespace
}  // namespace servelab::tune
