// `servelab tune STUDY.toml`: runs a study (twin or real engines), records it in SQLite, writes the report.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <atomic>
#include <iostream>
#include <map>

#include "cli/command_registry.h"
#include "cli/op_data.h"
#include "servelab/common/paths.h"
#include "servelab/common/redact.h"
#include "servelab/common/stop_signals.h"
#include "servelab/hardware/hardware.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/search/evaluations.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/targets/k8s.h"
#include "servelab/tune/targets/preflight.h"
#include "servelab/tune/targets/slurm.h"
#include "servelab/tune/targets/targets.h"
#include "servelab/tune/tune.h"

namespace {

std::atomic<bool> g_stop{false};

struct TuneArgs {
  std::string study;
  std::string op_data =
      servelab::cli::kOpDataDefault;  ///< --op-data (cli/op_data.h): the twin's operator times
  std::string target;
  std::string out;
  bool resume = false;
  bool fresh = false;
  bool quiet = false;
  double prompts_scale = 1.0;
  bool dry_run = false;
  bool skip_preflight = false;
  double startup_estimate_min = 15;
  int port = 0;
  std::string render;  ///< --target k8s: the directory the manifests go to
};

/// Pre-flight for the local target: prints what it found; false when a check failed.
bool preflight(const servelab::tune::Study& study, servelab::tune::TuneOptions& opt, bool quiet) {
  using namespace servelab::tune;
  const PreflightReport r = run_preflight(study, PreflightOptions::from_process());
  if (!quiet || !r.ok())
    std::cerr << "servelab tune: pre-flight (" << (r.ok() ? "ok" : "FAILED") << ")\n" << r.text();
  for (const auto& [engine, version] : r.engine_versions)
    opt.environment["engine." + engine + ".reported"] = version + (r.standins ? " (servelab stand-in)" : "");
  for (const auto& [k, v] : r.gpu) opt.environment[k] = v;
  opt.environment["preflight"] = r.ok() ? "ok" : "failed";
  return r.ok();
}

/// Pre-flight for the Slurm target: the partition, the GRES and the time limit against the plan.
bool slurm_preflight(const servelab::tune::Study& study, servelab::tune::TuneOptions& opt, bool quiet) {
  using namespace servelab::tune;
  const PreflightReport r = run_slurm_preflight(study, SlurmPreflightOptions{});
  if (!quiet || !r.ok())
    std::cerr << "servelab tune: Slurm pre-flight (" << (r.ok() ? "ok" : "FAILED") << ")\n" << r.text();
  opt.environment["preflight"] = r.ok() ? "ok" : "failed";
  return r.ok();
}

/// The plan's lines: trials, engine launches, benchmark time and GPU-hours of `t` at `startup_s` per launch.
std::string plan_lines(const servelab::tune::Study& study, const servelab::tune::TrialTally& t,
                       double startup_s) {
  std::string s =
      fmt::format("  trials: {} ({} pruned before launch{})\n", t.trials, t.pruned,
                  t.reused ? fmt::format(", {} on an engine kept up between SLO probes", t.reused) : "");
  if (t.pruned > 0)
    s += fmt::format("  pruned: {}{}\n", t.first_pruned_reason.substr(0, t.first_pruned_reason.find('\n')),
                     t.pruned > 1 ? fmt::format(" (the first of {})", t.pruned) : "");
  if (!t.on_gpus)
    return s +
           "  launches: none (target twin: every trial is a prediction; --target local --dry-run plans "
           "the GPU run)\n";
  if (t.errors > 0)  // a figure without them would read as a prediction
    s += fmt::format(
        "  not predicted: {} of {} trials (first: {}); their benchmark time is missing from the figures "
        "below\n",
        t.errors, t.trials, t.first_error_reason.substr(0, t.first_error_reason.find('\n')));
  return s + fmt::format(
                 "  launches: {} engine starts (the twin predicts {} refused at start-up, out of memory or "
                 "crashed)\n"
                 "  benchmark time: {:.2f} h predicted; start-up assumed {:g} min per launch "
                 "(--startup-estimate-min)\n"
                 "  GPU-hours: {:.1f} ({}){}\n",
                 t.launches, t.refused, t.benchmark_s / 3600, startup_s / 60, t.planned_gpu_hours(startup_s),
                 t.min_gpus == t.max_gpus
                     ? fmt::format("{} x {:.2f} h", t.gpus_text(),
                                   t.max_gpus > 0 ? t.planned_gpu_hours(startup_s) / t.max_gpus : 0.0)
                     : fmt::format("each launch's {} x its time", t.gpus_text()),
                 study.prompts_scale == 1
                     ? ""
                     : fmt::format(" (rehearsal: --num-prompts x {:g})", study.prompts_scale));
}

void dry_run(const servelab::tune::Study& study, const TuneArgs& a, servelab::tune::TuneOptions& opt) {
  using namespace servelab::tune;
  bool ok = true;
  if (study.target == Target::kLocal) ok = preflight(study, opt, false);
  if (study.target == Target::kSlurm) ok = slurm_preflight(study, opt, false);
  // On the twin the plan is the run itself played (every trial a prediction): say so before the silence
  // (new-user trial: 4.5 min with no output, then 4 lines).
  if (study.target == Target::kTwin)
    std::cerr << "servelab tune: --dry-run on target twin plays the whole search on the twin, as the run "
                 "itself does (nothing is launched either way; it takes as long): the run without --dry-run "
                 "writes the report\n";
  const StudyPlan plan = plan_study(study);
  const double startup_s = a.startup_estimate_min * 60;
  std::cout << fmt::format("plan (the twin's play of the {} search on target {}; nothing launched):\n",
                           strategy_name(study.search.strategy), target_name(study.target))
            << plan_lines(study, plan.tally, startup_s);
  if (plan.grid)  // twin-guided: what the grid it replaces would cost
    std::cout << fmt::format(
        "  a grid search instead: {} engine starts, {:.1f} GPU-hours; twin-guided saves {} "
        "launches, {:.1f} GPU-hours\n",
        plan.grid->launches, plan.grid->planned_gpu_hours(startup_s),
        plan.grid->launches - plan.tally.launches,
        plan.grid->planned_gpu_hours(startup_s) - plan.tally.planned_gpu_hours(startup_s));
  else if (!plan.grid_note.empty())
    std::cout << "  a grid search instead: not played (" << plan.grid_note << ")\n";
  if (study.target != Target::kTwin)
    std::cout << (ok ? "pre-flight: ok\n" : "pre-flight: FAILED (see above); fix it before booking GPUs\n");
  if (plan.tally.trials > 0 && plan.tally.pruned == plan.tally.trials) {  // the real run would end in error
    std::cout << "nothing to run: every trial is pruned before launch (see `pruned` above); fix the study\n";
    ok = false;
  }
  if (!ok) throw servelab::cli::ExitRequest{2};
}

/// --target k8s --render DIR: one manifest per trial of the search as the twin plays it (tune/k8s.h).
void render_k8s(const servelab::tune::Study& study, const TuneArgs& a) {
  using namespace servelab::tune;
  if (a.render.empty()) {
    std::fprintf(stderr,
                 "servelab tune: --target k8s renders manifests only (running them on a live cluster is a "
                 "later step): pass --render DIR\n");
    throw servelab::cli::ExitRequest{2};
  }
  K8sRenderResult r;
  try {
    r = render_k8s_study(study, a.render, default_runner(study, Target::kTwin, nullptr));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "servelab tune: --render %s: %s\n", a.render.c_str(), e.what());
    throw servelab::cli::ExitRequest{2};
  }
  for (const auto& m : r.manifests)
    std::cout << fmt::format("{}/{}.yaml  {} ({} pod(s) x {} GPUs)\n", a.render, m.name, m.kind, m.nodes,
                             m.gpus_per_pod);
  for (const auto& [key, why] : r.skipped) std::cerr << "servelab tune: not rendered: " << why << "\n";
  for (const auto& w : r.warnings) std::cerr << "servelab tune: warning: " << w << "\n";
  std::cout << fmt::format("{} manifest(s) in {} (index: trials.tsv); apply with kubectl apply -f {}\n",
                           r.manifests.size(), a.render, a.render);
  if (!r.secret_keys.empty()) {
    // The manifests reference credentials, never hold them: the user puts the values into the Secret.
    std::string from;
    for (const auto& k : r.secret_keys) from += fmt::format(" --from-literal={}=...", k);
    std::cout << fmt::format(
        "credentials are read from the Secret {} (namespace {}), keys: {}; create it with\n"
        "  kubectl create secret generic {} -n {}{}\n",
        study.k8s.credentials_secret, study.k8s.ns, fmt::join(r.secret_keys, ", "),
        study.k8s.credentials_secret, study.k8s.ns, from);
  }
  if (r.manifests.empty()) throw servelab::cli::ExitRequest{1};
}

