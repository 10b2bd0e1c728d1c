#include "vkblr-fit/init/dual_svid.hpp"

#include <cmath>

#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/error.hpp"

namespace vkblr::fit {
namespace {

double root_mean_square(const std::vector<double>& v) {
  double sum = 0;
  for (const double x : v) sum += x * x;
  return std::sqrt(sum / static_cast<double>(v.size()));
}

// a ≈ s·bᵀ with a, s, b non-negative: s = √σ·u, b = √σ·v of a's top pair.
void rank_one_factors(const MatrixF64& a, std::vector<double>& left, std::vector<double>& right) {
  const SingularPair pair = top_singular_pair_nonnegative(a);
  const double root = std::sqrt(pair.sigma);
  left = pair.u;
  right = pair.v;
  for (double& x : left) x *= root;
  for (double& x : right) x *= root;
}

// |a_ij| / rms(a), all 0 for a = 0.
std::vector<float> relative_magnitudes(const MatrixF64& a) {
  const double rms = root_mean_square(a.values);
  std::vector<float> out(a.values.size(), 0.0f);
  if (rms > 0) {
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(std::abs(a.values[i]) / rms);
  }
  return out;
}

// Rescales h, ℓ, g to a common root-mean-square, keeping h_i·ℓ_k·g_j.
void balance(std::vector<double>& h, std::vector<double>& l, std::vector<double>& g) {
  const double rh = root_mean_square(h), rl = root_mean_square(l), rg = root_mean_square(g);
  if (rh == 0 || rl == 0 || rg == 0) return;
  const double common = std::cbrt(rh * rl * rg);
  for (double& x : h) x *= common / rh;
  for (double& x : l) x *= common / rl;
  for (double& x : g) x *= common / rg;
}

std::vector<float> to_f32(const std::vector<double>& v) { return {v.begin(), v.end()}; }

// One path's initial values from the residual r [m][n].
BlrPathInit init_path(const MatrixF64& residual, std::uint32_t rank, const SvdOptions& options) {
  const TruncatedSvd svd = truncated_svd(residual, rank, options);
  // U′ = U·Σ^½, V′ = V·Σ^½, zero-padded to `rank` columns.
  std::vector<double> root_sigma(svd.sigma.size());
  for (std::size_t k = 0; k < root_sigma.size(); ++k) root_sigma[k] = std::sqrt(svd.sigma[k]);
  const auto scaled = [&](const MatrixF64& basis) {
    MatrixF64 out(basis.rows, rank);
    for (std::size_t i = 0; i < basis.rows; ++i) {
      for (std::size_t k = 0; k < root_sigma.size(); ++k) out(i, k) = basis(i, k) * root_sigma[k];
    }
    return out;
  };
  return path_from_scaled_factors(scaled(svd.u), scaled(svd.v));
}

}  // namespace

BlrPathInit path_from_scaled_factors(const MatrixF64& u_prime, const MatrixF64& v_prime,
                                     SignMagnitudes* magnitudes) {
  require(u_prime.cols == v_prime.cols && u_prime.cols % 32 == 0 && u_prime.cols > 0,
          "Dual-SVID: factors of {} and {} columns (want one rank, a multiple of 32)", u_prime.cols, v_prime.cols);
  const std::size_t rank = u_prime.cols;
  const auto absolute = [](MatrixF64 a) {
    for (double& x : a.values) x = std::abs(x);
    return a;
  };
  std::vector<double> h, l_u, g, l_v;
  rank_one_factors(absolute(u_prime), h, l_u);
  rank_one_factors(absolute(v_prime), g, l_v);
  std::vector<double> l(rank);
  for (std::size_t k = 0; k < rank; ++k) l[k] = l_u[k] * l_v[k];
  if (magnitudes) *magnitudes = {relative_magnitudes(u_prime), relative_magnitudes(v_prime)};
  balance(h, l, g);
  return BlrPathInit{pack_signs(std::span<const double>(u_prime.values), u_prime.rows, rank),
                     pack_signs(std::span<const double>(v_prime.values), v_prime.rows, rank), to_f32(h), to_f32(l),
                     to_f32(g)};
}

std::vector<BlrPathInit> dual_svid_init(const Matrix& w, const LayerShape& shape, const SvdOptions& options) {
  check_layer_shape(shape, "Dual-SVID init");
  require(w.rows == shape.m && w.cols == shape.n, "Dual-SVID init: W is {}×{}, the layer {}×{}", w.rows, w.cols,
          shape.m, shape.n);
  MatrixF64 residual = convert_matrix<double>(w);
  std::vector<BlrPathInit> paths;
  for (std::uint32_t p = 0; p < shape.paths; ++p) {
    SvdOptions path_options = options;
    path_options.seed = options.seed + p;
    paths.push_back(init_path(residual, shape.rank, path_options));
    if (p + 1 < shape.paths) {
      const LayerShape one_path{shape.m, shape.n, shape.rank, 1};
      const MatrixF64 approximation = reconstruct_weight(one_path, std::span(paths).last(1));
      for (std::size_t i = 0; i < residual.values.size(); ++i) residual.values[i] -= approximation.values[i];
    }
  }
  return paths;
}

MatrixF64 reconstruct_weight(const LayerShape& shape, std::span<const BlrPathInit> paths) {
  check_path_sizes(shape, paths, "reconstruct_weight");
  MatrixF64 w(shape.m, shape.n);
  MatrixF64 left(shape.m, shape.rank), right(shape.n, shape.rank);  // diag(h)·S_U·diag(ℓ), diag(g)·S_V
  for (const BlrPathInit& path : paths) {
    for (std::size_t i = 0; i < shape.m; ++i) {
      for (std::size_t k = 0; k < shape.rank; ++k) {
        left(i, k) = double{path.h[i]} * sign_at(path.bits_u, shape.rank, i, k) * double{path.l[k]};
      }
    }
    for (std::size_t j = 0; j < shape.n; ++j) {
      for (std::size_t k = 0; k < shape.rank; ++k) right(j, k) = double{path.g[j]} * sign_at(path.bits_v, shape.rank, j, k);
    }
    const MatrixF64 term = multiply_nt(left, right);
    for (std::size_t i = 0; i < w.values.size(); ++i) w.values[i] += term.values[i];
  }
  return w;
}

}  // namespace vkblr::fit
