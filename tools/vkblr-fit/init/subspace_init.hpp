// subspace_init.hpp — initialising a blr layer by recovering binary vectors
// in the dominant subspaces of the weight ("sign recovery"), an alternative
// to Dual-SVID's sign(U·Σ^½) (docs/sign-optimizer.md, "Subspace init").
//
// Why: when W ≈ diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g), span(U_r) ≈
// span(diag(h)·S_U), but the singular vectors are rotations of the planted
// columns wherever the ℓ_k are close, so sign(U) is far from S_U. The
// planted columns are the ±1 vectors s with diag(h)·s in the subspace; they
// are found by alternating projection from many starts.
//
// Per path, on the residual R = W − Ŵ(paths so far) (R = W for the first),
// on its longer side (rows; for m < n the same on Rᵀ, swapped back):
//   1. truncated SVD R ≈ U·Σ·Vᵀ of rank r;
//   2. ĥ_i = ‖R_i,:‖, ĝ_j = ‖R_:,j‖ (the row and column scales up to a
//      factor); B = an orthonormal basis of diag(1/ĥ)·U [m][r];
//   3. binary vectors in span(B) (find_binary_vectors): the planted columns
//      are the maxima of ‖Bᵀs‖² = m over s ∈ {±1}^m, the stored patterns of
//      a Hopfield network with the projection rule J = B·Bᵀ − diag(B·Bᵀ).
//      Each start s = sign(B·z) (z Gaussian; the vectors found so far
//      projected out of B·z) runs asynchronous single-sign dynamics
//      s_i ← sign((J·s)_i + t·ξ) with Gaussian ξ, t cooled linearly from
//      temperature·√(r/m) to 0 over half the sweeps, then zero-temperature
//      sweeps until no sign changes. (Plain alternating projection
//      s ← sign(B·Bᵀ·s) from random starts stalls at spurious fixed points
//      once r/m is not small: 0 of 32 planted columns at 128×32.) A result
//      is kept when it captures ‖Bᵀs‖²/m >= `accept` and its |correlation|
//      with every kept vector is below `distinct`; starts stop when r are
//      kept, after `starts`, or after `patience` in a row keep nothing;
//   4. for the k vectors kept (S_U's first k columns): the least-squares
//      coefficients M = (diag(ĥ)·S_U)⁺·R [k][n] ≈ diag(ℓ)·S_Vᵀ·diag(g) give
//      S_V[:,k] = sign(M_k,:), ℓ_k = mean_j |M_kj|/ĝ_j;
//   5. the other r − k columns take sign(u_k), sign(v_k) of the truncated
//      SVD of diag(1/ĥ)·(R − Ŵ so far)·diag(1/ĝ), ℓ_k their rank-1 least
//      squares;
//   6. h, ℓ, g by alternating weight-space least squares (`scale_rounds`;
//      a negative value flips its sign column or row), then rebalanced to a
//      common root-mean-square as Dual-SVID leaves them.
// Deterministic for a seed (path p uses seed + p; single-threaded).
//
// Cost per path: the SVD (as Dual-SVID), then per start at most `sweeps`
// passes of O(m·r) each (a field is a dot product with Bᵀ·s, kept
// current; the zero-temperature sweeps stop early). A weight that is not
// close to a blr layer yields nothing, and the search stops after
// `patience` fruitless starts. That costs several times Dual-SVID's init
// on a weight that is not a blr layer, so the init is opt-in (vkblr-fit
// --init). The search reaches planted columns at rank 32 but not at rank
// 64 or 96; figures in docs/sign-optimizer.md, "Subspace init".
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/init/linalg.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

struct SubspaceOptions {
  std::uint64_t starts = 0;    // starts of the search per path; 0: 64·rank
  std::uint64_t patience = 256;  // stop after this many starts in a row keep nothing
  std::uint32_t sweeps = 200;  // sweeps per start (the first half cooling), >= 2
  double temperature = 1.0;    // initial noise, in units of √(r/m) (a random s's field)
  double accept = 0.97;        // least captured fraction ‖Bᵀs‖²/rows of a kept vector, in (0, 1]
  double distinct = 0.5;       // kept vectors have |sᵀt|/rows below this, in (0, 1)
  std::uint32_t scale_rounds = 3;  // weight-space least-squares rounds of h, ℓ, g
  std::uint64_t seed = 1;          // path p: seed + p (the SVD's and the starts')
};

// Binary vectors s ∈ {±1}^rows (columns of `signs`, at most `count`) with s
// (nearly) in span(basis), found as step 3 above; `captured` holds
// ‖basisᵀs‖²/rows of each, non-increasing. basis [rows][k] must have
// orthonormal columns. Throws vkblr::Error for bad options (naming them).
struct BinaryVectors {
  MatrixF64 signs;  // [rows][found], ±1
  std::vector<double> captured;
};
BinaryVectors find_binary_vectors(const MatrixF64& basis, std::size_t count, const SubspaceOptions& options,
                                  Rng& rng);

struct SubspaceStats {
  std::vector<std::uint32_t> found;  // per path: binary vectors kept (columns from step 3; the rest: step 5)
};

// The initial paths of a layer of `shape` for w (shape.m×shape.n). Throws
// vkblr::Error for a bad shape (check_layer_shape), a mismatch with w or
// bad options; `stats` (optional) receives what each path found.
std::vector<BlrPathInit> subspace_init(const Matrix& w, const LayerShape& shape, const SubspaceOptions& options = {},
                                       SubspaceStats* stats = nullptr);

}  // namespace vkblr::fit
