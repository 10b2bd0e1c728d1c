// gpu_refit.hpp — the output-aware refit of a blr layer's paths on the
// device: the host refit's alternating exact binary least squares
// (refit.hpp, docs/sign-optimizer.md "Host refit") with its dense algebra
// as f32 GEMMs and its sign flips as kernels (docs/sign-optimizer.md,
// "GPU refit"; device_refit.hpp has the steps).
//
// A sweep visits every path in turn (S_U rows in parallel, S_V rows in
// blocks whose committed subset never raises the loss, ℓ by its exact
// least squares, g by conjugate gradients). After each sweep the exact
// training error through C decides: a sweep that ended worse than it
// started (f32 rounding) is taken back and the refit stops. Finally h, ℓ,
// g are rebalanced per path to a common root-mean-square (balance_scales).
// Deterministic: the same inputs give the same bits on a device.
#pragma once

#include <cstdint>
#include <vector>

#include "vkblr-fit/init/device_matrix.hpp"
#include "vkblr/io/layer_shape.hpp"
#include "vkblr-fit/io_names.hpp"
#include "vkblr-fit/refit/device_refit.hpp"
#include "vkblr/blr.hpp"
#include "vkblr/context.hpp"

namespace vkblr::fit {

struct GpuRefitOptions {
  std::uint32_t sweeps = 4;  // 0: no refit
  DeviceRefitOptions steps;
};

struct GpuRefitStats {
  // √(L/tr(WCWᵀ)) before sweep 0, then after each sweep run (a sweep taken
  // back included); the layer returned has train_error[sweeps_kept].
  std::vector<double> train_error;
  std::uint64_t sign_changes = 0;  // signs that differ from the input paths
  std::uint32_t sweeps_kept = 0;
};

// Refines `paths` (a layer of `shape` fitted to w f32 [m][n]) in place for
// the calibration second moment c f32 [n][n] = XᵀX/T, with w_c_w =
// tr(W·C·Wᵀ) (the caller knows it from the targets: Σ‖y*‖²/T). Throws
// vkblr::Error for shapes or paths that do not fit (naming "GPU refit").
GpuRefitStats gpu_refit_paths(Context& ctx, const DeviceMatrix& w, const DeviceMatrix& c, double w_c_w,
                              const LayerShape& shape, std::vector<BlrPathInit>& paths,
                              const GpuRefitOptions& options = {});

}  // namespace vkblr::fit
