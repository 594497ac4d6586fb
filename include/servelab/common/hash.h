// servelab/common: small pure helpers shared by modules that must not depend on each other — splitmix64
// (the hash behind the twin's and sim serve's reproducible draws and multi-turn hash ids) and the
// `Overloaded` visitor for std::visit. Thread-safety: pure.
#pragma once

#include <cstdint>

namespace servelab::common {

/// splitmix64's finaliser (Steele, Lea & Flood, "Fast splittable pseudorandom number generators",
/// OOPSLA 2014; constants as in Vigna's reference splitmix64.c): a bijective 64-bit mix, used where a
/// reproducible value must come from a seed and an index without carrying generator state.
constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// The overload set of lambdas for std::visit (`std::visit(Overloaded{[](A&){}, [](B&){}}, v)`).
template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

}  // namespace servelab::common
