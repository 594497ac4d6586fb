// The Evaluator: repeats, result reuse (resume), pruning before launch, recording, progress.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "servelab/common/redact.h"
#include "servelab/common/text.h"
#include "servelab/tune/load/load.h"
#include "servelab/tune/search/search.h"
#include "tune/store/wall_clock.h"

namespace servelab::tune {

const char* trial_status_name(TrialStatus s) {
  switch (s) {
    case TrialStatus::kOk:
      return "ok";
    case TrialStatus::kRejected:
      return "rejected";
    case TrialStatus::kStartupRefused:
      return "startup_refused";
    case TrialStatus::kOutOfMemory:
      return "oom";
    case TrialStatus::kNotReady:
      return "not_ready";
    case TrialStatus::kCrashed:
      return "crashed";
    case TrialStatus::kRequestsFailed:
      return "requests_failed";
    case TrialStatus::kInvalid:
      return "invalid";
    case TrialStatus::kInterrupted:
      return "interrupted";
    case TrialStatus::kError:
      return "error";
    case TrialStatus::kJobTimeLimit:
      return "time_limit";
    case TrialStatus::kJobNodeFail:
      return "node_fail";
    case TrialStatus::kJobPreempted:
      return "preempted";
    case TrialStatus::kJobOutOfMemory:
      return "job_oom";
    case TrialStatus::kJobCancelled:
      return "cancelled";
  }
  return "error";
}

TrialStatus trial_status_from_name(const std::string& n) {
  for (auto s :
       {TrialStatus::kOk, TrialStatus::kRejected, TrialStatus::kStartupRefused, TrialStatus::kOutOfMemory,
        TrialStatus::kNotReady, TrialStatus::kCrashed, TrialStatus::kRequestsFailed, TrialStatus::kInvalid,
        TrialStatus::kInterrupted, TrialStatus::kError, TrialStatus::kJobTimeLimit, TrialStatus::kJobNodeFail,
        TrialStatus::kJobPreempted, TrialStatus::kJobOutOfMemory, TrialStatus::kJobCancelled})
    if (n == trial_status_name(s)) return s;
  throw std::invalid_argument("unknown trial status '" + n + "'");
}

bool trial_status_judges_config(TrialStatus s) {
  switch (s) {
    case TrialStatus::kInvalid:
    case TrialStatus::kInterrupted:
    case TrialStatus::kError:
    case TrialStatus::kJobNodeFail:
    case TrialStatus::kJobPreempted:
    case TrialStatus::kJobCancelled:
      return false;
    default:
      return true;
  }
}

std::optional<double> objective_value(const Study& study, const std::vector<std::string>& ids,
                                      const std::map<std::string, ScenarioResult>& results) {
  double num = 0, den = 0;
  for (const auto& id : ids) {
    auto it = results.find(id);
    if (it == results.end()) return std::nullopt;
    auto m = it->second.metrics.find(study.objective.metric);
    if (m == it->second.metrics.end() || !(m->second > 0)) return std::nullopt;
    if (ids.size() == 1) return m->second;
    const double w = load_scenario(study, id).weight;  // a load point ("id@c16") weighs as its scenario
    num += w * std::log(m->second);
    den += w;
  }
  if (den == 0) return std::nullopt;
  return std::exp(num / den);
}

double change_pct(double a, double b) {
  return a == 0 ? 0.0 : (b - a) / a * 100.0;
}

bool significantly_better(const Study& study, const Evaluation& inc, const Evaluation& cand) {
  return significantly_better(study.search.min_gain_pct, inc, cand);
}

bool significantly_better(double min_gain_pct, const Evaluation& inc, const Evaluation& cand) {
  if (!cand.feasible) return false;
  if (!inc.feasible) return true;
  if (cand.objective.mean <= inc.objective.mean) return false;
  if (inc.objective.n >= 2 && cand.objective.n >= 2) return welch_significant(inc.objective, cand.objective);
  return change_pct(inc.objective.mean, cand.objective.mean) > min_gain_pct;
}

namespace {

/// Failures that the next repeat would only repeat (the launch is refused or does not fit in memory): one
/// launch decides them for every repeat. A not-ready engine may be the machine's fault, so it is retried.
bool same_for_every_repeat(TrialStatus s) {
  return s == TrialStatus::kRejected || s == TrialStatus::kStartupRefused || s == TrialStatus::kOutOfMemory;
}

bool config_level(TrialStatus s) {
  return s == TrialStatus::kRejected || s == TrialStatus::kStartupRefused || s == TrialStatus::kNotReady ||
         s == TrialStatus::kOutOfMemory;
}

std::string sanitize(const std::string& s) {
  std::string out;
  for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
  if (out.size() > 150) out = out.substr(0, 150) + fmt::format("_{:x}", std::hash<std::string>{}(s));
  return out;
}

/// What the progress line shows of a finished scenario: an SLO search run's load, goodput and the values its
/// targets bound ("at 16 req/s: goodput 3.20 req/s; P99 TTFT 1234 ms, Mean TPOT 45.2 ms"; new-user trial:
/// the load probed was missing), else the [objective] metric.
std::string scenario_progress_text(const Study& study, const std::string& phase,
                                   const std::string& scenario_id, const std::map<std::string, double>& m) {
  if (phase.rfind("slo", 0) == 0 && !study.slo.targets.empty()) {  // "slo", "slo-band"
    auto g = m.find("Request goodput (req/s)");
    std::string out = g == m.end() ? "" : fmt::format("goodput {:.2f} req/s", g->second);
    if (const auto load = split_load_scenario_id(scenario_id))
      out = fmt::format("at {}{}{}", load->second.text(), out.empty() ? "" : ": ", out);
    std::string sep = "; ";
    for (const SloTarget& t : study.slo.targets) {
      const auto v = m.find(t.label);
      if (v == m.end()) continue;
      out += fmt::format("{}{} {:.1f} ms", out.empty() ? "" : sep, slo_target_name(t), v->second);
      sep = ", ";
    }
    return out.empty() ? "ok" : out;
  }
  auto it = m.find(study.objective.metric);
  return it == m.end() ? "ok" : fmt::format("{:.2f} {}", it->second, study.objective.metric);
}

std::string fmt_duration(double s) {
  if (s < 90) return fmt::format("{:.0f}s", s);
  if (s < 5400) return fmt::format("{:.0f}min", s / 60);
  return fmt::format("{:.1f}h", s / 3600);
}

}  // namespace

Evaluator::Evaluator(const Study& study, TrialRunner runner, RunnerKind kind, Store* store,
                     std::vector<TrialRecord> finished, std::ostream* progress, const std::atomic<bool>* stop,
                     std::filesystem::path log_dir)
    : study_(study),
      runner_(std::move(runner)),
      kind_(kind),
      store_(store),
      records_(std::move(finished)),
      progress_(progress),
      stop_(stop),
      log_dir_(std::move(log_dir)) {
  for (std::size_t i = 0; i < records_.size(); ++i) index_record(i);
  // A resumed study's progress counts on from its finished trials ("[58/~306]" after 57), as planned_ does.
  done_ = static_cast<int>(records_.size());
}

void Evaluator::index_record(std::size_t i) {
  const TrialRecord& r = records_[i];
  last_record_by_trial_key_[r.trial_key] = i;
  const std::optional<TrialKey> key = TrialKey::parse(r.trial_key);
  if (key && key->of(kind_, r.config_key))
    records_by_config_[r.config_key].push_back(i);
  else if (!key || key->runner == kind_)
    records_unindexed_ = true;
}

bool Evaluator::owns(const TrialRecord& r, const std::string& config_key) const {
  const std::optional<TrialKey> key = TrialKey::parse(r.trial_key);
  return key && key->of(kind_, config_key);
}

int Evaluator::repeats() const {
  return predicts() ? 1 : study_.repeats;
}

namespace {

/// The last record of `records` (among `indexes` when not null, else all) that `match` accepts.
template <class Match>
const TrialRecord* last_record_matching(const std::vector<TrialRecord>& records,
                                        const std::vector<std::size_t>* indexes, Match match) {
  if (indexes) {
    for (auto it = indexes->rbegin(); it != indexes->rend(); ++it)
      if (match(records[*it])) return &records[*it];
    return nullptr;
  }
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (match(*it)) return &*it;
  return nullptr;
}

}  // namespace

const std::vector<std::size_t>* Evaluator::records_of_config(const std::string& key) const {
  static const std::vector<std::size_t> kNone;
  if (records_unindexed_) return nullptr;
  const auto it = records_by_config_.find(key);
  return it == records_by_config_.end() ? &kNone : &it->second;
}

const TrialRecord* Evaluator::find(const std::string& key, const std::string& scenario, int repeat) const {
  const std::vector<std::size_t>* indexes = records_of_config(key);  // null: scan, checking each key
  return last_record_matching(records_, indexes, [&](const TrialRecord& r) {
    if (r.repeat != repeat || (!indexes && !owns(r, key))) return false;
    for (const auto& s : r.outcome.scenarios)
      if (s.scenario_id == scenario) return true;
    return false;
  });
}

const TrialRecord* Evaluator::find_config_failure(const std::string& key, int repeat) const {
  const std::vector<std::size_t>* indexes = records_of_config(key);  // null: scan, checking each key
  return last_record_matching(records_, indexes, [&](const TrialRecord& r) {
    return (r.repeat == repeat || same_for_every_repeat(r.outcome.status)) &&
           config_level(r.outcome.status) && (indexes || owns(r, key));
  });
}

void Evaluator::remember(TrialRecord record) {
  if (store_) store_->record_trial(record);
  records_.push_back(std::move(record));
  index_record(records_.size() - 1);
}

void Evaluator::record_goodput_band(const GoodputBandRecord& band) {
  if (store_) store_->record_goodput_band(band);
  goodput_bands_.push_back(band);
}

const GoodputBandRecord* Evaluator::goodput_band(const std::string& config_key,
                                                 const std::string& scenario) const {
  for (auto it = goodput_bands_.rbegin(); it != goodput_bands_.rend(); ++it)
    if (it->config_key == config_key && it->scenario == scenario) return &*it;
  return nullptr;
}

Evaluation Evaluator::describe(const CandidateConfig& config) const {
  Evaluation ev;
  ev.config = normalize(study_, config);
  ev.key = config_key(study_, ev.config);
  ev.label = config_label(study_, ev.config);
  ev.predicted = predicts();
  return ev;
}

std::string Evaluator::trial_key(const std::string& key, const std::vector<std::string>& missing,
                                 int rep) const {
  return TrialKey{kind_, key, TrialKey::Run{missing, rep}}.to_string();
}

const TrialRecord* Evaluator::find_trial(const std::string& tk) const {
  const auto it = last_record_by_trial_key_.find(tk);
  return it == last_record_by_trial_key_.end() ? nullptr : &records_[it->second];
}

TrialRecord Evaluator::base_record(const Evaluation& ev, const Rendered& cmd,
                                   const std::string& phase) const {
  TrialRecord rec;
  rec.engine = ev.config.engine;
  rec.config_key = ev.key;
  rec.config_label = ev.label;
  rec.phase = phase;
  rec.argv = cmd.argv;
  rec.env = cmd.env;
  rec.shell = ev.shell;
  return rec;
}

namespace {

/// Marks `ev` failed with `s` and `why` unless an earlier failure already did (the first reason is kept).
void note_failure(Evaluation& ev, TrialStatus s, const std::string& why) {
  if (ev.status == TrialStatus::kOk) {
    ev.status = s;
    ev.reason = why;
  }
}

/// Per scenario, per metric name: the values of the repeats.
using RepeatMetrics = std::map<std::string, std::map<std::string, std::vector<double>>>;

/// Fills `ev`'s objective (over the objective's scenarios among `ids`, or all of `ids`), per-scenario
/// objective metric and first-repeat results from the results of each repeat; returns every metric's
/// values per scenario (for the constraints).
RepeatMetrics aggregate_repeats(const Study& study, const std::vector<std::string>& ids,
                                const std::vector<std::map<std::string, ScenarioResult>>& per_repeat,
                                Evaluation& ev) {
  std::vector<double> objective;
  std::map<std::string, std::vector<double>> per_scn;
  RepeatMetrics all_metrics;
  for (size_t rep = 0; rep < per_repeat.size(); ++rep) {
    for (const auto& [id, r] : per_repeat[rep]) {
      auto m = r.metrics.find(study.objective.metric);
      if (m != r.metrics.end()) per_scn[id].push_back(m->second);
      for (const auto& [k, v] : r.metrics) all_metrics[id][k].push_back(v);
      if (rep == 0) ev.first[id] = r;
    }
    std::vector<std::string> obj_ids;
    for (const auto& id : study.objective.scenarios)
      if (std::find(ids.begin(), ids.end(), id) != ids.end()) obj_ids.push_back(id);
    if (obj_ids.empty()) obj_ids = ids;
    if (auto v = objective_value(study, obj_ids, per_repeat[rep])) objective.push_back(*v);
  }
  for (const auto& [id, xs] : per_scn) ev.per_scenario[id] = estimate(xs);
  ev.objective = estimate(objective);
  return all_metrics;
}

/// Sets `ev.feasible`: no failure and every [[constraints]] bound met by the mean over the repeats.
void check_constraints(const Study& study, const std::vector<std::string>& ids, RepeatMetrics& all_metrics,
                       Evaluation& ev) {
  ev.feasible = ev.status == TrialStatus::kOk;
  if (!ev.feasible) return;
  for (const auto& c : study.constraints)
    for (const auto& id : ids) {
      auto it = all_metrics[id].find(c.metric);
      if (it == all_metrics[id].end()) continue;
      const double mean = estimate(it->second).mean;
      if ((c.max && mean > *c.max) || (c.min && mean < *c.min)) {
        ev.feasible = false;
        if (ev.reason.empty())
          ev.reason = fmt::format("constraint violated on {}: {} = {:.2f} (bound {} {})", id, c.metric, mean,
                                  c.max ? "≤" : "≥", c.max ? *c.max : *c.min);
      }
    }
}

}  // namespace

Evaluation Evaluator::evaluate(const CandidateConfig& config_in, const std::vector<std::string>& ids,
                               const std::string& phase) {
  Evaluation ev = describe(config_in);
  Rendered cmd = render(study_, ev.config);
  ev.shell = cmd.shell();
  if (auto why = check_config(study_, ev.config)) {
    record_rejection(ev, cmd, phase, *why);
    return ev;
  }
  const int runs = repeats();
  std::vector<std::map<std::string, ScenarioResult>> per_repeat(runs);
  for (int rep = 0; rep < runs; ++rep) evaluate_repeat(ev, cmd, ids, phase, rep, per_repeat[rep]);
  RepeatMetrics all_metrics = aggregate_repeats(study_, ids, per_repeat, ev);
  if (ev.status == TrialStatus::kOk && ev.objective.n == 0)
    note_failure(ev, TrialStatus::kError,
                 "objective metric '" + study_.objective.metric + "' missing from the results");
  check_constraints(study_, ids, all_metrics, ev);
  ev.inconclusive = !ev.feasible && !trial_status_judges_config(ev.status);
  apply_primary_objective(study_, *this, ev, ids);  // [[objectives]] slo_goodput / tokens_per_gpu first
  // The progress line's "best": every feasible evaluation of the objective's scenarios counts as it ends,
  // whatever search made it (the one place it is kept: no search tracks its own).
  if (ev.feasible && ids == study_.objective.scenarios &&
      (best_label_.empty() || ev.objective.mean > best_value_)) {
    best_label_ = ev.config.engine + " " + ev.label;
    best_value_ = ev.objective.mean;
  }
  return ev;
}

void Evaluator::record_rejection(Evaluation& ev, const Rendered& cmd, const std::string& phase,
                                 const std::string& why) {
  const std::string tk = TrialKey{kind_, ev.key, TrialKey::Rejected{}}.to_string();
  if (!find_trial(tk)) {
    TrialRecord rec = base_record(ev, cmd, phase);
    rec.trial_key = tk;
    rec.outcome.status = TrialStatus::kRejected;
    rec.outcome.reason = why;
    rec.outcome.predicted = ev.predicted;
    rec.wall_started_s = wall_now_s();
    remember(std::move(rec));
  }
  ev.trial_keys.push_back(tk);
  note_failure(ev, TrialStatus::kRejected, why);
}

void Evaluator::evaluate_repeat(Evaluation& ev, const Rendered& cmd, const std::vector<std::string>& ids,
                                const std::string& phase, int rep,
                                std::map<std::string, ScenarioResult>& results) {
  if (const TrialRecord* cf = find_config_failure(ev.key, rep)) {
    ev.trial_keys.push_back(cf->trial_key);
    note_failure(ev, cf->outcome.status, cf->outcome.reason);
    for (const auto& id : ids) ev.scenario_failure[id] = cf->outcome.reason;
    return;
  }
  std::vector<std::string> missing;
  for (const auto& id : ids)
    if (!find(ev.key, id, rep)) missing.push_back(id);
  const std::string tk = trial_key(ev.key, missing, rep);
  const TrialRecord* done_before = find_trial(tk);
  if (!missing.empty() && !done_before) run_trial(ev, cmd, phase, missing, rep, tk);
  if (done_before || (!missing.empty() && !records_.empty() && records_.back().trial_key == tk))
    ev.trial_keys.push_back(tk);
  collect_results(ev, ids, rep, tk, results);
}

void Evaluator::run_trial(Evaluation& ev, const Rendered& cmd, const std::string& phase,
                          const std::vector<std::string>& missing, int rep, const std::string& tk) {
  if (!runner_) {
    ++missing_;
    note_failure(ev, TrialStatus::kError, "not run (the study is incomplete)");
    for (const auto& id : missing) ev.scenario_failure[id] = "not run";
    return;
  }
  if (stop_ && stop_->load()) throw Interrupted();
  TrialRequest req = make_request(ev, cmd, missing, rep, tk);
  req.keep_engine = keep_engine_ && repeats() == 1;
  if (!kept_config_.empty() && (!req.keep_engine || kept_config_ != req.config_key)) release_engine();
  const double t0 = wall_now_s();
  const auto steady0 = std::chrono::steady_clock::now();
  TrialOutcome out;
  try {
    out = runner_(req);
  } catch (const StudyAbort&) {
    throw;  // nothing else can run here: stop the study (finished trials are in the store)
  } catch (const std::exception& e) {
    // A runner bug or an unexpected error is recorded like any failure: the study goes on.
    out = TrialOutcome{};
    out.status = TrialStatus::kError;
    out.reason = std::string("trial runner error: ") + e.what();
  }
  if (out.engine_kept)
    kept_engine_ = req.engine, kept_config_ = req.config_key;
  else
    kept_engine_.clear(), kept_config_.clear();
  if (out.status == TrialStatus::kInterrupted) throw Interrupted();
  if (out.wall_s == 0)
    out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - steady0).count();
  finish_trial(ev, cmd, phase, req, std::move(out), t0);
}

