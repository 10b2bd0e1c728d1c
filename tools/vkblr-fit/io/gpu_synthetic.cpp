#include "vkblr-fit/io/gpu_synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr-fit/init/orthonormalize.hpp"
#include "vkblr-fit/io/f16_rows.hpp"
#include "vkblr/io/sign_bits.hpp"
#include "vkblr-fit/io_names.hpp"
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
constexpr std::uint64_t kMaxDraws = std::uint64_t{1} << 31;  // of a Gaussian stream (ops::gaussian)
// Bytes of each f32 scratch matrix of a chunk of synthetic tokens.
constexpr std::uint64_t kChunkBytes = std::uint64_t{64} << 20;

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

// Per-column factors on the device, rounded to f32.
Buffer upload_column(Context& ctx, const std::vector<double>& col) {
  const std::vector<float> c(col.begin(), col.end());
  return ctx.upload(c, "fit.synthetic.col");
}

// out = a with column j multiplied by col[j] (a, out [rows][cols]).
void scale_columns(Context& ctx, const DeviceMatrix& a, const std::vector<double>& col, DeviceMatrix& out) {
  const Buffer col_d = upload_column(ctx, col);
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

void gpu_synthetic_activations(Context& ctx, const SyntheticActivationSpec& spec, const Buffer& x16,
                               std::uint32_t chunk_tokens) {
  check_activation_spec(spec);
  const std::uint32_t n = spec.n;
  const std::uint64_t values = std::uint64_t{spec.tokens} * n;
  require(values <= kMaxDraws, "synthetic activations: {}x{} = {} values exceed the 2^31 draws of a Gaussian stream",
          spec.tokens, n, values);
  require(x16.size() >= values * 2, "synthetic activations: {}x{} f16 values need {} bytes, the buffer holds {}",
          spec.tokens, n, values * 2, x16.size());
  Rng rng(spec.seed);
  const std::vector<std::size_t> outliers = distinct_indices(n, spec.outlier_channels, rng);
  const Buffer deviation = upload_column(ctx, column_factors(n, outliers, spec.outlier_scale, 1.0));
  // With a covariance decay: blocks of near-equal width (multiples of 16
  // where n allows), eigenvalue c dealt to block c mod blocks, each block
  // mixed by its own basis.
  const bool mixed = spec.spectrum_decay != 0;
  const std::uint32_t blocks = mixed ? (n + kMaxMixBlock - 1) / kMaxMixBlock : 0;
  std::vector<std::uint32_t> first(blocks + 1, 0);
  Buffer root_lambda;
  std::vector<DeviceMatrix> bases;
  if (mixed) {
    for (std::uint32_t b = 0; b <= blocks; ++b) first[b] = static_cast<std::uint32_t>(std::uint64_t{n} * b / blocks);
    const std::vector<double> lambda = covariance_spectrum_of(spec);
    std::vector<double> root(n);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      for (std::uint32_t i = 0; i < first[b + 1] - first[b]; ++i) {
        root[first[b] + i] = std::sqrt(lambda[std::size_t{i} * blocks + b]);
      }
    }
    root_lambda = upload_column(ctx, root);
    for (std::uint32_t b = 0; b < blocks; ++b) {
      const std::uint32_t width = first[b + 1] - first[b];
      bases.push_back(random_orthonormal(ctx, width, width, spec.seed, kStreamBlock0 + b, "fit.synthetic.q"));
    }
  }
  const auto chunk = static_cast<std::uint32_t>(f16_chunk_rows(
      ctx, n, chunk_tokens != 0 ? chunk_tokens : std::max<std::uint64_t>(1, kChunkBytes / (std::uint64_t{n} * 4)),
      spec.tokens));
  // a chunk's Z, then (mixed) Z·diag(√λ)·Qᵀ; scaled: Z·diag(√λ), then X
  const Buffer z = ctx.buffer(std::uint64_t{chunk} * n * 4, "fit.synthetic.z");
  const Buffer scaled = ctx.buffer(std::uint64_t{chunk} * n * 4, "fit.synthetic.scaled");
  for (std::uint32_t t = 0; t < spec.tokens; t += chunk) {
    const std::uint32_t count = std::min(chunk, spec.tokens - t);
    Recorder rec(ctx);
    rec.add(ops::gaussian(ctx, z, std::uint64_t{count} * n, spec.seed, kStreamZ, 1.0f, 0, std::uint64_t{t} * n));
    if (mixed) {
      rec.add(ops::scale_acc(ctx, z, root_lambda, scaled, count, n, false));
      for (std::uint32_t b = 0; b < blocks; ++b) {
        const std::uint32_t width = first[b + 1] - first[b];
        ops::GemmF32 shape;
        shape.m = count;
        shape.n = width;
        shape.k = width;
        shape.trans_b = true;  // X_b = Zs_b·Q_bᵀ
        shape.lda = n;
        shape.ldb = width;
        shape.ldo = n;
        shape.a_offset = first[b];
        shape.out_offset = first[b];
        rec.add(ops::gemm_f32(ctx, scaled, bases[b].buffer, z, shape));
      }
    }
    rec.add(ops::scale_acc(ctx, z, deviation, scaled, count, n, false));
    rec.add(narrow_rows(ctx, scaled, x16, t, count, n));
    rec.run();
  }
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
