// vkblr-fit's synthetic weight and activations: deterministic for a seed,
// with the spectrum, heavy columns, scale and outlier channels asked for;
// and the held-out split.
#include <algorithm>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_floating_point.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cmath>

#include "support/fit_files.hpp"
#include "vkblr-fit/init/linalg.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr::fit;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::WithinRel;

namespace {

double column_norm(const Matrix& a, std::size_t j) {
  double s = 0;
  for (std::size_t i = 0; i < a.rows; ++i) s += double{a(i, j)} * a(i, j);
  return std::sqrt(s);
}

}  // namespace

TEST_CASE("synthetic weight: seeded, power-law spectrum, heavy columns, rms", "[fit]") {
  const SyntheticWeightSpec plain{.m = 96, .n = 64, .spectrum_decay = 0.8, .heavy_columns = 0, .rms = 0.05, .seed = 3};
  const Matrix w = synthetic_weight(plain);
  REQUIRE(w.rows == 96);
  REQUIRE(w.cols == 64);
  CHECK(synthetic_weight(plain).values == w.values);
  SyntheticWeightSpec other = plain;
  other.seed = 4;
  CHECK(synthetic_weight(other).values != w.values);

  double squares = 0;
  for (const float x : w.values) squares += double{x} * x;
  CHECK_THAT(std::sqrt(squares / static_cast<double>(w.values.size())), WithinRel(0.05, 1e-5));

  const TruncatedSvd svd = truncated_svd(convert_matrix<double>(w), 64, {.method = SvdMethod::exact});
  for (const std::size_t k : {1u, 7u, 31u, 63u}) {
    CHECK_THAT(svd.sigma[0] / svd.sigma[k], WithinRel(std::pow(static_cast<double>(k + 1), 0.8), 1e-4));
  }

  SyntheticWeightSpec heavy = plain;
  heavy.heavy_columns = 3;
  heavy.heavy_column_scale = 6.0;
  const Matrix wh = synthetic_weight(heavy);
  std::vector<double> norms(64);
  for (std::size_t j = 0; j < 64; ++j) norms[j] = column_norm(wh, j) / column_norm(w, j);
  std::ranges::sort(norms);
  // Three columns six times their plain size, the rest scaled alike.
  CHECK_THAT(norms[63] / norms[0], WithinRel(6.0, 1e-5));
  CHECK_THAT(norms[61] / norms[0], WithinRel(6.0, 1e-5));
  CHECK_THAT(norms[60] / norms[0], WithinRel(1.0, 1e-5));

  CHECK_THAT(vkt::error_of([] { synthetic_weight({.m = 0, .n = 4}); }), ContainsSubstring("empty"));
  CHECK_THAT(vkt::error_of([] { synthetic_weight({.m = 4, .n = 4, .heavy_columns = 5}); }),
             ContainsSubstring("5 heavy columns in 4 columns"));
}

TEST_CASE("synthetic activations: seeded Gaussians with outlier channels", "[fit]") {
  const SyntheticActivationSpec spec{.tokens = 4000, .n = 48, .outlier_channels = 2, .outlier_scale = 10.0, .seed = 5};
  const Matrix x = synthetic_activations(spec);
  REQUIRE(x.rows == 4000);
  REQUIRE(x.cols == 48);
  CHECK(synthetic_activations(spec).values == x.values);
  std::vector<double> deviations(48);
  for (std::size_t j = 0; j < 48; ++j) deviations[j] = column_norm(x, j) / std::sqrt(4000.0);
  std::ranges::sort(deviations);
  CHECK_THAT(deviations[47], WithinRel(10.0, 0.06));
  CHECK_THAT(deviations[46], WithinRel(10.0, 0.06));
  CHECK_THAT(deviations[45], WithinRel(1.0, 0.06));
  CHECK_THAT(deviations[0], WithinRel(1.0, 0.06));
  CHECK_THAT(vkt::error_of([] { synthetic_activations({.tokens = 8, .n = 4, .outlier_channels = 5}); }),
             ContainsSubstring("5 outlier channels in 4 channels"));
}

TEST_CASE("synthetic activations: a power-law covariance spectrum in a random basis", "[fit]") {
  const std::size_t tokens = 20000, n = 32;
  const SyntheticActivationSpec spec{
      .tokens = tokens, .n = n, .spectrum_decay = 1.0, .outlier_channels = 0, .outlier_scale = 1.0, .seed = 8};
  const Matrix x = synthetic_activations(spec);
  CHECK(synthetic_activations(spec).values == x.values);
  // sample covariance, its trace (Σλ = n) and its top eigenvalue by power
  // iteration: λ₀ = n / Σ_i (i+1)^-1
  std::vector<double> cov(n * n, 0.0);
  for (std::size_t t = 0; t < tokens; ++t) {
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) cov[i * n + j] += double{x(t, i)} * x(t, j) / tokens;
    }
  }
  double trace = 0, harmonic = 0;
  for (std::size_t i = 0; i < n; ++i) {
    trace += cov[i * n + i];
    harmonic += 1.0 / static_cast<double>(i + 1);
  }
  std::vector<double> v(n, 1.0), w(n);
  double top = 0;
  for (int it = 0; it < 300; ++it) {
    double norm = 0;
    for (std::size_t i = 0; i < n; ++i) {
      w[i] = 0;
      for (std::size_t j = 0; j < n; ++j) w[i] += cov[i * n + j] * v[j];
      norm += w[i] * w[i];
    }
    top = std::sqrt(norm);
    for (std::size_t i = 0; i < n; ++i) v[i] = w[i] / top;
  }
  CHECK_THAT(trace, WithinRel(double(n), 0.03));
  CHECK_THAT(top, WithinRel(double(n) / harmonic, 0.05));
  // correlated: no channel carries its eigenvalue alone (a random basis)
  double largest_diagonal = 0;
  for (std::size_t i = 0; i < n; ++i) largest_diagonal = std::max(largest_diagonal, cov[i * n + i]);
  CHECK(largest_diagonal < 0.6 * top);
  CHECK_THAT(vkt::error_of([] { synthetic_activations({.tokens = 8, .n = 4, .spectrum_decay = -1.0}); }),
             ContainsSubstring("decay -1"));
}

TEST_CASE("held-out split: the last tokens, refusing an empty side", "[fit]") {
  Matrix x(5, 2);
  for (std::size_t i = 0; i < x.values.size(); ++i) x.values[i] = static_cast<float>(i);
  const TokenSplit split = split_tokens(x, 2);
  CHECK(split.train.rows == 3);
  CHECK(split.train.cols == 2);
  CHECK(split.train.values == std::vector<float>{0, 1, 2, 3, 4, 5});
  CHECK(split.held_out.rows == 2);
  CHECK(split.held_out.values == std::vector<float>{6, 7, 8, 9});
  CHECK_THAT(vkt::error_of([&] { split_tokens(x, 0); }), ContainsSubstring("0 held-out tokens of 5"));
  CHECK_THAT(vkt::error_of([&] { split_tokens(x, 5); }), ContainsSubstring("5 held-out tokens of 5"));
}
