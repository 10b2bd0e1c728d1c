// Where a blr backward puts the sign gradients (sign_destinations.hpp).
#include "sign_destinations.hpp"

#include <cstdint>
#include <tuple>

#include "vkblr/error.hpp"

namespace vkblr::detail {

std::vector<BlrSignGrads> own_sign_grads(const BlrLayer& layer) {
  std::vector<BlrSignGrads> own(layer.paths.size());
  for (std::size_t p = 0; p < own.size(); ++p) {
    const BlrPath& path = layer.paths[p];
    if (path.g_u && path.g_v) own[p] = {&path.g_u, &path.g_v};
  }
  return own;
}

std::vector<BlrSignGrads> sign_destinations(const char* op, const BlrLayer& layer,
                                            std::span<const BlrSignGrads> given, const BlrBackward& options) {
  if (!options.sign_grads) return std::vector<BlrSignGrads>(layer.paths.size());
  require(given.size() == layer.paths.size(), "{}: {} sign-gradient destinations for {} paths", op, given.size(),
          layer.paths.size());
  for (std::size_t p = 0; p < given.size(); ++p) {
    const std::uint64_t bytes_u = std::uint64_t{layer.m} * layer.r * 4, bytes_v = std::uint64_t{layer.n} * layer.r * 4;
    for (const auto& [buffer, what, bytes] : {std::tuple{given[p].g_u, "g_u", bytes_u},
                                              std::tuple{given[p].g_v, "g_v", bytes_v}}) {
      require(buffer != nullptr && static_cast<bool>(*buffer) && buffer->size() >= bytes,
              "{}: path {} sign gradient {} holds {} bytes, needs {}", op, p, what,
              buffer && *buffer ? buffer->size() : 0, bytes);
    }
  }
  return {given.begin(), given.end()};
}

}  // namespace vkblr::detail
