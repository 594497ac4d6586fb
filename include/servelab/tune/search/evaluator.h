// servelab/tune: evaluating configs: a config measured on scenarios with repeats (Evaluation), the noise
// test between two of them, and the Evaluator that runs or replays their trials (a results cache, the
// store, progress). The search strategies (search.h) drive it.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "servelab/tune/load/load_result.h"
#include "servelab/tune/search/stats.h"
#include "servelab/tune/store/store.h"
#include "servelab/tune/study/space.h"
#include "servelab/tune/study/study.h"
#include "servelab/tune/targets/runner.h"
#include "servelab/tune/targets/trial_key.h"

namespace servelab::tune {

/// Thrown when the study is stopped (Ctrl-C): everything finished so far is in the database.
struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("study interrupted; rerun with --resume to continue") {}
};

/// A config measured on some scenarios, `repeats` times.
struct Evaluation {
  CandidateConfig config;
  std::string key;                        ///< config_key
  std::string label;                      ///< config_label
  TrialStatus status = TrialStatus::kOk;  ///< first failure among its trials, else kOk
  std::string reason;                     ///< failure reason or violated constraint
  bool feasible = false;                  ///< ok and meets every constraint
  /// Not feasible, but its runs say nothing about the configuration: the first failure is one that
  /// trial_status_judges_config rejects (invalid, interrupted, runner error, node failure, ...), or an SLO
  /// search found no goodput only because its passing loads were saturated or its runs invalid. No verdict
  /// ("fails without this knob") rests on it.
  bool inconclusive = false;
  bool predicted = false;                        ///< numbers come from the twin
  Estimate objective;                            ///< per-repeat objective value (see objective_value)
  std::map<std::string, Estimate> per_scenario;  ///< scenario → estimate of the objective metric
  std::map<std::string, ScenarioResult> first;   ///< scenario → repeat 0's full result (report blocks)
  std::map<std::string, std::string> scenario_failure;  ///< scenario → "status: reason" where it failed
  std::string shell;                                    ///< the rendered launch command (shell form)
  std::vector<std::string> trial_keys;
  /// The SLO search behind `objective` when the primary objective is slo_goodput (apply_primary_objective);
  /// the report shows it for every configuration the ranking values on goodput.
  std::optional<SloResult> slo;
};

/// Objective of one repeat over `scenario_ids`: the objective metric itself for one scenario, else the
/// weighted geometric mean exp(Σ wᵢ ln xᵢ / Σ wᵢ). Missing or non-positive values give nullopt.
std::optional<double> objective_value(const Study& study, const std::vector<std::string>& scenario_ids,
                                      const std::map<std::string, ScenarioResult>& results);

/// Relative change (b − a)/a in percent; 0 when a is 0.
double change_pct(double a, double b);

/// Is `candidate` better than `incumbent` by more than the noise? A feasible candidate beats an
/// infeasible incumbent. With ≥ 2 repeats on both: Welch's t-test at 5% and a higher mean; with one run:
/// a gain above `study.search.min_gain_pct`.
bool significantly_better(const Study& study, const Evaluation& incumbent, const Evaluation& candidate);
/// The same test with the one-run threshold given (percent).
bool significantly_better(double min_gain_pct, const Evaluation& incumbent, const Evaluation& candidate);

/// Runs (or replays) trials: expands repeats, reuses finished results by (runner kind, config, scenario,
/// repeat), prunes invalid configs before launch, records every trial in the store, shows progress.
/// Thread-safety: one thread.
class Evaluator {
 public:
  /// `runner` may be empty: replay mode (only stored trials; anything missing is reported as "not run").
  /// `kind` is the runner's: it separates runners in trial keys ("twin|...", "local|...") and says whether
  /// the results are predictions. `store` and `progress` may be null.
  Evaluator(const Study& study, TrialRunner runner, RunnerKind kind, Store* store,
            std::vector<TrialRecord> finished, std::ostream* progress, const std::atomic<bool>* stop,
            std::filesystem::path log_dir);

  /// Measures `config` on `scenario_ids` (study.repeats times). Throws Interrupted when stopped.
  Evaluation evaluate(const CandidateConfig& config, const std::vector<std::string>& scenario_ids,
                      const std::string& phase);

