// sign_kernels.hpp — what the sign optimizer's sources share: the binding
// slots of the sign_*.comp kernels (one numbering for the family), the push
// constants and the stochastic-rounding stream key (glsl/lowbias32.h).
#pragma once

#include <cstdint>

#include "lowbias32.h"
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

}  // namespace vkblr::detail::sign
