// host_lapack.hpp — the small dense problems of the GPU init and refit on
// the host, in f64, through LAPACK (OpenBLAS on one thread, whatever the
// machine or OPENBLAS_NUM_THREADS say: the same bits with any core count).
//
// Matrices are n×n, symmetric where stated, stored row-major in a
// std::vector<double> of n·n (for a symmetric matrix row- and column-major
// are the same data). Nothing here throws for numerical trouble: the
// results say what happened; shapes that do not match throw vkblr::Error.
#pragma once

#include <cstddef>
#include <vector>

namespace vkblr::fit {

// The upper Cholesky factor R of a symmetric positive definite G = RᵀR,
// row-major, zeros below the diagonal; false (and `g` unusable) when G is
// not positive definite in f64.
bool cholesky_upper(std::vector<double>& g, std::size_t n);

// The inverse of an upper-triangular R (row-major, in place).
void invert_upper(std::vector<double>& r, std::size_t n);

// G = V·diag(λ)·Vᵀ of a symmetric G: λ in descending order, V row-major
// [n][n] with eigenvector j in column j (unit norm, sign as LAPACK gives).
struct SymmetricEigen {
  std::vector<double> values;   // [n], descending
  std::vector<double> vectors;  // [n][n] row-major
};
SymmetricEigen symmetric_eigen(std::vector<double> g, std::size_t n);

// Solves the symmetric positive semi-definite system (G + ridge·mean(diag G)·I)·x = b
// (Cholesky; an LDLᵀ fallback when that fails); returns x, or an empty
// vector when no solution is finite.
std::vector<double> solve_ridged(std::vector<double> g, std::vector<double> b, std::size_t n, double ridge);

}  // namespace vkblr::fit
