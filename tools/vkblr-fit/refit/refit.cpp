// Host refit of a blr layer's paths (refit.hpp): exact alternating binary
// least squares under the activations' covariance. Eigen underneath, f64.
#include "vkblr-fit/refit/refit.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include <Eigen/Dense>

#include "vkblr-fit/init/dense_path.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

using Mat = Eigen::MatrixXd;
using Vec = Eigen::VectorXd;
using RowMajorF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

constexpr int kMaxPasses = 8;       // coordinate-descent passes over one row's signs
constexpr double kRidge = 1e-9;     // relative ridge of the scale solves

// C = XᵀX / T in f64, accumulated over blocks of tokens.
Mat second_moment(const Matrix& x) {
  const auto n = static_cast<Eigen::Index>(x.cols);
  Mat c = Mat::Zero(n, n);
  constexpr std::size_t kBlock = 2048;
  for (std::size_t t0 = 0; t0 < x.rows; t0 += kBlock) {
    const std::size_t rows = std::min(kBlock, x.rows - t0);
    const Eigen::Map<const RowMajorF> block(x.values.data() + t0 * x.cols, static_cast<Eigen::Index>(rows), n);
    const Mat xb = block.cast<double>();
    c.noalias() += xb.transpose() * xb;
  }
  return c / static_cast<double>(x.rows);
}

// tr(D·C·Dᵀ) for D [m][n]: the output loss per token of a weight difference.
double output_sq(const Mat& d, const Mat& c) { return (d * c).cwiseProduct(d).sum(); }

// Solves (M + ridge)·x = b (M symmetric positive semi-definite).
Vec solve_ridged(Mat m, const Vec& b) {
  const double scale = std::max(m.diagonal().mean(), 1e-300);
  m.diagonal().array() += kRidge * scale;
  return m.ldlt().solve(b);
}

// 1. S_U row by row and h_i (refit.hpp).
void refit_u(DensePath& p, const Mat& r, const Mat& c) {
  const Mat b = p.l.asDiagonal() * p.sv.transpose() * p.g.asDiagonal();  // [r][n]
  const Mat bc = b * c;
  const Mat q = bc * b.transpose();  // [r][r]
  const Mat pm = r * bc.transpose();  // [m][r]
  const Eigen::Index rank = q.rows();
  for (Eigen::Index i = 0; i < p.su.rows(); ++i) {
    Vec s = p.su.row(i).transpose();
    Vec qs = q * s;
    const double h = p.h(i);
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      bool changed = false;
      for (Eigen::Index k = 0; k < rank; ++k) {
        const double delta = 4 * h * h * (q(k, k) - s(k) * qs(k)) + 4 * h * s(k) * pm(i, k);
        if (delta < 0) {
          s(k) = -s(k);
          qs += (2 * s(k)) * q.col(k);
          changed = true;
        }
      }
      if (!changed) break;
    }
    const double num = s.dot(pm.row(i)), den = s.dot(qs);
    if (den > 0) {
      double hi = num / den;
      if (hi < 0) {
        s = -s;
        hi = -hi;
      }
      if (hi > 0) p.h(i) = hi;
    }
    p.su.row(i) = s.transpose();
  }
}

// 2. S_V row by row with the half-gradient E kept current (refit.hpp).
void refit_v(DensePath& p, const Mat& r, const Mat& c) {
  const Mat a = p.h.asDiagonal() * p.su * p.l.asDiagonal();  // [m][r]
  const Mat q = a.transpose() * a;                            // [r][r]
  const Mat k = p.g.asDiagonal() * c * p.g.asDiagonal();      // [n][n]
  Mat e = q * (p.sv.transpose() * k) - (a.transpose() * r) * c * p.g.asDiagonal();  // [r][n]
  const Eigen::Index rank = q.rows();
  for (Eigen::Index j = 0; j < p.sv.rows(); ++j) {
    Vec ej = e.col(j);
    Vec dz = Vec::Zero(rank);
    const double kjj = k(j, j);
    bool any = false;
    for (int pass = 0; pass < kMaxPasses; ++pass) {
      bool changed = false;
      for (Eigen::Index kk = 0; kk < rank; ++kk) {
        const double s = p.sv(j, kk);
        const double delta = -4 * s * ej(kk) + 4 * q(kk, kk) * kjj;
        if (delta < 0) {
          const double step = -2 * s;
          p.sv(j, kk) = -s;
          ej += (step * kjj) * q.col(kk);
          dz(kk) += step;
          changed = any = true;
        }
      }
      if (!changed) break;
    }
    if (any) e.noalias() += (q * dz) * k.row(j);
  }
}

// 3a. ℓ by least squares; a negative ℓ_k flips S_V's column k.
void refit_l(DensePath& p, const Mat& r, const Mat& c) {
  const Mat uh = p.h.asDiagonal() * p.su;  // [m][r]
  const Mat vg = p.g.asDiagonal() * p.sv;  // [n][r]
  const Mat cv = c * vg;                   // [n][r]
  const Mat gram = (uh.transpose() * uh).cwiseProduct(vg.transpose() * cv);
  const Vec rhs = (uh.transpose() * r * cv).diagonal();
  const Vec l = solve_ridged(gram, rhs);
  if (!l.allFinite()) return;
  for (Eigen::Index k = 0; k < l.size(); ++k) {
    if (l(k) < 0) p.sv.col(k) = -p.sv.col(k);
    if (l(k) != 0) p.l(k) = std::abs(l(k));
  }
}

