#include "vkblr-fit/io/gpu_synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/init/orthonormalize.hpp"
#include "vkblr-fit/sign_bits.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/gemm_f32.hpp"
#include "vkblr/ops/optim.hpp"
#include "vkblr/ops/random.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

// Gaussian streams of one seed, one per matrix drawn.
enum Stream : std::uint32_t { kStreamU = 1, kStreamV, kStreamZ, kStreamNoise, kStreamBlock0 = 64 };

constexpr std::uint32_t kMaxMixBlock = 4096;

DeviceMatrix gaussian_matrix(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::uint64_t seed,
                             std::uint32_t stream, std::string_view label) {
  DeviceMatrix m = device_matrix(ctx, rows, cols, label);
  Recorder rec(ctx);
  rec.add(ops::gaussian(ctx, m.buffer, m.elements(), seed, stream));
  rec.run();
  return m;
}

// An orthonormal basis [rows][cols] of a Gaussian matrix's columns.
DeviceMatrix random_orthonormal(Context& ctx, std::uint32_t rows, std::uint32_t cols, std::uint64_t seed,
                                std::uint32_t stream, std::string_view label) {
  DeviceMatrix q = gaussian_matrix(ctx, rows, cols, seed, stream, label);
  DeviceMatrix scratch = device_matrix(ctx, rows, cols, label);
  orthonormalize(ctx, q, scratch);
  require(q.cols == cols, "synthetic data: a random {}×{} basis came out with {} columns", rows, cols, q.cols);
  return q;
}

// out = a with column j multiplied by col[j] (a, out [rows][cols]).
void scale_columns(Context& ctx, const DeviceMatrix& a, const std::vector<double>& col, DeviceMatrix& out) {
  const std::vector<float> c(col.begin(), col.end());
  const Buffer col_d = ctx.upload(c, "fit.synthetic.col");
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, a.buffer, col_d, out.buffer, a.rows, a.cols, false));
  rec.run();
}

// Per column: `scale` times the column's factor (1, or `column_scale` at the
// chosen columns).
std::vector<double> column_factors(std::size_t cols, const std::vector<std::size_t>& chosen, double column_scale,
                                   double scale) {
  std::vector<double> f(cols, scale);
  for (const std::size_t j : chosen) f[j] = column_scale * scale;
  return f;
}

}  // namespace

DeviceMatrix gpu_synthetic_weight(Context& ctx, const SyntheticWeightSpec& spec) {
  check_weight_spec(spec);
  const std::uint32_t k = std::min(spec.m, spec.n);
  const DeviceMatrix u = random_orthonormal(ctx, spec.m, k, spec.seed, kStreamU, "fit.synthetic.u");
  const DeviceMatrix v = random_orthonormal(ctx, spec.n, k, spec.seed, kStreamV, "fit.synthetic.v");
  DeviceMatrix v_sigma = device_matrix(ctx, spec.n, k, "fit.synthetic.v_sigma");
  scale_columns(ctx, v, spectrum_of(spec), v_sigma);
  DeviceMatrix raw = device_matrix(ctx, spec.m, spec.n, "fit.synthetic.w_raw");
  {
    Recorder rec(ctx);
    rec.add(product(ctx, u, false, v_sigma, true, raw));
    rec.run();
  }
  Rng rng(spec.seed);
  const std::vector<std::size_t> heavy = distinct_indices(spec.n, spec.heavy_columns, rng);
  // the heavy columns, then the whole scaled to the root-mean-square
  DeviceMatrix w = device_matrix(ctx, spec.m, spec.n, "fit.synthetic.w");
  scale_columns(ctx, raw, column_factors(spec.n, heavy, spec.heavy_column_scale, 1.0), w);
  const double rms =
      std::sqrt(sum_of_squares(ctx, w.buffer, static_cast<std::uint32_t>(w.elements())) / static_cast<double>(w.elements()));
  require(rms > 0, "synthetic weight: all zero");
  scale_columns(ctx, raw, column_factors(spec.n, heavy, spec.heavy_column_scale, spec.rms / rms), w);
  return w;
}

