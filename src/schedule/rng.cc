// Bit-exact CPython/numpy random number generators (see rng.h for sources).
#include "servelab/schedule/rng.h"

#include <cmath>
#include <stdexcept>
#include <string>

namespace servelab::schedule {

namespace {
constexpr int kN = 624;
constexpr int kM = 397;

std::uint64_t gen_mask(std::uint64_t max) {
  std::uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  return mask;
}

int bit_length(std::uint64_t n) {
  int k = 0;
  while (n != 0) {
    ++k;
    n >>= 1;
  }
  return k;
}
}  // namespace

// ----------------------------------------------------------------------------------------------- MT19937

void Mt19937::init_genrand(std::uint32_t seed) {
  mt_[0] = seed;
  for (int i = 1; i < kN; ++i) {
    mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + static_cast<std::uint32_t>(i);
  }
  index_ = kN;
}

void Mt19937::init_by_array(std::span<const std::uint32_t> key_in) {
  static constexpr std::uint32_t kZero[1] = {0};
  std::span<const std::uint32_t> key = key_in.empty() ? std::span<const std::uint32_t>(kZero) : key_in;
  init_genrand(19650218u);
  std::size_t i = 1, j = 0;
  const std::size_t len = key.size();
  for (std::size_t k = (static_cast<std::size_t>(kN) > len ? kN : len); k > 0; --k) {
    mt_[i] =
        (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<std::uint32_t>(j);
    ++i;
    ++j;
    if (i >= static_cast<std::size_t>(kN)) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
    if (j >= len) j = 0;
  }
  for (std::size_t k = kN - 1; k > 0; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - static_cast<std::uint32_t>(i);
    ++i;
    if (i >= static_cast<std::size_t>(kN)) {
      mt_[0] = mt_[kN - 1];
      i = 1;
    }
  }
  mt_[0] = 0x80000000u;
  index_ = kN;
}

std::uint32_t Mt19937::next_u32() {
  static constexpr std::uint32_t kMag01[2] = {0x0u, 0x9908b0dfu};
  if (index_ >= kN) {
    int kk = 0;
    std::uint32_t y;
    for (; kk < kN - kM; ++kk) {
      y = (mt_[kk] & 0x80000000u) | (mt_[kk + 1] & 0x7fffffffu);
      mt_[kk] = mt_[kk + kM] ^ (y >> 1) ^ kMag01[y & 1u];
    }
    for (; kk < kN - 1; ++kk) {
      y = (mt_[kk] & 0x80000000u) | (mt_[kk + 1] & 0x7fffffffu);
      mt_[kk] = mt_[kk + (kM - kN)] ^ (y >> 1) ^ kMag01[y & 1u];
    }
    y = (mt_[kN - 1] & 0x80000000u) | (mt_[0] & 0x7fffffffu);
    mt_[kN - 1] = mt_[kM - 1] ^ (y >> 1) ^ kMag01[y & 1u];
    index_ = 0;
  }
  std::uint32_t y = mt_[index_++];
  y ^= (y >> 11);
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= (y >> 18);
  return y;
}

// ----------------------------------------------------------------------------------------- PythonRandom

void PythonRandom::seed(std::int64_t seed) {
  // CPython random_seed(): n = abs(arg); key = 32-bit little-endian words of n ({0} for n == 0).
  std::uint64_t n = seed < 0 ? 0 - static_cast<std::uint64_t>(seed) : static_cast<std::uint64_t>(seed);
  std::vector<std::uint32_t> key;
  if (n == 0) key.push_back(0);
  while (n != 0) {
    key.push_back(static_cast<std::uint32_t>(n & 0xffffffffu));
    n >>= 32;
  }
  mt_.init_by_array(key);
}

std::uint64_t PythonRandom::getrandbits(int k) {
  if (k < 0 || k > 64)
    throw std::invalid_argument("getrandbits: k must be in [0, 64], got " + std::to_string(k));
  if (k == 0) return 0;
  if (k <= 32) return mt_.next_u32() >> (32 - k);
  // Words are filled least significant first; the last (partial) word is shifted down.
  std::uint64_t lo = mt_.next_u32();
  std::uint64_t hi = mt_.next_u32() >> (64 - k);
  return lo | (hi << 32);
}

std::uint64_t PythonRandom::randbelow(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("randbelow: n must be >= 1");
  const int k = bit_length(n);
  std::uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

double PythonRandom::random() {
  const std::uint32_t a = mt_.next_u32() >> 5, b = mt_.next_u32() >> 6;
  return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0);
}

// ------------------------------------------------------------------------------------- NumpyRandomState

std::int64_t NumpyRandomState::randint(std::int64_t low, std::int64_t high) {
  if (low >= high) throw std::invalid_argument("randint: low >= high");
  const std::uint64_t rng = static_cast<std::uint64_t>(high) - 1 - static_cast<std::uint64_t>(low);
  if (rng == 0) return low;
  std::uint64_t val;
  if (rng <= 0xffffffffull) {
    if (rng == 0xffffffffull) {
      val = mt_.next_u32();
    } else {
      const std::uint32_t mask = static_cast<std::uint32_t>(gen_mask(rng));
      std::uint32_t v;
      while ((v = (mt_.next_u32() & mask)) > rng) {
      }
      val = v;
    }
  } else {
    const std::uint64_t mask = gen_mask(rng);
    auto next64 = [&] {
      const std::uint64_t hi = mt_.next_u32();
      return (hi << 32) | mt_.next_u32();
    };
    if (rng == ~0ull) {
      val = next64();
    } else {
      while ((val = (next64() & mask)) > rng) {
      }
    }
  }
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + val);
}

double NumpyRandomState::random_sample() {
  const std::uint32_t a = mt_.next_u32() >> 5, b = mt_.next_u32() >> 6;
  return (a * 67108864.0 + b) / 9007199254740992.0;
}

double NumpyRandomState::standard_exponential() {
  return -std::log(1.0 - random_sample());
}

double NumpyRandomState::gauss() {
  if (has_gauss_) {
    has_gauss_ = false;
    const double g = gauss_;
    gauss_ = 0.0;
    return g;
  }
  double x1, x2, r2;
  do {
    x1 = 2.0 * random_sample() - 1.0;
    x2 = 2.0 * random_sample() - 1.0;
    r2 = x1 * x1 + x2 * x2;
  } while (r2 >= 1.0 || r2 == 0.0);
  const double f = std::sqrt(-2.0 * std::log(r2) / r2);
  gauss_ = f * x1;
  has_gauss_ = true;
  return f * x2;
}

double NumpyRandomState::standard_gamma(double shape) {
  if (shape == 1.0) return standard_exponential();
  if (shape == 0.0) return 0.0;
  if (shape < 1.0) {
    for (;;) {
      const double u = random_sample();
      const double v = standard_exponential();
      if (u <= 1.0 - shape) {
        const double x = std::pow(u, 1.0 / shape);
        if (x <= v) return x;
      } else {
        const double y = -std::log((1 - u) / shape);
        const double x = std::pow(1.0 - shape + shape * y, 1.0 / shape);
        if (x <= (v + y)) return x;
      }
    }
  }
  const double b = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9 * b);
  for (;;) {
    double x, v;
    do {
      x = gauss();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = random_sample();
    if (u < 1.0 - 0.0331 * (x * x) * (x * x)) return b * v;
    if (std::log(u) < 0.5 * x * x + b * (1.0 - v + std::log(v))) return b * v;
  }
}

// --------------------------------------------------------------------------------------- NumpyGenerator

namespace {
constexpr std::uint32_t kInitA = 0x43b0d7e5u, kMultA = 0x931e8875u, kInitB = 0x8b51f9ddu,
                        kMultB = 0x58f38dedu, kMixMultL = 0xca01f9ddu, kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;
constexpr std::size_t kPoolSize = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash_const) {
  value ^= hash_const;
  hash_const *= kMultA;
  value *= hash_const;
  value ^= value >> kXShift;
  return value;
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  std::uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

constexpr unsigned __int128 kPcgMultiplier =
    (static_cast<unsigned __int128>(0x2360ED051FC65DA4ull) << 64) | 0x4385DF649FCCF645ull;
}  // namespace

std::vector<std::uint32_t> NumpyGenerator::seed_sequence_state(std::uint64_t entropy, std::size_t n_words) {
  std::vector<std::uint32_t> entropy_words;
  if (entropy == 0) entropy_words.push_back(0);
  while (entropy != 0) {
    entropy_words.push_back(static_cast<std::uint32_t>(entropy & 0xffffffffu));
    entropy >>= 32;
  }
  std::array<std::uint32_t, kPoolSize> pool{};
  std::uint32_t hash_const = kInitA;
  for (std::size_t i = 0; i < kPoolSize; ++i) {
    pool[i] = hashmix(i < entropy_words.size() ? entropy_words[i] : 0u, hash_const);
  }
  for (std::size_t src = 0; src < kPoolSize; ++src) {
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash_const));
    }
  }
  for (std::size_t src = kPoolSize; src < entropy_words.size(); ++src) {
    for (std::size_t dst = 0; dst < kPoolSize; ++dst) {
      pool[dst] = mix(pool[dst], hashmix(entropy_words[src], hash_const));
    }
  }
  std::vector<std::uint32_t> state(n_words);
  std::uint32_t hc = kInitB;
  for (std::size_t i = 0; i < n_words; ++i) {
    std::uint32_t v = pool[i % kPoolSize];
    v ^= hc;
    hc *= kMultB;
    v *= hc;
    v ^= v >> kXShift;
    state[i] = v;
  }
  return state;
}

