#include "model/model.h"

#include <gtest/gtest.h>

namespace servelab::model {
namespace {

TEST(Qwen3, Qwen3_8B) {
  const ModelSpec m = resolve_model("Qwen/Qwen3-8B");
  EXPECT_EQ(m.variant, "qwen3");
  EXPECT_EQ(m.num_layers(), 36);
  EXPECT_NEAR(m.total_params() / 1e9, 8.19, 0.01);
}

}  // namespace
}  // namespace servelab::model
