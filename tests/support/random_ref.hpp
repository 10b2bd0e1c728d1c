// random_ref.hpp — vkblr's counter-based random words written again for
// the tests (glsl/lowbias32.h): the lowbias32 hash and the key of a
// (seed, stream) pair.
#pragma once

#include <cstdint>

namespace vkt {

inline std::uint32_t mix32(std::uint32_t h) {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

inline std::uint32_t stream_key(std::uint64_t seed, std::uint32_t id) {
  return mix32(mix32(mix32(static_cast<std::uint32_t>(seed)) ^ static_cast<std::uint32_t>(seed >> 32)) ^ id);
}

}  // namespace vkt
