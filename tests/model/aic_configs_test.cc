// Every config.json of AIConfigurator's offline copies (<data dir>/model-configs/aic) either parses into a
// model or is refused with an error naming the problem: none is refused as an "unknown model_type", and a
// type the twin recognises without modelling it says which layer feature it lacks.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "aic_test_support.h"
#include "servelab/common/paths.h"
#include "servelab/model/model.h"

namespace servelab::model {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> aic_configs() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(common::data_dir() / "model-configs" / "aic")) {
    const std::string name = e.path().filename().string();
    if (name.ends_with("_config.json") && !name.ends_with("_hf_quant_config.json")) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string message_of(const fs::path& f) {
  try {
    load_config_with_modelopt(f);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(AicConfigs, NoneIsAnUnknownModelType) {
  const auto files = aic_configs();
  ASSERT_GE(files.size(), 80u) << "the aic copies are part of the data dir";
  int parsed = 0;
  for (const auto& f : files) {
    const std::string msg = message_of(f);
    if (msg == "(no error)") {
      ++parsed;
      continue;
    }
    EXPECT_EQ(msg.find("unknown model_type"), std::string::npos) << msg;
  }
  // 57 of the 89 parse (every Llama 3.1 and 4, Mixtral, MiniMax-M2.x, Kimi-K2.x, Qwen3(-VL), GLM-5.x,
  // DeepSeek-V3.x and gpt-oss copy, and the Qwen3.5 ones whose quantization is modelled).
  EXPECT_GE(parsed, 57);
}

// A recognised but unmodelled type names the missing layer feature.
TEST(AicConfigs, UnmodelledTypesNameWhatIsMissing) {
  const std::map<std::string, std::string> cases = {
      {"nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-BF16_config.json",
       "model_type \"nemotron_h\" is recognised but not modelled: the twin lacks Mamba-2 state-space layers"},
      {"google--gemma-4-26B-A4B_config.json",
       "model_type \"gemma4_text\" is recognised but not modelled: the twin lacks per-layer-type attention"},
      {"deepseek-ai--DeepSeek-V4-Flash_config.json",
       "model_type \"deepseek_v4\" is recognised but not modelled: the twin lacks compressed sparse "
       "attention"},
      {"stepfun-ai--Step-3.7-Flash_config.json", "model_type \"step3p7\" is recognised but not modelled"},
      {"MiniMaxAI--MiniMax-M3_config.json",
       "model_type \"minimax_m3\" is recognised but not modelled: the twin lacks block-sparse attention"},
      {"nvidia--MiniMax-M3-NVFP4_config.json", "model_type \"minimax_m3_vl\" is recognised but not modelled"},
      {"moonshotai--Kimi-K3_config.json",
       "model_type \"kimi_linear\" is recognised but not modelled: the twin lacks Kimi Delta Attention"},
      {"nvidia--Llama-3_3-Nemotron-Super-49B-v1_config.json",
       "model_type \"nemotron-nas\" is recognised but not modelled"},
      {"XiaomiMiMo--MiMo-V2-Flash_config.json",
       "model_type \"mimo_v2_flash\" is recognised but not modelled"},
      // Python's json writes "time_step_limit": [0.0, Infinity]: read as null, not an invalid-JSON error.
      {"nvidia--Nemotron-H-56B-Base-8K_config.json",
       "model_type \"nemotron_h\" is recognised but not modelled: the twin lacks Mamba-2 state-space layers"},
  };
  for (const auto& [file, want] : cases) {
    const std::string msg = message_of(common::data_dir() / "model-configs" / "aic" / file);
    EXPECT_NE(msg.find(want), std::string::npos) << file << ": " << msg;
    EXPECT_NE(msg.find("(modelled: "), std::string::npos) << msg;  // and lists what is
  }
}

}  // namespace
}  // namespace servelab::model