DeviceMatrix gpu_synthetic_activations(Context& ctx, const SyntheticActivationSpec& spec) {
  check_activation_spec(spec);
  Rng rng(spec.seed);
  const std::vector<std::size_t> outliers = distinct_indices(spec.n, spec.outlier_channels, rng);
  const std::vector<double> deviation = column_factors(spec.n, outliers, spec.outlier_scale, 1.0);
  DeviceMatrix z = gaussian_matrix(ctx, spec.tokens, spec.n, spec.seed, kStreamZ, "fit.synthetic.z");
  DeviceMatrix x = device_matrix(ctx, spec.tokens, spec.n, "fit.synthetic.x");
  if (spec.spectrum_decay == 0) {
    scale_columns(ctx, z, deviation, x);
    return x;
  }
  // blocks of near-equal width (multiples of 16 where n allows), eigenvalue
  // c dealt to block c mod blocks
  const std::uint32_t blocks = (spec.n + kMaxMixBlock - 1) / kMaxMixBlock;
  const std::vector<double> lambda = covariance_spectrum_of(spec);
  std::vector<std::uint32_t> first(blocks + 1, 0);
  for (std::uint32_t b = 0; b <= blocks; ++b) first[b] = static_cast<std::uint32_t>(std::uint64_t{spec.n} * b / blocks);
  std::vector<double> root_lambda(spec.n);
  for (std::uint32_t b = 0; b < blocks; ++b) {
    for (std::uint32_t i = 0; i < first[b + 1] - first[b]; ++i) {
      root_lambda[first[b] + i] = std::sqrt(lambda[std::size_t{i} * blocks + b]);
    }
  }
  DeviceMatrix zs = device_matrix(ctx, spec.tokens, spec.n, "fit.synthetic.z_scaled");
  scale_columns(ctx, z, root_lambda, zs);
  DeviceMatrix mixed = std::move(z);  // Z's buffer holds the mixed tokens
  for (std::uint32_t b = 0; b < blocks; ++b) {
    const std::uint32_t width = first[b + 1] - first[b];
    const DeviceMatrix q = random_orthonormal(ctx, width, width, spec.seed, kStreamBlock0 + b, "fit.synthetic.q");
    ops::GemmF32 shape;
    shape.m = spec.tokens;
    shape.n = width;
    shape.k = width;
    shape.trans_b = true;  // X_b = Zs_b·Q_bᵀ
    shape.lda = spec.n;
    shape.ldb = width;
    shape.ldo = spec.n;
    shape.a_offset = first[b];
    shape.out_offset = first[b];
    Recorder rec(ctx);
    rec.add(ops::gemm_f32(ctx, zs.buffer, q.buffer, mixed.buffer, shape));
    rec.run();
  }
  scale_columns(ctx, mixed, deviation, x);
  return x;
}

DeviceMatrix gpu_planted_weight(Context& ctx, const PlantedWeightSpec& spec) {
  const LayerShape shape{spec.m, spec.n, spec.rank, spec.paths};
  check_layer_shape(shape, "planted weight");
  require(spec.noise >= 0 && std::isfinite(spec.noise) && spec.rms > 0, "planted weight: noise {} or rms {} out of range",
          spec.noise, spec.rms);
  Rng rng(spec.seed);
  auto uniform = [&](std::size_t count, double lo, double hi) {
    std::vector<float> v(count);
    for (float& x : v) x = static_cast<float>(lo + (hi - lo) * rng.uniform_open());
    return v;
  };
  auto random_bits = [&](std::size_t rows) {
    std::vector<std::uint32_t> bits(rows * sign_words_per_row(spec.rank));
    for (std::uint32_t& w : bits) w = static_cast<std::uint32_t>(rng.next() >> 32);
    return bits;
  };
  DeviceMatrix w = device_matrix(ctx, spec.m, spec.n, "fit.planted.w");
  for (std::uint32_t p = 0; p < spec.paths; ++p) {
    BlrPathInit path;
    path.bits_u = random_bits(spec.m);
    path.bits_v = random_bits(spec.n);
    path.h = uniform(spec.m, 0.5, 1.5);
    path.g = uniform(spec.n, 0.5, 1.5);
    path.l.resize(spec.rank);
    for (std::uint32_t k = 0; k < spec.rank; ++k) path.l[k] = static_cast<float>(std::exp(-4.0 * k / spec.rank));
    const LowRankTerm t = path_factors(ctx, path, shape);
    Recorder rec(ctx);
    rec.add(product(ctx, t.a, false, t.b, true, w, 1.0f, p > 0));
    rec.run();
  }
  const double rms_clean =
      std::sqrt(sum_of_squares(ctx, w.buffer, static_cast<std::uint32_t>(w.elements())) / static_cast<double>(w.elements()));
  require(rms_clean > 0, "planted weight: all zero");
  DeviceMatrix noise = gaussian_matrix(ctx, spec.m, spec.n, spec.seed, kStreamNoise, "fit.planted.noise");
  // W + noise·rms_clean·N, then scaled to rms: one column-scaled
  // accumulation each (scale_acc with a constant column vector)
  DeviceMatrix out = device_matrix(ctx, spec.m, spec.n, "fit.planted.out");
  const double total_rms = rms_clean * std::sqrt(1 + spec.noise * spec.noise);
  scale_columns(ctx, w, std::vector<double>(spec.n, spec.rms / total_rms), out);
  const std::vector<float> c(spec.n, static_cast<float>(spec.noise * rms_clean * spec.rms / total_rms));
  const Buffer col = ctx.upload(c, "fit.planted.col");
  Recorder rec(ctx);
  rec.add(ops::scale_acc(ctx, noise.buffer, col, out.buffer, spec.m, spec.n, true));
  rec.run();
  return out;
}

}  // namespace vkblr::fit