  /// Runs the trials that evaluating each of `configs` on `scenario_ids` needs and that are not known yet,
  /// all at once through the batch runner (set_batch_runner), recording each as it ends; evaluate() then
  /// finds them. Without a batch runner it does nothing (evaluate() runs them one by one). The strategies
  /// call it where the trials are independent: the grid, the twin's top-k, greedy's candidates for one
  /// knob, the ablation. Throws Interrupted when stopped (finished trials are recorded).
  void prefetch(const std::vector<CandidateConfig>& configs, const std::vector<std::string>& scenario_ids,
                const std::string& phase);
  /// Lets prefetch run independent trials in parallel (target slurm); empty = one at a time.
  void set_batch_runner(BatchTrialRunner runner) { batch_runner_ = std::move(runner); }

  /// The trials the progress line expects in all ("[12/~80]"): run_search sets planned_trials unless a plan
  /// (predicted_trials) set it first.
  /// The trials the progress line counts against ("[12/~306]", with an ETA); 0: run_search sets its own
  /// plan; < 0: unknown, the line counts alone ("[12]") and gives no ETA.
  void set_planned(int trials) { planned_ = trials; }
  int planned() const { return planned_; }
  /// The runner its trials go to (a twin SLO search's band runs it on a study with shifted SLOs).
  const TrialRunner& runner() const { return runner_; }
  /// Engine launches: trials run, less those that reused an engine kept up (TrialOutcome::engine_reused).
  int launched() const { return launched_; }
  /// While on, trials ask the runner to keep their engine up for the next trial of the same config
  /// (TrialRequest::keep_engine): the SLO search's probes. Only with one run per point (repeats() == 1: a
  /// repeat measures launch-to-launch variance, so it launches fresh). Turning it off stops a kept engine.
  void set_keep_engine(bool on);
  /// Asks the runner to stop the engine it keeps up (TrialRequest::release_engine); nothing when none.
  /// Called by set_keep_engine(false) and before any trial that cannot reuse the kept engine.
  /// Evaluations that lacked a stored result in replay mode (0 = the study is complete).
  int missing() const { return missing_; }
  /// Replay mode: no runner, evaluate() only reads the finished trials it was given (`servelab report`).
  bool replays() const { return !runner_; }
  /// Remembers the twin's goodput band of an SLO search (slo_search) and writes it to the store, when any,
  /// so that a replay of the study shows the band the run computed. Throws std::runtime_error on SQLite
  /// errors.
  void record_goodput_band(const GoodputBandRecord& band);
  /// Gives this evaluator the goodput bands a run stored (Store::goodput_bands), for a replay.
  void set_goodput_bands(std::vector<GoodputBandRecord> bands) { goodput_bands_ = std::move(bands); }
  /// The last goodput band recorded or given for (`config_key`, `scenario`), or null.
  const GoodputBandRecord* goodput_band(const std::string& config_key, const std::string& scenario) const;
  /// Every trial this evaluator ran or reused, in order (for reports and exports).
  const std::vector<TrialRecord>& records() const { return records_; }
  /// The kind of runner behind this evaluator (its trial keys' tag).
  RunnerKind runner_kind() const { return kind_; }
  /// Its numbers are the twin's predictions (runner_predicts), not measurements.
  bool predicts() const { return runner_predicts(kind_); }
  /// Runs per point: study.repeats, except 1 on the twin (its predictions are deterministic, so a repeat
  /// would only copy the first run and report a ± 0.00 confidence interval).
  int repeats() const;
  /// The twin evaluator whose SLO search brackets this one's (--target local; tune/load.h). May be null.
  void set_load_guide(Evaluator* twin) { load_guide_ = twin; }
  Evaluator* load_guide() const { return load_guide_; }
  void release_engine();
  /// The last trial of this evaluator's runner on `config_key` in repeat `repeat` (0-based) with a result
  /// for `scenario` (a scenario or load-point id), or null: where evaluate() takes that result from.
  const TrialRecord* find(const std::string& config_key, const std::string& scenario, int repeat) const;