// 3b. g by least squares; a negative g_j flips S_V's row j.
void refit_g(DensePath& p, const Mat& r, const Mat& c) {
  const Mat f = p.h.asDiagonal() * p.su * p.l.asDiagonal() * p.sv.transpose();  // [m][n]
  const Mat gram = (f.transpose() * f).cwiseProduct(c);
  const Vec rhs = f.cwiseProduct(r * c).colwise().sum().transpose();
  const Vec g = solve_ridged(gram, rhs);
  if (!g.allFinite()) return;
  for (Eigen::Index j = 0; j < g.size(); ++j) {
    if (g(j) < 0) p.sv.row(j) = -p.sv.row(j);
    if (g(j) != 0) p.g(j) = std::abs(g(j));
  }
}

void check_inputs(const Matrix& w, const Matrix& x, const LayerShape& shape) {
  require(w.rows == shape.m && w.cols == shape.n, "refit: W is {}×{}, the layer {}×{}", w.rows, w.cols, shape.m,
          shape.n);
  require(x.cols == shape.n && x.rows >= 1, "refit: activations are {}×{}; want T×{} with T >= 1", x.rows, x.cols,
          shape.n);
}

Mat dense_target(const Matrix& w) {
  return Eigen::Map<const RowMajorF>(w.values.data(), static_cast<Eigen::Index>(w.rows),
                                     static_cast<Eigen::Index>(w.cols))
      .cast<double>();
}

}  // namespace

std::vector<double> training_output_errors(const Matrix& w, const Matrix& x, const LayerShape& shape,
                                           std::span<const std::vector<BlrPathInit>> candidates) {
  check_inputs(w, x, shape);
  for (const std::vector<BlrPathInit>& paths : candidates) {
    require(paths.size() == shape.paths, "refit: {} paths for a layer of {}", paths.size(), shape.paths);
  }
  const Mat c = second_moment(x);
  const Mat target = dense_target(w);
  const double reference = output_sq(target, c);
  require(reference > 0, "refit: ‖X·Wᵀ‖ = 0 (nothing to fit)");
  std::vector<double> errors;
  for (const std::vector<BlrPathInit>& paths : candidates) {
    Mat total = -target;
    for (const BlrPathInit& p : paths) total += unpack_path(p, shape).weight();
    errors.push_back(std::sqrt(output_sq(total, c) / reference));
  }
  return errors;
}

RefitStats refit_paths(const Matrix& w, const Matrix& x, const LayerShape& shape, std::vector<BlrPathInit>& paths,
                       const RefitOptions& options) {
  check_inputs(w, x, shape);
  require(paths.size() == shape.paths, "refit: {} paths for a layer of {}", paths.size(), shape.paths);
  RefitStats stats;
  if (options.sweeps == 0) return stats;
  const Mat c = second_moment(x);
  const Mat target = dense_target(w);
  std::vector<DensePath> dense;
  Mat total = Mat::Zero(target.rows(), target.cols());
  for (const BlrPathInit& p : paths) {
    dense.push_back(unpack_path(p, shape));
    total += dense.back().weight();
  }
  const double reference = output_sq(target, c);
  require(reference > 0, "refit: ‖X·Wᵀ‖ = 0 (nothing to fit)");
  stats.train_error_before = std::sqrt(output_sq(total - target, c) / reference);
  const std::vector<DensePath> start = dense;
  for (std::uint32_t sweep = 0; sweep < options.sweeps; ++sweep) {
    for (DensePath& p : dense) {
      const Mat others = total - p.weight();
      const Mat r = target - others;  // what this path should fit
      refit_u(p, r, c);
      refit_v(p, r, c);
      refit_l(p, r, c);
      refit_g(p, r, c);
      total = others + p.weight();
    }
  }
  stats.train_error_after = std::sqrt(output_sq(total - target, c) / reference);
  for (std::size_t i = 0; i < paths.size(); ++i) {
    balance_scales(dense[i]);
    stats.sign_changes += static_cast<std::uint64_t>((dense[i].su.array() != start[i].su.array()).count());
    stats.sign_changes += static_cast<std::uint64_t>((dense[i].sv.array() != start[i].sv.array()).count());
    paths[i] = pack_path(dense[i]);
  }
  return stats;
}

void upload_paths(BlrLayer& layer, const std::vector<BlrPathInit>& paths) {
  require(paths.size() == layer.paths.size(), "refit: {} paths for a layer of {}", paths.size(), layer.paths.size());
  std::vector<float> scales = layer.scales.download<float>();
  for (std::size_t p = 0; p < paths.size(); ++p) {
    layer.paths[p].bits_u.upload(paths[p].bits_u);
    layer.paths[p].bits_v.upload(paths[p].bits_v);
    const std::pair<Scale, const std::vector<float>*> parts[3] = {
        {Scale::h, &paths[p].h}, {Scale::l, &paths[p].l}, {Scale::g, &paths[p].g}};
    for (std::size_t k = 0; k < 3; ++k) {
      const ScaleSegment seg = layer.segment(p, parts[k].first);
      const std::vector<float>& part = *parts[k].second;
      require(part.size() == seg.length, "refit: scale vector of {} for a segment of {}", part.size(), seg.length);
      std::copy(part.begin(), part.end(), scales.begin() + seg.offset);
    }
  }
  layer.scales.upload(scales);
}

}  // namespace vkblr::fit
