// The Slurm target without a cluster: job states and their classes, Slurm's time and GRES texts, the batch
// script, the [slurm] section, RESULT.json, the runner against fake sbatch/squeue/scancel, and the
// strategies' batches (Evaluator::prefetch). tests/e2e/tune_slurm_e2e.sh runs it on a real Slurm.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <thread>

#include "servelab/common/paths.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/store/tally.h"
#include "servelab/tune/targets/slurm.h"
#include "servelab/tune/tune.h"
#include "test_study.h"
#include "tune/store/wall_clock.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

TEST(SlurmStates, LiveAndFailureClasses) {
  for (const char* s :
       {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "SUSPENDED", "COMPLETING+"})
    EXPECT_TRUE(slurm_state_live(s)) << s;
  for (const char* s :
       {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY"})
    EXPECT_FALSE(slurm_state_live(s)) << s;
  EXPECT_EQ(slurm_state_failure("TIMEOUT"), TrialStatus::kJobTimeLimit);
  EXPECT_EQ(slurm_state_failure("DEADLINE"), TrialStatus::kJobTimeLimit);
  EXPECT_EQ(slurm_state_failure("NODE_FAIL"), TrialStatus::kJobNodeFail);
  EXPECT_EQ(slurm_state_failure("BOOT_FAIL"), TrialStatus::kJobNodeFail);
  EXPECT_EQ(slurm_state_failure("PREEMPTED"), TrialStatus::kJobPreempted);
  EXPECT_EQ(slurm_state_failure("OUT_OF_MEMORY"), TrialStatus::kJobOutOfMemory);
  EXPECT_EQ(slurm_state_failure("CANCELLED by 1000"), TrialStatus::kJobCancelled);
  EXPECT_EQ(slurm_state_failure("COMPLETED"), std::nullopt);
  EXPECT_EQ(slurm_state_failure("FAILED"), std::nullopt);
  EXPECT_EQ(slurm_state_failure("RUNNING"), std::nullopt);
  EXPECT_STREQ(trial_status_name(TrialStatus::kJobOutOfMemory), "job_oom");
  EXPECT_EQ(trial_status_from_name("time_limit"), TrialStatus::kJobTimeLimit);
  EXPECT_EQ(trial_status_from_name("cancelled"), TrialStatus::kJobCancelled);
}

TEST(SlurmStates, ParsesSqueueAndSacct) {
  // squeue -h -t all -o "%i|%T|%r", then sacct -n -P -X -o JobID,State.
  const auto st = parse_slurm_states(
      "12|RUNNING|None\n13|PENDING|Resources\n\n14|TIMEOUT|TimeLimit\n15|CANCELLED by 0\n");
  ASSERT_EQ(st.size(), 4u);
  EXPECT_EQ(st.at("12").state, "RUNNING");
  EXPECT_EQ(st.at("13").detail, "Resources");
  EXPECT_EQ(st.at("14").state, "TIMEOUT");
  EXPECT_EQ(st.at("15").state, "CANCELLED");
  EXPECT_EQ(st.at("15").detail, "");
  // squeue -o "%i|%T|%o": the command (a batch script's path) is the rest of the line, '|' included.
  EXPECT_EQ(parse_slurm_states("16|PENDING|/out/slurm/a|b/job.sh\n").at("16").detail,
            "/out/slurm/a|b/job.sh");
}

TEST(SlurmTime, FormatsAndParses) {
  EXPECT_EQ(slurm_time(1), "0-00:01:00");
  EXPECT_EQ(slurm_time(90.5), "0-01:30:30");
  EXPECT_EQ(slurm_time(2881), "2-00:01:00");
  EXPECT_EQ(slurm_time(0.01), "0-00:00:01");  // 0.6 s rounds up to a whole second
  EXPECT_THROW(slurm_time(0), std::invalid_argument);
  EXPECT_EQ(parse_slurm_minutes("30"), 30.0);
  EXPECT_EQ(parse_slurm_minutes("45:30"), 45.5);         // M:S
  EXPECT_EQ(parse_slurm_minutes("1:30:00"), 90.0);       // H:M:S
  EXPECT_EQ(parse_slurm_minutes("2-00:00:00"), 2880.0);  // D-H:M:S
  EXPECT_EQ(parse_slurm_minutes("1-12"), 2160.0);        // D-H
  EXPECT_EQ(parse_slurm_minutes("UNLIMITED"), std::nullopt);
  EXPECT_THROW(parse_slurm_minutes("soon"), std::invalid_argument);
}

TEST(SlurmGres, CountsPerName) {
  EXPECT_EQ(gres_count("gpu:8", "gpu"), 8);
  EXPECT_EQ(gres_count("gpu:h100:8(S:0-1)", "gpu"), 8);
  EXPECT_EQ(gres_count("gpu:a100:4,gpu:h100:4,shard:16", "gpu"), 8);
  EXPECT_EQ(gres_count("shard:16", "gpu"), 0);
  EXPECT_EQ(gres_count("(null)", "gpu"), 0);
  const auto kv =
      parse_scontrol_line("PartitionName=gpu AllowGroups=ALL MaxTime=2-00:00:00 State=UP Default=YES");
  EXPECT_EQ(kv.at("MaxTime"), "2-00:00:00");
  EXPECT_EQ(kv.at("State"), "UP");
}

const char* kSlurmSection = R"toml(
[slurm]
partition = "h100"
account = "inference"
qos = "high"
gpus_per_trial = 16
gpus_per_node = 8
time_limit_min = 30
max_parallel = 2
setup = ["module load cuda/12.8", "source /opt/venv/bin/activate"]
sbatch_args = ["--constraint=h100", "--exclusive"]
servelab = "/opt/servelab/bin/servelab"
)toml";

TEST(SlurmStudy, ParsesTheSection) {
  Study s = parse_study(std::string(testing::kSmallStudy) + kSlurmSection, "s.toml", "/data");
  EXPECT_TRUE(s.slurm.configured);
  EXPECT_EQ(s.slurm.partition, "h100");
  EXPECT_EQ(s.slurm.nodes(s.hardware.gpu_count), 2);
  EXPECT_EQ(s.slurm.max_parallel, 2);
  EXPECT_EQ(s.slurm.setup.size(), 2u);
  // Without the section: one node with the study's GPUs.
  Study d = parse_study(testing::kSmallStudy, "s.toml", "/data");
  EXPECT_FALSE(d.slurm.configured);
  EXPECT_EQ(d.slurm.gpus(d.hardware.gpu_count), 8);
  EXPECT_EQ(d.slurm.nodes(d.hardware.gpu_count), 1);
}

std::string study_error(const std::string& text) {
  try {
    parse_study(text, "s.toml", "/data");
  } catch (const StudyError& e) {
    return e.what();
  }
  return "";
}

TEST(SlurmStudy, RejectsBadValues) {
  std::string base = testing::kSmallStudy;
  EXPECT_EQ(study_error(base + "[slurm]\ngpus_per_trial = 12\ngpus_per_node = 8\n"),
            "s.toml:61: slurm.gpus_per_trial: 12 GPUs do not fill whole nodes of 8 (slurm.gpus_per_node)");
  EXPECT_EQ(study_error(base + "[slurm]\nsbatch_args = [\"constraint=h100\"]\n"),
            "s.toml:61: slurm.sbatch_args[0]: must be one sbatch option starting with '-' (e.g. "
            "\"--constraint=h100\")");
  EXPECT_NE(study_error(base + "[slurm]\npartiton = \"x\"\n").find("unknown key slurm.partiton (allowed:"),
            std::string::npos);
  EXPECT_NE(
      study_error(base + "[slurm]\ntime_limit_min = 0\n").find("slurm.time_limit_min: 0 is out of range"),
      std::string::npos);
  std::string slurm_target = base;
  slurm_target.replace(slurm_target.find("target = \"twin\""), 15, "target = \"slurm\"");
  EXPECT_NE(study_error(slurm_target).find("target \"slurm\" needs a [slurm] section"), std::string::npos);
}

TEST(SlurmScript, TwoNodeTrial) {
  Study s = parse_study(std::string(testing::kSmallStudy) + kSlurmSection, "s.toml", "/data");
  const SlurmJobFiles f = slurm_job_files("/scratch/out/slurm", "slurm|a{}|s1|r0");
  EXPECT_EQ(f.dir, "/scratch/out/slurm/slurm_a___s1_r0");
  TrialRequest req;
  req.engine = "b";
  req.argv = {"python3", "-m", "sglang.launch_server", "--model-path", "org/model", "--tp-size", "16"};
  const SlurmAllocation alloc = slurm_allocation(s, req);
  EXPECT_EQ(alloc.gpus, 16);
  EXPECT_EQ(alloc.nodes, 2);
  EXPECT_EQ(alloc.gpus_per_node, 8);
  EXPECT_EQ(slurm_batch_script(s, f, "/opt/servelab/bin/servelab", "servelab-small", alloc),
            "#!/bin/bash\n"
            "#SBATCH --job-name=servelab-small\n"
            "#SBATCH --partition=h100\n"
            "#SBATCH --account=inference\n"
            "#SBATCH --qos=high\n"
            "#SBATCH --nodes=2\n"
            "#SBATCH --ntasks-per-node=1\n"
            "#SBATCH --gres=gpu:8\n"
            "#SBATCH --time=0-00:30:00\n"
            "#SBATCH --output=/scratch/out/slurm/slurm_a___s1_r0/slurm-%j.out\n"
            "#SBATCH --requeue\n"
            "#SBATCH --constraint=h100\n"
            "#SBATCH --exclusive\n"
            "# Written by servelab tune (target slurm, docs/cluster.md): one trial of study small.\n"
            "set -e\n"
            "rm -f /scratch/out/slurm/slurm_a___s1_r0/RESULT.json\n"
            "module load cuda/12.8\n"
            "source /opt/venv/bin/activate\n"
            "srun --nodes=2 --ntasks-per-node=1 --wait=30 /opt/servelab/bin/servelab tune-trial "
            "/scratch/out/slurm/slurm_a___s1_r0/REQUEST.json --out "
            "/scratch/out/slurm/slurm_a___s1_r0/RESULT.json\n");
  const SlurmJobFiles spaced = slurm_job_files("/my out/slurm", "k");
  EXPECT_THROW(slurm_batch_script(s, spaced, "/bin/servelab", "j", alloc), std::invalid_argument);
  // The servelab path goes on the srun line, quoted: spaces are fine there.
  EXPECT_NE(slurm_batch_script(s, f, "/opt/my servelab/servelab", "j", alloc)
                .find("--wait=30 '/opt/my servelab/servelab' tune-trial"),
            std::string::npos);
  // An #SBATCH value cannot carry whitespace: refused by name, not written as "--account=infer ence".
  Study spaced_account = s;
  spaced_account.slurm.account = "infer ence";
  try {
    slurm_batch_script(spaced_account, f, "/bin/servelab", "j", alloc);
    FAIL() << "no refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "[slurm] account = 'infer ence' holds whitespace or quotes, which an #SBATCH line cannot carry");
  }
}

// The cost of a Slurm study counts the GPUs each trial asked for (a tp4 trial of a 16-GPU study holds 4,
// not 16), and a trial Slurm cannot allocate is pruned before launch, not a launch refused by its engine.
TEST(SlurmTally, EachTrialPaysForItsOwnGpus) {
  std::string text = testing::kSmallStudy;
  text.replace(text.find("gpu_count = 8"), 13, "gpu_count = 16\ngpus_per_node = 8");
  Study s = parse_study(text + "[slurm]\npartition = \"h100\"\n", "s.toml", "/data");
  s.target = Target::kSlurm;
  auto record = [](const std::string& key, const std::string& tp, TrialStatus status, double wall_s) {
    TrialRecord r;
    r.trial_key = key;
    r.engine = "b";
    r.config_key = key.substr(6, 4);
    r.argv = {"python3", "-m", "sglang.launch_server", "--model-path", "org/m", "--tp-size", tp};
    r.outcome.status = status;
    r.outcome.wall_s = wall_s;
    ScenarioResult sc;
    sc.metrics["Benchmark duration (s)"] = wall_s / 2;
    if (status == TrialStatus::kOk) r.outcome.scenarios.push_back(sc);
    return r;
  };
  const std::vector<TrialRecord> records = {
      record("slurm|b{4}|s1|r0", "4", TrialStatus::kOk, 3600),
      record("slurm|b{8}|s1|r0", "8", TrialStatus::kOk, 1800),
      record("slurm|b{12}|s1|r0", "12", TrialStatus::kRejected, 0),  // 12 GPUs: no whole nodes of 8
  };
  EXPECT_EQ(trial_gpus(s, records[0]), 4);
  EXPECT_EQ(trial_gpus(s, records[1]), 8);
  const TrialTally t = tally_trials(s, records);
  EXPECT_EQ(t.trials, 3);
  EXPECT_EQ(t.pruned, 1);
  EXPECT_EQ(t.launches, 2);
  EXPECT_EQ(t.refused, 0);
  EXPECT_DOUBLE_EQ(t.measured_gpu_hours(), 4 * 1.0 + 8 * 0.5);  // was 16 GPUs x 1.5 h = 24
  EXPECT_DOUBLE_EQ(t.planned_gpu_hours(600), (12 * 600 + 4 * 1800 + 8 * 900) / 3600.0);
  EXPECT_EQ(t.text(),
            "2 engine launches (3 trials, 1 pruned before launch), 8.00 GPU-hours (trial wall time "
            "× 4-8 GPUs each held)");
  // A local study holds the node: every trial pays for the study's GPUs.
  s.target = Target::kLocal;
  std::vector<TrialRecord> local = records;
  for (auto& r : local) r.trial_key.replace(0, 5, "local");
  EXPECT_EQ(trial_gpus(s, local[0]), 16);
  EXPECT_EQ(
      tally_trials(s, local).text(),
      "2 engine launches (3 trials, 1 pruned before launch), 24.00 GPU-hours (trial wall time × 16 GPUs)");
}

// Each trial asks for what its own launch uses (a study of tp8 and tp16 layouts on 16 GPUs: one node for
// tp8, two for tp16), not the study's whole GPU count: a one-node launch given two nodes is refused on the
// node ("2 nodes would leave one idle") and pays for both.
TEST(SlurmScript, EachTrialAsksForItsOwnLayout) {
  std::string text = testing::kSmallStudy;
  text.replace(text.find("gpu_count = 8"), 13, "gpu_count = 16\ngpus_per_node = 8");
  Study s = parse_study(text + "[slurm]\npartition = \"h100\"\n", "s.toml", "/data");
  auto alloc = [&](const std::string& engine, std::vector<std::string> argv) {
    TrialRequest r;
    r.engine = engine;
    r.argv = std::move(argv);
    return slurm_allocation(s, r);
  };
  const std::vector<std::string> sglang = {"python3", "-m", "sglang.launch_server", "--model-path", "org/m"};
  auto with = [&](std::vector<std::string> flags) {
    std::vector<std::string> a = sglang;
    a.insert(a.end(), flags.begin(), flags.end());
    return a;
  };
  const SlurmAllocation tp8 = alloc("b", with({"--tp-size", "8"}));
  EXPECT_EQ(tp8.nodes, 1);
  EXPECT_EQ(tp8.gpus_per_node, 8);
  const SlurmAllocation tp4 = alloc("b", with({"--tp-size", "4"}));
  EXPECT_EQ(tp4.nodes, 1);
  EXPECT_EQ(tp4.gpus_per_node, 4);
  const SlurmAllocation tp8dp2 = alloc("b", with({"--tp-size", "8", "--dp-size", "2"}));
  EXPECT_EQ(tp8dp2.nodes, 2);
  EXPECT_EQ(tp8dp2.gpus_per_node, 8);
  const SlurmJobFiles f = slurm_job_files("/scratch/out/slurm", "k");
  const std::string one = slurm_batch_script(s, f, "/bin/servelab", "j", tp4);
  EXPECT_NE(one.find("#SBATCH --nodes=1\n"), std::string::npos) << one;
  EXPECT_NE(one.find("#SBATCH --gres=gpu:4\n"), std::string::npos) << one;
  EXPECT_NE(one.find("srun --nodes=1 "), std::string::npos) << one;
  auto refusal = [&](const std::string& engine, std::vector<std::string> argv) {
    try {
      alloc(engine, std::move(argv));
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no refusal)");
  };
  EXPECT_EQ(refusal("b", with({"--tp-size", "12"})),
            "the trial asks for 12 GPUs, which do not fill whole nodes of 8 ([slurm] gpus_per_node): a "
            "multi-node trial uses every GPU of its nodes");
  EXPECT_EQ(refusal("b", with({"--tp-size", "32"})),
            "the launch uses 32 GPUs; the study has 16 ([hardware] gpu_count)");
  // [slurm] gpus_per_trial, when given, is what every trial asks for (a test cluster's GRES, GPUs shared out
  // differently): a tp8 launch on gpus_per_trial = 16 gets two nodes.
  Study given = parse_study(std::string(testing::kSmallStudy) + kSlurmSection, "s.toml", "/data");
  TrialRequest tp8_given;
  tp8_given.engine = "b";
  tp8_given.argv = with({"--tp-size", "8"});
  EXPECT_EQ(slurm_allocation(given, tp8_given).nodes, 2);
  // TensorRT-LLM: a one-node trial runs; a two-node one is refused alone (not the whole engine).
  Study t = s;
  t.engines[0].kind = engines::EngineKind::kTrtllm;
  t.engines[0].version = "1.2.0rc5";
  TrialRequest trt;
  trt.engine = "a";
  trt.argv = {"trtllm-serve", "org/model", "--tp_size", "8"};
  EXPECT_EQ(slurm_allocation(t, trt).nodes, 1);
  trt.argv = {"trtllm-serve", "org/model", "--tp_size", "16"};
  try {
    slurm_allocation(t, trt);
    FAIL() << "no refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(
        std::string(e.what()).find("multi-node TensorRT-LLM (one MPI job owning the allocation's tasks)"),
        std::string::npos)
        << e.what();
  }
}

