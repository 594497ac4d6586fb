// Helpers for the model tests that read AIConfigurator's offline config copies in the data dir.
#pragma once

#include <string>

#include "servelab/common/paths.h"
#include "servelab/model/model.h"

namespace servelab::model::testing {

/// `<data dir>/model-configs/aic/<file>` read as an engine reads the checkpoint (with its
/// hf_quant_config.json beside it when there is one).
inline ModelSpec aic_model(const std::string& file) {
  return load_config_with_modelopt(common::data_dir() / "model-configs" / "aic" / file);
}

/// KV-cache bytes per token of the whole model on one of `attn_tp` ranks.
inline double model_kv_bytes(const ModelSpec& m, int attn_tp, DType kv) {
  double b = 0;
  for (const auto& g : m.layers) b += g.count * kv_bytes_per_token(g.layer.attention, attn_tp, kv);
  return b;
}

}  // namespace servelab::model::testing
