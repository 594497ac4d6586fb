// Bit-exactness of the CPython/numpy RNG re-implementations. Expected values were computed with CPython
// 3.11 (`random`) and numpy 1.24 (/usr/bin/python3); the subprocess tests re-run the oracles when present.
#include "servelab/schedule/rng.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace servelab::dataset {
namespace {

std::vector<int> shuffled(std::int64_t seed, int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  schedule::PythonRandom rng(seed);
  rng.shuffle(v);
  return v;
}

TEST(PythonRandom, ShuffleMatchesHardCodedCPythonPermutations) {
  // python3 -c "import random; random.seed(S); l=list(range(N)); random.shuffle(l); print(l)"
  EXPECT_EQ(shuffled(0, 10), (std::vector<int>{7, 8, 1, 5, 3, 4, 2, 0, 9, 6}));
  EXPECT_EQ(shuffled(1, 10), (std::vector<int>{6, 8, 9, 7, 5, 3, 0, 4, 1, 2}));
  EXPECT_EQ(shuffled(42, 17), (std::vector<int>{7, 10, 5, 6, 15, 14, 13, 9, 8, 1, 2, 12, 16, 4, 11, 0, 3}));
  // A seed wider than 32 bits uses two key words; a negative seed uses |seed|.
  EXPECT_EQ(shuffled((std::int64_t{1} << 33) + 5, 12),
            (std::vector<int>{7, 1, 0, 3, 10, 9, 6, 5, 8, 2, 4, 11}));
  EXPECT_EQ(shuffled(-7, 9), (std::vector<int>{1, 6, 7, 4, 0, 8, 3, 2, 5}));
}

TEST(PythonRandom, ChoiceGetrandbitsRandomMatchCPython) {
  schedule::PythonRandom rng(0);
  std::vector<std::size_t> picks;
  for (int i = 0; i < 8; ++i) picks.push_back(rng.choice_index(50));
  EXPECT_EQ(picks, (std::vector<std::size_t>{24, 48, 26, 2, 16, 32, 31, 25}));
  schedule::PythonRandom r2(0);
  EXPECT_EQ(r2.getrandbits(40), 424533559245ull);
  EXPECT_DOUBLE_EQ(r2.random(), 0.7579544029403025);
}

TEST(NumpyGenerator, SeedSequenceMatchesNumpy) {
  EXPECT_EQ(schedule::NumpyGenerator::seed_sequence_state(0, 4),
            (std::vector<std::uint32_t>{2968811710u, 3677149159u, 745650761u, 2884920346u}));
  EXPECT_EQ(schedule::NumpyGenerator::seed_sequence_state((std::uint64_t{1} << 40) + 3, 4),
            (std::vector<std::uint32_t>{2789635316u, 1410910647u, 811316306u, 1804054328u}));
}

TEST(NumpyGenerator, Pcg64AndIntegersMatchNumpy) {
  schedule::NumpyGenerator raw(0);
  EXPECT_EQ(raw.next_u64(), 11749869230777074271ull);
  EXPECT_EQ(raw.next_u64(), 4976686463289251617ull);
  // r = np.random.default_rng(0); r.integers(0,129280,5); r.integers(1000,1001,3); r.integers(5,100,4)
  schedule::NumpyGenerator rng(0);
  EXPECT_EQ(rng.integers(0, 129280, 5), (std::vector<std::int64_t>{109968, 82346, 66079, 34878, 39796}));
  EXPECT_EQ(rng.integers(1000, 1001, 3), (std::vector<std::int64_t>{1000, 1000, 1000}));  // no draws
  EXPECT_EQ(rng.integers(5, 100, 4), (std::vector<std::int64_t>{8, 12, 6, 21}));
}

TEST(NumpyRandomState, LegacyRandintAndRandomSampleMatchNumpy) {
  // np.random.seed(0); np.random.randint(0,129280,5); np.random.random_sample()
  schedule::NumpyRandomState rng(0);
  std::vector<std::int64_t> got;
  for (int i = 0; i < 5; ++i) got.push_back(rng.randint(0, 129280));
  EXPECT_EQ(got, (std::vector<std::int64_t>{68268, 43567, 42613, 117952, 45891}));
  EXPECT_DOUBLE_EQ(rng.random_sample(), 0.8579456176227568);
}

TEST(PythonRandom, ShuffleAndChoiceMatchCPythonSubprocess) {
  // For each seed: shuffles of every size, then 200 random.choice picks from 94145 items (the size of the
  // filtered ShareGPT V3 file) after re-seeding.
  const std::vector<std::int64_t> seeds = {0, 1, 7, 2024, 4294967297LL, 123456789012345LL};
  const std::vector<int> sizes = {1, 2, 5, 100, 1000, 65537};
  const auto want = testing::run_oracle("python3",
                                        "shuffle_many 0,1,7,2024,4294967297,123456789012345 "
                                        "1,2,5,100,1000,65537");
  if (!want) FAIL() << "python3 not available (make deps installs it)";
  ASSERT_EQ(want->size(), seeds.size() * (sizes.size() + 1));
  std::size_t k = 0;
  for (std::int64_t seed : seeds) {
    for (int n : sizes) {
      ASSERT_EQ(shuffled(seed, n), (*want)[k++].get<std::vector<int>>()) << "seed " << seed << " n " << n;
    }
    schedule::PythonRandom rng(seed);
    std::vector<std::size_t> got;
    for (int i = 0; i < 200; ++i) got.push_back(rng.choice_index(94145));
    EXPECT_EQ(got, (*want)[k++].get<std::vector<std::size_t>>()) << "seed " << seed;
  }
}

TEST(NumpyGenerator, IntegersMatchNumpySubprocessOnEveryRangePath) {
  // Ranges: 1 value (no draw), small, 32-bit Lemire, exactly 2^32 (raw 32-bit draw), 64-bit Lemire, huge.
  const std::vector<std::pair<std::int64_t, std::int64_t>> ranges = {{0, 2},
                                                                     {5, 6},
                                                                     {0, 129280},
                                                                     {-1000, 1000},
                                                                     {0, 1LL << 32},
                                                                     {0, (1LL << 32) + 1},
                                                                     {0, (1LL << 40) + 7},
                                                                     {-(1LL << 62), 1LL << 62},
                                                                     {0, (1LL << 31) - 1}};
  const std::vector<std::uint64_t> seeds = {0, 1, 42, 4294967296ull, 9876543210123ull};
  const auto want = testing::run_oracle("/usr/bin/python3", "numpy_ints 0,1,42,4294967296,9876543210123");
  if (!want) FAIL() << "/usr/bin/python3 with numpy not available (make deps installs python3-numpy)";
  ASSERT_EQ(want->size(), 2 * seeds.size());
  for (std::size_t s = 0; s < seeds.size(); ++s) {
    schedule::NumpyGenerator gen(seeds[s]);
    schedule::NumpyRandomState legacy(static_cast<std::uint32_t>(seeds[s]));
    for (std::size_t r = 0; r < ranges.size(); ++r) {
      const auto [lo, hi] = ranges[r];
      EXPECT_EQ(gen.integers(lo, hi, 7), (*want)[2 * s][r].get<std::vector<std::int64_t>>())
          << "default_rng(" << seeds[s] << ").integers(" << lo << ", " << hi << ")";
      std::vector<std::int64_t> got;
      for (int k = 0; k < 7; ++k) got.push_back(legacy.randint(lo, hi));
      EXPECT_EQ(got, (*want)[2 * s + 1][r].get<std::vector<std::int64_t>>())
          << "np.random.seed(" << seeds[s] << "); randint(" << lo << ", " << hi << ")";
    }
  }
}

}  // namespace
}  // namespace servelab::dataset
