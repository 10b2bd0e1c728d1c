#include "vkblr-fit/io/input_range.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vkblr/error.hpp"

namespace vkblr::fit {

void check_f16_magnitude(double largest, std::uint64_t row, std::uint64_t col, std::string_view what) {
  require(largest > 0, "{} is all zero: there is nothing to fit", what);
  require(largest <= kF16Max,
          "{} has |value| {} at [{}][{}], beyond f16's largest, {}: vkblr-fit stages W and X to f16. Rescale it (the "
          "fit of c·W is c times the fit of W; X likewise)",
          what, static_cast<float>(largest), row, col, kF16Max);
  require(largest >= kF16MinNormal,
          "{} has |values| of at most {}, below f16's smallest normal, {}: staged to f16 (as vkblr-fit stages W "
          "and X) they keep a few bits or become 0. Rescale it (the fit of c·W is c times the fit of W; X likewise)",
          what, static_cast<float>(largest), kF16MinNormal);
}

void check_target_norm(double squared_norm, std::string_view tokens, std::string_view inputs) {
  // the trainer normalises the loss by it in f32
  require(std::isfinite(squared_norm) && squared_norm <= std::numeric_limits<float>::max(),
          "the outputs X·Wᵀ on the {} tokens overflow f32 (their squared norm is {}; {}): rescale W or X", tokens,
          squared_norm, inputs);
  require(squared_norm > 0,
          "the outputs X·Wᵀ on the {} tokens are all zero ({}): there is nothing to fit (are X's nonzero columns "
          "those where W is zero?)",
          tokens, inputs);
}

}  // namespace vkblr::fit
