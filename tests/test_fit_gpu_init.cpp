// vkblr-fit's GPU init: CholeskyQR2 orthonormalisation, the randomized SVD
// of a residual on the device, and the GPU Dual-SVID init — against the f64
// host linear algebra (linalg.hpp, dual_svid.hpp) on random inputs.
#include <catch2/catch_test_macros.hpp>
#include <cmath>

#include "support/fit_matrices.hpp"
#include "support/gpu.hpp"
#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/init/orthonormalize.hpp"
#include "vkblr-fit/init/randomized_svd.hpp"
#include "vkblr-fit/init/linalg.hpp"
#include "vkblr-fit/random.hpp"
#include "vkblr-fit/refit/refit.hpp"
#include "vkblr-fit/io/synthetic.hpp"

using namespace vkblr;
using namespace vkblr::fit;

namespace {

using vkt::gaussian_matrix;
using vkt::with_spectrum;

// max |qᵀq − I|.
double orthonormality_defect(const std::vector<double>& q, std::size_t rows, std::size_t cols) {
  double worst = 0;
  for (std::size_t a = 0; a < cols; ++a) {
    for (std::size_t b = 0; b < cols; ++b) {
      double dot = 0;
      for (std::size_t i = 0; i < rows; ++i) dot += q[i * cols + a] * q[i * cols + b];
      worst = std::max(worst, std::abs(dot - (a == b ? 1.0 : 0.0)));
    }
  }
  return worst;
}

// ‖y − q·qᵀ·y‖ / ‖y‖: how much of y's columns lies outside span(q).
double outside_span(const MatrixF64& y, const std::vector<double>& q, std::size_t k) {
  double outside = 0, total = 0;
  for (std::size_t c = 0; c < y.cols; ++c) {
    std::vector<double> coef(k, 0.0);
    for (std::size_t j = 0; j < k; ++j) {
      for (std::size_t i = 0; i < y.rows; ++i) coef[j] += q[i * k + j] * y(i, c);
    }
    for (std::size_t i = 0; i < y.rows; ++i) {
      double r = y(i, c);
      for (std::size_t j = 0; j < k; ++j) r -= q[i * k + j] * coef[j];
      outside += r * r;
      total += y(i, c) * y(i, c);
    }
  }
  return std::sqrt(outside / total);
}

struct Orthonormalized {
  std::vector<double> q;
  std::uint32_t cols = 0;
  OrthonormalizeStats stats;
};

Orthonormalized orthonormalize_on_device(Context& ctx, const MatrixF64& y) {
  const auto rows = static_cast<std::uint32_t>(y.rows), cols = static_cast<std::uint32_t>(y.cols);
  DeviceMatrix d = upload_matrix(ctx, y.values, rows, cols, "test.y");
  DeviceMatrix scratch = device_matrix(ctx, rows, cols, "test.scratch");
  Orthonormalized out;
  out.stats = orthonormalize(ctx, d, scratch);
  out.cols = d.cols;
  if (d.cols > 0) out.q = download_matrix(d);
  return out;
}

MatrixF64 to_f64(const Matrix& m) { return convert_matrix<double>(m); }

// The family of issue 19's measurements: singular values exp(−k/(r/6)) +
// 0.05, 1 % of the input columns ×4, unit standard deviation.
Matrix exponential_family(std::uint32_t m, std::uint32_t n, std::uint32_t r, std::uint64_t seed) {
  const std::size_t k = std::min(m, n);
  std::vector<double> sigma(k);
  for (std::size_t i = 0; i < k; ++i) sigma[i] = std::exp(-static_cast<double>(i) / (r / 6.0)) + 0.05;
  MatrixF64 w = with_spectrum(m, n, sigma, seed);
  for (std::size_t j = 0; j < n; j += 100) {
    for (std::size_t i = 0; i < m; ++i) w(i, j) *= 4;
  }
  double sq = 0;
  for (const double v : w.values) sq += v * v;
  const double scale = 1 / std::sqrt(sq / static_cast<double>(w.values.size()));
  Matrix out(m, n);
  for (std::size_t i = 0; i < w.values.size(); ++i) out.values[i] = static_cast<float>(w.values[i] * scale);
  return out;
}

}  // namespace

GPU_TEST("GPU orthonormalize: an orthonormal basis of the columns' span", "[fit][gpu][init]") {
  const MatrixF64 y = gaussian_matrix(300, 40, 11);
  const Orthonormalized o = orthonormalize_on_device(ctx, y);
  REQUIRE(o.cols == 40);
  CHECK(o.stats.eigen_passes == 0);
  CHECK(o.stats.passes == 2);
  CHECK(orthonormality_defect(o.q, 300, 40) < 2e-6);
  CHECK(outside_span(y, o.q, 40) < 2e-6);
}