NumpyGenerator::NumpyGenerator(std::uint64_t seed) {
  const std::vector<std::uint32_t> w = seed_sequence_state(seed, 8);
  std::uint64_t val[4];
  for (int i = 0; i < 4; ++i)
    val[i] = static_cast<std::uint64_t>(w[2 * i]) | (static_cast<std::uint64_t>(w[2 * i + 1]) << 32);
  const unsigned __int128 initstate = (static_cast<unsigned __int128>(val[0]) << 64) | val[1];
  const unsigned __int128 initseq = (static_cast<unsigned __int128>(val[2]) << 64) | val[3];
  // pcg_setseq_128_srandom_r
  state_ = 0;
  inc_ = (initseq << 1u) | 1u;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initstate;
  state_ = state_ * kPcgMultiplier + inc_;
}

std::uint64_t NumpyGenerator::next_u64() {
  state_ = state_ * kPcgMultiplier + inc_;
  const std::uint64_t x = static_cast<std::uint64_t>(state_ >> 64) ^ static_cast<std::uint64_t>(state_);
  const unsigned rot = static_cast<unsigned>(state_ >> 122);
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

std::uint32_t NumpyGenerator::next_u32() {
  if (has_u32_) {
    has_u32_ = false;
    return u32_;
  }
  const std::uint64_t next = next_u64();
  has_u32_ = true;
  u32_ = static_cast<std::uint32_t>(next >> 32);
  return static_cast<std::uint32_t>(next & 0xffffffffu);
}

std::int64_t NumpyGenerator::integers(std::int64_t low, std::int64_t high) {
  if (low >= high) throw std::invalid_argument("integers: low >= high");
  const std::uint64_t rng = static_cast<std::uint64_t>(high) - 1 - static_cast<std::uint64_t>(low);
  std::uint64_t val;
  if (rng == 0) {
    val = 0;
  } else if (rng <= 0xffffffffull) {
    if (rng == 0xffffffffull) {
      val = next_u32();
    } else {
      // buffered_bounded_lemire_uint32
      const std::uint32_t rng_excl = static_cast<std::uint32_t>(rng) + 1;
      std::uint64_t m = static_cast<std::uint64_t>(next_u32()) * rng_excl;
      std::uint32_t leftover = static_cast<std::uint32_t>(m & 0xffffffffu);
      if (leftover < rng_excl) {
        const std::uint32_t threshold = (0xffffffffu - static_cast<std::uint32_t>(rng)) % rng_excl;
        while (leftover < threshold) {
          m = static_cast<std::uint64_t>(next_u32()) * rng_excl;
          leftover = static_cast<std::uint32_t>(m & 0xffffffffu);
        }
      }
      val = m >> 32;
    }
  } else if (rng == ~0ull) {
    val = next_u64();
  } else {
    // bounded_lemire_uint64
    const std::uint64_t rng_excl = rng + 1;
    unsigned __int128 m = static_cast<unsigned __int128>(next_u64()) * rng_excl;
    std::uint64_t leftover = static_cast<std::uint64_t>(m);
    if (leftover < rng_excl) {
      const std::uint64_t threshold = (~0ull - rng) % rng_excl;
      while (leftover < threshold) {
        m = static_cast<unsigned __int128>(next_u64()) * rng_excl;
        leftover = static_cast<std::uint64_t>(m);
      }
    }
    val = static_cast<std::uint64_t>(m >> 64);
  }
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + val);
}

std::vector<std::int64_t> NumpyGenerator::integers(std::int64_t low, std::int64_t high, std::size_t n) {
  std::vector<std::int64_t> out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) out.push_back(integers(low, high));
  return out;
}

}  // namespace servelab::schedule
