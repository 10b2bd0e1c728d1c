// vkblr/io/bpw.hpp — bits per weight of a blr layer, counted honestly: every sign
// bit, every scale in its stored dtype, and the layer's metadata, over the
// m·n weights it replaces:
//
//   bpw = [P·r·(m+n)  +  s·P·(m+n+r)  +  metadata] / (m·n)
//          sign bits      scale bits (s = 16 for f16, 32 for f32)
#pragma once

#include <cstdint>
#include <string>

#include "vkblr/io/layer_shape.hpp"

namespace vkblr::io {

// The metadata a layer cannot do without: m, n, rank and paths as u32.
inline constexpr std::uint64_t kLayerMetadataBits = 4 * 32;

struct BitsPerWeight {
  LayerShape shape;
  ScaleDtype scale_dtype = ScaleDtype::f16;
  std::uint64_t sign_bits = 0, scale_bits = 0, metadata_bits = 0, weights = 0;
  double sign_bpw = 0, scale_bpw = 0, metadata_bpw = 0, total = 0;

  // Everything the layer stores: sign + scale + metadata bits.
  std::uint64_t bits() const { return sign_bits + scale_bits + metadata_bits; }

  // The formula with this layer's numbers and each term, e.g.
  // "bpw = [P·r·(m+n) = 2·384·(3584+1024) = 3538944 sign bits + 16·P·(m+n+r)
  //  = ... scale bits + 128 metadata bits] / (m·n = 3670016) = 0.9643 +
  //  0.0435 + 0.0000 = 1.0078"
  std::string formula() const;
};

// Throws vkblr::Error for a bad shape (check_layer_shape).
BitsPerWeight bits_per_weight(const LayerShape& shape, ScaleDtype scale_dtype,
                              std::uint64_t metadata_bits = kLayerMetadataBits);

// The largest rank, a multiple of 32, whose bpw is at most `target_bpw`.
// Throws vkblr::Error naming the bounds when no rank fits (the target is
// below rank 32's bpw) or when the rank would exceed max_useful_rank(m, n)
// (the target is above what the layer can use), or for a bad m, n, paths.
std::uint32_t rank_for_bpw(std::uint32_t m, std::uint32_t n, std::uint32_t paths, ScaleDtype scale_dtype,
                           double target_bpw, std::uint64_t metadata_bits = kLayerMetadataBits);

}  // namespace vkblr::io
