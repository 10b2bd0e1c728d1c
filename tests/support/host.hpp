// host.hpp — host-side helpers of the conformance suite: seeded random
// inputs, poison patterns, f64 references and error measures.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "vkblr/half.hpp"

namespace vkt {

// xorshift64*: the same numbers on every platform for a seed.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : s_(seed * 0x9E3779B97F4A7C15ull | 1) {}
  std::uint64_t next() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 0x2545F4914F6CDD1Dull;
  }
  // uniform in [-1, 1)
  double uniform() { return static_cast<double>(next() >> 11) / 9007199254740992.0 * 2.0 - 1.0; }
  // standard normal (Box-Muller)
  double normal() {
    const double u1 = (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
    const double u2 = (static_cast<double>(next() >> 11) + 0.5) / 9007199254740992.0;
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
  std::uint32_t below(std::uint32_t n) { return static_cast<std::uint32_t>(next() % n); }

 private:
  std::uint64_t s_;
};

// n random 32-bit words (bitmaps: every bit random).
inline std::vector<std::uint32_t> random_words(std::size_t n, std::uint64_t seed) {
  Rng r(seed);
  std::vector<std::uint32_t> words(n);
  for (auto& w : words) w = static_cast<std::uint32_t>(r.next() >> 32);
  return words;
}

// n floats uniform in [-scale, scale) (never all zero).
inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(r.uniform()) * scale;
  return v;
}

// n floats that are exact in f16: small integers times a power of two.
inline std::vector<float> random_small_ints(std::size_t n, std::uint64_t seed, int range = 4, float unit = 1.0f) {
  Rng r(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = static_cast<float>(static_cast<int>(r.below(2 * range + 1)) - range) * unit;
  return v;
}

// Poison: f32 NaN pattern / f16 NaN pattern, so unwritten elements show.
inline constexpr std::uint32_t kPoison32 = 0x7fc0dead;
inline constexpr std::uint32_t kPoison16x2 = 0x7e017e01;  // two f16 NaNs

// ‖got − want‖ / ‖want‖ (Frobenius); NaN anywhere gives infinity.
template <class G, class W>
double rel_error(std::span<const G> got, std::span<const W> want) {
  double num = 0, den = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double w = static_cast<double>(want[i]);
    if (!std::isfinite(g)) return INFINITY;
    num += (g - w) * (g - w);
    den += w * w;
  }
  return std::sqrt(num / (den > 0 ? den : 1e-300));
}
template <class G, class W>
double rel_error(const std::vector<G>& got, const std::vector<W>& want) {
  return rel_error(std::span<const G>(got), std::span<const W>(want));
}

// Number of positions where the bit patterns differ.
template <class T>
std::size_t count_bit_diffs(const std::vector<T>& a, const std::vector<T>& b) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) n += std::memcmp(&a[i], &b[i], sizeof(T)) != 0;
  return n + (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
}

// Distance in f16 units in the last place between two halves (same sign).
inline int f16_ulps(std::uint16_t a, std::uint16_t b) {
  auto ord = [](std::uint16_t h) { return (h & 0x8000) ? -static_cast<int>(h & 0x7fff) : static_cast<int>(h); };
  return std::abs(ord(a) - ord(b));
}

}  // namespace vkt
