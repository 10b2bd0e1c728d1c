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
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
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

// The same init with the residual R = W − Σ (paths so far) held dense, f32
// [m][n] on the device, and updated by one product after each path, for
// inits of many paths (manifest/rank_curve.hpp): each path's randomized SVD
// then costs the same whatever its index (O(paths) products in all, where
// gpu_dual_svid_init's operator grows by a term per path: O(paths²)
// products, each with an inner dimension of m or n and a tiny output), for
// one more m×n f32 buffer. Path 0 is gpu_dual_svid_init's bit for bit; the
// later ones agree up to rounding (R·z is one product here, W·z − Σ a·(bᵀ·z)
// there). Deterministic on one device; throws as gpu_dual_svid_init.
std::vector<BlrPathInit> gpu_dual_svid_init_dense(Context& ctx, const DeviceMatrix& w, const LayerShape& shape,
                                                  const RandomizedSvdOptions& options = {});

// A path's factors on the device: a = diag(h)·S_U·diag(ℓ) [m][r],
// b = diag(g)·S_V [n][r] (ops::expand_f32), so that Ŵ = a·bᵀ.
LowRankTerm path_factors(Context& ctx, const BlrPathInit& path, const LayerShape& shape);

}  // namespace vkblr::fit
