// device_metrics.hpp — the weight-space errors of metrics.hpp computed on
// the device (f32 GEMMs and deterministic column sums), so that reporting a
// large layer costs no host O(m·n·r) reconstruction.
//
//   weight               ‖Ŵ − W‖ / ‖W‖
//   activation_weighted  √(Σ_ij s_j·(Ŵ − W)_ij² / Σ_ij s_j·W_ij²), s_j the mean
//                        square of input channel j over the held-out tokens
// Ŵ is formed as Σ_p A_p·B_pᵀ (gpu_dual_svid.hpp's path_factors) into a copy
// of W; the column sums of squares are summed on the host in f64.
#pragma once

#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct WeightErrors {
  double weight = 0;
  double activation_weighted = 0;
};

class DeviceMetrics {
 public:
  // w f32 [m][n]; x16 f16 [tokens][n], the held-out tokens. Throws
  // vkblr::Error when W is zero (a relative error of nothing).
  DeviceMetrics(Context& ctx, const DeviceMatrix& w, const Buffer& x16, std::uint32_t tokens);

  WeightErrors errors(const LayerShape& shape, const std::vector<BlrPathInit>& paths);

 private:
  Context& ctx_;
  const DeviceMatrix& w_;
  std::vector<double> channel_ms_;  // s_j
  std::vector<double> w_colsq_;     // Σ_i W_ij²
};

}  // namespace vkblr::fit
