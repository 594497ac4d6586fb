#include "servelab/sim/validate.h"

#include "servelab/sim/fit.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <set>
#include <thread>

namespace servelab::sim {
namespace {

double rel_err(double predicted, double measured) { return 100.0 * (predicted / measured - 1.0); }


std::vector<double> ranks_of(const std::vector<double>& v) {
  std::vector<int> idx(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) idx[i] = static_cast<int>(i);
  std::sort(idx.begin(), idx.end(), [&](int a, int b) { return v[a] < v[b]; });
  std::vector<double> r(v.size());
  for (std::size_t i = 0; i < idx.size();) {
    std::size_t j = i;
    while (j + 1 < idx.size() && v[idx[j + 1]] == v[idx[i]]) ++j;
    for (std::size_t k = i; k <= j; ++k) r[idx[k]] = (i + j) / 2.0;
    i = j + 1;
  }
  return r;
}

double spearman(const std::vector<double>& a, const std::vector<double>& b) {
  const auto ra = ranks_of(a), rb = ranks_of(b);
  const double n = a.size();
  double ma = 0, mb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) ma += ra[i], mb += rb[i];
  ma /= n, mb /= n;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    sab += (ra[i] - ma) * (rb[i] - mb);
    saa += (ra[i] - ma) * (ra[i] - ma);
    sbb += (rb[i] - mb) * (rb[i] - mb);
  }
  return saa > 0 && sbb > 0 ? sab / std::sqrt(saa * sbb) : 0.0;
}

struct Group {
  std::vector<const ValidationRow*> rows;  // one per distinct launch command
};

