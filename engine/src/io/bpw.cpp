#include "vkblr/io/bpw.hpp"

#include <cmath>
#include <format>

#include "vkblr/error.hpp"

namespace vkblr::io {

BitsPerWeight bits_per_weight(const LayerShape& shape, ScaleDtype scale_dtype, std::uint64_t metadata_bits) {
  check_layer_shape(shape, "bits per weight");
  const std::uint64_t m = shape.m, n = shape.n, r = shape.rank, p = shape.paths;
  BitsPerWeight b;
  b.shape = shape;
  b.scale_dtype = scale_dtype;
  b.sign_bits = p * r * (m + n);
  b.scale_bits = scale_bits(scale_dtype) * p * (m + n + r);
  b.metadata_bits = metadata_bits;
  b.weights = m * n;
  const auto per_weight = [&](std::uint64_t bits) { return static_cast<double>(bits) / static_cast<double>(b.weights); };
  b.sign_bpw = per_weight(b.sign_bits);
  b.scale_bpw = per_weight(b.scale_bits);
  b.metadata_bpw = per_weight(b.metadata_bits);
  b.total = per_weight(b.sign_bits + b.scale_bits + b.metadata_bits);
  return b;
}

std::string BitsPerWeight::formula() const {
  const unsigned s = io::scale_bits(scale_dtype);
  return std::format(
      "bpw = [P·r·(m+n) = {}·{}·({}+{}) = {} sign bits + {}·P·(m+n+r) = {}·{}·({}+{}+{}) = {} scale bits ({}) + {} "
      "metadata bits] / (m·n = {}) = {:.4f} + {:.4f} + {:.4f} = {:.4f}",
      shape.paths, shape.rank, shape.m, shape.n, sign_bits, s, s, shape.paths, shape.m, shape.n, shape.rank,
      scale_bits, scale_dtype_name(scale_dtype), metadata_bits, weights, sign_bpw, scale_bpw, metadata_bpw, total);
}

std::uint32_t rank_for_bpw(std::uint32_t m, std::uint32_t n, std::uint32_t paths, ScaleDtype scale_dtype,
                           double target_bpw, std::uint64_t metadata_bits) {
  require(std::isfinite(target_bpw) && target_bpw > 0, "--bpw {}: want a positive number of bits per weight",
          target_bpw);
  check_layer_shape({m, n, 32, paths}, "--bpw");
  // The formula for any rank (bits_per_weight refuses ranks past the
  // useful maximum, which the search below must look at).
  const auto bpw_at = [&](std::uint64_t rank) {
    const std::uint64_t bits = paths * rank * (std::uint64_t{m} + n) +
                               scale_bits(scale_dtype) * paths * (std::uint64_t{m} + n + rank) + metadata_bits;
    return static_cast<double>(bits) / (static_cast<double>(m) * n);
  };
  require(bpw_at(32) <= target_bpw,
          "--bpw {}: too low for a {}×{} layer with {} path(s): rank 32, the smallest, takes {:.4f} bpw", target_bpw, m,
          n, paths, bpw_at(32));
  const std::uint32_t max_rank = max_useful_rank(m, n);
  require(bpw_at(std::uint64_t{max_rank} + 32) > target_bpw,
          "--bpw {}: too high for a {}×{} layer with {} path(s): rank {} (min(m, n) rounded up to 32) is the most it "
          "can use, at {:.4f} bpw",
          target_bpw, m, n, paths, max_rank, bpw_at(max_rank));
  // bpw grows with the rank: the answer is the last rank before it passes
  // the target, at most max_rank.
  std::uint32_t rank = 32;
  while (rank < max_rank && bpw_at(rank + 32) <= target_bpw) rank += 32;
  return rank;
}

}  // namespace vkblr::io
