#include <regex>
#include <stdexcept>

#include "sim/sim.h"

namespace servelab::sim {
namespace {

const WorkloadRequest kShareGpt1000[] = {
#include "sim/sharegpt1000_lengths.inc"
};

}  // namespace

std::span<const WorkloadRequest> sharegpt_1000() { return kShareGpt1000; }

std::vector<WorkloadRequest> random_fixed(int num_prompts, int input_len, int output_len) {
  if (num_prompts < 1 || input_len < 1 || output_len < 1)
    throw std::invalid_argument("random workload needs num_prompts, input_len, output_len >= 1");
  return std::vector<WorkloadRequest>(num_prompts, WorkloadRequest{input_len, output_len});
}

std::vector<WorkloadRequest> scenario_workload(const std::string& id) {
  if (id == "sharegpt-1000") return {sharegpt_1000().begin(), sharegpt_1000().end()};
  // The study's random scenarios (seed-study.md "Workload scenarios").
  struct Scenario { const char* id; int n, in, out; };
  static const Scenario kRandom[] = {{"random-128in-4out", 1000, 128, 4},
                                     {"random-2000in-100out", 500, 2000, 100},
                                     {"random-4000in-200out", 500, 4000, 200},
                                     {"random-32000in-100out", 100, 32000, 100},
                                     {"random-1000in-2000out", 100, 1000, 2000}};
  for (const auto& s : kRandom)
    if (id == s.id) return random_fixed(s.n, s.in, s.out);
  throw std::invalid_argument("unknown scenario \"" + id +
                              "\" (known: sharegpt-1000, random-128in-4out, random-2000in-100out, "
                              "random-4000in-200out, random-32000in-100out, random-1000in-2000out)");
}

}  // namespace servelab::sim
