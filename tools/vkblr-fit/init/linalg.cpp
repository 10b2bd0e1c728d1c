#include "vkblr-fit/init/linalg.hpp"

#include <Eigen/Dense>
#include <Eigen/SVD>
#include <algorithm>
#include <cmath>
#include <vector>

#include "vkblr-fit/parallel.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

// The least multiply-adds a piece of the rank-one power iteration's
// products must hold to be worth a thread of its own: each iteration starts
// and joins its threads, which costs tens of microseconds, and the init's
// factors are often as thin as m×32.
constexpr std::size_t kProductsPerThread = std::size_t{1} << 18;

using ColMajor = Eigen::MatrixXd;
using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Eigen::Map<const RowMajor> view(const MatrixF64& a) {
  return {a.values.data(), static_cast<Eigen::Index>(a.rows), static_cast<Eigen::Index>(a.cols)};
}

template <class Derived>
MatrixF64 to_matrix(const Eigen::MatrixBase<Derived>& e) {
  MatrixF64 out(static_cast<std::size_t>(e.rows()), static_cast<std::size_t>(e.cols()));
  Eigen::Map<RowMajor>(out.values.data(), e.rows(), e.cols()) = e;
  return out;
}

ColMajor gaussian(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  ColMajor g(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j) {
    for (Eigen::Index i = 0; i < rows; ++i) g(i, j) = rng.normal();
  }
  return g;
}

// An orthonormal basis of y's column space (thin Householder Q).
ColMajor orthonormal_basis(const ColMajor& y) {
  const Eigen::HouseholderQR<ColMajor> qr(y);
  return qr.householderQ() * ColMajor::Identity(y.rows(), y.cols());
}

TruncatedSvd from_svd(const ColMajor& u, const Eigen::VectorXd& sigma, const ColMajor& v, Eigen::Index k,
                      SvdMethod method) {
  TruncatedSvd out;
  out.u = to_matrix(u.leftCols(k));
  out.v = to_matrix(v.leftCols(k));
  out.sigma.assign(sigma.data(), sigma.data() + k);
  out.method = method;
  return out;
}

}  // namespace

SvdMethod resolve_svd_method(std::size_t rows, std::size_t cols, std::size_t rank, const SvdOptions& options) {
  if (options.method != SvdMethod::automatic) return options.method;
  const std::size_t small_side = std::min(rows, cols);
  return small_side >= 512 && 4 * (rank + options.oversampling) <= small_side ? SvdMethod::randomized
                                                                              : SvdMethod::exact;
}

TruncatedSvd truncated_svd(const MatrixF64& a, std::size_t rank, const SvdOptions& options) {
  const auto small_side = static_cast<Eigen::Index>(std::min(a.rows, a.cols));
  const Eigen::Index k = std::min(static_cast<Eigen::Index>(rank), small_side);
  const SvdMethod method = resolve_svd_method(a.rows, a.cols, rank, options);
  if (method == SvdMethod::exact || k == small_side) {
    const Eigen::BDCSVD<ColMajor> svd(ColMajor(view(a)), Eigen::ComputeThinU | Eigen::ComputeThinV);
    return from_svd(svd.matrixU(), svd.singularValues(), svd.matrixV(), k, SvdMethod::exact);
  }
  // Range finder: Q spans a's dominant column space, refined by subspace
  // iterations that re-orthonormalise after every product.
  const ColMajor A = view(a);
  const Eigen::Index samples = std::min(k + static_cast<Eigen::Index>(options.oversampling), small_side);
  Rng rng(options.seed);
  ColMajor q = orthonormal_basis(A * gaussian(A.cols(), samples, rng));
  for (std::size_t i = 0; i < options.power_iterations; ++i) {
    const ColMajor z = orthonormal_basis(A.transpose() * q);
    q = orthonormal_basis(A * z);
  }
  const ColMajor b = q.transpose() * A;  // samples × cols
  const Eigen::BDCSVD<ColMajor> svd(b, Eigen::ComputeThinU | Eigen::ComputeThinV);
  return from_svd(q * svd.matrixU(), svd.singularValues(), svd.matrixV(), k, SvdMethod::randomized);
}