TEST(SlurmResult, RoundTrips) {
  TrialOutcome o;
  o.status = TrialStatus::kCrashed;
  o.reason = "engine died";
  o.log_tail = "line 1\nline 2";
  o.wall_s = 12.5;
  ScenarioResult r;
  r.scenario_id = "s1";
  r.metrics = {{"Total Token throughput (tok/s)", 1234.5}, {"Successful requests", 10}};
  r.ttft_ms = {1.5, 2.5};
  r.result_block = "=== block ===";
  o.scenarios.push_back(r);
  const fs::path p = fs::temp_directory_path() / ("servelab-result-" + std::to_string(getpid()) + ".json");
  std::ofstream(p) << trial_outcome_json(o);
  const TrialOutcome back = read_trial_outcome(p);
  EXPECT_EQ(back.status, TrialStatus::kCrashed);
  EXPECT_EQ(back.reason, "engine died");
  EXPECT_EQ(back.log_tail, "line 1\nline 2");
  EXPECT_EQ(back.wall_s, 12.5);
  ASSERT_EQ(back.scenarios.size(), 1u);
  EXPECT_EQ(back.scenarios[0].metrics.at("Total Token throughput (tok/s)"), 1234.5);
  EXPECT_EQ(back.scenarios[0].ttft_ms, (std::vector<double>{1.5, 2.5}));
  EXPECT_EQ(back.scenarios[0].result_block, "=== block ===");
  std::ofstream(p) << "{\"servelab_trial_result\": 1}";
  EXPECT_THROW(read_trial_outcome(p), std::runtime_error);
  fs::remove(p);
  EXPECT_THROW(read_trial_outcome(p), std::runtime_error);
}

