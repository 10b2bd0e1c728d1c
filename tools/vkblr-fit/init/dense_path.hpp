// dense_path.hpp — one blr path as dense f64 matrices (Eigen), the form
// the host inits work in (refit.cpp, subspace_init.cpp), and the
// conversions to and from the packed BlrPathInit.
#pragma once

#include <Eigen/Dense>

#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr/blr.hpp"

namespace vkblr::fit {

// S_U [m][r], S_V [n][r] with entries ±1; h [m], ℓ [r], g [n].
struct DensePath {
  Eigen::MatrixXd su, sv;
  Eigen::VectorXd h, l, g;
  // Ŵ = diag(h)·S_U·diag(ℓ)·S_Vᵀ·diag(g)
  Eigen::MatrixXd weight() const;
};

// A packed path of `shape` (bits and f32 scales of shape's sizes) as dense.
DensePath unpack_path(const BlrPathInit& p, const LayerShape& shape);
// The packed form: bits of the signs (sign(0) = +1), scales rounded to f32.
BlrPathInit pack_path(const DensePath& p);
// Rescales h, ℓ, g to a common root-mean-square (Ŵ unchanged; the f16
// range used evenly, as Dual-SVID leaves them); nothing when one is zero.
void balance_scales(DensePath& p);

}  // namespace vkblr::fit
