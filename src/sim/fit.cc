#include "servelab/sim/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <thread>

#include "servelab/engines/engine_module.h"
#include "servelab/engines/engines.h"
#include "servelab/model/model.h"
#include "servelab/schedule/rng.h"

namespace servelab::sim {
namespace {

bool modelled_engine(const std::string& e) {
  return engines::find_engine_module(e) != nullptr;
}

// Applies the option file the launch names (vLLM/SGLang --config, TRT-LLM --extra_llm_api_options) from the
// point's own config_files (by the name in the argv, else by its file name), as engines::apply_config_files
// does from disk. Throws std::runtime_error naming the flag when the point has no text for it or its YAML is
// not understood; engines::EngineArgError when a key is not an option of that release.
engines::LaunchConfig corpus_apply_config_file(const engines::LaunchConfig& config, const CorpusPoint& c) {
  const engines::EngineConfigFile& file = engines::engine_module(config.kind).config_file;
  const std::string& path = config.*file.path;
  if (path.empty()) return config;
  const char* flag = file.flag;
  auto it = c.config_files.find(path);
  if (it == c.config_files.end()) it = c.config_files.find(std::filesystem::path(path).filename().string());
  if (it == c.config_files.end())
    throw std::runtime_error(fmt::format("{} {}: the corpus point gives no text for this file", flag, path));
  try {
    return engines::apply_config_yaml(config, it->second);
  } catch (const std::invalid_argument& e) {
    throw std::runtime_error(fmt::format("{} {}: {}", flag, path, e.what()));
  }
}

// A random dataset with per-request lengths drawn as benchmark_serving.py's sample_random_requests draws
// them (vLLM benchmarks/benchmark_serving.py, the copy InferenceMAX runs): np.random.seed(0) (its default
// --seed), then np.random.randint(int(input_len * ratio), input_len + 1, size=n) for the inputs and the
// same for the outputs [recalled; the client's commit is not recorded, so the draws are its distribution,
// not necessarily its exact requests].
std::vector<WorkloadRequest> corpus_random_range(int n, int input_len, int output_len, double ratio) {
  schedule::NumpyRandomState rng(0);
  std::vector<WorkloadRequest> w(n);
  const auto lo_in = static_cast<std::int64_t>(input_len * ratio),
             lo_out = static_cast<std::int64_t>(output_len * ratio);
  for (auto& r : w) r.prompt_len = std::max<int>(1, static_cast<int>(rng.randint(lo_in, input_len + 1)));
  for (auto& r : w) r.output_len = std::max<int>(1, static_cast<int>(rng.randint(lo_out, output_len + 1)));
  return w;
}

}  // namespace

std::vector<PreparedPoint> prepare_corpus(const Corpus& corpus) {
  std::vector<PreparedPoint> out;
  out.reserve(corpus.points.size());
  for (const auto& c : corpus.points) {
    PreparedPoint p;
    p.point = &c;
    out.push_back(std::move(p));
    PreparedPoint& q = out.back();
    if (c.status == CorpusPoint::Status::kUnsupported) {
      q.refusal = c.refusal;
      continue;
    }
    if (!modelled_engine(c.engine)) {
      q.refusal = fmt::format("engine \"{}\" is not modelled (the twin models vLLM, SGLang and TensorRT-LLM)",
                              c.engine);
      continue;
    }
    try {
      q.cluster = hardware::parse_cluster(fmt::format("{}x{}", c.gpu_count, c.gpu));
    } catch (const std::exception& e) {
      q.refusal = std::string("hardware: ") + e.what();
      continue;
    }
    if (auto f = gpu_not_modelled(q.cluster)) {
      q.refusal = f->message;
      continue;
    }
    engines::LaunchConfig config;
    try {
      config = corpus_apply_config_file(engines::parse_launch_command(c.argv, c.env, c.engine_version), c);
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
    const int n = c.measured.successful && *c.measured.successful > 0
                      ? std::min(*c.measured.successful, w.num_prompts)
                      : w.num_prompts;
    if (n < 1) {
      q.refusal = "workload: no requests";
      continue;
    }
    if (w.dataset == "random" && w.random_range_ratio && *w.random_range_ratio < 1.0) {
      q.workload =
          corpus_random_range(n, std::max(1, w.input_len), std::max(1, w.output_len), *w.random_range_ratio);
    } else if (w.dataset == "random") {
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
  return p.launch && !p.refusal && !p.predicted_failure && p.launch->unmodelled.empty() && p.meas_tok_s &&
         *p.meas_tok_s > 0;
}

PredictResult predict_point(const PreparedPoint& p, const CalibrationTable& table, Trace* trace) {
  if (p.refusal) return PredictedFailure{*p.refusal, PredictedFailure::Kind::kUnsupported};
  if (p.predicted_failure) return PredictedFailure{*p.predicted_failure, PredictedFailure::Kind::kStartup};
  WorkloadOptions o = p.options;
  o.calibration = table;
  o.trace = trace;
  o.per_token_timings = false;  // the headline metrics only
  return predict_resolved(*p.launch, p.cluster, p.workload, o);
}

namespace {

constexpr double kHuberDelta = 0.6931471805599453;  // ln 2
constexpr double kLambdaPrior = 1.0;                // shrinkage of a class towards its engine's prior
constexpr double kPriorPseudoPoints = 2.0;          // weight of the prior in an engine's pooled value
// A class fitted on fewer points is not used on its own: its few points (often one latency run, which says
// nothing of the compute-bound kernel scale) go into the pools, and lookups fall back to the family with its
// generation's factor.
constexpr int kMinClassPoints = 3;
constexpr double kWeightThroughput = 4.0;
// The engine-level fields of the paths only some launches take (api_stream_request_us, eager_launch_us,
// harmony_api_share) are each first placed by a grid over its bounds (a floor on the step binds only above
// some value: a local search from the prior sees a flat objective). The API-stream and harmony priors are
// estimates with no source, so those two are shrunk towards them ten times more weakly than the other
// fields. eager_launch_us is a per-kernel CPU cost with a physical scale (a PyTorch op dispatch, ~10-20 us
// [recalled]) and is shrunk as the other fields are: weakly shrunk, it absorbed what the twin does not
// explain in a few runs into 73-95 us per kernel (TensorRT-LLM: Qwen3-32B on one H100, tok/s 40-97% over),
// which then floored every eager prefill of that engine on other models and GPUs (gpt-oss-120b on B200: a
// flat ~47 ms, TTFT 39% held out). Where the data need more (SGLang's eager prefill: ~60 us), it still moves.
constexpr int kPathFieldsFirst = kCalibrationOptionalFieldsFirst;
constexpr double kLambdaPathPrior = 0.1;
constexpr int kPathGridPoints = 9;
// How alike merged trace steps must be (compress_trace): replay then moves by at most 0.1% of their time,
// well inside any measurement's noise. Measured on the InferenceMAX corpus (`sim validate --corpus
// ../shared/reference/inferencemax`): 60.1 M traced steps -> 3.65 M, the fold refits 16x faster, the
// output byte-identical to the uncompressed replay's.
constexpr double kTraceTolerance = 1e-3;

double prior_weight(int k) {
  if (k == kPathFieldsFirst + 1) return kLambdaPrior;  // eager_launch_us (above)
  return k >= kPathFieldsFirst ? kLambdaPathPrior : kLambdaPrior;
}

// Whether field k of the calibration changes the replay of `t`: the path fields only when it takes their
// path (streamed chunks, eager kernels, harmony rendering); the others always. Where it does not, the replay
// is bit-identical whatever the field's value (its term is a 0 that never wins a max).
bool field_moves(int k, const Trace& t) {
  auto any_positive = [](const std::vector<float>& column) {
    return std::any_of(column.begin(), column.end(), [](float v) { return v > 0; });
  };
  if (k == kPathFieldsFirst) return any_positive(t.steps.api_stream_chunks);
  if (k == kPathFieldsFirst + 1) return any_positive(t.steps.launch_kernels);
  if (k == kPathFieldsFirst + 2) return t.harmony_chat;
  return true;
}

double huber(double d) {
  const double a = std::fabs(d);
  return a <= kHuberDelta ? d * d : 2 * kHuberDelta * a - kHuberDelta * kHuberDelta;
}

// Cauchy's redescending loss at the same scale: an error of 10x pulls a quarter as hard as under Huber's,
// 30x a fifth. The mean TTFT of a measured run can carry a one-off stall no launch parameter explains
// (InferenceMAX DeepSeek-R1 SGLang runs: p99 TTFT 70-80 s beside a median of 0.3-2 s, in some repeats of a
// configuration and not in others); under Huber's constant pull a class's few such runs moved its shared
// kernel scale to its bound. Throughput and TPOT average thousands of tokens, so they keep Huber's loss.
double cauchy(double d) {
  return kHuberDelta * kHuberDelta * std::log1p((d / kHuberDelta) * (d / kHuberDelta));
}

double point_loss(const PreparedPoint& p, const HeadlineMetrics& h) {
  if (h.completed == 0 || h.total_tok_s <= 0) return 50.0;
  double l = kWeightThroughput * huber(std::log(h.total_tok_s / *p.meas_tok_s));
  if (p.meas_ttft_ms && *p.meas_ttft_ms > 0 && h.mean_ttft_ms > 0)
    l += cauchy(std::log(h.mean_ttft_ms / *p.meas_ttft_ms));
  if (p.meas_tpot_ms && *p.meas_tpot_ms > 0 && h.mean_tpot_ms > 0)
    l += huber(std::log(h.mean_tpot_ms / *p.meas_tpot_ms));
  return l;
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

void parallel_for(int n, int threads, const std::function<void(int)>& f) {
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

namespace {

// Pattern search in log space over the fields `fields` of `x`, minimising f within the bounds.
std::vector<double> pattern_search(std::vector<double> x, const std::vector<int>& fields,
                                   const std::function<double(const std::vector<double>&)>& f,
                                   double* best_out) {
  std::vector<double> lo(kCalibrationFields), hi(kCalibrationFields);
  for (int k = 0; k < kCalibrationFields; ++k)
    lo[k] = std::log(kCalibrationBounds[k].lo), hi[k] = std::log(kCalibrationBounds[k].hi);
  double best = f(x);
  std::vector<double> step(kCalibrationFields, 0.5);
  for (int iter = 0; iter < 80; ++iter) {
    bool improved = false;
    for (int k : fields) {
      for (double dir : {1.0, -1.0}) {
        std::vector<double> y = x;
        y[k] = std::clamp(y[k] + dir * step[k], lo[k], hi[k]);
        if (y[k] == x[k]) continue;
        const double v = f(y);
        if (v < best - 1e-12) {
          best = v;
          x = y;
          improved = true;
          break;
        }
      }
    }
    if (!improved) {
      bool done = true;
      for (int k : fields) {
        step[k] *= 0.5;
        done = done && step[k] < 0.03;
      }
      if (done) break;
    }
  }
  if (best_out) *best_out = best;
  return x;
}

std::vector<double> study_weights(const std::vector<const PreparedPoint*>& points) {
  std::map<std::string, int> per_study;
  for (const auto* p : points) ++per_study[p->point->study];
  std::vector<double> w(points.size());
  for (std::size_t i = 0; i < points.size(); ++i)
    w[i] = 1.0 / std::sqrt(double(per_study[points[i]->point->study]));
  return w;
}

}  // namespace

ClassFit fit_class(const CalibrationKey& key, const std::vector<const PreparedPoint*>& points,
                   const std::vector<const Trace*>& traces, const Calibration& engine_fields) {
  ClassFit fit;
  fit.key = key;
  fit.points = static_cast<int>(points.size());
  std::set<std::string> studies;
  for (const auto* p : points) studies.insert(p->point->study);
  fit.studies = static_cast<int>(studies.size());
  const std::vector<double> weight = study_weights(points);
  const std::vector<double> prior = logv(calibration_prior(key.engine));
  std::vector<double> start = logv(engine_fields);
  for (int k = 0; k < kClassFields; ++k) start[k] = prior[k];
  auto objective = [&](const std::vector<double>& x) {
    const Calibration cal = from_log(x);
    double f = 0;
    for (std::size_t i = 0; i < points.size(); ++i) {
      f += weight[i] * point_loss(*points[i], replay(*traces[i], cal));
      ++fit.replays;
    }
    for (int k = 0; k < kClassFields; ++k) f += kLambdaPrior * (x[k] - prior[k]) * (x[k] - prior[k]);
    return f;
  };
  fit.objective_prior = objective(start);
  const auto x = pattern_search(start, {0, 1, 2}, objective, &fit.objective);
  fit.cal = from_log(x);
  return fit;
}

ClassFit ClassFitMemo::get(const std::string& key, const std::vector<const PreparedPoint*>& points,
                           const std::vector<const Trace*>& traces, const std::function<ClassFit()>& fit) {
  std::vector<const void*> ids(points.begin(), points.end());
  ids.insert(ids.end(), traces.begin(), traces.end());
  auto k = std::make_tuple(key, std::move(ids));
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = fits_.find(k); it != fits_.end()) return it->second;
  }
  ClassFit f = fit();  // outside the lock: two folds may compute the same fit, which is deterministic
  std::lock_guard<std::mutex> lock(mu_);
  return fits_.emplace(std::move(k), std::move(f)).first->second;
}

std::vector<ClassFit> fit_engine(const std::string& engine, const std::vector<const PreparedPoint*>& points,
                                 const std::vector<const Trace*>& traces, int threads, ClassFitMemo* memo) {
  std::map<std::string, std::vector<int>> by_class;
  for (std::size_t i = 0; i < points.size(); ++i)
    by_class[points[i]->key.name()].push_back(static_cast<int>(i));
  std::vector<std::pair<std::string, std::vector<int>>> classes(by_class.begin(), by_class.end());
  Calibration engine_fields = calibration_prior(engine);
  std::vector<ClassFit> fits(classes.size());
  const std::vector<double> weight = study_weights(points);
  const std::vector<double> prior = logv(calibration_prior(engine));
  std::vector<std::vector<char>> moves(kCalibrationFields, std::vector<char>(points.size()));
  for (int k = 0; k < kCalibrationFields; ++k)
    for (std::size_t i = 0; i < points.size(); ++i) moves[k][i] = field_moves(k, *traces[i]);
  for (int round = 0; round < 2; ++round) {
    parallel_for(static_cast<int>(classes.size()), threads, [&](int c) {
      std::vector<const PreparedPoint*> pts;
      std::vector<const Trace*> trs;
      for (int i : classes[c].second) pts.push_back(points[i]), trs.push_back(traces[i]);
      const CalibrationKey& key = points[classes[c].second.front()]->key;
      auto fit = [&] { return fit_class(key, pts, trs, engine_fields); };
      fits[c] = round == 0 && memo ? memo->get(classes[c].first, pts, trs, fit) : fit();
    });
    // The engine's fields over all its points, each with its class's fields.
    std::vector<int> class_of(points.size());
    for (std::size_t c = 0; c < classes.size(); ++c)
      for (int i : classes[c].second) class_of[i] = static_cast<int>(c);
    // The last evaluation's point and per-point losses: a step that moves only path fields re-times only
    // the traces that take those paths (field_moves), the others keep their loss (bit-identical).
    std::vector<double> partial(points.size()), last_x;
    auto objective = [&](const std::vector<double>& x) {
      std::vector<int> moved;
      for (int k = kClassFields; k < kCalibrationFields && !last_x.empty(); ++k)
        if (x[k] != last_x[k]) moved.push_back(k);
      const bool all = last_x.empty() ||
                       std::any_of(moved.begin(), moved.end(), [](int k) { return k < kPathFieldsFirst; });
      parallel_for(static_cast<int>(points.size()), threads, [&](int i) {
        if (!all && std::none_of(moved.begin(), moved.end(), [&](int k) { return moves[k][i]; })) return;
        std::vector<double> y = logv(fits[class_of[i]].cal);
        for (int k = kClassFields; k < kCalibrationFields; ++k) y[k] = x[k];
        partial[i] = weight[i] * point_loss(*points[i], replay(*traces[i], from_log(y)));
      });
      last_x = x;
      double f = 0;
      for (double v : partial) f += v;
      for (int k = kClassFields; k < kCalibrationFields; ++k)
        f += prior_weight(k) * (x[k] - prior[k]) * (x[k] - prior[k]);
      return f;
    };
    // The fields the engine's points move (the others stay at their prior), the path fields placed by a
    // grid first, then a pattern search over all of them.
    std::vector<int> live;
    for (int k = kClassFields; k < kCalibrationFields; ++k)
      if (std::find(moves[k].begin(), moves[k].end(), 1) != moves[k].end()) live.push_back(k);
    std::vector<double> x0 = logv(engine_fields);
    for (int k : live) {
      if (k < kPathFieldsFirst) continue;
      const double lo = std::log(kCalibrationBounds[k].lo), hi = std::log(kCalibrationBounds[k].hi);
      double best = objective(x0);
      std::vector<double> y = x0;
      for (int g = 0; g < kPathGridPoints; ++g) {
        y[k] = lo + (hi - lo) * g / (kPathGridPoints - 1);
        if (const double v = objective(y); v < best) best = v, x0[k] = y[k];
      }
    }
    const auto x = pattern_search(x0, live, objective, nullptr);
    engine_fields = from_log(x);
  }
  for (auto& f : fits) {
    auto v = logv(f.cal);
    const auto e = logv(engine_fields);
    for (int k = kClassFields; k < kCalibrationFields; ++k) v[k] = e[k];
    f.cal = from_log(v);
  }
  return fits;
}

namespace {

/// The two-way model of the pooled kernel_scale (calibration.h, "GPU-generation factor"):
/// ln ks(class) = a(group) + g(generation), by alternating weighted means (weights: points), each term
/// shrunk towards 0 with kPriorPseudoPoints. `group_of` names a class's group (its family or engine).
/// Returns (a by group, g by generation).
std::pair<std::map<std::string, double>, std::map<std::string, double>> kernel_scale_two_way(
    const std::vector<ClassFit>& fits, const std::function<std::string(const ClassFit&)>& group_of) {
  std::map<std::string, double> a, g;
  for (const auto& f : fits) a[group_of(f)] = 0, g[f.key.generation] = 0;
  for (int iter = 0; iter < 50; ++iter) {
    std::map<std::string, std::pair<double, double>> sa, sg;  // (weighted sum, weight)
    for (const auto& f : fits) {
      auto& s = sa[group_of(f)];
      s.first += f.points * (std::log(f.cal.kernel_scale) - g[f.key.generation]);
      s.second += f.points;
    }
    for (auto& [k, s] : sa) a[k] = s.first / (s.second + kPriorPseudoPoints);
    for (const auto& f : fits) {
      auto& s = sg[f.key.generation];
      s.first += f.points * (std::log(f.cal.kernel_scale) - a[group_of(f)]);
      s.second += f.points;
    }
    for (auto& [k, s] : sg) g[k] = s.first / (s.second + kPriorPseudoPoints);
  }
  return {a, g};
}

}  // namespace

CalibrationTable assemble_table(const std::vector<ClassFit>& fits) {
  CalibrationTable t;
  std::map<std::string, std::vector<const ClassFit*>> by_engine;
  for (const auto& f : fits) {
    by_engine[f.key.engine].push_back(&f);
    if (f.points < kMinClassPoints) continue;
    auto& e = t.classes[f.key.name()];
    e.cal = f.cal;
    e.points = f.points;
    e.studies = f.studies;
  }
  // Pools: log-space mean of the classes weighted by points, the engine's prior counted as 2 points;
  // kernel_scale from the two-way model instead (generation-neutral, the generation's factor applied at
  // lookup).
  auto pool = [](const std::string& engine, const std::vector<const ClassFit*>& list, double ln_kernel_scale,
                 CalibrationTable::Entry& e) {
    const auto prior = logv(calibration_prior(engine));
    std::vector<double> x(kCalibrationFields);
    double w = kPriorPseudoPoints;
    for (int k = 0; k < kCalibrationFields; ++k) x[k] = kPriorPseudoPoints * prior[k];
    for (const auto* f : list) {
      const auto v = logv(f->cal);
      for (int k = 0; k < kCalibrationFields; ++k) x[k] += f->points * v[k];
      w += f->points;
      e.points += f->points;
      e.studies += f->studies;
    }
    for (auto& v : x) v /= w;
    // Generation-neutral, kept within the field's bounds like every stored value (calibration.json is
    // checked against them on load).
    x[0] =
        std::clamp(ln_kernel_scale, std::log(kCalibrationBounds[0].lo), std::log(kCalibrationBounds[0].hi));
    e.cal = from_log(x);
  };
  const auto [by_family_a, gen_g] =
      kernel_scale_two_way(fits, [](const ClassFit& f) { return f.key.version_family; });
  const auto by_engine_a = kernel_scale_two_way(fits, [](const ClassFit& f) { return f.key.engine; }).first;
  std::map<std::string, std::vector<const ClassFit*>> by_family;
  for (const auto& f : fits) by_family[f.key.version_family].push_back(&f);
  for (const auto& [family, list] : by_family)
    pool(list.front()->key.engine, list, by_family_a.at(family), t.families[family]);
  for (const auto& [engine, list] : by_engine) pool(engine, list, by_engine_a.at(engine), t.engines[engine]);
  for (const auto& [gen, g] : gen_g) {
    auto& out = t.generations[gen];
    out.kernel_scale_factor = std::clamp(std::exp(g), kGenerationFactorBounds.lo, kGenerationFactorBounds.hi);
    for (const auto& f : fits)
      if (f.key.generation == gen) out.points += f.points;
  }
  return t;
}

std::vector<std::string> fits_on_bound(const std::vector<ClassFit>& fits) {
  std::vector<std::string> out;
  for (const auto& f : fits) {
    const auto v = calibration_vector(f.cal);
    for (int k = 0; k < kCalibrationFields; ++k) {
      const auto& b = kCalibrationBounds[k];
      if (v[k] <= b.lo * 1.01 || v[k] >= b.hi * 0.99)
        out.push_back(fmt::format("{}.{} = {:.4g} ({} bound)", f.key.name(), kCalibrationFieldNames[k], v[k],
                                  v[k] <= b.lo * 1.01 ? "lower" : "upper"));
    }
  }
  return out;
}

FitResult fit_calibration(const std::vector<const PreparedPoint*>& points, const FitOptions& opt) {
  FitResult res;
  const int n = static_cast<int>(points.size());
  res.points = n;
  std::map<std::string, std::vector<int>> by_class;
  for (int i = 0; i < n; ++i) by_class[points[i]->key.name()].push_back(i);
  auto simulate_all = [&](const CalibrationTable& table, std::vector<Trace>& out) {
    out.assign(n, Trace{});
    parallel_for(n, opt.threads, [&](int i) {
      predict_point(*points[i], table, &out[i]);
      out[i] = compress_trace(out[i], kTraceTolerance);
    });
  };
  auto fit_all = [&](const std::vector<Trace>& traces) {
    std::map<std::string, std::vector<int>> by_engine;
    for (int i = 0; i < n; ++i) by_engine[points[i]->key.engine].push_back(i);
    std::vector<ClassFit> fits;
    for (const auto& [engine, idx] : by_engine) {
      std::vector<const PreparedPoint*> pts;
      std::vector<const Trace*> trs;
      for (int i : idx) pts.push_back(points[i]), trs.push_back(&traces[i]);
      for (auto& f : fit_engine(engine, pts, trs, opt.threads)) fits.push_back(std::move(f));
    }
    return fits;
  };
  std::vector<Trace> prior;
  if (opt.prior_traces && static_cast<int>(opt.prior_traces->size()) == n)
    prior = *opt.prior_traces;
  else
    simulate_all(CalibrationTable{}, prior);
  const auto round1 = fit_all(prior);
  for (const auto& f : round1) res.objective_prior += f.objective_prior;
  res.prior_traces = std::move(prior);
  res.prior_classes = round1;
  if (opt.rounds >= 2) {
    simulate_all(assemble_table(round1), res.traces);
    res.classes = fit_all(res.traces);
  } else {
    res.classes = round1;
  }
  for (const auto& f : res.classes) res.objective += f.objective;
  res.table = assemble_table(res.classes);
  res.on_bound = fits_on_bound(res.classes);
  return res;
}

}  // namespace servelab::sim
