// numpy's permutations (numpy_order.hpp): numpy/random/bit_generator.pyx
// (SeedSequence), pcg64.h, distributions.c (random_interval) and
// _generator.pyx (shuffle), re-derived.
#include "numpy_order.hpp"

#include <array>
#include <numeric>
#include <utility>

namespace vkblr::train {
namespace {

// SeedSequence's constants
constexpr std::uint32_t kInitA = 0x43b0d7e5, kMultA = 0x931e8875, kInitB = 0x8b51f9dd, kMultB = 0x58f38ded;
constexpr std::uint32_t kMixL = 0xca01f9dd, kMixR = 0x4973f715;
constexpr int kPool = 4;

std::uint32_t hashmix(std::uint32_t value, std::uint32_t& hash) {
  value ^= hash;
  hash *= kMultA;
  value *= hash;
  return value ^ (value >> 16);
}

std::uint32_t mix(std::uint32_t x, std::uint32_t y) {
  const std::uint32_t r = kMixL * x - kMixR * y;
  return r ^ (r >> 16);
}

// SeedSequence(seed).generate_state(4, uint64)
std::array<std::uint64_t, 4> seed_state(std::uint64_t seed) {
  std::vector<std::uint32_t> entropy;  // the seed's 32-bit words, least significant first ([0] for 0)
  for (std::uint64_t v = seed; v != 0; v >>= 32) entropy.push_back(static_cast<std::uint32_t>(v));
  if (entropy.empty()) entropy.push_back(0);
  std::array<std::uint32_t, kPool> pool{};
  std::uint32_t hash = kInitA;
  for (int i = 0; i < kPool; ++i) pool[i] = hashmix(i < static_cast<int>(entropy.size()) ? entropy[i] : 0, hash);
  for (int src = 0; src < kPool; ++src) {
    for (int dst = 0; dst < kPool; ++dst) {
      if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], hash));
    }
  }
  for (std::size_t src = kPool; src < entropy.size(); ++src) {
    for (int dst = 0; dst < kPool; ++dst) pool[dst] = mix(pool[dst], hashmix(entropy[src], hash));
  }
  std::array<std::uint32_t, 8> words{};
  std::uint32_t hash_b = kInitB;
  for (int i = 0; i < 8; ++i) {
    std::uint32_t v = pool[i % kPool] ^ hash_b;
    hash_b *= kMultB;
    v *= hash_b;
    words[i] = v ^ (v >> 16);
  }
  std::array<std::uint64_t, 4> out{};
  for (int i = 0; i < 4; ++i) out[i] = words[2 * i] | (std::uint64_t{words[2 * i + 1]} << 32);
  return out;
}

}  // namespace

NumpyPermutations::NumpyPermutations(std::uint64_t seed) {
  const std::array<std::uint64_t, 4> s = seed_state(seed);
  const u128 init_state = (u128{s[0]} << 64) | s[1];
  const u128 init_seq = (u128{s[2]} << 64) | s[3];
  state_ = 0;
  inc_ = (init_seq << 1) | 1;
  next64();
  state_ += init_state;
  next64();
  has32_ = false;
}

std::uint64_t NumpyPermutations::next64() {
  constexpr u128 kMult = (u128{0x2360ED051FC65DA4ull} << 64) | 0x4385DF649FCCF645ull;
  state_ = state_ * kMult + inc_;
  const auto value = static_cast<std::uint64_t>(state_ >> 64) ^ static_cast<std::uint64_t>(state_);
  const auto rot = static_cast<unsigned>(state_ >> 122);
  return (value >> rot) | (value << ((64 - rot) & 63));
}

std::uint32_t NumpyPermutations::next32() {
  if (has32_) {
    has32_ = false;
    return held32_;
  }
  const std::uint64_t v = next64();
  has32_ = true;
  held32_ = static_cast<std::uint32_t>(v >> 32);
  return static_cast<std::uint32_t>(v);
}

std::uint64_t NumpyPermutations::interval(std::uint64_t max) {
  if (max == 0) return 0;
  std::uint64_t mask = max;
  for (int shift = 1; shift <= 32; shift *= 2) mask |= mask >> shift;
  std::uint64_t value = 0;
  if (max <= 0xffffffffull) {
    do value = next32() & mask;
    while (value > max);
  } else {
    do value = next64() & mask;
    while (value > max);
  }
  return value;
}

std::vector<std::uint32_t> NumpyPermutations::next(std::uint32_t n) {
  std::vector<std::uint32_t> out(n);
  std::iota(out.begin(), out.end(), 0u);
  for (std::uint32_t i = n; i-- > 1;) std::swap(out[i], out[interval(i)]);
  return out;
}

}  // namespace vkblr::train
