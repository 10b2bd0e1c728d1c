// fit_matrices.hpp — f64 test matrices for vkblr-fit's linear algebra: a
// Gaussian matrix, and one with a given spectrum in random orthonormal
// bases.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr-fit/init/linalg.hpp"
#include "vkblr/io/matrix.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/random.hpp"

namespace vkt {

// rows×cols standard Gaussian values.
inline vkblr::fit::MatrixF64 gaussian_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  vkblr::fit::Rng rng(seed);
  vkblr::fit::MatrixF64 a(rows, cols);
  for (double& x : a.values) x = rng.normal();
  return a;
}

// U·diag(sigma)·Vᵀ from random orthonormal U [rows][k], V [cols][k].
inline vkblr::fit::MatrixF64 with_spectrum(std::size_t rows, std::size_t cols, const std::vector<double>& sigma,
                                           std::uint64_t seed) {
  vkblr::fit::Rng rng(seed);
  vkblr::fit::MatrixF64 u = vkblr::fit::random_orthonormal_columns(rows, sigma.size(), rng);
  const vkblr::fit::MatrixF64 v = vkblr::fit::random_orthonormal_columns(cols, sigma.size(), rng);
  for (std::size_t i = 0; i < rows; ++i) {
    for (std::size_t k = 0; k < sigma.size(); ++k) u(i, k) *= sigma[k];
  }
  return vkblr::fit::multiply_nt(u, v);
}

}  // namespace vkt