void Evaluator::collect_results(Evaluation& ev, const std::vector<std::string>& ids, int rep,
                                const std::string& tk, std::map<std::string, ScenarioResult>& results) const {
  for (const auto& id : ids) {
    if (const TrialRecord* r = find(ev.key, id, rep)) {
      for (const auto& s : r->outcome.scenarios)
        if (s.scenario_id == id) results[id] = s;
      if (r->outcome.predicted) ev.predicted = true;
      continue;
    }
    // The scenario has no result: the trial that should have produced it failed.
    if (const TrialRecord* failed =
            last_record_matching(records_, records_of_config(ev.key), [&](const TrialRecord& r) {
              return r.trial_key == tk && r.outcome.status != TrialStatus::kOk;
            })) {
      note_failure(ev, failed->outcome.status, failed->outcome.reason);
      ev.scenario_failure[id] =
          std::string(trial_status_name(failed->outcome.status)) + ": " + failed->outcome.reason;
    }
    if (!ev.scenario_failure.count(id)) {
      note_failure(ev, TrialStatus::kError, "no result for scenario " + id);
      ev.scenario_failure[id] = "no result";
    }
  }
}

void Evaluator::set_keep_engine(bool on) {
  keep_engine_ = on;
  if (!on) release_engine();
}

void Evaluator::release_engine() {
  if (kept_config_.empty() || !runner_) return;
  TrialRequest req;
  req.trial_key = TrialKey{kind_, kept_config_, TrialKey::Release{}}.to_string();
  req.engine = kept_engine_;
  req.config_key = kept_config_;
  req.release_engine = true;
  kept_engine_.clear(), kept_config_.clear();
  runner_(req);  // stops the engine; an error here is the runner's (StudyAbort) and propagates
}

