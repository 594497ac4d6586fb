// No credential of a study reaches what tune writes (issue 9 section 4): secret headers in the study's bench
// common_args, an engine's --api-key and HF_TOKEN, a base URL with userinfo and a failure reason quoting them
// are absent from report.md, report.html, trials.csv, trials.json, results.sqlite and the progress lines.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "servelab/common/paths.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/tune.h"
#include "test_study.h"

namespace servelab::tune {
namespace {

namespace fs = std::filesystem;

std::string with_secrets() {
  std::string s = testing::kSmallStudy;
  auto put = [&s](const std::string& what, const std::string& with) {
    const auto p = s.find(what);
    ASSERT_NE(p, std::string::npos) << what;
    s.replace(p, what.size(), with);
  };
  put(R"(common_args = ["--backend", "openai-chat"])",
      R"(common_args = ["--backend", "openai-chat", "--header", "Authorization=Bearer sk-SECRET1",)"
      R"( "--header", "Proxy-Authorization=Basic SECRET2", "--header", "X-Auth-Token=SECRET3",)"
      R"( "--header", "X-Api-Key: SECRET4", "--base-url", "http://user:SECRET5@127.0.0.1:9"])");
  put(R"(base_flags = ["--chat-template", "x.jinja"])",
      R"(base_flags = ["--chat-template", "x.jinja", "--api-key", "SECRET6"])"
      "\nenv = {HF_TOKEN = \"SECRET7\"}");
  return s;
}

TEST(Secrets, NoStudyCredentialIsWrittenAnywhere) {
  const fs::path dir = fs::temp_directory_path() / ("servelab-tune-secrets-" + std::to_string(getpid()));
  fs::remove_all(dir);
  const Study study = parse_study(with_secrets(), "secrets.toml", "/data");
  ASSERT_EQ(study.bench_common_args.size(), 12u);
  std::ostringstream progress;
  TuneOptions opt;
  opt.out_dir = dir;
  opt.progress = &progress;
  opt.runner = [](const TrialRequest& r) {
    if (r.engine == "b" && r.config_key.find("flag=true") != std::string::npos) {
      TrialOutcome out;  // a failure whose reason and log quote the command, as an engine's stderr would
      out.status = TrialStatus::kCrashed;
      out.reason = "engine exited: usage: --api-key SECRET6 Authorization: Bearer sk-SECRET1";
      out.log_tail = "HF_TOKEN=SECRET7 python3 -m sglang.launch_server --api-key 'SECRET6'\n";
      return out;
    }
    return testing::fake_runner()(r);
  };
  run_study(study, opt);

  // The report still shows the commands, with the values replaced.
  const std::string md = common::read_file(dir / "report.md");
  EXPECT_NE(md.find("Authorization=<redacted>"), std::string::npos);
  EXPECT_NE(md.find("--api-key"), std::string::npos);
  EXPECT_TRUE(fs::exists(dir / "summary.json"));
  for (const char* file : {"report.md", "report.html", "trials.csv", "trials.json", "summary.json",
                           "results.sqlite", "results.sqlite-wal"}) {
    if (!fs::exists(dir / file)) continue;
    const std::string text = common::read_file(dir / file);
    for (int i = 1; i <= 7; ++i) {
      EXPECT_EQ(text.find("SECRET" + std::to_string(i)), std::string::npos) << file << " holds SECRET" << i;
    }
  }
  for (int i = 1; i <= 7; ++i)
    EXPECT_EQ(progress.str().find("SECRET" + std::to_string(i)), std::string::npos)
        << "progress: SECRET" << i;
  // The stored study still parses (servelab report re-reads it).
  const auto toml = Store(dir / "results.sqlite").study_toml();
  ASSERT_TRUE(toml.has_value());
  EXPECT_NO_THROW(parse_study(*toml, "stored", "/data"));
  fs::remove_all(dir);
}

// Issue 31 (review): a knob not named like a credential that renders into one (`--api-key {value}`,
// `--hf-token={value}`, an HF_TOKEN variable) is as secret as one that is: its labels are "<redacted-N>".
TEST(Secrets, KnobRenderingIntoACredentialShowsNoValue) {
  for (const std::string render :
       {"render.a = [{flags = [\"--api-key\", \"{value}\"]}]",
        "render.a = [{flags = [\"--hf-token={value}\"]}]", "render.a = [{env = {HF_TOKEN = \"{value}\"}}]"}) {
    std::string toml = testing::kSmallStudy;
    toml.insert(toml.find("[[scenarios]]"),
                "[[knobs]]\nname = \"key\"\ntype = \"string\"\n"
                "values = [\"default\", \"SECRETKV\"]\n" +
                    render + "\n\n");
    const Study study = parse_study(toml, "knob.toml", "/data");
    const Knob& k = study.knob("key");
    EXPECT_EQ(k.values[1].label, "<redacted-2>") << render;
    EXPECT_EQ(config_key(study, CandidateConfig{"a", {{"key", k.values[1].label}}}), "a{key=<redacted-2>}");
  }
  // A knob whose value only sits beside a credential flag, not in it, keeps its labels.
  std::string toml = testing::kSmallStudy;
  toml.insert(toml.find("[[scenarios]]"),
              "[[knobs]]\nname = \"seqs\"\ntype = \"int\"\nvalues = [64, 128]\n"
              "render.a = [{flags = [\"--max-num-seqs\", \"{value}\"]}]\n\n");
  EXPECT_EQ(parse_study(toml, "knob.toml", "/data").knob("seqs").values[1].label, "128");
}

// Issue 31: a knob named like a credential (api_key) shows no value: its labels are "<redacted-N>" in config
// keys and labels, the progress lines, the reports and the database, and the stored study parses back to
// them.
TEST(Secrets, CredentialNamedKnobShowsNoValue) {
  const fs::path dir = fs::temp_directory_path() / ("servelab-tune-secret-knob-" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::string toml = testing::kSmallStudy;
  const std::string scen = "[[scenarios]]";
  toml.insert(toml.find(scen),
              "[[knobs]]\nname = \"api_key\"\ntype = \"string\"\n"
              "values = [\"KNOBSECRET1\", \"KNOBSECRET2\"]\nbaseline = \"KNOBSECRET1\"\n"
              "render.a = [{flags = [\"--api-key\", \"{value}\"]}]\n\n");
  const Study study = parse_study(toml, "knob.toml", "/data");
  const Knob& k = study.knob("api_key");
  ASSERT_EQ(k.values.size(), 2u);
  EXPECT_EQ(k.values[0].label, "<redacted-1>");
  EXPECT_EQ(k.values[1].label, "<redacted-2>");
  EXPECT_EQ(k.baseline, "<redacted-1>");
  EXPECT_EQ(k.values[1].fields.at("value"), "KNOBSECRET2");  // still rendered as written
  const CandidateConfig c{"a", {{"api_key", "<redacted-2>"}}};
  EXPECT_EQ(config_key(study, c), "a{api_key=<redacted-2>}");
  EXPECT_EQ(config_label(study, c), "api_key=<redacted-2>");
  const auto argv = render(study, c).argv;
  EXPECT_EQ(argv.back(), "KNOBSECRET2");
  EXPECT_EQ(redact_study_secrets(study, "x KNOBSECRET2 y"), "x <redacted-2> y");

  std::ostringstream progress;
  TuneOptions opt;
  opt.out_dir = dir;
  opt.progress = &progress;
  opt.runner = testing::fake_runner();
  run_study(study, opt);
  for (const char* file : {"report.md", "report.html", "trials.csv", "trials.json", "summary.json",
                           "results.sqlite", "results.sqlite-wal"}) {
    if (!fs::exists(dir / file)) continue;
    const std::string text = common::read_file(dir / file);
    EXPECT_EQ(text.find("KNOBSECRET"), std::string::npos) << file;
  }
  EXPECT_EQ(progress.str().find("KNOBSECRET"), std::string::npos) << progress.str();
  EXPECT_NE(progress.str().find("api_key=<redacted-2>"), std::string::npos) << progress.str();
  const auto stored = Store(dir / "results.sqlite").study_toml();
  ASSERT_TRUE(stored.has_value());
  const Study back = parse_study(*stored, "stored", "/data");
  EXPECT_EQ(back.knob("api_key").values[1].label, "<redacted-2>");
  EXPECT_EQ(back.knob("api_key").baseline, "<redacted-1>");
  // --resume with the same study file: the stored (redacted) text is compared with this file's redacted
  // text, not its raw text (which never matched: "--resume: the study file differs", new-user trial).
  int launches = 0;
  TuneOptions again;
  again.out_dir = dir;
  again.resume = true;
  again.runner = testing::fake_runner(&launches);
  EXPECT_NO_THROW(run_study(study, again));
  EXPECT_EQ(launches, 0);
  // A real change is still refused.
  std::string changed = toml;
  changed.replace(changed.find("KNOBSECRET2"), 11, "KNOBSECRET3");
  changed += "\n# changed\n";
  EXPECT_THROW(run_study(parse_study(changed, "knob.toml", "/data"), again), TuneSetupError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace servelab::tune