GPU_TEST("GPU orthonormalize: ill-conditioned and rank-deficient columns", "[fit][gpu][init]") {
  SECTION("condition number 1e5") {
    MatrixF64 y = gaussian_matrix(256, 32, 12);
    for (std::size_t i = 0; i < y.rows; ++i) {
      for (std::size_t j = 0; j < y.cols; ++j) y(i, j) *= std::pow(10.0, -5.0 * static_cast<double>(j) / 31);
    }
    const Orthonormalized o = orthonormalize_on_device(ctx, y);
    REQUIRE(o.cols == 32);
    CHECK(orthonormality_defect(o.q, 256, 32) < 1e-5);
    CHECK(outside_span(y, o.q, 32) < 1e-5);
  }
  SECTION("eight columns repeat others: rank 24 of 32") {
    MatrixF64 y = gaussian_matrix(128, 32, 13);
    for (std::size_t i = 0; i < y.rows; ++i) {
      for (std::size_t j = 24; j < 32; ++j) y(i, j) = y(i, j - 24) - 0.5 * y(i, j - 20);
    }
    const Orthonormalized o = orthonormalize_on_device(ctx, y);
    CHECK(o.stats.eigen_passes >= 1);
    REQUIRE(o.cols == 24);
    CHECK(orthonormality_defect(o.q, 128, 24) < 2e-6);
    CHECK(outside_span(y, o.q, 24) < 1e-5);
  }
  SECTION("zero columns: an empty basis") {
    const Orthonormalized o = orthonormalize_on_device(ctx, MatrixF64(64, 8));
    CHECK(o.cols == 0);
  }
}

GPU_TEST("GPU randomized SVD equals the exact SVD of the residual", "[fit][gpu][init]") {
  const std::uint32_t m = 160, n = 128, rank = 32;
  std::vector<double> sigma(96);
  for (std::size_t i = 0; i < sigma.size(); ++i) sigma[i] = std::pow(0.93, static_cast<double>(i));
  const MatrixF64 w = with_spectrum(m, n, sigma, 21);
  // a low-rank term subtracted: R = W − a·bᵀ
  const MatrixF64 a = gaussian_matrix(m, rank, 22), b = gaussian_matrix(n, rank, 23);
  MatrixF64 r = w;
  const MatrixF64 ab = multiply_nt(a, b);
  for (std::size_t i = 0; i < r.values.size(); ++i) r.values[i] -= 0.01 * ab.values[i];
  std::vector<double> a_scaled = a.values;
  for (double& v : a_scaled) v *= 0.01;

  const DeviceMatrix w_d = upload_matrix(ctx, w.values, m, n, "test.w");
  ResidualOperator op{&w_d, {}};
  op.terms.push_back({upload_matrix(ctx, a_scaled, m, rank, "test.a"), upload_matrix(ctx, b.values, n, rank, "test.b")});
  const ScaledFactors f = randomized_svd(ctx, op, rank, {.oversampling = 16, .power_iterations = 3, .seed = 5});
  const TruncatedSvd exact = truncated_svd(r, rank, {.method = SvdMethod::exact});
  for (std::size_t k = 0; k < rank; ++k) CHECK(std::abs(f.sigma[k] - exact.sigma[k]) <= 1e-4 * exact.sigma[0]);
  // U′·V′ᵀ is the rank-32 truncation U_r·Σ_r·V_rᵀ
  MatrixF64 exact_us = exact.u;
  for (std::size_t i = 0; i < exact_us.rows; ++i) {
    for (std::size_t k = 0; k < rank; ++k) exact_us(i, k) *= exact.sigma[k];
  }
  const MatrixF64 want = multiply_nt(exact_us, exact.v), got = multiply_nt(f.u_prime, f.v_prime);
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < want.values.size(); ++i) {
    diff += (got.values[i] - want.values[i]) * (got.values[i] - want.values[i]);
    ref += want.values[i] * want.values[i];
  }
  CHECK(std::sqrt(diff / ref) < 2e-3);
}

GPU_TEST("GPU Dual-SVID: training-token error within 1 % of the f64 host init", "[fit][gpu][init]") {
  struct Case {
    const char* name;
    Matrix w, x;
    LayerShape shape;
  };
  std::vector<Case> cases;
  cases.push_back({"vkblr's default synthetic family", synthetic_weight({.m = 256, .n = 192, .seed = 31}),
                   synthetic_activations({.tokens = 1024, .n = 192, .spectrum_decay = 1.0, .seed = 32}),
                   {256, 192, 64, 2}});
  Matrix x_iso = synthetic_activations({.tokens = 1024, .n = 192, .outlier_channels = 3, .outlier_scale = 8, .seed = 34});
  cases.push_back({"exponential spectrum, heavy columns", exponential_family(256, 192, 64, 33), std::move(x_iso),
                   {256, 192, 64, 2}});
  for (const Case& c : cases) {
    INFO(c.name);
    const std::vector<BlrPathInit> host = dual_svid_init(c.w, c.shape, {.method = SvdMethod::exact});
    const DeviceMatrix w_d = upload_matrix(ctx, to_f64(c.w).values, c.shape.m, c.shape.n, "test.w");
    const std::vector<BlrPathInit> gpu = gpu_dual_svid_init(ctx, w_d, c.shape, {.seed = 7});
    const std::array<std::vector<BlrPathInit>, 2> candidates{host, gpu};
    const std::vector<double> errors = training_output_errors(c.w, c.x, c.shape, candidates);
    INFO("host " << errors[0] << ", GPU " << errors[1]);
    CHECK(errors[1] <= 1.01 * errors[0]);
    CHECK(errors[1] >= 0.9 * errors[0]);
  }
}
