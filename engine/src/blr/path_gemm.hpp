// path_gemm.hpp — the split-K of a blr layer's GEMMs.
#pragma once

#include <cstdint>

#include "vkblr/context.hpp"
#include "vkblr/gemm.hpp"

namespace vkblr::detail {

// `shape` with the split-K that the layer's `paths` GEMMs of this shape get
// together (gemm_splits_for): a choice from the layer, so the bits do not
// depend on how many paths are recorded side by side.
inline GemmShape path_gemm(const Context& ctx, std::uint32_t paths, GemmShape shape) {
  const GemmTile tile = gemm_tile_for(ctx, shape.m, shape.n, shape.k);
  shape.k_splits = gemm_splits_for(ctx, tile, shape.m, shape.n, shape.k, paths);
  return shape;
}

}  // namespace vkblr::detail
