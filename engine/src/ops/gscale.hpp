// gscale.hpp — the check of a gradient's f16 staging scale, shared by the
// op builders and the trainers that pick the scale.
#pragma once

#include <cmath>

#include "vkblr/error.hpp"

namespace vkblr::detail {

// A gradient's f16 staging scale: a finite power of two (so that dividing
// it back out is exact). Throws Error naming `op` and the value otherwise.
inline void require_gscale(const char* op, float gscale) {
  int exponent = 0;
  require(gscale > 0 && std::isfinite(gscale) && std::frexp(gscale, &exponent) == 0.5f,
          "{}: gscale = {} is not a power of two", op, gscale);
}

}  // namespace vkblr::detail
