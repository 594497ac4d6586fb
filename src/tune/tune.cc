#include "servelab/tune/tune.h"

#include <fmt/format.h>

#include <unistd.h>
#include <map>
#include <optional>

#include <openssl/evp.h>

#include <chrono>
#include <ctime>

#include "servelab/common/paths.h"
#include "servelab/common/redact.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/targets/slurm.h"
#include "servelab_git_version.h"
#include "tune/report/study_report.h"
#include "tune/search/search_space.h"
#include "tune/study_dir.h"
#include "tune/targets/local_runner.h"
#include "tune/targets/twin_runner.h"

namespace servelab::tune {

std::string servelab_version() {
  return std::string("servelab 0.1.0 (") + SERVELAB_GIT_COMMIT + ")";
}

std::string study_hash(const Study& study) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(study.source_text.data(), study.source_text.size(), md, &n, EVP_sha256(), nullptr);
  std::string hex;
  for (unsigned int i = 0; i < n; ++i) hex += fmt::format("{:02x}", md[i]);
  return hex;
}

void set_target(Study& study, Target target) {
  study.target = target;
  if (study.search.strategy_set) return;
  study.search.strategy = default_strategy(target);
  // Twin-guided ranks the whole grid on the twin: above max_trials, greedy it is.
  if (study.search.strategy == Strategy::kTwinGuided &&
      SearchSpace(study).grid_size() > static_cast<size_t>(study.search.max_trials))
    study.search.strategy = Strategy::kGreedy;
}

namespace {

// The data directory as a report may state it: its path when it exists, else that it was missing (an
// installed binary without data, a checkout without shared/ beside it).
std::string recorded_data_dir() {
  const auto dir = common::data_dir();
  std::error_code ec;
  if (std::filesystem::is_directory(dir, ec)) return std::filesystem::weakly_canonical(dir, ec).string();
  return "none (" + dir.string() + " does not exist; set SERVELAB_DATA_DIR)";
}

/// The progress line's planned total: the trials the twin plays the study through (its SLO searches and load
/// sweeps included, which planned_trials leaves out), else 0 when the twin cannot play it (then run_search's
/// planned_trials stands).
int planned_for_progress(const Study& study) {
  try {
    return predicted_trials(study);
  } catch (const std::exception&) {  // the twin cannot resolve the model, or is not in this build
    return 0;
  }
}

std::map<std::string, std::string> environment(const Study& study, Target target) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  std::time_t now = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  std::map<std::string, std::string> env = {
      {"host", host},
      {"servelab", servelab_version()},
      {"study_file", study.source_path.string()},
      {"study_sha256", study_hash(study)},
      {"target", target_name(target)},
      {"data", runner_data_note(study, target)},
      {"data_dir", recorded_data_dir()},
      {"wall_started", when},
  };
  for (const auto& e : study.engines) env["engine." + e.name] = e.version;
  env["prompts_scale"] = fmt::format("{:g}", study.prompts_scale);
  if (target == Target::kSlurm) {
    const SlurmSpec& sl = study.slurm;
    env["slurm"] =
        fmt::format("partition {}, --gres={}:{} on {} node(s) per trial, --time {}, up to {} jobs at once",
                    sl.partition.empty() ? "(default)" : sl.partition, sl.gres_name,
                    std::min(sl.gpus(study.hardware.gpu_count), sl.gpus_per_node),
                    sl.nodes(study.hardware.gpu_count), slurm_time(sl.time_limit_min), sl.max_parallel);
  }
  return env;
}

/// The target a results database was run on (Store::study_target: what --target chose, which the stored
/// TOML does not say), or nullopt for a database that names none or one not known here.
std::optional<Target> stored_target(const Store& store) {
  const auto name = store.study_target();
  if (!name) return std::nullopt;
  for (Target t : {Target::kTwin, Target::kLocal, Target::kSlurm})
    if (*name == target_name(t)) return t;
  return std::nullopt;
}

/// Replays `study`'s search over the trials `store` holds (nothing runs: a trial it lacks is "not run") and
/// writes the report files into `dir`. Returns the replayed outcome ("complete" only when nothing is
/// missing).
SearchOutcome write_report_from_store(const Study& study, const Store& store,
                                      const std::filesystem::path& dir,
                                      const std::map<std::string, std::string>& environment) {
  auto trials = store.trials();
  Evaluator target(study, nullptr, runner_kind(study.target), nullptr, trials, nullptr, nullptr, {});
  // The twin's goodput bands come from searches that are not trials: the run stored them (slo_search).
  const std::vector<GoodputBandRecord> bands = store.goodput_bands();
  target.set_goodput_bands(bands);
  std::optional<Evaluator> twin;
  Evaluator* twin_ptr = nullptr;
  if (study.search.strategy == Strategy::kTwinGuided) {
    if (study.target == Target::kTwin)
      twin_ptr = &target;
    else
      twin_ptr = &twin.emplace(study, nullptr, RunnerKind::kTwin, nullptr, trials, nullptr, nullptr,
                               std::filesystem::path{});
  }
  if (study.target != Target::kTwin &&
      !study.slo.targets.empty()) {  // the SLO searches started from the twin
    if (!twin)
      twin.emplace(study, nullptr, RunnerKind::kTwin, nullptr, trials, nullptr, nullptr,
                   std::filesystem::path{});
    target.set_load_guide(&*twin);
  }
  if (twin) twin->set_goodput_bands(bands);
  SearchOutcome out = run_search(study, target, twin_ptr);
  analyze_load(study, target, out);
  out.complete = out.complete && target.missing() == 0;
  ReportInput in{&study, &out, trials, environment};
  write_report_files(in, dir);
  return out;
}

