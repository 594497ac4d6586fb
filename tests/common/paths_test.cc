#include "servelab/common/paths.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

namespace sc = servelab::common;

TEST(Paths, DataDirHonoursEnvironment) {
  ::setenv("SERVELAB_DATA_DIR", "/tmp/servelab-data-x", 1);
  EXPECT_EQ(sc::data_dir(), std::filesystem::path("/tmp/servelab-data-x"));
  ::unsetenv("SERVELAB_DATA_DIR");
  EXPECT_EQ(sc::data_dir().filename(), "data");
}

TEST(Paths, CacheDirPrefersExplicitVariable) {
  ::setenv("SERVELAB_CACHE_DIR", "/tmp/sl-cache", 1);
  EXPECT_EQ(sc::cache_dir(), std::filesystem::path("/tmp/sl-cache"));
  ::unsetenv("SERVELAB_CACHE_DIR");
}

TEST(Paths, ReadFileReportsMissingPath) {
  try {
    sc::read_file("/nonexistent/servelab/file.json");
    FAIL() << "expected an exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/servelab/file.json"), std::string::npos);
  }
}

TEST(Paths, ReadFileReturnsBytes) {
  const char* p = "/tmp/servelab_paths_test.bin";
  { std::ofstream(p, std::ios::binary) << std::string("a\0b", 3); }
  EXPECT_EQ(sc::read_file(p), std::string("a\0b", 3));
}

TEST(Paths, EnvironmentMapReadsVariables) {
  ::setenv("SERVELAB_TEST_ENV_X", "a=b", 1);
  const auto env = sc::environment_map();
  ASSERT_TRUE(env.count("SERVELAB_TEST_ENV_X"));
  EXPECT_EQ(env.at("SERVELAB_TEST_ENV_X"), "a=b");  // split at the first '='
}