/// The study file `a.study` with --prompts-scale and --port applied; a bad file exits 2 with its error.
servelab::tune::Study load_cli_study(const TuneArgs& a) {
  using namespace servelab::tune;
  Study study;
  try {
    study = load_study(a.study, servelab::common::data_dir());
  } catch (const StudyError& e) {
    std::fprintf(stderr, "servelab tune: %s\n", servelab::common::redact_text(e.what()).c_str());
    throw servelab::cli::ExitRequest{2};
  }
  study = scale_prompts(std::move(study), a.prompts_scale);
  if (a.port > 0) study.port = a.port;
  return study;
}

/// --target (twin, local, slurm) over the study's [study] target; exits 2 on a flag that does not fit it.
void apply_target_flag(servelab::tune::Study& study, const TuneArgs& a) {
  using namespace servelab::tune;
  if (!a.render.empty()) {
    std::fprintf(stderr, "servelab tune: --render DIR writes Kubernetes manifests: it needs --target k8s\n");
    throw servelab::cli::ExitRequest{2};
  }
  set_target(study, a.target == "twin"    ? Target::kTwin
                    : a.target == "local" ? Target::kLocal
                    : a.target == "slurm" ? Target::kSlurm
                                          : study.target);
  if (study.target == Target::kSlurm && !study.slurm.configured) {
    std::fprintf(stderr,
                 "servelab tune: --target slurm: %s has no [slurm] section (partition, time_limit_min, "
                 "...; docs/cluster.md)\n",
                 a.study.c_str());
    throw servelab::cli::ExitRequest{2};
  }
}