/// A study stopped by Ctrl-C or a StudyAbort still leaves a report, rebuilt from what `store` holds with the
/// study as this run ran it (its --target), while the directory is still locked: report.md/html, summary.json
/// ("complete": false, verdict "incomplete"), trials.csv/json, so no file of an earlier run is left beside
/// newer results (new-user trial: after a second Ctrl-C, summary.json still described the first run's 0
/// trials). If that fails, the earlier run's report files are removed rather than left stale; either way
/// the progress stream says which.
void write_partial_report(const Study& study, const Store& store, const TuneOptions& opt) {
  try {
    const SearchOutcome out = write_report_from_store(study, store, opt.out_dir, store.environment());
    if (opt.progress)
      *opt.progress << fmt::format("partial report ({} trials{}): {}\n", store.trial_count(),
                                   out.complete ? "" : ", incomplete", (opt.out_dir / "report.md").string());
  } catch (const std::exception& e) {
    for (const char* name : {"report.md", "report.html", "summary.json", "trials.csv", "trials.json"}) {
      std::error_code ec;
      std::filesystem::remove(opt.out_dir / name, ec);
    }
    if (opt.progress)
      *opt.progress << fmt::format(
          "the partial report was not written ({}); results.sqlite holds the trials "
          "(`servelab report {}` rebuilds it)\n",
          common::redact_text(e.what()), opt.out_dir.string());
  }
}

}  // namespace

