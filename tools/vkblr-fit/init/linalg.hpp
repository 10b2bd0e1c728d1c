// linalg.hpp — the dense linear algebra of vkblr-fit on the host, in f64
// (Eigen underneath; this is the only translation unit that includes it).
//
// Matrices are MatrixF64, row-major. Nothing here throws except for
// mismatched shapes (vkblr::Error naming the function and the shapes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/random.hpp"

namespace vkblr::fit {

enum class SvdMethod {
  automatic,   // randomized for large matrices at a small rank, exact otherwise
  exact,       // Eigen's BDCSVD (Jacobi below its size threshold)
  randomized,  // Halko–Martinsson–Tropp range finder with power iterations
};

struct SvdOptions {
  SvdMethod method = SvdMethod::automatic;
  std::size_t oversampling = 16;     // randomized: extra sample columns
  std::size_t power_iterations = 3;  // randomized: subspace iterations
  std::uint64_t seed = 1;            // randomized: the Gaussian test matrix
};

// The method `automatic` picks for a rows×cols matrix at `rank`: randomized
// when min(rows, cols) >= 512 and rank + oversampling <= min(rows, cols)/4
// (where it does a fraction of BDCSVD's work), exact otherwise.
SvdMethod resolve_svd_method(std::size_t rows, std::size_t cols, std::size_t rank, const SvdOptions& options);

// a ≈ u·diag(sigma)·vᵀ with k = min(rank, rows, cols) terms: u [rows][k] and
// v [cols][k] with orthonormal columns, sigma [k] non-increasing, >= 0.
struct TruncatedSvd {
  MatrixF64 u, v;
  std::vector<double> sigma;
  SvdMethod method = SvdMethod::exact;  // the method that ran
};
TruncatedSvd truncated_svd(const MatrixF64& a, std::size_t rank, const SvdOptions& options = {});

// The top singular pair of a matrix with non-negative entries (power
// iteration from a positive vector): a ≈ sigma·u·vᵀ, ‖u‖ = ‖v‖ = 1, u and v
// non-negative (Perron–Frobenius). A zero matrix gives sigma = 0.
struct SingularPair {
  double sigma = 0;
  std::vector<double> u, v;  // [rows], [cols]
};
SingularPair top_singular_pair_nonnegative(const MatrixF64& a);

// rows×cols (cols <= rows) with orthonormal columns, uniformly distributed
// (the Q of a QR factorisation of a Gaussian matrix, signs fixed by R's
// diagonal).
MatrixF64 random_orthonormal_columns(std::size_t rows, std::size_t cols, Rng& rng);

// a·bᵀ: a [p][k], b [q][k] -> [p][q].
MatrixF64 multiply_nt(const MatrixF64& a, const MatrixF64& b);

}  // namespace vkblr::fit