// Fills the summary of `rows` (held out when `held_out`, else in-sample).
ValidationSummary summarize(const std::vector<const ValidationRow*>& rows, bool held_out,
                            std::vector<std::string>* group_lines) {
  ValidationSummary s;
  double se_tok = 0, se_ttft = 0, se_tpot = 0;
  std::map<std::pair<std::string, std::string>, Group> groups;
  for (const auto* r : rows) {
    const CorpusPoint& c = *r->point;
    ++s.points;
    if (r->refusal) ++s.refused;
    if (r->predicted_failure) ++s.predicted_failures;
    const auto& pred = held_out ? r->predicted : r->in_sample;
    if (pred) ++s.predicted;
    if (c.status == CorpusPoint::Status::kFailed) {
      ++s.failures_measured;
      if (r->predicted_failure) ++s.failures_reproduced;
      else ++s.failures_unexplained;
    }
    if (!pred || c.suspect) continue;
    if (c.status != CorpusPoint::Status::kOk && c.status != CorpusPoint::Status::kPartial) continue;
    const auto& m = c.measured;
    if (m.total_tok_s && *m.total_tok_s > 0) {
      se_tok += std::fabs(rel_err(pred->total_tok_s, *m.total_tok_s));
      ++s.compared_tok_s;
    }
    if (m.mean_ttft_ms && *m.mean_ttft_ms > 0) {
      se_ttft += std::fabs(rel_err(pred->mean_ttft_ms, *m.mean_ttft_ms));
      ++s.compared_ttft;
    }
    if (m.mean_tpot_ms && *m.mean_tpot_ms > 0 && pred->mean_tpot_ms > 0) {
      se_tpot += std::fabs(rel_err(pred->mean_tpot_ms, *m.mean_tpot_ms));
      ++s.compared_tpot;
    }
    auto& g = groups[{c.study, c.workload.key}];
    const bool dup = std::any_of(g.rows.begin(), g.rows.end(), [&](const ValidationRow* o) {
      return o->point->command == c.command && o->point->env == c.env;
    });
    if (!dup && m.total_tok_s) g.rows.push_back(r);
  }
  if (s.compared_tok_s) s.mape_total_tok_s = se_tok / s.compared_tok_s;
  if (s.compared_ttft) s.mape_ttft = se_ttft / s.compared_ttft;
  if (s.compared_tpot) s.mape_tpot = se_tpot / s.compared_tpot;
  double rho_sum = 0, regret_sum = 0;
  for (const auto& [key, g] : groups) {
    std::vector<const CorpusPoint*> runs;
    for (const auto* r : g.rows) runs.push_back(r->point);
    const bool latency = latency_objective(runs);
    std::vector<const ValidationRow*> rs;
    for (const auto* r : g.rows)
      if (!latency || (r->point->measured.mean_tpot_ms && (held_out ? r->predicted : r->in_sample)->mean_tpot_ms > 0))
        rs.push_back(r);
    if (rs.size() < 2) continue;
    std::vector<double> meas, pred;
    for (const auto* r : rs) {
      const auto& p = *(held_out ? r->predicted : r->in_sample);
      // Larger is better on both axes: throughput, or minus TPOT.
      meas.push_back(latency ? -*r->point->measured.mean_tpot_ms : *r->point->measured.total_tok_s);
      pred.push_back(latency ? -p.mean_tpot_ms : p.total_tok_s);
    }
    const std::size_t best_m = std::max_element(meas.begin(), meas.end()) - meas.begin();
    const std::size_t best_p = std::max_element(pred.begin(), pred.end()) - pred.begin();
    // Right when the twin's pick is the measured best or within 1% of it (the corpus's configurations
    // that repeat a launch differ by more than that run to run).
    const bool right = best_p == best_m || meas[best_p] >= meas[best_m] - 0.01 * std::fabs(meas[best_m]);
    ++s.groups;
    s.groups_same_winner += right;
    std::string rho_text = "-", top3_text;
    if (rs.size() >= 3) {
      const double rho = spearman(meas, pred);
      rho_sum += rho;
      ++s.spearman_groups;
      rho_text = fmt::format("{:.2f}", rho);
      // The twin's 3 best; the measured best (or one within 1% of it) among them?
      std::vector<std::size_t> order(pred.size());
      for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return pred[a] > pred[b]; });
      bool top3 = false;
      for (std::size_t i = 0; i < 3; ++i)
        top3 = top3 || meas[order[i]] >= meas[best_m] - 0.01 * std::fabs(meas[best_m]);
      s.groups_best_in_top3 += top3;
      // meas holds tok/s, or minus TPOT: both give the share lost as below.
      const double regret = 100.0 * (latency ? 1.0 - meas[best_m] / meas[best_p] : 1.0 - meas[best_p] / meas[best_m]);
      regret_sum += regret;
      top3_text = fmt::format(", best in top 3: {}, regret {:.1f}%", top3 ? "yes" : "NO", regret);
    }
    if (group_lines)
      group_lines->push_back(fmt::format("  {:<38} {} configs, {}: measured best {} ({}), twin picks {} -> {}, rho {}{}",
                                         key.second, rs.size(), latency ? "lowest TPOT" : "highest tok/s",
                                         rs[best_m]->point->id, rs[best_m]->point->label, rs[best_p]->point->id,
                                         right ? "right" : "WRONG", rho_text, top3_text));
  }
  if (s.spearman_groups) {
    s.mean_spearman = rho_sum / s.spearman_groups;
    s.mean_regret = regret_sum / s.spearman_groups;
  }
  return s;
}

}  // namespace

bool latency_objective(const std::vector<const CorpusPoint*>& runs) {
  if (runs.empty()) return false;
  const CorpusWorkload& w = runs.front()->workload;
  if (w.max_concurrency && *w.max_concurrency <= kLatencyConcurrency) return true;
  if (!(w.request_rate > 0) || !std::isfinite(w.request_rate)) return false;
  for (const auto* p : runs) {
    const auto& m = p->measured;
    if (!m.successful || !m.duration_s || *m.duration_s <= 0) return false;
    if (*m.successful / *m.duration_s < kServedShare * w.request_rate) return false;
  }
  return true;
}

namespace {

std::optional<HeadlineMetrics> metrics_of(const PredictResult& r, std::optional<std::string>* failure) {
  if (const auto* f = std::get_if<PredictedFailure>(&r)) {
    if (failure) *failure = f->message;
    return std::nullopt;
  }
  return headline(std::get<Prediction>(r));
}

const char* level_name(CalibrationLevel l) {
  switch (l) {
    case CalibrationLevel::kClass: return "class";
    case CalibrationLevel::kFamily: return "family";
    case CalibrationLevel::kEngine: return "engine";
    case CalibrationLevel::kPrior: return "prior";
  }
  return "?";
}

// Points behind each class's TTFT and TPOT sums (a class may have throughputs without latencies).
using LatencyCounts = std::map<std::string, std::pair<int, int>>;

void add_band(BandTable& t, LatencyCounts& n, const std::string& key, const ValidationRow& r) {
  auto& e = t.classes[key];
  // Accumulate squared errors in the fields; converted to RMS at the end.
  if (r.err_total_tok_s) e.total_tok_s_pct += *r.err_total_tok_s * *r.err_total_tok_s, ++e.points;
  if (r.err_ttft) e.ttft_pct += *r.err_ttft * *r.err_ttft, ++n[key].first;
  if (r.err_tpot) e.tpot_pct += *r.err_tpot * *r.err_tpot, ++n[key].second;
}

}  // namespace

