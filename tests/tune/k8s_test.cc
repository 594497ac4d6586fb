// tune --target k8s --render: a two-config SGLang study on 2 x 8 H100 renders one Job (TP 8, one node: the
// engine as a native sidecar with its GPUs and startup probe, the benchmark main container) and one
// LeaderWorkerSet (TP 16 over two nodes: --nnodes/--node-rank/--dist-init-addr from LWS_LEADER_ADDRESS),
// parsed back with yaml-cpp and compared with a literal expected Job; vLLM Ray and TensorRT-LLM cases.
#include "servelab/tune/targets/k8s.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "servelab/tune/study/study.h"
#include "test_study.h"

namespace fs = std::filesystem;
namespace st = servelab::tune;

namespace {

const char* kStudy = R"toml(
[study]
name = "K8s_Small"
target = "twin"
port = 30000

[model]
id = "deepseek-ai/DeepSeek-V3.2"

[hardware]
gpu = "H100"
nodes = 2
gpus_per_node = 8

[bench]
common_args = ["--backend", "openai-chat", "--endpoint", "/v1/chat/completions"]

[k8s]
namespace = "bench"
bench_image = "registry.example/servelab:1"
results_claim = "servelab-results"
images = { sglang = "lmsysorg/sglang:v0.5.6.post2-cu129" }

[[engines]]
name = "sglang"
kind = "sglang"
version = "0.5.6.post2"
command = ["python3", "-m", "sglang.launch_server", "--model-path", "{model}", "--host", "{host}", "--port", "{port}"]
env = { SGLANG_ENABLE_JIT_DEEPGEMM = "0", HF_TOKEN = "hf_secret_value" }

[[knobs]]
name = "layout"
type = "layout"
values = [{tp = 8}, {tp = 16}]
render.sglang = [{flags = ["--tp-size", "{tp}"]}]

[[scenarios]]
id = "random-1k"
args = ["--dataset-name", "random", "--random-input-len", "1024", "--random-output-len", "128", "--num-prompts", "50"]

[objective]
scenarios = ["random-1k"]

[search]
strategy = "grid"
)toml";

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path fresh_dir(const std::string& name) {
  // Per process: two checkouts' test runs on one machine must not share the directory.
  const fs::path d =
      fs::temp_directory_path() / ("servelab_k8s_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

fs::path source_dir() {
  const char* src = std::getenv("SERVELAB_SOURCE_DIR");  // set by ctest (cmake/servelab_test.cmake)
  return src ? fs::path(src) : fs::path(".");
}

st::Study study() {
  return st::parse_study(kStudy, "k8s.toml", "/data");
}

TEST(K8sRender, StudyHardwareNodes) {
  const st::Study s = study();
  EXPECT_EQ(s.hardware.nodes, 2);
  EXPECT_EQ(s.hardware.gpus_per_node, 8);
  EXPECT_EQ(s.hardware.gpu_count, 16);
  EXPECT_EQ(s.k8s.ns, "bench");
  EXPECT_EQ(s.k8s.images.at("sglang"), "lmsysorg/sglang:v0.5.6.post2-cu129");
  // gpu_count alone splits as the twin's --hardware 16xH100 does: two nodes of eight.
  const std::string alone = std::string(kStudy).replace(
      std::string(kStudy).find("nodes = 2\ngpus_per_node = 8"), 27, "gpu_count = 16");
  const st::Study t = st::parse_study(alone, "k8s.toml", "/data");
  EXPECT_EQ(t.hardware.nodes, 2);
  EXPECT_EQ(t.hardware.gpus_per_node, 8);
  const std::string bad =
      std::string(kStudy).replace(std::string(kStudy).find("nodes = 2\n"), 10, "nodes = 2\ngpu_count = 12\n");
  try {
    st::parse_study(bad, "k8s.toml", "/data");
    FAIL() << "accepted gpu_count 12 with 2 x 8";
  } catch (const st::StudyError& e) {
    EXPECT_EQ(std::string(e.what()),
              "k8s.toml:13: hardware.gpu_count: 12 is not nodes x gpus_per_node = 2 x 8");
  }
}

TEST(K8sRender, JobAndLeaderWorkerSetForTwoConfigs) {
  const fs::path dir = fresh_dir("study");
  const st::Study s = study();
  const st::K8sRenderResult r = st::render_k8s_study(s, dir, st::testing::fake_runner());
  ASSERT_TRUE(r.skipped.empty()) << r.skipped[0].second;
  ASSERT_EQ(r.manifests.size(), 2u);
  EXPECT_EQ(r.manifests[0].name, "k8s-small-001-sglang");
  EXPECT_EQ(r.manifests[0].kind, "Job");
  EXPECT_EQ(r.manifests[1].name, "k8s-small-002-sglang");
  EXPECT_EQ(r.manifests[1].kind, "LeaderWorkerSet");
  EXPECT_EQ(r.manifests[1].nodes, 2);
  EXPECT_EQ(r.manifests[1].gpus_per_pod, 8);

  // The Job, exactly (reviewed by hand: see docs/cluster.md for each field's meaning).
  EXPECT_EQ(read(dir / "k8s-small-001-sglang.yaml"),
            read(source_dir() / "tests" / "tune" / "data" / "k8s-small-001-sglang.yaml"));

  const YAML::Node job = YAML::LoadFile((dir / "k8s-small-001-sglang.yaml").string());
  const YAML::Node pod = job["spec"]["template"]["spec"];
  EXPECT_EQ(pod["restartPolicy"].as<std::string>(), "Never");
  const YAML::Node engine = pod["initContainers"][0];
  EXPECT_EQ(engine["restartPolicy"].as<std::string>(), "Always");
  EXPECT_EQ(engine["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(engine["startupProbe"]["httpGet"]["port"].as<int>(), 30000);
  EXPECT_EQ(engine["startupProbe"]["failureThreshold"].as<int>(), 180);  // 1800 s / 10 s
  EXPECT_EQ(engine["env"][0]["name"].as<std::string>(), "HF_TOKEN");
  EXPECT_EQ(engine["env"][0]["valueFrom"]["secretKeyRef"]["name"].as<std::string>(), "servelab-credentials");
  EXPECT_EQ(read(dir / "k8s-small-001-sglang.yaml").find("hf_secret_value"), std::string::npos);
  EXPECT_EQ(engine["env"][1]["value"].as<std::string>(), "0");
  EXPECT_EQ(pod["containers"][0]["name"].as<std::string>(), "bench");
  EXPECT_EQ(pod["volumes"][1]["persistentVolumeClaim"]["claimName"].as<std::string>(), "servelab-results");

  const YAML::Node lws = YAML::LoadFile((dir / "k8s-small-002-sglang.yaml").string());
  EXPECT_EQ(lws["apiVersion"].as<std::string>(), "leaderworkerset.x-k8s.io/v1");
  EXPECT_EQ(lws["spec"]["leaderWorkerTemplate"]["size"].as<int>(), 2);
  const YAML::Node leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"];
  ASSERT_EQ(leader.size(), 2u);
  const auto leader_cmd = leader[0]["command"].as<std::vector<std::string>>();
  ASSERT_EQ(leader_cmd.size(), 3u);
  EXPECT_EQ(
      leader_cmd[2],
      "exec python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --host 127.0.0.1 --port "
      "30000 --tp-size 16 --nnodes 2 --node-rank 0 --dist-init-addr \"${LWS_LEADER_ADDRESS}\":29500\n");
  EXPECT_EQ(leader[0]["resources"]["limits"]["nvidia.com/gpu"].as<int>(), 8);
  EXPECT_EQ(leader[1]["name"].as<std::string>(), "bench");
  const YAML::Node worker = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0];
  EXPECT_EQ(
      worker["command"][2].as<std::string>(),
      "case \"${LWS_WORKER_INDEX}\" in\n"
      "  1)\n"
      "    exec python3 -m sglang.launch_server --model-path deepseek-ai/DeepSeek-V3.2 --host 127.0.0.1 "
      "--port 30000 --tp-size 16 --nnodes 2 --node-rank 1 --dist-init-addr \"${LWS_LEADER_ADDRESS}\":29500 "
      ";;\n"
      "  *) echo \"unexpected LWS_WORKER_INDEX=${LWS_WORKER_INDEX}\" >&2; exit 1 ;;\n"
      "esac\n");
  EXPECT_FALSE(worker["ports"]);  // only the leader serves the API

  EXPECT_EQ(read(dir / "trials.tsv").substr(0, 50),
            "name\tkind\tnodes\tgpus_per_pod\tconfig\ttrial_key\nk8s-");
  // Rendering again into the same directory replaces its manifests; a foreign file is refused.
  EXPECT_EQ(st::render_k8s_study(s, dir, st::testing::fake_runner()).manifests.size(), 2u);
  std::ofstream(dir / "notes.txt") << "mine";
  EXPECT_THROW(st::render_k8s_study(s, dir, st::testing::fake_runner()), std::invalid_argument);
  fs::remove_all(dir);
}

// Issue 31: --render DIR deleted every .yaml in DIR, the user's own included. Now only the files an earlier
// render listed in its trials.tsv are replaced; a foreign file refuses the directory and nothing is deleted.
TEST(K8sRender, NeverDeletesFilesItDidNotWrite) {
  const st::Study s = study();
  const fs::path dir = fresh_dir("foreign");
  fs::create_directories(dir);
  std::ofstream(dir / "deployment.yaml") << "kind: Deployment\n";
  try {
    st::render_k8s_study(s, dir, st::testing::fake_runner());
    FAIL() << "rendered into a foreign directory";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), dir.string() +
                                         " holds deployment.yaml, which tune --render did not write "
                                         "(no trials.tsv of an earlier render): use an empty or new "
                                         "directory");
  }
  EXPECT_EQ(read(dir / "deployment.yaml"), "kind: Deployment\n");
  fs::remove(dir / "deployment.yaml");
  // A directory of an earlier render with one of the user's manifests added: refused, both kept.
  ASSERT_EQ(st::render_k8s_study(s, dir, st::testing::fake_runner()).manifests.size(), 2u);
  std::ofstream(dir / "mine.yaml") << "kind: Service\n";
  try {
    st::render_k8s_study(s, dir, st::testing::fake_runner());
    FAIL() << "deleted mine.yaml";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("holds mine.yaml, which tune --render did not write (not listed in its "
                                   "trials.tsv)"),
        std::string::npos)
        << e.what();
  }
  EXPECT_EQ(read(dir / "mine.yaml"), "kind: Service\n");
  EXPECT_TRUE(fs::exists(dir / "k8s-small-001-sglang.yaml"));
  fs::remove(dir / "mine.yaml");
  // Its own files only: rendered again, in place.
  EXPECT_EQ(st::render_k8s_study(s, dir, st::testing::fake_runner()).manifests.size(), 2u);
  fs::remove_all(dir);
}

