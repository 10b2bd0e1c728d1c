// dual_svid.hpp — initialising a blr layer from a dense weight by dual
// sign-value-independent decomposition (Dual-SVID, LittleBit), and the
// dense weight a layer's host values stand for.
//
// Per path, on the residual R = W − Ŵ(paths so far) (R = W for the first):
//   truncated SVD R ≈ U·Σ·Vᵀ of rank r (fewer terms when min(m, n) < r:
//   the missing columns are zero), U′ = U·Σ^½ [m][r], V′ = V·Σ^½ [n][r];
//   S_U = sign U′, S_V = sign V′ (sign(0) = +1);
//   |U′| ≈ h·ℓ_uᵀ and |V′| ≈ g·ℓ_vᵀ by their top singular pairs (both
//   non-negative), ℓ = ℓ_u ⊙ ℓ_v;
//   then h, ℓ, g rescaled by factors whose product is 1 so their
//   root-mean-squares are equal (Ŵ unchanged; the f16 range used evenly).
// The residual of the next path subtracts this path's Ŵ as stored (f32
// scales), so later paths correct the rounding of earlier ones too.
#pragma once

#include <span>
#include <vector>

#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/init/linalg.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

// The size of the factor entry each sign stands for, relative to its
// factor: |U′_ij| / rms(U′) and |V′_ij| / rms(V′) (all 0 for a zero
// factor). A sign of a small entry is a weak choice, one training should
// flip first. u f32 [m][r], v f32 [n][r], as the bitmaps.
struct SignMagnitudes {
  std::vector<float> u, v;
};

// The initial paths of a layer of `shape` (shape.m×shape.n must be w's
// shape); options.seed + p seeds path p's randomized SVD. Throws
// vkblr::Error for a bad shape (check_layer_shape) or a mismatch with w.
std::vector<BlrPathInit> dual_svid_init(const Matrix& w, const LayerShape& shape, const SvdOptions& options = {});

// One path from U′ = U·Σ^½ [m][r] and V′ = V·Σ^½ [n][r] (r a multiple of
// 32; zero columns where the SVD had fewer terms): the signs, the rank-1
// factors of the magnitudes, the rebalance (above). Shared by the host and
// the GPU (init/gpu_dual_svid.hpp) inits. Throws vkblr::Error for factors of
// different ranks. With `magnitudes`, also each sign's (above).
BlrPathInit path_from_scaled_factors(const MatrixF64& u_prime, const MatrixF64& v_prime,
                                     SignMagnitudes* magnitudes = nullptr);

// Ŵ = Σ_p diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g) in f64 [m][n]. Throws
// vkblr::Error when the paths do not fit the shape (check_path_sizes).
MatrixF64 reconstruct_weight(const LayerShape& shape, std::span<const BlrPathInit> paths);

}  // namespace vkblr::fit