CorpusValidation validate_corpus(const Corpus& corpus, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  CorpusValidation v;
  const std::vector<PreparedPoint> prepared = prepare_corpus(corpus);
  const int n = static_cast<int>(prepared.size());
  std::vector<int> train;
  for (int i = 0; i < n; ++i)
    if (trainable(prepared[i])) train.push_back(i);
  std::vector<const PreparedPoint*> train_points;
  for (int i : train) train_points.push_back(&prepared[i]);
  // The in-sample fit (two rounds). Its second-round traces serve every fold: a fold refits the classes
  // the held-out study touches on the other studies' traces, re-timed, without re-simulating them (the
  // batch compositions of time-dependent runs came from a simulation at the first round's parameters).
  FitOptions fo;
  fo.threads = threads;
  v.full_fit = fit_calibration(train_points, fo);
  std::map<std::string, std::vector<int>> class_points;  // class -> indices into train
  for (std::size_t k = 0; k < train.size(); ++k) class_points[prepared[train[k]].key.name()].push_back(static_cast<int>(k));

  v.rows.resize(n);
  for (int i = 0; i < n; ++i) {
    v.rows[i].point = prepared[i].point;
    v.rows[i].refusal = prepared[i].refusal;
    v.rows[i].predicted_failure = prepared[i].predicted_failure;
    if (prepared[i].launch) {
      v.rows[i].calibration_class = prepared[i].key.name();
      v.rows[i].unmodelled = prepared[i].launch->unmodelled;
    }
  }
  // Leave one study out: the fold's table. The engines the study uses are refitted without it (their
  // engine-level fields are shared by all their classes); the other engines' fits are the same data.
  std::map<std::string, CalibrationTable> fold_table;
  for (const auto& study : corpus.studies) {
    std::set<std::string> engines_touched;
    for (int i = 0; i < n; ++i)
      if (prepared[i].point->study == study && prepared[i].launch) engines_touched.insert(prepared[i].key.engine);
    std::vector<ClassFit> fits;
    for (const auto& f : v.full_fit.classes)
      if (!engines_touched.count(f.key.engine)) fits.push_back(f);
    for (const auto& engine : engines_touched) {
      std::vector<const PreparedPoint*> pts;
      std::vector<const Trace*> trs;
      for (std::size_t k = 0; k < train_points.size(); ++k) {
        if (train_points[k]->key.engine != engine || train_points[k]->point->study == study) continue;
        pts.push_back(train_points[k]);
        trs.push_back(&v.full_fit.traces[k]);
      }
      if (pts.empty()) continue;
      for (auto& f : fit_engine(engine, pts, trs, threads)) fits.push_back(std::move(f));
    }
    fold_table[study] = assemble_table(fits);
  }
  // Held-out and in-sample predictions.
  parallel_for(n, threads, [&](int i) {
    const auto& p = prepared[i];
    if (!p.launch || p.predicted_failure) return;
    std::optional<std::string> f;
    v.rows[i].in_sample = metrics_of(predict_point(p, v.full_fit.table), &f);
    if (f) v.rows[i].predicted_failure = f;
    const CalibrationTable& table = fold_table.at(p.point->study);
    v.rows[i].predicted = metrics_of(predict_point(p, table), nullptr);
    CalibrationLevel level;
    table.lookup(p.key, &level);
    v.rows[i].calibration_level = level_name(level);
  });
  // Errors, failures, notes.
  for (auto& r : v.rows) {
    const CorpusPoint& c = *r.point;
    if (c.status == CorpusPoint::Status::kFailed) {
      r.failure_reproduced = r.predicted_failure.has_value();
      if (!r.failure_reproduced)
        r.note = r.refusal ? "refused: " + *r.refusal
                           : "measured failure not explained by the twin (no modelled cause): " + c.failure;
      continue;
    }
    if (!r.predicted || c.suspect) continue;
    if (c.status != CorpusPoint::Status::kOk && c.status != CorpusPoint::Status::kPartial) continue;
    const auto& m = c.measured;
    if (m.total_tok_s && *m.total_tok_s > 0) r.err_total_tok_s = rel_err(r.predicted->total_tok_s, *m.total_tok_s);
    if (m.mean_ttft_ms && *m.mean_ttft_ms > 0) r.err_ttft = rel_err(r.predicted->mean_ttft_ms, *m.mean_ttft_ms);
    if (m.mean_tpot_ms && *m.mean_tpot_ms > 0 && r.predicted->mean_tpot_ms > 0)
      r.err_tpot = rel_err(r.predicted->mean_tpot_ms, *m.mean_tpot_ms);
  }
  // Summaries.
  std::vector<const ValidationRow*> all;
  for (const auto& r : v.rows) all.push_back(&r);
  v.held_out = summarize(all, true, nullptr);
  v.in_sample = summarize(all, false, nullptr);
  std::vector<const ValidationRow*> modelled;
  for (const auto& r : v.rows)
    if (r.unmodelled.empty()) modelled.push_back(&r);
  v.held_out_modelled = summarize(modelled, true, nullptr);
  for (const auto& study : corpus.studies) {
    StudyValidation sv;
    sv.study = study;
    std::vector<const ValidationRow*> rows;
    for (const auto& r : v.rows)
      if (r.point->study == study) rows.push_back(&r);
    sv.held_out = summarize(rows, true, &sv.group_lines);
    sv.in_sample = summarize(rows, false, nullptr);
    v.studies.push_back(std::move(sv));
  }
  // Bands from the held-out errors, and what the corpus covers.
  std::set<std::string> gpus, variants, versions;
  LatencyCounts latency_points;
  for (int i = 0; i < n; ++i) {
    const auto& p = prepared[i];
    const auto& r = v.rows[i];
    if (!p.launch) continue;
    // Measured in the corpus (trained on, or predicted and scored on an unmodelled kernel path).
    if (trainable(p) || (!p.launch->unmodelled.empty() && !p.predicted_failure && p.meas_tok_s)) {
      gpus.insert(p.cluster.gpu.name);
      variants.insert(p.launch->model.variant);
      versions.insert(p.key.engine + " " + p.launch->version);
      v.bands.max_gpus = std::max(v.bands.max_gpus, p.launch->layout.gpus);
    }
    if (!r.err_total_tok_s) continue;
    const std::string eg = p.key.engine + "/" + p.key.generation;
    add_band(v.bands, latency_points, eg + "/" + architecture_class(p.launch->model), r);
    add_band(v.bands, latency_points, eg, r);
    add_band(v.bands, latency_points, p.key.engine, r);
    add_band(v.bands, latency_points, "all", r);
  }
  // RMS per metric over the points that have it; -1 where a class has none (error_band then takes that
  // metric from a coarser class).
  for (auto& [k, e] : v.bands.classes) {
    if (e.points == 0) continue;
    const auto [n_ttft, n_tpot] = latency_points[k];
    e.total_tok_s_pct = std::sqrt(e.total_tok_s_pct / e.points);
    e.ttft_pct = n_ttft > 0 ? std::sqrt(e.ttft_pct / n_ttft) : -1.0;
    e.tpot_pct = n_tpot > 0 ? std::sqrt(e.tpot_pct / n_tpot) : -1.0;
  }
  v.bands.gpus.assign(gpus.begin(), gpus.end());
  v.bands.variants.assign(variants.begin(), variants.end());
  v.bands.versions.assign(versions.begin(), versions.end());
  v.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return v;
}

