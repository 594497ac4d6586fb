// servelab/tune: the study's results database (SQLite, one file per study). Everything is written as it
// happens, one transaction per finished trial, in WAL mode, so Ctrl-C or a killed process loses at most the
// trial in flight and `--resume` picks up from the file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "servelab/tune/targets/runner.h"

struct sqlite3;

namespace servelab::tune {

/// One finished trial as stored.
struct TrialRecord {
  std::int64_t id = 0;    ///< row id (0 before insertion)
  std::string trial_key;  ///< unique (config, scenarios, repeat)
  std::string engine;
  std::string config_key;
  std::string config_label;
  std::string phase;  ///< "baseline", "greedy", "grid", "rank", "measure", "generalize", "ablation"
  int repeat = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  std::string shell;     ///< the command as a shell line
  std::string log_path;  ///< the engine's stdout+stderr of this trial ("" on the twin)
  TrialOutcome outcome;
  double wall_started_s = 0.0;  ///< system clock, seconds since the Unix epoch
};

/// The Slurm job of a trial (target slurm): written just before sbatch runs (job_id "", state "SUBMITTING")
/// and again with sbatch's id, so that --resume finds jobs that are still queued or running, even one whose
/// id a killed tune never wrote, and waits for them instead of submitting them again.
struct SlurmJobRecord {
  std::string trial_key;
  std::string job_id;             ///< sbatch's job id ("1234"); "" while sbatch runs (kSlurmSubmitting)
  std::string state;              ///< last Slurm state seen ("PENDING", "RUNNING", "COMPLETED", ...)
  double wall_submitted_s = 0.0;  ///< system clock, seconds since the Unix epoch
};

/// The twin's band on the goodput of one configuration's SLO search (SloResult::goodput_low_req_s and
/// goodput_high_req_s), as the run computed it. The band comes from two more SLO searches on the twin with
/// the SLO bounds shifted (slo_search, phase "slo-band"), which are not trials: `servelab report` replays the
/// stored trials only, so it takes the band from here.
struct GoodputBandRecord {
  std::string config_key;    ///< the configuration (config_key)
  std::string scenario;      ///< the SLO search's scenario id (SloSpec::scenario)
  double goodput_req_s = 0;  ///< the goodput the band is around (SloResult::request_goodput_req_s)
  double low_req_s = 0;      ///< the band's low end (req/s)
  double high_req_s = 0;     ///< the band's high end (req/s)
};

/// The results database. Not copyable; Thread-safety: one thread at a time.
class Store {
 public:
  /// Opens (creating if needed) the database at `path` and its schema. Throws std::runtime_error naming
  /// the path and SQLite's message.
  explicit Store(const std::filesystem::path& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  /// Records the study (its TOML text, target) and the environment (host, versions, data used). If a
  /// study is already stored with a different name, throws std::runtime_error. Every text is stored
  /// through common::redact_text / redact_args / redact_env: the database never holds a credential.
  void write_study(const std::string& name, const std::string& toml_text, const std::string& target,
                   const std::map<std::string, std::string>& environment);
  /// Marks the study finished (wall clock now).
  void mark_finished();
  /// The stored study TOML, or nullopt for an empty database.
  std::optional<std::string> study_toml() const;
  std::optional<std::string> study_target() const;
  std::map<std::string, std::string> environment() const;

  /// Inserts a trial with its command, per-scenario metrics and failure in one transaction (command, reason,
  /// log tail and result block redacted). A trial with the same key replaces the old one. Throws
  /// std::runtime_error on SQLite errors.
  void record_trial(const TrialRecord& record);
  /// Number of trials stored.
  std::int64_t trial_count() const;
  /// The stored study's name, or nullopt for an empty database.
  std::optional<std::string> study_name() const;
  /// All trials in insertion order, with their scenarios and metrics.
  std::vector<TrialRecord> trials() const;
  /// Deletes every trial and goodput band (a fresh run without --resume).
  void clear_trials();

  /// Inserts or replaces the goodput band of (`band.config_key`, `band.scenario`). Throws
  /// std::runtime_error on SQLite errors.
  void record_goodput_band(const GoodputBandRecord& band);
  /// Every stored goodput band, in insertion order.
  std::vector<GoodputBandRecord> goodput_bands() const;

  /// Inserts or replaces the Slurm job of `job.trial_key`. Throws std::runtime_error on SQLite errors.
  void record_slurm_job(const SlurmJobRecord& job);
  /// Every stored Slurm job, by trial key.
  std::map<std::string, SlurmJobRecord> slurm_jobs() const;
  /// Forgets the job of `trial_key` (cancelled by this tune: --resume submits the trial again).
  void forget_slurm_job(const std::string& trial_key);

 private:
  void exec(const std::string& sql) const;
  sqlite3* db_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace servelab::tune