/// The twin predicts an engine at its study's `version`: one it does not model is predicted with another
/// release's flags and defaults (a warning, stderr), one that is no release number ("nightly") cannot be
/// predicted at all (exit 2, naming the study and the engine). Only where the twin predicts (target twin,
/// twin-guided search, an SLO bracket before a measured target).
void warn_unmodelled_versions(const servelab::tune::Study& study, const TuneArgs& a) {
  try {
    for (const auto& [engine, warning] : servelab::tune::unmodelled_version_warnings(study))
      std::fprintf(stderr, "servelab tune: engine %s: %s\n", engine.c_str(), warning.c_str());
  } catch (const std::invalid_argument& ex) {
    std::fprintf(stderr, "servelab tune: %s: %s; the engine twin needs a release number (e.g. 0.13.0)\n",
                 a.study.c_str(), servelab::common::redact_text(ex.what()).c_str());
    throw servelab::cli::ExitRequest{2};
  }
}

/// The commands the engines' CLIs refuse, before anything runs (new-user trial: a typo in one engine's
/// base_flags pruned every configuration of it, and the study ran on the others to a winner with no word of
/// it outside the failures table). A refused baseline is a setup error (exit 2): no configuration of that
/// engine can launch. A refused knob value is a warning per knob: its configurations are pruned.
void check_engine_flags(const servelab::tune::Study& study, const TuneArgs& a) {
  using servelab::common::redact_text;
  std::vector<servelab::tune::FlagRefusal> refusals;
  try {
    refusals = servelab::tune::flag_refusals(study);
  } catch (const std::exception& e) {  // a render the study parser let through
    std::fprintf(stderr, "servelab tune: %s: %s\n", a.study.c_str(), redact_text(e.what()).c_str());
    throw servelab::cli::ExitRequest{2};
  }
  bool fatal = false;
  std::map<std::pair<std::string, std::string>, std::vector<const servelab::tune::FlagRefusal*>> by_knob;
  for (const auto& r : refusals) {
    if (!r.knob.empty()) {
      by_knob[{r.engine, r.knob}].push_back(&r);
      continue;
    }
    fatal = true;
    std::fprintf(stderr,
                 "servelab tune: %s: engine %s: its command and base_flags are refused by the engine's own "
                 "CLI: %s\n"
                 "  no configuration of %s could launch: fix its `command` or `base_flags` (or set "
                 "check_flags = false in its [[engines]] table to launch it anyway)\n",
                 a.study.c_str(), r.engine.c_str(), redact_text(r.message).c_str(), r.engine.c_str());
  }
  // A named release that cannot load the model (new-user trial: TensorRT-LLM 1.2.0rc5 and Qwen3.5 ran ~60
  // predicted refusals, each retried "to save memory", the same 400-character reason 30 times in the report;
  // on --target local each is an engine launch).
  // The bound is the twin's table: it stops a twin study (every trial would be that refusal) and only warns
  // before real engines are launched (the engine itself decides).
  const bool twin = study.target == servelab::tune::Target::kTwin;
  for (const auto& r : servelab::tune::model_refusals(study)) {
    fatal = fatal || twin;
    const std::string what = twin ? "no configuration of " + r.engine + " could start"
                                  : "every launch of it is predicted to stop at start-up";
    std::fprintf(stderr,
                 "servelab tune: %s%s: engine %s cannot load the model: %s\n"
                 "  %s: remove the engine, or name a release that can in its `version` (or set check_flags = "
                 "false in its [[engines]] table to %s)\n",
                 twin ? "" : "warning: ", a.study.c_str(), r.engine.c_str(), redact_text(r.message).c_str(),
                 what.c_str(), twin ? "predict it anyway" : "skip this check");
  }
  if (fatal) throw servelab::cli::ExitRequest{2};
  for (const auto& [key, list] : by_knob) {
    const auto& first = *list.front();
    // Where the render is written, as every study error names it (new-user trial: a typo in a knob's
    // render was a warning without its line).
    std::string where;
    for (const auto& k : study.knobs)
      if (const auto it = k.render_origin.find(key.first);
          k.name == key.second && it != k.render_origin.end())
        where = it->second + ": ";
    if (first.baseline) {
      std::fprintf(
          stderr,
          "servelab tune: warning: %sknob %s: its baseline value %s is refused by %s's CLI (%s); every "
          "configuration of %s that keeps it is pruned before launch: fix the knob's render.%s or "
          "its baseline\n",
          where.c_str(), key.second.c_str(), redact_text(first.value).c_str(), key.first.c_str(),
          redact_text(first.message).c_str(), key.first.c_str(), key.first.c_str());
      continue;
    }
    std::fprintf(stderr,
                 "servelab tune: warning: %sknob %s: %zu value%s refused by %s's CLI (%s=%s: %s); %s pruned "
                 "before launch: fix the knob's render.%s (or add a `reject` part to say why)\n",
                 where.c_str(), key.second.c_str(), list.size(), list.size() == 1 ? "" : "s",
                 key.first.c_str(), key.second.c_str(), redact_text(first.value).c_str(),
                 redact_text(first.message).c_str(),
                 list.size() == 1 ? "its configurations are" : "their configurations are", key.first.c_str());
  }
}