st::TrialRequest trial(const std::string& engine, std::vector<std::string> argv) {
  st::TrialRequest t;
  t.engine = engine;
  t.trial_key = "k";
  t.config_key = engine + "{}";
  t.argv = std::move(argv);
  return t;
}

TEST(K8sRender, VllmRayWorkersWaitForTheHead) {
  std::string text = kStudy;
  text.replace(text.find("images = {"), 10, "images = { vllm = \"vllm/vllm-openai:v0.13.0\", ");
  text += R"toml(
[[engines]]
name = "vllm"
kind = "vllm"
version = "0.13.0"
command = ["vllm", "serve", "{model}"]

[[engines]]
name = "trtllm"
kind = "trtllm"
version = "1.2.0rc5"
command = ["trtllm-serve", "{model}"]
)toml";
  const st::Study s = st::parse_study(text, "k8s.toml", "/data");
  const auto m = st::render_k8s_trial(s, trial("vllm", {"vllm", "serve", "m", "-tp", "8", "-pp", "2"}), 3);
  EXPECT_EQ(m.name, "k8s-small-003-vllm");
  const YAML::Node y = YAML::Load(m.yaml);
  const auto lead =
      y["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]["command"][2];
  EXPECT_EQ(lead.as<std::string>(),
            "ray start --head --port=29500 --num-gpus=8\n"
            "exec vllm serve m -tp 8 -pp 2 --distributed-executor-backend ray\n");
  const auto work =
      y["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"][2];
  EXPECT_NE(work.as<std::string>().find(
                "\"${LWS_LEADER_ADDRESS}\" 29500 2>/dev/null; do sleep 5; done\n    exec ray "
                "start --address=\"${LWS_LEADER_ADDRESS}\":29500 --num-gpus=8 --block ;;"),
            std::string::npos)
      << work.as<std::string>();
  // TensorRT-LLM across nodes is one MPI job: not rendered for Kubernetes; without an image: named.
  try {
    st::render_k8s_trial(s, trial("trtllm", {"trtllm-serve", "m", "--tp_size", "16"}), 4);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "trial 4 (trtllm{}): no image for engine trtllm: set [k8s.images] trtllm = \"...\"");
  }
  st::Study with_image = s;
  with_image.k8s.images["trtllm"] = "nvcr.io/nvidia/tensorrt-llm/release:1.2.0rc5";
  try {
    st::render_k8s_trial(with_image, trial("trtllm", {"trtllm-serve", "m", "--tp_size", "16"}), 4);
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "trial 4 (trtllm{}): TensorRT-LLM over 2 nodes runs as one MPI job, which needs an MPI launcher "
        "across pods (e.g. the Kubeflow MPI Operator): not rendered; use --target slurm");
  }
  // One node: a Job with the TensorRT-LLM command as is.
  const auto one =
      st::render_k8s_trial(with_image, trial("trtllm", {"trtllm-serve", "m", "--tp_size", "8"}), 5);
  EXPECT_EQ(one.kind, "Job");
  EXPECT_EQ(one.gpus_per_pod, 8);
}

}  // namespace

