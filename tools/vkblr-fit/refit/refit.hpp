// refit.hpp — output-aware refinement of a blr layer's initial paths on the
// host: alternating exact binary least squares under the calibration
// activations' covariance (docs/sign-optimizer.md, "Host refit").
//
// Dual-SVID fits W in weight space; the training objective is the output
// error ‖X·(Ŵ − W)ᵀ‖² = tr((Ŵ − W)·C·(Ŵ − W)ᵀ)·T with C = XᵀX/T [n][n] the
// activations' second-moment matrix. A sweep visits every path p in turn,
// with the other paths fixed (residual R = W − Σ_{q≠p} Ŵ_q), and
//   1. S_U row by row (rows are independent under C): exact coordinate
//      descent on the signs of row i — flipping s = S_U[i][k] changes the
//      loss by ΔL = 4·h_i²·(Q_kk − s·(Q·s)_k) + 4·h_i·s·P_ik with
//      B = diag(ℓ)·S_Vᵀ·diag(g), Q = B·C·Bᵀ [r][r], P = R·C·Bᵀ [m][r];
//      a sign flips when ΔL < 0 (passes until none does, at most 8);
//      then h_i = (s·P_i)/(sᵀQs), the row's exact least-squares scale (a
//      negative h_i flips the row's signs instead).
//   2. S_V row by row (rows coupled through C): with A = diag(h)·S_U·diag(ℓ),
//      Q = AᵀA [r][r], K = diag(g)·C·diag(g) [n][n], E = Q·S_Vᵀ·K − Aᵀ·R·C·diag(g)
//      [r][n] (half the gradient), flipping s = S_V[j][k] changes the loss by
//      ΔL = −4·s·E_kj + 4·Q_kk·K_jj exactly; E is kept current (a rank-1
//      update per changed row).
//   3. ℓ, then g, by their exact least-squares solutions given everything
//      else (r×r and n×n linear systems, a 1e-9 relative ridge); a negative
//      ℓ_k or g_j flips its sign column or row instead.
// Every accepted change lowers the loss on the training tokens (up to
// rounding), so a sweep never makes the training error worse. Deterministic
// (single-threaded, fixed order). Cost per sweep and path: O(T·n²) once for
// C, then O(m·n² + m·r² + n·(r² + r·n)) — seconds for 3584×1024 at rank 352.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "vkblr/io/layer_shape.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

struct RefitOptions {
  std::uint32_t sweeps = 4;  // 0: no refit
};

struct RefitStats {
  std::uint64_t sign_changes = 0;  // signs that differ from the input paths
  double train_error_before = 0;   // ‖X(Ŵ − W)ᵀ‖/‖XWᵀ‖ on x (training tokens), f64
  double train_error_after = 0;
};

// Refines `paths` (a layer of `shape` fitted to w [m][n]) in place for
// activations x [T][n] (the training tokens). Throws vkblr::Error for
// shapes that do not fit (naming "refit" and the sizes).
RefitStats refit_paths(const Matrix& w, const Matrix& x, const LayerShape& shape, std::vector<BlrPathInit>& paths,
                       const RefitOptions& options);

// The training objective of each candidate (a layer of `shape`, fitted to
// w [m][n]): ‖X(Ŵ − W)ᵀ‖/‖XWᵀ‖ on x [T][n] in f64, through one shared
// C = XᵀX/T (O(T·n²) once, then O(m·n·(n + r)) per candidate). Throws
// vkblr::Error as refit_paths for shapes that do not fit.
std::vector<double> training_output_errors(const Matrix& w, const Matrix& x, const LayerShape& shape,
                                           std::span<const std::vector<BlrPathInit>> candidates);

// Writes host paths into a layer made by make_blr_layer (bitmaps and the
// concatenated scales); waits for the device. Throws vkblr::Error when they
// do not fit.
void upload_paths(BlrLayer& layer, const std::vector<BlrPathInit>& paths);

}  // namespace vkblr::fit