/// What must hold before anything launches: the engine versions the twin predicts (warn_unmodelled_versions),
/// an output directory without others' results, then the local or
/// Slurm pre-flight checks (unless --skip-preflight; what they find is kept in `opt`). Exits 2 on a failure.
void check_before_launch(const servelab::tune::Study& study, servelab::tune::TuneOptions& opt,
                         const TuneArgs& a) {
  using namespace servelab::tune;
  // The twin predicts only the GPUs of its table (a study may name another for local and Slurm targets,
  // with hardware.gpu_memory_gb): say so before the output directory is made.
  if (study.target == Target::kTwin) {
    try {
      (void)servelab::hardware::gpu_by_name(study.hardware.gpu);
    } catch (const std::exception& e) {
      std::fprintf(stderr,
                   "servelab tune: %s: target twin: %s; the twin predicts only the GPUs of its table "
                   "(src/hardware/gpus.json): name one of them in [hardware] gpu, or run the study on "
                   "--target local or slurm\n",
                   a.study.c_str(), servelab::common::redact_text(e.what()).c_str());
      throw servelab::cli::ExitRequest{2};
    }
  }
  // A version the twin does not model (a typo, or a newer release) changes the defaults every twin trial is
  // judged on: say so before the study runs, as `sim run` does (new-user trial: `version = "9.9.9"` ran to
  // the end with only a count of warnings in the report); one that is no release number is a setup error.
  warn_unmodelled_versions(study, a);
  check_engine_flags(study, a);
  try {
    check_out_dir(study, opt);  // refuse a directory holding results before spending time on pre-flight
  } catch (const TuneSetupError& e) {
    std::fprintf(stderr, "servelab tune: %s\n", e.what());
    throw servelab::cli::ExitRequest{2};
  }
  if (study.target == Target::kSlurm && !a.skip_preflight && !slurm_preflight(study, opt, a.quiet)) {
    std::fprintf(stderr,
                 "servelab tune: Slurm pre-flight failed: nothing was submitted (fix the checks above, or "
                 "--skip-preflight to submit anyway)\n");
    throw servelab::cli::ExitRequest{2};
  }
  if (study.target == Target::kLocal && !a.skip_preflight && !preflight(study, opt, a.quiet)) {
    std::fprintf(stderr,
                 "servelab tune: pre-flight failed: nothing was launched (fix the checks above, or "
                 "--skip-preflight to launch anyway)\n");
    throw servelab::cli::ExitRequest{2};
  }
}

