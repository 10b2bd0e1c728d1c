// vkblr-fit's error measures against direct f64 sums.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "support/fit_files.hpp"
#include "support/host.hpp"
#include "vkblr-fit/report/metrics.hpp"

using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinRel;

namespace {

template <class T>
HostMatrix<T> random_matrix(std::size_t rows, std::size_t cols, std::uint64_t seed) {
  vkt::Rng rng(seed);
  HostMatrix<T> a(rows, cols);
  for (T& x : a.values) x = static_cast<T>(rng.normal());
  return a;
}

}  // namespace

TEST_CASE("metrics: weight, output and activation-weighted errors", "[fit]") {
  const std::size_t m = 12, n = 20, tokens = 600;  // more tokens than one block
  const Matrix w = random_matrix<float>(m, n, 1);
  const MatrixF64 w_hat = random_matrix<double>(m, n, 2);
  Matrix x = random_matrix<float>(tokens, n, 3);
  for (std::size_t t = 0; t < tokens; ++t) x(t, 5) *= 8.0f;  // one loud channel

  double weight_num = 0, weight_den = 0;
  for (std::size_t i = 0; i < w.values.size(); ++i) {
    weight_num += std::pow(w_hat.values[i] - w.values[i], 2);
    weight_den += std::pow(double{w.values[i]}, 2);
  }
  CHECK_THAT(relative_weight_error(w_hat, w), WithinRel(std::sqrt(weight_num / weight_den), 1e-12));

  double out_num = 0, out_den = 0;
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t i = 0; i < m; ++i) {
      double y = 0, y_hat = 0;
      for (std::size_t j = 0; j < n; ++j) {
        y += double{x(t, j)} * w(i, j);
        y_hat += double{x(t, j)} * w_hat(i, j);
      }
      out_num += (y_hat - y) * (y_hat - y);
      out_den += y * y;
    }
  }
  CHECK_THAT(relative_output_error(w_hat, w, x), WithinRel(std::sqrt(out_num / out_den), 1e-10));

  std::vector<double> s(n, 0.0);
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t j = 0; j < n; ++j) s[j] += double{x(t, j)} * x(t, j) / tokens;
  }
  double aw_num = 0, aw_den = 0;
  for (std::size_t i = 0; i < m; ++i) {
    for (std::size_t j = 0; j < n; ++j) {
      aw_num += s[j] * std::pow(w_hat(i, j) - w(i, j), 2);
      aw_den += s[j] * std::pow(double{w(i, j)}, 2);
    }
  }
  CHECK_THAT(activation_weighted_error(w_hat, w, x), WithinRel(std::sqrt(aw_num / aw_den), 1e-12));

  // Orthogonal input channels: the two activation errors agree.
  Matrix identity(n, n);
  for (std::size_t j = 0; j < n; ++j) identity(j, j) = static_cast<float>(j + 1);
  CHECK_THAT(activation_weighted_error(w_hat, w, identity), WithinRel(relative_output_error(w_hat, w, identity), 1e-12));
}

TEST_CASE("metrics: mismatched shapes and zero references are refused", "[fit]") {
  const Matrix w = random_matrix<float>(4, 6, 1);
  const MatrixF64 w_hat = random_matrix<double>(4, 6, 2);
  CHECK_THAT(vkt::error_of([&] { relative_weight_error(random_matrix<double>(6, 4, 2), w); }),
             ContainsSubstring("Ŵ is 6×4, W 4×6"));
  CHECK_THAT(vkt::error_of([&] { relative_output_error(w_hat, w, random_matrix<float>(3, 5, 3)); }),
             ContainsSubstring("X is 3×5"));
  CHECK_THAT(vkt::error_of([&] { relative_weight_error(w_hat, Matrix(4, 6)); }), ContainsSubstring("undefined"));
}
