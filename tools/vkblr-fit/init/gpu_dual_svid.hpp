// gpu_dual_svid.hpp — the Dual-SVID init (dual_svid.hpp) with its SVDs on
// the device: per path, the randomized SVD of the residual
// (randomized_svd.hpp; the paths fitted so far subtracted as f32 factors,
// never as a dense Ŵ), then the same signs, magnitudes and rebalance as the
// host init (path_from_scaled_factors). Path p's Gaussian test matrix has
// seed + p, as the host init's.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr-fit/init/dual_svid.hpp"
#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr-fit/init/randomized_svd.hpp"
#include "vkblr-fit/layer_shape.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

// The initial paths of a layer of `shape` for w f32 [m][n] on the device;
// with `magnitudes`, each path's sign magnitudes appended to it
// (dual_svid.hpp). Throws vkblr::Error for a bad shape (check_layer_shape)
// or a w of another shape.
std::vector<BlrPathInit> gpu_dual_svid_init(Context& ctx, const DeviceMatrix& w, const LayerShape& shape,
                                            const RandomizedSvdOptions& options = {},
                                            std::vector<SignMagnitudes>* magnitudes = nullptr);

// A path's factors on the device: a = diag(h)·S_U·diag(ℓ) [m][r],
// b = diag(g)·S_V [n][r] (ops::expand_f32), so that Ŵ = a·bᵀ.
LowRankTerm path_factors(Context& ctx, const BlrPathInit& path, const LayerShape& shape);

}  // namespace vkblr::fit
