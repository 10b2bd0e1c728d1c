// random.hpp — the seeded generator of vkblr-fit's synthetic data and
// randomized SVD. The standard library's distributions differ between
// implementations; these numbers are the same everywhere for a seed.
#pragma once

#include <cmath>
#include <cstdint>

namespace vkblr::fit {

// xorshift64* seeded through splitmix64 (any seed, 0 included, is fine).
class Rng {
 public:
  explicit Rng(std::uint64_t seed) {
    std::uint64_t z = seed + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    state_ = (z ^ (z >> 31)) | 1u;
  }

  std::uint64_t next() {
    state_ ^= state_ >> 12;
    state_ ^= state_ << 25;
    state_ ^= state_ >> 27;
    return state_ * 0x2545F4914F6CDD1Dull;
  }

  // Uniform in (0, 1): never 0, so log() is safe.
  double uniform_open() { return (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0; }

  // Standard normal (Box–Muller, one value per call).
  double normal() {
    const double radius = std::sqrt(-2.0 * std::log(uniform_open()));
    return radius * std::cos(6.283185307179586 * uniform_open());
  }

  // Uniform in [0, n), n > 0 (modulo bias below 2^-32 for n < 2^32).
  std::uint64_t below(std::uint64_t n) { return next() % n; }

 private:
  std::uint64_t state_;
};

}  // namespace vkblr::fit