/// Runs the study (Ctrl-C stops it cleanly) and prints the best config, the recommended command and where
/// the report is; a failed study exits 1 (2 for a setup error, 130 on Ctrl-C, 143 on SIGTERM).
void run_and_print(const servelab::tune::Study& study, const servelab::tune::TuneOptions& opt) {
  using namespace servelab::tune;
  // First Ctrl-C/SIGTERM: the trial in flight is stopped (engine stopped with its grace period), finished
  // trials are kept. Second: leave at once (130); the engine's supervisor sees tune gone and stops the
  // engine (engine_process.h).
  servelab::common::StopOnSignals signals([] { g_stop = true; });
  std::cerr << fmt::format(
      "servelab tune: study {} on target {} ({} search, {} run(s) per point{}) -> {}\n", study.name,
      target_name(study.target), strategy_name(study.search.strategy), study.repeats,
      study.prompts_scale == 1 ? "" : fmt::format(", rehearsal: --num-prompts x {:g}", study.prompts_scale),
      opt.out_dir.string());
  try {
    TuneResult r = run_study(study, opt);
    const auto& o = r.outcome;
    if (r.tally.invalid > 0)  // the report's banner says the same
      std::cerr << "servelab tune: " << servelab::common::redact_text(r.tally.invalid_notice()) << "\n";
    if (!o.best.feasible && o.best.status == servelab::tune::TrialStatus::kOk) {  // ran, broke a bound
      std::fprintf(stderr,
                   "servelab tune: no configuration meets every [[constraints]] bound (the best on the "
                   "objective, %s %s: %s); report: %s/report.md\n",
                   o.best.config.engine.c_str(), servelab::common::redact_text(o.best.label).c_str(),
                   servelab::common::redact_text(o.best.reason).c_str(), r.dir.c_str());
      throw servelab::cli::ExitRequest{1};
    }
    // The best on the objective's scenarios broke a bound on another, and so did every other configuration
    // tried (summary.json: verdict "none"; review: the command printed best/recommended and exited 0).
    if (o.complete && servelab::tune::none_passed_over_holds(o)) {
      std::fprintf(stderr,
                   "servelab tune: no configuration meets every [[constraints]] bound on every scenario (the "
                   "best on the objective, %s %s: %s); report: %s/report.md\n",
                   o.best.config.engine.c_str(), servelab::common::redact_text(o.best.label).c_str(),
                   servelab::common::redact_text(o.passed_over.front().reason).c_str(), r.dir.c_str());
      throw servelab::cli::ExitRequest{1};
    }
    if (!o.best.feasible) {
      std::fprintf(stderr,
                   "servelab tune: no configuration succeeded (first failure: %s); report: %s/report.md\n",
                   servelab::common::redact_text(o.best.reason).c_str(), r.dir.c_str());
      throw servelab::cli::ExitRequest{1};
    }
    const std::string label = servelab::tune::primary_objective_label(study);
    std::cout << fmt::format("best: {} {} = {:.2f} {}{}\n", o.best.config.engine, o.best.label,
                             o.best.objective.mean, label, o.best.predicted ? " (predicted)" : "");
    // The progress lines' "best" is the highest value seen; the search's best is the one no other beat by
    // more than the noise (new-user trial: "best 3045.60 (kv fp8)" on every line, then "best: baseline =
    // 3040.67"). Say why they differ.
    auto higher = servelab::tune::distinct_evaluations(
        o, servelab::tune::EvaluationOrder::kRankingFirst, [&](const servelab::tune::Evaluation& e) {
          return e.feasible && e.key != o.best.key && e.objective.mean > o.best.objective.mean;
        });
    servelab::tune::sort_best_first(higher);
    const double gain_pct =
        higher.empty() ? 0.0 : 100.0 * (higher.front()->objective.mean / o.best.objective.mean - 1.0);
    if (!higher.empty() && gain_pct <= study.search.min_gain_pct)  // a larger gap: the report's grid check
      std::cout << fmt::format(
          "  ({} {} = {:.2f} is higher by {:+.2f}%, not significantly (search.min_gain_pct = {:g}% on one "
          "run, a t-test with repeats): the search keeps the configuration it had)\n",
          higher.front()->config.engine, higher.front()->label, higher.front()->objective.mean, gain_pct,
          study.search.min_gain_pct);
    if (const auto& b = o.better_by_ablation) {  // a knob the search kept costs: say what does better
      std::vector<std::string> costly, by_rule;
      for (const auto& v : o.verdicts) {
        if (v.better_without)
          costly.push_back(v.knob);
        else if (!v.recommended)
          by_rule.push_back(v.knob);
      }
      // The rule may drop more knobs than the ablation's better config does: then the recommended command is
      // neither that config nor its value, and the line says which knobs the rule dropped besides.
      const std::string rule =
          by_rule.empty()
              ? std::string()
              : fmt::format(
                    "; the recommendation rule also drops {}, so the recommended "
                    "command is {} = {:.2f}",
                    fmt::join(by_rule, ", "), o.recommended_eval.label, o.recommended_eval.objective.mean);
      std::cout << fmt::format(
          "ablation found better: {} {} = {:.2f} {}{} ({:+.2f}% over best, whose {} cost{}; the "
          "recommendation drops {}{})\n",
          b->config.engine, b->label, b->objective.mean, servelab::tune::primary_objective_label(study),
          b->predicted ? " (predicted)" : "", 100.0 * (b->objective.mean / o.best.objective.mean - 1.0),
          fmt::join(costly, ", "), costly.size() == 1 ? "s" : "", costly.size() == 1 ? "it" : "them", rule);
    }
    std::cout << "recommended: " << servelab::common::redact_text(o.recommended_command.shell()) << "\n";
    std::cout << fmt::format("report: {}/report.md, {}/report.html ({})\n", r.dir.string(), r.dir.string(),
                             r.tally.text());
  } catch (const StudyAbort& e) {
    std::fprintf(stderr,
                 "servelab tune: stopped: %s\n  (finished trials are kept in %s/results.sqlite; fix this and "
                 "rerun with --resume)\n",
                 e.what(), opt.out_dir.c_str());
    throw servelab::cli::ExitRequest{1};
  } catch (const TuneSetupError& e) {
    std::fprintf(stderr, "servelab tune: %s\n", e.what());
    throw servelab::cli::ExitRequest{2};
  } catch (const Interrupted& e) {
    std::fprintf(stderr, "servelab tune: %s (results so far in %s/results.sqlite)\n", e.what(),
                 opt.out_dir.c_str());
    throw servelab::cli::ExitRequest{signals.exit_status()};  // 130 Ctrl-C, 143 SIGTERM
  }
}