// Issue 31: a manifest carried `--api-key` and the bench's Authorization header in clear. Now every
// credential of a command line is a reference to a variable filled from the credentials Secret: "$(NAME)"
// in an exec-form command (Kubernetes expands it), "${NAME}" in a script (the shell does); the render lists
// the keys the Secret must hold. No file it writes holds a credential.
// The benchmark container reads the model's tokenizer from the Hub cache the engine fills (the model-cache
// claim is mounted in both) and a scenario's local file from its own image, which the render says.
TEST(K8sRender, TheBenchContainerSharesTheModelCacheAndLocalFilesAreNamed) {
  std::string text = kStudy;
  text.replace(text.find("results_claim = \"servelab-results\""), 34,
               "results_claim = \"servelab-results\"\nmodel_cache_claim = \"hf-cache\"");
  text.replace(text.find("\"--dataset-name\", \"random\""), 26,
               "\"--dataset-name\", \"sharegpt\", \"--dataset-path=sg.json\"");
  const st::Study s = st::parse_study(text, "k8s.toml", "/data");
  const fs::path dir = fresh_dir("cache");
  const st::K8sRenderResult r = st::render_k8s_study(s, dir, st::testing::fake_runner());
  ASSERT_EQ(r.manifests.size(), 2u);
  const YAML::Node pod =
      YAML::LoadFile((dir / "k8s-small-001-sglang.yaml").string())["spec"]["template"]["spec"];
  std::vector<std::string> mounts;
  for (const auto& m : pod["containers"][0]["volumeMounts"])
    mounts.push_back(m["name"].as<std::string>() + ":" + m["mountPath"].as<std::string>());
  EXPECT_EQ(mounts, (std::vector<std::string>{"results:/results", "model-cache:/root/.cache/huggingface"}));
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_EQ(
      r.warnings[0],
      "scenario random-1k: --dataset-path sg.json is read inside the benchmark container: the bench image "
      "must have it at that path (relative to the container's working directory)");
  fs::remove_all(dir);
}

