// rank_curve.hpp — a layer's error-vs-rank curve, measured before any
// training, for vkblr-fit --model-bpw (rank_allocation.hpp): the held-out
// output error ‖X(Ŵ_r − W)ᵀ‖ / ‖XWᵀ‖ of an initial binary approximation
// Ŵ_r of P·r sign columns at each candidate rank r = 32, 64, ..., R.
//
// Ŵ_r is the Dual-SVID init taken 32 rank columns at a time: one init of
// P·R/32 paths of rank 32, each path (a block) fitted to the residual
// W − (the blocks before) by a randomized SVD of rank 32 with seed + b, and
// Ŵ_r its first P·r/32 blocks. The residual is held dense on the device
// (init/gpu_dual_svid.hpp's gpu_dual_svid_init_dense), so every block costs
// the same. Block b depends only on the blocks before it: the curve to
// rank R starts with the curve to any smaller rank, bit for bit
// (rank_allocation.hpp's rounds measure a curve again, longer, on that).
// At r = 32 that is the fit's init of P paths of rank 32 (the
// same SVDs and seeds; bit for bit for P = 1, up to rounding beyond).
// Beyond, each further block fits what the blocks before left,
// binarisation error included. Truncating one init of rank R instead
// would not: for a weight whose spectrum decays fast, its extra columns are
// the signs of near-zero singular directions and its error stays flat with
// the rank, while training does make use of the extra sign vectors.
//
// Scales are rounded as the layer's result file stores them (as_stored)
// for the error; the residual each block fits subtracts the blocks before
// as fitted (f32 scales), as the init does. The error is computed on the
// device in f32 (ops::gemm_f32) on the held-out tokens: Y = X·Wᵀ [T][m]
// once, then per block E −= (X·B)·Aᵀ with A = diag(h)·S_U·diag(ℓ) [m][32]
// and B = diag(g)·S_V [n][32]. Cost: P·R/32 randomized SVDs of rank 32 of
// an m×n matrix (O(m·n·P·R) in all) and O(T·(m+n)·P·R) for the errors; one
// more f32 copy of W on the device. The same bits run after run on one
// device.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init/randomized_svd.hpp"  // LowRankTerm
#include "vkblr-fit/io/device_data.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// The held-out output error of Ŵ = Σ terms a·bᵀ against one layer's W, as
// terms are added.
class HeldOutResidual {
 public:
  // W f32 [m][n] and the held-out tokens of `data` (its last
  // held_out_tokens rows of X); Ŵ = 0. Throws vkblr::Error when X·Wᵀ is
  // zero on them (a relative error of nothing).
  HeldOutResidual(Context& ctx, const DeviceData& data);

  // Ŵ += t.a·t.bᵀ (a [m][k], b [n][k]); returns ‖X(Ŵ − W)ᵀ‖ / ‖XWᵀ‖.
  // Throws vkblr::Error for factors of another shape.
  double add(const LowRankTerm& t);

 private:
  Context& ctx_;
  DeviceMatrix x_;         // held-out tokens, f32 [T][n]
  DeviceMatrix residual_;  // X·Wᵀ − X·Ŵᵀ [T][m]
  DeviceMatrix xb_;        // X·b scratch [T][k]
  double target_sq_ = 0;   // ‖XWᵀ‖²
};

// The curve of a layer of shape.m × shape.n with shape.paths paths and
// scales of `scale_dtype` at ranks 32, ..., shape.rank (R): R/32 errors;
// `seed` is the fit's. Throws vkblr::Error for a bad shape
// (check_layer_shape) or one that is not W's.
std::vector<double> measure_rank_curve(Context& ctx, const DeviceData& data, const LayerShape& shape,
                                       ScaleDtype scale_dtype, std::uint64_t seed);

}  // namespace vkblr::fit