/// A directory with fake sbatch/squeue/scancel: sbatch numbers jobs 1, 2, ... and, when RESULT_OK is set,
/// writes an ok RESULT.json for the job; squeue prints each asked id with the state in state.<id> (default
/// COMPLETED) and logs the ids it was asked about, or with --name the lines of `named` ("id|state|script");
/// scancel logs its arguments.
struct FakeSlurm {
  fs::path dir = fs::temp_directory_path() / ("servelab-fake-slurm-" + std::to_string(getpid()));
  FakeSlurm() {
    fs::remove_all(dir);
    fs::create_directories(dir / "out");
    tool("sbatch",
         "n=$(($(cat \"$D/counter\" 2>/dev/null || echo 0) + 1)); echo $n > \"$D/counter\"\n"
         "script=\"${@: -1}\"; echo \"$n $script\" >> \"$D/sbatch.log\"\n"
         "[ -f \"$D/result.json\" ] && cp \"$D/result.json\" \"$(dirname \"$script\")/RESULT.json\"\n"
         "echo $n");
    tool("squeue",
         "if [[ \" $* \" == *\" --name=\"* ]]; then cat \"$D/named\" 2>/dev/null; exit 0; fi\n"
         "ids=\"${@: -1}\"; echo \"$ids\" >> \"$D/squeue.log\"\n"
         "for i in ${ids//,/ }; do echo \"$i|$(cat \"$D/state.$i\" 2>/dev/null || echo COMPLETED)|None\"; "
         "done");
    tool("scancel", "echo \"$@\" >> \"$D/scancel.log\"");
    tool("sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1");
  }
  ~FakeSlurm() { fs::remove_all(dir); }
  void tool(const std::string& name, const std::string& body) {
    std::ofstream(dir / name) << "#!/bin/bash\nD=" << dir.string() << "\n" << body << "\n";
    fs::permissions(dir / name, fs::perms::owner_all);
  }
  std::string read(const std::string& name) const {
    try {
      return common::read_file(dir / name);
    } catch (const std::exception&) {
      return "";
    }
  }
  SlurmRunnerOptions options(const std::atomic<bool>* stop = nullptr) const {
    SlurmRunnerOptions o;
    o.out_dir = dir / "out";
    o.store_path = dir / "out" / "results.sqlite";
    o.servelab = "/bin/servelab";
    o.sbatch = (dir / "sbatch").string();
    o.squeue = (dir / "squeue").string();
    o.scancel = (dir / "scancel").string();
    o.sacct = (dir / "sacct").string();
    o.stop = stop;
    return o;
  }
};