namespace {

std::string summary_line(const std::string& name, const ValidationSummary& s) {
  auto pct = [](int n, double v) { return n ? fmt::format("{:.1f}%", v) : std::string("-"); };
  const bool g3 = s.spearman_groups > 0;
  return fmt::format("{:<34} {:>6} {:>9} {:>8} {:>7} {:>10} {:>9} {:>9} {:>8} {:>6} {:>6} {:>7}\n", name, s.points,
                     s.predicted, s.predicted_failures, s.refused, pct(s.compared_tok_s, s.mape_total_tok_s),
                     pct(s.compared_ttft, s.mape_ttft), pct(s.compared_tpot, s.mape_tpot),
                     s.groups ? fmt::format("{}/{}", s.groups_same_winner, s.groups) : std::string("-"),
                     g3 ? fmt::format("{:.2f}", s.mean_spearman) : std::string("-"),
                     g3 ? fmt::format("{}/{}", s.groups_best_in_top3, s.spearman_groups) : std::string("-"),
                     g3 ? fmt::format("{:.1f}%", s.mean_regret) : std::string("-"));
}

}  // namespace

std::string format_corpus_validation(const CorpusValidation& v, bool per_point) {
  std::string s;
  s += "servelab sim validate --corpus: leave-one-study-out (fit on every other study, predict the one left out)\n\n";
  const std::string header = fmt::format("{:<34} {:>6} {:>9} {:>8} {:>7} {:>10} {:>9} {:>9} {:>8} {:>6} {:>6} {:>7}\n",
                                         "study", "points", "predicted", "failures", "refused", "tok/s MAPE",
                                         "TTFT MAPE", "TPOT MAPE", "winner", "rho", "top3", "regret");
  s += header;
  for (const auto& st : v.studies) {
    s += summary_line(st.study, st.held_out);
    for (const auto& g : st.group_lines) s += g + "\n";
  }
  s += summary_line("ALL (held out)", v.held_out);
  const auto& h = v.held_out;
  s += fmt::format(
      "\nSummary (held out): {} points; {} predicted, {} predicted to fail, {} refused; measured failures {}: {} "
      "reproduced, {} unexplained; total tok/s MAPE {:.1f}% over {} points (target <= 15%); mean TTFT MAPE {:.1f}% "
      "over {} (target <= 30%); mean TPOT MAPE {:.1f}% over {} (target <= 30%); winner right in {}/{} (study, "
      "workload) groups (target >= 80%); over the {} groups of 3 or more configurations: mean Spearman rho {:.2f}, "
      "the measured best in the twin's top 3 in {} (target >= 90%), mean regret of taking the twin's pick {:.1f}% "
      "(target <= 5%). A group's objective comes from its runs (sim::latency_objective).\n",
      h.points, h.predicted, h.predicted_failures, h.refused, h.failures_measured, h.failures_reproduced,
      h.failures_unexplained, h.mape_total_tok_s, h.compared_tok_s, h.mape_ttft, h.compared_ttft, h.mape_tpot,
      h.compared_tpot, h.groups_same_winner, h.groups, h.spearman_groups, h.mean_spearman, h.groups_best_in_top3,
      h.mean_regret);
  const auto& hm = v.held_out_modelled;
  s += fmt::format(
      "Held out, without the {} points on a kernel path the twin has no figure for (listed below): total tok/s "
      "MAPE {:.1f}% over {}, mean TTFT MAPE {:.1f}% over {}, mean TPOT MAPE {:.1f}% over {}, winner {}/{}.\n",
      h.points - hm.points, hm.mape_total_tok_s, hm.compared_tok_s, hm.mape_ttft, hm.compared_ttft, hm.mape_tpot,
      hm.compared_tpot, hm.groups_same_winner, hm.groups);
  s += "\nIn-sample (fit on every study, then predicting the same studies; NOT a held-out figure):\n" + header;
  for (const auto& st : v.studies) s += summary_line(st.study, st.in_sample);
  s += summary_line("ALL (in-sample)", v.in_sample);
  if (!v.full_fit.on_bound.empty()) {
    s += "\nFitted parameters on a bound (a defect of the model, not written to calibration.json):\n";
    for (const auto& b : v.full_fit.on_bound) s += "  " + b + "\n";
  }
  s += "\nRefusals (the twin does not predict these, with the reason):\n";
  for (const auto& r : v.rows)
    if (r.refusal) s += fmt::format("  {:<34} {}\n", r.point->id, *r.refusal);
  s += "\nMeasured failures the twin does not reproduce:\n";
  for (const auto& r : v.rows)
    if (r.point->status == CorpusPoint::Status::kFailed && !r.failure_reproduced)
      s += fmt::format("  {:<34} {}\n", r.point->id, r.note);
  s += "\nPredicted failures of runs that were measured:\n";
  for (const auto& r : v.rows)
    if (r.predicted_failure && r.point->status != CorpusPoint::Status::kFailed &&
        r.point->status != CorpusPoint::Status::kWithheld)
      s += fmt::format("  {:<34} {}\n", r.point->id, *r.predicted_failure);
  s += "\nPoints left out of the fit (a kernel path the twin has no figure for; still predicted and scored):\n";
  for (const auto& r : v.rows)
    for (const auto& u : r.unmodelled) s += fmt::format("  {:<34} {}\n", r.point->id, u);
  s += "\nPoints outside the band (held-out total tok/s error beyond 30%), for the model's next revision:\n";
  for (const auto& r : v.rows)
    if (r.err_total_tok_s && std::fabs(*r.err_total_tok_s) > 30)
      s += fmt::format("  {:<34} {:+6.0f}%  {}  [{} / {}]\n", r.point->id, *r.err_total_tok_s, r.point->label,
                       r.calibration_class, r.calibration_level);
  if (per_point) {
    s += "\nEvery point (held out: measured / predicted / error):\n";
    for (const auto& r : v.rows) {
      const auto& c = *r.point;
      s += fmt::format("  {:<34} {:<8} {:<9}", c.id, c.engine, corpus_status_name(c.status));
      if (r.refusal) {
        s += " refused: " + *r.refusal + "\n";
        continue;
      }
      if (r.predicted_failure) {
        s += " predicted failure: " + *r.predicted_failure + "\n";
        continue;
      }
      if (!r.predicted) {
        s += "\n";
        continue;
      }
      const auto& p = *r.predicted;
      auto cell = [](const std::optional<double>& m, double pr, const std::optional<double>& e) {
        return m ? fmt::format("{:.4g}/{:.4g} {:+.0f}%", *m, pr, e.value_or(0)) : fmt::format("-/{:.4g}", pr);
      };
      std::string in_sample;
      if (r.in_sample && c.measured.total_tok_s && *c.measured.total_tok_s > 0)
        in_sample = fmt::format(" (in-sample {:+.0f}%)", rel_err(r.in_sample->total_tok_s, *c.measured.total_tok_s));
      s += fmt::format(" tok/s {}  TTFT {}  TPOT {}  [{} {}]{}\n", cell(c.measured.total_tok_s, p.total_tok_s, r.err_total_tok_s),
                       cell(c.measured.mean_ttft_ms, p.mean_ttft_ms, r.err_ttft),
                       cell(c.measured.mean_tpot_ms, p.mean_tpot_ms, r.err_tpot), r.calibration_class,
                       r.calibration_level, in_sample);
      for (const auto& nc : c.not_comparable) s += "      not comparable: " + nc + "\n";
    }
  }
  s += fmt::format("\nValidation took {:.1f} s.\n", v.seconds);
  return s;
}

