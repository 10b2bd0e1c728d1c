// vkblr/io/matrix.hpp — host matrices, as the readers return W and X:
// dense, row-major, owning.
//
// HostMatrix<T> holds rows×cols values, element (i, j) at values[i·cols + j].
// Matrix (f32) is what the readers produce and the GPU consumes (W [m][n],
// activations X [T][n]); MatrixF64 carries the host linear algebra.
#pragma once

#include <cmath>
#include <cstddef>
#include <string_view>
#include <vector>

#include "vkblr/error.hpp"

namespace vkblr::io {

template <class T>
struct HostMatrix {
  std::size_t rows = 0, cols = 0;
  std::vector<T> values;  // [rows][cols]

  HostMatrix() = default;
  HostMatrix(std::size_t rows_, std::size_t cols_) : rows(rows_), cols(cols_), values(rows_ * cols_, T{}) {}

  T& operator()(std::size_t i, std::size_t j) { return values[i * cols + j]; }
  const T& operator()(std::size_t i, std::size_t j) const { return values[i * cols + j]; }
};

using Matrix = HostMatrix<float>;
using MatrixF64 = HostMatrix<double>;

// Element-wise conversion between precisions (f64 -> f32 rounds to nearest).
template <class To, class From>
HostMatrix<To> convert_matrix(const HostMatrix<From>& a) {
  HostMatrix<To> out(a.rows, a.cols);
  for (std::size_t i = 0; i < a.values.size(); ++i) out.values[i] = static_cast<To>(a.values[i]);
  return out;
}

// Throws vkblr::Error naming `what` and the first element that is NaN or
// infinite, e.g. "W (model.safetensors:q_proj) has a NaN at [3][17]".
template <class T>
void require_finite(const HostMatrix<T>& a, std::string_view what) {
  for (std::size_t i = 0; i < a.values.size(); ++i) {
    if (!std::isfinite(a.values[i])) {
      fail("{} has {} at [{}][{}]; every value must be finite", what, std::isnan(a.values[i]) ? "a NaN" : "an infinity",
           i / a.cols, i % a.cols);
    }
  }
}

}  // namespace vkblr::io