Study slurm_study(int max_parallel) {
  Study s = parse_study(std::string(testing::kSmallStudy) +
                            "[slurm]\ntime_limit_min = 5\npoll_interval_s = 0.05\n" +
                            "max_parallel = " + std::to_string(max_parallel) + "\n",
                        "s.toml", "/data");
  return s;
}

std::vector<TrialRequest> requests(int n) {
  std::vector<TrialRequest> out;
  for (int i = 0; i < n; ++i) {
    TrialRequest r;
    r.trial_key = "slurm|a{k=" + std::to_string(i) + "}|s1|r0";
    r.engine = "a";
    r.config_key = "a{k=" + std::to_string(i) + "}";
    r.argv = {"vllm", "serve", "org/model", "-tp", "8"};
    out.push_back(r);
  }
  return out;
}

TEST(SlurmRunner, SubmitsUpToTheLimitAndClassifiesEndings) {
  FakeSlurm fake;
  TrialOutcome ok;
  ok.reason = "";
  ok.wall_s = 3;
  std::ofstream(fake.dir / "result.json") << trial_outcome_json(ok);
  std::ofstream(fake.dir / "state.2") << "TIMEOUT";
  std::ofstream(fake.dir / "state.4") << "OUT_OF_MEMORY";
  const Study study = slurm_study(2);
  { Store init(fake.dir / "out" / "results.sqlite"); }
  BatchTrialRunner run = make_slurm_runner(study, fake.options());
  std::map<std::size_t, TrialOutcome> got;
  run(requests(5), [&](std::size_t i, TrialOutcome o) { got[i] = std::move(o); });
  ASSERT_EQ(got.size(), 5u);
  EXPECT_EQ(got[0].status, TrialStatus::kOk);
  EXPECT_EQ(got[1].status, TrialStatus::kJobTimeLimit);
  EXPECT_EQ(got[1].reason.substr(0, 62), "Slurm job 2 hit its time limit (0-00:05:00, [slurm] time_limit");
  EXPECT_EQ(got[3].status, TrialStatus::kJobOutOfMemory);
  EXPECT_EQ(got[4].status, TrialStatus::kOk);
  // Never more than max_parallel = 2 jobs asked about at once; five submissions, one per trial.
  std::istringstream polls(fake.read("squeue.log"));
  int most = 0;
  for (std::string line; std::getline(polls, line);)
    most = std::max(most, 1 + static_cast<int>(std::count(line.begin(), line.end(), ',')));
  EXPECT_EQ(most, 2);
  EXPECT_EQ(fake.read("counter"), "5\n");
  Store store(fake.dir / "out" / "results.sqlite");
  const auto jobs = store.slurm_jobs();
  ASSERT_EQ(jobs.size(), 5u);
  EXPECT_EQ(jobs.at("slurm|a{k=1}|s1|r0").job_id, "2");
  EXPECT_EQ(jobs.at("slurm|a{k=1}|s1|r0").state, "TIMEOUT");
}

