#include "vkblr/io/layer_shape.hpp"

#include <algorithm>

#include "vkblr/error.hpp"

namespace vkblr::io {

unsigned scale_bits(ScaleDtype dtype) { return dtype == ScaleDtype::f16 ? 16 : 32; }

std::string_view scale_dtype_name(ScaleDtype dtype) { return dtype == ScaleDtype::f16 ? "F16" : "F32"; }

std::uint32_t max_useful_rank(std::uint32_t m, std::uint32_t n) { return (std::min(m, n) + 31) / 32 * 32; }

void check_layer_shape(const LayerShape& shape, std::string_view context) {
  require(shape.m >= 1 && shape.n >= 1, "{}: layer shape {}×{} is empty", context, shape.m, shape.n);
  require(shape.paths >= 1, "{}: a layer needs at least one path", context);
  require(shape.rank >= 32 && shape.rank % 32 == 0, "{}: rank {} is not a positive multiple of 32", context,
          shape.rank);
  require(shape.rank <= max_useful_rank(shape.m, shape.n),
          "{}: rank {} exceeds what a {}×{} layer can use ({} = min(m, n) rounded up to 32)", context, shape.rank,
          shape.m, shape.n, max_useful_rank(shape.m, shape.n));
}

void check_path_sizes(const LayerShape& shape, std::span<const BlrPathInit> paths, std::string_view context) {
  require(paths.size() == shape.paths, "{}: {} paths given for a layer of {}", context, paths.size(), shape.paths);
  const std::size_t words = shape.rank / 32;
  for (std::size_t p = 0; p < paths.size(); ++p) {
    const BlrPathInit& path = paths[p];
    const auto check = [&](const char* field, std::size_t have, std::size_t want) {
      require(have == want, "{}: path {} {} has {} values, want {}", context, p, field, have, want);
    };
    check("bits_u", path.bits_u.size(), std::size_t{shape.m} * words);
    check("bits_v", path.bits_v.size(), std::size_t{shape.n} * words);
    check("h", path.h.size(), shape.m);
    check("l", path.l.size(), shape.rank);
    check("g", path.g.size(), shape.n);
  }
}

}  // namespace vkblr::io
