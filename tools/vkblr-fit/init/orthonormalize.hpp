// orthonormalize.hpp — an orthonormal basis of a tall matrix's columns on
// the device: CholeskyQR2 with f32 Gram matrices, the factorisations on the
// host in f64.
//
// f16 GEMMs are not accurate enough for this; f32 ones are when each pass
// starts from a matrix of condition number below ~10³ (CholeskyQR's Gram
// squares it; f32 carries about 7 digits). Per pass: G = YᵀY (device, f32),
// G = RᵀR (host Cholesky, f64), Y ← Y·R⁻¹ (device). Two passes give
// columns orthonormal to f32 precision. When a Cholesky fails (condition
// numbers up to ~10⁷, e.g. a square Gaussian matrix), one shifted pass
// (G + s·I, shifted CholeskyQR3) makes Y well conditioned first; when that
// fails too (Y's columns dependent), an eigenvalue pass (SVQB: G = V·Λ·Vᵀ,
// Y ← Y·V_k·Λ_k^-½ over the eigenvalues above 10⁻⁶·λ_max) drops the
// dependent directions: the basis then has fewer columns than Y had. Two
// plain passes always end it. Deterministic (fixed-order f32 GEMMs, LAPACK
// on the host).
#pragma once

#include <cstdint>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct OrthonormalizeStats {
  std::uint32_t passes = 0;      // Gram passes run
  std::uint32_t shifted_passes = 0;  // of which shifted Cholesky passes
  std::uint32_t eigen_passes = 0;    // of which eigenvalue (SVQB) passes
};

// Replaces y [rows][l] (rows >= l) by an orthonormal basis of its column
// span: y [rows][k], k <= l (k < l when y is rank deficient; k = 0 when y
// is zero). `scratch` is a matrix with room for rows·l values (its shape is
// overwritten); y and scratch may swap buffers.
OrthonormalizeStats orthonormalize(Context& ctx, DeviceMatrix& y, DeviceMatrix& scratch);

}  // namespace vkblr::fit