TEST(SlurmRunner, ResumeWaitsForStoredJobsInsteadOfSubmitting) {
  FakeSlurm fake;
  const Study study = slurm_study(4);
  const auto reqs = requests(2);
  {
    Store store(fake.dir / "out" / "results.sqlite");
    store.record_slurm_job(SlurmJobRecord{reqs[0].trial_key, "77", "RUNNING", 1.0});
  }
  // Job 77 ran while no tune watched and wrote its result; the other trial is submitted (as job 1).
  const SlurmJobFiles f = slurm_job_files(fake.dir / "out" / "slurm", reqs[0].trial_key);
  fs::create_directories(f.dir);
  TrialOutcome crashed;
  crashed.status = TrialStatus::kCrashed;
  crashed.reason = "died";
  std::ofstream(f.result) << trial_outcome_json(crashed);
  std::ofstream(fake.dir / "state.1") << "CANCELLED";
  std::map<std::size_t, TrialOutcome> got;
  make_slurm_runner(study, fake.options())(reqs,
                                           [&](std::size_t i, TrialOutcome o) { got[i] = std::move(o); });
  EXPECT_EQ(got.at(0).status, TrialStatus::kCrashed);
  EXPECT_EQ(got.at(0).reason, "died; job output: " + (f.dir / "slurm-77.out").string());
  EXPECT_EQ(got.at(1).status, TrialStatus::kJobCancelled);
  EXPECT_EQ(fake.read("counter"), "1\n");  // only the trial without a stored job was submitted
  EXPECT_EQ(fake.read("squeue.log").substr(0, 5), "77,1\n");
}