TrialRequest Evaluator::make_request(const Evaluation& ev, const Rendered& cmd,
                                     const std::vector<std::string>& missing, int rep,
                                     const std::string& tk) const {
  TrialRequest req;
  req.trial_key = tk;
  req.engine = ev.config.engine;
  req.config_key = ev.key;
  req.argv = cmd.argv;
  req.env = cmd.env;
  for (const auto& id : missing) req.scenarios.push_back(load_scenario(study_, id));  // "id@c16" too
  req.repeat = rep;
  req.knobs = ev.config.knobs;
  if (!log_dir_.empty()) req.log_path = log_dir_ / (sanitize(tk) + ".log");
  return req;
}

void Evaluator::finish_trial(const Evaluation& ev, const Rendered& cmd, const std::string& phase,
                             const TrialRequest& req, TrialOutcome out, double t0) {
  const std::string& tk = req.trial_key;
  const int rep = req.repeat;
  TrialRecord rec = base_record(ev, cmd, phase);
  rec.trial_key = tk;
  rec.repeat = rep;
  rec.log_path = req.log_path.string();
  rec.outcome = std::move(out);
  rec.outcome.predicted = rec.outcome.predicted || ev.predicted;
  rec.wall_started_s = t0;
  if (!rec.outcome.engine_reused) ++launched_;
  ++trials_run_;
  launched_wall_s_ += rec.outcome.wall_s;
  ++done_;
  if (progress_) {
    std::string result;
    if (rec.outcome.status != TrialStatus::kOk) {
      // Cut at a word (new-user trial: "...61.02 GiB per GPU needed, the GPU )"); report.md has it whole.
      result = fmt::format("FAILED ({}: {})", trial_status_name(rec.outcome.status),
                           common::abbreviate(rec.outcome.reason, 160));
    } else if (!rec.outcome.scenarios.empty()) {
      // The objective's scenario, whose value "best" compares; a trial of other scenarios only (ablation,
      // generalize) says which one its value is of.
      const auto& ss = rec.outcome.scenarios;
      const auto& obj = study_.objective.scenarios;
      auto objective_scenario = [&](const ScenarioResult& r) {
        const std::string id = r.scenario_id.substr(0, r.scenario_id.find('@'));
        return obj.empty() || std::find(obj.begin(), obj.end(), id) != obj.end();
      };
      const auto it = std::find_if(ss.begin(), ss.end(), objective_scenario);
      const ScenarioResult& shown = it != ss.end() ? *it : ss.front();
      result = scenario_progress_text(study_, phase, shown.scenario_id, shown.metrics);
      if (it == ss.end()) result += " on " + shown.scenario_id + " (not the objective's scenario)";
    }
    result = redact_study_secrets(study_, result);  // a failure reason may quote the engine's command or log
    // The twin guiding another target counts its predictions apart ("[twin 12]"): one counter per line kind.
    const bool guide = predicts() && study_.target != Target::kTwin;
    const std::string count = guide               ? fmt::format("twin {}", done_)
                              : planned_ < 0      ? fmt::format("{}", done_)
                              : done_ <= planned_ ? fmt::format("{}/~{}", done_, planned_)
                                                  : fmt::format("{}, past the ~{} planned", done_, planned_);
    *progress_ << fmt::format("[{}] {} {} ({}, r{}): {}{}{}", count, ev.config.engine, ev.label, phase, rep,
                              result, rec.outcome.predicted ? " [predicted]" : "",
                              rec.outcome.engine_reused ? " [engine kept up]" : "");
    if (!best_label_.empty())  // the objective by its own name and unit (goodput is not the trial's tok/s)
      *progress_ << fmt::format(" | best {:.2f} {} ({})", best_value_, primary_objective_label(study_),
                                best_label_);
    if (!guide && done_ < planned_)
      *progress_ << fmt::format(" | ~{} left",
                                fmt_duration(launched_wall_s_ / trials_run_ * (planned_ - done_)));
    *progress_ << "\n";
    progress_->flush();
  }
  remember(std::move(rec));
}