std::string calibration_json_of(const CorpusValidation& v) {
  if (!v.full_fit.on_bound.empty()) {
    std::string msg = "the fit ended on a bound (a defect of the model, not written):";
    for (const auto& b : v.full_fit.on_bound) msg += "\n  " + b;
    throw std::runtime_error(msg);
  }
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(calibration_table_to_json(
      v.full_fit.table,
      "Fitted parameters of the engine twin (include/servelab/sim/calibration.h), in-sample fit on the released corpus "
      "(shared/reference: seed-measurements.json + perflab/measurements.json). Written by `servelab sim calibrate "
      "--corpus ../shared/reference --write src/sim/calibration.json`; bands are the leave-one-study-out RMS "
      "errors per class."));
  nlohmann::ordered_json bands = nlohmann::ordered_json::object();
  auto r1 = [](double x) { return std::round(x * 10) / 10; };
  for (const auto& [k, e] : v.bands.classes)
    bands[k] = {{"total_tok_s_pct", r1(e.total_tok_s_pct)}, {"ttft_pct", r1(e.ttft_pct)}, {"tpot_pct", r1(e.tpot_pct)},
                {"points", e.points}};
  j["bands"] = bands;
  j["coverage"] = {{"gpus", v.bands.gpus}, {"variants", v.bands.variants}, {"versions", v.bands.versions},
                   {"max_gpus", v.bands.max_gpus}};
  return j.dump(1) + "\n";
}

}  // namespace servelab::sim
