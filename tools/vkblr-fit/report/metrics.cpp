#include "vkblr-fit/report/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vkblr-fit/init/linalg.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

void check_weights(const MatrixF64& w_hat, const Matrix& w, const char* metric) {
  require(w_hat.rows == w.rows && w_hat.cols == w.cols, "{}: Ŵ is {}×{}, W {}×{}", metric, w_hat.rows, w_hat.cols,
          w.rows, w.cols);
}

void check_activations(const Matrix& w, const Matrix& x, const char* metric) {
  require(x.cols == w.cols && x.rows >= 1, "{}: X is {}×{}, W {}×{}: want X [T >= 1][{}]", metric, x.rows, x.cols,
          w.rows, w.cols, w.cols);
}

double ratio(double error_squares, double reference_squares, const char* metric) {
  require(reference_squares > 0, "{}: the reference is zero, a relative error is undefined", metric);
  return std::sqrt(error_squares / reference_squares);
}

}  // namespace

double relative_weight_error(const MatrixF64& w_hat, const Matrix& w) {
  check_weights(w_hat, w, "relative weight error");
  double error = 0, reference = 0;
  for (std::size_t i = 0; i < w.values.size(); ++i) {
    const double d = w_hat.values[i] - double{w.values[i]};
    error += d * d;
    reference += double{w.values[i]} * w.values[i];
  }
  return ratio(error, reference, "relative weight error");
}

double relative_output_error(const MatrixF64& w_hat, const Matrix& w, const Matrix& x) {
  check_weights(w_hat, w, "relative output error");
  check_activations(w, x, "relative output error");
  const MatrixF64 reference_weight = convert_matrix<double>(w);
  MatrixF64 difference = w_hat;
  for (std::size_t i = 0; i < difference.values.size(); ++i) difference.values[i] -= reference_weight.values[i];
  constexpr std::size_t kBlockTokens = 256;
  double error = 0, reference = 0;
  for (std::size_t t0 = 0; t0 < x.rows; t0 += kBlockTokens) {
    const std::size_t tokens = std::min(kBlockTokens, x.rows - t0);
    MatrixF64 block(tokens, x.cols);
    std::copy_n(x.values.begin() + static_cast<std::ptrdiff_t>(t0 * x.cols), tokens * x.cols, block.values.begin());
    for (const double e : multiply_nt(block, difference).values) error += e * e;
    for (const double y : multiply_nt(block, reference_weight).values) reference += y * y;
  }
  return ratio(error, reference, "relative output error");
}

double activation_weighted_error(const MatrixF64& w_hat, const Matrix& w, const Matrix& x) {
  check_weights(w_hat, w, "activation-weighted error");
  check_activations(w, x, "activation-weighted error");
  std::vector<double> mean_square(x.cols, 0.0);
  for (std::size_t t = 0; t < x.rows; ++t) {
    for (std::size_t j = 0; j < x.cols; ++j) mean_square[j] += double{x(t, j)} * x(t, j);
  }
  for (double& s : mean_square) s /= static_cast<double>(x.rows);
  double error = 0, reference = 0;
  for (std::size_t i = 0; i < w.rows; ++i) {
    for (std::size_t j = 0; j < w.cols; ++j) {
      const double d = w_hat(i, j) - double{w(i, j)};
      error += mean_square[j] * d * d;
      reference += mean_square[j] * double{w(i, j)} * w(i, j);
    }
  }
  return ratio(error, reference, "activation-weighted error");
}

}  // namespace vkblr::fit
