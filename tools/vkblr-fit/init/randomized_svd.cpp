#include "vkblr-fit/init/randomized_svd.hpp"

#include <algorithm>
#include <cmath>

#include "vkblr-fit/init/host_lapack.hpp"
#include "vkblr-fit/init/orthonormalize.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/random.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

// Products with R and Rᵀ; `small` holds Bᵀ·Z (or Aᵀ·Q) [r][l].
class Residual {
 public:
  Residual(Context& ctx, const ResidualOperator& op, std::uint32_t l) : ctx_(ctx), op_(op) {
    std::uint32_t r = 1;
    for (const LowRankTerm& t : op.terms) r = std::max(r, t.a.cols);
    small_ = device_matrix(ctx, r, l, "fit.svd.small");
  }

  // y [m][k] = R·z (z [n][k]).
  void apply(const DeviceMatrix& z, DeviceMatrix& y) { record(z, y, false); }
  // z [n][k] = Rᵀ·q (q [m][k]).
  void apply_t(const DeviceMatrix& q, DeviceMatrix& z) { record(q, z, true); }

 private:
  void record(const DeviceMatrix& in, DeviceMatrix& out, bool transpose) {
    const DeviceMatrix& w = *op_.w;
    out.rows = transpose ? w.cols : w.rows;
    out.cols = in.cols;
    Recorder rec(ctx_);
    rec.add(product(ctx_, w, transpose, in, false, out));
    for (const LowRankTerm& t : op_.terms) {
      // R·z: out −= a·(bᵀ·z); Rᵀ·q: out −= b·(aᵀ·q)
      const DeviceMatrix& near = transpose ? t.b : t.a;
      const DeviceMatrix& far = transpose ? t.a : t.b;
      small_.rows = far.cols;
      small_.cols = in.cols;
      rec.add(product(ctx_, far, true, in, false, small_));
      rec.add(product(ctx_, near, false, small_, false, out, -1.0f, true));
    }
    rec.run();
  }

  Context& ctx_;
  const ResidualOperator& op_;
  DeviceMatrix small_;
};

}  // namespace

ScaledFactors randomized_svd(Context& ctx, const ResidualOperator& op, std::uint32_t rank,
                             const RandomizedSvdOptions& options) {
  require(op.w != nullptr, "randomized_svd: no W");
  const std::uint32_t m = op.w->rows, n = op.w->cols;
  require(rank >= 1, "randomized_svd: rank 0");
  for (const LowRankTerm& t : op.terms) {
    require(t.a.rows == m && t.b.rows == n && t.a.cols == t.b.cols,
            "randomized_svd: a term of factors {}×{} and {}×{} for W {}×{}", t.a.rows, t.a.cols, t.b.rows, t.b.cols,
            m, n);
  }
  const std::uint32_t small_side = std::min(m, n);
  const std::uint32_t l = std::min(rank + options.oversampling, small_side);
  Residual residual(ctx, op, l);

  // Y = R·Ω, Q = orth(Y)
  DeviceMatrix omega = device_matrix(ctx, n, l, "fit.svd.omega");
  {
    Recorder rec(ctx);
    rec.add(ops::gaussian(ctx, omega.buffer, omega.elements(), options.seed, 0));
    rec.run();
  }
  DeviceMatrix q = device_matrix(ctx, m, l, "fit.svd.q");
  DeviceMatrix q_scratch = device_matrix(ctx, m, l, "fit.svd.q2");
  residual.apply(omega, q);
  orthonormalize(ctx, q, q_scratch);
  // power iterations (pointless when Q spans all of R's column space)
  DeviceMatrix z = device_matrix(ctx, n, l, "fit.svd.z");
  DeviceMatrix z_scratch = device_matrix(ctx, n, l, "fit.svd.z2");
  const std::uint32_t iterations = l == small_side ? 0 : options.power_iterations;
  for (std::uint32_t i = 0; i < iterations && q.cols > 0; ++i) {
    residual.apply_t(q, z);
    orthonormalize(ctx, z, z_scratch);
    if (z.cols == 0) {
      q.cols = 0;
      break;
    }
    residual.apply(z, q);
    orthonormalize(ctx, q, q_scratch);
  }

  ScaledFactors out{MatrixF64(m, rank), MatrixF64(n, rank), std::vector<double>(rank, 0.0)};
  const std::uint32_t k = q.cols;  // the basis (R's numerical rank when below l)
  if (k == 0) return out;          // R = 0: every factor zero
  // Bᵀ = Rᵀ·Q [n][k]; B·Bᵀ [k][k] = U_B·Σ²·U_Bᵀ
  DeviceMatrix& bt = z;
  residual.apply_t(q, bt);
  // the small matrices and the thin outputs cross to and from the host
  DeviceMatrix bbt = host_matrix(ctx, k, k, "fit.svd.bbt");
  {
    Recorder rec(ctx);
    rec.add(product(ctx, bt, true, bt, false, bbt));
    rec.run();
  }
  const SymmetricEigen e = symmetric_eigen(download_matrix(bbt), k);
  const std::uint32_t kept = std::min(rank, k);
  // U·Σ^½ = Q·(U_B·Σ^½), V·Σ^½ = Bᵀ·(U_B·Σ^-½) over the top `kept` pairs
  std::vector<double> left(std::size_t{k} * kept), right(std::size_t{k} * kept);
  for (std::uint32_t j = 0; j < kept; ++j) {
    const double sigma = std::sqrt(std::max(e.values[j], 0.0));
    out.sigma[j] = sigma;
    const double root = std::sqrt(sigma);
    for (std::uint32_t i = 0; i < k; ++i) {
      const double v = e.vectors[std::size_t{i} * k + j];
      left[std::size_t{i} * kept + j] = v * root;
      right[std::size_t{i} * kept + j] = root > 0 ? v / root : 0.0;
    }
  }
  DeviceMatrix left_d = upload_matrix(ctx, left, k, kept, "fit.svd.left", MatrixMemory::host);
  DeviceMatrix right_d = upload_matrix(ctx, right, k, kept, "fit.svd.right", MatrixMemory::host);
  DeviceMatrix u_prime = host_matrix(ctx, m, kept, "fit.svd.u_prime");
  DeviceMatrix v_prime = host_matrix(ctx, n, kept, "fit.svd.v_prime");
  {
    Recorder rec(ctx);
    rec.add(product(ctx, q, false, left_d, false, u_prime));
    rec.add(product(ctx, bt, false, right_d, false, v_prime));
    rec.run();
  }
  const std::vector<double> u_values = download_matrix(u_prime), v_values = download_matrix(v_prime);
  for (std::uint32_t i = 0; i < m; ++i) {
    std::copy_n(u_values.begin() + std::size_t{i} * kept, kept, out.u_prime.values.begin() + std::size_t{i} * rank);
  }
  for (std::uint32_t i = 0; i < n; ++i) {
    std::copy_n(v_values.begin() + std::size_t{i} * kept, kept, out.v_prime.values.begin() + std::size_t{i} * rank);
  }
  return out;
}

}  // namespace vkblr::fit
