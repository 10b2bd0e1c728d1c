// sign_kernels.hpp — what the sign optimizer's sources share: the binding
// slots of the sign_*.comp kernels (one numbering for the family), the push
// constants and the stochastic-rounding stream key.
#pragma once

#include <cstdint>

#include "sign.h"

namespace vkblr::detail::sign {

static_assert(sizeof(shader::SignPush) == 72);

// Binding slots, as declared in glsl/sign_*.comp.
enum Slot : std::uint32_t {
  kGrad = 0,
  kLatent = 1,
  kMoment1 = 2,
  kMoment2 = 3,
  kRowV = 4,
  kColV = 5,
  kSums = 6,
  kBits = 7,
  kFlipped = 8,
  kCounters = 9,
  kScores = 10,
  kScalars = 11,
  kSelect = 12,
  kBits0 = 13,
  kTies = 14,
};

// sign_mix of glsl/sign_common.glsl.
constexpr std::uint32_t mix(std::uint32_t h) noexcept {
  h ^= h >> 16;
  h *= 0x7feb352du;
  h ^= h >> 15;
  h *= 0x846ca68bu;
  h ^= h >> 16;
  return h;
}

// The key of a matrix's stochastic-rounding stream (sign_random's first input).
constexpr std::uint32_t stream_key(std::uint64_t seed, std::uint32_t matrix_id) noexcept {
  return mix(mix(mix(static_cast<std::uint32_t>(seed)) ^ static_cast<std::uint32_t>(seed >> 32)) ^ matrix_id);
}

}  // namespace vkblr::detail::sign