// A trial whose launch cannot be allocated (12 GPUs on nodes of 8) is rejected by itself, with the reason,
// and the others are submitted; each REQUEST.json (the study's text, credentials included) is readable by
// its owner only, in a directory only the owner may enter.
TEST(SlurmRunner, UnallocatableTrialIsRejectedAloneAndRequestsArePrivate) {
  FakeSlurm fake;
  Study study =
      parse_study(std::string(testing::kSmallStudy) + "[slurm]\npoll_interval_s = 0.05\n", "s.toml", "/data");
  TrialOutcome ok;
  std::ofstream(fake.dir / "result.json") << trial_outcome_json(ok);
  { Store init(fake.dir / "out" / "results.sqlite"); }
  auto reqs = requests(3);
  reqs[1].argv = {"vllm", "serve", "org/model", "-tp", "12"};
  reqs[2].argv = {"vllm", "serve", "org/model", "-tp", "4"};
  // A REQUEST.json already there (mode 0644, hard-linked elsewhere) is replaced, not rewritten in place:
  // the other name keeps its old text and mode.
  const SlurmJobFiles f2 = slurm_job_files(fake.dir / "out" / "slurm", reqs[2].trial_key);
  fs::create_directories(f2.dir);
  std::ofstream(fake.dir / "elsewhere.json") << "old";
  fs::permissions(fake.dir / "elsewhere.json", fs::perms::owner_read | fs::perms::owner_write |
                                                   fs::perms::group_read | fs::perms::others_read);
  fs::create_hard_link(fake.dir / "elsewhere.json", f2.request);
  std::map<std::size_t, TrialOutcome> got;
  make_slurm_runner(study, fake.options())(reqs,
                                           [&](std::size_t i, TrialOutcome o) { got[i] = std::move(o); });
  EXPECT_EQ(got.at(0).status, TrialStatus::kOk);
  EXPECT_EQ(got.at(1).status, TrialStatus::kRejected);
  EXPECT_EQ(got.at(1).reason, "the launch uses 12 GPUs; the study has 8 ([hardware] gpu_count)");
  EXPECT_EQ(got.at(2).status, TrialStatus::kOk);
  EXPECT_EQ(fake.read("counter"), "2\n");
  std::ifstream tp4(slurm_job_files(fake.dir / "out" / "slurm", reqs[2].trial_key).script);
  const std::string tp4_text((std::istreambuf_iterator<char>(tp4)), std::istreambuf_iterator<char>());
  EXPECT_NE(tp4_text.find("#SBATCH --gres=gpu:4\n"), std::string::npos) << tp4_text;
  const SlurmJobFiles f = slurm_job_files(fake.dir / "out" / "slurm", reqs[0].trial_key);
  EXPECT_EQ(fs::status(f.request).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::status(f.dir).permissions() & fs::perms::all, fs::perms::owner_all);
  EXPECT_EQ(fake.read("elsewhere.json"), "old");
  EXPECT_EQ(fs::status(fake.dir / "elsewhere.json").permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read | fs::perms::others_read);
  EXPECT_EQ(fs::status(f2.request).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  EXPECT_EQ(fs::hard_link_count(f2.request), 1u);
  std::ifstream script(f.script);
  const std::string text((std::istreambuf_iterator<char>(script)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("#SBATCH --nodes=1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#SBATCH --gres=gpu:8\n"), std::string::npos) << text;
}

// Pre-flight names every engine whose start-up budget the time limit does not exceed (a trial user saw only
// "engine vllm" where sglang had the same 1800 s), and only warns about TensorRT-LLM: its one-node trials
// run.
TEST(SlurmPreflight, NamesEverySlowEngineAndOnlyWarnsAboutTensorRtLlm) {
  FakeSlurm fake;
  fake.tool("scontrol",
            "echo 'PartitionName=h100 State=UP MaxTime=1-00:00:00 MaxNodes=UNLIMITED Default=YES'");
  fake.tool("sinfo", "echo 'n1|gpu:8'; echo 'n2|gpu:8'");
  std::string text = testing::kSmallStudy;
  text.replace(text.find("gpu_count = 8"), 13, "gpu_count = 16\ngpus_per_node = 8");
  Study s = parse_study(text + "[slurm]\npartition = \"h100\"\ntime_limit_min = 5\n", "s.toml", "/data");
  s.engines[0].kind = engines::EngineKind::kTrtllm;
  SlurmPreflightOptions o;
  o.scontrol = (fake.dir / "scontrol").string();
  o.sinfo = (fake.dir / "sinfo").string();
  const PreflightReport r = run_slurm_preflight(s, o);
  EXPECT_TRUE(r.ok()) << r.text();
  EXPECT_NE(r.text().find("time_limit_min = 5 is not longer than the start-up budget (ready_timeout_s) of "
                          "engines a (1800 s), b (1800 s)"),
            std::string::npos)
      << r.text();
  EXPECT_NE(r.text().find("[warning] engine a: multi-node TensorRT-LLM"), std::string::npos) << r.text();
}

TEST(SlurmRunner, StopCancelsTheJobsAndForgetsThem) {
  FakeSlurm fake;
  std::ofstream(fake.dir / "state.1") << "RUNNING";
  std::ofstream(fake.dir / "state.2") << "PENDING";
  std::atomic<bool> stop{false};
  const Study study = slurm_study(2);
  { Store init(fake.dir / "out" / "results.sqlite"); }
  std::thread ctrl_c([&] {
    while (fake.read("squeue.log").empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    stop = true;
  });
  std::vector<TrialStatus> got(3, TrialStatus::kOk);
  make_slurm_runner(study, fake.options(&stop))(requests(3),
                                                [&](std::size_t i, TrialOutcome o) { got[i] = o.status; });
  ctrl_c.join();
  EXPECT_EQ(got, std::vector<TrialStatus>(3, TrialStatus::kInterrupted));
  EXPECT_EQ(fake.read("scancel.log"), "1 2\n");
  EXPECT_EQ(fake.read("counter"), "2\n");  // the third trial was never submitted
  Store store(fake.dir / "out" / "results.sqlite");
  EXPECT_TRUE(store.slurm_jobs().empty());  // --resume submits them again
}

TEST(SlurmRunner, SbatchRefusalStopsTheStudy) {
  FakeSlurm fake;
  fake.tool("sbatch", "echo 'sbatch: error: invalid partition specified: h100' >&2; exit 1");
  { Store init(fake.dir / "out" / "results.sqlite"); }
  try {
    make_slurm_runner(slurm_study(2), fake.options())(requests(1), [](std::size_t, TrialOutcome) {});
    FAIL() << "no StudyAbort";
  } catch (const StudyAbort& e) {
    EXPECT_NE(std::string(e.what()).find("sbatch refused the job of trial slurm|a{k=0}|s1|r0"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("sbatch: error: invalid partition specified: h100"),
              std::string::npos);
  }
  // The row written before sbatch ran stays: a failed sbatch may have queued the job all the same
  // ("Socket timed out"), and --resume looks for it by its script before submitting again.
  const auto rows = Store(fake.dir / "out" / "results.sqlite").slurm_jobs();
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows.begin()->second.job_id, "");
  EXPECT_EQ(rows.begin()->second.state, "SUBMITTING");
}

// The strategies hand independent trials to the batch runner: the same study with and without it gives
// the same trials and the same best config; with it, the grid's launchable points come in one batch.
TEST(SlurmBatch, GridTrialsComeInOneBatch) {
  const Study study =
      parse_study(std::string(testing::kSmallStudy) + "[search]\nstrategy = \"grid\"\n", "s.toml", "/data");
  const fs::path base = fs::temp_directory_path() / ("servelab-batch-" + std::to_string(getpid()));
  fs::remove_all(base);
  TuneOptions one;
  one.out_dir = base / "one";
  one.runner = testing::fake_runner();
  one.write_report = false;
  const TuneResult a = run_study(study, one);
  std::vector<std::size_t> batches;
  int singles = 0;
  TuneOptions many;
  many.out_dir = base / "many";
  many.write_report = false;
  many.runner = [&singles](const TrialRequest& r) { return ++singles, testing::fake_runner()(r); };
  many.batch_runner = [&batches](const std::vector<TrialRequest>& reqs, const TrialDone& done) {
    batches.push_back(reqs.size());
    for (std::size_t i = reqs.size(); i-- > 0;) done(i, testing::fake_runner()(reqs[i]));  // any order
  };
  const TuneResult b = run_study(study, many);
  EXPECT_EQ(a.outcome.best.key, b.outcome.best.key);
  EXPECT_EQ(a.outcome.best.objective.mean, b.outcome.best.objective.mean);
  // (the study's target is the twin: its trials are runner calls, not engine starts)
  EXPECT_EQ(a.tally.trials - a.tally.pruned, b.tally.trials - b.tally.pruned);
  int grid_launches = 0;
  for (const auto& r : Store(base / "one" / "results.sqlite").trials())
    grid_launches += r.phase == "grid" && r.outcome.status != TrialStatus::kRejected;
  ASSERT_FALSE(batches.empty());
  EXPECT_EQ(static_cast<int>(batches.front()), grid_launches);
  EXPECT_GT(grid_launches, 4);
  EXPECT_EQ(singles + static_cast<int>(std::accumulate(batches.begin(), batches.end(), std::size_t{0})),
            b.tally.trials - b.tally.pruned);
  fs::remove_all(base);
}

// Section 2: a 16-GPU SGLang trial on 2 nodes of 8: every node runs the same server with its rank and the
// head's rendezvous address (engines::render_node_launch), the port from the job id.
TEST(SlurmMultiNode, SglangOnTwoNodes) {
  Study s =
      parse_study(std::string(testing::kSmallStudy) + "[slurm]\ngpus_per_trial = 16\ngpus_per_node = 8\n",
                  "s.toml", "/data");
  EXPECT_EQ(s.slurm.nodes(s.hardware.gpu_count), 2);
  EXPECT_EQ(slurm_rendezvous_port("12345"), 32345);
  EXPECT_EQ(slurm_rendezvous_port("45678"), 25678);
  const std::vector<std::string> argv = {
      "python3", "-m", "sglang.launch_server", "--model-path", "org/model", "--tp-size", "16"};
  SlurmNodeContext node;
  node.nodes = 2;
  node.head = "gpu-a17";
  node.job_id = "12345";
  for (int rank : {0, 1}) {
    node.node_rank = rank;
    const engines::NodeLaunch l = slurm_node_launch(s, "b", argv, {}, node);
    EXPECT_EQ(l.method, "sglang-nnodes");
    EXPECT_EQ(l.serves_http, rank == 0);
    std::vector<std::string> want = argv;
    want.insert(want.end(),
                {"--nnodes", "2", "--node-rank", std::to_string(rank), "--dist-init-addr", "gpu-a17:32345"});
    EXPECT_EQ(l.argv, want) << "rank " << rank;
  }
  // TensorRT-LLM's MPI job would have to own the allocation's tasks: refused with the reason.
  Study t = s;
  t.engines[0].kind = engines::EngineKind::kTrtllm;
  node.node_rank = 0;
  try {
    slurm_node_launch(t, "a", {"trtllm-serve", "org/model", "--tp_size", "16"}, {}, node);
    FAIL() << "no refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multi-node TensorRT-LLM runs as one MPI job"), std::string::npos);
  }
}

/// Now as squeue's %V prints it (the local time), `ago_s` seconds ago.
std::string squeue_time(double ago_s) {
  const std::time_t t = std::time(nullptr) - static_cast<std::time_t>(ago_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

TEST(SlurmRunner, ResumeAdoptsAJobWhoseIdTheKilledTuneDidNotWrite) {
  FakeSlurm fake;
  const Study study = slurm_study(4);
  const auto reqs = requests(3);
  std::vector<SlurmJobFiles> f;
  for (const auto& r : reqs) {
    f.push_back(slurm_job_files(fake.dir / "out" / "slurm", r.trial_key));
    fs::create_directories(f.back().dir);
  }
  {
    // Each row as submit() leaves it when tune is killed between sbatch and writing the id.
    Store store(fake.dir / "out" / "results.sqlite");
    store.record_slurm_job(SlurmJobRecord{reqs[0].trial_key, "", "SUBMITTING", wall_now_s() - 10});
    store.record_slurm_job(SlurmJobRecord{reqs[1].trial_key, "", "SUBMITTING", wall_now_s() - 10});
    store.record_slurm_job(SlurmJobRecord{reqs[2].trial_key, "", "SUBMITTING", wall_now_s() + 1000});
  }
  TrialOutcome crashed;
  crashed.status = TrialStatus::kCrashed;
  crashed.reason = "died";
  // Trial 0: squeue still knows its job (41) by the script, beside another study's (40) and the trial's own
  // job of an earlier run (39, submitted before the intent; a larger id would not win either); trial 1:
  // squeue forgot it, its output names it (77), not the garbage file beside it; trial 2: only an output
  // older than the intent (a cancelled earlier job): submitted again (job 1).
  std::ofstream(fake.dir / "named") << "40|RUNNING|" << squeue_time(5) << "|/elsewhere/job.sh\n"
                                    << "41|RUNNING|" << squeue_time(5) << "|" << f[0].script.string() << "\n"
                                    << "139|CANCELLED|" << squeue_time(3600) << "|" << f[0].script.string()
                                    << "\n";
  std::ofstream(fake.dir / "state.41") << "COMPLETED";
  std::ofstream(f[0].script) << "#!/bin/bash\n";
  std::ofstream(f[0].result) << trial_outcome_json(crashed);
  std::ofstream(f[1].dir / "slurm-77.out") << "engine log\n";
  std::ofstream(f[1].dir / "slurm-x;rm.out") << "not a job\n";
  std::ofstream(f[1].result) << trial_outcome_json(crashed);
  std::ofstream(f[2].dir / "slurm-5.out") << "old\n";
  std::ofstream(fake.dir / "state.1") << "CANCELLED";
  std::map<std::size_t, TrialOutcome> got;
  make_slurm_runner(study, fake.options())(reqs,
                                           [&](std::size_t i, TrialOutcome o) { got[i] = std::move(o); });
  EXPECT_EQ(got.at(0).reason, "died; job output: " + (f[0].dir / "slurm-41.out").string());
  EXPECT_EQ(got.at(1).reason, "died; job output: " + (f[1].dir / "slurm-77.out").string());
  EXPECT_EQ(got.at(2).status, TrialStatus::kJobCancelled);
  EXPECT_EQ(fake.read("counter"), "1\n");  // only trial 2 was submitted
  const auto jobs = Store(fake.dir / "out" / "results.sqlite").slurm_jobs();
  EXPECT_EQ(jobs.at(reqs[0].trial_key).job_id, "41");
  EXPECT_EQ(jobs.at(reqs[1].trial_key).job_id, "77");
  EXPECT_EQ(jobs.at(reqs[2].trial_key).job_id, "1");
}

// When squeue cannot say whether the killed run queued the job, nothing is submitted: a second job of the
// same trial is worse than a study that stops and says why.
TEST(SlurmRunner, ResumeStopsWhenSqueueCannotSayWhetherAJobWasQueued) {
  FakeSlurm fake;
  fake.tool("squeue", "echo 'squeue: error: Socket timed out on send/recv operation' >&2; exit 1");
  const auto reqs = requests(1);
  {
    Store store(fake.dir / "out" / "results.sqlite");
    store.record_slurm_job(SlurmJobRecord{reqs[0].trial_key, "", "SUBMITTING", wall_now_s()});
  }
  try {
    make_slurm_runner(slurm_study(2), fake.options())(reqs, [](std::size_t, TrialOutcome) {});
    FAIL() << "no StudyAbort";
  } catch (const StudyAbort& e) {
    EXPECT_NE(std::string(e.what()).find("cannot tell whether the earlier run queued the job of a{k=0} "
                                         "(squeue: squeue: error: Socket timed out"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(fake.read("counter"), "");
  EXPECT_EQ(Store(fake.dir / "out" / "results.sqlite").slurm_jobs().at(reqs[0].trial_key).state,
            "SUBMITTING");
}

}  // namespace
}  // namespace servelab::tune