void Evaluator::prefetch(const std::vector<CandidateConfig>& configs, const std::vector<std::string>& ids,
                         const std::string& phase) {
  if (!batch_runner_) return;
  for (int rep = 0; rep < repeats(); ++rep) {
    // The trials evaluate() would launch for this repeat, each once; rejected configs and configs whose
    // launch already failed for good are left to evaluate() (no launch).
    std::vector<TrialRequest> requests;
    std::vector<std::pair<Evaluation, Rendered>> meta;
    for (const auto& c : configs) {
      Evaluation ev = describe(c);
      if (check_config(study_, ev.config) || find_config_failure(ev.key, rep)) continue;
      std::vector<std::string> missing;
      for (const auto& id : ids)
        if (!find(ev.key, id, rep)) missing.push_back(id);
      if (missing.empty()) continue;
      const std::string tk = trial_key(ev.key, missing, rep);
      bool queued = false;
      for (const auto& r : requests) queued = queued || r.trial_key == tk;
      if (queued || find_trial(tk)) continue;
      Rendered cmd = render(study_, ev.config);
      ev.shell = cmd.shell();
      requests.push_back(make_request(ev, cmd, missing, rep, tk));
      meta.emplace_back(std::move(ev), std::move(cmd));
    }
    if (requests.empty()) continue;
    if (stop_ && stop_->load()) throw Interrupted();
    bool interrupted = false;
    batch_runner_(requests, [&](std::size_t i, TrialOutcome out) {
      if (out.status == TrialStatus::kInterrupted) {
        interrupted = true;
        return;
      }
      const double started_s = wall_now_s() - out.wall_s;
      finish_trial(meta.at(i).first, meta.at(i).second, phase, requests.at(i), std::move(out), started_s);
    });
    if (interrupted || (stop_ && stop_->load())) throw Interrupted();
  }
}

}  // namespace servelab::tune