TEST(K8sRender, NoCredentialInAnyFileItWrites) {
  std::string text = kStudy;
  text.replace(text.find("\"--host\", \"{host}\""), 18,
               "\"--host\", \"{host}\", \"--api-key\", \"sk-live-4f9a\"");
  text.replace(text.find("HF_TOKEN = \"hf_secret_value\""), 28,
               "HF_TOKEN = \"hf_secret_value\", HF_ENDPOINT = \"https://mu:pw-9d2e@mirror.example\"");
  text.replace(text.find("\"/v1/chat/completions\"]"), 23,
               "\"/v1/chat/completions\", \"--header\", \"Authorization=Bearer tok-77c1\"]");
  const st::Study s = st::parse_study(text, "k8s.toml", "/data");
  const fs::path dir = fresh_dir("secrets");
  const st::K8sRenderResult r = st::render_k8s_study(s, dir, st::testing::fake_runner());
  ASSERT_EQ(r.manifests.size(), 2u);
  for (const auto& f : fs::directory_iterator(dir)) {
    const std::string body = read(f.path());
    EXPECT_EQ(body.find("sk-live-4f9a"), std::string::npos) << f.path();
    EXPECT_EQ(body.find("tok-77c1"), std::string::npos) << f.path();
    EXPECT_EQ(body.find("hf_secret_value"), std::string::npos) << f.path();
    EXPECT_EQ(body.find("pw-9d2e"), std::string::npos) << f.path();  // a URL's password in an env value
  }
  EXPECT_EQ(r.secret_keys, (std::set<std::string>{"HF_ENDPOINT", "HF_TOKEN", "SERVELAB_SECRET_API_KEY",
                                                  "SERVELAB_SECRET_AUTHORIZATION"}));
  EXPECT_EQ(r.manifests[0].secret_keys,
            (std::vector<std::string>{"HF_ENDPOINT", "HF_TOKEN", "SERVELAB_SECRET_API_KEY",
                                      "SERVELAB_SECRET_AUTHORIZATION"}));

  // The Job: the engine's exec-form command references the key; its env fills it from the Secret.
  const YAML::Node pod =
      YAML::LoadFile((dir / "k8s-small-001-sglang.yaml").string())["spec"]["template"]["spec"];
  const auto cmd = pod["initContainers"][0]["command"].as<std::vector<std::string>>();
  const auto at = std::find(cmd.begin(), cmd.end(), "--api-key");
  ASSERT_NE(at, cmd.end());
  EXPECT_EQ(*(at + 1), "$(SERVELAB_SECRET_API_KEY)");
  bool from_secret = false;
  for (const auto& e : pod["initContainers"][0]["env"])
    if (e["name"].as<std::string>() == "SERVELAB_SECRET_API_KEY")
      from_secret = e["valueFrom"]["secretKeyRef"]["name"].as<std::string>() == "servelab-credentials" &&
                    e["valueFrom"]["secretKeyRef"]["key"].as<std::string>() == "SERVELAB_SECRET_API_KEY";
  EXPECT_TRUE(from_secret);
  // The benchmark's script: the header's value (scheme included: the Secret holds "Bearer ...") is the
  // shell's expansion of the variable.
  const YAML::Node bench = pod["containers"][0];
  EXPECT_NE(bench["command"][2].as<std::string>().find(
                "--header Authorization=\"${SERVELAB_SECRET_AUTHORIZATION}\" "),
            std::string::npos)
      << bench["command"][2].as<std::string>();
  // Its env: the header's variable, and the engine's Hub variables (the tokenizer of a random scenario comes
  // from the Hub: a gated model's token, a mirror), each from the Secret.
  std::vector<std::string> bench_env;
  for (const auto& e : bench["env"]) {
    bench_env.push_back(e["name"].as<std::string>());
    EXPECT_EQ(e["valueFrom"]["secretKeyRef"]["key"].as<std::string>(), e["name"].as<std::string>());
  }
  EXPECT_EQ(bench_env,
            (std::vector<std::string>{"HF_ENDPOINT", "HF_TOKEN", "SERVELAB_SECRET_AUTHORIZATION"}));

  // The LeaderWorkerSet: head and worker scripts expand the variable; both containers get it.
  const YAML::Node lws =
      YAML::LoadFile((dir / "k8s-small-002-sglang.yaml").string())["spec"]["leaderWorkerTemplate"];
  EXPECT_NE(lws["leaderTemplate"]["spec"]["containers"][0]["command"][2].as<std::string>().find(
                "--api-key \"${SERVELAB_SECRET_API_KEY}\""),
            std::string::npos);
  EXPECT_NE(lws["workerTemplate"]["spec"]["containers"][0]["command"][2].as<std::string>().find(
                "--api-key \"${SERVELAB_SECRET_API_KEY}\""),
            std::string::npos);
  fs::remove_all(dir);
}
