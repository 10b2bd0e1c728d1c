#include "vkblr-fit/init/gpu_dual_svid.hpp"

#include <string_view>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/expand_f32.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {

namespace {

// `values` in host memory the device reads: a copy, no submit (the path's
// bits and scales are read once, by the expansion).
template <class T>
Buffer host_copy(Context& ctx, const std::vector<T>& values, std::string_view label) {
  Buffer b = ctx.host_buffer(values.size() * sizeof(T), label);
  b.upload(values);
  return b;
}

}  // namespace

LowRankTerm path_factors(Context& ctx, const BlrPathInit& path, const LayerShape& shape) {
  check_path_sizes({shape.m, shape.n, shape.rank, 1}, std::span(&path, 1), "path_factors");
  const Buffer bits_u = host_copy(ctx, path.bits_u, "fit.init.bits_u");
  const Buffer bits_v = host_copy(ctx, path.bits_v, "fit.init.bits_v");
  const Buffer h = host_copy(ctx, path.h, "fit.init.h");
  const Buffer l = host_copy(ctx, path.l, "fit.init.l");
  const Buffer g = host_copy(ctx, path.g, "fit.init.g");
  LowRankTerm t{device_matrix(ctx, shape.m, shape.rank, "fit.init.a"),
                device_matrix(ctx, shape.n, shape.rank, "fit.init.b")};
  Recorder rec(ctx);
  rec.add(ops::expand_f32(ctx, bits_u, &h, &l, t.a.buffer, shape.m, shape.rank));
  rec.add(ops::expand_f32(ctx, bits_v, &g, nullptr, t.b.buffer, shape.n, shape.rank));
  rec.run();
  return t;
}

namespace {

// Fits shape.paths paths one after another, each to `residual` as it then
// is (path p's test matrix has seed + p); after every path but the last,
// subtract(path's factors) takes it out of the residual.
template <class Subtract>
std::vector<BlrPathInit> fit_paths(Context& ctx, const ResidualOperator& residual, const LayerShape& shape,
                                   const RandomizedSvdOptions& options, std::vector<SignMagnitudes>* magnitudes,
                                   Subtract subtract) {
  std::vector<BlrPathInit> paths;
  for (std::uint32_t p = 0; p < shape.paths; ++p) {
    RandomizedSvdOptions path_options = options;
    path_options.seed = options.seed + p;
    const ScaledFactors f = randomized_svd(ctx, residual, shape.rank, path_options);
    SignMagnitudes path_magnitudes;
    paths.push_back(path_from_scaled_factors(f.u_prime, f.v_prime, magnitudes ? &path_magnitudes : nullptr));
    if (magnitudes) magnitudes->push_back(std::move(path_magnitudes));
    if (p + 1 < shape.paths) subtract(path_factors(ctx, paths.back(), shape));
  }
  return paths;
}

void check_init_operands(const DeviceMatrix& w, const LayerShape& shape, const char* what) {
  check_layer_shape(shape, what);
  require(w.rows == shape.m && w.cols == shape.n, "{}: W is {}×{}, the layer {}×{}", what, w.rows, w.cols, shape.m,
          shape.n);
}

}  // namespace

std::vector<BlrPathInit> gpu_dual_svid_init(Context& ctx, const DeviceMatrix& w, const LayerShape& shape,
                                            const RandomizedSvdOptions& options,
                                            std::vector<SignMagnitudes>* magnitudes) {
  check_init_operands(w, shape, "GPU Dual-SVID init");
  ResidualOperator residual{&w, {}};
  return fit_paths(ctx, residual, shape, options, magnitudes,
                   [&](LowRankTerm t) { residual.terms.push_back(std::move(t)); });
}

std::vector<BlrPathInit> gpu_dual_svid_init_dense(Context& ctx, const DeviceMatrix& w, const LayerShape& shape,
                                                  const RandomizedSvdOptions& options) {
  check_init_operands(w, shape, "GPU Dual-SVID init (dense residual)");
  const DeviceMatrix dense = device_matrix(ctx, w.rows, w.cols, "fit.init.residual");
  {
    Recorder rec(ctx);
    rec.copy(w.buffer, dense.buffer, w.elements() * sizeof(float));
    rec.run();
  }
  const ResidualOperator residual{&dense, {}};
  return fit_paths(ctx, residual, shape, options, nullptr, [&](const LowRankTerm& t) {
    Recorder rec(ctx);
    rec.add(product(ctx, t.a, false, t.b, true, dense, -1.0f, true));  // R −= a·bᵀ
    rec.run();
  });
}

}  // namespace vkblr::fit
