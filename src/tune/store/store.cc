#include "servelab/tune/store/store.h"

#include <fmt/format.h>
#include <sqlite3.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "servelab/common/redact.h"
#include "tune/store/wall_clock.h"

namespace servelab::tune {

namespace {

/// A prepared statement with RAII finalisation.
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK)
      throw std::runtime_error(fmt::format("sqlite: {} in: {}", sqlite3_errmsg(db), sql));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt& bind(int i, const std::string& v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& bind(int i, double v) {
    sqlite3_bind_double(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  /// Steps once; true if a row is available.
  bool step() {
    int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw std::runtime_error(std::string("sqlite: ") + sqlite3_errmsg(db_));
  }
  void run() {
    step();
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  std::string text(int c) const {
    auto p = sqlite3_column_text(s_, c);
    return p ? std::string(reinterpret_cast<const char*>(p), sqlite3_column_bytes(s_, c)) : std::string();
  }
  double real(int c) const { return sqlite3_column_double(s_, c); }
  std::int64_t integer(int c) const { return sqlite3_column_int64(s_, c); }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS study (
  id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, toml TEXT NOT NULL, target TEXT NOT NULL,
  wall_started_s REAL, wall_finished_s REAL);
CREATE TABLE IF NOT EXISTS environment (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS trials (
  id INTEGER PRIMARY KEY AUTOINCREMENT, trial_key TEXT NOT NULL UNIQUE, engine TEXT NOT NULL,
  config_key TEXT NOT NULL, config_label TEXT NOT NULL, phase TEXT NOT NULL, repeat INTEGER NOT NULL,
  status TEXT NOT NULL, reason TEXT NOT NULL, predicted INTEGER NOT NULL, wall_started_s REAL NOT NULL,
  wall_s REAL NOT NULL);
CREATE TABLE IF NOT EXISTS commands (
  trial_id INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE, argv_json TEXT NOT NULL,
  env_json TEXT NOT NULL, shell TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS scenario_results (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE, ord INTEGER NOT NULL,
  scenario TEXT NOT NULL, result_block TEXT NOT NULL, ttft_ms_json TEXT NOT NULL, tpot_ms_json TEXT NOT NULL,
  PRIMARY KEY (trial_id, scenario));
CREATE TABLE IF NOT EXISTS metrics (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE, scenario TEXT NOT NULL,
  metric TEXT NOT NULL, value REAL NOT NULL, PRIMARY KEY (trial_id, scenario, metric));
CREATE TABLE IF NOT EXISTS failures (
  trial_id INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE, kind TEXT NOT NULL,
  reason TEXT NOT NULL, log_tail TEXT NOT NULL);
)sql";

}  // namespace

Store::Store(const std::filesystem::path& path) : path_(path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    db_ = nullptr;
    throw std::runtime_error(fmt::format("cannot open results database {}: {}", path.string(), msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON;");
  bool have_schema = false;
  {
    Stmt q(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'failures'");
    have_schema = q.step() && q.integer(0) == 1;
  }
  if (!have_schema) exec(kSchema);  // no write (and no lock) when another process already created it
  bool have_log_path = false;
  {
    Stmt q(db_, "SELECT count(*) FROM pragma_table_info('trials') WHERE name = 'log_path'");
    have_log_path = q.step() && q.integer(0) == 1;
  }
  if (!have_log_path) exec("ALTER TABLE trials ADD COLUMN log_path TEXT NOT NULL DEFAULT ''");
  bool have_reused = false;  // TrialOutcome::engine_reused (an SLO probe on a kept engine)
  {
    Stmt q(db_, "SELECT count(*) FROM pragma_table_info('trials') WHERE name = 'engine_reused'");
    have_reused = q.step() && q.integer(0) == 1;
  }
  if (!have_reused) exec("ALTER TABLE trials ADD COLUMN engine_reused INTEGER NOT NULL DEFAULT 0");
  bool have_jobs = false;
  {
    Stmt q(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'slurm_jobs'");
    have_jobs = q.step() && q.integer(0) == 1;
  }
  if (!have_jobs)
    exec(
        "CREATE TABLE IF NOT EXISTS slurm_jobs (trial_key TEXT PRIMARY KEY, job_id TEXT NOT NULL, "
        "state TEXT NOT NULL, wall_submitted_s REAL NOT NULL)");
  bool have_bands = false;  // GoodputBandRecord (databases written before it have none)
  {
    Stmt q(db_, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goodput_bands'");
    have_bands = q.step() && q.integer(0) == 1;
  }
  if (!have_bands)
    exec(
        "CREATE TABLE IF NOT EXISTS goodput_bands (config_key TEXT NOT NULL, scenario TEXT NOT NULL, "
        "goodput_req_s REAL NOT NULL, low_req_s REAL NOT NULL, high_req_s REAL NOT NULL, "
        "PRIMARY KEY (config_key, scenario))");
}

Store::~Store() {
  sqlite3_close(db_);
}

void Store::exec(const std::string& sql) const {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw std::runtime_error(fmt::format("sqlite ({}): {}", path_.string(), msg));
  }
}

void Store::write_study(const std::string& name, const std::string& toml_text, const std::string& target,
                        const std::map<std::string, std::string>& environment) {
  {
    Stmt q(db_, "SELECT name FROM study WHERE id = 1");
    if (q.step() && q.text(0) != name)
      throw std::runtime_error(fmt::format("{} holds study '{}', not '{}'", path_.string(), q.text(0), name));
  }
  exec("BEGIN IMMEDIATE");
  try {
    Stmt s(db_,
           "INSERT INTO study (id, name, toml, target, wall_started_s) VALUES (1, ?, ?, ?, ?) "
           "ON CONFLICT(id) DO UPDATE SET toml = excluded.toml, target = excluded.target");
    s.bind(1, name).bind(2, common::redact_text(toml_text)).bind(3, target).bind(4, wall_now_s()).run();
    Stmt e(db_, "INSERT OR REPLACE INTO environment (key, value) VALUES (?, ?)");
    for (const auto& [k, v] : environment) e.bind(1, k).bind(2, v).run();
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

void Store::mark_finished() {
  Stmt s(db_, "UPDATE study SET wall_finished_s = ? WHERE id = 1");
  s.bind(1, wall_now_s()).run();
}

std::optional<std::string> Store::study_toml() const {
  Stmt q(db_, "SELECT toml FROM study WHERE id = 1");
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

std::optional<std::string> Store::study_target() const {
  Stmt q(db_, "SELECT target FROM study WHERE id = 1");
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

std::map<std::string, std::string> Store::environment() const {
  std::map<std::string, std::string> out;
  Stmt q(db_, "SELECT key, value FROM environment");
  while (q.step()) out[q.text(0)] = q.text(1);
  return out;
}

void Store::record_trial(const TrialRecord& r) {
  exec("BEGIN IMMEDIATE");
  try {
    {
      Stmt d(db_, "DELETE FROM trials WHERE trial_key = ?");
      d.bind(1, r.trial_key).run();
    }
    Stmt t(db_,
           "INSERT INTO trials (trial_key, engine, config_key, config_label, phase, repeat, status, reason, "
           "predicted, wall_started_s, wall_s, log_path, engine_reused) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)");
    t.bind(1, r.trial_key).bind(2, r.engine).bind(3, r.config_key).bind(4, r.config_label).bind(5, r.phase);
    // Stored redacted (common/redact.h): the database is shared and read by `servelab report`.
    t.bind(6, r.repeat).bind(7, std::string(trial_status_name(r.outcome.status)));
    t.bind(8, common::redact_text(r.outcome.reason));
    t.bind(9, r.outcome.predicted ? 1 : 0)
        .bind(10, r.wall_started_s)
        .bind(11, r.outcome.wall_s)
        .bind(12, r.log_path);
    t.bind(13, r.outcome.engine_reused ? 1 : 0);
    t.run();
    const std::int64_t id = sqlite3_last_insert_rowid(db_);
    Stmt c(db_, "INSERT INTO commands (trial_id, argv_json, env_json, shell) VALUES (?,?,?,?)");
    c.bind(1, id).bind(2, nlohmann::json(common::redact_args(r.argv)).dump());
    c.bind(3, nlohmann::json(common::redact_env(r.env)).dump()).bind(4, common::redact_text(r.shell));
    c.run();
    Stmt sr(
        db_,
        "INSERT INTO scenario_results (trial_id, ord, scenario, result_block, ttft_ms_json, tpot_ms_json) "
        "VALUES (?,?,?,?,?,?)");
    Stmt m(db_, "INSERT INTO metrics (trial_id, scenario, metric, value) VALUES (?,?,?,?)");
    int ord = 0;
    for (const auto& s : r.outcome.scenarios) {
      sr.bind(1, id).bind(2, ord++).bind(3, s.scenario_id).bind(4, common::redact_text(s.result_block));
      sr.bind(5, nlohmann::json(s.ttft_ms).dump()).bind(6, nlohmann::json(s.tpot_ms).dump()).run();
      for (const auto& [k, v] : s.metrics) m.bind(1, id).bind(2, s.scenario_id).bind(3, k).bind(4, v).run();
    }
    if (r.outcome.status != TrialStatus::kOk) {
      Stmt f(db_, "INSERT INTO failures (trial_id, kind, reason, log_tail) VALUES (?,?,?,?)");
      f.bind(1, id).bind(2, std::string(trial_status_name(r.outcome.status)));
      f.bind(3, common::redact_text(r.outcome.reason)).bind(4, common::redact_text(r.outcome.log_tail)).run();
    }
    exec("COMMIT");
  } catch (...) {
    exec("ROLLBACK");
    throw;
  }
}

std::vector<TrialRecord> Store::trials() const {
  std::vector<TrialRecord> out;
  std::map<std::int64_t, size_t> index;
  Stmt q(db_,
         "SELECT t.id, t.trial_key, t.engine, t.config_key, t.config_label, t.phase, t.repeat, t.status, "
         "t.reason, "
         "t.predicted, "
         "t.wall_started_s, t.wall_s, c.argv_json, c.env_json, c.shell, COALESCE(f.log_tail, ''), t.log_path"
         ", t.engine_reused "
         "FROM trials t "
         "JOIN commands c ON c.trial_id = t.id LEFT JOIN failures f ON f.trial_id = t.id ORDER BY t.id");
  while (q.step()) {
    TrialRecord r;
    r.id = q.integer(0);
    r.trial_key = q.text(1);
    r.engine = q.text(2);
    r.config_key = q.text(3);
    r.config_label = q.text(4);
    r.phase = q.text(5);
    r.repeat = static_cast<int>(q.integer(6));
    r.outcome.status = trial_status_from_name(q.text(7));
    r.outcome.reason = q.text(8);
    r.outcome.predicted = q.integer(9) != 0;
    r.wall_started_s = q.real(10);
    r.outcome.wall_s = q.real(11);
    r.argv = nlohmann::json::parse(q.text(12)).get<std::vector<std::string>>();
    r.env = nlohmann::json::parse(q.text(13)).get<std::map<std::string, std::string>>();
    r.shell = q.text(14);
    r.outcome.log_tail = q.text(15);
    r.log_path = q.text(16);
    r.outcome.engine_reused = q.integer(17) != 0;
    index[r.id] = out.size();
    out.push_back(std::move(r));
  }
  Stmt s(db_,
         "SELECT trial_id, scenario, result_block, ttft_ms_json, tpot_ms_json FROM scenario_results "
         "ORDER BY trial_id, ord");
  while (s.step()) {
    ScenarioResult sr;
    sr.scenario_id = s.text(1);
    sr.result_block = s.text(2);
    sr.ttft_ms = nlohmann::json::parse(s.text(3)).get<std::vector<double>>();
    sr.tpot_ms = nlohmann::json::parse(s.text(4)).get<std::vector<double>>();
    out[index.at(s.integer(0))].outcome.scenarios.push_back(std::move(sr));
  }
  Stmt m(db_, "SELECT trial_id, scenario, metric, value FROM metrics");
  while (m.step()) {
    auto& scen = out[index.at(m.integer(0))].outcome.scenarios;
    for (auto& sr : scen)
      if (sr.scenario_id == m.text(1)) sr.metrics[m.text(2)] = m.real(3);
  }
  return out;
}

std::int64_t Store::trial_count() const {
  Stmt q(db_, "SELECT count(*) FROM trials");
  return q.step() ? q.integer(0) : 0;
}

std::optional<std::string> Store::study_name() const {
  Stmt q(db_, "SELECT name FROM study WHERE id = 1");
  if (!q.step()) return std::nullopt;
  return q.text(0);
}

void Store::clear_trials() {
  exec("DELETE FROM trials");
  exec("DELETE FROM goodput_bands");
}

void Store::record_goodput_band(const GoodputBandRecord& b) {
  Stmt s(db_,
         "INSERT OR REPLACE INTO goodput_bands (config_key, scenario, goodput_req_s, low_req_s, high_req_s) "
         "VALUES (?, ?, ?, ?, ?)");
  s.bind(1, b.config_key).bind(2, b.scenario).bind(3, b.goodput_req_s).bind(4, b.low_req_s);
  s.bind(5, b.high_req_s).run();
}

std::vector<GoodputBandRecord> Store::goodput_bands() const {
  std::vector<GoodputBandRecord> out;
  Stmt q(
      db_,
      "SELECT config_key, scenario, goodput_req_s, low_req_s, high_req_s FROM goodput_bands ORDER BY rowid");
  while (q.step()) out.push_back(GoodputBandRecord{q.text(0), q.text(1), q.real(2), q.real(3), q.real(4)});
  return out;
}

void Store::record_slurm_job(const SlurmJobRecord& j) {
  Stmt s(
      db_,
      "INSERT OR REPLACE INTO slurm_jobs (trial_key, job_id, state, wall_submitted_s) VALUES (?, ?, ?, ?)");
  s.bind(1, j.trial_key).bind(2, j.job_id).bind(3, j.state).bind(4, j.wall_submitted_s).run();
}

std::map<std::string, SlurmJobRecord> Store::slurm_jobs() const {
  std::map<std::string, SlurmJobRecord> out;
  Stmt q(db_, "SELECT trial_key, job_id, state, wall_submitted_s FROM slurm_jobs");
  while (q.step()) out[q.text(0)] = SlurmJobRecord{q.text(0), q.text(1), q.text(2), q.real(3)};
  return out;
}

void Store::forget_slurm_job(const std::string& trial_key) {
  Stmt s(db_, "DELETE FROM slurm_jobs WHERE trial_key = ?");
  s.bind(1, trial_key).run();
}

}  // namespace servelab::tune
