// gemm_ref.hpp — host references of the GEMM operands and products.
#pragma once

#include <cstdint>
#include <vector>

#include "support/host.hpp"

namespace vkt {

// Sign bitmap [rows][words] of a ±1 matrix s [rows][cols] (cols <= 32·words):
// bit j of word w = s[row][32w + j] > 0.
inline std::vector<std::uint32_t> pack_signs(const std::vector<float>& s, std::size_t rows, std::size_t cols) {
  const std::size_t words = (cols + 31) / 32;
  std::vector<std::uint32_t> b(rows * words, 0);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) {
      if (s[r * cols + c] > 0) b[r * words + c / 32] |= 1u << (c % 32);
    }
  }
  return b;
}

// ±1 matrix [rows][cols] with random signs.
inline std::vector<float> random_signs(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  Rng r(seed);
  std::vector<float> s(rows * cols);
  for (auto& v : s) v = (r.next() >> 63) ? 1.0f : -1.0f;
  return s;
}

inline std::vector<float> transpose(const std::vector<float>& a, std::size_t rows, std::size_t cols) {
  std::vector<float> t(rows * cols);
  for (std::size_t r = 0; r < rows; ++r) {
    for (std::size_t c = 0; c < cols; ++c) t[c * rows + r] = a[r * cols + c];
  }
  return t;
}

// Values rounded to f16 (as the GPU sees them after staging).
inline std::vector<float> f16_rounded(std::vector<float> v) {
  for (auto& x : v) x = vkblr::f16_to_f32(vkblr::f32_to_f16(x));
  return v;
}

// out[m][n] = a[m][k] · b[n][k]ᵀ · scale in f64.
inline std::vector<double> matmul_nt(const std::vector<float>& a, const std::vector<float>& b, std::size_t m,
                                     std::size_t n, std::size_t k, double scale = 1.0) {
  std::vector<double> out(m * n);
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      double s = 0;
      for (std::size_t p = 0; p < k; ++p) s += double(a[i * k + p]) * double(b[j * k + p]);
      out[i * n + j] = s * scale;
    }
  }
  return out;
}

}  // namespace vkt
