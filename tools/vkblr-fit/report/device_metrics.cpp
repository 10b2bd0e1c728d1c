#include "vkblr-fit/report/device_metrics.hpp"

#include <cmath>

#include "vkblr-fit/init/gpu_dual_svid.hpp"
#include "vkblr/error.hpp"
#include "vkblr/ops/colsum.hpp"
#include "vkblr/ops/scale.hpp"
#include "vkblr/recorder.hpp"

namespace vkblr::fit {
namespace {

// Σ_row a² per column of a f32 [rows][cols], in f64 on the host.
std::vector<double> column_sums_of_squares(Context& ctx, const Buffer& a, std::uint32_t rows, std::uint32_t cols) {
  Buffer sums = ctx.buffer(std::uint64_t{cols} * 4, "fit.metrics.colsq");
  Recorder rec(ctx);
  rec.fill(sums, 0);
  rec.add(ops::colsum_prod(ctx, a, a, sums, rows, cols));
  rec.run();
  const std::vector<float> s = sums.download<float>(cols);
  return {s.begin(), s.end()};
}

}  // namespace

DeviceMetrics::DeviceMetrics(Context& ctx, const DeviceMatrix& w, const Buffer& x16, std::uint32_t tokens)
    : ctx_(ctx), w_(w) {
  require(x16.size() >= std::uint64_t{tokens} * w.cols * 2, "device metrics: {} held-out tokens do not fit {} bytes",
          tokens, x16.size());
  Buffer x = ctx.buffer(std::uint64_t{tokens} * w.cols * 4, "fit.metrics.x");
  {
    Recorder rec(ctx);
    rec.add(ops::f16_to_f32(ctx, x16, x, tokens * w.cols));
    rec.run();
  }
  channel_ms_ = column_sums_of_squares(ctx, x, tokens, w.cols);
  for (double& s : channel_ms_) s /= tokens;
  w_colsq_ = column_sums_of_squares(ctx, w.buffer, w.rows, w.cols);
  double total = 0;
  for (const double s : w_colsq_) total += s;
  require(total > 0, "device metrics: W is zero: a relative error is undefined");
}

WeightErrors DeviceMetrics::errors(const LayerShape& shape, const std::vector<BlrPathInit>& paths) {
  require(shape.m == w_.rows && shape.n == w_.cols, "device metrics: a {}x{} layer for W {}x{}", shape.m, shape.n,
          w_.rows, w_.cols);
  DeviceMatrix d = device_matrix(ctx_, w_.rows, w_.cols, "fit.metrics.difference");
  std::vector<LowRankTerm> terms;
  for (const BlrPathInit& p : paths) terms.push_back(path_factors(ctx_, p, shape));
  Recorder rec(ctx_);
  rec.copy(w_.buffer, d.buffer, w_.elements() * 4);
  for (const LowRankTerm& t : terms) rec.add(product(ctx_, t.a, false, t.b, true, d, -1.0f, true));
  rec.run();
  const std::vector<double> e = column_sums_of_squares(ctx_, d.buffer, d.rows, d.cols);
  double err = 0, ref = 0, werr = 0, wref = 0;
  for (std::size_t j = 0; j < e.size(); ++j) {
    err += e[j];
    ref += w_colsq_[j];
    werr += channel_ms_[j] * e[j];
    wref += channel_ms_[j] * w_colsq_[j];
  }
  WeightErrors out;
  out.weight = std::sqrt(err / ref);
  out.activation_weighted = wref > 0 ? std::sqrt(werr / wref) : 0;
  return out;
}

}  // namespace vkblr::fit
