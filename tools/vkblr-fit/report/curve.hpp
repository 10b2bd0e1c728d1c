// curve.hpp — the learning curve of a fit: held-out error against step.
#pragma once

#include <cstdint>

namespace vkblr::fit {

struct CurvePoint {
  std::uint64_t step = 0;
  double held_out_error = 0;  // relative output error on held-out tokens (metrics.hpp)
};

}  // namespace vkblr::fit
