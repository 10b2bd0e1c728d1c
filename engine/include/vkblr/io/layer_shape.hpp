// vkblr/io/layer_shape.hpp — the shape of a blr layer and the storage dtype of its
// scales, with the checks every module applies to them.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "vkblr/blr.hpp"

namespace vkblr::io {

// m×n (out×in), rank r, P paths: Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g).
struct LayerShape {
  std::uint32_t m = 0, n = 0, rank = 0, paths = 0;
  bool operator==(const LayerShape&) const = default;
};

// How scales (h, ℓ, g) are stored in a result file and counted in bpw.
enum class ScaleDtype { f16, f32 };
unsigned scale_bits(ScaleDtype dtype);               // 16, 32
std::string_view scale_dtype_name(ScaleDtype dtype);  // "F16", "F32"

// The largest rank worth having for an m×n layer: min(m, n) rounded up to a
// multiple of 32 (a larger rank adds nothing but bits).
std::uint32_t max_useful_rank(std::uint32_t m, std::uint32_t n);

// Throws vkblr::Error ("{context}: ...") unless m, n >= 1, paths >= 1 and
// the rank is a multiple of 32 in [32, max_useful_rank(m, n)].
void check_layer_shape(const LayerShape& shape, std::string_view context);

// Throws vkblr::Error naming the path and field unless `paths` has
// shape.paths entries of the BlrPathInit layout: bits_u u32 [m][r/32],
// bits_v u32 [n][r/32], h [m], l [r], g [n].
void check_path_sizes(const LayerShape& shape, std::span<const BlrPathInit> paths, std::string_view context);

}  // namespace vkblr::io
