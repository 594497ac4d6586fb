#include "sim/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <thread>

#include "engines/engines.h"
#include "model/model.h"

namespace servelab::sim {
namespace {

bool modelled_engine(const std::string& e) { return e == "vllm" || e == "sglang" || e == "trtllm"; }

}  // namespace

std::vector<PreparedPoint> prepare_corpus(const Corpus& corpus) {
  std::vector<PreparedPoint> out;
  out.reserve(corpus.points.size());
  for (const auto& c : corpus.points) {
    PreparedPoint p;
    p.point = &c;
    out.push_back(std::move(p));
    PreparedPoint& q = out.back();
    if (!modelled_engine(c.engine)) {
      q.refusal = fmt::format("engine \"{}\" is not modelled (the twin models vLLM, SGLang and TensorRT-LLM)", c.engine);
      continue;
    }
    try {
      q.cluster = hardware::parse_cluster(fmt::format("{}x{}", c.gpu_count, c.gpu));
    } catch (const std::exception& e) {
      q.refusal = std::string("hardware: ") + e.what();
      continue;
    }
    if (!q.cluster.gpu.modelled) {
      q.refusal = fmt::format("the twin does not model {}: {}", q.cluster.gpu.name, q.cluster.gpu.unsupported_reason);
      continue;
    }
    engines::EngineConfig config;
    try {
      config = engines::parse_launch_command(c.argv, c.env, c.engine_version);
    } catch (const engines::EngineArgError& e) {
      q.predicted_failure = e.what();
      continue;
    } catch (const std::exception& e) {
      q.refusal = std::string("launch: ") + e.what();
      continue;
    }
    model::ModelSpec model;
    try {
      model = model::resolve_model(config.model);
    } catch (const std::exception& e) {
      q.refusal = std::string("model: ") + e.what();
      continue;
    }
    auto resolved = engines::resolve_launch(config, model, q.cluster);
    if (const auto* f = std::get_if<engines::LaunchFailure>(&resolved)) {
      q.predicted_failure = f->message;
      continue;
    }
    q.launch = std::get<engines::ResolvedLaunch>(std::move(resolved));
    q.key = calibration_key(*q.launch, q.cluster);
    const MemoryPlan plan = plan_memory(*q.launch, q.cluster);
    if (!plan.fits) {
      q.predicted_failure = plan.failure;
      continue;
    }
    // The workload: the run's own request count and token totals (see CorpusWorkload).
    const CorpusWorkload& w = c.workload;
    const int n = c.measured.successful && *c.measured.successful > 0 ? std::min(*c.measured.successful, w.num_prompts)
                                                                       : w.num_prompts;
    if (n < 1) {
      q.refusal = "workload: no requests";
      continue;
    }
    if (w.dataset == "random") {
      q.workload = random_fixed(n, std::max(1, w.input_len), std::max(1, w.output_len));
    } else {
      q.workload = sharegpt_workload(q.launch->model, n);
    }
    q.workload = scale_workload(std::move(q.workload), w.total_input_tokens, w.total_output_tokens);
    q.options.request_rate = w.request_rate;
    q.options.constant_arrivals = w.constant_arrivals;
    q.options.max_concurrency = w.max_concurrency;
    q.time_dependent = std::isfinite(w.request_rate);
    if (!c.suspect && (c.status == CorpusPoint::Status::kOk || c.status == CorpusPoint::Status::kPartial)) {
      q.meas_tok_s = c.measured.total_tok_s;
      q.meas_ttft_ms = c.measured.mean_ttft_ms;
      q.meas_tpot_ms = c.measured.mean_tpot_ms;
    }
  }
  return out;
}

bool trainable(const PreparedPoint& p) {
  return p.launch && !p.refusal && !p.predicted_failure && p.meas_tok_s && *p.meas_tok_s > 0;
}

PredictResult predict_point(const PreparedPoint& p, const CalibrationTable& table, Trace* trace) {
  if (p.refusal) return Failure{*p.refusal, Failure::Kind::kUnsupported};
  if (p.predicted_failure) return Failure{*p.predicted_failure, Failure::Kind::kStartup};
  WorkloadOptions o = p.options;
  o.calibration = table;
  o.trace = trace;
  return predict_resolved(*p.launch, p.cluster, p.workload, o);
}

namespace {

constexpr double kHuberDelta = 0.6931471805599453;  // ln 2
constexpr double kLambdaClass = 1.0, kLambdaEngine = 0.5;
constexpr double kWeightThroughput = 4.0;

double huber(double d) {
  const double a = std::fabs(d);
  return a <= kHuberDelta ? d * d : 2 * kHuberDelta * a - kHuberDelta * kHuberDelta;
}

double point_loss(const PreparedPoint& p, const HeadlineMetrics& h) {
  if (h.completed == 0 || h.total_tok_s <= 0) return 50.0;
  double l = kWeightThroughput * huber(std::log(h.total_tok_s / *p.meas_tok_s));
  if (p.meas_ttft_ms && *p.meas_ttft_ms > 0 && h.mean_ttft_ms > 0) l += huber(std::log(h.mean_ttft_ms / *p.meas_ttft_ms));
  if (p.meas_tpot_ms && *p.meas_tpot_ms > 0 && h.mean_tpot_ms > 0) l += huber(std::log(h.mean_tpot_ms / *p.meas_tpot_ms));
  return l;
}

// Runs f(i) for i in [0, n) on `threads` threads.
template <class F>
void parallel_for(int n, int threads, F f) {
  if (threads <= 0) threads = std::max(1u, std::thread::hardware_concurrency());
  threads = std::min(threads, std::max(1, n));
  if (threads <= 1) {
    for (int i = 0; i < n; ++i) f(i);
    return;
  }
  std::atomic<int> next{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (int i = next++; i < n; i = next++) f(i);
    });
  for (auto& th : pool) th.join();
}

std::vector<double> logv(const Calibration& c) {
  auto v = calibration_vector(c);
  for (auto& x : v) x = std::log(x);
  return v;
}

Calibration from_log(const std::vector<double>& x) {
  std::vector<double> v(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) v[i] = std::exp(x[i]);
  return calibration_from_vector(v);
}

}  // namespace

