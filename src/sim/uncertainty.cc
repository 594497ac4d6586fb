#include "servelab/sim/uncertainty.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "servelab/engines/launch.h"
#include "servelab/hardware/hardware.h"
#include "servelab/model/model.h"
#include "servelab/sim/calibration.h"

namespace servelab::sim {

std::string architecture_class(const model::ModelSpec& m) {
  if (m.has_linear_attention()) return "hybrid";
  if (m.has_dsa()) return "dsa";  // sparse MLA: its own kernels (indexer, sparse core) and tables
  if (m.has_mla()) return "mla";
  if (m.has_sliding_window() && m.has_moe()) return "moe-swa";
  if (m.has_moe()) return "moe";
  return "dense";
}

namespace {

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The spread of the measured (engine, GPU generation, architecture) classes: per metric the RMS over the
// classes of at least kMinBandClassPoints points of each class's band, every class weighing the same (those
// without the metric left out). What a launch may expect whose class says little (never measured, or
// measured in one study), not knowing which measured class it resembles. `classes` = 0 when none qualifies.
struct ClassSpread {
  double pct[3] = {-1, -1, -1};  ///< tok/s, TTFT, TPOT
  int classes = 0;
};
ClassSpread class_spread(const BandTable& table) {
  ClassSpread spread;
  double sq[3] = {0, 0, 0};
  int n[3] = {0, 0, 0};
  for (const auto& [k, e] : table.classes) {
    if (k == kUnmodelledBandClass || std::count(k.begin(), k.end(), '/') != 2 ||
        e.points < kMinBandClassPoints)
      continue;
    const double v[3] = {e.total_tok_s_pct, e.ttft_pct, e.tpot_pct};
    for (int m = 0; m < 3; ++m)
      if (v[m] >= 0) sq[m] += v[m] * v[m], ++n[m];
    ++spread.classes;
  }
  for (int m = 0; m < 3; ++m) spread.pct[m] = n[m] ? std::sqrt(sq[m] / n[m]) : -1.0;
  return spread;
}

// A band that says little of the launch is no narrower than the spread of the measured classes, with
// `why` in a warning: a launch whose architecture class its engine never measured (or measured on fewer
// than kMinBandClassPoints points) on its GPU generation borrows other architectures' band (trtllm/
// blackwell: gpt-oss-120b only, ±10%, for a Llama-3.1-70B); a class of one study has one sample of how
// the twin fares from study to study (its 235 points are one sweep).
void widen_to_class_spread(ErrorBand& b, const BandTable& table, const std::string& why) {
  const ClassSpread spread = class_spread(table);
  if (spread.classes == 0) return;
  bool wider = false;
  auto raise = [&](double& pct, double to) {
    if (to > pct) pct = to, wider = true;
  };
  raise(b.total_tok_s_pct, spread.pct[0]);
  raise(b.ttft_pct, spread.pct[1]);
  raise(b.tpot_pct, spread.pct[2]);
  if (!wider) return;
  b.warnings.push_back(
      fmt::format("{}: the band is at least the spread of the {} measured engine/GPU/architecture classes",
                  why, spread.classes));
}

// The band of the first class of `levels` (finest first) with at least kMinBandClassPoints points, widened
// by kExtrapolationWiden per level it falls back and floored at the class spread where the class says
// little (widen_to_class_spread). False when no level has enough points.
bool class_band(ErrorBand& b, const BandTable& table, const std::string (&levels)[4],
                const std::string& arch) {
  double widen = 1.0;  // x kExtrapolationWiden per coarser class
  for (std::size_t i = 0; i < std::size(levels); ++i, widen *= kExtrapolationWiden) {
    auto it = table.classes.find(levels[i]);
    if (it == table.classes.end() || it->second.points < kMinBandClassPoints) continue;
    b.class_name = levels[i];
    b.total_tok_s_pct = it->second.total_tok_s_pct * widen;
    b.points = it->second.points;
    b.studies = it->second.studies;
    // A latency the class has no measurement of (< 0) comes from the first coarser class that has it.
    auto latency = [&](double BandTable::Entry::*field) {
      double w = widen;
      for (std::size_t j = i; j < std::size(levels); ++j, w *= kExtrapolationWiden) {
        auto c = table.classes.find(levels[j]);
        if (c != table.classes.end() && c->second.points >= kMinBandClassPoints && c->second.*field >= 0)
          return c->second.*field * w;
      }
      return 50.0;
    };
    b.ttft_pct = latency(&BandTable::Entry::ttft_pct);
    b.tpot_pct = latency(&BandTable::Entry::tpot_pct);
    if (i > 0) {
      const auto own = table.classes.find(levels[0]);
      const int n = own == table.classes.end() ? 0 : own->second.points;
      widen_to_class_spread(b, table,
                            n == 0
                                ? fmt::format("no {} launch of {} was measured", arch, levels[1])
                                : fmt::format("only {} held-out point{} of {} launches of {} (fewer than {})",
                                              n, n == 1 ? "" : "s", arch, levels[1], kMinBandClassPoints));
    } else if (b.studies == 1) {
      widen_to_class_spread(b, table, fmt::format("the {} band comes from one study", levels[0]));
    }
    return true;
  }
  return false;
}

}  // namespace

ErrorBand error_band(const engines::ResolvedLaunch& launch, const hardware::ClusterSpec& cluster,
                     const BandTable& table) {
  ErrorBand b;
  const std::string engine = engines::engine_kind_name(launch.config.kind);
  const std::string gen = hardware::generation_name(cluster.gpu.generation);
  const std::string arch = architecture_class(launch.model);
  const std::string levels[] = {engine + "/" + gen + "/" + arch, engine + "/" + gen, engine, "all"};
  bool found = false;
  if (!launch.unmodelled.empty()) {
    // The modelled classes' bands say nothing of a path without a figure: the RMS error of the corpus runs
    // on such paths, never under kUnmodelledBandMinPct.
    const auto it = table.classes.find(kUnmodelledBandClass);
    const auto* e = it != table.classes.end() && it->second.points > 0 ? &it->second : nullptr;
    b.class_name = kUnmodelledBandClass;
    b.points = e ? e->points : 0;
    b.total_tok_s_pct = std::max(kUnmodelledBandMinPct, e ? e->total_tok_s_pct : 0.0);
    b.ttft_pct = std::max(kUnmodelledBandMinPct, e ? e->ttft_pct : 0.0);
    b.tpot_pct = std::max(kUnmodelledBandMinPct, e ? e->tpot_pct : 0.0);
    b.warnings.push_back(fmt::format(
        "a kernel path the twin has no figure for: the band is the RMS error of the {} corpus runs on such "
        "paths, at least ±{:.0f}%",
        b.points, kUnmodelledBandMinPct));
    found = true;
  }
  if (!found) found = class_band(b, table, levels, arch);
  if (!found) {
    b.class_name = "none";
    b.total_tok_s_pct = b.ttft_pct = b.tpot_pct = 50;
    b.warnings.push_back("no validated class: the band is a default +-50%");
  }
  // Outside the corpus the held-out residuals say nothing: each way the launch is outside it (a GPU, a
  // scale - GPU count or nodes -, an architecture, an engine release the validation never measured) widens
  // the band by kExtrapolationWiden, what one coarser class costs above.
  int outside = 0;
  if (!table.gpus.empty() && !contains(table.gpus, cluster.gpu.name)) {
    b.warnings.push_back(fmt::format("{} was never measured in the validation corpus", cluster.gpu.name));
    ++outside;
  }
  const bool more_gpus = table.max_gpus > 0 && launch.layout.gpus > table.max_gpus;
  if (more_gpus)
    b.warnings.push_back(fmt::format("{} GPUs: the validation corpus has launches of at most {}",
                                     launch.layout.gpus, table.max_gpus));
  if (launch.layout.nodes > 1)
    b.warnings.push_back("multi-node launch: the validation corpus has single nodes only");
  if (more_gpus || launch.layout.nodes > 1) ++outside;
  // Decode without CUDA graphs is CPU-bound at small batches, where graphs hide the launches: an engine the
  // corpus never measured so (every run of it captured graphs) has an eager cost per kernel no small eager
  // step has tested.
  if (launch.execution.graphs == engines::GraphMode::kNone && !table.eager_decode_engines.empty() &&
      !contains(table.eager_decode_engines, engine)) {
    b.warnings.push_back(fmt::format(
        "{} decoding without CUDA graphs was never measured in the validation corpus (no run of it disabled "
        "them): its CPU cost per eagerly launched kernel was fitted, if at all, on steps beyond the captured "
        "sizes, where the GPU's work hides it, and an eager decode of small batches can be several times "
        "slower than the prediction",
        engine));
    ++outside;
  }
  if (!table.variants.empty() && !contains(table.variants, launch.model.variant)) {
    b.warnings.push_back(launch.model.model_type.empty() || launch.model.model_type == launch.model.variant
                             ? fmt::format("architecture {} was never measured", launch.model.variant)
                             : fmt::format("architecture {} (modelled as the {} variant) was never measured",
                                           launch.model.model_type, launch.model.variant));
    ++outside;
  }
  // A config the resolver assumed (a re-quantization's recipe taken from a sibling checkpoint) may weigh and
  // run differently from the checkpoint's own; a dated revision's undated config only warns (same weights
  // format, the corpus validates such launches).
  if (launch.model.config_assumption != model::ModelSpec::ConfigAssumption::kNone) {
    b.warnings.push_back(launch.model.config_assumption_note);
    // Another checkpoint's quantization recipe (a sibling's, or another publisher's for a quantized name):
    // the layers kept unquantized and the scale format may differ, one step wider.
    const auto a = launch.model.config_assumption;
    if (a == model::ModelSpec::ConfigAssumption::kBorrowedRecipe ||
        a == model::ModelSpec::ConfigAssumption::kQuantizationUnstated ||
        (a == model::ModelSpec::ConfigAssumption::kOtherPublisher &&
         launch.model.quantization.method != model::QuantMethod::kNone))
      ++outside;
  }
  const std::string version = engine + " " + launch.version;
  if (!table.versions.empty() && !contains(table.versions, version)) {
    b.warnings.push_back(fmt::format("{} was never validated", version));
    ++outside;
  }
  if (b.class_name != kUnmodelledBandClass) {
    const double w = std::pow(kExtrapolationWiden, outside);
    b.total_tok_s_pct *= w;
    b.ttft_pct *= w;
    b.tpot_pct *= w;
  }
  return b;
}

const BandTable& embedded_bands() {
  static const BandTable t = [] {
    BandTable b;
    const auto j = nlohmann::json::parse(embedded_calibration_json());
    if (j.contains("bands") && j["bands"].is_object())
      for (const auto& [k, v] : j["bands"].items())
        b.classes[k] = {v.value("total_tok_s_pct", 0.0), v.value("ttft_pct", 0.0), v.value("tpot_pct", 0.0),
                        v.value("points", 0), v.value("studies", 0)};
    if (j.contains("coverage") && j["coverage"].is_object()) {
      const auto& c = j["coverage"];
      for (const auto& x : c.value("gpus", nlohmann::json::array())) b.gpus.push_back(x.get<std::string>());
      for (const auto& x : c.value("variants", nlohmann::json::array()))
        b.variants.push_back(x.get<std::string>());
      for (const auto& x : c.value("versions", nlohmann::json::array()))
        b.versions.push_back(x.get<std::string>());
      b.max_gpus = c.value("max_gpus", 0);
      for (const auto& x : c.value("eager_decode_engines", nlohmann::json::array()))
        b.eager_decode_engines.push_back(x.get<std::string>());
    }
    return b;
  }();
  return t;
}

std::string format_band(const ErrorBand& b) {
  // A band of 100% or more has no lower end (a throughput or latency is never negative): it says where the
  // measured value may lie. An error of −100% is a prediction many times too low (−95% is 20x), so that side
  // has no bound (new-user trial: "±100% TTFT (up to 2.0x off)" beside a run measured 20x the prediction).
  auto one = [](double pct, const char* what) {
    return pct >= 100
               ? fmt::format("±{:.0f}% {} (measured: from 1/{:.1f} of the prediction to many times it)", pct,
                             what, band_times_off(pct))
               : fmt::format("±{:.0f}% {}", pct, what);
  };
  const std::string studies = b.studies == 1  ? " of 1 study"
                              : b.studies > 1 ? fmt::format(" of {} studies", b.studies)
                                              : "";
  std::string s =
      fmt::format("{}, {}, {} ({}, {} held-out points{})", one(b.total_tok_s_pct, "tok/s"),
                  one(b.ttft_pct, "TTFT"), one(b.tpot_pct, "TPOT"), b.class_name, b.points, studies);
  for (const auto& w : b.warnings) s += "; warning: " + w;
  return s;
}

}  // namespace servelab::sim
