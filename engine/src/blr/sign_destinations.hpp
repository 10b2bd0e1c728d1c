// sign_destinations.hpp (internal) — where a blr backward (blr_backward,
// blr_dense_backward) puts each path's sign gradients.
#pragma once

#include <span>
#include <vector>

#include "vkblr/blr.hpp"

namespace vkblr::detail {

// The paths' own G_U / G_V buffers (none for a path without them).
std::vector<BlrSignGrads> own_sign_grads(const BlrLayer& layer);

// `given`, one per path, each of both buffers large enough (Error naming
// `op`, the path and the buffer otherwise); none at all when
// options.sign_grads is off.
std::vector<BlrSignGrads> sign_destinations(const char* op, const BlrLayer& layer,
                                            std::span<const BlrSignGrads> given, const BlrBackward& options);

}  // namespace vkblr::detail
