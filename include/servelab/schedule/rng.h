// servelab/schedule: bit-exact re-implementations of the random number generators vLLM's benchmark uses,
// so that the same seed selects the same requests (dataset sampling) and arrival times (schedule.h) as vLLM:
//   - CPython `random` (MT19937, init_by_array seeding, getrandbits, _randbelow, shuffle, choice, random);
//   - numpy legacy `np.random.seed(int)` / RandomState (MT19937 init_genrand, masked `randint`,
//     `random_sample`, and the legacy distributions `standard_exponential`, `gauss`, `gamma`);
//   - numpy `default_rng(seed)` = SeedSequence + PCG64 (XSL-RR 128/64) with `Generator.integers`
//     (Lemire bounded integers, 32-bit draws buffered by PCG64 for ranges < 2^32).
// Sources: CPython Modules/_randommodule.c and Lib/random.py (3.2+); numpy/random/_mt19937.pyx,
// src/mt19937/*, bit_generator.pyx (SeedSequence), src/pcg64/pcg64.h, src/distributions/
// random_uint*.c (numpy 1.17+), src/legacy/legacy-distributions.c. Checked against CPython 3.11 and numpy
// 1.24 in tests/dataset/rng_test.cc and tests/schedule/arrival_test.cc.
// Thread-safety: instances are not synchronised; use one per thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace servelab::schedule {

/// The Mersenne Twister MT19937 (Matsumoto & Nishimura 1998), 32-bit output.
class Mt19937 {
 public:
  /// init_genrand(seed).
  explicit Mt19937(std::uint32_t seed = 5489u) { init_genrand(seed); }
  void init_genrand(std::uint32_t seed);
  /// init_by_array(key) (an empty key is treated as {0}, as CPython does for seed 0).
  void init_by_array(std::span<const std::uint32_t> key);
  /// genrand_uint32().
  std::uint32_t next_u32();

 private:
  std::array<std::uint32_t, 624> mt_{};
  int index_ = 625;
};

/// CPython's `random.Random` for integer seeds.
class PythonRandom {
 public:
  /// random.seed(seed): init_by_array over the 32-bit little-endian words of |seed| ({0} for 0).
  explicit PythonRandom(std::int64_t seed) { this->seed(seed); }
  void seed(std::int64_t seed);
  /// random.getrandbits(k), 0 ≤ k ≤ 64.
  std::uint64_t getrandbits(int k);
  /// random._randbelow(n) (getrandbits rejection with k = n.bit_length()); n ≥ 1.
  std::uint64_t randbelow(std::uint64_t n);
  /// random.random(): (a>>5 * 67108864 + b>>6) / 2^53.
  double random();
  /// random.choice(seq) index: randbelow(n); n ≥ 1.
  std::size_t choice_index(std::size_t n) { return static_cast<std::size_t>(randbelow(n)); }
  /// random.shuffle(v): for i = n-1..1, j = randbelow(i+1), swap(v[i], v[j]).
  template <class T>
  void shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i-- > 1;) {
      const std::size_t j = static_cast<std::size_t>(randbelow(i + 1));
      using std::swap;
      swap(v[i], v[j]);
    }
  }

 private:
  Mt19937 mt_;
};

/// numpy's legacy global RNG (`np.random.seed(seed)` with an integer seed, RandomState methods).
class NumpyRandomState {
 public:
  /// np.random.seed(seed) for 0 ≤ seed < 2^32: mt19937_seed = init_genrand(seed).
  explicit NumpyRandomState(std::uint32_t seed) : mt_(seed) {}
  /// np.random.randint(low, high) (high exclusive, int64): masked rejection on 32-bit draws when
  /// high-1-low < 2^32. Requires low < high.
  std::int64_t randint(std::int64_t low, std::int64_t high);
  /// np.random.random_sample() in [0, 1): 53-bit double from two draws.
  double random_sample();
  /// The raw 32-bit output (mt19937_next32).
  std::uint32_t next_u32() { return mt_.next_u32(); }
  /// legacy_standard_exponential: -log(1 - random_sample()).
  double standard_exponential();
  /// legacy_gauss: polar Box–Muller (Marsaglia), the second value of each pair cached for the next call.
  double gauss();
  /// legacy_standard_gamma(shape), shape ≥ 0: Marsaglia–Tsang (shape > 1, with gauss()), Johnk-style
  /// rejection (shape < 1), standard_exponential (shape = 1), 0 (shape = 0).
  double standard_gamma(double shape);
  /// RandomState.gamma(shape, scale) = scale · standard_gamma(shape).
  double gamma(double shape, double scale) { return scale * standard_gamma(shape); }

 private:
  Mt19937 mt_;
  bool has_gauss_ = false;  ///< legacy state: a cached second Gaussian
  double gauss_ = 0.0;
};

/// numpy `np.random.default_rng(seed)`: SeedSequence(seed) → PCG64, with `Generator.integers`.
class NumpyGenerator {
 public:
  /// default_rng(seed) for a non-negative integer seed.
  explicit NumpyGenerator(std::uint64_t seed);
  /// One value of rng.integers(low, high) (high exclusive, int64 dtype). Requires low < high.
  std::int64_t integers(std::int64_t low, std::int64_t high);
  /// rng.integers(low, high, size=n). No draws at all when high - low == 1 (as numpy).
  std::vector<std::int64_t> integers(std::int64_t low, std::int64_t high, std::size_t n);
  /// PCG64 next 64-bit output (pcg64_next64).
  std::uint64_t next_u64();
  /// PCG64 next 32-bit output: low half of a 64-bit draw, then its high half (pcg64_next32).
  std::uint32_t next_u32();

  /// SeedSequence(entropy).generate_state(n_words) as uint32 words (numpy bit_generator.pyx).
  static std::vector<std::uint32_t> seed_sequence_state(std::uint64_t entropy, std::size_t n_words);

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
  bool has_u32_ = false;
  std::uint32_t u32_ = 0;
};

}  // namespace servelab::schedule
