// Subspace init of a blr layer (subspace_init.hpp): binary vectors in the
// weight's dominant subspace, the other side by least squares. Eigen
// underneath, f64.
#include "vkblr-fit/init/subspace_init.hpp"

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <numeric>

#include "vkblr-fit/init/dense_path.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RowMajor = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

Mat to_eigen(const MatrixF64& a) {
  return Eigen::Map<const RowMajor>(a.values.data(), static_cast<Eigen::Index>(a.rows),
                                    static_cast<Eigen::Index>(a.cols));
}

MatrixF64 from_eigen(const Mat& e) {
  MatrixF64 out(static_cast<std::size_t>(e.rows()), static_cast<std::size_t>(e.cols()));
  Eigen::Map<RowMajor>(out.values.data(), e.rows(), e.cols()) = e;
  return out;
}

// sign(0) = +1, as pack_signs.
Mat signs_of(const Mat& a) {
  return a.unaryExpr([](double x) { return x < 0 ? -1.0 : 1.0; });
}

Mat gaussian(Eigen::Index rows, Eigen::Index cols, Rng& rng) {
  Mat g(rows, cols);
  for (Eigen::Index j = 0; j < cols; ++j) {
    for (Eigen::Index i = 0; i < rows; ++i) g(i, j) = rng.normal();
  }
  return g;
}

Mat orthonormal_basis(const Mat& y) {
  const Eigen::HouseholderQR<Mat> qr(y);
  return qr.householderQ() * Mat::Identity(y.rows(), y.cols());
}

// Row (or column) norms, floored at 1e-12 of their mean so that 1/ĥ exists;
// all ones when every norm is 0 (a zero residual).
Vec floored(Vec norms) {
  const double mean = norms.mean();
  if (!(mean > 0)) return Vec::Ones(norms.size());
  for (double& x : norms) x = std::max(x, 1e-12 * mean);
  return norms;
}

void check_options(const SubspaceOptions& o) {
  require(o.accept > 0 && o.accept <= 1, "subspace init: accept {} must be in (0, 1]", o.accept);
  require(o.distinct > 0 && o.distinct < 1, "subspace init: distinct {} must be in (0, 1)", o.distinct);
  require(o.sweeps >= 2, "subspace init: sweeps {} must be at least 2", o.sweeps);
  require(o.temperature >= 0 && std::isfinite(o.temperature), "subspace init: temperature {} must be >= 0",
          o.temperature);
}


// 4. S_V and ℓ for found columns su [m][k] of S_U: the least-squares
// coefficients M = (diag(h)·su)⁺·R [k][n] ≈ diag(ℓ)·S_Vᵀ·diag(g), so
// S_V[:,k] = sign(M_k,:) and ℓ_k = mean_j |M_kj| / g_j. Fills the first k
// columns of p (p.h, p.g set).
void couple_columns(const Mat& r, const Mat& su, DensePath& p) {
  const Eigen::Index found = std::min(su.cols(), p.l.size());
  if (found == 0) return;
  const Mat a = p.h.asDiagonal() * su.leftCols(found);
  const Mat coefficients = a.colPivHouseholderQr().solve(r);  // [found][n]
  for (Eigen::Index k = 0; k < found; ++k) {
    p.su.col(k) = su.col(k);
    p.sv.col(k) = signs_of(coefficients.row(k).transpose());
    p.l(k) = std::max(coefficients.row(k).cwiseAbs().cwiseQuotient(p.g.transpose()).mean(), 1e-300);
  }
}

// 5. Columns [from, r) from the SVD of the scaled residual.
void fill_columns(const Mat& r, Eigen::Index from, const SvdOptions& svd_options, DensePath& p) {
  const Eigen::Index rank = p.l.size();
  if (from >= rank) return;
  const Mat rest = p.h.cwiseInverse().asDiagonal() * (r - p.weight()) * p.g.cwiseInverse().asDiagonal();
  const TruncatedSvd svd = truncated_svd(from_eigen(rest), static_cast<std::size_t>(rank - from), svd_options);
  const Mat u = to_eigen(svd.u), v = to_eigen(svd.v);
  for (Eigen::Index k = 0; k < rank - from; ++k) {
    Vec su = Vec::Ones(p.su.rows()), sv = Vec::Ones(p.sv.rows());
    if (k < u.cols()) {
      su = signs_of(u.col(k));
      sv = signs_of(v.col(k));
    }
    // ℓ = s_uᵀ·rest·s_v / (m·n): the rank-1 least squares of the signs
    const Vec rest_sv = rest * sv;
    const double l = su.dot(rest_sv) / static_cast<double>(su.size() * sv.size());
    p.su.col(from + k) = su;
    p.sv.col(from + k) = (l < 0 ? -1.0 : 1.0) * sv;
    p.l(from + k) = std::max(std::abs(l), 1e-300);
  }
}

