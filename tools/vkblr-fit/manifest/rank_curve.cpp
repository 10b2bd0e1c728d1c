#include "vkblr-fit/manifest/rank_curve.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "vkblr-fit/train/best_layer.hpp"
#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

constexpr std::uint32_t kBlockRank = 32;

}  // namespace

HeldOutResidual::HeldOutResidual(Context& ctx, const DeviceData& data) : ctx_(ctx) {
  const std::uint32_t tokens = data.held_out_tokens;
  require(tokens >= 1, "rank curve: no held-out tokens");
  require(std::uint64_t{tokens} * std::max(data.m, data.n) <= std::numeric_limits<std::uint32_t>::max(),
          "rank curve: {} held-out tokens of a {}x{} layer: more than 2^32 values", tokens, data.m, data.n);
  x_ = device_matrix(ctx, tokens, data.n, "fit.curve.x");
  residual_ = device_matrix(ctx, tokens, data.m, "fit.curve.residual");
  Recorder rec(ctx);
  rec.add(ops::f16_to_f32(ctx, data.tokens(data.train_tokens, tokens), x_.buffer, tokens * data.n));
  rec.add(product(ctx, x_, false, data.w, true, residual_));
  rec.run();
  target_sq_ = sum_of_squares(ctx, residual_.buffer, tokens * data.m);
  require(target_sq_ > 0, "rank curve: X·Wᵀ is zero on the held-out tokens ({}, {}): a relative error is undefined",
          data.weight_source, data.activation_source);
}

double HeldOutResidual::add(const LowRankTerm& t) {
  require(t.a.rows == residual_.cols && t.b.rows == x_.cols && t.a.cols == t.b.cols,
          "rank curve: a term of factors {}x{} and {}x{} for a {}x{} layer", t.a.rows, t.a.cols, t.b.rows, t.b.cols,
          residual_.cols, x_.cols);
  if (xb_.elements() < std::uint64_t{x_.rows} * t.a.cols) xb_ = device_matrix(ctx_, x_.rows, t.a.cols, "fit.curve.xb");
  xb_.cols = t.a.cols;
  Recorder rec(ctx_);
  rec.add(product(ctx_, x_, false, t.b, false, xb_));
  rec.add(product(ctx_, xb_, false, t.a, true, residual_, -1.0f, true));
  rec.run();
  return std::sqrt(sum_of_squares(ctx_, residual_.buffer, x_.rows * residual_.cols) / target_sq_);
}

std::vector<double> measure_rank_curve(Context& ctx, const DeviceData& data, const LayerShape& shape,
                                       ScaleDtype scale_dtype, std::uint64_t seed) {
  check_layer_shape(shape, "rank curve");
  require(shape.m == data.m && shape.n == data.n, "rank curve: a {}x{} layer for W {}x{}", shape.m, shape.n, data.m,
          data.n);
  HeldOutResidual held_out(ctx, data);
  const LayerShape blocks{shape.m, shape.n, kBlockRank, shape.paths * (shape.rank / kBlockRank)};
  const std::vector<BlrPathInit> paths =
      as_stored(gpu_dual_svid_init_dense(ctx, data.w, blocks, {.seed = seed}), scale_dtype);
  std::vector<double> curve;
  for (std::uint32_t b = 0; b < blocks.paths; ++b) {
    const double error = held_out.add(path_factors(ctx, paths[b], {shape.m, shape.n, kBlockRank, 1}));
    if ((b + 1) % shape.paths == 0) curve.push_back(error);  // P·r/32 blocks: rank r
  }
  return curve;
}

}  // namespace vkblr::fit
