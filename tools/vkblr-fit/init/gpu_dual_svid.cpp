#include "vkblr-fit/init/gpu_dual_svid.hpp"

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/expand_f32.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {

LowRankTerm path_factors(Context& ctx, const BlrPathInit& path, const LayerShape& shape) {
  check_path_sizes({shape.m, shape.n, shape.rank, 1}, std::span(&path, 1), "path_factors");
  const Buffer bits_u = ctx.upload(path.bits_u, "fit.init.bits_u");
  const Buffer bits_v = ctx.upload(path.bits_v, "fit.init.bits_v");
  const Buffer h = ctx.upload(path.h, "fit.init.h");
  const Buffer l = ctx.upload(path.l, "fit.init.l");
  const Buffer g = ctx.upload(path.g, "fit.init.g");
  LowRankTerm t{device_matrix(ctx, shape.m, shape.rank, "fit.init.a"),
                device_matrix(ctx, shape.n, shape.rank, "fit.init.b")};
  Recorder rec(ctx);
  rec.add(ops::expand_f32(ctx, bits_u, &h, &l, t.a.buffer, shape.m, shape.rank));
  rec.add(ops::expand_f32(ctx, bits_v, &g, nullptr, t.b.buffer, shape.n, shape.rank));
  rec.run();
  return t;
}

std::vector<BlrPathInit> gpu_dual_svid_init(Context& ctx, const DeviceMatrix& w, const LayerShape& shape,
                                            const RandomizedSvdOptions& options,
                                            std::vector<SignMagnitudes>* magnitudes) {
  check_layer_shape(shape, "GPU Dual-SVID init");
  require(w.rows == shape.m && w.cols == shape.n, "GPU Dual-SVID init: W is {}×{}, the layer {}×{}", w.rows, w.cols,
          shape.m, shape.n);
  ResidualOperator residual{&w, {}};
  std::vector<BlrPathInit> paths;
  for (std::uint32_t p = 0; p < shape.paths; ++p) {
    RandomizedSvdOptions path_options = options;
    path_options.seed = options.seed + p;
    const ScaledFactors f = randomized_svd(ctx, residual, shape.rank, path_options);
    SignMagnitudes path_magnitudes;
    paths.push_back(path_from_scaled_factors(f.u_prime, f.v_prime, magnitudes ? &path_magnitudes : nullptr));
    if (magnitudes) magnitudes->push_back(std::move(path_magnitudes));
    if (p + 1 < shape.paths) residual.terms.push_back(path_factors(ctx, paths.back(), shape));
  }
  return paths;
}

}  // namespace vkblr::fit