// Solves (M + ridge)·x = b (M symmetric positive semi-definite, not empty).
// (trace/rows, not diagonal().mean(): GCC 14 inlining the latter here warns
// of a null dereference inside Eigen, an error under -Werror.)
Vec solve_ridged(Mat m, const Vec& b) {
  const double scale = std::max(m.trace() / static_cast<double>(m.rows()), 1e-300);
  m.diagonal().array() += 1e-9 * scale;
  return m.ldlt().solve(b);
}

// 6. h, ℓ, g by weight-space least squares, one after the other.
void fit_scales(const Mat& r, std::uint32_t rounds, DensePath& p) {
  for (std::uint32_t round = 0; round < rounds; ++round) {
    {  // ℓ: Gram (ÃᵀÃ)⊙(C̃ᵀC̃), Ã = diag(h)·S_U, C̃ = diag(g)·S_V
      const Mat a = p.h.asDiagonal() * p.su, c = p.g.asDiagonal() * p.sv;
      const Mat gram = (a.transpose() * a).cwiseProduct(c.transpose() * c);
      const Vec l = solve_ridged(gram, (a.transpose() * r * c).diagonal());
      if (l.allFinite()) {
        for (Eigen::Index k = 0; k < l.size(); ++k) {
          if (l(k) < 0) p.sv.col(k) = -p.sv.col(k);
          if (l(k) != 0) p.l(k) = std::abs(l(k));
        }
      }
    }
    {  // h_i = ⟨R_i, F_i⟩/‖F_i‖², F = S_U·diag(ℓ)·S_Vᵀ·diag(g)
      const Mat f = p.su * p.l.asDiagonal() * p.sv.transpose() * p.g.asDiagonal();
      for (Eigen::Index i = 0; i < f.rows(); ++i) {
        const double den = f.row(i).squaredNorm(), num = f.row(i).dot(r.row(i));
        if (!(den > 0) || num == 0) continue;
        if (num < 0) p.su.row(i) = -p.su.row(i);
        p.h(i) = std::abs(num) / den;
      }
    }
    {  // g_j likewise with G = diag(h)·S_U·diag(ℓ)·S_Vᵀ
      const Mat f = p.h.asDiagonal() * p.su * p.l.asDiagonal() * p.sv.transpose();
      for (Eigen::Index j = 0; j < f.cols(); ++j) {
        const double den = f.col(j).squaredNorm(), num = f.col(j).dot(r.col(j));
        if (!(den > 0) || num == 0) continue;
        if (num < 0) p.sv.row(j) = -p.sv.row(j);
        p.g(j) = std::abs(num) / den;
      }
    }
  }
}

// One path for the residual r [m][n], found on the longer side (rows of
// `r` when m >= n, else on rᵀ and swapped back).
DensePath init_path(const Mat& residual, std::uint32_t rank, const SubspaceOptions& options, std::uint64_t seed,
                    SubspaceStats* stats) {
  const bool transposed = residual.rows() < residual.cols();
  const Mat r = transposed ? Mat(residual.transpose()) : residual;
  const SvdOptions svd_options{.seed = seed};
  const TruncatedSvd svd = truncated_svd(from_eigen(r), rank, svd_options);
  DensePath p;
  p.h = floored(r.rowwise().norm());
  p.g = floored(r.colwise().norm().transpose());
  p.su = Mat::Ones(r.rows(), rank);
  p.sv = Mat::Ones(r.cols(), rank);
  p.l = Vec::Zero(rank);
  Rng rng(seed);
  const Mat basis = orthonormal_basis(p.h.cwiseInverse().asDiagonal() * to_eigen(svd.u));
  const BinaryVectors found = find_binary_vectors(from_eigen(basis), rank, options, rng);
  const Mat su = to_eigen(found.signs);
  couple_columns(r, su, p);
  fill_columns(r, su.cols(), svd_options, p);
  fit_scales(r, options.scale_rounds, p);
  balance_scales(p);
  if (stats) stats->found.push_back(static_cast<std::uint32_t>(su.cols()));
  if (transposed) {
    std::swap(p.su, p.sv);
    std::swap(p.h, p.g);
  }
  return p;
}

}  // namespace