FitResult fit_calibration(const std::vector<const PreparedPoint*>& points, const FitOptions& opt) {
  FitResult res;
  res.points = static_cast<int>(points.size());
  const int n = static_cast<int>(points.size());
  // Study weights: 1/sqrt(points of the study in this training set).
  std::map<std::string, int> per_study;
  for (const auto* p : points) ++per_study[p->point->study];
  std::vector<double> weight(n);
  for (int i = 0; i < n; ++i) weight[i] = 1.0 / std::sqrt(double(per_study[points[i]->point->study]));
  // Classes and engines.
  std::map<std::string, std::vector<int>> by_class;
  std::map<std::string, std::set<std::string>> engine_classes;
  std::map<std::string, CalibrationKey> keys;
  for (int i = 0; i < n; ++i) {
    const auto& k = points[i]->key;
    by_class[k.name()].push_back(i);
    engine_classes[k.engine].insert(k.name());
    keys[k.name()] = k;
  }
  std::map<std::string, std::vector<double>> theta_class, theta_engine;
  for (const auto& [e, _] : engine_classes) theta_engine[e] = logv(calibration_prior(e));
  for (const auto& [c, _] : by_class) theta_class[c] = theta_engine[keys[c].engine];

  auto table_of = [&] {
    CalibrationTable t;
    for (const auto& [e, x] : theta_engine) {
      auto& entry = t.engines[e];
      entry.cal = from_log(x);
      std::set<std::string> studies;
      for (const auto& c : engine_classes[e])
        for (int i : by_class[c]) studies.insert(points[i]->point->study), ++entry.points;
      entry.studies = static_cast<int>(studies.size());
    }
    for (const auto& [c, x] : theta_class) {
      auto& entry = t.classes[c];
      entry.cal = from_log(x);
      std::set<std::string> studies;
      for (int i : by_class[c]) studies.insert(points[i]->point->study);
      entry.studies = static_cast<int>(studies.size());
      entry.points = static_cast<int>(by_class[c].size());
    }
    return t;
  };
  std::vector<double> lo(kCalibrationFields), hi(kCalibrationFields);
  for (int f = 0; f < kCalibrationFields; ++f) lo[f] = std::log(kCalibrationBounds[f].lo), hi[f] = std::log(kCalibrationBounds[f].hi);

  std::vector<Trace> traces(n);
  auto objective_of_class = [&](const std::string& c, const std::vector<double>& x) {
    const Calibration cal = from_log(x);
    double f = 0;
    for (int i : by_class[c]) {
      f += weight[i] * point_loss(*points[i], replay(traces[i], cal));
      ++res.replays;
    }
    const auto& e = theta_engine[keys[c].engine];
    for (int k = 0; k < kCalibrationFields; ++k) f += kLambdaClass * (x[k] - e[k]) * (x[k] - e[k]);
    return f;
  };
  auto total_objective = [&] {
    double f = 0;
    for (const auto& [c, x] : theta_class) f += objective_of_class(c, x);
    for (const auto& [e, x] : theta_engine) {
      const auto p = logv(calibration_prior(e));
      for (int k = 0; k < kCalibrationFields; ++k) f += kLambdaEngine * (x[k] - p[k]) * (x[k] - p[k]);
    }
    return f;
  };

  for (int round = 0; round < std::max(1, opt.rounds); ++round) {
    // Traces at the current parameters.
    if (round == 0 && opt.prior_traces && static_cast<int>(opt.prior_traces->size()) == n) {
      traces = *opt.prior_traces;
    } else {
      const CalibrationTable table = table_of();
      parallel_for(n, opt.threads, [&](int i) {
        Trace t;
        predict_point(*points[i], table, &t);
        traces[i] = std::move(t);
      });
    }
    if (round == 0) res.objective_prior = total_objective();
    for (int sweep = 0; sweep < std::max(1, opt.sweeps); ++sweep) {
      // Each class: coordinate pattern search in log space within the bounds.
      for (auto& [c, x] : theta_class) {
        double best = objective_of_class(c, x);
        std::vector<double> step(kCalibrationFields, 0.5);
        for (int iter = 0; iter < 60; ++iter) {
          bool improved = false;
          for (int k = 0; k < kCalibrationFields; ++k) {
            for (double dir : {1.0, -1.0}) {
              std::vector<double> y = x;
              y[k] = std::clamp(y[k] + dir * step[k], lo[k], hi[k]);
              if (y[k] == x[k]) continue;
              const double f = objective_of_class(c, y);
              if (f < best - 1e-12) {
                best = f;
                x = y;
                improved = true;
                break;
              }
            }
          }
          if (!improved) {
            bool done = true;
            for (auto& s : step) {
              s *= 0.5;
              done = done && s < 0.01;
            }
            if (done) break;
          }
        }
      }
      // Each engine: the closed-form pooled value between its classes and its prior.
      for (auto& [e, x] : theta_engine) {
        const auto p = logv(calibration_prior(e));
        const auto& cls = engine_classes[e];
        for (int k = 0; k < kCalibrationFields; ++k) {
          double s = kLambdaEngine * p[k];
          for (const auto& c : cls) s += kLambdaClass * theta_class[c][k];
          x[k] = s / (kLambdaEngine + kLambdaClass * cls.size());
        }
      }
    }
  }
  res.objective = total_objective();
  res.table = table_of();
  for (const auto& [c, x] : theta_class)
    for (int k = 0; k < kCalibrationFields; ++k) {
      const double v = std::exp(x[k]);
      const auto& b = kCalibrationBounds[k];
      if (v <= b.lo * 1.01 || v >= b.hi * 0.99)
        res.on_bound.push_back(fmt::format("{}.{} = {:.4g} ({} bound)", c, kCalibrationFieldNames[k], v,
                                           v <= b.lo * 1.01 ? "lower" : "upper"));
    }
  return res;
}

}  // namespace servelab::sim