SingularPair top_singular_pair_nonnegative(const MatrixF64& a) {
  const std::size_t rows = a.rows, cols = a.cols;
  const double* values = a.values.data();
  Eigen::VectorXd v = Eigen::VectorXd::Constant(static_cast<Eigen::Index>(cols),
                                                1.0 / std::sqrt(static_cast<double>(std::max<std::size_t>(cols, 1))));
  Eigen::VectorXd u = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(rows));
  Eigen::VectorXd next(static_cast<Eigen::Index>(cols));
  // The two products on every core; each output element is one sum in
  // index order, so the bits do not depend on the number of cores.
  const std::size_t rows_per_thread = std::max<std::size_t>(1, kProductsPerThread / std::max<std::size_t>(cols, 1));
  const std::size_t columns_per_thread = std::max<std::size_t>(1, kProductsPerThread / std::max<std::size_t>(rows, 1));
  const auto times_v = [&] {
    parallel_ranges(rows, rows_per_thread, [&](std::size_t begin, std::size_t end) {
      const double* vj = v.data();
      std::size_t i = begin;
      // four rows side by side: four independent sums (each still in index
      // order), where one row alone waits on every add
      for (; i + 4 <= end; i += 4) {
        const double *r0 = values + i * cols, *r1 = r0 + cols, *r2 = r1 + cols, *r3 = r2 + cols;
        double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
        for (std::size_t j = 0; j < cols; ++j) {
          s0 += r0[j] * vj[j];
          s1 += r1[j] * vj[j];
          s2 += r2[j] * vj[j];
          s3 += r3[j] * vj[j];
        }
        u[static_cast<Eigen::Index>(i)] = s0;
        u[static_cast<Eigen::Index>(i + 1)] = s1;
        u[static_cast<Eigen::Index>(i + 2)] = s2;
        u[static_cast<Eigen::Index>(i + 3)] = s3;
      }
      for (; i < end; ++i) {
        double sum = 0;
        for (std::size_t j = 0; j < cols; ++j) sum += values[i * cols + j] * vj[j];
        u[static_cast<Eigen::Index>(i)] = sum;
      }
    });
  };
  const auto transposed_times_u = [&] {
    parallel_ranges(cols, columns_per_thread, [&](std::size_t begin, std::size_t end) {
      std::vector<double> sums(end - begin, 0.0);
      for (std::size_t i = 0; i < rows; ++i) {
        const double ui = u[static_cast<Eigen::Index>(i)];
        const double* row = values + i * cols;
        for (std::size_t j = begin; j < end; ++j) sums[j - begin] += row[j] * ui;
      }
      for (std::size_t j = begin; j < end; ++j) next[static_cast<Eigen::Index>(j)] = sums[j - begin];
    });
  };
  double sigma = 0;
  // Converges at the rate (σ₂/σ₁)²; a non-negative matrix's σ₁ usually
  // dominates, so this takes a handful of iterations.
  for (int iteration = 0; iteration < 1000; ++iteration) {
    times_v();
    const double u_norm = u.norm();
    if (u_norm == 0) break;
    u /= u_norm;
    transposed_times_u();
    const double next_sigma = next.norm();
    v = next / next_sigma;
    const bool converged = std::abs(next_sigma - sigma) <= 1e-13 * next_sigma;
    sigma = next_sigma;
    if (converged) break;
  }
  SingularPair out;
  out.sigma = sigma;
  out.u.assign(u.data(), u.data() + u.size());
  out.v.assign(v.data(), v.data() + v.size());
  // Round-off can leave -0.0 or tiny negatives where an entry is zero.
  for (double& x : out.u) x = std::max(x, 0.0);
  for (double& x : out.v) x = std::max(x, 0.0);
  return out;
}

MatrixF64 random_orthonormal_columns(std::size_t rows, std::size_t cols, Rng& rng) {
  require(cols <= rows, "random_orthonormal_columns: {} columns cannot be orthonormal in {} rows", cols, rows);
  const ColMajor g = gaussian(static_cast<Eigen::Index>(rows), static_cast<Eigen::Index>(cols), rng);
  const Eigen::HouseholderQR<ColMajor> qr(g);
  ColMajor q = qr.householderQ() * ColMajor::Identity(g.rows(), g.cols());
  // Q·diag(sign(diag R)) is Haar-distributed; Q alone is not.
  const ColMajor r = qr.matrixQR().topRows(g.cols()).triangularView<Eigen::Upper>();
  for (Eigen::Index j = 0; j < q.cols(); ++j) {
    if (r(j, j) < 0) q.col(j) *= -1.0;
  }
  return to_matrix(q);
}

MatrixF64 multiply_nt(const MatrixF64& a, const MatrixF64& b) {
  require(a.cols == b.cols, "multiply_nt: a is {}×{}, b is {}×{}: inner dimensions differ", a.rows, a.cols, b.rows,
          b.cols);
  MatrixF64 out(a.rows, b.rows);
  Eigen::Map<RowMajor>(out.values.data(), static_cast<Eigen::Index>(a.rows), static_cast<Eigen::Index>(b.rows))
      .noalias() = view(a) * view(b).transpose();
  return out;
}

}  // namespace vkblr::fit
