// lowbias32.hpp — the host copy of glsl/lowbias32.glsl (Wellons' bijective
// 32-bit hash) and the 32-bit stream key vkblr's counter-based random
// numbers derive from a 64-bit seed and a stream id.
#pragma once

#include <cstdint>

namespace vkblr::detail {

constexpr std::uint32_t lowbias32(std::uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// lowbias32(lowbias32(lowbias32(seed_lo) ^ seed_hi) ^ stream): the key of
// one stream of random words (the sign optimizer's per-matrix stochastic
// rounding, gaussian()'s draws).
constexpr std::uint32_t stream_key(std::uint64_t seed, std::uint32_t stream) noexcept {
  return lowbias32(lowbias32(lowbias32(static_cast<std::uint32_t>(seed)) ^ static_cast<std::uint32_t>(seed >> 32)) ^
                   stream);
}

}  // namespace vkblr::detail