BinaryVectors find_binary_vectors(const MatrixF64& basis_in, std::size_t count, const SubspaceOptions& options,
                                  Rng& rng) {
  check_options(options);
  const Mat basis = to_eigen(basis_in);
  const Eigen::Index rows = basis.rows(), k = basis.cols();
  require(k >= 1 && k <= rows, "subspace init: a basis of {} columns in {} rows", k, rows);
  const auto dim = static_cast<double>(rows);
  const std::uint64_t starts = options.starts ? options.starts : std::uint64_t{64} * static_cast<std::uint64_t>(k);
  // the field of s is (B·Bᵀ − diag(B·Bᵀ))·s: no self-coupling, which would
  // make every sign vector near a fixed point when k/rows is not small
  const Vec self = basis.rowwise().squaredNorm();
  const Mat rows_of = basis.transpose();  // [k][rows]: row i of B contiguous
  const double temperature = options.temperature * std::sqrt(static_cast<double>(k) / dim);
  const std::uint32_t anneal = options.sweeps / 2;
  Mat found(rows, 0);
  std::vector<double> captured;
  std::uint64_t idle = 0;  // starts in a row that kept nothing
  for (std::uint64_t start = 0;
       start < starts && found.cols() < static_cast<Eigen::Index>(count) && idle < options.patience; ++start) {
    Vec y = basis * gaussian(k, 1, rng);
    if (found.cols() > 0) {  // start away from what was found
      y -= found * (found.transpose() * found).ldlt().solve(found.transpose() * y);
    }
    Vec s = signs_of(y);
    Vec z = basis.transpose() * s;  // Bᵀ·s, kept current
    for (std::uint32_t sweep = 0; sweep < options.sweeps; ++sweep) {
      // linear cooling to zero over the first half, then zero-temperature
      // sweeps until no sign changes
      const double t = sweep < anneal ? temperature * (1.0 - static_cast<double>(sweep) / anneal) : 0.0;
      bool changed = false;
      for (Eigen::Index i = 0; i < rows; ++i) {
        double field = rows_of.col(i).dot(z) - self(i) * s(i);
        if (t > 0) field += t * rng.normal();
        const double want = field < 0 ? -1.0 : 1.0;
        if (want != s(i)) {
          z += (2 * want) * rows_of.col(i);
          s(i) = want;
          changed = true;
        }
      }
      if (!changed && t == 0) break;
    }
    const double capture = z.squaredNorm() / dim;
    const bool keep = capture >= options.accept &&
                      (found.cols() == 0 || (found.transpose() * s).cwiseAbs().maxCoeff() < options.distinct * dim);
    if (!keep) {
      ++idle;
      continue;
    }
    found.conservativeResize(Eigen::NoChange, found.cols() + 1);
    found.col(found.cols() - 1) = s;
    captured.push_back(capture);
    idle = 0;
  }
  // non-increasing capture
  std::vector<std::size_t> order(captured.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return captured[a] > captured[b]; });
  BinaryVectors out;
  Mat sorted(rows, found.cols());
  for (std::size_t i = 0; i < order.size(); ++i) {
    sorted.col(static_cast<Eigen::Index>(i)) = found.col(static_cast<Eigen::Index>(order[i]));
    out.captured.push_back(captured[order[i]]);
  }
  out.signs = from_eigen(sorted);
  return out;
}

std::vector<BlrPathInit> subspace_init(const Matrix& w, const LayerShape& shape, const SubspaceOptions& options,
                                       SubspaceStats* stats) {
  check_layer_shape(shape, "subspace init");
  require(w.rows == shape.m && w.cols == shape.n, "subspace init: W is {}×{}, the layer {}×{}", w.rows, w.cols,
          shape.m, shape.n);
  check_options(options);
  Mat residual = Eigen::Map<const Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>>(
                     w.values.data(), static_cast<Eigen::Index>(w.rows), static_cast<Eigen::Index>(w.cols))
                     .cast<double>();
  if (stats) *stats = {};
  std::vector<BlrPathInit> paths;
  for (std::uint32_t p = 0; p < shape.paths; ++p) {
    const DensePath path = init_path(residual, shape.rank, options, options.seed + p, stats);
    BlrPathInit out = pack_path(path);
    if (p + 1 < shape.paths) {
      // subtract the path as stored (f32 scales), as Dual-SVID does
      const Vec h = Eigen::Map<const Eigen::VectorXf>(out.h.data(), shape.m).cast<double>();
      const Vec l = Eigen::Map<const Eigen::VectorXf>(out.l.data(), shape.rank).cast<double>();
      const Vec g = Eigen::Map<const Eigen::VectorXf>(out.g.data(), shape.n).cast<double>();
      residual -= h.asDiagonal() * path.su * l.asDiagonal() * path.sv.transpose() * g.asDiagonal();
    }
    paths.push_back(std::move(out));
  }
  return paths;
}

}  // namespace vkblr::fit
