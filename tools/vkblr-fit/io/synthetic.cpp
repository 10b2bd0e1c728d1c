#include "vkblr-fit/io/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include <Eigen/Dense>

#include "vkblr-fit/init/linalg.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
std::vector<std::size_t> distinct_indices(std::size_t n, std::size_t count, Rng& rng) {
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  for (std::size_t i = 0; i < count; ++i) std::swap(all[i], all[i + rng.below(n - i)]);
  all.resize(count);
  return all;
}

void check_weight_spec(const SyntheticWeightSpec& spec) {
  require(spec.m >= 1 && spec.n >= 1, "synthetic weight: shape {}×{} is empty", spec.m, spec.n);
  require(spec.heavy_columns <= spec.n, "synthetic weight: {} heavy columns in {} columns", spec.heavy_columns,
          spec.n);
  require(spec.heavy_column_scale > 0 && spec.rms > 0, "synthetic weight: scales must be positive");
  require(spec.spectrum_scale > 0 && spec.spectrum_floor >= 0 && std::isfinite(spec.spectrum_decay),
          "synthetic weight: spectrum parameters decay {}, scale {}, floor {} out of range", spec.spectrum_decay,
          spec.spectrum_scale, spec.spectrum_floor);
}

std::vector<double> spectrum_of(const SyntheticWeightSpec& spec) {
  std::vector<double> sigma(std::min(spec.m, spec.n));
  for (std::size_t c = 0; c < sigma.size(); ++c) {
    sigma[c] = spec.spectrum == WeightSpectrum::power_law
                   ? std::pow(static_cast<double>(c + 1), -spec.spectrum_decay)
                   : std::exp(-static_cast<double>(c) / spec.spectrum_scale) + spec.spectrum_floor;
  }
  return sigma;
}

void check_activation_spec(const SyntheticActivationSpec& spec) {
  require(spec.tokens >= 1 && spec.n >= 1, "synthetic activations: shape {}×{} is empty", spec.tokens, spec.n);
  require(spec.outlier_channels <= spec.n, "synthetic activations: {} outlier channels in {} channels",
          spec.outlier_channels, spec.n);
  require(spec.outlier_scale > 0, "synthetic activations: outlier scale {} is not positive", spec.outlier_scale);
  require(spec.spectrum_decay >= 0 && std::isfinite(spec.spectrum_decay),
          "synthetic activations: spectrum decay {} is negative", spec.spectrum_decay);
}

std::vector<double> covariance_spectrum_of(const SyntheticActivationSpec& spec) {
  std::vector<double> lambda(spec.n);
  double sum = 0;
  for (std::size_t c = 0; c < spec.n; ++c) sum += lambda[c] = std::pow(static_cast<double>(c + 1), -spec.spectrum_decay);
  for (double& l : lambda) l *= static_cast<double>(spec.n) / sum;
  return lambda;
}

Matrix synthetic_weight(const SyntheticWeightSpec& spec) {
  check_weight_spec(spec);
  Rng rng(spec.seed);
  const std::size_t k = std::min(spec.m, spec.n);
  MatrixF64 u = random_orthonormal_columns(spec.m, k, rng);
  const MatrixF64 v = random_orthonormal_columns(spec.n, k, rng);
  const std::vector<double> sigma = spectrum_of(spec);
  for (std::size_t i = 0; i < spec.m; ++i) {
    for (std::size_t c = 0; c < k; ++c) u(i, c) *= sigma[c];
  }
  MatrixF64 w = multiply_nt(u, v);
  for (const std::size_t j : distinct_indices(spec.n, spec.heavy_columns, rng)) {
    for (std::size_t i = 0; i < spec.m; ++i) w(i, j) *= spec.heavy_column_scale;
  }
  double sum_squares = 0;
  for (const double x : w.values) sum_squares += x * x;
  const double scale = spec.rms / std::sqrt(sum_squares / static_cast<double>(w.values.size()));
  Matrix out(spec.m, spec.n);
  for (std::size_t i = 0; i < w.values.size(); ++i) out.values[i] = static_cast<float>(w.values[i] * scale);
  return out;
}

Matrix synthetic_activations(const SyntheticActivationSpec& spec) {
  check_activation_spec(spec);
  Rng rng(spec.seed);
  std::vector<double> deviation(spec.n, 1.0);
  for (const std::size_t j : distinct_indices(spec.n, spec.outlier_channels, rng)) deviation[j] = spec.outlier_scale;
  Matrix x(spec.tokens, spec.n);
  if (spec.spectrum_decay == 0) {
    for (std::size_t t = 0; t < spec.tokens; ++t) {
      for (std::size_t j = 0; j < spec.n; ++j) x(t, j) = static_cast<float>(rng.normal() * deviation[j]);
    }
    return x;
  }
  for (float& v : x.values) v = static_cast<float>(rng.normal());
  // X = Z·diag(√λ)·Qᵀ: Q [n][n] random orthonormal, Σλ = n
  const MatrixF64 q = random_orthonormal_columns(spec.n, spec.n, rng);
  const std::vector<double> lambda = covariance_spectrum_of(spec);
  using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  RowMajorF mix(spec.n, spec.n);  // mix(c, j) = √λ_c · Q(j, c), times the channel's outlier scale
  for (std::size_t c = 0; c < spec.n; ++c) {
    const double root = std::sqrt(lambda[c]);
    for (std::size_t j = 0; j < spec.n; ++j) mix(c, j) = static_cast<float>(root * q(j, c) * deviation[j]);
  }
  Eigen::Map<RowMajorF> z(x.values.data(), static_cast<Eigen::Index>(spec.tokens), static_cast<Eigen::Index>(spec.n));
  const RowMajorF mixed = z * mix;
  z = mixed;
  return x;
}

TokenSplit split_tokens(const Matrix& x, std::size_t held_out_tokens) {
  require(held_out_tokens >= 1 && held_out_tokens < x.rows,
          "held-out split: {} held-out tokens of {}: want at least one of each side", held_out_tokens, x.rows);
  const std::size_t train_tokens = x.rows - held_out_tokens;
  const auto middle = x.values.begin() + static_cast<std::ptrdiff_t>(train_tokens * x.cols);
  TokenSplit split;
  split.train.rows = train_tokens;
  split.train.cols = x.cols;
  split.train.values.assign(x.values.begin(), middle);
  split.held_out.rows = held_out_tokens;
  split.held_out.cols = x.cols;
  split.held_out.values.assign(middle, x.values.end());
  return split;
}

}  // namespace vkblr::fit