TuneResult run_study(const Study& study, const TuneOptions& opt) {
  TuneResult res;
  res.dir = opt.out_dir;
  std::filesystem::path moved_to;
  const detail::DirLock lock = detail::prepare_study_dir(
      opt.out_dir, redact_study_secrets(study, study.source_text), {opt.resume, opt.fresh}, &moved_to);
  if (opt.progress && !moved_to.empty())
    *opt.progress << fmt::format("--fresh: moved the previous {} to {}\n", opt.out_dir.string(),
                                 moved_to.string());
  Store store(opt.out_dir / "results.sqlite");
  if (!opt.resume) store.clear_trials();  // only an empty study row can be left here (see prepare_study_dir)
  if (opt.resume && store.trial_count() > 0) {
    const auto before = store.environment();
    const std::string stored = before.count("prompts_scale") ? before.at("prompts_scale") : "1";
    if (stored != fmt::format("{:g}", study.prompts_scale))
      throw TuneSetupError(
          fmt::format("--resume: {} was measured with --prompts-scale {}, not {:g}; use the same "
                      "value, or --fresh to start over",
                      (opt.out_dir / "results.sqlite").string(), stored, study.prompts_scale));
  }
  auto env = environment(study, study.target);
  for (const auto& [k, v] : opt.environment) env[k] = v;
  // The stored TOML shows a credential-named knob's values as their labels (it parses back to them).
  store.write_study(study.name, redact_study_secrets(study, study.source_text), target_name(study.target),
                    env);
  std::vector<TrialRecord> finished = opt.resume ? store.trials() : std::vector<TrialRecord>{};
  if (opt.progress && opt.resume)
    *opt.progress << fmt::format("resuming: {} finished trial(s) in {}\n", finished.size(),
                                 (opt.out_dir / "results.sqlite").string());
  BatchTrialRunner batch = opt.batch_runner;
  if (!batch && !opt.runner && study.target == Target::kSlurm) {
    SlurmRunnerOptions so;
    so.out_dir = opt.out_dir;
    so.store_path = opt.out_dir / "results.sqlite";
    so.stop = opt.stop;
    so.progress = opt.progress;
    batch = make_slurm_runner(study, so);
  }
  TrialRunner runner = opt.runner;
  if (!runner && batch) {
    runner = [batch](const TrialRequest& req) {  // one trial: a batch of one
      TrialOutcome out;
      batch({req}, [&out](std::size_t, TrialOutcome o) { out = std::move(o); });
      return out;
    };
  }
  // Engines launched here listen on the study's port: a second tune on it (another directory) would see
  // our engine's bind succeed and its own fail, and record that as its configuration's refusal.
  std::optional<detail::DirLock> port_lock;
  if (!runner && study.target == Target::kLocal) port_lock.emplace(detail::DirLock::port(study.port));
  if (!runner) runner = default_runner(study, study.target, opt.stop);
  // Engine logs exist only where engines run: the twin writes none, so its trials name none (a report
  // linking logs/<trial>.log of a twin study linked files that do not exist).
  const std::filesystem::path engine_logs = opt.out_dir / "logs";
  Evaluator target(study, runner, runner_kind(study.target), &store, finished, opt.progress, opt.stop,
                   study.target == Target::kTwin ? std::filesystem::path() : engine_logs);
  target.set_batch_runner(batch);
  // A resumed run's goodput bands: its SLO searches reuse the one stored at the same goodput rather than run
  // the band's two searches again (a --resume of a finished SLO study took 49 s for nothing new).
  target.set_goodput_bands(store.goodput_bands());
  // On the twin target the play is the study itself: it doubled the run, printed nothing meanwhile and could
  // not be interrupted (new-user trial: 76 s of silence, then a SIGTERM kept 0 trials; a --resume of a
  // finished study re-ran the twin 34 s for a count). There the search's own plan stands.
  // Its SLO searches and load sweeps (most of such a study) are not in the search's plan: the count stands
  // alone there.
  if (opt.progress && !opt.runner && !opt.batch_runner)
    target.set_planned(study.target != Target::kTwin ? planned_for_progress(study)
                       : has_load_analysis(study)    ? -1
                                                     : 0);
  std::optional<Evaluator> twin;
  Evaluator* twin_ptr = nullptr;
  if (study.search.strategy == Strategy::kTwinGuided) {
    if (study.target == Target::kTwin) {
      twin_ptr = &target;
    } else {
      TrialRunner tr = opt.twin_runner ? opt.twin_runner : default_runner(study, Target::kTwin, opt.stop);
      twin.emplace(study, tr, RunnerKind::kTwin, &store, finished, opt.progress, opt.stop,
                   std::filesystem::path());
      twin_ptr = &*twin;
    }
  }
  // --target local with [slo]: the twin predicts each SLO search's bracket first (tune/load.h).
  if (study.target != Target::kTwin && !study.slo.targets.empty() && !twin_ptr &&
      (opt.twin_runner || !opt.runner)) {
    TrialRunner tr = opt.twin_runner ? opt.twin_runner : default_runner(study, Target::kTwin, opt.stop);
    twin.emplace(study, tr, RunnerKind::kTwin, &store, finished, opt.progress, opt.stop,
                 std::filesystem::path());
  }
  if (study.target != Target::kTwin && twin && !study.slo.targets.empty()) target.set_load_guide(&*twin);
  try {
    res.outcome = run_search(study, target, twin_ptr);
    analyze_load(study, target, res.outcome);
  } catch (const Interrupted&) {
    if (opt.write_report) write_partial_report(study, store, opt);
    throw;
  } catch (const StudyAbort&) {
    if (opt.write_report) write_partial_report(study, store, opt);
    throw;
  }
  store.mark_finished();
  const std::vector<TrialRecord> trials = store.trials();
  res.tally = tally_trials(study, trials);
  if (opt.write_report) {
    ReportInput in{&study, &res.outcome, trials, store.environment()};
    write_report_files(in, opt.out_dir);
  }
  return res;
}

void check_out_dir(const Study& study, const TuneOptions& opt) {
  detail::check_study_dir(opt.out_dir, redact_study_secrets(study, study.source_text),
                          {opt.resume, opt.fresh});
}

SearchOutcome report_study_dir(const std::filesystem::path& dir, std::ostream* log) {
  const auto db = dir / "results.sqlite";
  if (!std::filesystem::exists(db)) throw std::runtime_error("no results database at " + db.string());
  Store store(db);
  auto toml = store.study_toml();
  if (!toml) throw std::runtime_error(db.string() + " holds no study");
  Study study = parse_study(*toml, db.string() + " (stored study)", common::data_dir());
  // The store keeps the study file as written; a rehearsal's --prompts-scale is in its environment (as
  // --resume checks it): without it the replay's report showed full-size commands and no "Reduced
  // workload" banner for scaled-down runs (new-user trial).
  const std::map<std::string, std::string> environment = store.environment();
  if (auto it = environment.find("prompts_scale"); it != environment.end()) {
    double scale = 1;
    try {
      scale = std::stod(it->second);
    } catch (const std::exception&) {
      throw std::runtime_error(
          fmt::format("{}: its recorded prompts_scale \"{}\" is not a number", db.string(), it->second));
    }
    study = scale_prompts(std::move(study), scale);
  }
  if (const auto target = stored_target(store)) set_target(study, *target);  // as --target ran it
  const SearchOutcome out = write_report_from_store(study, store, dir, environment);
  if (log)
    *log << fmt::format(
        "wrote {}/report.md, report.html, trials.csv, trials.json, summary.json ({} trials{})\n",
        dir.string(), store.trial_count(), out.complete ? "" : "; the study is incomplete");
  return out;
}

}  // namespace servelab::tune
