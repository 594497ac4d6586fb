#include "model/model.h"

#include <gtest/gtest.h>

namespace servelab::model {
namespace {

TEST(DeepseekV3, V32Totals) {
  const ModelSpec m = deepseek_v32();
  EXPECT_EQ(m.num_layers(), 61);
  EXPECT_NEAR(m.total_params() / 1e9, 671.9, 0.5);
  EXPECT_NEAR(m.active_params() / 1e9, 37.5, 0.1);
  EXPECT_TRUE(m.has_dsa());
}

}  // namespace
}  // namespace servelab::model
