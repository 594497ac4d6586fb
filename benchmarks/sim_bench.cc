// The engine twin's speed (issue 8 §7):
//  (1) predicting a 1000-prompt ShareGPT run: target <= 20 ms, for DeepSeek-V3.2 on vLLM TP8 (8 x H200,
//      the reference study's baseline) and Qwen3-32B on vLLM (1 x H100, a dense model with many steps);
//  (2) every point of the released corpora (shared/reference and its inferencemax/) simulated once at the
//      priors on one thread (what each of validation's passes costs: two, four with --in-sample);
//  (3) leave-one-study-out over those corpora (`sim validate --corpus ../shared/reference --corpus
//      ../shared/reference/inferencemax`, without --in-sample): target <= 120 s (issue 29 §5).
// Reference measured in the same run: metrics::compute_metrics over the predicted ShareGPT outputs (what
// `bench serve` itself spends to summarise the same run). Prints times and the ratios to the reference
// and to the targets.
// Reproduce: cmake --build <build> --target sim_bench && <build>/benchmarks/sim_bench
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "servelab/common/paths.h"
#include "servelab/engines/engines.h"
#include "servelab/hardware/hardware.h"
#include "servelab/metrics/metrics.h"
#include "servelab/model/model.h"
#include "servelab/sim/corpus.h"
#include "servelab/sim/fit.h"
#include "servelab/sim/sim.h"
#include "servelab/sim/validate.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int time_prediction(const char* name, const std::string& command, const std::string& hardware) {
  using namespace servelab;
  const auto cluster = hardware::parse_cluster(hardware);
  const auto engine = engines::parse_launch_command(engines::split_command_line(command), {});
  const auto model = model::resolve_model(engine.model);
  const auto workload = sim::sharegpt_workload(model, 1000);
  double best = 1e9;
  sim::Prediction last;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = sim::predict(engine, cluster, model, workload, {});
    best = std::min(best, seconds_since(t0));
    if (auto* f = std::get_if<sim::PredictedFailure>(&r)) {
      std::printf("%s: predicted failure %s\n", name, f->message.c_str());
      return 1;
    }
    last = std::get<sim::Prediction>(std::move(r));
  }
  double ref = 1e9;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto m = metrics::compute_metrics(last.outputs, last.twin.duration_s, {});
    ref = std::min(ref, seconds_since(t0));
    if (m.completed != 1000) return 1;
  }
  std::printf(
      "%s: 1000-prompt ShareGPT prediction %.1f ms (target <= 20 ms: %.2fx of budget), %lld steps; "
      "compute_metrics on its outputs %.2f ms (ratio %.1fx)\n",
      name, best * 1e3, best / 0.020, last.twin.steps, ref * 1e3, best / ref);
  return 0;
}

}  // namespace

int main() {
  using namespace servelab;
  int rc =
      time_prediction("DeepSeek-V3.2, vLLM -tp 8, 8xH200",
                      "vllm serve deepseek-ai/DeepSeek-V3.2 -tp 8 --tokenizer-mode deepseek_v32", "8xH200");
  rc |=
      time_prediction("Qwen3-32B, vLLM, 1xH100", "vllm serve Qwen/Qwen3-32B --max-model-len 16384", "1xH100");
  const auto reference = common::source_dir().parent_path() / "shared" / "reference";
  const auto corpus = sim::load_corpora({reference, reference / "inferencemax"});
  const auto prepared = sim::prepare_corpus(corpus);
  auto t0 = std::chrono::steady_clock::now();
  long long predicted = 0;
  for (const auto& p : prepared)
    if (p.launch && std::holds_alternative<sim::Prediction>(sim::predict_point(p, {}))) ++predicted;
  std::printf("%lld of %zu corpus points simulated once at the priors, one thread: %.1f s\n", predicted,
              prepared.size(), seconds_since(t0));
  t0 = std::chrono::steady_clock::now();
  const auto v = sim::validate_corpus(corpus, 0, {}, {}, /*in_sample=*/false);
  const double s = seconds_since(t0);
  std::printf(
      "leave-one-study-out over %zu points of %zu studies: %.1f s (target <= 120 s: %.2fx of budget)\n",
      corpus.points.size(), corpus.studies.size(), s, s / 120.0);
  return rc;
}