 private:
  const TrialRecord* find_config_failure(const std::string& config_key, int repeat) const;
  void remember(TrialRecord record);
  /// `config` normalized, with its key, label and `predicted` (what evaluate() and prefetch() start from).
  Evaluation describe(const CandidateConfig& config) const;
  /// Key of the trial running `missing` scenarios of `config_key` in repeat `rep`: "tag|key|s1+s2|rN"
  /// (TrialKey::Run).
  std::string trial_key(const std::string& config_key, const std::vector<std::string>& missing,
                        int rep) const;
  /// The last record with this trial key, or null.
  const TrialRecord* find_trial(const std::string& trial_key) const;
  /// A record of `ev` launched as `cmd` in `phase`: engine, keys, label, command; no outcome yet.
  TrialRecord base_record(const Evaluation& ev, const Rendered& cmd, const std::string& phase) const;
  TrialRequest make_request(const Evaluation& ev, const Rendered& cmd,
                            const std::vector<std::string>& missing, int rep,
                            const std::string& trial_key) const;
  /// Records `ev` rejected by check_config (once per config) and marks it failed.
  void record_rejection(Evaluation& ev, const Rendered& cmd, const std::string& phase,
                        const std::string& why);
  /// Repeat `rep` of evaluate(): a known config-level failure, else the trial of the scenarios not yet
  /// measured (run_trial), then `ids`' results of this repeat into `results` (collect_results).
  void evaluate_repeat(Evaluation& ev, const Rendered& cmd, const std::vector<std::string>& ids,
                       const std::string& phase, int rep, std::map<std::string, ScenarioResult>& results);
  /// Launches the trial `trial_key` of the `missing` scenarios through the runner and records it; without a
  /// runner, marks them "not run". Throws Interrupted on Ctrl-C, lets StudyAbort through.
  void run_trial(Evaluation& ev, const Rendered& cmd, const std::string& phase,
                 const std::vector<std::string>& missing, int rep, const std::string& trial_key);
  /// `ids`' results of repeat `rep` into `results`; a scenario without one gets the failure of the trial
  /// `trial_key` that should have produced it.
  void collect_results(Evaluation& ev, const std::vector<std::string>& ids, int rep,
                       const std::string& trial_key, std::map<std::string, ScenarioResult>& results) const;
  /// Records a launched trial's outcome (progress line, store) as evaluate() and prefetch() do.
  void finish_trial(const Evaluation& ev, const Rendered& cmd, const std::string& phase,
                    const TrialRequest& req, TrialOutcome out, double wall_started_s);

  const Study& study_;
  TrialRunner runner_;
  BatchTrialRunner batch_runner_;
  RunnerKind kind_;
  Store* store_;
  std::vector<TrialRecord> records_;              ///< finished trials known to this evaluator
  std::vector<GoodputBandRecord> goodput_bands_;  ///< the SLO searches' goodput bands (record_goodput_band)
  /// Indexes of records_ (so that a lookup is not a scan of every trial: planning 30,000 values of one knob
  /// was quadratic): this tag's records by config key, in order; the last record of each trial key.
  std::unordered_map<std::string, std::vector<std::size_t>> records_by_config_;
  std::unordered_map<std::string, std::size_t> last_record_by_trial_key_;
  /// A record whose trial key does not parse (TrialKey::parse), or is of this runner but not of the
  /// record's config_key (never written by servelab; possible in a hand-edited store): then lookups scan
  /// records_, checking each key (owns).
  bool records_unindexed_ = false;
  void index_record(std::size_t i);
  /// Is `record`'s trial key one of this runner's trials of `config_key`?
  bool owns(const TrialRecord& record, const std::string& config_key) const;
  /// Indexes (into records_) of the records that can belong to `config_key`, in order; null: scan them all.
  const std::vector<std::size_t>* records_of_config(const std::string& config_key) const;
  std::ostream* progress_;
  const std::atomic<bool>* stop_;
  std::filesystem::path log_dir_;
  int planned_ = 0, done_ = 0, launched_ = 0, missing_ = 0;
  double launched_wall_s_ = 0;
  /// The progress display's best: the best feasible evaluation of the objective's scenarios so far
  /// (evaluate), by its label and objective value.
  std::string best_label_;
  double best_value_ = 0;
  Evaluator* load_guide_ = nullptr;
  bool keep_engine_ = false;
  std::string kept_engine_, kept_config_;  ///< engine and config of the engine the runner keeps ("" = none)
  int trials_run_ = 0;                     ///< trials run by the runner (the ETA's average)
};

}  // namespace servelab::tune