void run(const TuneArgs& a) {
  using namespace servelab::tune;
  Study study = load_cli_study(a);
  if (a.target == "k8s") {
    if (!a.render.empty()) {
      // The manifests start real engines: their CLIs' refusals and a release that predates the model, as
      // before a local launch (a model refusal warns; the twin plays the search only to order the trials).
      Study launched = study;
      launched.target = Target::kLocal;
      warn_unmodelled_versions(study, a);
      check_engine_flags(launched, a);
    }
    return render_k8s(study, a);
  }
  apply_target_flag(study, a);
  TuneOptions opt;
  opt.out_dir = a.out.empty() ? std::filesystem::path("out") / study.name : std::filesystem::path(a.out);
  opt.resume = a.resume;
  opt.fresh = a.fresh;
  opt.progress = a.quiet ? nullptr : &std::cerr;
  opt.stop = &g_stop;
  if (a.dry_run) {
    warn_unmodelled_versions(study, a);
    check_engine_flags(study, a);
    try {
      return dry_run(study, a, opt);
    } catch (const TuneSetupError& e) {  // as a real run says it, with its exit status (study.md: 2)
      std::fprintf(stderr, "servelab tune: %s\n", e.what());
      throw servelab::cli::ExitRequest{2};
    }
  }
  check_before_launch(study, opt, a);
  run_and_print(study, opt);
}

}  // namespace

