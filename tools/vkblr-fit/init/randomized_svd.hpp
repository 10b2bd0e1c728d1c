// randomized_svd.hpp — the truncated SVD of a layer's residual on the
// device (Halko–Martinsson–Tropp range finder with power iterations), for
// the GPU Dual-SVID init.
//
// The operator is R = W − Σ_q A_q·B_qᵀ: W f32 [m][n] and the paths fitted
// so far as f32 factors A_q = diag(h)·S_U·diag(ℓ) [m][r], B_q = diag(g)·S_V
// [n][r] (ops::expand_f32); R is never formed. With l = min(rank +
// oversampling, m, n) samples:
//   Y = R·Ω (Ω [n][l] Gaussian, ops::gaussian with the seed), Q = orth(Y);
//   power_iterations × { Z = orth(Rᵀ·Q), Q = orth(R·Z) }   (none when l = min(m, n));
//   Bᵀ = Rᵀ·Q [n][l], BBᵀ = (Bᵀ)ᵀ·Bᵀ [l][l] = U_B·Σ²·U_Bᵀ (host, f64);
//   U·Σ^½ = Q·U_B·Σ^½ and V·Σ^½ = Bᵀ·U_B·Σ^-½ (the top `rank` pairs).
// orth() is orthonormalize.hpp's CholeskyQR2. Every product is an f32 GEMM
// (ops::gemm_f32); the l×l problems run on the host. Deterministic for a
// seed on a given device.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// Ŵ_q = a·bᵀ: a [m][r], b [n][r] on the device.
struct LowRankTerm {
  DeviceMatrix a, b;
};

// R = w − Σ terms.
struct ResidualOperator {
  const DeviceMatrix* w = nullptr;  // [m][n]
  std::vector<LowRankTerm> terms;
};

struct RandomizedSvdOptions {
  std::uint32_t oversampling = 16;
  std::uint32_t power_iterations = 3;
  std::uint64_t seed = 1;
};

// The top `rank` singular triplets of R as the scaled factors U·Σ^½ [m][rank]
// and V·Σ^½ [n][rank] (f64 on the host; columns past R's numerical rank or
// past l are zero) and σ [rank] (non-increasing, zero past the rank).
struct ScaledFactors {
  MatrixF64 u_prime, v_prime;
  std::vector<double> sigma;
};

// Throws vkblr::Error for rank 0 or operands that do not fit.
ScaledFactors randomized_svd(Context& ctx, const ResidualOperator& op, std::uint32_t rank,
                             const RandomizedSvdOptions& options);

}  // namespace vkblr::fit