SERVELAB_REGISTER_COMMAND("tune", 40, [](CLI::App& root) {
  auto args = std::make_shared<TuneArgs>();
  CLI::App* cmd = root.add_subcommand(
      "tune",
      "Run a study (STUDY.toml): search engine configs on the twin or real engines, record every "
      "trial in SQLite, write the report and a recommended launch command");
  cmd->add_option("study", args->study, "study file (TOML), e.g. studies/deepseek-v3.2-h200x8.toml")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--target", args->target, "override the study's target")
      ->check(CLI::IsMember({"twin", "local", "slurm", "k8s"}));
  cmd->add_option(
      "--render", args->render,
      "with --target k8s: write one Kubernetes Job (LeaderWorkerSet for a multi-node trial) per trial "
      "into this directory, plus trials.tsv; nothing is applied");
  cmd->add_option("--out", args->out, "output directory (default out/<study name>)");
  auto* resume =
      cmd->add_flag("--resume", args->resume,
                    "continue the study in the output directory: finished trials are kept and skipped");
  cmd->add_flag("--fresh", args->fresh,
                "move an output directory that holds results aside (DIR.<date>) and start over")
      ->excludes(resume);
  cmd->add_flag("-q,--quiet", args->quiet, "no progress lines");
  cmd->add_option(
         "--prompts-scale", args->prompts_scale,
         "rehearsal: multiply every scenario's --num-prompts by this (0 < F <= 1); recorded and labelled")
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--port", args->port, "serve engines on this port instead of the study's [study] port")
      ->check(CLI::Range(1, 65535));
  cmd->add_flag(
      "--dry-run", args->dry_run,
      "print the plan (trials, launches, the twin's estimate of GPU-hours) and, for the local target, "
      "what pre-flight finds; launch nothing");
  cmd->add_flag("--skip-preflight", args->skip_preflight,
                "local and slurm targets: launch without the pre-flight checks");
  cmd->add_option("--startup-estimate-min", args->startup_estimate_min,
                  "dry run: minutes one engine start-up takes on this node (GPU-hours estimate)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1440.0));
  servelab::cli::add_op_data_option(*cmd, args->op_data);
  cmd->callback([args] {
    // The twin target, the dry run's estimates and the classification of local runs use the same step
    // model as `sim run` and the `sim serve` stand-ins.
    servelab::cli::apply_op_data(args->op_data);
    run(*args);
  });
});
